/* json_parse.c - JSON text through jansson: parse, with integers beyond 64 bits kept as
 * their digits; re-print canonically as json.dumps(json.loads(text)) does */
#include "json_parse.h"

#include "gz_read.h"
#include "json_tree.h"
#include "meta_canon.h"

#include "json_write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sx_json_kind(const json_t *v) {
    if (sx_json_big_int(v, NULL, NULL))
        return "an integer beyond the int64 range";
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "real";
    case JSON_TRUE:
        return "true";
    case JSON_FALSE:
        return "false";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

/*
 * Whether 'text' holds a bare NaN, Infinity or -Infinity token outside
 * strings: Python's json.loads accepts those, jansson does not.
 */
static bool has_nonfinite_token(const char *text, size_t n) {
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        const char c = text[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"')
            in_str = true;
        else if (c == 'N' && n - i >= 3 && memcmp(text + i, "NaN", 3) == 0)
            return true;
        else if (c == 'I' && n - i >= 8 && memcmp(text + i, "Infinity", 8) == 0)
            return true;
    }
    return false;
}

/*
 * jansson stops at int64; Python's ints do not (metadata holds uint64 values
 * such as 18446744073709551615). Before parsing, every integer token outside
 * the int64 range is rewritten as a string "\u0000sxbig<K>:<digits>", K the
 * smallest number for which no string of the text reads "\0sxbig<K>:..." (so
 * that no valid string is taken for one), and after parsing each such string
 * becomes "\xffsxbig:<digits>": a byte that valid UTF-8 never holds, and
 * jansson gives valid UTF-8 only. It is turned back into a number where it is
 * used: verbatim digits in canonical text, SX_V_UINT or SX_V_RAW in metadata.
 */
#define BIG_PREFIX "\xffsxbig:"
#define BIG_PREFIX_LEN 7
#define BIG_STEM "\0sxbig"
#define BIG_STEM_LEN 6

bool sx_json_big_int(const json_t *v, const char **digits, size_t *len) {
    if (!json_is_string(v) || json_string_length(v) <= BIG_PREFIX_LEN ||
        memcmp(json_string_value(v), BIG_PREFIX, BIG_PREFIX_LEN) != 0)
        return false;
    if (digits != NULL) {
        *digits = json_string_value(v) + BIG_PREFIX_LEN;
        *len = json_string_length(v) - BIG_PREFIX_LEN;
    }
    return true;
}

bool sx_json_is_str(const json_t *v) {
    return json_is_string(v) && !sx_json_big_int(v, NULL, NULL);
}

/* Whether the decimal integer token [p, p + n) lies outside int64. */
static bool beyond_int64(const char *p, size_t n) {
    const bool neg = *p == '-';
    const char *d = p + neg;
    const size_t nd = n - neg;
    const char *lim = neg ? "9223372036854775808" : "9223372036854775807";

    if (nd > 1 && d[0] == '0')
        return false; /* not JSON; let the parser say so */
    return nd > 19 || (nd == 19 && memcmp(d, lim, 19) > 0);
}

/*
 * A copy of 'text' with the big integers marked (NULL in '*out' when there
 * are none). False when 'text' already holds the marker.
 */
static void mark_big_ints(const char *text, size_t n, uint64_t k, struct sx_buf *out,
                          bool *marked, size_t *count) {
    size_t last = 0, i = 0;
    bool in_str = false;

    *marked = false;
    *count = 0;
    while (i < n) {
        const char c = text[i];
        if (in_str) {
            if (c == '\\') {
                i += 2;
                continue;
            }
            in_str = c != '"';
            i++;
            continue;
        }
        if (c == '"') {
            in_str = true;
            i++;
            continue;
        }
        if (c != '-' && !(c >= '0' && c <= '9')) {
            i++;
            continue;
        }
        size_t j = i + (c == '-');
        while (j < n && text[j] >= '0' && text[j] <= '9')
            j++;
        if (j < n && (text[j] == '.' || text[j] == 'e' || text[j] == 'E')) {
            /* a real: skip it whole */
            while (j < n &&
                   ((text[j] >= '0' && text[j] <= '9') || text[j] == '.' ||
                    text[j] == 'e' || text[j] == 'E' || text[j] == '+' || text[j] == '-'))
                j++;
        } else if (j > i + (c == '-') && beyond_int64(text + i, j - i)) {
            sx_buf_append(out, text + last, i - last);
            sx_buf_puts(out, "\"\\u0000sxbig");
            sx_buf_u64(out, k);
            sx_buf_putc(out, ':');
            sx_buf_append(out, text + i, j - i);
            sx_buf_putc(out, '"');
            last = j;
            *marked = true;
            (*count)++;
        }
        i = j > i ? j : i + 1;
    }
    if (*marked)
        sx_buf_append(out, text + last, n - last);
}

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The code point of the escape "\\uXXXX" at 'p' (6 bytes there), or -1. */
static long u_escape(const char *p, const char *end) {
    if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
        return -1;
    long v = 0;
    for (int i = 2; i < 6; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/*
 * The first bytes (at most 'cap') of the JSON string token whose text starts
 * at 'p' (after its quote), decoded; '*len' gets how many.
 */
static void decode_head(const char *p, const char *end, char *buf, size_t cap,
                        size_t *len) {
    size_t w = 0;
    while (p < end && *p != '"' && w < cap) {
        if (*p != '\\') {
            buf[w++] = *p++;
            continue;
        }
        if (end - p < 2)
            break;
        char e = p[1];
        if (e != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *f = memchr(from, e, sizeof from - 1);
            if (f == NULL)
                break; /* not JSON: the parser says so */
            buf[w++] = to[f - from];
            p += 2;
            continue;
        }
        long cp = u_escape(p, end);
        if (cp < 0)
            break;
        p += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            long lo = u_escape(p, end);
            if (lo < 0xDC00 || lo > 0xDFFF)
                break;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
        }
        unsigned char u[4];
        size_t nu = 0;
        if (cp < 0x80) {
            u[nu++] = (unsigned char)cp;
        } else if (cp < 0x800) {
            u[nu++] = (unsigned char)(0xC0 | (cp >> 6));
            u[nu++] = (unsigned char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            u[nu++] = (unsigned char)(0xE0 | (cp >> 12));
            u[nu++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[nu++] = (unsigned char)(0x80 | (cp & 0x3F));
        } else {
            u[nu++] = (unsigned char)(0xF0 | (cp >> 18));
            u[nu++] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
            u[nu++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[nu++] = (unsigned char)(0x80 | (cp & 0x3F));
        }
        for (size_t i = 0; i < nu && w < cap; i++)
            buf[w++] = (char)u[i];
    }
    *len = w;
}

/* K of a string that reads "\0sxbig<K>:...", or -1. */
static int64_t stem_k(const char *s, size_t len) {
    if (len < BIG_STEM_LEN + 2 || memcmp(s, BIG_STEM, BIG_STEM_LEN) != 0)
        return -1;
    int64_t k = 0;
    size_t i = BIG_STEM_LEN;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        if (k > 100000000)
            return -1;
        k = k * 10 + (s[i] - '0');
    }
    return i > BIG_STEM_LEN && i < len && s[i] == ':' ? k : -1;
}

static int cmp_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/*
 * The smallest K in '*k' that no string of 'text' uses: its big integers'
 * strings take it. False when out of memory.
 */
static bool free_stem(const char *text, size_t n, uint64_t *k) {
    const char *end = text + n;
    int64_t *taken = NULL;
    size_t nt = 0, cap = 0;
    bool in_str = false, ok = true;
    for (const char *p = text; p < end; p++) {
        if (in_str) {
            if (*p == '\\')
                p++;
            else if (*p == '"')
                in_str = false;
            continue;
        }
        if (*p != '"')
            continue;
        in_str = true;
        char head[32];
        size_t len = 0;
        decode_head(p + 1, end, head, sizeof head, &len);
        int64_t t = stem_k(head, len);
        if (t < 0)
            continue;
        if (nt == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            int64_t *g = sx_realloc(taken, ncap * sizeof *g);
            if (g == NULL) {
                ok = false;
                break;
            }
            taken = g;
            cap = ncap;
        }
        taken[nt++] = t;
    }
    *k = 0;
    if (ok && nt > 0) {
        qsort(taken, nt, sizeof *taken, cmp_i64);
        for (size_t i = 0; i < nt && taken[i] <= (int64_t)*k; i++)
            if (taken[i] == (int64_t)*k)
                (*k)++;
    }
    free(taken);
    return ok;
}

/*
 * Turn the strings of the marked big integers (stem K) into their final form;
 * the count of those found.
 */
static size_t unmark_big(json_t *v, uint64_t k) {
    size_t n = 0;
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        if (stem_k(s, len) != (int64_t)k)
            return 0;
        const char *colon = memchr(s + BIG_STEM_LEN, ':', len - BIG_STEM_LEN);
        size_t nd = len - (size_t)(colon + 1 - s);
        char *b = sx_malloc(BIG_PREFIX_LEN + nd + 1);
        if (b == NULL)
            return (size_t)-1;
        memcpy(b, BIG_PREFIX, BIG_PREFIX_LEN);
        memcpy(b + BIG_PREFIX_LEN, colon + 1, nd);
        int rc = json_string_setn_nocheck(v, b, BIG_PREFIX_LEN + nd);
        free(b);
        return rc == 0 ? 1 : (size_t)-1;
    }
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            size_t m = unmark_big(json_array_get(v, i), k);
            if (m == (size_t)-1)
                return m;
            n += m;
        }
    } else if (json_is_object(v)) {
        const char *key;
        json_t *x;
        json_object_foreach(v, key, x) {
            size_t m = unmark_big(x, k);
            if (m == (size_t)-1)
                return m;
            n += m;
        }
    }
    return n;
}

/*
 * Parse 'n' bytes with jansson. Turns jansson's failures into the errors
 * Python's json.loads + json.dumps would give: NaN/Infinity and float
 * overflow are SX_ERR_VALUE, the rest SX_ERR_FORMAT. 'what' prefixes the
 * message ("event metadata", a path, ...). 'is_doc': a whole document, read
 * as strict UTF-8 (stored snippets are decoded with errors="replace").
 */
/* jansson's line and column, or where they are in the document of 'at'. */
static void error_place(const json_error_t *je, const struct sx_json_at *at, int *line,
                        int *column) {
    struct sx_error ignored;
    *line = je->line;
    *column = je->column;
    if (at == NULL)
        return;
    memset(&ignored, 0, sizeof ignored);
    const uint64_t off = at->base + (je->position > 0 ? (uint64_t)je->position - 1 : 0);
    (void)sx_gz_locate(at->path, off, line, column, &ignored);
}

enum sx_status sx_json_parse_text(const char *text, size_t n, json_t **out,
                                  const char *source, const char *what, bool is_doc,
                                  struct sx_error *err) {
    return sx_json_parse_at(text, n, out, source, what, is_doc, NULL, err);
}

enum sx_status sx_json_parse_at(const char *text, size_t n, json_t **out,
                                const char *source, const char *what, bool is_doc,
                                const struct sx_json_at *at, struct sx_error *err) {
    enum sx_status st = SX_OK;
    int line = 0, column = 0;
    json_error_t je;
    char *clean = NULL;
    struct sx_buf big = {0};
    bool marked = false;
    size_t nmarked = 0;
    json_t *root = NULL;

    /* the strings are looked at only when there is something to mark */
    uint64_t k = 0;
    mark_big_ints(text, n, 0, &big, &marked, &nmarked);
    if (marked && !big.failed) {
        SX_CHECK(free_stem(text, n, &k), SX_ERR_NOMEM, err, source, "out of memory");
        if (k != 0) {
            sx_buf_reset(&big);
            mark_big_ints(text, n, k, &big, &marked, &nmarked);
        }
    }
    SX_CHECK(!big.failed, SX_ERR_NOMEM, err, source, "out of memory");
    if (marked) {
        text = big.data;
        n = big.len;
    }
    root = json_loadb(text, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (root == NULL && !is_doc && json_error_code(&je) == json_error_invalid_utf8) {
        clean = sx_utf8_sanitize(text, n);
        SX_CHECK(clean != NULL, SX_ERR_NOMEM, err, source, "out of memory");
        root = json_loadb(clean, strlen(clean), JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    }
    if (root == NULL) {
        const enum json_error_code code = json_error_code(&je);
        error_place(&je, at, &line, &column);
        SX_CHECK(code != json_error_out_of_memory, SX_ERR_NOMEM, err, source,
                 "out of memory");
        const bool nonfinite =
            has_nonfinite_token(text, n) || strstr(je.text, "real number") != NULL;
        /* A document read back: Python would accept NaN, but no exporter writes it. */
        SX_CHECK(
            !nonfinite || !is_doc, SX_ERR_UNSUPPORTED, err, source,
            "%s holds NaN, Infinity or an out-of-range float, which JSON profiles never "
            "contain (%s, line %d, column %d)",
            what, je.text, line, column);
        SX_CHECK(!nonfinite, SX_ERR_VALUE, err, source, SX_NAN_TEXT);
        SX_CHECK(false, SX_ERR_FORMAT, err, source,
                 "%s is not valid JSON: %s (line %d, column %d)", what, je.text, line,
                 column);
    }
    size_t found = marked ? unmark_big(root, k) : 0;
    SX_CHECK(found != (size_t)-1, SX_ERR_NOMEM, err, source, "out of memory");
    /* a repeated key drops a value, never adds one: more means a string was taken */
    SX_CHECK(found <= nmarked, SX_ERR_UNSUPPORTED, err, source,
             "%s has too many strings that read like the marker of a big integer", what);
    *out = root;
    root = NULL;
out:
    json_decref(root);
    free(clean);
    sx_buf_free(&big);
    return st;
}

/* ------------------------------------------------------------------ */
/* Canonical re-emission: json.dumps(json.loads(text))                */

static enum sx_status emit_canon(struct sx_buf *b, const json_t *v, const char *source,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t i, ndigits = 0;
    const char *sep = "", *digits = NULL;

    switch (json_typeof(v)) {
    case JSON_OBJECT:
        sx_buf_putc(b, '{');
        /* jansson keeps insertion order; a repeated key kept its first slot. */
        for (void *it = json_object_iter((json_t *)v); it != NULL;
             it = json_object_iter_next((json_t *)v, it)) {
            sx_buf_puts(b, sep);
            sx_buf_str(b, json_object_iter_key(it), json_object_iter_key_len(it));
            sx_buf_puts(b, ": ");
            st = emit_canon(b, json_object_iter_value(it), source, err);
            if (st != SX_OK)
                goto out;
            sep = ", ";
        }
        sx_buf_putc(b, '}');
        break;
    case JSON_ARRAY:
        sx_buf_putc(b, '[');
        for (i = 0; i < json_array_size(v); i++) {
            sx_buf_puts(b, sep);
            st = emit_canon(b, json_array_get(v, i), source, err);
            if (st != SX_OK)
                goto out;
            sep = ", ";
        }
        sx_buf_putc(b, ']');
        break;
    case JSON_STRING:
        if (sx_json_big_int(v, &digits, &ndigits))
            sx_buf_append(b, digits, ndigits); /* Python prints any int exactly */
        else
            sx_buf_str(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        sx_buf_i64(b, (int64_t)json_integer_value(v));
        break;
    case JSON_REAL:
        SX_CHECK(isfinite(json_real_value(v)), SX_ERR_VALUE, err, source, SX_NAN_TEXT);
        sx_buf_double(b, json_real_value(v));
        break;
    case JSON_TRUE:
        sx_buf_puts(b, "true");
        break;
    case JSON_FALSE:
        sx_buf_puts(b, "false");
        break;
    case JSON_NULL:
        sx_buf_puts(b, "null");
        break;
    }
out:
    return st;
}

/*
 * Check that 'list' is a list of objects and write it canonically. Shared by
 * sx_json_canon_meta (stored text) and the document loader (parsed rows).
 */
enum sx_status sx_json_canon_list(const json_t *list, struct sx_buf *out, bool *any,
                                  const char *source, const char *what,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    bool nonempty = false;

    SX_CHECK(json_is_array(list), SX_ERR_FORMAT, err, source,
             "%s must be a list of objects, got %s", what, sx_json_kind(list));
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *item = json_array_get(list, i);
        SX_CHECK(json_is_object(item), SX_ERR_FORMAT, err, source,
                 "%s: item %zu must be an object, got %s", what, i, sx_json_kind(item));
        if (json_object_size(item) > 0)
            nonempty = true;
    }
    st = emit_canon(out, list, source, err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(!out->failed, SX_ERR_NOMEM, err, source, "out of memory");
    if (any != NULL)
        *any = nonempty;
out:
    return st;
}

enum sx_status sx_json_canon_meta(const char *text, size_t n, struct sx_buf *out,
                                  bool *any, uint64_t *count, struct sx_error *err) {
    enum sx_status st = SX_OK;
    json_t *root = NULL;

    if (any != NULL)
        *any = false;
    if (count != NULL)
        *count = 0;
    if (n == 0) { /* json.loads(text or "[]") */
        text = "[]";
        n = 2;
    }
    if (sx_meta_canon_fast(text, n, out, any, count)) {
        SX_CHECK(!out->failed, SX_ERR_NOMEM, err, NULL, "out of memory");
        goto out;
    }
    st = sx_json_parse_text(text, n, &root, NULL, "event metadata", false, err);
    if (st != SX_OK)
        goto out;
    st = sx_json_canon_list(root, out, any, NULL, "event metadata", err);
    if (st != SX_OK)
        goto out;
    if (count != NULL)
        *count = json_array_size(root);
out:
    json_decref(root);
    return st;
}

/* A new array of copies of the strings in 'list' (a JSON array of strings). */
enum sx_status sx_json_string_list(const json_t *list, char ***strs, size_t *nstrs,
                                   const char *source, const char *what,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    char **v = NULL;
    size_t n = 0, i;

    SX_CHECK(json_is_array(list), SX_ERR_FORMAT, err, source,
             "%s must be a list of strings, got %s", what, sx_json_kind(list));
    v = sx_calloc(json_array_size(list) + 1, sizeof *v);
    SX_CHECK(v != NULL, SX_ERR_NOMEM, err, source, "out of memory");
    for (i = 0; i < json_array_size(list); i++) {
        const json_t *s = json_array_get(list, i);
        SX_CHECK(sx_json_is_str(s), SX_ERR_FORMAT, err, source,
                 "%s: item %zu must be a string, got %s", what, i, sx_json_kind(s));
        v[i] = sx_strndup(json_string_value(s), json_string_length(s));
        SX_CHECK(v[i] != NULL, SX_ERR_NOMEM, err, source, "out of memory");
        n = i + 1;
    }
    *strs = v;
    *nstrs = n;
    v = NULL;
out:
    if (v != NULL) {
        for (i = 0; i < n; i++)
            free(v[i]);
        free(v);
    }
    return st;
}

enum sx_status sx_json_parse_tags(const char *text, size_t n, const char *where,
                                  char ***tags, size_t *ntags, struct sx_error *err) {
    enum sx_status st = SX_OK;
    json_t *root = NULL;

    *tags = NULL;
    *ntags = 0;
    if (n == 0) {
        text = "[]";
        n = 2;
    }
    st = sx_json_parse_text(text, n, &root, where, where, false, err);
    if (st != SX_OK)
        goto out;
    st = sx_json_string_list(root, tags, ntags, where, where, err);
out:
    json_decref(root);
    return st;
}

/* ------------------------------------------------------------------ */
