/* test_library.c - sx_export through the public API: any communicator, agreed errors */
/*
 * Run at -n 1..4. Every golden run exports to scope-profiler's text on
 * MPI_COMM_WORLD, on a dup and on each half of a split communicator; every
 * injected failure (each stage, each rank) gives the same error on every
 * rank, no output and an untouched existing output; bad inputs and outputs
 * are agreed errors; no HDF5 id stays open after any call.
 */
#include "sx_fault.h"
#include "sx_test.h"
#include "sx_test_doc.h"

#include <scope_export.h>

#include <dirent.h>
#include <errno.h>
#include <hdf5.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static int wrank, wsize;
static char tmpdir[1024];

/* A failed check with a message: rank, file and line first. */
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

/* Whether 'out' holds the text of 'want' (both may be gzip), but for the exporter. */
static bool same_text(const char *out, const char *want) {
    bool same = sx_test_same_text(out, want, NULL);
    if (!same)
        fprintf(stderr, "[rank %d] (above: %s)\n", wrank, out);
    return same;
}

static bool exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    ASSERT(f != NULL);
    ASSERT(fputs(text, f) >= 0);
    ASSERT(fclose(f) == 0);
}

/* Remove 'path' and everything under it. */
static void remove_tree(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *de;
        while (d != NULL && (de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            char sub[2048];
            snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
            remove_tree(sub);
        }
        if (d != NULL)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* Open file descriptors of this process. */
static int count_fds(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

/*
 * After every call: the library left no HDF5 object (file, group, dataset, ...) open,
 * and no file descriptor: the count never grows past what the first call left (MPI
 * opens its own on first use).
 */
static void check_no_ids(const char *what) {
    static int baseline = -1;
    ssize_t n = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
    CHECKF(n == 0, "%s: %zd HDF5 objects left open", what, n);
    int fds = count_fds();
    if (baseline < 0)
        baseline = fds;
    CHECKF(fds <= baseline, "%s: %d file descriptors open, %d after the first call", what,
           fds, baseline);
}

/*
 * NOTE: collective over 'comm'. Export 'in' to 'out' with 'o'; every rank must
 * succeed, and comm's rank 0 compares the text with 'want'.
 */
static void export_ok(MPI_Comm comm, const char *in, const char *out, const char *want,
                      const struct sx_options *o, const char *what) {
    struct sx_error e;
    int r;
    MPI_Comm_rank(comm, &r);
    enum sx_status st = sx_export(comm, in, out, o, &e);
    CHECKF(st == SX_OK, "%s: %s -> %s: %s: %s (rank %d, %s)", what, in, out,
           sx_strerror(st), e.text, e.rank, e.source);
    check_no_ids(what);
    if (r == 0 && st == SX_OK)
        CHECKF(same_text(out, want), "%s: %s is not the text of %s", what, out, want);
}

/* What a rank got back from a call, reduced to numbers that can be gathered. */
enum { O_STATUS, O_CODE, O_RANK, O_TEXT, O_SOURCE, O_N };

/* NOTE: collective over 'comm'. Every rank got the same status and error as rank 0. */
static void agree(MPI_Comm comm, enum sx_status st, const struct sx_error *e,
                  const char *what) {
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    long mine[O_N] = {st, e->code, e->rank,
                      (long)crc32(0, (const Bytef *)e->text, (uInt)strlen(e->text)),
                      (long)crc32(0, (const Bytef *)e->source, (uInt)strlen(e->source))};
    long *all = malloc(sizeof mine * (size_t)n);
    ASSERT(all != NULL);
    MPI_Gather(mine, O_N, MPI_LONG, all, O_N, MPI_LONG, 0, comm);
    if (r == 0)
        for (int p = 1; p < n; p++)
            CHECKF(memcmp(all, all + (size_t)p * O_N, sizeof mine) == 0,
                   "%s: rank %d got status %ld, error rank %ld; rank 0 got %ld, %ld (%s)",
                   what, p, all[p * O_N + O_STATUS], all[p * O_N + O_RANK], all[O_STATUS],
                   all[O_RANK],
                   all[p * O_N + O_TEXT] != all[O_TEXT] ? "text differs" : "");
    free(all);
}

/* Names of the golden case directories, sorted so every rank has the same list. */
static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t golden_cases(char ***out) {
    char **names = NULL;
    size_t n = 0;
    DIR *d = opendir(SX_SHARED_DIR "/golden");
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
        char p[2048];
        snprintf(p, sizeof p, "%s/golden/%s/run.json", SX_SHARED_DIR, de->d_name);
        if (de->d_name[0] == '.' || !exists(p))
            continue;
        names = realloc(names, (n + 1) * sizeof *names);
        ASSERT(names != NULL);
        names[n] = malloc(strlen(de->d_name) + 1);
        ASSERT(names[n] != NULL);
        strcpy(names[n++], de->d_name);
    }
    if (d != NULL)
        closedir(d);
    if (n > 0)
        qsort(names, n, sizeof *names, by_name);
    *out = names;
    return n;
}

/* Every golden run on WORLD, a dup and both halves of a split, .json and .json.gz. */
static void test_goldens(void) {
    char **cases = NULL;
    size_t n = golden_cases(&cases);
    CHECKF(n > 0, "no golden runs under %s/golden", SX_SHARED_DIR);
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int color = wrank < (wsize + 1) / 2 ? 0 : 1;
    /* reversed keys: the half's rank 0 is not the lowest world rank */
    MPI_Comm_split(MPI_COMM_WORLD, color, wsize - wrank, &half);
    struct sx_options o, small;
    sx_options_init(&o);
    sx_options_init(&small);
    small.block_bytes = 1024;
    for (size_t i = 0; i < n; i++) {
        char in[2048], want[2048], out[2048], what[256];
        snprintf(in, sizeof in, "%s/golden/%s/run.h5", SX_SHARED_DIR, cases[i]);
        snprintf(want, sizeof want, "%s/golden/%s/run.json", SX_SHARED_DIR, cases[i]);
        static const char *const ext[] = {"json", "json.gz"};
        for (int x = 0; x < 2; x++) {
            snprintf(out, sizeof out, "%s/%s.world.%s", tmpdir, cases[i], ext[x]);
            snprintf(what, sizeof what, "%s on MPI_COMM_WORLD (.%s)", cases[i], ext[x]);
            export_ok(MPI_COMM_WORLD, in, out, want, &o, what);
            snprintf(out, sizeof out, "%s/%s.dup.%s", tmpdir, cases[i], ext[x]);
            snprintf(what, sizeof what, "%s on a dup (.%s)", cases[i], ext[x]);
            export_ok(dup, in, out, want, &o, what);
            snprintf(out, sizeof out, "%s/%s.half%d.%s", tmpdir, cases[i], color, ext[x]);
            snprintf(what, sizeof what, "%s on half %d of a split (.%s)", cases[i], color,
                     ext[x]);
            export_ok(half, in, out, want, &o, what);
        }
        snprintf(out, sizeof out, "%s/%s.small.json.gz", tmpdir, cases[i]);
        snprintf(what, sizeof what, "%s in blocks of 1024 bytes", cases[i]);
        export_ok(MPI_COMM_WORLD, in, out, want, &small, what);
        free(cases[i]);
    }
    free(cases);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
}

/*
 * NOTE: collective over 'comm'. An export that must fail with the same error
 * on every rank ('code' if not SX_OK, and error rank 'rank' if >= 0), leaving
 * no file at 'out' or, with 'keep' set, the content 'keep' at 'out'.
 */
static void export_fails(MPI_Comm comm, const char *in, const char *out, const char *keep,
                         const struct sx_options *o, enum sx_status code, int rank,
                         const char *what) {
    struct sx_error e;
    struct stat sb;
    int r;
    MPI_Comm_rank(comm, &r);
    if (keep != NULL && r == 0)
        write_file(out, keep);
    const bool dir = stat(out, &sb) == 0 && S_ISDIR(sb.st_mode);
    MPI_Barrier(comm);
    enum sx_status st = sx_export(comm, in, out, o, &e);
    check_no_ids(what);
    agree(comm, st, &e, what);
    if (r != 0)
        return;
    CHECKF(st != SX_OK, "%s: the export to %s succeeded", what, out);
    if (st == SX_OK) { /* the checks below would only repeat it */
        if (keep == NULL)
            unlink(out);
        return;
    }
    CHECKF(code == SX_OK || st == code, "%s: status %d (%s), want %d (%s): %s", what, st,
           sx_strerror(st), code, sx_strerror(code), e.text);
    CHECKF(rank < 0 || e.rank == rank, "%s: error names rank %d, want %d", what, e.rank,
           rank);
    if (dir) {
        CHECKF(stat(out, &sb) == 0 && S_ISDIR(sb.st_mode), "%s: %s is gone", what, out);
    } else if (keep == NULL) {
        CHECKF(!exists(out), "%s: %s exists after a failed export", what, out);
        unlink(out); /* so that one failure is reported once */
    } else {
        size_t n = 0;
        FILE *f = fopen(out, "rb");
        char buf[256] = "";
        if (f != NULL) {
            n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
        }
        CHECKF(n == strlen(keep) && memcmp(buf, keep, n) == 0,
               "%s: the existing %s was changed", what, out);
    }
}

/* No file in 'dir' but 'only' (no temporary file left behind). Local. */
static void check_dir_holds(const char *dir, const char *only, const char *what) {
    DIR *d = opendir(dir);
    struct dirent *de;
    CHECKF(d != NULL, "%s: cannot list %s", what, dir);
    while (d != NULL && (de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            CHECKF(only != NULL && strcmp(de->d_name, only) == 0, "%s: %s/%s left behind",
                   what, dir, de->d_name);
    if (d != NULL)
        closedir(d);
}

/* Each stage failing on each rank: the same error everywhere, and no damage. */
static void test_injected(void) {
    static const char *const stages[] = {"",         "open", "read", "format",
                                         "compress", "send", "write"};
    char dir[1100], fresh[1200], plain[1200], old[1200], in[1200], what[256];
    snprintf(dir, sizeof dir, "%s/fault", tmpdir);
    snprintf(fresh, sizeof fresh, "%s/fresh.json.gz", dir);
    snprintf(plain, sizeof plain, "%s/fresh.json", dir);
    snprintf(old, sizeof old, "%s/existing.json.gz", dir);
    snprintf(in, sizeof in, "%s/golden/basic_nested/run.h5", SX_SHARED_DIR);
    if (wrank == 0)
        ASSERT(mkdir(dir, 0777) == 0);
    MPI_Barrier(MPI_COMM_WORLD);
    const char *keep = "an earlier profile that must survive\n";
    static const size_t blocks[] = {0, 1024}; /* one block; blocks on every rank */
    for (int b = 0; b < 2; b++) {
        for (int stage = SX_FAIL_OPEN; stage <= SX_FAIL_WRITE; stage++) {
            for (int r = 0; r < wsize; r++) {
                struct sx_options o;
                sx_options_init(&o);
                o.block_bytes = blocks[b];
                /* the test build's hook: this stage fails on rank r alone */
                if (wrank == r)
                    sx_fault_arm_stage(stage);
                else
                    sx_fault_off();
                snprintf(what, sizeof what, "%s failing on rank %d (blocks of %zu)",
                         stages[stage], r, blocks[b]);
                export_fails(MPI_COMM_WORLD, in, fresh, NULL, &o, SX_OK, r, what);
                export_fails(MPI_COMM_WORLD, in, old, keep, &o, SX_OK, r, what);
                /* plain text has no compress stage */
                if (stage != SX_FAIL_COMPRESS)
                    export_fails(MPI_COMM_WORLD, in, plain, NULL, &o, SX_OK, r, what);
                sx_fault_off();
                if (wrank == 0)
                    check_dir_holds(dir, "existing.json.gz", what);
                MPI_Barrier(MPI_COMM_WORLD);
            }
        }
    }

    /* The rank an error names is the rank in the communicator given, not in WORLD. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wsize - wrank, &half);
    int hsize, hrank;
    MPI_Comm_size(half, &hsize);
    MPI_Comm_rank(half, &hrank);
    struct sx_options o;
    sx_options_init(&o);
    if (hrank == hsize - 1)
        sx_fault_arm_stage(SX_FAIL_READ);
    snprintf(fresh, sizeof fresh, "%s/half%d.json", dir, wrank % 2);
    snprintf(what, sizeof what, "read failing on the last rank of half %d", wrank % 2);
    export_fails(half, in, fresh, NULL, &o, SX_OK, hsize - 1, what);
    sx_fault_off();
    MPI_Comm_free(&half);
    MPI_Barrier(MPI_COMM_WORLD);
    if (wrank == 0)
        check_dir_holds(dir, "existing.json.gz", "after the split failures");
}

/* Missing, non-HDF5 inputs and a directory as output; a new nested directory. */
static void test_paths(void) {
    char in[1200], bad[1200], out[1200], want[1200];
    snprintf(in, sizeof in, "%s/golden/basic_nested/run.h5", SX_SHARED_DIR);
    snprintf(want, sizeof want, "%s/golden/basic_nested/run.json", SX_SHARED_DIR);
    snprintf(bad, sizeof bad, "%s/not_hdf5.h5", tmpdir);
    if (wrank == 0)
        write_file(bad, "this is a text file, not an HDF5 run\n");
    MPI_Barrier(MPI_COMM_WORLD);

    snprintf(out, sizeof out, "%s/missing.json", tmpdir);
    export_fails(MPI_COMM_WORLD, SX_SHARED_DIR "/golden/no_such_case/run.h5", out, NULL,
                 NULL, SX_ERR_NOT_FOUND, -1, "missing input");
    export_fails(MPI_COMM_WORLD, bad, out, NULL, NULL, SX_ERR_OPEN, -1,
                 "a text file as input");
    export_fails(MPI_COMM_WORLD, in, tmpdir, NULL, NULL, SX_OK, -1,
                 "a directory as output");
    if (wrank == 0)
        unlink(bad);

    snprintf(out, sizeof out, "%s/new/nested/dir/profile.json.gz", tmpdir);
    export_ok(MPI_COMM_WORLD, in, out, want, NULL, "output in a new nested directory");
}

/* One index row, more ranks than rows: some ranks have nothing to read. */
static void test_one_row(void) {
    const char *in = SX_SHARED_DIR "/fixtures/compat/hdf5-schema-3.h5";
    char want[1200], out[1200];
    snprintf(want, sizeof want, "%s/compat.expected.json", tmpdir);
    if (wrank == 0)
        write_file(
            want,
            "{\"format\": \"scope-profiler-profile\", \"format_version\": 1, "
            "\"exporter\": \"x\", \"time_unit\": \"nanoseconds\", \"num_ranks\": 1, "
            "\"event_data_available\": true, \"metadata\": {\"mpi_size\": 1}, "
            "\"regions\": [{\"name\": \"solve\", \"rank\": 0, \"source_file\": "
            "\"solver.py\", \"source_lineno\": 7, \"tags\": [\"golden\"], "
            "\"start_times_ns\": [10, 20, 40], \"end_times_ns\": [15, 33, 55]}]}");
    MPI_Barrier(MPI_COMM_WORLD);
    struct sx_options o;
    sx_options_init(&o);
    o.block_bytes = 1024;
    snprintf(out, sizeof out, "%s/compat.json", tmpdir);
    export_ok(MPI_COMM_WORLD, in, out, want, NULL, "compat schema 3 (.json)");
    snprintf(out, sizeof out, "%s/compat.json.gz", tmpdir);
    export_ok(MPI_COMM_WORLD, in, out, want, &o,
              "compat schema 3 (.json.gz, small blocks)");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wrank == 0) {
        const char *t = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/test_library.XXXXXX", t != NULL ? t : "/tmp");
        ASSERT(mkdtemp(tmpdir) != NULL);
    }
    MPI_Bcast(tmpdir, sizeof tmpdir, MPI_CHAR, 0, MPI_COMM_WORLD);

    test_goldens();
    test_injected();
    test_paths();
    test_one_row();

    MPI_Barrier(MPI_COMM_WORLD);
    if (wrank == 0)
        remove_tree(tmpdir);
    int failures = sx_test_failures, any = 0;
    MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("test_library at -n %d: %s\n", wsize, any ? "FAILED" : "ok");
    H5close();
    MPI_Finalize();
    return any ? 1 : 0;
}
