/* golden_cmp.c - compare an export with scope-profiler's JSON, byte for byte but the
 * exporter */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "sx_test_doc.h"

/* Read a whole file, gunzipping it when it is gzip. */
static char *slurp(const char *path, size_t *n) {
    char *buf = sx_test_slurp(path, n, true);
    if (buf == NULL)
        fprintf(stderr, "golden_cmp: %s: cannot be read\n", path);
    return buf;
}

/*
 * A .gz must be ONE gzip member: some readers (libdeflate, a single zlib
 * inflate call) stop after the first. Returns 0 when the whole file is one.
 */
static int single_member(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    unsigned char magic[2] = {0, 0};
    if (fread(magic, 1, 2, f) != 2 || magic[0] != 0x1f || magic[1] != 0x8b) {
        fclose(f);
        return 0; /* not gzip */
    }
    rewind(f);
    z_stream z;
    memset(&z, 0, sizeof z);
    inflateInit2(&z, 16 + 15);
    static unsigned char in[1 << 16], out[1 << 16];
    int rc = Z_OK;
    size_t n = 0;
    while (rc != Z_STREAM_END && (n = fread(in, 1, sizeof in, f)) > 0) {
        z.next_in = in;
        z.avail_in = (uInt)n;
        while (z.avail_in > 0 && rc != Z_STREAM_END) {
            z.next_out = out;
            z.avail_out = sizeof out;
            rc = inflate(&z, Z_NO_FLUSH);
            if (rc != Z_OK && rc != Z_STREAM_END) {
                fprintf(stderr, "golden_cmp: %s: inflate error %d\n", path, rc);
                fclose(f);
                return -1;
            }
        }
    }
    size_t rest = z.avail_in;
    while (fread(in, 1, sizeof in, f) > 0)
        rest += 1;
    inflateEnd(&z);
    fclose(f);
    if (rc != Z_STREAM_END || rest != 0) {
        fprintf(stderr, "golden_cmp: %s is not one complete gzip member\n", path);
        return -1;
    }
    return 0;
}

/*
 * Replace the value of the first "exporter" key by a fixed token, in the
 * default separators' text and in the compact one (the Chrome trace).
 */
static size_t normalise(char *s, size_t n) {
    const char *key = "\"exporter\": \"";
    char *p = memmem(s, n, key, strlen(key));
    if (p == NULL) {
        key = "\"exporter\":\"";
        p = memmem(s, n, key, strlen(key));
    }
    if (p == NULL)
        return n;
    char *v = p + strlen(key);
    char *q = memchr(v, '"', n - (size_t)(v - s));
    if (q == NULL)
        return n;
    memmove(v, q, n - (size_t)(q - s));
    return n - (size_t)(q - v);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: golden_cmp OURS EXPECTED\n");
        return 2;
    }
    if (single_member(argv[1]) != 0)
        return 1;
    size_t na = 0, nb = 0;
    char *a = slurp(argv[1], &na), *b = slurp(argv[2], &nb);
    if (a == NULL || b == NULL) {
        fprintf(stderr, "golden_cmp: cannot read %s\n", a == NULL ? argv[1] : argv[2]);
        return 1;
    }
    na = normalise(a, na);
    nb = normalise(b, nb);
    size_t i = 0;
    while (i < na && i < nb && a[i] == b[i])
        i++;
    if (i == na && i == nb) {
        free(a);
        free(b);
        return 0;
    }
    size_t from = i > 60 ? i - 60 : 0;
    fprintf(stderr, "golden_cmp: %s differs from %s at byte %zu (sizes %zu, %zu)\n",
            argv[1], argv[2], i, na, nb);
    fprintf(stderr, "  ours:     ...%.*s\n", (int)((na < i + 60 ? na : i + 60) - from),
            a + from);
    fprintf(stderr, "  expected: ...%.*s\n", (int)((nb < i + 60 ? nb : i + 60) - from),
            b + from);
    free(a);
    free(b);
    return 1;
}
