/* test_sweep.c - every allocation, read and write of an export failing on one rank */
/*
 * Run at -n 2 and -n 3. For each input and output kind (.json, .json.gz; with
 * SX_SWEEP_ONE_EXT=1 one of them), and a --summary to .json, a normal export first
 * counts, on every rank,
 * the library's allocations, HDF5 reads and output writes; then for every N up
 * to that count (every SX_SWEEP_STRIDE-th N when set) and every rank in turn,
 * the Nth call of that kind fails on that rank alone. Every run must end (an alarm turns
 * a hang into a failure naming the case), give the same status and error on every rank,
 * name the failing rank and a file, call out of memory out of memory, leave no output and
 * no temporary file, and leave no HDF5 id open. The import (JSON -> HDF5) is swept the
 * same way on one process.
 */
#include "sx_fault.h"
#include "sx_test.h"
#include "sx_test_doc.h"

#include <dirent.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static int wrank, wsize;
static char tmpdir[1024];
static char case_text[2400]; /* the run under way, for the alarm */
static long runs, agreed, absorbed;

/* Seconds one export may take before it counts as a hang. */
static int run_limit_s = 60; /* SX_SWEEP_LIMIT overrides it */

#define CHECKF(cond, ...)                                                                \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "[rank %d] CHECK failed: %s: %s: ", wrank, #cond,            \
                    case_text);                                                          \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
            sx_test_failures++;                                                          \
        }                                                                                \
    } while (0)

static void on_alarm(int sig) {
    (void)sig;
    char line[2600];
    int n = snprintf(line, sizeof line, "[rank %d] HANG: no end within %d s: %s\n", wrank,
                     run_limit_s, case_text);
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
    _exit(3);
}

static const char *const kind_names[] = {"alloc", "read", "write"};

/* No file left in the sweep's output directory. Local (rank 0). */
static void check_empty(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *de;
    CHECKF(d != NULL, "cannot list %s", dir);
    while (d != NULL && (de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            char p[2200];
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            CHECKF(false, "%s left behind", p);
            unlink(p);
        }
    if (d != NULL)
        closedir(d);
}

/* Before a call: the 'nth' call of 'kind' fails here when 'here'; the alarm is set. */
static void arm(bool here, enum sx_fault_kind kind, long nth) {
    if (here)
        sx_fault_arm(kind, nth);
    else
        sx_fault_off();
    alarm(run_limit_s);
}

/* After it: whether the fault happened; no HDF5 id may be left open. */
static bool disarm(void) {
    alarm(0);
    bool fired = sx_fault_fired();
    sx_fault_off();
    runs++;
    ssize_t ids = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
    CHECKF(ids == 0, "%zd HDF5 objects left open", ids);
    return fired;
}

/* What a rank got back from a call, as numbers that can be gathered. */
enum { O_STATUS, O_CODE, O_RANK, O_TEXT, O_SOURCE, O_FIRED, O_N };

/*
 * NOTE: collective over WORLD. One export of 'in' to 'out' with the 'nth'
 * call of 'kind' failing on rank 'frank' ('nth' 0: nothing fails). Returns
 * whether the failure happened.
 */
static bool run_one(const char *in, const char *out, const char *want,
                    const struct sx_options *o, enum sx_fault_kind kind, long nth,
                    int frank) {
    struct sx_error e;
    memset(&e, 0x5a, sizeof e); /* the library must clear it */
    arm(wrank == frank, kind, nth);
    enum sx_status st = sx_export(MPI_COMM_WORLD, in, out, o, &e);
    bool fired = disarm();
    e.text[sizeof e.text - 1] = '\0';
    e.source[sizeof e.source - 1] = '\0';
    long mine[O_N] = {st,
                      e.code,
                      e.rank,
                      (long)crc32(0, (const Bytef *)e.text, (uInt)strlen(e.text)),
                      (long)crc32(0, (const Bytef *)e.source, (uInt)strlen(e.source)),
                      fired};
    long all[O_N * 8];
    ASSERT(wsize <= 8);
    MPI_Allgather(mine, O_N, MPI_LONG, all, O_N, MPI_LONG, MPI_COMM_WORLD);
    bool any_fired = false;
    for (int p = 0; p < wsize; p++)
        any_fired = any_fired || all[p * O_N + O_FIRED];
    if (wrank != 0)
        return any_fired;
    for (int p = 1; p < wsize; p++)
        CHECKF(memcmp(all, all + p * O_N, (O_N - 1) * sizeof(long)) == 0,
               "rank %d got status %ld (error rank %ld), rank 0 got %ld (error rank %ld: "
               "%s)",
               p, all[p * O_N + O_STATUS], all[p * O_N + O_RANK], all[O_STATUS],
               all[O_RANK], e.text);
    if (!any_fired) {
        CHECKF(st == SX_OK, "no fault happened, yet: %s (%s)", sx_strerror(st), e.text);
        if (st == SX_OK)
            CHECKF(sx_test_same_text(out, want, NULL), "%s is not the text of %s", out,
                   want);
        unlink(out);
        return false;
    }
    if (st == SX_OK) {
        /* the library got over it (a fallback): then the text must still be right */
        absorbed++;
        CHECKF(sx_test_same_text(out, want, NULL), "fault absorbed, but %s is wrong",
               out);
        unlink(out);
        return true;
    }
    agreed++;
    CHECKF(e.rank == frank, "the error names rank %d: %s", e.rank, e.text);
    CHECKF(e.text[0] != '\0' && e.source[0] != '\0', "no text or no source: [%s] [%s]",
           e.text, e.source);
    if (kind == SX_FAULT_ALLOC)
        CHECKF(st == SX_ERR_NOMEM, "status %s, not out of memory: %s", sx_strerror(st),
               e.text);
    else
        CHECKF(st == SX_ERR_IO, "status %s, not an I/O error: %s", sx_strerror(st),
               e.text);
    struct stat sb;
    CHECKF(stat(out, &sb) != 0, "%s exists after a failed export", out);
    char dir[1100];
    snprintf(dir, sizeof dir, "%s", out);
    *strrchr(dir, '/') = '\0';
    check_empty(dir);
    return true;
}

/* NOTE: collective. Sweep every kind of fault over one input and output name. */
static void sweep(const char *in, const char *want, const char *out,
                  const struct sx_options *o, long stride) {
    for (int k = SX_FAULT_ALLOC; k <= SX_FAULT_WRITE; k++) {
        /* a normal export counts this rank's calls */
        snprintf(case_text, sizeof case_text, "%.1000s -> %.1000s: counting", in, out);
        run_one(in, out, want, o, (enum sx_fault_kind)k, 0, wrank);
        long n = sx_fault_count((enum sx_fault_kind)k);
        long counts[8];
        MPI_Allgather(&n, 1, MPI_LONG, counts, 1, MPI_LONG, MPI_COMM_WORLD);
        for (int r = 0; r < wsize; r++) {
            long before = runs, fails = 0;
            /* a different start on each rank, so that a stride still reaches every site
             */
            long first = stride > 1 ? 1 + (r * 7 + k * 3) % stride : 1;
            for (long nth = first; nth <= counts[r] + 1; nth += stride) {
                snprintf(case_text, sizeof case_text,
                         "%.1000s -> %.1000s: %s %ld of %ld failing on rank %d of %d", in,
                         out, kind_names[k], nth, counts[r], r, wsize);
                fails += run_one(in, out, want, o, (enum sx_fault_kind)k, nth, r);
            }
            if (wrank == 0)
                printf("%s -> %s: %s on rank %d: %ld calls, %ld runs, %ld failed\n", in,
                       strrchr(out, '/') + 1, kind_names[k], r, counts[r], runs - before,
                       fails);
        }
    }
}

/*
 * Local. The import (JSON -> HDF5, on one process): every allocation failing
 * in turn is out of memory, leaves no output and no temporary file, and no
 * HDF5 id open.
 */
static void sweep_import(const char *in, long stride) {
    char out[1200], dir[1100];
    snprintf(dir, sizeof dir, "%s/import", tmpdir);
    snprintf(out, sizeof out, "%s/run.h5", dir);
    ASSERT(mkdir(dir, 0777) == 0);
    for (int k = SX_FAULT_ALLOC; k <= SX_FAULT_WRITE; k++) {
        struct sx_error e;
        sx_fault_arm((enum sx_fault_kind)k, 0);
        CHECKF(sx_import(in, out, &e) == SX_OK, "the import failed: %s", e.text);
        long count = sx_fault_count((enum sx_fault_kind)k), fails = 0, before = runs;
        sx_fault_off();
        unlink(out);
        for (long nth = 1 + k % stride; nth <= count + 1; nth += stride) {
            snprintf(case_text, sizeof case_text, "import %.1000s: %s %ld of %ld", in,
                     kind_names[k], nth, count);
            arm(true, (enum sx_fault_kind)k, nth);
            enum sx_status st = sx_import(in, out, &e);
            bool fired = disarm();
            if (!fired || st == SX_OK) {
                CHECKF(st == SX_OK, "no fault happened, yet: %s", e.text);
                absorbed += fired;
                unlink(out);
                continue;
            }
            fails++;
            agreed++;
            CHECKF(st == (k == SX_FAULT_ALLOC ? SX_ERR_NOMEM : SX_ERR_IO),
                   "status %s: %s", sx_strerror(st), e.text);
            CHECKF(e.rank == -1 && e.source[0] != '\0', "rank %d, source [%s]", e.rank,
                   e.source);
            check_empty(dir);
        }
        printf("import %s: %s: %ld calls, %ld runs, %ld failed\n", in, kind_names[k],
               count, runs - before, fails);
    }
    rmdir(dir);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    signal(SIGALRM, on_alarm);
    const char *s = getenv("SX_SWEEP_STRIDE");
    long stride = s != NULL && atol(s) > 0 ? atol(s) : 1;
    /* SX_SWEEP_ONE_EXT=1 (the sanitizer build, several times slower): one output kind per
     * input, the other one at the other rank count, so -n 2 and -n 3 cover both */
    s = getenv("SX_SWEEP_ONE_EXT");
    const bool one_ext = s != NULL && strcmp(s, "1") == 0;
    s = getenv("SX_SWEEP_LIMIT");
    if (s != NULL && atoi(s) > 0)
        run_limit_s = atoi(s);
    if (wrank == 0) {
        const char *t = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/test_sweep.XXXXXX", t != NULL ? t : "/tmp");
        ASSERT(mkdtemp(tmpdir) != NULL);
    }
    MPI_Bcast(tmpdir, sizeof tmpdir, MPI_CHAR, 0, MPI_COMM_WORLD);

    /* every column and lane tables; LIKWID and line profiles; schema-1 groups */
    static const char *const cases[] = {"gen_schema3_allcols", "gen_likwid_lineprof",
                                        "gen_schema1"};
    static const char *const ext[] = {"json", "json.gz"};
    struct sx_options o;
    sx_options_init(&o);
    o.block_bytes = 1 << 16; /* several blocks on every rank */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char in[2048], want[2048], out[2048];
        snprintf(in, sizeof in, "%s/golden/%s/run.h5", SX_SHARED_DIR, cases[c]);
        snprintf(want, sizeof want, "%s/golden/%s/run.json", SX_SHARED_DIR, cases[c]);
        for (int x = 0; x < 2; x++) {
            if (one_ext && x != (int)((c + (size_t)wsize) % 2))
                continue;
            snprintf(out, sizeof out, "%s/%s.%s", tmpdir, cases[c], ext[x]);
            sweep(in, want, out, &o, stride);
        }
    }

    /* --summary: each rank holds the statistics of its own blocks' rows, read at its
     * first block (h5_summary.c); against scope-profiler's summary of the run */
    {
        char in[2048], want[2048], out[2048];
        struct sx_options so = o;
        so.summary = 1;
        so.block_bytes = 512; /* a block or two a rank: every rank holds some rows */
        snprintf(in, sizeof in, "%s/golden/basic_nested/run.h5", SX_SHARED_DIR);
        snprintf(want, sizeof want, "%s/golden/basic_nested/run.summary.json",
                 SX_SHARED_DIR);
        snprintf(out, sizeof out, "%s/basic_nested.summary.json", tmpdir);
        sweep(in, want, out, &so, stride);
    }

    if (wrank == 0) { /* the import is not collective: one process is enough */
        char in[2048];
        snprintf(in, sizeof in, "%s/golden/gen_likwid_lineprof/run.json", SX_SHARED_DIR);
        sweep_import(in, stride);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (wrank == 0)
        rmdir(tmpdir);
    int failures = sx_test_failures, any = 0;
    MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (wrank == 0)
        printf(
            "test_sweep at -n %d (stride %ld): %ld runs, %ld agreed errors, %ld faults "
            "absorbed, hangs: 0, crashes: 0: %s\n",
            wsize, stride, runs, agreed, absorbed, any ? "FAILED" : "ok");
    H5close();
    MPI_Finalize();
    return any ? 1 : 0;
}
