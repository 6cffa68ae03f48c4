/* json_tree.h - jansson's trees as the JSON readers share them (json_parse.c,
 * json_convert.c, json_load.c) */
#ifndef SX_JSON_TREE_H
#define SX_JSON_TREE_H

#include "buf.h"

#include <jansson.h>

/* Python's json.dumps raises this for NaN/Infinity under allow_nan=False. */
#define SX_NAN_TEXT "Out of range float values are not JSON compliant"

bool sx_json_big_int(const json_t *v, const char **digits, size_t *len);

/*
 * Check that 'list' is a list of objects and write it canonically. Shared by
 * sx_json_canon_meta (stored text) and the document loader (parsed rows).
 */
enum sx_status sx_json_canon_list(const json_t *list, struct sx_buf *out, bool *any,
                                  const char *source, const char *what,
                                  struct sx_error *err);

bool sx_json_is_str(const json_t *v);

const char *sx_json_kind(const json_t *v);

/*
 * Parse 'n' bytes with jansson. Turns jansson's failures into the errors
 * Python's json.loads + json.dumps would give: NaN/Infinity and float
 * overflow are SX_ERR_VALUE, the rest SX_ERR_FORMAT. 'what' prefixes the
 * message ("event metadata", a path, ...). 'is_doc': a whole document, read
 * as strict UTF-8 (stored snippets are decoded with errors="replace").
 */
enum sx_status sx_json_parse_text(const char *text, size_t n, json_t **out,
                                  const char *source, const char *what, bool is_doc,
                                  struct sx_error *err);

/* Text that is a part of the document 'path', from its offset 'base'. */
struct sx_json_at {
    const char *path;
    uint64_t base;
};

/* sx_json_parse_text() of a part of a document: errors give the line and column in
 * the document of 'at' (NULL: in 'text'). */
enum sx_status sx_json_parse_at(const char *text, size_t n, json_t **out,
                                const char *source, const char *what, bool is_doc,
                                const struct sx_json_at *at, struct sx_error *err);

/* A new array of copies of the strings in 'list' (a JSON array of strings). */
enum sx_status sx_json_string_list(const json_t *list, char ***strs, size_t *nstrs,
                                   const char *source, const char *what,
                                   struct sx_error *err);

#endif /* SX_JSON_TREE_H */
