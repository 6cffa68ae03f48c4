/* json_convert.c - jansson's values as C values: Python's int(), numbers or null, exact
 * digits, and whole trees as sx_value */
#include "json_convert.h"

#include "json_tree.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Python's int(v) for the values a document can hold there. */
bool sx_json_py_int(const json_t *v, int64_t *out) {
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    if (json_is_boolean(v)) {
        *out = json_is_true(v) ? 1 : 0;
        return true;
    }
    if (json_is_real(v)) {
        const double d = json_real_value(v);
        if (!isfinite(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0)
            return false;
        *out = (int64_t)d;
        return true;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v), *end = NULL;
        while (*s == ' ' || (*s >= '\t' && *s <= '\r'))
            s++;
        if (*s == '\0')
            return false;
        errno = 0;
        const long long x = strtoll(s, (char **)&end, 10);
        if (errno != 0 || end == s ||
            (*end != '\0' && !(*end == ' ' || (*end >= '\t' && *end <= '\r'))))
            return false;
        while (*end == ' ' || (*end >= '\t' && *end <= '\r'))
            end++;
        if (*end != '\0' || (size_t)(end - json_string_value(v)) != json_string_length(v))
            return false;
        *out = x;
        return true;
    }
    return false;
}

/* A number or null (NaN) as a double. */
bool sx_json_num_or_null(const json_t *x, double *d) {
    if (json_is_null(x))
        *d = NAN;
    else if (json_is_number(x))
        *d = json_number_value(x);
    else
        return false;
    return true;
}

/* Decimal digits (no sign) that fit uint64. */
bool sx_json_parse_u64(const char *d, size_t n, uint64_t *out) {
    uint64_t v = 0;
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        const unsigned k = (unsigned)(d[i] - '0');
        if (k > 9 || v > (UINT64_MAX - k) / 10)
            return false;
        v = v * 10 + k;
    }
    *out = v;
    return true;
}

/*
 * The double whose integral value has exactly these decimal digits (an
 * optional '-' first), as "%.0f" prints it back; false when there is none.
 */
bool sx_json_exact_double(const char *d, size_t n, double *out) {
    char buf[400], back[400];
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, d, n);
    buf[n] = '\0';
    char *end = NULL;
    const double v = strtod(buf, &end);
    if (end != buf + n || !isfinite(v))
        return false;
    snprintf(back, sizeof back, "%.0f", v);
    if (strcmp(back, buf) != 0)
        return false;
    *out = v;
    return true;
}

/* JSON value -> sx_value (metadata). */
enum sx_status sx_json_value_of(const json_t *v, struct sx_value *out, const char *path,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_value item = {.kind = SX_V_NULL};
    const char *digits = NULL;
    size_t ndigits = 0;

    *out = sx_value_null();
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        sx_value_object(out);
        for (void *it = json_object_iter((json_t *)v); it != NULL;
             it = json_object_iter_next((json_t *)v, it)) {
            st = sx_json_value_of(json_object_iter_value(it), &item, path, err);
            if (st != SX_OK)
                goto out;
            const bool set = sx_value_set(out, json_object_iter_key(it),
                                          json_object_iter_key_len(it), item);
            item.kind = SX_V_NULL; /* taken by sx_value_set, on failure too */
            SX_CHECK(set, SX_ERR_NOMEM, err, path, "out of memory");
        }
        break;
    case JSON_ARRAY:
        sx_value_array(out);
        for (size_t i = 0; i < json_array_size(v); i++) {
            st = sx_json_value_of(json_array_get(v, i), &item, path, err);
            if (st != SX_OK)
                goto out;
            const bool pushed = sx_value_push(out, item);
            item.kind = SX_V_NULL; /* taken by sx_value_push, on failure too */
            SX_CHECK(pushed, SX_ERR_NOMEM, err, path, "out of memory");
        }
        break;
    case JSON_STRING:
        if (sx_json_big_int(v, &digits, &ndigits)) {
            uint64_t u = 0;
            if (digits[0] != '-' && sx_json_parse_u64(digits, ndigits, &u))
                *out = (struct sx_value){.kind = SX_V_UINT, .u.u = u};
            else /* beyond uint64 too: keep Python's exact digits */
                SX_CHECK(sx_value_raw(out, digits, ndigits), SX_ERR_NOMEM, err, path,
                         "out of memory");
            break;
        }
        SX_CHECK(sx_value_str(out, json_string_value(v), json_string_length(v)),
                 SX_ERR_NOMEM, err, path, "out of memory");
        break;
    case JSON_INTEGER:
        *out = sx_value_int((int64_t)json_integer_value(v));
        break;
    case JSON_REAL:
        *out = sx_value_float(json_real_value(v));
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        *out = sx_value_bool(json_is_true(v));
        break;
    case JSON_NULL:
        break;
    }
out:
    sx_value_free(&item);
    if (st != SX_OK)
        sx_value_free(out);
    return st;
}

enum sx_status sx_json_to_value(const char *text, size_t n, struct sx_value *out,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    json_t *root = NULL;

    *out = sx_value_null();
    st = sx_json_parse_text(text, n, &root, NULL, "JSON text", false, err);
    if (st != SX_OK)
        goto out;
    st = sx_json_value_of(root, out, NULL, err);
out:
    json_decref(root);
    return st;
}
