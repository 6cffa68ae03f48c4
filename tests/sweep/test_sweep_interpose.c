/* test_sweep_interpose.c - the Nth allocation of libscope_export.so failing, by
 * interposition, for every command */
/*
 * Run under LD_PRELOAD of the test-only allocator shim (tests/support/sx_failmalloc.c)
 * with SX_FAILMALLOC_MATCH naming the shared library, at -n 2 and -n 3: it sees every
 * malloc, calloc, realloc, posix_memalign, strdup and strndup the library makes, from
 * any thread (the output's writer included), whether through sx_malloc or not. Public
 * API only, against the shared library, as a user's program.
 *
 * For each command (export to .json, .json.gz, chrome-trace, speedscope, perfetto,
 * otf2, pstats, flame graphs, region statistics, --summary, several inputs; export of a
 * native run, as JSON, speedscope, Chrome trace and pstats; validate; import;
 * import-native) a normal run counts each rank's allocations and keeps its output; then
 * for every N under 60 and a stride of N beyond (SX_SWEEP_BEYOND runs), and every rank in
 * turn, the Nth allocation fails on that rank alone. Every run must end (an alarm turns a
 * hang into a failure naming the case), give the same status and one-line error on every
 * rank of a collective call, leave no output and no temporary file when it fails, and the
 * very output of the normal run when it succeeds. A crash (a double free) ends the test.
 */
#include "sx_test.h"
#include "sx_test_doc.h"

#include "scope_export.h"

#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int wrank, wsize;
static char tmpdir[1024];
static char case_text[1200]; /* the run under way, for the alarm */
static const int run_limit_s = 60;

static void (*fm_set)(long);
static long (*fm_calls)(void);
static int (*fm_fired)(void);

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
    char line[1400];
    int n = snprintf(line, sizeof line, "[rank %d] HANG: no end within %d s: %s\n", wrank,
                     run_limit_s, case_text);
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
    _exit(3);
}

enum kind {
    K_EXPORT,
    K_MULTI,
    K_NATIVE,
    K_VALIDATE,
    K_VALIDATE_PARTS,
    K_IMPORT,
    K_IMPORT_NATIVE
};

struct cmd {
    const char *name;
    enum kind kind;
    const char *input;  /* under the shared reference directory */
    const char *output; /* file name in the output directory */
    enum sx_format format;
    int summary;
};

static char shared_dir[1024];

static const char *const multi_inputs[] = {"golden/basic_nested/run.h5",
                                           "golden/threads/run.h5",
                                           "golden/gen_likwid_lineprof/run.h5"};

static const struct cmd cmds[] = {
    {"export json", K_EXPORT, "golden/gen_schema3_allcols/run.h5", "p.json",
     SX_FORMAT_JSON, 0},
    {"export json.gz", K_EXPORT, "golden/gen_schema3_allcols/run.h5", "p.json.gz",
     SX_FORMAT_JSON, 0},
    {"export chrome-trace", K_EXPORT, "golden/gen_schema3_allcols/run.h5", "p.trace.json",
     SX_FORMAT_CHROME_TRACE, 0},
    {"export speedscope", K_EXPORT, "golden/gen_schema3_allcols/run.h5", "p.ss.json",
     SX_FORMAT_SPEEDSCOPE, 0},
    {"export perfetto", K_EXPORT, "golden/gen_schema3_allcols/run.h5", "p.pftrace",
     SX_FORMAT_PERFETTO, 0},
    {"export otf2", K_EXPORT, "golden/basic_nested/run.h5", "p.otf2", SX_FORMAT_OTF2, 0},
    /* a file per rank, made by the rank's process and committed when all are made */
    {"export prof", K_EXPORT, "golden/threads/run.h5", "p.prof", SX_FORMAT_PROF, 0},
    {"export flamegraph", K_EXPORT, "golden/self_recursion/run.h5", "p.svg",
     SX_FORMAT_FLAMEGRAPH, 0},
    {"export region-statistics", K_EXPORT, "golden/threads/run.h5", "p.json",
     SX_FORMAT_REGION_STATISTICS, 0},
    {"export --summary", K_EXPORT, "golden/gen_schema3_allcols/run.h5", "p.json",
     SX_FORMAT_JSON, 1},
    /* rows of aggregates, their fields held apart from the row */
    {"export aggregate", K_EXPORT, "golden/gen_aggregate/run.h5", "p.json",
     SX_FORMAT_JSON, 0},
    {"export, three inputs", K_MULTI, NULL, "p.json", SX_FORMAT_JSON, 0},
    {"export --native", K_NATIVE, "golden-native/mixed_3ranks/ranks", "p.json.gz",
     SX_FORMAT_JSON, 0},
    {"export --native speedscope", K_NATIVE, "golden-native/mixed_3ranks/ranks",
     "p.ss.json", SX_FORMAT_SPEEDSCOPE, 0},
    {"export --native chrome-trace", K_NATIVE, "golden-native/mixed_3ranks/ranks",
     "p.trace.json", SX_FORMAT_CHROME_TRACE, 0},
    {"export --native prof", K_NATIVE, "golden-native/mixed_3ranks/ranks", "p.prof",
     SX_FORMAT_PROF, 0},
    {"validate run.h5", K_VALIDATE, "golden/gen_schema3_allcols/run.h5", NULL,
     SX_FORMAT_JSON, 0},
    {"validate run.json.gz", K_VALIDATE, "golden/gen_schema3_allcols/run.json.gz", NULL,
     SX_FORMAT_JSON, 0},
    {"import", K_IMPORT, "golden/gen_schema3_allcols/run.json.gz", "i.h5", SX_FORMAT_JSON,
     0},
    {"import aggregate", K_IMPORT, "golden/gen_aggregate/run.json", "i.h5",
     SX_FORMAT_JSON, 0},
    /* a plain profile large enough to be read in parts ($SX_SWEEP_PARTS_JSON) */
    {"validate in parts", K_VALIDATE_PARTS, NULL, NULL, SX_FORMAT_JSON, 0},
    {"import-native", K_IMPORT_NATIVE, "golden-native/mixed_3ranks/ranks", "m.h5",
     SX_FORMAT_JSON, 0},
};
#define NCMDS (sizeof cmds / sizeof cmds[0])

static bool collective(const struct cmd *c) {
    return c->kind != K_VALIDATE && c->kind != K_IMPORT;
}

/* Where a command writes: one directory for a collective call, one per rank else. */
static void out_dir(const struct cmd *c, char *dir, size_t n) {
    if (collective(c))
        snprintf(dir, n, "%s/out", tmpdir);
    else
        snprintf(dir, n, "%s/out%d", tmpdir, wrank);
}

/* Run command 'c' into 'dir'. */
static enum sx_status run_cmd(const struct cmd *c, const char *dir, struct sx_error *e) {
    char in[2200], out[2200];
    struct sx_options o;
    sx_options_init(&o);
    o.format = c->format;
    o.summary = c->summary;
    if (c->input)
        snprintf(in, sizeof in, "%s/%s", shared_dir, c->input);
    if (c->output)
        snprintf(out, sizeof out, "%s/%s", dir, c->output);
    const char *ins[1] = {in};
    switch (c->kind) {
    case K_EXPORT:
        return sx_export(MPI_COMM_WORLD, in, out, &o, e);
    case K_MULTI: /* several exports in one process, one after another */
        for (size_t i = 0; i < 3; i++) {
            char path[2400];
            snprintf(in, sizeof in, "%s/%s", shared_dir, multi_inputs[i]);
            /* (the command's names of several outputs are not public API) */
            snprintf(path, sizeof path, "%s.%zu.json", out, i);
            enum sx_status st = sx_export(MPI_COMM_WORLD, in, path, &o, e);
            if (st != SX_OK)
                return st;
        }
        return SX_OK;
    case K_NATIVE:
        return sx_export_native(MPI_COMM_WORLD, ins, 1, out, NULL, &o, e);
    case K_VALIDATE:
        return sx_validate(in, e);
    case K_VALIDATE_PARTS:
        return sx_validate_mpi(MPI_COMM_WORLD, getenv("SX_SWEEP_PARTS_JSON"), e);
    case K_IMPORT:
        return sx_import(in, out, e);
    case K_IMPORT_NATIVE:
        return sx_import_native(MPI_COMM_WORLD, ins, 1, out, NULL, e);
    }
    return SX_ERR_INTERNAL;
}

/* The files of 'dir' (sorted names, '\n'-separated) into 'names'. */
static void list_dir(const char *dir, char *names, size_t n) {
    struct dirent **ents = NULL;
    int k = scandir(dir, &ents, NULL, alphasort);
    names[0] = '\0';
    for (int i = 0; i < k; i++) {
        if (strcmp(ents[i]->d_name, ".") != 0 && strcmp(ents[i]->d_name, "..") != 0) {
            strncat(names, ents[i]->d_name, n - strlen(names) - 2);
            strcat(names, "\n");
        }
        free(ents[i]);
    }
    free(ents);
}

static void empty_dir(const char *dir) {
    struct dirent **ents = NULL;
    int k = scandir(dir, &ents, NULL, alphasort);
    for (int i = 0; i < k; i++) {
        char p[2400];
        snprintf(p, sizeof p, "%s/%s", dir, ents[i]->d_name);
        if (strcmp(ents[i]->d_name, ".") != 0 && strcmp(ents[i]->d_name, "..") != 0 &&
            unlink(p) != 0) { /* a directory (an OTF2 archive's event files) */
            empty_dir(p);
            rmdir(p);
        }
        free(ents[i]);
    }
    free(ents);
}

/* The canonical text of an output: JSON as it is, an HDF5 run exported (fault off). */
static char *output_text(const char *path, size_t *len) {
    const size_t n = strlen(path);
    if (n > 3 && strcmp(path + n - 3, ".h5") == 0) {
        char json[2400];
        snprintf(json, sizeof json, "%s.export.json", path);
        struct sx_options o;
        struct sx_error e;
        sx_options_init(&o);
        if (sx_export(MPI_COMM_NULL, path, json, &o, &e) != SX_OK) {
            fprintf(stderr, "cannot export %s: %s\n", path, e.text);
            return NULL;
        }
        char *t = sx_test_slurp(json, len, false);
        unlink(json);
        return t;
    }
    return sx_test_slurp(path, len, false);
}

/* 'dir' holds files that each equal their namesake in 'ref'; with 'all', every one. */
static bool same_files(const char *dir, const char *ref, bool all, char *why,
                       size_t nwhy) {
    char got[4096], want[4096];
    list_dir(dir, got, sizeof got);
    list_dir(ref, want, sizeof want);
    if (all && strcmp(got, want) != 0) {
        snprintf(why, nwhy, "files [%.500s], want [%.500s]", got, want);
        return false;
    }
    for (char *s = got, *nl; (nl = strchr(s, '\n')) != NULL; s = nl + 1) {
        *nl = '\0';
        char a[2400], b[2400];
        snprintf(a, sizeof a, "%.1100s/%.1100s", dir, s);
        snprintf(b, sizeof b, "%.1100s/%.1100s", ref, s);
        size_t la = 0, lb = 0;
        struct stat sa;
        const size_t ns = strlen(s);
        if ((stat(a, &sa) == 0 && S_ISDIR(sa.st_mode)) ||
            (ns > 5 && strcmp(s + ns - 5, ".otf2") == 0)) {
            /* an OTF2 archive's directory and anchor (which holds a random trace id):
             * there, by name; its definitions file is compared as the others */
            continue;
        }
        char *ta = output_text(a, &la), *tb = output_text(b, &lb);
        const bool same = ta && tb && la == lb && memcmp(ta, tb, la) == 0;
        free(ta);
        free(tb);
        if (!same) {
            snprintf(why, nwhy, "%.1000s differs from the normal run's or is unexpected",
                     s);
            return false;
        }
    }
    return true;
}

/* What a rank got back, as numbers to gather. */
enum { O_STATUS, O_HASH, O_FIRED, O_N };

static long hash_text(const char *s) {
    unsigned long h = 5381;
    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return (long)(h & 0x7fffffffL);
}

static long runs_total, runs_failed_ok, runs_absorbed;

/*
 * NOTE: collective over WORLD. One run of 'c' with the 'nth' allocation failing on
 * rank 'frank' (0: none). 'ref' holds the normal run's outputs.
 */
static void run_one(const struct cmd *c, long nth, int frank, const char *ref) {
    char dir[1100], why[1200];
    out_dir(c, dir, sizeof dir);
    struct sx_error e;
    memset(&e, 0x5a, sizeof e); /* the library must clear it */
    alarm(run_limit_s);
    fm_set(wrank == frank ? nth : 0);
    enum sx_status st = run_cmd(c, dir, &e);
    const int fired = fm_fired();
    fm_set(0);
    alarm(0);
    e.text[sizeof e.text - 1] = '\0';
    runs_total++;
    long mine[O_N] = {st, hash_text(e.text), fired}, all[O_N * 8];
    MPI_Allgather(mine, O_N, MPI_LONG, all, O_N, MPI_LONG, MPI_COMM_WORLD);
    if (collective(c))
        for (int p = 1; p < wsize; p++)
            CHECKF(all[p * O_N + O_STATUS] == all[O_STATUS] &&
                       all[p * O_N + O_HASH] == all[O_HASH],
                   "rank %d got status %ld, rank 0 %ld (%s)", p, all[p * O_N + O_STATUS],
                   all[O_STATUS], e.text);
    /* the ranks that check their output directory: rank 0 for a shared one */
    const bool checks = !collective(c) || wrank == 0;
    if (st != SX_OK) {
        CHECKF(fired || (collective(c) && all[frank * O_N + O_FIRED]),
               "failed with no fault: %s", e.text);
        CHECKF(e.text[0] != '\0' && strchr(e.text, '\n') == NULL,
               "not one line of error: [%s]", e.text);
        CHECKF(st == SX_ERR_NOMEM, "status %s, not out of memory: %s", sx_strerror(st),
               e.text);
        if (checks) {
            if (c->kind == K_MULTI) /* what was written before is complete */
                CHECKF(same_files(dir, ref, false, why, sizeof why), "%s", why);
            else {
                char left[4096];
                list_dir(dir, left, sizeof left);
                CHECKF(left[0] == '\0', "left behind: %s", left);
            }
        }
        runs_failed_ok++;
    } else {
        if (fired)
            runs_absorbed++;
        if (checks && c->output != NULL)
            CHECKF(same_files(dir, ref, true, why, sizeof why), "%s", why);
    }
    if (checks)
        empty_dir(dir);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    int provided;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    ASSERT(wsize <= 8);
    /* POSIX's way from dlsym's object pointer to a function pointer */
    void *sym = dlsym(RTLD_DEFAULT, "sx_failmalloc_set");
    memcpy(&fm_set, &sym, sizeof sym);
    sym = dlsym(RTLD_DEFAULT, "sx_failmalloc_calls");
    memcpy(&fm_calls, &sym, sizeof sym);
    sym = dlsym(RTLD_DEFAULT, "sx_failmalloc_fired");
    memcpy(&fm_fired, &sym, sizeof sym);
    if (fm_set == NULL || fm_calls == NULL || fm_fired == NULL) {
        fprintf(stderr, "FAIL: run under LD_PRELOAD of the allocator shim\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const char *sd = getenv("SX_SHARED_DIR");
    snprintf(shared_dir, sizeof shared_dir, "%s", sd ? sd : SX_SHARED_DIR);
    const char *b = getenv("SX_SWEEP_BEYOND");
    const long beyond = b ? atol(b) : 30;
    /* SX_SWEEP_N=N SX_SWEEP_RANK=R: that one case alone (with SX_SWEEP_ONLY), to debug */
    const char *one = getenv("SX_SWEEP_N"), *one_r = getenv("SX_SWEEP_RANK");
    const long one_n = one ? atol(one) : 0;
    const int one_rank = one_r ? atoi(one_r) : 0;
    signal(SIGALRM, on_alarm);

    if (wrank == 0) {
        const char *t = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/sx_interpose_XXXXXX", t ? t : "/tmp");
        ASSERT(mkdtemp(tmpdir) != NULL);
    }
    MPI_Bcast(tmpdir, sizeof tmpdir, MPI_CHAR, 0, MPI_COMM_WORLD);
    char d[1200];
    if (wrank == 0) {
        snprintf(d, sizeof d, "%s/out", tmpdir);
        ASSERT(mkdir(d, 0700) == 0);
    }
    snprintf(d, sizeof d, "%s/out%d", tmpdir, wrank);
    ASSERT(mkdir(d, 0700) == 0);
    MPI_Barrier(MPI_COMM_WORLD);

    const time_t t0 = time(NULL);
    const char *only = getenv("SX_SWEEP_ONLY"); /* a command's name, to debug one */
    for (size_t ci = 0; ci < NCMDS; ci++) {
        const struct cmd *c = &cmds[ci];
        if (only != NULL && strcmp(only, c->name) != 0)
            continue;
        if (c->kind == K_VALIDATE_PARTS && getenv("SX_SWEEP_PARTS_JSON") == NULL)
            continue;
        char dir[1100], ref[1200];
        out_dir(c, dir, sizeof dir);
        snprintf(ref, sizeof ref, "%s/ref%zu.%d", tmpdir, ci, wrank);
        /* the normal run: the reference outputs and each rank's count */
        snprintf(case_text, sizeof case_text, "%s: normal run", c->name);
        struct sx_error e;
        alarm(run_limit_s);
        fm_set(0);
        enum sx_status st = run_cmd(c, dir, &e);
        long count = fm_calls();
        alarm(0);
        CHECKF(st == SX_OK, "%s", e.text);
        MPI_Barrier(MPI_COMM_WORLD);
        if (!collective(c) || wrank == 0)
            ASSERT(rename(dir, ref) == 0 && mkdir(dir, 0700) == 0);
        if (collective(c)) { /* rank 0's outputs are every rank's reference */
            char r0[1200];
            snprintf(r0, sizeof r0, "%s/ref%zu.0", tmpdir, ci);
            snprintf(ref, sizeof ref, "%s", r0);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        long counts[8];
        MPI_Allgather(&count, 1, MPI_LONG, counts, 1, MPI_LONG, MPI_COMM_WORLD);
        const long before = runs_total, fails_before = runs_failed_ok;
        const time_t tc = time(NULL);
        long most = 0;
        for (int r = 0; r < wsize; r++)
            most = counts[r] > most ? counts[r] : most;
        /* Every N under 60, then 'beyond' more evenly spread; the failing rank turns
         * with N (and starts differently with each number of ranks), so that every
         * rank sees failures everywhere over the sweep. */
        const long stride = most > 60 && beyond > 0 ? (most - 60) / beyond + 1 : 1;
        for (long nth = one_n > 0 ? one_n : 1; nth <= most;
             nth += nth < 60 ? 1 : stride) {
            int r = one_n > 0 ? one_rank : (int)((nth + wsize) % wsize);
            if (nth > counts[r]) /* beyond this rank's count: the next one's */
                for (int k = 0; k < wsize && nth > counts[r]; k++)
                    r = (r + 1) % wsize;
            if (nth > counts[r])
                continue;
            snprintf(case_text, sizeof case_text,
                     "%s: allocation %ld of %ld failing on rank %d of %d", c->name, nth,
                     counts[r], r, wsize);
            run_one(c, nth, r, ref);
            if (one_n > 0)
                break;
        }
        if (wrank == 0) {
            printf("%-22s -n %d: allocations per rank", c->name, wsize);
            for (int r = 0; r < wsize; r++)
                printf(" %ld", counts[r]);
            printf("; %ld runs, %ld failed cleanly, %lds\n", runs_total - before,
                   runs_failed_ok - fails_before, (long)(time(NULL) - tc));
            fflush(stdout);
        }
    }
    int failures = sx_test_failures, all_failures = 0;
    MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0) {
        printf("interposition sweep -n %d: %ld runs, %ld failed cleanly, %ld absorbed "
               "(right output), %d check failures, 0 hangs, %lds\n",
               wsize, runs_total, runs_failed_ok, runs_absorbed, all_failures,
               (long)(time(NULL) - t0));
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", tmpdir);
    }
    MPI_Finalize();
    return all_failures ? 1 : 0;
}
