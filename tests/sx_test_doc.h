/* sx_test_doc.h - documents in tests: read one (gzip or not), compare but for "exporter"
 */
#ifndef SX_TEST_DOC_H
#define SX_TEST_DOC_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/*
 * The tests' one way to read a whole file: its '*len' bytes, NUL-terminated,
 * gunzipped when 'gunzip' and it is gzip (gzread passes plain text through).
 * NULL when it cannot be read.
 */
static inline char *sx_test_slurp(const char *path, size_t *len, bool gunzip) {
    gzFile z = gunzip ? gzopen(path, "rb") : NULL;
    FILE *f = gunzip ? NULL : fopen(path, "rb");
    if (z == NULL && f == NULL)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    long r = 0;
    while (buf != NULL) {
        r = gunzip ? gzread(z, buf + n, (unsigned)(cap - n - 1))
                   : (long)fread(buf + n, 1, cap - n - 1, f);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n + 1 == cap) {
            char *more = realloc(buf, cap *= 2);
            if (more == NULL)
                free(buf);
            buf = more;
        }
    }
    if (buf != NULL && (r < 0 || (f != NULL && ferror(f)))) {
        free(buf);
        buf = NULL;
    }
    if (buf != NULL)
        buf[n] = '\0';
    if (z != NULL)
        gzclose(z);
    if (f != NULL)
        fclose(f);
    *len = n;
    return buf;
}

/* Where the first "exporter" value starts; n when there is none. */
static inline size_t sx_test_exporter_at(const char *s, size_t n) {
    static const char key[] = "\"exporter\": \"";
    for (size_t i = 0; i + sizeof key - 1 <= n; i++)
        if (memcmp(s + i, key, sizeof key - 1) == 0)
            return i + sizeof key - 1;
    return n;
}

/* Cut the value of the first "exporter" key to nothing: it names the program. */
static inline size_t sx_test_drop_exporter(char *s, size_t n) {
    size_t v = sx_test_exporter_at(s, n), q = v;
    while (q < n && s[q] != '"')
        q++;
    memmove(s + v, s + q, n - q);
    return n - (q - v);
}

/*
 * Whether 'out' holds the text of 'want' (both may be gzip), but for the
 * exporter value; when 'exporter' is not NULL, out's value must start with it.
 */
static inline bool sx_test_same_text(const char *out, const char *want,
                                     const char *exporter) {
    size_t na = 0, nb = 0;
    char *a = sx_test_slurp(out, &na, true), *b = sx_test_slurp(want, &nb, true);
    bool same = false;
    if (a == NULL || b == NULL) {
        fprintf(stderr, "cannot read %s\n", a == NULL ? out : want);
    } else {
        size_t v = sx_test_exporter_at(a, na);
        if (exporter != NULL && (na - v < strlen(exporter) ||
                                 memcmp(a + v, exporter, strlen(exporter)) != 0)) {
            fprintf(stderr, "%s: the exporter is not %s...\n", out, exporter);
        } else {
            na = sx_test_drop_exporter(a, na);
            nb = sx_test_drop_exporter(b, nb);
            size_t i = 0;
            while (i < na && i < nb && a[i] == b[i])
                i++;
            same = i == na && i == nb;
            if (!same)
                fprintf(stderr, "%s differs from %s at byte %zu (sizes %zu, %zu)\n", out,
                        want, i, na, nb);
        }
    }
    free(a);
    free(b);
    return same;
}

#endif
