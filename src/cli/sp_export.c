/* sp_export.c - scope-profiler's own `export KIND FILES... -o DIR` command line */
#include "sp_export.h"

#include "scope_export.h"
#include "signals.h"

#include "cli_support.h"
#include "internal.h"

#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *const kinds[] = {"json", "chrome-trace", "speedscope",
                                    "prof", "plot-data",    "flamegraph"};

bool sx_cli_sp_form(const char *arg) {
    struct stat sb;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(arg, kinds[i]) == 0)
            return stat(arg, &sb) != 0;
    return false;
}

/* What one command line asks for. */
struct sp_args {
    const char *kind;
    const char *dir;
    char **files; /* after glob expansion, first occurrences (owned) */
    size_t nfiles;
    const char **labels;
    size_t nlabels;
    const char **inc, **exc; /* NULL: not given */
    size_t ninc, nexc;
    int64_t *ranks; /* sorted, unique; NULL: not given */
    size_t nranks;
    bool gzip, no_call_paths;
    int indent, width;
};

static int sp_usage(int rank, const char *kind, const char *msg, const char *arg) {
    if (rank == 0)
        fprintf(stderr, "scope-export export %s: error: %s%s%s\n", kind, msg,
                arg ? ": " : "", arg ? arg : "");
    return 2;
}

/* parse()'s status when this rank ran out of memory (the others may not have) */
#define SP_NOMEM 3

/*
 * NOTE: collective over 'world'. Whether every rank has 'ok' (false: it ran out of
 * memory for the command's own arguments or names); rank 0 names the first rank that
 * did not. Parsing is the same on every rank but for that: the ranks agree on it before
 * they part ways, so that none waits in an export the others left.
 */
static bool all_have(MPI_Comm world, int rank, bool ok) {
    int mine = ok ? INT_MAX : rank, first = mine;
    if (world != MPI_COMM_NULL &&
        MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, world) != MPI_SUCCESS)
        first = rank;
    if (first != INT_MAX && rank == 0)
        fprintf(stderr, "scope-export: error: arguments: out of memory [rank %d]\n",
                first);
    return first == INT_MAX;
}

static int add_file(struct sp_args *a, const char *f) {
    for (size_t i = 0; i < a->nfiles; i++)
        if (strcmp(a->files[i], f) == 0)
            return 0; /* the first occurrence keeps its place */
    char *c = sx_strdup(f);
    char **nf = sx_realloc(a->files, (a->nfiles + 1) * sizeof *nf);
    if (c == NULL || nf == NULL) {
        free(c);
        if (nf != NULL)
            a->files = nf;
        return -1;
    }
    a->files = nf;
    a->files[a->nfiles++] = c;
    return 0;
}

static int cmp_str(const void *x, const void *y) {
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* expand_file_patterns: a pattern gives its matching regular files, sorted. */
static int expand(struct sp_args *a, const char *arg, int rank) {
    if (strpbrk(arg, "*?[") == NULL)
        return add_file(a, arg) == 0 ? 0 : SP_NOMEM;
    glob_t g;
    memset(&g, 0, sizeof g);
    size_t n = 0;
    int st = glob(arg, 0, NULL, &g);
    char **m = st == 0 ? sx_calloc(g.gl_pathc + 1, sizeof *m) : NULL;
    for (size_t i = 0; m != NULL && i < g.gl_pathc; i++) {
        struct stat sb;
        if (stat(g.gl_pathv[i], &sb) == 0 && S_ISREG(sb.st_mode))
            m[n++] = g.gl_pathv[i];
    }
    int rc = 0;
    if (st == 0 && m == NULL) {
        rc = SP_NOMEM;
    } else if (n == 0) {
        rc = sp_usage(rank, a->kind, "No files matched pattern", arg);
    } else {
        qsort(m, n, sizeof *m, cmp_str);
        for (size_t i = 0; i < n && rc == 0; i++)
            rc = add_file(a, m[i]) == 0 ? 0 : SP_NOMEM;
    }
    free(m);
    if (st == 0)
        globfree(&g);
    return rc;
}

/* "1-3,5": appended to a->ranks. */
static int add_ranks(struct sp_args *a, const char *s) {
    const char *p = s;
    do {
        char *end = NULL;
        errno = 0;
        long long lo = strtoll(p, &end, 10), hi = lo;
        if (end == p || errno)
            return -1;
        p = end;
        if (*p == '-') {
            hi = strtoll(p + 1, &end, 10);
            if (end == p + 1 || errno || hi - lo > 10000000)
                return -1;
            p = end;
        }
        for (long long r = lo; r <= hi; r++) {
            int64_t *nr = sx_realloc(a->ranks, (a->nranks + 1) * sizeof *nr);
            if (nr == NULL)
                return -2;
            a->ranks = nr;
            a->ranks[a->nranks++] = r;
        }
    } while (*p == ',' && *++p != '\0');
    return *p == '\0' ? 0 : -1;
}

static int cmp_i64(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Option 'a' with a value: "--opt V" or "--opt=V". */
static bool value_opt(const char *a, const char *name, char **argv, int argc, int *i,
                      const char **val) {
    size_t n = strlen(name);
    if (strncmp(a, name, n) == 0 && a[n] == '=') {
        *val = a + n + 1;
        return true;
    }
    if (strcmp(a, name) != 0)
        return false;
    *val = *i + 1 < argc ? argv[++*i] : NULL;
    return true;
}

/* Values of an nargs="*" option: the arguments after it that are not options. */
static size_t take_list(char **argv, int argc, int *i, const char ***out) {
    size_t n = 0;
    *out = (const char **)&argv[*i + 1];
    while (*i + 1 < argc && argv[*i + 1][0] != '-') {
        ++*i;
        n++;
    }
    return n;
}

static int parse(struct sp_args *a, int rank, int argc, char **argv, int first) {
    a->kind = argv[first];
    a->indent = -1;
    a->labels = sx_calloc((size_t)argc + 1, sizeof *a->labels);
    if (a->labels == NULL)
        return SP_NOMEM;
    const bool json = strcmp(a->kind, "json") == 0;
    const bool paths = strcmp(a->kind, "prof") == 0 || strcmp(a->kind, "flamegraph") == 0;
    for (int i = first + 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        if (value_opt(arg, "-o", argv, argc, &i, &val) ||
            value_opt(arg, "--output", argv, argc, &i, &val)) {
            if (val == NULL)
                return sp_usage(rank, a->kind,
                                "argument -o/--output: expected one argument", NULL);
            a->dir = val;
        } else if (value_opt(arg, "--label", argv, argc, &i, &val)) {
            if (val == NULL)
                return sp_usage(rank, a->kind, "argument --label: expected one argument",
                                NULL);
            a->labels[a->nlabels++] = val;
        } else if (strcmp(arg, "--include") == 0 || strcmp(arg, "-i") == 0) {
            a->ninc = take_list(argv, argc, &i, &a->inc);
        } else if (strcmp(arg, "--exclude") == 0 || strcmp(arg, "-e") == 0) {
            a->nexc = take_list(argv, argc, &i, &a->exc);
        } else if (strcmp(arg, "--ranks") == 0 || strcmp(arg, "-r") == 0) {
            const char **specs = NULL;
            size_t n = take_list(argv, argc, &i, &specs);
            free(a->ranks);
            a->ranks = NULL;
            a->nranks = 0;
            for (size_t k = 0; k < n; k++) {
                const int ar = add_ranks(a, specs[k]);
                if (ar == -2)
                    return SP_NOMEM;
                if (ar != 0)
                    return sp_usage(rank, a->kind, "invalid rank specification",
                                    specs[k]);
            }
            if (n == 0) { /* given empty: as not given */
                free(a->ranks);
                a->ranks = NULL;
            }
        } else if (json && strcmp(arg, "--gzip") == 0) {
            a->gzip = true;
        } else if (json && value_opt(arg, "--indent", argv, argc, &i, &val)) {
            char *end = NULL;
            long v = val ? strtol(val, &end, 10) : -1;
            if (val == NULL || *end != '\0' || v < 0 || v > 1000)
                return sp_usage(rank, a->kind, "argument --indent: invalid int value",
                                val);
            a->indent = (int)v;
        } else if (strcmp(a->kind, "flamegraph") == 0 &&
                   value_opt(arg, "--width", argv, argc, &i, &val)) {
            char *end = NULL;
            long v = val ? strtol(val, &end, 10) : -1;
            if (val == NULL || *end != '\0' || v < 100 || v > 100000)
                return sp_usage(rank, a->kind, "argument --width: invalid int value",
                                val);
            a->width = (int)v;
        } else if (paths && strcmp(arg, "--no-call-paths") == 0) {
            a->no_call_paths = true;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            return sp_usage(rank, a->kind, "unrecognized arguments", arg);
        } else {
            int rc = expand(a, arg, rank);
            if (rc != 0)
                return rc;
        }
    }
    if (a->nfiles == 0)
        return sp_usage(rank, a->kind, "the following arguments are required", "files");
    if (a->dir == NULL)
        return sp_usage(rank, a->kind, "the following arguments are required",
                        "-o/--output");
    if (a->nlabels > 0 && a->nlabels != a->nfiles) {
        char msg[128];
        snprintf(msg, sizeof msg,
                 "--label given %zu time(s) for %zu file(s); pass one per "
                 "file, in order.",
                 a->nlabels, a->nfiles);
        return sp_usage(rank, a->kind, msg, NULL);
    }
    if (a->ranks != NULL) { /* sorted(set(ranks)) */
        qsort(a->ranks, a->nranks, sizeof *a->ranks, cmp_i64);
        size_t n = 0;
        for (size_t k = 0; k < a->nranks; k++)
            if (n == 0 || a->ranks[n - 1] != a->ranks[k])
                a->ranks[n++] = a->ranks[k];
        a->nranks = n;
    }
    return 0;
}

static void print_error(int rank, const struct sx_error *e) {
    if (rank != 0)
        return;
    fprintf(stderr, "scope-export: error: %s",
            e->text[0] ? e->text : sx_strerror(e->code));
    if (e->rank >= 0)
        fprintf(stderr, " [rank %d]", e->rank);
    fprintf(stderr, "\n");
}

/* os.path.join(dir, name) */
static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = sx_malloc(n);
    if (p != NULL)
        snprintf(p, n, "%s%s%s", dir,
                 dir[0] != '\0' && dir[strlen(dir) - 1] != '/' ? "/" : "", name);
    return p;
}

/* A file of the run was written by this export: it is there, and not older than 't0'. */
static bool written_since(const char *path, time_t t0) {
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_mtime >= t0;
}

int sx_cli_sp_export(MPI_Comm world, int rank, int argc, char **argv, int first) {
    struct sp_args a;
    struct sx_options o;
    struct sx_error e;
    char **labels = NULL, **saved = NULL;
    size_t nsaved = 0;
    char *base = NULL;
    memset(&a, 0, sizeof a);
    sx_options_init(&o);
    int rc = parse(&a, rank, argc, argv, first);
    /* NOTE: collective (all_have): out of memory on any rank first, then a usage error,
     * which every rank has alike */
    if (!all_have(world, rank, rc != SP_NOMEM)) {
        rc = 1;
        goto out;
    }
    if (rc != 0)
        goto out;
    if (strcmp(a.kind, "plot-data") == 0 && a.nfiles > 1) {
        rc = sp_usage(rank, a.kind, "plot-data of several files is not supported", NULL);
        goto out;
    }
    if (strcmp(a.kind, "json") == 0 && a.nlabels > 0) {
        rc = sp_usage(rank, a.kind, "--label is not supported with json", NULL);
        goto out;
    }
    const char *name = "profile.json";
    if (strcmp(a.kind, "json") == 0) {
        o.format = SX_FORMAT_JSON;
        o.indent = a.indent;
        name = a.gzip ? "profile.json.gz" : "profile.json";
    } else if (strcmp(a.kind, "chrome-trace") == 0) {
        o.format = SX_FORMAT_CHROME_TRACE;
        name = "profile.trace.json";
    } else if (strcmp(a.kind, "speedscope") == 0) {
        o.format = SX_FORMAT_SPEEDSCOPE;
        name = "profile.speedscope.json";
    } else if (strcmp(a.kind, "prof") == 0) {
        o.format = SX_FORMAT_PROF;
        o.no_call_paths = a.no_call_paths;
        name = "profile.prof";
    } else if (strcmp(a.kind, "flamegraph") == 0) {
        o.format = SX_FORMAT_FLAMEGRAPH; /* ours: frames by call path, not flameprof's */
        o.width = a.width;
        name = "flamegraph.svg";
    } else {
        o.format = SX_FORMAT_REGION_STATISTICS;
        name = "region_statistics.json";
    }
    o.include = a.inc;
    o.n_include = a.inc ? a.ninc : 0;
    o.exclude = a.exc;
    o.n_exclude = a.exc ? a.nexc : 0;
    o.ranks = a.ranks;
    o.n_ranks = a.nranks;
    base = join(a.dir, name);
    labels = sx_calloc(a.nfiles + 1, sizeof *labels);
    saved = sx_calloc(64 * (a.nfiles + 1), sizeof *saved);
    bool have = base != NULL && labels != NULL && saved != NULL;
    for (size_t k = 0; have && a.nlabels > 0 && k < a.nfiles; k++)
        have = (labels[k] = sx_strdup(a.labels[k])) != NULL;
    if (!all_have(world, rank, have)) { /* NOTE: collective */
        rc = 1;
        goto out;
    }
    /* the runs' labels: --label, else each run's own, made unique */
    for (size_t k = 0; a.nlabels == 0 && k < a.nfiles; k++) {
        if (sx_run_label(world, a.files[k], &labels[k], &e) != SX_OK) {
            print_error(rank, &e);
            rc = 1;
            goto out;
        }
    }
    for (size_t k = 0; k < a.nfiles; k++) {
        size_t rep = 1;
        for (size_t j = 0; j < k; j++)
            rep += strcmp(labels[j], labels[k]) == 0;
        char uniq[1100];
        snprintf(uniq, sizeof uniq, rep > 1 ? "%s (%zu)" : "%s", labels[k], rep);
        char *path =
            a.nfiles > 1 ? sx_output_path(base, uniq, a.nfiles) : sx_strdup(base);
        if (!all_have(world, rank, path != NULL)) { /* NOTE: collective */
            free(path);
            rc = 1;
            goto out;
        }
        o.label = o.format != SX_FORMAT_JSON ? uniq : NULL;
        const time_t t0 = time(NULL) - 1;
        sx_cli_input(a.files[k]);
        if (sx_export(world, a.files[k], path, &o, &e) != SX_OK) {
            print_error(rank, &e);
            rc = e.code == SX_ERR_USAGE ? 2 : 1;
            free(path);
            goto out;
        }
        if (o.format != SX_FORMAT_PROF && o.format != SX_FORMAT_FLAMEGRAPH) {
            saved[nsaved++] = path;
            continue;
        }
        /* <stem>_rank<N>.prof (.svg) of each selected rank that had calls */
        const int64_t zero = 0;
        const int64_t *rk = a.ranks ? a.ranks : &zero;
        const size_t nr = a.ranks ? a.nranks : 1;
        for (size_t r = 0; r < nr && nsaved + 1 < 64 * (a.nfiles + 1); r++) {
            char *dot = strrchr(path, '.');
            size_t len = strlen(path) + 32;
            char *f = sx_malloc(len);
            if (f == NULL)
                break;
            snprintf(f, len, "%.*s_rank%" PRId64 "%s", (int)(dot - path), path, rk[r],
                     dot);
            if (written_since(f, t0))
                saved[nsaved++] = f;
            else
                free(f);
        }
        free(path);
    }
    if (rank == 0) {
        printf("Outputs saved to:");
        for (size_t k = 0; k < nsaved; k++)
            printf("\n  %s", saved[k]);
        printf("\n");
        if (nsaved > 0 && o.format == SX_FORMAT_PROF)
            printf("\nView a .prof file with: snakeviz %s\n", saved[0]);
        if (nsaved > 0 && o.format == SX_FORMAT_JSON)
            printf("\nRead one back with: scope-profiler inspect %s\n", saved[0]);
        if (nsaved > 0 && o.format == SX_FORMAT_SPEEDSCOPE)
            printf(
                "\nView %s at https://www.speedscope.app (or: npx speedscope <file>)\n",
                saved[0]);
        if (nsaved > 0 && o.format == SX_FORMAT_FLAMEGRAPH)
            printf("\nOpen %s in a browser, or inline it in a page to keep its per-frame "
                   "tooltips\n",
                   saved[0]);
        /* scope-profiler's own line, word for word (chrome://tracing is a disabled page
         * in current Chromium; our --help and man page name the viewers that work) */
        if (nsaved > 0 && o.format == SX_FORMAT_CHROME_TRACE)
            printf("\nOpen %s with https://ui.perfetto.dev or chrome://tracing\n",
                   saved[0]);
        fflush(stdout);
    }
out:
    for (size_t k = 0; labels != NULL && k < a.nfiles; k++)
        free(labels[k]);
    for (size_t k = 0; k < nsaved; k++)
        free(saved[k]);
    for (size_t k = 0; k < a.nfiles; k++)
        free(a.files[k]);
    free(a.files);
    free(a.labels);
    free(a.ranks);
    free(labels);
    free(saved);
    free(base);
    return rc;
}
