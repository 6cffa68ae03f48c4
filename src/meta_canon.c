/* meta_canon.c - event metadata already in json.dumps form, copied after one scan */
#include "meta_canon.h"

#include <string.h>

/*
 * Every scope-profiler writer stores event metadata with Python's json.dumps
 * and default settings, which is the text sx_json_canon_meta writes back:
 * parsing it with jansson only to print the same bytes again cost a quarter
 * of an export. One pass over the text proves it canonical instead. Anything
 * the pass is not sure of is left to jansson, so the limits below can be
 * strict without changing a byte of any output.
 */
#define MAX_DEPTH 64  /* nesting levels, the top-level list included */
#define MAX_KEYS 16   /* keys of one object, compared pairwise for repeats */
#define MAX_DIGITS 64 /* digits of one integer */

static bool fast_on = true;

void sx_meta_canon_fast_enable(bool on) { fast_on = on; }

/* The text still to read: [p, end). */
struct scan {
    const char *p;
    const char *end;
};

struct span {
    const char *p;
    size_t n;
};

static bool scan_value(struct scan *s, int depth);

static bool at(const struct scan *s, char c) { return s->p < s->end && *s->p == c; }

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The separator 'c' followed by one space, as json.dumps writes ", " and ": ". */
static bool scan_sep(struct scan *s, char c) {
    if (s->end - s->p < 2 || s->p[0] != c || s->p[1] != ' ')
        return false;
    s->p += 2;
    return true;
}

/*
 * A string at s->p (a '"'). ensure_ascii leaves only printable ASCII bare;
 * \uXXXX is canonical for some characters only and \/ never, so those go to
 * jansson, as do all bytes it would rewrite.
 */
static bool scan_string(struct scan *s) {
    const char *p = s->p + 1;
    while (p < s->end) {
        const unsigned char c = (unsigned char)*p;
        if (c == '"') {
            s->p = p + 1;
            return true;
        }
        if (c == '\\') {
            if (s->end - p < 2)
                return false;
            switch (p[1]) {
            case '"':
            case '\\':
            case 'n':
            case 'r':
            case 't':
            case 'b':
            case 'f':
                p += 2;
                continue;
            default:
                return false;
            }
        }
        if (c < 0x20 || c >= 0x7F)
            return false;
        p++;
    }
    return false;
}

/*
 * An integer as Python prints an int: no leading zero, no "-0" (which is 0).
 * What follows must be a separator or a bracket (the caller checks), so a
 * fraction or an exponent is refused there. Integers beyond int64 are
 * printed from their digits by the slow path as well.
 */
static bool scan_int(struct scan *s) {
    const char *p = s->p;
    if (*p == '-') {
        p++;
        if (p < s->end && *p == '0')
            return false;
    }
    const char *digits = p;
    if (p >= s->end || !is_digit(*p))
        return false;
    if (*p == '0')
        p++;
    else
        while (p < s->end && is_digit(*p))
            p++;
    if (p - digits > MAX_DIGITS)
        return false;
    s->p = p;
    return true;
}

static bool scan_word(struct scan *s, const char *word, size_t n) {
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return false;
    s->p += n;
    return true;
}

/* A list at s->p (a '['), itself at nesting level 'depth'. */
static bool scan_list(struct scan *s, int depth) {
    s->p++;
    if (at(s, ']')) {
        s->p++;
        return true;
    }
    for (;;) {
        if (!scan_value(s, depth))
            return false;
        if (at(s, ']')) {
            s->p++;
            return true;
        }
        if (!scan_sep(s, ','))
            return false;
    }
}

/*
 * An object at s->p (a '{'). Python keeps the last of repeated keys where
 * the first stood; jansson does not: refused. Keys are compared as written,
 * which is as decoded, since each character has one accepted spelling.
 */
static bool scan_object(struct scan *s, int depth) {
    struct span keys[MAX_KEYS];
    size_t nkeys = 0;

    s->p++;
    if (at(s, '}')) {
        s->p++;
        return true;
    }
    for (;;) {
        const char *key = s->p;
        if (!at(s, '"') || !scan_string(s) || nkeys == MAX_KEYS)
            return false;
        const size_t len = (size_t)(s->p - key);
        for (size_t i = 0; i < nkeys; i++)
            if (keys[i].n == len && memcmp(keys[i].p, key, len) == 0)
                return false;
        keys[nkeys].p = key;
        keys[nkeys].n = len;
        nkeys++;
        if (!scan_sep(s, ':') || !scan_value(s, depth))
            return false;
        if (at(s, '}')) {
            s->p++;
            return true;
        }
        if (!scan_sep(s, ','))
            return false;
    }
}

/* A value inside a container at nesting level 'depth'. */
static bool scan_value(struct scan *s, int depth) {
    if (s->p >= s->end)
        return false;
    switch (*s->p) {
    case '{':
        return depth < MAX_DEPTH && scan_object(s, depth + 1);
    case '[':
        return depth < MAX_DEPTH && scan_list(s, depth + 1);
    case '"':
        return scan_string(s);
    case 't':
        return scan_word(s, "true", 4);
    case 'f':
        return scan_word(s, "false", 5);
    case 'n':
        return scan_word(s, "null", 4);
    default:
        return scan_int(s);
    }
}

bool sx_meta_canon_fast(const char *text, size_t n, struct sx_buf *out, bool *any,
                        uint64_t *count) {
    struct scan s = {text, text + n};
    bool nonempty = false;
    uint64_t items = 0;

    if (!fast_on || text == NULL || n < 2 || text[0] != '[')
        return false;
    s.p++;
    if (!at(&s, ']')) {
        for (;;) {
            const char *item = s.p;
            if (!at(&s, '{') || !scan_object(&s, 2))
                return false;
            nonempty = nonempty || s.p - item > 2; /* not "{}" */
            items++;
            if (at(&s, ']'))
                break;
            if (!scan_sep(&s, ','))
                return false;
        }
    }
    s.p++; /* the closing ']' */
    if (s.p != s.end)
        return false;
    sx_buf_append(out, text, n);
    if (any != NULL)
        *any = nonempty;
    if (count != NULL)
        *count = items;
    return true;
}
