/*
 * test_serial.c - sx_export and sx_run_label with MPI_COMM_NULL run on one
 * process without MPI: MPI is never initialized here, and the documents are
 * scope-profiler's text all the same.
 */
#include "cli_support.h"
#include "scope_export.h"
#include "sx_test.h"
#include "sx_test_doc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
            if (st == SX_OK && !sx_test_same_text(out, want, "scope-export@")) {
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

    /* A stop ends only the exports under way (test_two_exports): one asked for while
     * none runs leaves the next export alone, as a process of its own would be. */
    snprintf(in, sizeof in, "%s/golden/basic_nested/run.h5", SX_SHARED_DIR);
    snprintf(out, sizeof out, "%s/stopped.json", dir);
    sx_request_stop();
    CHECK(sx_export(MPI_COMM_NULL, in, out, NULL, &e) == SX_OK);
    CHECK(access(out, F_OK) == 0);
    unlink(out);

    /* Every entry point clears the error it is given; outside MPI its rank is -1. */
    memset(&e, 0x5a, sizeof e);
    CHECK(sx_run_label(MPI_COMM_NULL, in, &label, &e) == SX_OK);
    CHECK(e.code == SX_OK && e.text[0] == '\0');
    free(label);
    memset(&e, 0x5a, sizeof e);
    CHECK(sx_validate("/nonexistent/run.json", &e) != SX_OK);
    CHECK(e.rank == -1 && strstr(e.text, "/nonexistent/run.json") != NULL);
    memset(&e, 0x5a, sizeof e);
    CHECK(sx_import("/nonexistent/run.json", out, &e) != SX_OK);
    CHECK(e.rank == -1 && e.source[0] != '\0' && access(out, F_OK) != 0);

    int init = 1;
    MPI_Initialized(&init);
    CHECK(init == 0); /* nothing above started MPI */
    rmdir(dir);
    TEST_DONE();
}
