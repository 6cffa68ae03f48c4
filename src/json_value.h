/* json_value.h - small JSON-like values (metadata, lanes, LIKWID, trailer) and their
 * json.dumps text */
#ifndef SX_JSON_VALUE_H
#define SX_JSON_VALUE_H

#include "buf.h"

enum sx_vkind {
    SX_V_NULL,
    SX_V_BOOL,
    SX_V_INT,   /* int64 */
    SX_V_UINT,  /* uint64 beyond int64 */
    SX_V_FLOAT, /* double; non-finite written as null */
    SX_V_STR,   /* UTF-8 */
    SX_V_ARRAY,
    SX_V_OBJECT, /* keys in insertion order */
    SX_V_RAW     /* JSON text written verbatim (already canonical) */
};

struct sx_value;
struct sx_member;

struct sx_value {
    enum sx_vkind kind;
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double f;
        struct {
            char *s; /* NUL-terminated; 'len' bytes */
            size_t len;
        } str;
        struct {
            struct sx_value *items;
            size_t n, cap;
        } arr;
        struct {
            struct sx_member *items;
            size_t n, cap;
        } obj;
    } u;
};

struct sx_member {
    char *key;
    size_t key_len;
    struct sx_value value;
};

void sx_value_free(struct sx_value *v); /* frees contents; v becomes NULL kind */
struct sx_value sx_value_int(int64_t i);
struct sx_value sx_value_float(double f);
struct sx_value sx_value_bool(bool b);
struct sx_value sx_value_null(void);
/* Copies of the string; on allocation failure kind is SX_V_NULL and ok=false. */
bool sx_value_str(struct sx_value *out, const char *s, size_t n);
bool sx_value_raw(struct sx_value *out, const char *s, size_t n);
void sx_value_array(struct sx_value *out);
void sx_value_object(struct sx_value *out);
/*
 * Ownership, the library's one rule: a function that takes ownership of an argument
 * takes it in every case, on failure too (as jansson's json_array_append_new): the
 * caller neither frees nor uses what it passed, whatever the call returns.
 */
/* Append; the container takes ownership of 'item' (on failure too: it is freed then).
 * false on allocation failure. */
bool sx_value_push(struct sx_value *arr, struct sx_value item);
/* Set 'key' (copied) to 'item', taken as by sx_value_push. */
bool sx_value_set(struct sx_value *obj, const char *key, size_t key_len,
                  struct sx_value item);
/* Deep equality (floats bitwise except NaN == NaN). */
bool sx_value_equal(const struct sx_value *a, const struct sx_value *b);

/*
 * Write 'v' as json.dumps(indent=...) would at nesting 'depth' (the depth
 * of 'v' itself: the top-level document is depth 0). 'indent' < 0 is the
 * one-line form. A non-finite SX_V_FLOAT is written as null.
 */
void sx_write_value(struct sx_buf *b, const struct sx_value *v, int indent, int depth);
/* Newline and indentation for 'depth' in indent mode; nothing in one-line mode. */
void sx_write_newline(struct sx_buf *b, int indent, int depth);
/* The item separator: ", " one-line, "," + newline + indent otherwise. */
void sx_write_sep(struct sx_buf *b, int indent, int depth);

#endif /* SX_JSON_VALUE_H */
