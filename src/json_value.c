/* json_value.c - small JSON-like value trees and their json.dumps text */
#include "json_value.h"

#include "json_write.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void sx_value_free(struct sx_value *v) {
    if (!v)
        return;
    switch (v->kind) {
    case SX_V_STR:
    case SX_V_RAW:
        free(v->u.str.s);
        break;
    case SX_V_ARRAY:
        for (size_t i = 0; i < v->u.arr.n; i++)
            sx_value_free(&v->u.arr.items[i]);
        free(v->u.arr.items);
        break;
    case SX_V_OBJECT:
        for (size_t i = 0; i < v->u.obj.n; i++) {
            free(v->u.obj.items[i].key);
            sx_value_free(&v->u.obj.items[i].value);
        }
        free(v->u.obj.items);
        break;
    default:
        break;
    }
    *v = sx_value_null();
}

struct sx_value sx_value_null(void) {
    struct sx_value v;
    memset(&v, 0, sizeof v);
    v.kind = SX_V_NULL;
    return v;
}

struct sx_value sx_value_int(int64_t i) {
    struct sx_value v = sx_value_null();
    v.kind = SX_V_INT;
    v.u.i = i;
    return v;
}

struct sx_value sx_value_float(double f) {
    struct sx_value v = sx_value_null();
    v.kind = SX_V_FLOAT;
    v.u.f = f;
    return v;
}

struct sx_value sx_value_bool(bool b) {
    struct sx_value v = sx_value_null();
    v.kind = SX_V_BOOL;
    v.u.b = b;
    return v;
}

static bool value_text(struct sx_value *out, enum sx_vkind kind, const char *s,
                       size_t n) {
    *out = sx_value_null();
    char *copy = sx_malloc(n + 1);
    if (!copy)
        return false;
    if (n)
        memcpy(copy, s, n);
    copy[n] = '\0';
    out->kind = kind;
    out->u.str.s = copy;
    out->u.str.len = n;
    return true;
}

bool sx_value_str(struct sx_value *out, const char *s, size_t n) {
    return value_text(out, SX_V_STR, s, n);
}

bool sx_value_raw(struct sx_value *out, const char *s, size_t n) {
    return value_text(out, SX_V_RAW, s, n);
}

void sx_value_array(struct sx_value *out) {
    *out = sx_value_null();
    out->kind = SX_V_ARRAY;
}

void sx_value_object(struct sx_value *out) {
    *out = sx_value_null();
    out->kind = SX_V_OBJECT;
}

/* Room for one more element of 'size' bytes in '*items' (geometric growth). */
static bool grow(void **items, size_t n, size_t *cap, size_t size) {
    if (n < *cap)
        return true;
    const size_t ncap = *cap ? *cap * 2 : 4;
    if (ncap > SIZE_MAX / size)
        return false;
    void *p = sx_realloc(*items, ncap * size);
    if (!p)
        return false;
    *items = p;
    *cap = ncap;
    return true;
}

/*
 * The container owns 'item' even when the push fails: it is freed then,
 * so that callers building a tree need no cleanup per element.
 */
bool sx_value_push(struct sx_value *arr, struct sx_value item) {
    void *items = arr->u.arr.items;
    if (arr->kind != SX_V_ARRAY ||
        !grow(&items, arr->u.arr.n, &arr->u.arr.cap, sizeof *arr->u.arr.items)) {
        sx_value_free(&item);
        return false;
    }
    arr->u.arr.items = items;
    arr->u.arr.items[arr->u.arr.n++] = item;
    return true;
}

/* Like a Python dict: an existing key keeps its position and gets the new value. */
bool sx_value_set(struct sx_value *obj, const char *key, size_t key_len,
                  struct sx_value item) {
    if (obj->kind != SX_V_OBJECT)
        goto fail;
    for (size_t i = 0; i < obj->u.obj.n; i++) {
        struct sx_member *m = &obj->u.obj.items[i];
        if (m->key_len == key_len && memcmp(m->key, key, key_len) == 0) {
            sx_value_free(&m->value);
            m->value = item;
            return true;
        }
    }
    void *items = obj->u.obj.items;
    if (!grow(&items, obj->u.obj.n, &obj->u.obj.cap, sizeof *obj->u.obj.items))
        goto fail;
    obj->u.obj.items = items;
    char *copy = sx_malloc(key_len + 1);
    if (!copy)
        goto fail;
    if (key_len)
        memcpy(copy, key, key_len);
    copy[key_len] = '\0';
    struct sx_member *m = &obj->u.obj.items[obj->u.obj.n++];
    m->key = copy;
    m->key_len = key_len;
    m->value = item;
    return true;
fail:
    sx_value_free(&item);
    return false;
}

/* An int64 and a uint64 can hold the same number; compare them as numbers. */
static bool int_equal(const struct sx_value *a, const struct sx_value *b) {
    if (a->kind == SX_V_INT && b->kind == SX_V_INT)
        return a->u.i == b->u.i;
    if (a->kind == SX_V_UINT && b->kind == SX_V_UINT)
        return a->u.u == b->u.u;
    const struct sx_value *s = a->kind == SX_V_INT ? a : b;
    const struct sx_value *u = a->kind == SX_V_INT ? b : a;
    return s->u.i >= 0 && (uint64_t)s->u.i == u->u.u;
}

static bool is_int_kind(enum sx_vkind k) { return k == SX_V_INT || k == SX_V_UINT; }

/*
 * Objects compare in key order: two trees that differ only in order would
 * still be written differently, which is what "the same run" must rule out.
 */
bool sx_value_equal(const struct sx_value *a, const struct sx_value *b) {
    if (is_int_kind(a->kind) && is_int_kind(b->kind))
        return int_equal(a, b);
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case SX_V_NULL:
        return true;
    case SX_V_BOOL:
        return a->u.b == b->u.b;
    case SX_V_FLOAT:
        if (isnan(a->u.f) || isnan(b->u.f))
            return isnan(a->u.f) && isnan(b->u.f);
        return memcmp(&a->u.f, &b->u.f, sizeof a->u.f) == 0;
    case SX_V_STR:
    case SX_V_RAW:
        return a->u.str.len == b->u.str.len &&
               memcmp(a->u.str.s, b->u.str.s, a->u.str.len) == 0;
    case SX_V_ARRAY:
        if (a->u.arr.n != b->u.arr.n)
            return false;
        for (size_t i = 0; i < a->u.arr.n; i++)
            if (!sx_value_equal(&a->u.arr.items[i], &b->u.arr.items[i]))
                return false;
        return true;
    case SX_V_OBJECT:
        if (a->u.obj.n != b->u.obj.n)
            return false;
        for (size_t i = 0; i < a->u.obj.n; i++) {
            const struct sx_member *ma = &a->u.obj.items[i], *mb = &b->u.obj.items[i];
            if (ma->key_len != mb->key_len ||
                memcmp(ma->key, mb->key, ma->key_len) != 0 ||
                !sx_value_equal(&ma->value, &mb->value))
                return false;
        }
        return true;
    default:
        return false;
    }
}

/* A newline and the indent of 'depth', after a comma with 'comma': one reservation (a
 * summary row writes fourteen items). */
static void newline_after(struct sx_buf *b, bool comma, int indent, int depth) {
    const size_t n = (size_t)indent * (size_t)(depth > 0 ? depth : 0);
    if (!sx_buf_reserve(b, n + 2))
        return;
    if (comma)
        b->data[b->len++] = ',';
    b->data[b->len++] = '\n';
    memset(b->data + b->len, ' ', n);
    b->len += n;
    b->data[b->len] = '\0';
}

void sx_write_newline(struct sx_buf *b, int indent, int depth) {
    if (indent >= 0)
        newline_after(b, false, indent, depth);
}

void sx_write_sep(struct sx_buf *b, int indent, int depth) {
    if (indent < 0)
        sx_buf_append(b, ", ", 2);
    else
        newline_after(b, true, indent, depth);
}

void sx_write_value(struct sx_buf *b, const struct sx_value *v, int indent, int depth) {
    switch (v->kind) {
    case SX_V_NULL:
        sx_buf_append(b, "null", 4);
        break;
    case SX_V_BOOL:
        if (v->u.b)
            sx_buf_append(b, "true", 4);
        else
            sx_buf_append(b, "false", 5);
        break;
    case SX_V_INT:
        sx_buf_i64(b, v->u.i);
        break;
    case SX_V_UINT:
        sx_buf_u64(b, v->u.u);
        break;
    case SX_V_FLOAT:
        /* The exporter turns non-finite metadata floats into None before dumping. */
        if (isfinite(v->u.f))
            sx_buf_double(b, v->u.f);
        else
            sx_buf_append(b, "null", 4);
        break;
    case SX_V_STR:
        sx_buf_str(b, v->u.str.s, v->u.str.len);
        break;
    case SX_V_RAW:
        sx_buf_append(b, v->u.str.s, v->u.str.len);
        break;
    case SX_V_ARRAY:
        if (v->u.arr.n == 0) {
            sx_buf_append(b, "[]", 2);
            break;
        }
        sx_buf_putc(b, '[');
        sx_write_newline(b, indent, depth + 1);
        for (size_t i = 0; i < v->u.arr.n; i++) {
            if (i)
                sx_write_sep(b, indent, depth + 1);
            sx_write_value(b, &v->u.arr.items[i], indent, depth + 1);
        }
        sx_write_newline(b, indent, depth);
        sx_buf_putc(b, ']');
        break;
    case SX_V_OBJECT:
        if (v->u.obj.n == 0) {
            sx_buf_append(b, "{}", 2);
            break;
        }
        sx_buf_putc(b, '{');
        sx_write_newline(b, indent, depth + 1);
        for (size_t i = 0; i < v->u.obj.n; i++) {
            const struct sx_member *m = &v->u.obj.items[i];
            if (i)
                sx_write_sep(b, indent, depth + 1);
            sx_buf_str(b, m->key, m->key_len);
            sx_buf_append(b, ": ", 2);
            sx_write_value(b, &m->value, indent, depth + 1);
        }
        sx_write_newline(b, indent, depth);
        sx_buf_putc(b, '}');
        break;
    }
}
