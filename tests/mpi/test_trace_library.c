/* test_trace_library.c - sx_export of the trace formats: collective, agreed errors */
/*
 * Run at -n 1..4. The speedscope document of golden runs equals
 * scope-profiler's on MPI_COMM_WORLD; the Chrome trace is the same bytes on
 * MPI_COMM_WORLD as on one process without MPI (MPI_COMM_NULL); the
 * reference's errors come back on every rank with the same status and text,
 * and leave no file.
 */
#include "sx_test.h"
#include "sx_test_doc.h"

#include <scope_export.h>

#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static int wrank, wsize;
static char tmpdir[1024];

#define CHECKF(cond, ...)                                                                \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: [rank %d] CHECK failed: %s: ", __FILE__, __LINE__,   \
                    wrank, #cond);                                                       \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
            sx_test_failures++;                                                          \
        }                                                                                \
    } while (0)

static bool exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Whether two files hold the same bytes. */
static bool same_bytes(const char *a, const char *b) {
    FILE *f = fopen(a, "rb"), *g = fopen(b, "rb");
    bool same = f != NULL && g != NULL;
    int x = 0, y = 0;
    while (same && (x = getc(f)) == (y = getc(g)) && x != EOF)
        ;
    same = same && x == y;
    if (f)
        fclose(f);
    if (g)
        fclose(g);
    return same;
}

/* The status agreed by every rank: all equal, or -1. */
static int agreed(enum sx_status st) {
    int v = (int)st, lo = 0, hi = 0;
    MPI_Allreduce(&v, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&v, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi ? lo : -1;
}

static void golden_case(const char *name, int64_t nranks) {
    char in[1200], want[1200], out[1300], out0[1300];
    int64_t ranks[64];
    for (int64_t r = 0; r < nranks; r++)
        ranks[r] = r;
    snprintf(in, sizeof in, "%s/golden/%s/run.h5", SX_SHARED_DIR, name);
    snprintf(want, sizeof want, "%s/golden/%s/run.speedscope.json", SX_SHARED_DIR, name);
    struct sx_options o;
    struct sx_error e;
    sx_options_init(&o);
    CHECK(o.format == SX_FORMAT_JSON);
    o.format = SX_FORMAT_SPEEDSCOPE;
    o.ranks = ranks;
    o.n_ranks = (size_t)nranks;
    o.block_bytes = 1024;
    snprintf(out, sizeof out, "%s/%s.speedscope.json.gz", tmpdir, name);
    enum sx_status st = sx_export(MPI_COMM_WORLD, in, out, &o, &e);
    CHECKF(agreed(st) == SX_OK, "%s speedscope: %s", name, e.text);
    if (wrank == 0)
        CHECKF(sx_test_same_text(out, want, "scope-export@"), "%s speedscope text", name);

    /* Chrome trace, the reference's default ranks: the same bytes without MPI */
    sx_options_init(&o);
    o.format = SX_FORMAT_CHROME_TRACE;
    snprintf(out, sizeof out, "%s/%s.trace.json", tmpdir, name);
    st = sx_export(MPI_COMM_WORLD, in, out, &o, &e);
    CHECKF(agreed(st) == SX_OK, "%s chrome: %s", name, e.text);
    if (wrank == 0) {
        snprintf(out0, sizeof out0, "%s/%s.alone.trace.json", tmpdir, name);
        st = sx_export(MPI_COMM_NULL, in, out0, &o, &e);
        CHECKF(st == SX_OK, "%s chrome alone: %s", name, e.text);
        CHECKF(same_bytes(out, out0), "%s chrome differs from the one-process text",
               name);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void error_case(enum sx_format f, const int64_t *ranks, size_t n,
                       const char *include, const char *msg) {
    char in[1200], out[1300];
    const char *inc[1] = {include};
    snprintf(in, sizeof in, "%s/golden/mpi4_parallel/run.h5", SX_SHARED_DIR);
    snprintf(out, sizeof out, "%s/error.json", tmpdir);
    struct sx_options o;
    struct sx_error e;
    sx_options_init(&o);
    o.format = f;
    o.ranks = ranks;
    o.n_ranks = n;
    if (include != NULL) {
        o.include = inc;
        o.n_include = 1;
    }
    enum sx_status st = sx_export(MPI_COMM_WORLD, in, out, &o, &e);
    CHECKF(agreed(st) == SX_ERR_VALUE, "expected '%s', got status %d: %s", msg, (int)st,
           e.text);
    CHECKF(strstr(e.text, msg) != NULL, "expected '%s', got '%s'", msg, e.text);
    /* the same text on every rank */
    char first[SX_ERROR_TEXT_LENGTH];
    memcpy(first, e.text, sizeof first);
    MPI_Bcast(first, (int)sizeof first, MPI_CHAR, 0, MPI_COMM_WORLD);
    CHECKF(strcmp(first, e.text) == 0, "rank's error '%s' is not rank 0's '%s'", e.text,
           first);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECKF(!exists(out), "a failed export left %s", out);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wrank == 0) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/sx_trace_lib_XXXXXX");
        ASSERT(mkdtemp(tmpdir) != NULL);
    }
    MPI_Bcast(tmpdir, (int)sizeof tmpdir, MPI_CHAR, 0, MPI_COMM_WORLD);

    golden_case("basic_nested", 1);
    golden_case("threads", 1);
    golden_case("mpi4_parallel", 4);
    golden_case("gen_schema3_allcols", 4);

    const int64_t bad[2] = {0, 7};
    error_case(SX_FORMAT_CHROME_TRACE, bad, 2, NULL, "Invalid rank requested: 7");
    error_case(SX_FORMAT_SPEEDSCOPE, bad, 2, NULL, "Invalid rank requested: 7");
    error_case(SX_FORMAT_SPEEDSCOPE, NULL, 0, "nothing at all$",
               "No regions matched the selected filters.");

    if (wrank == 0) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
    int failures = sx_test_failures, all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
