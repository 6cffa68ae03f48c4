/*
 * test_serial.c - sx_export and sx_run_label with MPI_COMM_NULL run on one
 * process without MPI: MPI is never initialized here, and the documents are
 * scope-profiler's text all the same.
 */
#include "scope_export.h"
#include "sx_test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char *slurp(const char *path, size_t *n) {
    gzFile f = gzopen(path, "rb"); /* reads plain files as they are */
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *p = malloc(cap);
    int k;
    while (p != NULL && (k = gzread(f, p + len, (unsigned)(cap - len))) > 0) {
        len += (size_t)k;
        if (len == cap) {
            char *q = realloc(p, cap *= 2);
            if (q == NULL) {
                free(p);
                p = NULL;
            }
            p = q;
        }
    }
    gzclose(f);
    *n = len;
    return p;
}

/* Where the "exporter" value starts (*v) and ends (*e, its closing quote). */
static int find_exporter(const char *s, size_t n, size_t *v, size_t *e) {
    static const char key[] = "\"exporter\": \"";
    size_t k = sizeof key - 1, i = 0;
    while (i + k <= n && memcmp(s + i, key, k) != 0)
        i++;
    if (i + k > n)
        return 0;
    *v = i + k;
    const char *q = memchr(s + *v, '"', n - *v);
    if (q == NULL)
        return 0;
    *e = (size_t)(q - s);
    return 1;
}

/* Byte for byte the same text but for the exporter value, which names us. */
static int same_document(const char *got_path, const char *want_path) {
    size_t ng = 0, nw = 0, gv, ge, wv, we;
    char *g = slurp(got_path, &ng), *w = slurp(want_path, &nw);
    int same = g != NULL && w != NULL && find_exporter(g, ng, &gv, &ge) &&
               find_exporter(w, nw, &wv, &we) && gv == wv && memcmp(g, w, gv) == 0 &&
               ng - ge == nw - we && memcmp(g + ge, w + we, ng - ge) == 0 &&
               ge - gv > 13 && memcmp(g + gv, "scope-export@", 13) == 0;
    free(g);
    free(w);
    return same;
}

int main(void) {
    char dir[] = "/tmp/sx-serial-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    static const char *const cases[] = {"basic_nested", "mpi4_parallel",
                                        "gen_schema3_allcols", "gen_likwid_lineprof",
                                        "aggregation"};
    char in[1024], want[1024], out[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(in, sizeof in, "%s/golden/%s/run.h5", SX_SHARED_DIR, cases[i]);
        snprintf(want, sizeof want, "%s/golden/%s/run.json", SX_SHARED_DIR, cases[i]);
        if (access(in, R_OK) != 0) {
            fprintf(stderr, "missing golden run %s\n", in);
            sx_test_failures++;
            continue;
        }
        for (int gz = 0; gz < 2; gz++) {
            struct sx_options o;
            struct sx_error e;
            sx_options_init(&o);
            o.block_bytes = gz ? 4096 : 0; /* many blocks, all on this process */
            snprintf(out, sizeof out, "%s/%s.json%s", dir, cases[i], gz ? ".gz" : "");
            enum sx_status st = sx_export(MPI_COMM_NULL, in, out, &o, &e);
            if (st != SX_OK)
                fprintf(stderr, "%s: %s\n", cases[i], e.text);
            CHECK(st == SX_OK);
            if (st == SX_OK && !same_document(out, want)) {
                fprintf(stderr, "%s (%s) differs from scope-profiler's text\n", cases[i],
                        gz ? "gz" : "json");
                sx_test_failures++;
            }
            unlink(out);
        }
    }

    /* the label as export_json takes it, from metadata */
    char *label = NULL;
    struct sx_error e;
    snprintf(in, sizeof in, "%s/golden/basic_nested/run.h5", SX_SHARED_DIR);
    CHECK(sx_run_label(MPI_COMM_NULL, in, &label, &e) == SX_OK);
    CHECK(label != NULL && strcmp(label, "basic nested") == 0);
    free(label);

    /* a failure names the file and rank 0, and leaves no output */
    snprintf(out, sizeof out, "%s/none.json", dir);
    CHECK(sx_export(MPI_COMM_NULL, "/nonexistent/run.h5", out, NULL, &e) != SX_OK);
    CHECK(strstr(e.text, "/nonexistent/run.h5") != NULL);
    CHECK(e.rank == 0);
    CHECK(access(out, F_OK) != 0);

    int init = 1;
    MPI_Initialized(&init);
    CHECK(init == 0); /* nothing above started MPI */
    rmdir(dir);
    TEST_DONE();
}
