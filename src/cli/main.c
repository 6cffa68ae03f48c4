/* main.c - the scope-export command: argv, MPI_Init/Finalize, all printing */
#include "scope_export.h"
#include "signals.h"
#include "sp_export.h"

/* The library's allocations (src/internal.h; the command links the static library): the
 * fault tests that fail the Nth allocation reach the command's own ones too. */
#include "cli_support.h"
#include "internal.h"

#include <errno.h>
#include <glob.h>
#include <hdf5.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: scope-export export IN.h5 [IN.h5 ...] -o OUT.json[.gz] [options]\n"
    "       scope-export export KIND FILES... -o DIR [--label L]... [--include RE...]\n"
    "              [--exclude RE...] [--ranks SPEC...] [--gzip] [--indent N]\n"
    "              [--no-call-paths]   (scope-profiler's form; KIND: json,\n"
    "              chrome-trace, speedscope, prof or plot-data)\n"
    "       scope-export IN.h5 -o OUT.json[.gz] [options]\n"
    "       scope-export validate FILE [FILE ...]\n"
    "       scope-export import IN.json[.gz] -o OUT.h5 [-q]\n"
    "       scope-export export --native INPUT... -o OUT.json[.gz] [--label L] "
    "[options]\n"
    "       scope-export import-native INPUT... -o OUT.h5 [--label L] [-q]\n"
    "\n"
    "Export scope-profiler HDF5 runs as JSON documents (scope-profiler-profile,\n"
    "format_version 1), byte-identical to scope_profiler.json_export. Run it under\n"
    "mpirun to read and format in parallel; rank 0 writes the file. Run bare, it\n"
    "works on one process without starting MPI (SCOPE_EXPORT_MPI=1 starts it).\n"
    "An output name ending in .gz is written gzip-compressed. With several\n"
    "inputs, each run goes to <stem>_<label><suffix>, as export_json names them.\n"
    "\n"
    "export options:\n"
    "  -o, --output PATH     output file (parent directories are created)\n"
    "  --indent N            indent the JSON like json.dumps(indent=N)\n"
    "  --summary             summary-only read (read_h5_summary): no event columns\n"
    "  --ranks LIST          ranks to keep, e.g. 0,2,5-7 (default: all)\n"
    "  --include REGEX       keep regions whose name matches (re.match); repeatable\n"
    "  --exclude REGEX       drop regions whose name matches; repeatable\n"
    "  --gzip-level N        deflate level 0..9 for .gz output (default 6)\n"
    "  --deflate ENGINE      zlib (default) or isal, where built with ISA-L\n"
    "  --format FORMAT       json (default), chrome-trace (Perfetto UI, DevTools)\n"
    "                        or speedscope; the last two keep rank 0 unless --ranks;\n"
    "                        region-statistics: region_statistics.json of plot-data\n"
    "                        prof: pstats files OUT_rank<N>.prof (rank 0 unless "
    "--ranks)\n"
    "                        flamegraph: an SVG per rank, OUT_rank<N>.svg\n"
    "                        perfetto: Perfetto's protobuf trace, OUT.pftrace\n"
    "                        (Perfetto UI, trace_processor), every rank\n"
    "                        otf2: an OTF2 trace archive OUT.otf2, OUT.def and\n"
    "                        OUT/ (Vampir, otf2-print), every rank\n"
    "  --no-call-paths       prof: one entry per region, not per call path\n"
    "  --width PX            flamegraph: the SVG's width (default 1200)\n"
    "  --block-size BYTES    JSON text per block of work (default 4194304)\n"
    "  --progress            show progress on stderr (default: when a terminal)\n"
    "  --no-progress         no progress, even on a terminal\n"
    "  --stats               print the export's own time and rate on stderr\n"
    "  --native              the inputs are a native run: per-process .spt and\n"
    "                        *_rank<N>.h5 files of the C and Fortran APIs, or\n"
    "                        directories of them, exported as one document\n"
    "  --label L             the native run's label (default: the output's name\n"
    "                        without .json, .trace.json, ... and .gz)\n"
    "  -q, --quiet           print nothing but errors\n"
    "  -h, --help            this text (also after a command)\n"
    "  -V, --version         print the version\n"
    "\n"
    "Exit status: 0 on success, 1 on failure (one line on stderr names the file,\n"
    "the object and the rank), 2 on a usage error.\n";

#ifdef SX_TEST_FAULTS
int sx_fault_from_env(int rank); /* tests/support/sx_fault.c: the test build only */
#endif

static int world_rank;
static int world_size = 1;
static MPI_Comm world = MPI_COMM_NULL; /* MPI_COMM_WORLD, or NULL when run without MPI */

/*
 * Every line the command prints goes through here: printf's 'fmt', with
 * control characters escaped (\n, \t, \r, \xHH), then one newline. A file
 * name holding a newline cannot split the line or forge another one.
 */
static void say(FILE *f, const char *fmt, ...) {
    char raw[4096], line[4 * sizeof raw + 2];
    size_t n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    for (const unsigned char *p = (const unsigned char *)raw; *p != '\0'; p++) {
        if (*p >= 0x20 && *p != 0x7f)
            line[n++] = (char)*p;
        else if (*p == '\n' || *p == '\t' || *p == '\r')
            n += (size_t)snprintf(line + n, 3, "\\%c",
                                  *p == '\n'   ? 'n'
                                  : *p == '\t' ? 't'
                                               : 'r');
        else
            n += (size_t)snprintf(line + n, 5, "\\x%02x", *p);
    }
    line[n++] = '\n';
    fwrite(line, 1, n, f);
    fflush(f);
}

/*
 * Whether an MPI launcher (mpirun/mpiexec of Open MPI or MPICH, srun) started
 * this process: each leaves its mark in the environment. A bare command runs
 * on one process without starting MPI at all; MPI_Init costs tenths of a
 * second on a quiet node and may fail on a login node with no launcher.
 * SCOPE_EXPORT_MPI=1 starts MPI anyway (a singleton), =0 never.
 */
static bool want_mpi(void) {
    static const char *const marks[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                                        "PMI_SIZE", "PMI_FD"};
    const char *force = getenv("SCOPE_EXPORT_MPI");
    if (force != NULL && (strcmp(force, "0") == 0 || strcmp(force, "1") == 0))
        return force[0] == '1';
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (getenv(marks[i]) != NULL)
            return true;
    return false;
}

/*
 * NOTE: collective over 'world'. Every rank learns whether all passed 'ok'
 * (this process alone without MPI): -1 when all did, else the lowest rank
 * that did not. A rank that fails a step never leaves the others waiting in
 * the next collective: all go on, or all stop.
 */
static int first_failed(bool ok) {
    int mine = ok ? world_size : world_rank, first = mine;
    if (world != MPI_COMM_NULL &&
        MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, world) != MPI_SUCCESS)
        first = world_rank;
    return first < world_size ? first : -1;
}

/* NOTE: collective. Agree on a step of the command itself; rank 0 says what failed. */
static bool all_passed(bool ok, const char *what) {
    int first = first_failed(ok);
    if (first < 0)
        return true;
    if (world_rank == 0)
        say(stderr, "scope-export: error: %s: out of memory [rank %d]", what, first);
    return false;
}

static void rank0_bcast_rc(int *rc) {
    if (world != MPI_COMM_NULL)
        MPI_Bcast(rc, 1, MPI_INT, 0, world);
}

static int usage_error(const char *msg, const char *arg) {
    if (world_rank == 0) {
        say(stderr, "scope-export: %s%s%s", msg, arg ? ": " : "", arg ? arg : "");
        say(stderr, "Try 'scope-export --help'.");
    }
    return 2;
}

/* "0,2,5-7" -> ranks: 0, or -1 for a bad list, -2 out of memory */
static int parse_ranks(const char *s, int64_t **out, size_t *n_out) {
    size_t cap = 16, n = 0;
    int rc = -1;
    if (*s == '\0')
        return -1; /* no rank at all: a mistake, not "keep none" */
    int64_t *v = sx_malloc(cap * sizeof *v);
    if (v == NULL)
        return -2;
    const char *p = s;
    while (*p) {
        char *end = NULL;
        errno = 0;
        long long a = strtoll(p, &end, 10);
        if (end == p || errno || a < 0)
            goto bad;
        long long b = a;
        p = end;
        if (*p == '-') {
            b = strtoll(p + 1, &end, 10);
            if (end == p + 1 || errno || b < a || b - a > 10000000)
                goto bad;
            p = end;
        }
        for (long long r = a; r <= b; r++) {
            if (n == cap) {
                cap *= 2;
                int64_t *nv = sx_realloc(v, cap * sizeof *nv);
                rc = -2;
                if (nv == NULL)
                    goto bad;
                rc = -1;
                v = nv;
            }
            v[n++] = r;
        }
        if (*p == ',')
            p++;
        else if (*p != '\0')
            goto bad;
    }
    *out = v;
    *n_out = n;
    return 0;
bad:
    free(v);
    return rc;
}

static int parse_int(const char *s, long lo, long hi, long *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

struct progress_state {
    double t0;
    double last;
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void show_progress(uint64_t done, uint64_t total, void *user) {
    struct progress_state *p = user;
    double t = now();
    if (t - p->last < 0.2 && done < total)
        return;
    p->last = t;
    double el = t - p->t0;
    double rate = el > 0 ? (double)done / el : 0;
    double left = rate > 0 && total > done ? (double)(total - done) / rate : 0;
    /* the library counts the document's rows and events: exact, but not bytes */
    fprintf(stderr, "\r%5.1f %%  %6.1f s  %4.0f s left ",
            total > 0 ? 100.0 * (double)done / (double)total : 100.0, el, left);
    fflush(stderr);
}

static void print_error(const struct sx_error *e) {
    if (world_rank != 0 || sx_cli_stop_reported()) /* the signal's line was the one */
        return;
    char where[sizeof e->source + 32] = "";
    const bool named = e->source[0] && strstr(e->text, e->source) == NULL;
    if (e->rank >= 0)
        snprintf(where, sizeof where, " [rank %d%s%s]", e->rank, named ? ", " : "",
                 named ? e->source : "");
    else if (named)
        snprintf(where, sizeof where, " [%s]", e->source);
    say(stderr, "scope-export: error: %s%s", e->text[0] ? e->text : sx_strerror(e->code),
        where);
}

/*
 * An output name that cannot be meant: empty, a directory's ("dir/"), or an
 * existing device, FIFO or socket (-o /dev/null would write /dev/null.json
 * beside it). A usage error (status 2) before anything is read.
 */
static int check_output_name(const char *out) {
    struct stat sb;
    if (out[0] == '\0')
        return usage_error("the output name is empty", NULL);
    if (out[strlen(out) - 1] == '/')
        return usage_error("the output name ends in '/'; name a file in the directory",
                           out);
    if (stat(out, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
        return usage_error("the output exists and is not a regular file (a device, "
                           "FIFO or socket)",
                           out);
    return 0;
}

/* --stats: the export alone, without process and MPI start-up (rank 0). */
static void print_stats(const char *path, double t0) {
    if (world_rank != 0)
        return;
    double el = now() - t0;
    struct stat sb;
    long long bytes = stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
    char how[32];
    if (world == MPI_COMM_NULL)
        snprintf(how, sizeof how, "1 process, no MPI");
    else
        snprintf(how, sizeof how, "%d rank%s", world_size, world_size == 1 ? "" : "s");
    say(stderr, "scope-export: stats: %s: %lld bytes in %.3f s (%.1f MB/s, %s)", path,
        bytes, el, el > 0 ? (double)bytes / el / 1e6 : 0.0, how);
}

/*
 * The JSON text of a written trace document 'path': its size, or for a .gz
 * the length its trailer gives (ISIZE, the length mod 4 GiB: a trace deflates
 * at least fourfold, so the first such length at or above four times the file).
 */
static unsigned long long json_bytes(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0)
        return 0;
    const size_t n = strlen(path);
    if (n < 3 || strcasecmp(path + n - 3, ".gz") != 0 || sb.st_size < 18)
        return (unsigned long long)sb.st_size;
    unsigned char t[4];
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    bool got = fseek(f, -4, SEEK_END) == 0 && fread(t, 1, 4, f) == 4;
    fclose(f);
    if (!got)
        return 0;
    unsigned long long len = (unsigned long long)t[0] | (unsigned long long)t[1] << 8 |
                             (unsigned long long)t[2] << 16 |
                             (unsigned long long)t[3] << 24;
    while (len < 4ULL * (unsigned long long)sb.st_size)
        len += 1ULL << 32;
    return len;
}

/*
 * A Chrome trace or speedscope document larger than the viewers open (about
 * 500 MB of JSON; SCOPE_EXPORT_VIEWER_LIMIT bytes where set): one line on
 * stderr saying so, and which format they open.
 */
static void warn_viewers(const char *path, enum sx_format format) {
    if (world_rank != 0 ||
        (format != SX_FORMAT_CHROME_TRACE && format != SX_FORMAT_SPEEDSCOPE))
        return;
    unsigned long long limit = 500000000ULL;
    const char *env = getenv("SCOPE_EXPORT_VIEWER_LIMIT");
    if (env != NULL && *env != '\0') {
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(env, &end, 10);
        if (errno == 0 && end != env && *end == '\0')
            limit = v;
    }
    const unsigned long long bytes = json_bytes(path);
    if (bytes <= limit)
        return;
    say(stderr,
        "scope-export: warning: %s is %llu bytes (%.1f MB) of JSON, more than trace "
        "viewers open (about %.0f MB); --format perfetto writes a trace they open",
        path, bytes, (double)bytes / 1e6, (double)limit / 1e6);
}

/*
 * The per-rank files of a pstats or flame graph export of 'path': <stem>_rank<N><suffix>
 * written since 'since' (the ranks with calls), each named; their bytes in --stats,
 * timed from 't0'.
 */
static void say_rank_files(const char *path, bool quiet, bool stats, double t0,
                           time_t since) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (dot == base)
        dot = NULL;
    const size_t stem = dot ? (size_t)(dot - path) : strlen(path);
    const char *suffix = dot ? dot : "";
    char *pat = sx_malloc(2 * strlen(path) + 16);
    glob_t g;
    long long bytes = 0;
    if (pat == NULL)
        return;
    /* the stem's own glob characters are escaped, so that only the rank number matches */
    size_t n = 0;
    for (size_t i = 0; i < stem; i++) {
        if (strchr("*?[\\", path[i]) != NULL)
            pat[n++] = '\\';
        pat[n++] = path[i];
    }
    snprintf(pat + n, strlen(path) + 16, "_rank[0-9]*%s", suffix);
    if (glob(pat, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            struct stat sb;
            if (stat(g.gl_pathv[i], &sb) != 0 || sb.st_mtime < since)
                continue; /* an older file of another export */
            bytes += (long long)sb.st_size;
            if (!quiet)
                say(stdout, "Wrote %s", g.gl_pathv[i]);
        }
        globfree(&g);
    }
    free(pat);
    if (stats) {
        double el = now() - t0;
        say(stderr, "scope-export: stats: %s: %lld bytes in %.3f s (%.1f MB/s, %s)", path,
            bytes, el, el > 0 ? (double)bytes / el / 1e6 : 0.0,
            world == MPI_COMM_NULL ? "1 process, no MPI" : "MPI");
    }
}

/* _unique_labels: the k-th repeat of a label becomes "<label> (k)". */
static char **unique_labels(char **labels, size_t n) {
    char **out = sx_calloc(n + 1, sizeof *out);
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t k = 1;
        for (size_t j = 0; j < i; j++)
            k += strcmp(labels[j], labels[i]) == 0;
        size_t len = strlen(labels[i]) + 32;
        out[i] = sx_malloc(len);
        if (out[i] == NULL)
            return out;
        if (k == 1)
            snprintf(out[i], len, "%s", labels[i]);
        else
            snprintf(out[i], len, "%s (%zu)", labels[i], k);
    }
    return out;
}

static int cmd_export(int argc, char **argv, int first) {
    struct sx_options o;
    sx_options_init(&o);
    const char *output = NULL;
    const char **inputs = sx_calloc((size_t)argc + 1, sizeof *inputs);
    const char **inc = sx_calloc((size_t)argc + 1, sizeof *inc);
    const char **exc = sx_calloc((size_t)argc + 1, sizeof *exc);
    int64_t *ranks = NULL;
    size_t nin = 0, ninc = 0, nexc = 0, nranks = 0;
    int quiet = 0, progress = -1, rc = 0, stats = 0, native = 0;
    const char *label = NULL;
    char **labels = NULL;
    char **uniq = NULL;
    char *trace_base = NULL;  /* the output name with a trace suffix added, or NULL */
    bool ranks_nomem = false; /* --ranks ran out of memory on this rank */
    if (!all_passed(inputs != NULL && inc != NULL && exc != NULL, "arguments")) {
        rc = 1;
        goto out;
    }
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
#define NEED_VALUE()                                                                     \
    do {                                                                                 \
        const char *eq = strchr(a, '=');                                                 \
        if (eq != NULL)                                                                  \
            val = eq + 1;                                                                \
        else if (i + 1 < argc)                                                           \
            val = argv[++i];                                                             \
        else {                                                                           \
            rc = usage_error("option needs a value", a);                                 \
            goto parsed;                                                                 \
        }                                                                                \
    } while (0)
#define IS(name) (strcmp(a, name) == 0 || (strncmp(a, name "=", sizeof(name)) == 0))
        long v = 0;
        if (strcmp(a, "-o") == 0 || IS("--output")) {
            NEED_VALUE();
            output = val;
        } else if (IS("--indent")) {
            NEED_VALUE();
            if (parse_int(val, 0, 1000, &v) != 0) {
                rc = usage_error("--indent takes a number from 0 to 1000", val);
                goto parsed;
            }
            o.indent = (int)v;
        } else if (strcmp(a, "--summary") == 0) {
            o.summary = 1;
        } else if (IS("--ranks")) {
            NEED_VALUE();
            free(ranks);
            ranks = NULL;
            const int pr = parse_ranks(val, &ranks, &nranks);
            if (pr == -2) { /* this rank's alone: said below, after the agreement */
                ranks_nomem = true;
                goto parsed;
            }
            if (pr != 0) {
                rc = usage_error("--ranks takes a list like 0,2,5-7", val);
                goto parsed;
            }
        } else if (IS("--include")) {
            NEED_VALUE();
            inc[ninc++] = val;
        } else if (IS("--exclude")) {
            NEED_VALUE();
            exc[nexc++] = val;
        } else if (IS("--gzip-level")) {
            NEED_VALUE();
            if (parse_int(val, 0, 9, &v) != 0) {
                rc = usage_error("--gzip-level takes a number from 0 to 9", val);
                goto parsed;
            }
            o.gzip_level = (int)v;
        } else if (IS("--deflate")) {
            NEED_VALUE();
            if (strcmp(val, "zlib") == 0)
                o.deflate = SX_DEFLATE_ZLIB;
            else if (strcmp(val, "isal") == 0)
                o.deflate = SX_DEFLATE_ISAL;
            else {
                rc = usage_error("--deflate takes zlib or isal", val);
                goto parsed;
            }
        } else if (IS("--block-size")) {
            NEED_VALUE();
            if (parse_int(val, 1024, 1L << 30, &v) != 0) {
                rc = usage_error("--block-size takes bytes from 1024 to 1073741824", val);
                goto parsed;
            }
            o.block_bytes = (size_t)v;
        } else if (IS("--format")) {
            NEED_VALUE();
            if (strcmp(val, "json") == 0)
                o.format = SX_FORMAT_JSON;
            else if (strcmp(val, "chrome-trace") == 0)
                o.format = SX_FORMAT_CHROME_TRACE;
            else if (strcmp(val, "speedscope") == 0)
                o.format = SX_FORMAT_SPEEDSCOPE;
            else if (strcmp(val, "region-statistics") == 0)
                o.format = SX_FORMAT_REGION_STATISTICS;
            else if (strcmp(val, "prof") == 0)
                o.format = SX_FORMAT_PROF;
            else if (strcmp(val, "flamegraph") == 0)
                o.format = SX_FORMAT_FLAMEGRAPH;
            else if (strcmp(val, "perfetto") == 0)
                o.format = SX_FORMAT_PERFETTO;
            else if (strcmp(val, "otf2") == 0)
                o.format = SX_FORMAT_OTF2;
            else {
                rc = usage_error("--format takes json, chrome-trace, speedscope, "
                                 "region-statistics, prof, flamegraph, perfetto or otf2",
                                 val);
                goto parsed;
            }
        } else if (IS("--width")) {
            NEED_VALUE();
            if (parse_int(val, 100, 100000, &v) != 0) {
                rc = usage_error("--width takes pixels from 100 to 100000", val);
                goto parsed;
            }
            o.width = (int)v;
        } else if (strcmp(a, "--no-call-paths") == 0) {
            o.no_call_paths = 1;
        } else if (strcmp(a, "--progress") == 0) {
            progress = 1;
        } else if (strcmp(a, "--stats") == 0) {
            stats = 1;
        } else if (strcmp(a, "--native") == 0) {
            native = 1;
        } else if (IS("--label")) {
            NEED_VALUE();
            label = val;
        } else if (strcmp(a, "--no-progress") == 0) {
            progress = 0;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            rc = usage_error("unknown option", a);
            goto parsed;
        } else {
            inputs[nin++] = a;
        }
#undef NEED_VALUE
#undef IS
    }
parsed:
    /* NOTE: collective. Parsing is the same on every rank, but for running out of memory
     * in --ranks: agree on that first (rank 0 names the rank), then on a usage error,
     * before the first collective of the export. */
    if (!all_passed(!ranks_nomem, "arguments")) {
        rc = 1;
        goto out;
    }
    if (first_failed(rc == 0) >= 0) {
        rc = rc != 0 ? rc : 2;
        goto out;
    }
    if (nin == 0) {
        rc = usage_error("no input file given", NULL);
        goto out;
    }
    if (output == NULL) {
        rc = usage_error("no output given (-o OUT.json or OUT.json.gz)", NULL);
        goto out;
    }
    if ((rc = check_output_name(output)) != 0)
        goto out;
    o.include = ninc ? inc : NULL;
    o.n_include = ninc;
    o.exclude = nexc ? exc : NULL;
    o.n_exclude = nexc;
    o.ranks = ranks;
    o.n_ranks = nranks;
    struct progress_state ps = {now(), 0};
    if (progress < 0)
        progress = isatty(STDERR_FILENO);
    if (progress && !quiet && world_rank == 0) {
        o.progress = show_progress;
        o.progress_user = &ps;
    }
    if (native) { /* one document of all the inputs */
        struct sx_error ne;
        sx_cli_input(inputs[0]);
        sx_cli_output(output);
        enum sx_status nst = sx_export_native(world, inputs, nin, output, label, &o, &ne);
        alarm(0); /* it ended: no deadline for it */
        sx_cli_output(NULL);
        if (nst != SX_OK) {
            print_error(&ne);
            rc = ne.code == SX_ERR_USAGE ? 2 : 1;
        } else {
            if (!quiet && world_rank == 0)
                say(stdout, "Wrote %s", output);
            if (!quiet)
                warn_viewers(output, o.format);
            if (stats)
                print_stats(output, ps.t0);
        }
        goto out;
    }
    if (label != NULL) {
        rc = usage_error("--label applies to --native", NULL);
        goto out;
    }

    /* A trace output name without a suffix gets the reference's default one; an OTF2
     * archive's anchor always ends in .otf2 (the library adds it too). */
    const char *base_name = strrchr(output, '/') ? strrchr(output, '/') + 1 : output;
    const size_t out_len = strlen(output);
    if (((o.format == SX_FORMAT_CHROME_TRACE || o.format == SX_FORMAT_SPEEDSCOPE ||
          o.format == SX_FORMAT_PROF || o.format == SX_FORMAT_FLAMEGRAPH ||
          o.format == SX_FORMAT_PERFETTO) &&
         strchr(base_name, '.') == NULL) ||
        (o.format == SX_FORMAT_OTF2 &&
         (out_len < 5 || strcmp(output + out_len - 5, ".otf2") != 0))) {
        const char *sfx = o.format == SX_FORMAT_CHROME_TRACE ? ".trace.json"
                          : o.format == SX_FORMAT_PROF       ? ".prof"
                          : o.format == SX_FORMAT_FLAMEGRAPH ? ".svg"
                          : o.format == SX_FORMAT_PERFETTO   ? ".pftrace"
                          : o.format == SX_FORMAT_OTF2       ? ".otf2"
                                                             : ".speedscope.json";
        trace_base = sx_malloc(strlen(output) + strlen(sfx) + 1);
        if (!all_passed(trace_base != NULL, "the output name")) {
            rc = 1;
            goto out;
        }
        snprintf(trace_base, strlen(output) + strlen(sfx) + 1, "%s%s", output, sfx);
    }
    labels = sx_calloc(nin + 1, sizeof *labels);
    struct sx_error e;
    if (!all_passed(labels != NULL, "labels")) {
        rc = 1;
        goto out;
    }
    if (nin > 1) {
        for (size_t k = 0; k < nin; k++) {
            sx_cli_input(inputs[k]);
            if (sx_run_label(world, inputs[k], &labels[k], &e) != SX_OK) {
                print_error(&e); /* an agreed error: every rank stops here */
                rc = 1;
                goto out;
            }
        }
        uniq = unique_labels(labels, nin);
        bool ok = uniq != NULL;
        for (size_t k = 0; ok && k < nin; k++)
            ok = uniq[k] != NULL;
        if (!all_passed(ok, "labels")) {
            rc = 1;
            goto out;
        }
    }
    for (size_t k = 0; k < nin; k++) {
        char *path =
            sx_output_path(trace_base ? trace_base : output, uniq ? uniq[k] : NULL, nin);
        o.label = o.format != SX_FORMAT_JSON && uniq ? uniq[k] : NULL;
        if (!all_passed(path != NULL, inputs[k])) {
            free(path);
            rc = 1;
            break;
        }
        ps.t0 = now();
        const time_t started = time(NULL);
        sx_cli_input(inputs[k]);
        sx_cli_output(path);
        enum sx_status st = sx_export(world, inputs[k], path, &o, &e);
        alarm(0);            /* it ended: no deadline for it */
        sx_cli_output(NULL); /* (before 'path' is freed) */
        if (o.progress != NULL)
            fprintf(stderr, "\n");
        if (st != SX_OK) {
            print_error(&e);
            rc = st == SX_ERR_USAGE ? 2 : 1;
            free(path);
            break;
        }
        if (o.format == SX_FORMAT_PROF || o.format == SX_FORMAT_FLAMEGRAPH) {
            /* one file a rank with calls, named <stem>_rank<N><suffix>, not 'path' */
            if (world_rank == 0)
                say_rank_files(path, quiet, stats, ps.t0, started);
            free(path);
            continue;
        }
        if (!quiet && world_rank == 0)
            say(stdout, "Wrote %s", path);
        if (!quiet)
            warn_viewers(path, o.format);
        if (stats)
            print_stats(path, ps.t0);
        free(path);
    }
out:
    for (size_t k = 0; k < nin; k++) {
        if (labels != NULL)
            free(labels[k]);
        if (uniq != NULL)
            free(uniq[k]);
    }
    free(labels);
    free(uniq);
    free(trace_base);
    free(inputs);
    free(inc);
    free(exc);
    free(ranks);
    return rc;
}

static int cmd_validate(int argc, char **argv, int first) {
    int rc = 0, n = 0;
    for (int i = first; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1] != '\0')
            return usage_error("unknown option", argv[i]);
        n++;
    }
    if (n == 0)
        return usage_error("no file to validate", NULL);
    for (int i = first; i < argc; i++) {
        struct sx_error e;
        memset(&e, 0, sizeof e);
        e.rank = -1;
        if (world_rank == 0)
            sx_cli_input(argv[i]);
        /* every rank reads a part of a large plain document */
        const enum sx_status st = sx_validate_mpi(world, argv[i], &e);
        if (world_rank != 0)
            continue;
        if (st == SX_OK) {
            say(stdout, "%s: OK", argv[i]);
        } else {
            say(stdout, "%s: INVALID: %s", argv[i], e.text);
            rc = 1;
        }
    }
    rank0_bcast_rc(&rc);
    return rc;
}

static bool is_quiet(const char *a) {
    return strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0;
}

static int cmd_import(int argc, char **argv, int first) {
    const char *in = NULL, *out = NULL;
    bool quiet = false;
    for (int i = first; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (i + 1 >= argc)
                return usage_error("option needs a value", argv[i]);
            out = argv[++i];
        } else if (is_quiet(argv[i])) {
            quiet = true;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return usage_error("unknown option", argv[i]);
        } else if (in == NULL) {
            in = argv[i];
        } else {
            return usage_error("import takes one input", argv[i]);
        }
    }
    if (in == NULL || out == NULL)
        return usage_error("usage: scope-export import IN.json[.gz] -o OUT.h5", NULL);
    int rc = check_output_name(out);
    if (rc != 0)
        return rc;
    struct sx_error e;
    memset(&e, 0, sizeof e);
    e.rank = -1;
    if (world_rank == 0) {
        sx_cli_input(in);
        if (sx_import(in, out, &e) != SX_OK) {
            print_error(&e);
            rc = e.code == SX_ERR_USAGE ? 2 : 1;
        } else if (!quiet) {
            say(stdout, "Wrote %s", out);
        }
    }
    rank0_bcast_rc(&rc);
    return rc;
}

static int cmd_import_native(int argc, char **argv, int first) {
    const char *out = NULL, *label = NULL;
    const char **in = sx_calloc((size_t)argc + 1, sizeof *in);
    size_t n = 0;
    int rc = 0;
    bool quiet = false;
    if (in == NULL)
        return 1;
    for (int i = first; i < argc; i++) {
        const bool o = strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0;
        if (o || strcmp(argv[i], "--label") == 0) {
            if (i + 1 >= argc) {
                rc = usage_error("option needs a value", argv[i]);
                goto out;
            }
            *(o ? &out : &label) = argv[++i];
        } else if (is_quiet(argv[i])) {
            quiet = true;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            rc = usage_error("unknown option", argv[i]);
            goto out;
        } else {
            in[n++] = argv[i];
        }
    }
    if (n == 0 || out == NULL) {
        rc = usage_error(
            "usage: scope-export import-native INPUT... -o OUT.h5 [--label L]", NULL);
        goto out;
    }
    if ((rc = check_output_name(out)) != 0)
        goto out;
    struct sx_error e;
    sx_cli_input(in[0]);
    if (sx_import_native(world, in, n, out, label, &e) != SX_OK) {
        print_error(&e);
        rc = e.code == SX_ERR_USAGE ? 2 : 1;
    } else if (world_rank == 0 && !quiet) {
        say(stdout, "Wrote %s", out);
    }
out:
    free(in);
    return rc;
}

/* Whether the arguments after the subcommand ask for help. */
static bool asks_help(int argc, char **argv) {
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return true;
    return false;
}

int main(int argc, char **argv) {
    /* Before any HDF5 call: HDF5 runs no clean-up of its own from atexit (under MPI it
     * still does in MPI_Finalize). Every file we write is closed explicitly; what can be
     * left at exit is a file whose close failed or ids of a damaged input, and HDF5's
     * exit handler crashed on the first and printed "infinite loop closing library"
     * for the second. The command owns its process; the library never does this. */
    H5dont_atexit();
    /* HDF5 also tidies up inside MPI_Finalize, and prints its "infinite loop closing
     * library" there only while its automatic error printing is on: the library reads
     * with it off around each call, the command keeps it off throughout. */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    /* A size limit (ulimit -f) fails the write with EFBIG, reported and cleaned up
     * like a full disk, instead of killing the process without a word. The command
     * owns its process; the library never changes a disposition. */
    signal(SIGXFSZ, SIG_IGN);
    /* OTF2's error callback is process-wide too: quiet here, left alone by the library.
     */
    sx_otf2_quiet_errors();
    if (want_mpi()) {
        /* FUNNELED: the output's writer thread makes no MPI call */
        int level = MPI_THREAD_SINGLE;
        if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &level) != MPI_SUCCESS) {
            fprintf(stderr, "scope-export: error: MPI_Init failed\n");
            return 1;
        }
        world = MPI_COMM_WORLD;
        MPI_Comm_rank(world, &world_rank);
        MPI_Comm_size(world, &world_size);
    }
    sx_cli_signals_install(world_rank);
    if (world_size > 1)
        sx_cli_crash_once();
#ifdef SX_TEST_FAULTS
    if (sx_fault_from_env(world_rank) != 0)
        return 2;
#endif

    int rc = 0;
    const char *cmd = argc > 1 ? argv[1] : NULL;
    if (cmd == NULL) {
        rc = usage_error("no command given", NULL);
    } else if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 ||
               strcmp(cmd, "help") == 0) {
        if (world_rank == 0)
            fputs(usage_text, stdout);
    } else if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        if (world_rank == 0)
            printf("scope-export %s\n", sx_version());
    } else if (asks_help(argc, argv)) { /* scope-export SUBCOMMAND --help */
        if (world_rank == 0)
            fputs(usage_text, stdout);
    } else if (strcmp(cmd, "export") == 0 && argc > 2 && sx_cli_sp_form(argv[2])) {
        rc = sx_cli_sp_export(world, world_rank, argc, argv,
                              2); /* scope-profiler's form */
    } else if (strcmp(cmd, "export") == 0) {
        rc = cmd_export(argc, argv, 2);
    } else if (strcmp(cmd, "validate") == 0) {
        rc = cmd_validate(argc, argv, 2);
    } else if (strcmp(cmd, "import-native") == 0) {
        rc = cmd_import_native(argc, argv, 2);
    } else if (strcmp(cmd, "import") == 0) {
        rc = cmd_import(argc, argv, 2);
    } else {
        for (int i = 1; i < argc; i++)
            if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
                if (world_rank == 0)
                    fputs(usage_text, stdout);
                if (world != MPI_COMM_NULL)
                    MPI_Finalize();
                return 0;
            }
        rc = cmd_export(argc, argv, 1); /* the bare form: scope-export IN -o OUT */
    }
    if (world != MPI_COMM_NULL)
        MPI_Finalize();
    return rc;
}
