/*
 * test_args_f.c - sx_export_args and sx_export_args_f, what the Python and Fortran
 * modules call, at -n 1..4: options by name over MPI_COMM_WORLD, over a Fortran handle
 * of it and of a split communicator, give scope-profiler's text; a failure is the same
 * on every rank and writes nothing
 */
#include "sx_test.h"
#include "sx_test_doc.h"

#include <scope_export.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int wrank;

/* NOTE: collective. Whether every rank passed 'ok'. */
static bool all(bool ok) {
    int mine = ok, every = 0;
    MPI_Allreduce(&mine, &every, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return every;
}

static struct sx_args *args(const char *k1, const char *v1, const char *k2,
                            const char *v2) {
    struct sx_args *a = sx_args_new();
    ASSERT(a != NULL);
    ASSERT(sx_args_set(a, k1, v1, NULL) == SX_OK);
    if (k2 != NULL)
        ASSERT(sx_args_set(a, k2, v2, NULL) == SX_OK);
    return a;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    char dir[1024] = "/tmp/sx-args-f-XXXXXX";
    if (wrank == 0)
        ASSERT(mkdtemp(dir) != NULL);
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);

    char in[1200], want[1200], out[1200];
    struct sx_error e;
    snprintf(in, sizeof in, "%s/golden/basic_nested/run.h5", SX_SHARED_DIR);

    /* MPI_COMM_WORLD, many small blocks so that every rank formats some */
    struct sx_args *a = args("block-size", "1024", "indent", "2");
    snprintf(out, sizeof out, "%s/world.json.gz", dir);
    snprintf(want, sizeof want, "%s/golden/basic_nested/run.indent2.json", SX_SHARED_DIR);
    enum sx_status st = sx_export_args(MPI_COMM_WORLD, in, out, a, &e);
    CHECK(all(st == SX_OK));
    if (wrank == 0)
        CHECK(sx_test_same_text(out, want, NULL));
    sx_args_free(a);

    /* the Fortran handle of COMM_WORLD */
    MPI_Fint fworld = MPI_Comm_c2f(MPI_COMM_WORLD);
    a = args("summary", "true", "block-size", "1024");
    snprintf(out, sizeof out, "%s/fworld.json", dir);
    snprintf(want, sizeof want, "%s/golden/basic_nested/run.summary.json", SX_SHARED_DIR);
    st = sx_export_args_f(&fworld, in, out, a, &e);
    CHECK(all(st == SX_OK));
    if (wrank == 0)
        CHECK(sx_test_same_text(out, want, NULL));
    sx_args_free(a);

    /* each half of a split communicator, by its Fortran handle; rank 0 of each writes */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &half);
    int hrank;
    MPI_Comm_rank(half, &hrank);
    MPI_Fint fhalf = MPI_Comm_c2f(half);
    snprintf(in, sizeof in, "%s/golden/mpi4_parallel/run.h5", SX_SHARED_DIR);
    snprintf(want, sizeof want, "%s/golden/mpi4_parallel/run.json", SX_SHARED_DIR);
    snprintf(out, sizeof out, "%s/half%d.json.gz", dir, wrank % 2);
    a = args("block-size", "1024", "gzip-level", "1");
    st = sx_export_args_f(&fhalf, in, out, a, &e);
    CHECK(all(st == SX_OK));
    if (hrank == 0)
        CHECK(sx_test_same_text(out, want, NULL));

    /* a failure: the same status and error on every rank, no output */
    snprintf(out, sizeof out, "%s/never.json", dir);
    st = sx_export_args_f(&fworld, "missing-run.h5", out, a, &e);
    int got[2] = {(int)st, e.rank}, lo[2], hi[2];
    MPI_Allreduce(got, lo, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(got, hi, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(st == SX_ERR_NOT_FOUND && lo[0] == hi[0] && lo[1] == hi[1]);
    CHECK(strstr(e.text, "missing-run.h5") != NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(access(out, F_OK) != 0);
    sx_args_free(a);
    MPI_Comm_free(&half);

    MPI_Barrier(MPI_COMM_WORLD);
    if (wrank == 0) {
        char cmd[1100];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
    int failures = sx_test_failures, any = 0;
    MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return any != 0;
}
