/* json_stream.c - a JSON profile read in one pass: the window over its text, the top
 * level, and the fast path that reads a region row without building a tree */
#define _GNU_SOURCE /* strtod_l: numbers read in the C locale, whatever the process's */
#include "json_stream.h"

#include "gz_read.h"
#include "json_write.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIN_MIN ((size_t)4 << 20)
#define NO_KEEP UINT64_MAX
/* A document that is not an object is read whole for the general parser up to this. */
#define NOT_OBJECT_MAX ((size_t)64 << 20)

enum fast { F_OK = 0, F_NO, F_ERR };

struct i64v {
    int64_t *v;
    size_t n, cap;
    struct sx_big mem; /* v's storage: a row's columns ('pages'); else v is realloc's
                          ('all' is handed over as an sx_buf) */
    bool pages;
};

struct rd {
    const char *path;
    struct sx_error *err;
    enum sx_status st; /* the first failure; the reader stops at it */
    struct sx_gz_in *in;
    char *buf;       /* cap + 1 bytes: a NUL after the text in it */
    size_t cap, end; /* buf[0..end) is text [base, base + end) */
    uint64_t base;
    uint64_t keep; /* text from here on stays in the window (NO_KEEP: none) */
    bool eof;
    bool plain; /* not gzip: the text can be read again from any place */
    /* a read that failed: the end of the text, and the error once that text is needed
     * (not where the fast path only looks ahead, so both paths fail alike) */
    struct sx_error read_err;
    bool fast; /* the fast path is on */
    locale_t c_locale;
    const struct sx_jstream_ops *ops;
    void *ctx;
    size_t index; /* the next element's number */
    /* the fast path's scratch */
    struct sx_buf name, str, keys;
    size_t key_at[17];
    struct i64v vec[SX_NCOLS]; /* a row's columns as they are read */
    /* the copy of the text (sx_jstream_copy): all of it but the event columns the
     * fast path read, each replaced by a marker */
    struct sx_buf *copy;
    uint64_t copied;                /* the text before this is in 'copy' */
    uint64_t span[SX_NCOLS + 1][2]; /* every column and event_metadata */
    int span_col[SX_NCOLS + 1];
    int nspans;
    size_t ncopied_cols;
    struct sx_buf *vals, *offs; /* the columns the markers stand for, one after another;
                                   where each ends (int64) */
    /* when the check keeps no row, the columns are read straight in here, in the order
     * of the text ('vals' takes it at the end): no copy of them, and no scratch as large
     * as the largest row; 'span_upto': where each span's values end in it */
    bool direct;
    struct i64v all;
    size_t span_upto[SX_NCOLS + 1];
    struct sx_buf *metas; /* each event_metadata list the fast path read, sparse: its
                             length, then the place and text of each non-empty object */
    size_t nmetas, meta_n;
    /* where each marker is, in the order of the text: its element of "regions" and its
     * column (-1: event_metadata), and each element the fast path left as text (-2);
     * int64 pairs. 'nlists': "regions" keys of the document (one: the slots hold) */
    struct sx_buf *slots;
    size_t nlists;
    struct meta_item {
        size_t i;
        uint64_t a, b;
    } * items; /* the non-empty objects of the row's event_metadata (copy only) */
    size_t nitems, items_cap;
};

/* ------------------------------------------------------------------ */
/* The window                                                         */

static inline const unsigned char *at(const struct rd *r, uint64_t off) {
    return (const unsigned char *)r->buf + (off - r->base);
}
static inline uint64_t stop(const struct rd *r) { return r->base + r->end; }

/* Append the text [r->copied, to) to the copy. */
static void copy_to(struct rd *r, uint64_t to) {
    if (r->copy == NULL || to <= r->copied)
        return;
    sx_buf_append(r->copy, at(r, r->copied), (size_t)(to - r->copied));
    r->copied = to;
}

static void fail(struct rd *r, enum sx_status code, const char *what) {
    if (r->st == SX_OK)
        r->st = sx_error_set(r->err, code, r->path, "%s %s", what, r->path);
}

/* Read more text; what is from 'from' (or the kept part) on stays. */
static void rd_fill(struct rd *r, uint64_t from) {
    if (r->st != SX_OK || r->eof)
        return;
    if (r->keep < from)
        from = r->keep;
    if (from > stop(r))
        from = stop(r);
    if (from < r->base)
        from = r->base; /* what left the window cannot be kept (no caller asks it) */
    copy_to(r, from);
    const size_t drop = (size_t)(from - r->base);
    memmove(r->buf, r->buf + drop, r->end - drop);
    r->end -= drop;
    r->base += drop;
    if (r->cap - r->end < r->cap / 4) {
        if (r->cap > SIZE_MAX / 4) {
            fail(r, SX_ERR_NOMEM, "out of memory reading");
            return;
        }
        char *p = sx_realloc(r->buf, 2 * r->cap + 1);
        if (p == NULL) {
            fail(r, SX_ERR_NOMEM, "out of memory reading");
            return;
        }
        r->buf = p;
        r->cap *= 2;
    }
    size_t n = 0;
    if (sx_gz_in_read(r->in, r->buf + r->end, r->cap - r->end, &n, &r->read_err) !=
        SX_OK) {
        r->eof = true;
        return;
    }
    if (n == 0)
        r->eof = true;
    r->end += n;
    r->buf[r->end] = '\0';
}

/*
 * Back to 'off', which has left the window: the text is read again from there. The
 * fast path keeps no element's start in the window of a plain file (a huge row would
 * grow the window to its size, and every read with it), and comes here when it gives
 * an element up; a gzip's is kept (it is read in order).
 */
static void rd_rewind(struct rd *r, uint64_t off) {
    if (r->st != SX_OK || off >= r->base)
        return;
    r->st = sx_gz_in_seek(r->in, off, r->err);
    r->base = off;
    r->end = 0;
    r->eof = false;
    r->buf[0] = '\0';
}

/* At least 'k' bytes from 'off' in the window, or all the text there is. */
static inline void rd_need(struct rd *r, uint64_t off, size_t k) {
    while (stop(r) - off < k && !r->eof && r->st == SX_OK)
        rd_fill(r, off);
}

/* The text ended where more is needed: a read that failed there is the error. */
static void rd_ended(struct rd *r) {
    if (r->read_err.code == SX_OK || r->st != SX_OK)
        return;
    r->st = r->read_err.code;
    if (r->err != NULL && r->err->code == SX_OK)
        *r->err = r->read_err;
}

/* The byte at 'off', or -1 past the end of the text (or after a failure). */
static inline int peek(struct rd *r, uint64_t off) {
    if (off >= stop(r)) {
        rd_need(r, off, 1);
        if (off >= stop(r)) {
            rd_ended(r);
            return -1;
        }
    }
    return *at(r, off);
}

static inline bool is_ws(int c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static uint64_t skip_ws(struct rd *r, uint64_t off) {
    while (is_ws(peek(r, off)))
        off++;
    return off;
}

/* After the string whose opening quote was before 'off' (or the end of the text). */
static uint64_t skip_string(struct rd *r, uint64_t off) {
    for (;;) {
        rd_need(r, off, 2);
        const unsigned char *p = at(r, off), *e = at(r, stop(r));
        while (p < e && *p != '"' && *p != '\\')
            p++;
        off += (uint64_t)(p - at(r, off));
        if (p == e) {
            if (r->eof || r->st != SX_OK) {
                rd_ended(r);
                return off;
            }
            continue;
        }
        if (*p == '"')
            return off + 1;
        /* an escape: the next byte cannot end the string; it may be past the window's
         * end, and past it rd_need would not read on */
        rd_need(r, off, 2);
        off += 2;
        if (off > stop(r)) {
            rd_ended(r);
            return stop(r);
        }
    }
}

/*
 * The end of the value at 'off': strings and nesting are followed, nothing is
 * checked (the general parser does). Stops at the end of the text.
 */
static uint64_t skip_value(struct rd *r, uint64_t off) {
    long depth = 0;
    for (;;) {
        int c = peek(r, off);
        if (c < 0)
            return off;
        if (c == '"') {
            off = skip_string(r, off + 1);
            if (depth == 0)
                return off;
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth <= 0)
                return off + 1;
        } else if (depth == 0) {
            while (c >= 0 && c != ',' && c != '}' && c != ']' && c != '"' && !is_ws(c))
                c = peek(r, ++off);
            return off;
        } else {
            /* inside a list or object: run to the next byte that matters */
            const unsigned char *p = at(r, off) + 1, *e = at(r, stop(r));
            while (p < e && *p != '"' && *p != '{' && *p != '}' && *p != '[' && *p != ']')
                p++;
            off += (uint64_t)(p - at(r, off));
            continue;
        }
        off++;
    }
}

/* "... is not valid JSON: <why> (line, column)" at 'off'. */
static void syntax(struct rd *r, uint64_t off, const char *why) {
    int line = 0, column = 0;
    struct sx_error ignored;
    if (r->st != SX_OK)
        return;
    memset(&ignored, 0, sizeof ignored);
    (void)sx_gz_locate(r->path, off, &line, &column, &ignored);
    r->st = sx_error_set(r->err, SX_ERR_FORMAT, r->path,
                         "%s is not valid JSON: %s (line %d, column %d)", r->path, why,
                         line, column);
}

/* ------------------------------------------------------------------ */
/* The fast path: tokens                                              */

/* Bytes of the valid UTF-8 sequence at 'p' (0: invalid or cut); as jansson checks. */
static size_t utf8_len(const unsigned char *p, size_t n) {
    const unsigned c = p[0];
    size_t k;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        k = 2;
    else if (c >= 0xe0 && c <= 0xef)
        k = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
        k = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    if (n < k || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < k; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return k;
}

static int hex4(const unsigned char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        const int c = p[i];
        const int d = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static void put_utf8(struct sx_buf *b, uint32_t cp) {
    char u[4];
    size_t k;
    if (cp < 0x80)
        u[0] = (char)cp, k = 1;
    else if (cp < 0x800)
        u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3f)), k = 2;
    else if (cp < 0x10000)
        u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 0x3f)),
        u[2] = (char)(0x80 | (cp & 0x3f)), k = 3;
    else
        u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 0x3f)),
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f)),
        k = 4;
    sx_buf_append(b, u, k);
}

/* The string at '*off' decoded into 'out' (reset first); F_NO for anything jansson
 * would refuse, and for what is not a string. */
static enum fast fast_str(struct rd *r, uint64_t *poff, struct sx_buf *out) {
    uint64_t off = *poff;
    sx_buf_reset(out);
    if (peek(r, off) != '"')
        return F_NO;
    off++;
    for (;;) {
        rd_need(r, off, 16);
        if (r->st != SX_OK)
            return F_ERR;
        const unsigned char *s = at(r, off), *e = at(r, stop(r)), *p = s;
        while (p < e && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        sx_buf_append(out, s, (size_t)(p - s));
        off += (uint64_t)(p - s);
        if (p == e) {
            if (r->eof)
                return F_NO;
            continue;
        }
        if (e - p < 12 && !r->eof) {
            rd_need(r, off, 12);
            continue;
        }
        const unsigned c = *p;
        if (c == '"') {
            if (out->failed) {
                fail(r, SX_ERR_NOMEM, "out of memory reading");
                return F_ERR;
            }
            *poff = off + 1;
            return F_OK;
        }
        if (c < 0x20)
            return F_NO;
        if (c >= 0x80) {
            const size_t k = utf8_len(p, (size_t)(e - p));
            if (k == 0)
                return F_NO;
            sx_buf_append(out, p, k);
            off += k;
            continue;
        }
        /* an escape */
        if (e - p < 2)
            return F_NO;
        char one = 0;
        switch (p[1]) {
        case '"':
            one = '"';
            break;
        case '\\':
            one = '\\';
            break;
        case '/':
            one = '/';
            break;
        case 'b':
            one = '\b';
            break;
        case 'f':
            one = '\f';
            break;
        case 'n':
            one = '\n';
            break;
        case 'r':
            one = '\r';
            break;
        case 't':
            one = '\t';
            break;
        case 'u':
            break;
        default:
            return F_NO;
        }
        if (p[1] != 'u') {
            sx_buf_putc(out, one);
            off += 2;
            continue;
        }
        if (e - p < 6)
            return F_NO;
        int cp = hex4(p + 2);
        if (cp < 0 || (cp >= 0xdc00 && cp <= 0xdfff))
            return F_NO;
        if (cp >= 0xd800 && cp <= 0xdbff) {
            if (e - p < 12 || p[6] != '\\' || p[7] != 'u')
                return F_NO;
            const int lo = hex4(p + 8);
            if (lo < 0xdc00 || lo > 0xdfff)
                return F_NO;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            off += 6;
        }
        put_utf8(out, (uint32_t)cp);
        off += 6;
    }
}

/* Whether the byte ends a number token as jansson reads one. */
static inline bool num_end(unsigned c) {
    return !(c - '0' < 10 || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-');
}

/*
 * An integer at 'p' (jansson's grammar, within int64), the NUL after the
 * window's text stopping it. F_NO for anything else (a float, a big number).
 */
static inline enum fast scan_int(const unsigned char **pp, int64_t *out) {
    const unsigned char *p = *pp;
    const bool neg = *p == '-';
    p += neg;
    unsigned d = (unsigned)*p - '0';
    if (d > 9)
        return F_NO;
    const unsigned char *s = p;
    uint64_t v = d;
    p++;
    if (d != 0)
        while ((d = (unsigned)*p - '0') <= 9) {
            v = v * 10 + d;
            p++;
        }
    if (p - s > 19 || !num_end(*p))
        return F_NO;
    if (p - s == 19 && v > (uint64_t)INT64_MAX + neg)
        return F_NO;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    *pp = p;
    return F_OK;
}

static enum fast fast_int(struct rd *r, uint64_t *poff, int64_t *v) {
    rd_need(r, *poff, 32);
    if (r->st != SX_OK)
        return F_ERR;
    const unsigned char *p = at(r, *poff), *s = p;
    if (scan_int(&p, v) != F_OK || (p == at(r, stop(r)) && !r->eof))
        return F_NO;
    *poff += (uint64_t)(p - s);
    return F_OK;
}

/* 'word' ("null", "true", "false") at '*off', followed by a delimiter. */
static bool fast_word(struct rd *r, uint64_t *poff, const char *word) {
    const size_t n = strlen(word);
    rd_need(r, *poff, n + 1);
    if (stop(r) - *poff < n || memcmp(at(r, *poff), word, n) != 0)
        return false;
    const int c = peek(r, *poff + n);
    if (c >= 0 && !(is_ws(c) || c == ',' || c == '}' || c == ']'))
        return false;
    *poff += n;
    return true;
}

static bool i64v_grow(struct i64v *v) {
    const size_t cap = v->cap ? 2 * v->cap : 1024;
    if (cap >= SIZE_MAX / 16)
        return false;
    if (v->pages) {
        if (!sx_big_reserve(&v->mem, cap * sizeof *v->v, v->n * sizeof *v->v))
            return false;
        v->v = v->mem.p;
        v->cap = v->mem.cap / sizeof *v->v;
        return true;
    } else {
        int64_t *p = sx_realloc(v->v, cap * sizeof *p);
        if (p == NULL)
            return false;
        v->v = p;
    }
    v->cap = cap;
    return true;
}

/* A list of integers at '*off' appended to 'v': a profile's bulk, and its hot loop. */
static enum fast fast_ints(struct rd *r, uint64_t *poff, struct i64v *v) {
    uint64_t off = *poff;
    int c;
    /* a check that keeps no column counts the values (the copy takes them) */
    const bool keep = !(r->ops->no_columns || r->ops->no_events) || r->copy != NULL;
    int64_t sink;
    if (peek(r, off) != '[')
        return F_NO;
    off = skip_ws(r, off + 1);
    if (peek(r, off) == ']') {
        *poff = off + 1;
        return F_OK;
    }
    for (;;) {
        rd_need(r, off, 65); /* 64 and a byte: 'safe' past 'off', or the end of text */
        if (r->st != SX_OK)
            return F_ERR;
        const unsigned char *p = at(r, off), *const s = p, *const e = at(r, stop(r));
        /* a value and its separator take < 64 bytes, unless they are not ours */
        const unsigned char *const safe = r->eof ? e : e - 64;
        if (p >= safe)
            return F_NO; /* the text ended inside the list */
        while (p < safe) {
            int64_t *dst = &sink;
            if (keep) {
                if (v->n == v->cap && !i64v_grow(v)) {
                    fail(r, SX_ERR_NOMEM, "out of memory reading");
                    return F_ERR;
                }
                dst = &v->v[v->n];
            }
            if (scan_int(&p, dst) != F_OK)
                return F_NO;
            v->n++;
            if (p[0] == ',' && p[1] == ' ' && !is_ws(p[2])) {
                p += 2;
                continue;
            }
            while (is_ws(*p))
                p++;
            if (p == e)
                goto slow; /* whitespace to the window's end */
            if (*p == ']') {
                *poff = off + (uint64_t)(p - s) + 1;
                return F_OK;
            }
            if (*p != ',')
                return F_NO;
            p++;
            while (is_ws(*p))
                p++;
            if (p == e)
                goto next;
        }
    next:
        off += (uint64_t)(p - s);
        off = skip_ws(r, off);
        continue;
    slow:
        off = skip_ws(r, off + (uint64_t)(p - s));
        c = peek(r, off);
        if (c == ']') {
            *poff = off + 1;
            return F_OK;
        }
        if (c != ',')
            return F_NO;
        off = skip_ws(r, off + 1);
    }
}

/* The value of a metadata key, written as json.dumps writes it. */
/* The canonical text of event metadata, when the caller wants it ('b' not NULL). */
static inline void c_putc(struct sx_buf *b, char c) {
    if (b != NULL)
        sx_buf_putc(b, c);
}
static inline void c_puts(struct sx_buf *b, const char *s) {
    if (b != NULL)
        sx_buf_puts(b, s);
}
static inline void c_str(struct sx_buf *b, const char *s, size_t n) {
    if (b != NULL)
        sx_buf_str(b, s, n);
}
static inline void c_i64(struct sx_buf *b, int64_t v) {
    if (b != NULL)
        sx_buf_i64(b, v);
}
static inline void c_double(struct sx_buf *b, double v) {
    if (b != NULL)
        sx_buf_double(b, v);
}

static enum fast meta_value(struct rd *r, uint64_t *poff, struct sx_buf *canon) {
    const int c = peek(r, *poff);
    if (c == '"') {
        const enum fast f = fast_str(r, poff, &r->str);
        if (f == F_OK)
            c_str(canon, r->str.data, r->str.len);
        return f;
    }
    if (c == 't' || c == 'f' || c == 'n') {
        const char *w = c == 't' ? "true" : c == 'f' ? "false" : "null";
        if (!fast_word(r, poff, w))
            return F_NO;
        c_puts(canon, w);
        return F_OK;
    }
    if (c != '-' && !(c >= '0' && c <= '9'))
        return F_NO; /* nested lists and objects: the general parser */
    rd_need(r, *poff, 40);
    if (r->st != SX_OK)
        return F_ERR;
    const unsigned char *p = at(r, *poff), *s = p, *e = at(r, stop(r));
    int64_t iv;
    if (scan_int(&p, &iv) == F_OK) {
        if (p == e && !r->eof)
            return F_NO;
        c_i64(canon, iv);
        *poff += (uint64_t)(p - s);
        return F_OK;
    }
    /* a float: jansson's grammar, then the C locale's strtod */
    p = s + (*s == '-');
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (*p >= '0' && *p <= '9')
            p++;
    else
        return F_NO;
    bool real = false;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9'))
            return F_NO;
        while (*p >= '0' && *p <= '9')
            p++;
        real = true;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return F_NO;
        while (*p >= '0' && *p <= '9')
            p++;
        real = true;
    }
    if (!real || !num_end(*p) || p - s > 38 || (p == e && !r->eof))
        return F_NO; /* big integers and long numbers: the general parser */
    char tok[40];
    memcpy(tok, s, (size_t)(p - s));
    tok[p - s] = '\0';
    const double d = strtod_l(tok, NULL, r->c_locale);
    if (!isfinite(d))
        return F_NO;
    c_double(canon, d);
    *poff += (uint64_t)(p - s);
    return F_OK;
}

/*
 * event_metadata: a list of flat objects, written into 'canon' as json.dumps
 * writes it ('*n' items; '*any': some object has keys). A repeated key, a
 * nested value: F_NO.
 */
static enum fast fast_meta(struct rd *r, uint64_t *poff, struct sx_buf *canon, bool *any,
                           size_t *n) {
    uint64_t off = *poff;
    enum fast f;
    *n = 0;
    *any = false;
    r->nitems = 0;
    if (canon != NULL)
        sx_buf_reset(canon);
    if (peek(r, off) != '[')
        return F_NO;
    c_putc(canon, '[');
    off = skip_ws(r, off + 1);
    if (peek(r, off) == ']') {
        *poff = off + 1;
        return F_OK;
    }
    for (;;) {
        rd_need(r, off, 8);
        const unsigned char *p = at(r, off);
        if (*n > 0)
            c_puts(canon, ", ");
        (*n)++;
        if (p[0] == '{' && p[1] == '}') {
            c_puts(canon, "{}");
            off += 2;
        } else {
            const uint64_t item = off;
            if (peek(r, off) != '{')
                return F_NO;
            off = skip_ws(r, off + 1);
            c_putc(canon, '{');
            size_t nkeys = 0;
            sx_buf_reset(&r->keys);
            if (peek(r, off) != '}') {
                for (;;) {
                    if ((f = fast_str(r, &off, &r->str)) != F_OK)
                        return f;
                    if (nkeys == 16)
                        return F_NO;
                    if (r->str.len > 0 && memchr(r->str.data, '\0', r->str.len) != NULL)
                        return F_NO; /* jansson refuses a NUL in a key: its message */
                    for (size_t k = 0; k < nkeys; k++)
                        if (r->key_at[k + 1] - r->key_at[k] == r->str.len &&
                            (r->str.len == 0 || memcmp(r->keys.data + r->key_at[k],
                                                       r->str.data, r->str.len) == 0))
                            return F_NO; /* a repeated key: the general parser */
                    r->key_at[nkeys] = r->keys.len;
                    sx_buf_append(&r->keys, r->str.data, r->str.len);
                    r->key_at[++nkeys] = r->keys.len;
                    if (nkeys > 1)
                        c_puts(canon, ", ");
                    c_str(canon, r->str.data, r->str.len);
                    c_puts(canon, ": ");
                    off = skip_ws(r, off);
                    if (peek(r, off) != ':')
                        return F_NO;
                    off = skip_ws(r, off + 1);
                    if ((f = meta_value(r, &off, canon)) != F_OK)
                        return f;
                    off = skip_ws(r, off);
                    const int c = peek(r, off);
                    if (c == '}')
                        break;
                    if (c != ',')
                        return F_NO;
                    off = skip_ws(r, off + 1);
                }
                *any = true;
                if (r->metas != NULL) {
                    if (r->nitems == r->items_cap) {
                        const size_t cap = r->items_cap ? 2 * r->items_cap : 64;
                        struct meta_item *mi = sx_realloc(r->items, cap * sizeof *mi);
                        if (mi == NULL) {
                            fail(r, SX_ERR_NOMEM, "out of memory reading");
                            return F_ERR;
                        }
                        r->items = mi;
                        r->items_cap = cap;
                    }
                    r->items[r->nitems++] = (struct meta_item){*n - 1, item, off + 1};
                }
            }
            off++;
            c_putc(canon, '}');
        }
        int c = peek(r, off);
        if (c == ',') {
            c = peek(r, ++off);
            if (c == ' ')
                c = peek(r, ++off);
            if (is_ws(c))
                off = skip_ws(r, off);
            continue;
        }
        off = skip_ws(r, off);
        c = peek(r, off);
        if (c == ',') {
            off = skip_ws(r, off + 1);
            continue;
        }
        if (c != ']')
            return F_NO;
        c_putc(canon, ']');
        if ((canon != NULL && canon->failed) || r->keys.failed) {
            fail(r, SX_ERR_NOMEM, "out of memory reading");
            return F_ERR;
        }
        *poff = off + 1;
        return F_OK;
    }
}

/* ------------------------------------------------------------------ */
/* The fast path: a region row                                        */

enum key {
    K_NAME,
    K_RANK,
    K_SFILE,
    K_SLINE,
    K_STEXT,
    K_TAGS,
    K_COL, /* K_COL + enum sx_col */
    K_META = K_COL + SX_NCOLS,
    K_EXCL,
    K_NKEYS
};

static const char *const key_names[K_NKEYS] = {
    [K_NAME] = "name",
    [K_RANK] = "rank",
    [K_SFILE] = "source_file",
    [K_SLINE] = "source_lineno",
    [K_STEXT] = "source_text",
    [K_TAGS] = "tags",
    [K_COL + SX_COL_START] = "start_times_ns",
    [K_COL + SX_COL_END] = "end_times_ns",
    [K_COL + SX_COL_GPU] = "gpu_durations_ns",
    [K_COL + SX_COL_CALL] = "call_ids",
    [K_COL + SX_COL_PARENT] = "parent_ids",
    [K_COL + SX_COL_THREAD] = "thread_ids",
    [K_COL + SX_COL_TASK] = "task_ids",
    [K_COL + SX_COL_AWAIT] = "await_ns",
    [K_META] = "event_metadata",
    [K_EXCL] = "exclusive_total_ns",
};

static int key_of(const struct sx_buf *k) {
    if (k->len == 0 || k->len > 32)
        return -1;
    for (int i = 0; i < K_NKEYS; i++) /* the first byte before strlen: few candidates */
        if (key_names[i][0] == k->data[0] && strlen(key_names[i]) == k->len &&
            memcmp(key_names[i], k->data, k->len) == 0)
            return i;
    return -1;
}

/* A string or null into a new copy ('*s' NULL for null). */
static enum fast str_or_null(struct rd *r, uint64_t *off, char **s) {
    if (fast_word(r, off, "null"))
        return F_OK;
    const enum fast f = fast_str(r, off, &r->str);
    if (f != F_OK)
        return f;
    *s = sx_strndup(r->str.len ? r->str.data : "", r->str.len);
    if (*s == NULL) {
        fail(r, SX_ERR_NOMEM, "out of memory reading");
        return F_ERR;
    }
    return F_OK;
}

static enum fast fast_tags(struct rd *r, uint64_t *poff, struct sx_row *row) {
    uint64_t off = *poff;
    size_t cap = 0;
    if (peek(r, off) != '[')
        return F_NO;
    off = skip_ws(r, off + 1);
    if (peek(r, off) == ']') {
        *poff = off + 1;
        return F_OK;
    }
    for (;;) {
        const enum fast f = fast_str(r, &off, &r->str);
        if (f != F_OK)
            return f;
        if (row->ntags == cap) {
            cap = cap ? 2 * cap : 4;
            char **t = sx_realloc(row->tags, cap * sizeof *t);
            if (t == NULL) {
                fail(r, SX_ERR_NOMEM, "out of memory reading");
                return F_ERR;
            }
            row->tags = t;
        }
        row->tags[row->ntags] = sx_strndup(r->str.len ? r->str.data : "", r->str.len);
        if (row->tags[row->ntags] == NULL) {
            fail(r, SX_ERR_NOMEM, "out of memory reading");
            return F_ERR;
        }
        row->ntags++;
        off = skip_ws(r, off);
        const int c = peek(r, off);
        if (c == ']') {
            *poff = off + 1;
            return F_OK;
        }
        if (c != ',')
            return F_NO;
        off = skip_ws(r, off + 1);
    }
}

/*
 * The region row at '*off' (an object) into 'row' and its name into r->name,
 * as the general loader would read it. F_NO when it holds anything the fast
 * path leaves to that loader (other keys, a repeated key, null columns,
 * aggregates, lengths that differ, anything invalid).
 */
static enum fast fast_row(struct rd *r, uint64_t *poff, struct sx_row *row) {
    uint64_t off = *poff;
    unsigned seen = 0;
    enum fast f = F_OK;
    struct i64v *const col = r->vec;
    const size_t all_n = r->all.n; /* what the row read straight is dropped on failure */
    struct sx_buf meta = {0};
    bool meta_any = false;
    size_t nmeta = 0;

    memset(row, 0, sizeof *row);
    r->nspans = 0;
    for (int c = 0; c < SX_NCOLS; c++)
        col[c].n = 0;
    if (peek(r, off) != '{')
        return F_NO;
    off = skip_ws(r, off + 1);
    for (;;) {
        if ((f = fast_str(r, &off, &r->str)) != F_OK)
            goto out;
        const int k = key_of(&r->str);
        f = F_NO;
        if (k < 0 || (seen & (1u << k)))
            goto out;
        seen |= 1u << k;
        off = skip_ws(r, off);
        if (peek(r, off) != ':')
            goto out;
        off = skip_ws(r, off + 1);
        switch (k) {
        case K_NAME:
            f = fast_str(r, &off, &r->name);
            if (f == F_OK && memchr(r->name.data, '\0', r->name.len) != NULL)
                f = F_NO; /* the loader's message */
            break;
        case K_RANK:
            f = fast_int(r, &off, &row->rank);
            break;
        case K_SFILE:
            f = str_or_null(r, &off, &row->source_file);
            break;
        case K_STEXT:
            f = str_or_null(r, &off, &row->source_text);
            break;
        case K_SLINE:
            f = F_OK;
            if (!fast_word(r, &off, "null")) {
                f = fast_int(r, &off, &row->source_lineno);
                row->has_lineno = f == F_OK;
            }
            break;
        case K_TAGS:
            f = fast_tags(r, &off, row);
            break;
        case K_META:
            r->span[r->nspans][0] = off;
            f = fast_meta(r, &off, r->ops->no_columns || r->ops->no_meta ? NULL : &meta,
                          &meta_any, &nmeta);
            r->span[r->nspans][1] = off;
            r->span_col[r->nspans] = -1;
            if (r->metas != NULL && f == F_OK && nmeta > 0)
                r->nspans++; /* the copy puts it apart */
            r->meta_n = nmeta;
            break;
        case K_EXCL:
            f = fast_int(r, &off, &row->exclusive_total);
            row->has_exclusive = f == F_OK;
            break;
        default:
            r->span[r->nspans][0] = off;
            if (r->direct) {
                const size_t from = r->all.n;
                f = fast_ints(r, &off, &r->all);
                col[k - K_COL].n = r->all.n - from;
                r->span_upto[r->nspans] = r->all.n;
            } else {
                f = fast_ints(r, &off, &col[k - K_COL]);
            }
            r->span[r->nspans][1] = off;
            r->span_col[r->nspans++] = k - K_COL;
            break;
        }
        if (f != F_OK)
            goto out;
        off = skip_ws(r, off);
        const int c = peek(r, off);
        if (c == '}')
            break;
        f = F_NO;
        if (c != ',')
            goto out;
        off = skip_ws(r, off + 1);
    }
    off++;
    /* what the loader would refuse or read otherwise: its business */
    f = F_NO;
    const unsigned need = 1u << K_NAME | 1u << K_RANK | 1u << (K_COL + SX_COL_START) |
                          1u << (K_COL + SX_COL_END);
    if ((seen & need) != need)
        goto out;
    const size_t n = col[SX_COL_START].n;
    for (int c = 0; c < SX_NCOLS; c++)
        if ((seen & (1u << (K_COL + c))) && col[c].n != n)
            goto out;
    if (nmeta != 0 && nmeta != n)
        goto out;
    row->count = n;
    row->event_data_available = true;
    for (int c = 0; c < SX_NCOLS; c++) {
        if (!(seen & (1u << (K_COL + c))))
            continue;
        row->cols |= SX_COLBIT(c);
        if (r->ops->no_columns || r->ops->no_events)
            continue; /* a check that keeps no row: the values are not copied out */
        if (r->ops->lend_events && n > 0) {
            row->col[c] = col[c].v; /* until the element callback returns */
            row->lent |= SX_COLBIT(c);
            continue;
        }
        /* exactly its size: the reader's vector is grown for the largest row */
        row->col[c] = sx_malloc((n ? n : 1) * sizeof *row->col[c]);
        if (row->col[c] == NULL) {
            fail(r, SX_ERR_NOMEM, "out of memory reading");
            f = F_ERR;
            goto out;
        }
        if (n > 0)
            memcpy(row->col[c], col[c].v, n * sizeof *row->col[c]);
    }
    if (nmeta > 0 && !r->ops->no_columns && !r->ops->no_meta) {
        row->meta_text = meta.data;
        row->meta_any = meta_any;
        meta = (struct sx_buf){0};
    }
    *poff = off;
    f = F_OK;
out:
    sx_buf_free(&meta);
    if (f != F_OK) {
        sx_row_clear(row);
        r->all.n = all_n;
    }
    return f;
}

/* ------------------------------------------------------------------ */
/* The document                                                       */

/* The copy's record of what is at element 'i' of "regions" (see 'slots'). */
static void slot(struct rd *r, size_t i, int64_t what) {
    const int64_t pair[2] = {(int64_t)i, what};
    if (r->slots != NULL)
        sx_buf_append(r->slots, pair, sizeof pair);
}

/* Element 'i' at 'off': the fast path, else its text for the general loader. */
static uint64_t read_element(struct rd *r, uint64_t off) {
    struct sx_row row;
    const size_t i = r->index++;
    uint64_t end = off;

    /* the copy takes the text as the window leaves it: it keeps the element's */
    r->keep = r->plain && r->copy == NULL ? NO_KEEP : off;
    const enum fast f = r->fast ? fast_row(r, &end, &row) : F_NO;
    if (f == F_ERR)
        goto out;
    if (f == F_NO) {
        rd_rewind(r, off);
        r->keep = off;
    }
    if (f == F_OK && r->copy != NULL) {
        /* the columns' text replaced by markers: "\u0000sx<N>", N their number */
        for (int k = 0; k < r->nspans; k++) {
            char mark[40];
            const int c = r->span_col[k];
            if (c < 0) { /* event_metadata: its marker, and it sparse in 'metas' */
                copy_to(r, r->span[k][0]);
                slot(r, i, -1);
                snprintf(mark, sizeof mark, "\"\\u0000sxm%zu\"", r->nmetas);
                sx_buf_puts(r->copy, mark);
                r->copied = r->span[k][1];
                snprintf(mark, sizeof mark, "%s[%zu", r->nmetas++ ? ", " : "", r->meta_n);
                sx_buf_puts(r->metas, mark);
                for (size_t m = 0; m < r->nitems; m++) {
                    snprintf(mark, sizeof mark, ", %zu, ", r->items[m].i);
                    sx_buf_puts(r->metas, mark);
                    sx_buf_append(r->metas, at(r, r->items[m].a),
                                  (size_t)(r->items[m].b - r->items[m].a));
                }
                sx_buf_putc(r->metas, ']');
                continue;
            }
            if (!r->direct && row.count > 0)
                sx_buf_append(r->vals, r->vec[c].v, row.count * sizeof *r->vec[c].v);
            const int64_t upto = r->direct ? (int64_t)r->span_upto[k]
                                           : (int64_t)(r->vals->len / sizeof(int64_t));
            sx_buf_append(r->offs, &upto, sizeof upto);
            copy_to(r, r->span[k][0]);
            slot(r, i, c);
            snprintf(mark, sizeof mark, "\"\\u0000sx%zu\"", r->ncopied_cols++);
            sx_buf_puts(r->copy, mark);
            r->copied = r->span[k][1];
        }
    }
    if (f == F_OK) {
        r->st = r->ops->element(r->ctx, i, &row, r->name.data ? r->name.data : "",
                                r->name.len, NULL, 0, off, r->err);
        sx_row_clear(&row);
        goto out;
    }
    if (r->copy != NULL)
        slot(r, i, -2);
    end = skip_value(r, off);
    if (r->st != SX_OK)
        goto out;
    r->st = r->ops->element(r->ctx, i, NULL, NULL, 0, (const char *)at(r, off),
                            (size_t)(end - off), off, r->err);
out:
    r->keep = NO_KEEP;
    return end;
}

/*
 * The elements of a regions list from 'off' (just after '[' when 'first'),
 * while they start before 'to'. '*ended': the list's ']' was read.
 */
static uint64_t read_elements(struct rd *r, uint64_t off, uint64_t to, bool first,
                              bool *ended) {
    *ended = false;
    off = skip_ws(r, off);
    if (first && peek(r, off) == ']') {
        *ended = true;
        return off + 1;
    }
    for (;;) {
        if (off >= to || r->st != SX_OK)
            return off;
        off = read_element(r, off);
        if (r->st != SX_OK)
            return off;
        off = skip_ws(r, off);
        const int c = peek(r, off);
        if (c == ']') {
            *ended = true;
            return off + 1;
        }
        if (c != ',') {
            syntax(r, off,
                   c < 0 ? "',' or ']' expected near end of file"
                         : "',' or ']' expected");
            return off;
        }
        off = skip_ws(r, off + 1);
    }
}

/* The members of the top-level object from 'off' (after '{' when 'first', else after
 * a value); regions elements before 'to'. '*next' as sx_jstream_read_part's. */
static void read_members(struct rd *r, uint64_t off, bool first, uint64_t to,
                         uint64_t *next) {
    bool ended = false;
    *next = UINT64_MAX;
    off = skip_ws(r, off);
    if (first && peek(r, off) == '}') {
        off++;
        goto tail;
    }
    if (!first)
        goto after_value;
    for (;;) {
        if (peek(r, off) != '"') {
            syntax(r, off, "string or '}' expected");
            return;
        }
        if (fast_str(r, &off, &r->str) != F_OK) {
            syntax(r, off, "invalid object key");
            return;
        }
        off = skip_ws(r, off);
        if (peek(r, off) != ':') {
            syntax(r, off, "':' expected");
            return;
        }
        off = skip_ws(r, off + 1);
        const bool regions = r->str.len == 7 && memcmp(r->str.data, "regions", 7) == 0;
        r->nlists += regions;
        if (regions && peek(r, off) == '[') {
            r->index = 0;
            if ((r->st = r->ops->regions(r->ctx, r->err)) != SX_OK)
                return;
            off = read_elements(r, off + 1, to, true, &ended);
            if (r->st != SX_OK)
                return;
            if (!ended) {
                *next = off;
                return;
            }
        } else {
            char key[64];
            struct sx_buf big = {0};
            const char *k = r->str.data;
            const size_t klen = r->str.len;
            if (klen < sizeof key) {
                memcpy(key, r->str.data, klen);
                k = key;
            } else {
                sx_buf_append(&big, r->str.data, klen);
                k = big.data;
                if (big.failed) {
                    sx_buf_free(&big);
                    fail(r, SX_ERR_NOMEM, "out of memory reading");
                    return;
                }
            }
            r->keep = off;
            const uint64_t end = skip_value(r, off);
            if (r->st == SX_OK)
                r->st = r->ops->value(r->ctx, k, klen, (const char *)at(r, off),
                                      (size_t)(end - off), off, r->err);
            r->keep = NO_KEEP;
            sx_buf_free(&big);
            if (r->st != SX_OK)
                return;
            off = end;
        }
    after_value:
        off = skip_ws(r, off);
        const int c = peek(r, off);
        if (c == '}') {
            off++;
            break;
        }
        if (c != ',') {
            syntax(r, off,
                   c < 0 ? "'}' expected near end of file" : "',' or '}' expected");
            return;
        }
        off = skip_ws(r, off + 1);
    }
tail:
    off = skip_ws(r, off);
    if (peek(r, off) >= 0) {
        syntax(r, off, "end of file expected");
        return;
    }
    if (r->st == SX_OK)
        r->st = r->ops->end(r->ctx, r->err);
}

static void read_doc(struct rd *r, uint64_t to, uint64_t *next) {
    const uint64_t off = skip_ws(r, 0);
    const int c = peek(r, off);
    *next = UINT64_MAX;
    if (c == '{') {
        read_members(r, off + 1, true, to, next);
        return;
    }
    if (c < 0) {
        syntax(r, off, "'[' or '{' expected near end of file");
        return;
    }
    /* not an object: the general parser says what it is, when it is not too big (from
     * 'off': the whitespace before it may have left the window already) */
    r->keep = off;
    while (!r->eof && r->st == SX_OK && r->end <= NOT_OBJECT_MAX)
        rd_fill(r, off);
    if (r->eof)
        rd_ended(r);
    if (r->st == SX_OK && r->end > NOT_OBJECT_MAX)
        r->st = sx_error_set(r->err, SX_ERR_FORMAT, r->path,
                             "%s is not a scope-profiler JSON profile (written by "
                             "`scope-profiler export json` or `-o <name>.json`).",
                             r->path);
    if (r->st == SX_OK)
        r->st = r->ops->value(r->ctx, NULL, 0, (const char *)at(r, off),
                              (size_t)(stop(r) - off), off, r->err);
    r->keep = NO_KEEP;
}

static enum sx_status rd_open(struct rd *r, const char *path,
                              const struct sx_jstream_ops *ops, void *ctx,
                              struct sx_error *err) {
    enum sx_status st = SX_OK;
    const char *fast = getenv("SCOPE_EXPORT_FAST_JSON");

    memset(r, 0, sizeof *r);
    r->path = path;
    r->err = err;
    r->ops = ops;
    r->ctx = ctx;
    r->keep = NO_KEEP;
    for (int c = 0; c < SX_NCOLS; c++)
        r->vec[c].pages = true;
    r->fast = !(fast != NULL && strcmp(fast, "0") == 0);
    r->c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    SX_CHECK(r->c_locale != (locale_t)0, SX_ERR_NOMEM, err, path,
             "out of memory reading %s", path);
    st = sx_gz_in_open(path, &r->in, err);
    if (st != SX_OK)
        goto out;
    r->plain = !sx_gz_in_is_gz(r->in);
    r->cap = WIN_MIN;
    r->buf = sx_malloc(r->cap + 1);
    SX_CHECK(r->buf != NULL, SX_ERR_NOMEM, err, path, "out of memory reading %s", path);
    r->buf[0] = '\0';
out:
    return st;
}

static void rd_close(struct rd *r) {
    if (r->st == SX_OK)
        copy_to(r, stop(r));
    sx_gz_in_close(r->in);
    free(r->buf);
    sx_buf_free(&r->name);
    sx_buf_free(&r->str);
    sx_buf_free(&r->keys);
    for (int c = 0; c < SX_NCOLS; c++)
        sx_big_free(&r->vec[c].mem);
    free(r->all.v);
    free(r->items);
    if (r->c_locale != (locale_t)0)
        freelocale(r->c_locale);
}

enum sx_status sx_jstream_read(const char *path, const struct sx_jstream_ops *ops,
                               void *ctx, struct sx_error *err) {
    uint64_t next;
    size_t count;
    return sx_jstream_read_part(path, 0, UINT64_MAX, 0, ops, ctx, &next, &count, err);
}

enum sx_status sx_jstream_read_part(const char *path, uint64_t from, uint64_t to,
                                    size_t first_index, const struct sx_jstream_ops *ops,
                                    void *ctx, uint64_t *next, size_t *count,
                                    struct sx_error *err) {
    struct rd r;
    bool ended = false;

    *next = UINT64_MAX;
    *count = 0;
    r.st = rd_open(&r, path, ops, ctx, err);
    if (r.st != SX_OK)
        goto out;
    r.index = first_index;
    if (from == 0) {
        read_doc(&r, to, next);
    } else {
        r.st = sx_gz_in_seek(r.in, from, err);
        if (r.st != SX_OK)
            goto out;
        r.base = from;
        const uint64_t off = read_elements(&r, from, to, false, &ended);
        if (r.st == SX_OK && ended)
            read_members(&r, off, false, UINT64_MAX, next);
        else
            *next = off;
    }
    *count = r.index - first_index;
out:
    rd_close(&r);
    return r.st;
}

enum sx_status sx_jstream_copy(const char *path, const struct sx_jstream_ops *ops,
                               void *ctx, struct sx_buf *copy, struct sx_buf *values,
                               struct sx_buf *ends, struct sx_buf *metas,
                               struct sx_buf *slots, struct sx_error *err) {
    struct rd r;
    const int64_t zero = 0;

    sx_buf_append(ends, &zero, sizeof zero);
    r.st = rd_open(&r, path, ops, ctx, err);
    if (r.st == SX_OK) {
        uint64_t next;
        r.copy = copy;
        r.vals = values;
        r.offs = ends;
        r.metas = metas;
        r.slots = slots;
        r.direct = ops->no_columns && values->len == 0;
        sx_buf_putc(metas, '[');
        read_doc(&r, UINT64_MAX, &next);
        if (r.direct && r.st == SX_OK) {
            /* the values read straight become 'values' (its NUL after them) */
            if (r.all.n == r.all.cap && !i64v_grow(&r.all))
                fail(&r, SX_ERR_NOMEM, "out of memory reading");
            if (r.st == SX_OK && r.all.v != NULL) {
                sx_buf_free(values);
                values->data = (char *)r.all.v;
                values->len = r.all.n * sizeof *r.all.v;
                values->cap = r.all.cap * sizeof *r.all.v;
                values->data[values->len] = '\0';
                r.all = (struct i64v){0};
            }
        }
    }
    if (r.st == SX_OK && r.nlists != 1)
        sx_buf_reset(slots); /* json.loads keeps the last list: the slots do not hold */
    rd_close(&r);
    sx_buf_putc(metas, ']');
    if (r.st == SX_OK && (copy->failed || values->failed || ends->failed ||
                          metas->failed || slots->failed))
        r.st = sx_error_set(err, SX_ERR_NOMEM, path, "out of memory reading %s", path);
    return r.st;
}

enum sx_status sx_jstream_probe(const char *path, uint64_t *size, bool *gz,
                                struct sx_error *err) {
    struct sx_gz_in *in = NULL;
    enum sx_status st = sx_gz_in_open(path, &in, err);
    if (st == SX_OK) {
        *size = sx_gz_in_size(in);
        *gz = sx_gz_in_is_gz(in);
    }
    sx_gz_in_close(in);
    return st;
}

enum sx_status sx_jstream_guess(const char *path, uint64_t off, uint64_t *found,
                                struct sx_error *err) {
    static const char pat[] = "}, {\"name\": ";
    const size_t np = sizeof pat - 1;
    struct sx_gz_in *in = NULL;
    char *buf = NULL;
    const size_t cap = (size_t)1 << 20;
    size_t have = 0;
    enum sx_status st = SX_OK;

    *found = UINT64_MAX;
    st = sx_gz_in_open(path, &in, err);
    if (st != SX_OK)
        goto out;
    st = sx_gz_in_seek(in, off, err);
    if (st != SX_OK)
        goto out;
    buf = sx_malloc(cap + 1);
    SX_CHECK(buf != NULL, SX_ERR_NOMEM, err, path, "out of memory reading %s", path);
    for (;;) {
        size_t n = 0;
        st = sx_gz_in_read(in, buf + have, cap - have, &n, err);
        if (st != SX_OK || n == 0)
            break;
        have += n;
        buf[have] = '\0';
        const char *p = memmem(buf, have, pat, np);
        if (p != NULL) {
            *found = off + (uint64_t)(p - buf) + 3;
            break;
        }
        /* keep a pattern's length but one: it may go on in the next read */
        const size_t k = have < np - 1 ? have : np - 1;
        memmove(buf, buf + have - k, k);
        off += have - k;
        have = k;
    }
out:
    free(buf);
    sx_gz_in_close(in);
    return st;
}
