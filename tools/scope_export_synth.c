/* scope_export_synth.c - write synthetic scope-profiler runs (schema 3) for tests and
 * benchmarks */
#include "h5_write.h"
#include "json_value.h"
#include "json_write.h"
#include "mpi_util.h"
#include "run.h"

#include "perf_events.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Everything is derived from --seed through splitmix64, so the same options
 * give the same file. Events are produced and written in pieces of PIECE
 * per row: memory stays bounded whatever --events is.
 *
 * Under mpirun with P > 1 processes, all of them write the one file through
 * MPI-IO (sx_h5w_create_mpi): every process builds the same plan (rows,
 * counts, names; it is small and deterministic), and process q generates and
 * writes the events of the file ranks k with k mod P == q. Each row has its
 * own PRNG stream, stream(seed, 2, row), consumed in the same pieces in both
 * modes, so a row's values, and the summary statistics computed from its
 * pieces, do not depend on which process or how many produce them: the
 * file holds the same data as a serial run.
 */

#define PIECE 65536u
#define META_ROW_MAX 100000u    /* rows with more calls get "[]" (no metadata) */
#define META_TOTAL_MAX 2000000u /* bound on the metadata text kept for the index */
#define T0 1700000000000000000LL

static const char usage_text[] =
    "usage: scope-export-synth [options] OUTPUT.h5\n"
    "Write a synthetic scope-profiler run (HDF5 schema 3, scope-profiler's layout).\n"
    "A generator of test and benchmark input for scope-export, deterministic from\n"
    "--seed; runs under mpirun in parallel. Not needed to export real runs.\n"
    "  --ranks N          file ranks (default 2)\n"
    "  --regions R        regions (default 4); per-rank region sets and orders differ\n"
    "  --events E         total events over all rows (default 1000)\n"
    "  --skew F           fraction 0..1 of all events in one row (default 0: even "
    "+-50%)\n"
    "  --empty-ranks      ranks 1, 4, 7, ... record nothing (no rows, lanes or groups)\n"
    "  --zero-rows        keep rows that got no events (count 0), and make every 5th\n"
    "                     row of a rank one (default: a row exists only with calls)\n"
    "  --seed S           PRNG seed (default 1)\n"
    "  --strings vlen|fixed   index strings as vlen, or NULLPAD fixed-length like the\n"
    "                     parallel writer (default vlen)\n"
    "  --columns LIST     optional event columns, comma separated: gpu,call,parent,\n"
    "                     thread,task,await,meta, or all, or none (default none)\n"
    "  --lanes            thread_table and task_table\n"
    "  --likwid           rank<N>/likwid groups (with NaN and Inf values)\n"
    "  --lineprof         rank<N>/line_profile groups (12 records on rank 0)\n"
    "  --perf             rank<N>/perf_events groups: on the rank with data number i,\n"
    "                     region names 0 and 1 (j) count cycles = 1000000 (i+1) + j,\n"
    "                     instructions = 2000000 (i+1) + j in calls = 10 i + j + 1\n"
    "  --aggregate        storage_layout \"aggregate\" (no events)\n"
    "  --nest             calls nest as a program's do: a rank's rows form a\n"
    "                     binary call tree (row m inside row (m-1)/2, siblings side\n"
    "                     by side), the Nth call of each row inside the Nth call of\n"
    "                     its parent row: a few call paths per row, not one per call\n"
    "  --chunk N          chunked (resizable) event columns of N events\n"
    "  --deflate L        shuffle + deflate level L (1..9) on event columns\n"
    "  --unicode          non-ASCII region names, tags, metadata and lane names\n"
    "  -v, --verbose      print a summary line\n"
    "  -h, --help         this text\n";

struct opts {
    long ranks, regions;
    uint64_t events;
    double skew;
    bool empty_ranks;
    bool zero_rows;
    uint64_t seed;
    bool fixed;
    unsigned cols;
    bool meta;
    bool lanes, likwid, lineprof, aggregate, unicode, verbose, perf, nest;
    uint64_t chunk;
    int deflate;
    const char *out;
};

/* ------------------------------------------------------------------ */
/* PRNG                                                               */

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s) { return (double)(splitmix64(s) >> 11) * 0x1.0p-53; }

static uint64_t below(uint64_t *s, uint64_t n) { return n ? splitmix64(s) % n : 0; }

/* A stream for one purpose ('tag') of one object ('i'), independent of the others. */
static uint64_t stream(uint64_t seed, uint64_t tag, uint64_t i) {
    uint64_t s = seed ^ (tag * 0xd1b54a32d192ed03ULL);
    splitmix64(&s);
    s ^= i * 0x8cb92ba72f3d8dd7ULL;
    splitmix64(&s);
    return s;
}

/* ------------------------------------------------------------------ */
/* Names and strings                                                  */

static char *const ascii_names[] = {(char[]){"main"},          (char[]){"solve"},
                                    (char[]){"assemble"},      (char[]){"io/write"},
                                    (char[]){"mpi_allreduce"}, (char[]){"kernel.step"},
                                    (char[]){"precondition"},  (char[]){"halo exchange"}};
static char *const unicode_names[] = {
    (char[]){"main"},
    (char[]){"r\xc3\xa9solution"},        /* résolution */
    (char[]){"\xe8\xa8\x88\xe7\xae\x97"}, /* 計算 */
    (char[]){"\xce\xa9mega/step"},        /* Ωmega/step */
    (char[]){"\xf0\x9f\x9a\x80launch"},   /* 🚀launch */
    (char[]){"na\xc3\xafve caf\xc3\xa9"}, /* naïve café */
    (char[]){"\xd0\xb8\xd0\xbe write"},   /* ио write */
    (char[]){"halo exchange"}};
#define NBASE 8

static char file_a[] = "solver.py", file_b[] = "src/kernels/step.py";
static char file_u[] = "m\xc3\xb6"
                       "dule_\xc3\xbc.py"; /* mödule_ü.py */
static char text_a[] = "with profile(\"solve\"):", text_u[] = "# \xe2\x88\x91 loop";
static char tag_golden[] = "golden", tag_io[] = "io", tag_phase[] = "phase:solve";
static char tag_u[] = "\xc3\xbcn\xc3\xaf"; /* ünï */
static char *tags_1[] = {tag_golden};
static char *tags_2[] = {tag_io, tag_phase};
static char *tags_u[] = {tag_golden, tag_u};

/* ------------------------------------------------------------------ */
/* Options                                                            */

static bool parse_u64(const char *s, uint64_t *v) {
    char *end;
    errno = 0;
    if (s == NULL || *s == '\0' || *s == '-')
        return false;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *v = x;
    return true;
}

static bool parse_columns(const char *s, struct opts *o) {
    static const struct {
        const char *name;
        unsigned bit;
    } map[] = {{"gpu", SX_COLBIT(SX_COL_GPU)},       {"call", SX_COLBIT(SX_COL_CALL)},
               {"parent", SX_COLBIT(SX_COL_PARENT)}, {"thread", SX_COLBIT(SX_COL_THREAD)},
               {"task", SX_COLBIT(SX_COL_TASK)},     {"await", SX_COLBIT(SX_COL_AWAIT)}};
    o->cols = 0;
    o->meta = false;
    while (*s) {
        size_t len = strcspn(s, ",");
        bool found = false;
        if (len == 3 && strncmp(s, "all", 3) == 0) {
            for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
                o->cols |= map[i].bit;
            o->meta = found = true;
        } else if (len == 4 && strncmp(s, "none", 4) == 0) {
            found = true;
        } else if (len == 4 && strncmp(s, "meta", 4) == 0) {
            o->meta = found = true;
        }
        for (size_t i = 0; i < sizeof map / sizeof map[0] && !found; i++)
            if (strlen(map[i].name) == len && strncmp(s, map[i].name, len) == 0) {
                o->cols |= map[i].bit;
                found = true;
            }
        if (!found)
            return false;
        s += len;
        if (*s == ',')
            s++;
    }
    return true;
}

/* 0 = parsed; 1 = help printed; 2 = usage error (message printed). */
static int parse_args(int argc, char **argv, bool talk, struct opts *o) {
    uint64_t v;
    *o = (struct opts){.ranks = 2, .regions = 4, .events = 1000, .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = true;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            if (talk)
                fputs(usage_text, stdout);
            return 1;
        } else if (!strcmp(a, "--ranks") && parse_u64(val, &v) && v >= 1 &&
                   v <= 1000000) {
            o->ranks = (long)v;
        } else if (!strcmp(a, "--regions") && parse_u64(val, &v) && v >= 1 &&
                   v <= 100000) {
            o->regions = (long)v;
        } else if (!strcmp(a, "--events") && parse_u64(val, &v)) {
            o->events = v;
        } else if (!strcmp(a, "--skew") && val) {
            char *end;
            o->skew = strtod(val, &end);
            if (*end || !(o->skew >= 0.0 && o->skew <= 1.0))
                goto bad;
        } else if (!strcmp(a, "--seed") && parse_u64(val, &v)) {
            o->seed = v;
        } else if (!strcmp(a, "--strings") && val &&
                   (!strcmp(val, "vlen") || !strcmp(val, "fixed"))) {
            o->fixed = !strcmp(val, "fixed");
        } else if (!strcmp(a, "--columns") && val && parse_columns(val, o)) {
        } else if (!strcmp(a, "--chunk") && parse_u64(val, &v) && v >= 1) {
            o->chunk = v;
        } else if (!strcmp(a, "--deflate") && parse_u64(val, &v) && v <= 9) {
            o->deflate = (int)v;
        } else {
            takes = false;
            if (!strcmp(a, "--empty-ranks"))
                o->empty_ranks = true;
            else if (!strcmp(a, "--zero-rows"))
                o->zero_rows = true;
            else if (!strcmp(a, "--lanes"))
                o->lanes = true;
            else if (!strcmp(a, "--likwid"))
                o->likwid = true;
            else if (!strcmp(a, "--lineprof"))
                o->lineprof = true;
            else if (!strcmp(a, "--perf"))
                o->perf = true;
            else if (!strcmp(a, "--aggregate"))
                o->aggregate = true;
            else if (!strcmp(a, "--nest"))
                o->nest = true;
            else if (!strcmp(a, "--unicode"))
                o->unicode = true;
            else if (!strcmp(a, "-v") || !strcmp(a, "--verbose"))
                o->verbose = true;
            else if (a[0] != '-' && o->out == NULL)
                o->out = a;
            else
                goto bad;
        }
        if (takes)
            i++;
        continue;
    bad:
        if (talk)
            fprintf(stderr, "scope-export-synth: bad option or value: %s%s%s\n%s", a,
                    val ? " " : "", val ? val : "", usage_text);
        return 2;
    }
    if (o->out == NULL) {
        if (talk)
            fprintf(stderr, "scope-export-synth: no output path\n%s", usage_text);
        return 2;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* The plan: rows, their regions and event counts                     */

struct plan {
    struct sx_row *rows;
    const struct sx_row **order;
    size_t nrows;
    uint32_t *base; /* base name index of each row */
    char **names;   /* by region id; borrowed strings */
    size_t nnames;
    int64_t *ranks; /* ranks that have rows, ascending */
    size_t nranks;
    uint64_t *first_call; /* per row: first call id */
};

static bool rank_empty(const struct opts *o, long r) {
    return o->empty_ranks && r % 3 == 1;
}

/* The base regions of rank 'r' in its creation order (a rotation; odd ranks skip one). */
static size_t rank_regions(const struct opts *o, long r, uint32_t *out) {
    size_t n = 0;
    long R = o->regions;
    for (long k = 0; k < R; k++) {
        long b = (k + r) % R;
        if (R >= 3 && r % 2 == 1 && b == (r + 1) % R)
            continue;
        out[n++] = (uint32_t)b;
    }
    return n;
}

static char *base_name(const struct opts *o, uint32_t b, char *buf, size_t len) {
    char *const *list = o->unicode ? unicode_names : ascii_names;
    if (b < NBASE)
        return list[b];
    snprintf(buf, len, o->unicode ? "r\xc3\xa9gion_%05u" : "region_%05u", (unsigned)b);
    return buf;
}

static void free_plan(struct plan *p) {
    if (p->rows != NULL)
        for (size_t i = 0; i < p->nrows; i++) {
            free(p->rows[i].meta_text);
            free(p->rows[i].agg);
        }
    free(p->rows);
    free(p->order);
    free(p->base);
    if (p->names != NULL)
        for (size_t i = 0; i < p->nnames; i++)
            free(p->names[i]);
    free(p->names);
    free(p->ranks);
    free(p->first_call);
}

/* The canonical (json.dumps) event_metadata text of a row of 'n' calls. */
static char *meta_text(const struct opts *o, uint64_t n) {
    struct sx_buf b;
    char num[32];
    sx_buf_init(&b);
    sx_buf_putc(&b, '[');
    for (uint64_t i = 0; i < n; i++) {
        if (i)
            sx_buf_puts(&b, ", ");
        if (i % 7 == 3) {
            sx_buf_puts(&b, "{\"iter\": ");
            sx_buf_append(&b, num, sx_fmt_u64(num, i));
            sx_buf_putc(&b, '}');
        } else if (i % 11 == 5) {
            sx_buf_puts(&b, "{\"ok\": true, \"phase\": ");
            sx_buf_cstr(&b, o->unicode ? "d\xc3\xa9marrage" : "setup");
            sx_buf_putc(&b, '}');
        } else {
            sx_buf_puts(&b, "{}");
        }
    }
    sx_buf_putc(&b, ']');
    sx_buf_putc(&b, '\0');
    if (b.failed) {
        sx_buf_free(&b);
        return NULL;
    }
    return b.data;
}

static bool make_plan(const struct opts *o, struct plan *p) {
    bool ok = false;
    uint32_t *list = NULL, *idmap = NULL;
    double *weight = NULL;
    size_t cap = 0, n = 0;
    uint64_t seedw = stream(o->seed, 1, 0);
    char buf[64];

    *p = (struct plan){0};
    list = calloc((size_t)o->regions, sizeof *list);
    idmap = malloc((size_t)o->regions * sizeof *idmap);
    if (list == NULL || idmap == NULL)
        goto out;
    for (long r = 0; r < o->ranks; r++)
        if (!rank_empty(o, r))
            cap += rank_regions(o, r, list);
    p->rows = calloc(cap ? cap : 1, sizeof *p->rows);
    p->base = calloc(cap ? cap : 1, sizeof *p->base);
    weight = calloc(cap ? cap : 1, sizeof *weight);
    if (p->rows == NULL || p->base == NULL || weight == NULL)
        goto out;
    for (long r = 0; r < o->ranks; r++) {
        if (rank_empty(o, r))
            continue;
        size_t k = rank_regions(o, r, list);
        for (size_t j = 0; j < k; j++, n++) {
            p->rows[n].rank = r;
            p->base[n] = list[j];
            weight[n] = 0.5 + uniform(&seedw);
            if (o->zero_rows && j % 5 == 4)
                weight[n] = 0;
        }
    }

    /* Counts: one row (the middle one) takes 'skew' of the events, the rest share. */
    size_t huge = n / 2;
    uint64_t big = n ? (uint64_t)(o->skew * (double)o->events) : 0;
    uint64_t rest = o->events - big;
    double wsum = 0, cum = 0;
    if (o->skew > 0 && n > 1)
        weight[huge] = 0;
    for (size_t i = 0; i < n; i++)
        wsum += weight[i];
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        cum += weight[i];
        uint64_t upto = i + 1 == n ? rest : (uint64_t)((double)rest * (cum / wsum));
        if (upto < prev)
            upto = prev;
        p->rows[i].count = upto - prev;
        prev = upto;
    }
    if (n > 0 && o->skew > 0)
        p->rows[n > 1 ? huge : 0].count += big;

    /* Rows exist only for regions with at least one call (unless --zero-rows). */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (p->rows[i].count > 0 || o->zero_rows) {
            p->rows[m] = p->rows[i];
            p->base[m] = p->base[i];
            m++;
        }
    p->nrows = m;

    /* Region ids in first-seen order; a name is stored only if a row uses it. */
    for (long b = 0; b < o->regions; b++)
        idmap[b] = UINT32_MAX;
    p->names = calloc((size_t)o->regions, sizeof *p->names);
    p->order = calloc(m ? m : 1, sizeof *p->order);
    p->ranks = calloc(m ? m : 1, sizeof *p->ranks);
    p->first_call = calloc(m ? m : 1, sizeof *p->first_call);
    if (p->names == NULL || p->order == NULL || p->ranks == NULL || p->first_call == NULL)
        goto out;
    uint64_t calls = 0, meta_total = 0;
    for (size_t i = 0; i < m; i++) {
        struct sx_row *row = &p->rows[i];
        uint32_t b = p->base[i];
        if (idmap[b] == UINT32_MAX) {
            idmap[b] = (uint32_t)p->nnames;
            p->names[p->nnames] = strdup(base_name(o, b, buf, sizeof buf));
            if (p->names[p->nnames++] == NULL)
                goto out;
        }
        row->region = idmap[b];
        if (p->nranks == 0 || p->ranks[p->nranks - 1] != row->rank) {
            p->ranks[p->nranks++] = row->rank;
            calls = 0;
        }
        p->first_call[i] = calls;
        calls += row->count;
        p->order[i] = row;
        if (b % 4 != 3) {
            row->source_file = b % 4 == 1 ? file_b : o->unicode ? file_u : file_a;
            row->has_lineno = true;
            row->source_lineno = 10 + 7 * (int64_t)b;
        }
        if (b % 2 == 0)
            row->source_text = o->unicode ? text_u : text_a;
        if (b % 3 == 0) {
            row->tags = o->unicode ? tags_u : tags_1;
            row->ntags = o->unicode ? 2 : 1;
        } else if (b % 3 == 2) {
            row->tags = tags_2;
            row->ntags = 2;
        }
        if (o->meta && !o->aggregate && i % 3 != 2 && row->count <= META_ROW_MAX &&
            meta_total + row->count <= META_TOTAL_MAX) {
            row->meta_text = meta_text(o, row->count);
            if (row->meta_text == NULL)
                goto out;
            meta_total += row->count;
        }
    }
    ok = true;
out:
    free(weight);
    free(idmap);
    free(list);
    return ok;
}

/* ------------------------------------------------------------------ */
/* Events                                                             */

/* Log-uniform durations over 100 ns .. 1 ms, like real region timings. */
static int64_t duration(uint64_t *s) {
    return (int64_t)(100.0 * exp(uniform(s) * 9.210340371976184));
}

/* --nest: call n of a row spans its slice of slot n (NEST_SLOT ns); a row at depth d of
 * the tree has 1/2^d of the slot, inset from its parent's slice at both ends. */
#define NEST_SLOT (1LL << 22)

struct row_gen {
    uint64_t rng;
    int64_t t;           /* next start */
    int64_t left, width; /* --nest: the row's slice of a slot */
    uint64_t call;       /* next call id */
    uint64_t parents;    /* calls of the rank's first row: parent id candidates */
    bool gpu, lanes_cols;
    int64_t nthreads, ntasks;
    uint64_t total;
};

static void row_gen_init(const struct opts *o, const struct plan *p, size_t i,
                         struct row_gen *g) {
    const struct sx_row *row = &p->rows[i];
    size_t k = i;
    while (k > 0 && p->rows[k - 1].rank == row->rank)
        k--;
    *g = (struct row_gen){0};
    g->rng = stream(o->seed, 2, i);
    /* Rows of one rank overlap in time, as nested regions do; ranks start apart. */
    g->t = T0 + (int64_t)below(&g->rng, 1000000) + row->rank * 1000003 +
           (int64_t)(i - k) * 137;
    if (o->nest) {
        /* the path from the root row to row m: each level halves the parent's slice
         * (less an inset), the second child taking the right half */
        size_t m = i - k, path[64], depth = 0;
        for (size_t q = m; q > 0 && depth < 64; q = (q - 1) / 2)
            path[depth++] = q;
        g->t = T0 + row->rank * 1000003;
        g->left = 0;
        g->width = NEST_SLOT;
        while (depth > 0) {
            size_t q = path[--depth];
            int64_t inset = g->width / 64 + 1, half = g->width / 2 - 2 * inset;
            g->left += inset + (q % 2 == 0 ? g->width / 2 : 0);
            g->width = half > 2 ? half : 2;
        }
    }
    g->call = p->first_call[i];
    g->parents = k == i ? 0 : p->rows[k].count;
    g->gpu = (p->base[i] % 2) == 0;
    /* Ranks 3, 7, ... did not record lanes: their columns are back-filled. */
    g->lanes_cols = row->rank % 4 != 3;
    g->nthreads = 2 + row->rank % 3;
    g->ntasks = 3;
}

static void gen_piece(const struct opts *o, struct row_gen *g, uint64_t n,
                      int64_t *const c[SX_NCOLS]) {
    for (uint64_t i = 0; i < n; i++) {
        int64_t d;
        if (o->nest) {
            /* in the row's slice of the next slot; the end a little short of the
             * slice's, never before its children's (inset width / 64 + 1 from it):
             * the calls nest in time too */
            d = g->width - (int64_t)below(&g->rng, (uint64_t)g->width / 64 + 1);
            c[SX_COL_START][i] = g->t + g->left;
            c[SX_COL_END][i] = g->t + g->left + d;
            g->t += NEST_SLOT;
        } else {
            d = duration(&g->rng);
            c[SX_COL_START][i] = g->t;
            c[SX_COL_END][i] = g->t + d;
            g->t += d + (int64_t)below(&g->rng, 2000);
        }
        g->total += (uint64_t)d;
        if (c[SX_COL_GPU])
            c[SX_COL_GPU][i] =
                below(&g->rng, 20) ? (int64_t)((double)d * uniform(&g->rng)) : -1;
        if (c[SX_COL_CALL])
            c[SX_COL_CALL][i] = (int64_t)(g->call + i);
        if (c[SX_COL_PARENT])
            c[SX_COL_PARENT][i] = g->parents == 0 || below(&g->rng, 5) == 0
                                      ? -1
                                      : (int64_t)below(&g->rng, g->parents);
        if (c[SX_COL_THREAD])
            c[SX_COL_THREAD][i] =
                below(&g->rng, 10) ? (int64_t)below(&g->rng, (uint64_t)g->nthreads) : -1;
        if (c[SX_COL_TASK])
            c[SX_COL_TASK][i] =
                below(&g->rng, 5) < 3 ? -1 : (int64_t)below(&g->rng, (uint64_t)g->ntasks);
        if (c[SX_COL_AWAIT])
            c[SX_COL_AWAIT][i] =
                below(&g->rng, 10) < 7 ? 0 : (int64_t)below(&g->rng, (uint64_t)d / 2 + 1);
    }
    g->call += n;
}

/* Which processes generate what: file rank k belongs to process k mod np. */
struct share {
    int me, np;
    int64_t *buf[SX_NCOLS]; /* one piece of each column */
    int64_t *agg;           /* aggregate layout: 5 values per row */
};

static bool owns(const struct share *sh, const struct sx_row *row) {
    return row->rank % sh->np == sh->me;
}

static uint64_t pieces(uint64_t count) { return count / PIECE + (count % PIECE != 0); }

/*
 * NOTE: collective when np > 1. Each process writes its rows piece by piece;
 * sx_h5w_events() is collective there, so every process makes as many calls
 * as the busiest one, the extra ones empty. With np == 1 this is the serial
 * order: rows in index order, each row's pieces in order.
 */
static enum sx_status write_events(const struct opts *o, const struct plan *p,
                                   const struct share *sh, struct sx_h5w *w,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    uint64_t mine = 0, rounds;
    size_t i = 0;       /* the row being written, or p->nrows when done */
    uint64_t first = 0; /* events of row i already written */
    struct row_gen g;
    int64_t *col[SX_NCOLS] = {0};
    static const int64_t *const none[SX_NCOLS] = {0};

    for (size_t r = 0; r < p->nrows; r++)
        if (owns(sh, &p->rows[r]))
            mine += pieces(p->rows[r].count);
    rounds = mine;
    if (sh->np > 1)
        MPI_Allreduce(&mine, &rounds, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);

    /* Start on the first owned row; rows of no events only get their exclusive total. */
    i = p->nrows;
    for (size_t r = 0; r <= p->nrows; r++) {
        if (r < p->nrows && !owns(sh, &p->rows[r]))
            continue;
        i = r;
        break;
    }
    for (uint64_t round = 0; round < rounds || i < p->nrows;) {
        if (i < p->nrows && first == 0) {
            row_gen_init(o, p, i, &g);
            for (int c = 0; c < SX_NCOLS; c++) {
                bool on = c <= SX_COL_END || (o->cols & SX_COLBIT(c));
                if (c == SX_COL_GPU)
                    on = on && g.gpu;
                if (c == SX_COL_THREAD || c == SX_COL_TASK || c == SX_COL_AWAIT)
                    on = on && g.lanes_cols;
                col[c] = on ? sh->buf[c] : NULL; /* NULL: written as the fill value */
            }
        }
        if (i < p->nrows && first < p->rows[i].count) {
            uint64_t n =
                p->rows[i].count - first < PIECE ? p->rows[i].count - first : PIECE;
            gen_piece(o, &g, n, col);
            if ((st = sx_h5w_events(w, i, first, n, (const int64_t *const *)col, err)) !=
                SX_OK)
                goto out;
            first += n;
            round++;
        } else if (i >= p->nrows) {
            if ((st = sx_h5w_events(w, 0, 0, 0, none, err)) != SX_OK)
                goto out;
            round++;
        }
        if (i < p->nrows && first == p->rows[i].count) {
            /* Even base regions report an exclusive total: three quarters of the
             * inclusive one. */
            if (p->base[i] % 2 == 0 &&
                (st = sx_h5w_set_exclusive(w, i, (int64_t)(g.total / 4 * 3), err)) !=
                    SX_OK)
                goto out;
            first = 0;
            do
                i++;
            while (i < p->nrows && !owns(sh, &p->rows[i]));
        }
    }
out:
    return st;
}

/*
 * Aggregate rows: the same durations, summed instead of stored. Each process
 * sums the rows of its file ranks; with np > 1 the values are then shared
 * (NOTE: collective), since every process passes the whole index to the writer.
 */
/* false: no memory for the rows' aggregate fields */
static bool fill_aggregates(const struct opts *o, struct plan *p,
                            const struct share *sh) {
    static const uint8_t keys[] = {SX_AGG_COUNT, SX_AGG_TOTAL, SX_AGG_MINIMUM,
                                   SX_AGG_MAXIMUM, SX_AGG_EXCLUSIVE};
    for (size_t i = 0; i < p->nrows; i++) {
        struct sx_row *row = &p->rows[i];
        struct row_gen g;
        int64_t mn = INT64_MAX, mx = 0;
        if (!owns(sh, row))
            continue; /* zeros: the owner's values arrive by the sum below */
        row_gen_init(o, p, i, &g);
        for (uint64_t k = 0; k < row->count; k++) {
            int64_t d = duration(&g.rng);
            g.total += (uint64_t)d;
            mn = d < mn ? d : mn;
            mx = d > mx ? d : mx;
        }
        const int64_t v[] = {(int64_t)row->count, (int64_t)g.total, mn, mx,
                             (int64_t)(g.total / 4 * 3)};
        memcpy(&sh->agg[5 * i], v, sizeof v);
    }
    if (sh->np > 1)
        MPI_Allreduce(MPI_IN_PLACE, sh->agg, (int)(5 * p->nrows), MPI_INT64_T, MPI_SUM,
                      MPI_COMM_WORLD);
    for (size_t i = 0; i < p->nrows; i++) {
        struct sx_row *row = &p->rows[i];
        const int64_t *v = &sh->agg[5 * i];
        if (!sx_row_agg(row))
            return false;
        row->is_aggregate = true;
        row->nagg = 5;
        for (size_t k = 0; k < 5; k++)
            row->agg[k] = (struct sx_agg_field){.key = keys[k], .i = v[k]};
        row->source_file = row->source_text = NULL;
        row->has_lineno = false;
        row->tags = NULL;
        row->ntags = 0;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Metadata, lanes, LIKWID, line profile                              */

static bool set_int(struct sx_value *m, const char *k, int64_t v) {
    return sx_value_set(m, k, strlen(k), sx_value_int(v));
}

static bool set_str(struct sx_value *m, const char *k, const char *s) {
    struct sx_value v;
    return sx_value_str(&v, s, strlen(s)) && sx_value_set(m, k, strlen(k), v);
}

static bool make_metadata(const struct opts *o, struct sx_value *m) {
    struct sx_value mods, u;
    bool ok = true;
    sx_value_object(m);
    ok = ok && set_int(m, "mpi_size", o->ranks);
    ok = ok && set_str(m, "hostname", "synth-node01");
    ok = ok && set_str(m, "label",
                       o->unicode ? "synth-\xc3\xbcn\xc3\xaf"
                                    "code \xe2\x9c\x93"
                                  : "synth");
    ok = ok && set_str(m, "timestamp", "2026-01-01T00:00:00+00:00");
    ok = ok && set_int(m, "start_time_ns", T0);
    ok = ok && set_int(m, "finalize_time_ns", T0 + 60000000000LL);
    ok = ok && set_str(m, "platform", "Linux-6.1.0-x86_64-with-glibc2.36");
    ok = ok && set_str(m, "python_version", "3.12.1");
    ok = ok && set_str(m, "scope_profiler_version", "0.7.3");
    ok = ok && set_str(m, "user", o->unicode ? "j\xc3\xbcrgen" : "synth");
    ok = ok && set_int(m, "omp_num_threads", 1);
    ok = ok && set_int(m, "num_nodes", 1);
    ok = ok && set_int(m, "total_cores", 2 * o->ranks);
    ok = ok && sx_value_set(m, "profiling_enabled", 17, sx_value_bool(true));
    ok = ok && sx_value_set(m, "synth_skew", 10, sx_value_float(o->skew));
    u = (struct sx_value){.kind = SX_V_UINT, .u.u = o->seed};
    if (o->seed <= INT64_MAX)
        u = sx_value_int((int64_t)o->seed);
    ok = ok && sx_value_set(m, "synth_seed", 10, u);
    sx_value_array(&mods);
    struct sx_value s1, s2;
    if (ok && sx_value_str(&s1, "gcc/13.2", 8))
        ok = sx_value_push(&mods, s1);
    if (ok && sx_value_str(&s2, "openmpi/4.1.6", 13))
        ok = sx_value_push(&mods, s2);
    ok = ok && sx_value_set(m, "modules", 7, mods);
    return ok;
}

static bool make_lanes(const struct opts *o, const struct plan *p,
                       struct sx_lane_rank **threads, struct sx_lane_rank **tasks) {
    static char main_name[] = "MainThread",
                worker_u[] = "r\xc3\xa9"
                             "seau-0",
                kind_task[] = "task", kind_green[] = "greenlet", coro_main[] = "main",
                coro_fetch[] = "fetch", coro_work[] = "worker", t1[] = "Task-1",
                t2[] = "Task-2", t3[] = "Greenlet-0";
    static char workers[3][32] = {"ThreadPoolExecutor-0_0", "ThreadPoolExecutor-0_1",
                                  "ThreadPoolExecutor-0_2"};
    *threads = calloc(p->nranks ? p->nranks : 1, sizeof **threads);
    *tasks = calloc(p->nranks ? p->nranks : 1, sizeof **tasks);
    if (*threads == NULL || *tasks == NULL)
        return false;
    for (size_t i = 0; i < p->nranks; i++) {
        int64_t r = p->ranks[i];
        struct sx_lane_rank *lt = &(*threads)[i], *lk = &(*tasks)[i];
        lt->rank = lk->rank = r;
        lt->n = (size_t)(2 + r % 3);
        lt->threads = calloc(lt->n, sizeof *lt->threads);
        lk->n = 3;
        lk->tasks = calloc(lk->n, sizeof *lk->tasks);
        if (lt->threads == NULL || lk->tasks == NULL)
            return false;
        for (size_t j = 0; j < lt->n; j++) {
            struct sx_thread *t = &lt->threads[j];
            t->index = (int64_t)j;
            t->name = j == 0                   ? main_name
                      : (o->unicode && j == 1) ? worker_u
                                               : workers[j - 1];
            t->ident = 139800000000000LL + r * 1000 + (int64_t)j * 17;
            t->native_id = 4000 + r * 10 + (int64_t)j;
            t->daemon = j > 0;
            t->start_ns = j == 0 ? 0 : (int64_t)j * 1000000;
            t->end_ns = j + 1 == lt->n ? -1 : 500000000 + (int64_t)j * 1000;
            t->cpu_ns = 250000000 + r * 1000 + (int64_t)j;
        }
        char *names[3] = {t1, t2, t3}, *kinds[3] = {kind_task, kind_task, kind_green},
             *coros[3] = {coro_main, coro_fetch, coro_work};
        for (size_t j = 0; j < 3; j++) {
            struct sx_task *t = &lk->tasks[j];
            t->index = (int64_t)j;
            t->kind = kinds[j];
            t->name = names[j];
            t->coro_name = coros[j];
            t->thread_index = 0;
            t->created_ns = 1000000 + (int64_t)j * 5000;
            t->done_ns = j == 1 ? -1 : 40000000 + (int64_t)j;
            t->steps = 3 + (int64_t)j;
            t->running_ns = 1200000 + r;
            t->suspended_ns = 38000000 - (int64_t)j;
        }
    }
    return true;
}

static void free_lanes(struct sx_lane_rank *l, size_t n) {
    if (l == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        free(l[i].threads);
        free(l[i].tasks);
    }
    free(l);
}

/* LIKWID results: three regions per rank, NaN and +-Inf among the values. */
static bool make_likwid(const struct opts *o, const struct plan *p,
                        struct sx_likwid_rank **out) {
    static char tag_a[] = "Assemble", tag_b[] = "io/write", tag_c[] = "solve",
                tagk_u[] = "\xc3\xbcn\xc3\xaf/kern", gn_flops[] = "FLOPS_DP",
                gn_mem[] = "MEM", src_api[] = "marker_api", src_file[] = "marker_file",
                ev0[] = "PMC0", ev1[] = "PMC1", ev2[] = "FIXC0",
                cn0[] = "FP_ARITH_INST_RETIRED_SCALAR_DOUBLE",
                cn1[] = "FP_ARITH_INST_RETIRED_128B_PACKED_DOUBLE",
                cn2[] = "INSTR_RETIRED_ANY", mn0[] = "Runtime (RDTSC) [s]",
                mn1[] = "DP [MFLOP/s]";
    static char *evn[] = {ev0, ev1, ev2}, *cnn[] = {cn0, cn1, cn2}, *mnn[] = {mn0, mn1};
    static int64_t cpus[] = {0, 1}, calls[] = {10, 10};
    static double times_a[] = {0.5, 0.25};
    static double events[] = {1.0e9, 2.5e8, 0.0, INFINITY, 3.0, 4.0};
    static double metrics[] = {0.5, NAN, 1234.5, -INFINITY};
    static double times_nan[] = {NAN, 1.5};

    *out = calloc(p->nranks ? p->nranks : 1, sizeof **out);
    if (*out == NULL)
        return false;
    for (size_t i = 0; i < p->nranks; i++) {
        struct sx_likwid_rank *lk = &(*out)[i];
        lk->rank = p->ranks[i];
        lk->n = 3;
        lk->entries = calloc(3, sizeof *lk->entries);
        if (lk->entries == NULL)
            return false;
        /* Sorted by tag, as the reader keeps them (code point = UTF-8 byte order). */
        char *tags[3] = {tag_a, tag_b, o->unicode ? tagk_u : tag_c};
        for (size_t j = 0; j < 3; j++) {
            struct sx_likwid_entry *e = &lk->entries[j];
            e->tag = tags[j];
            e->group_id = (int64_t)j;
            e->group_name = j == 1 ? gn_mem : gn_flops;
            e->source = j == 2 ? src_file : src_api;
            e->cpus = cpus;
            e->ncpus = 2;
            e->times = j == 0 ? times_nan : times_a;
            e->ntimes = 2;
            e->call_counts = calls;
            e->ncall_counts = 2;
            e->event_names = evn;
            e->nevent_names = 3;
            e->counter_names = j == 2 ? NULL : cnn;
            e->ncounter_names = j == 2 ? 0 : 3;
            e->events = (struct sx_matrix){events, 3, 2};
            if (j == 1) { /* no metrics: h5py's 1-D empty placeholder */
                e->metrics = (struct sx_matrix){NULL, 0, 0};
            } else {
                e->metric_names = mnn;
                e->nmetric_names = 2;
                e->metrics = (struct sx_matrix){metrics, 2, 2};
            }
        }
    }
    return true;
}

static void free_likwid(struct sx_likwid_rank *l, size_t n) {
    if (l == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free(l[i].entries);
    free(l);
}

/* Line-profile records: 12 on rank 0 (so names "10", "11" sort before "2"), 2 elsewhere.
 */
static bool make_lineprof(const struct plan *p, struct sx_lp_rank **out) {
    static int64_t lines[] = {11, 12, 13, 15}, hits[] = {1, 100, 100, 1};
    static double times[] = {250.0, 98000.5, 120000.0, 3.0};
    *out = calloc(p->nranks ? p->nranks : 1, sizeof **out);
    if (*out == NULL)
        return false;
    for (size_t i = 0; i < p->nranks; i++) {
        struct sx_lp_rank *lp = &(*out)[i];
        lp->rank = p->ranks[i];
        lp->n = lp->rank == 0 ? 12 : 2;
        lp->records = calloc(lp->n, sizeof *lp->records);
        if (lp->records == NULL)
            return false;
        for (size_t j = 0; j < lp->n; j++) {
            struct sx_lp_record *r = &lp->records[j];
            r->region = p->names[j % p->nnames];
            r->filename = file_a;
            r->function = p->names[0];
            r->first_lineno = 10 + (int64_t)j;
            r->line_numbers = lines;
            r->nline_numbers = 4;
            r->hits = hits;
            r->nhits = 4;
            r->times = times;
            r->ntimes = 4;
            r->unit = 1e-9;
        }
    }
    return true;
}

static void free_lineprof(struct sx_lp_rank *l, size_t n) {
    if (l == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free(l[i].records);
    free(l);
}

/* ------------------------------------------------------------------ */

static void free_share(struct share *sh) {
    for (int c = 0; c < SX_NCOLS; c++)
        free(sh->buf[c]);
    free(sh->agg);
}

/* Buffers for the events of one piece, or for the aggregate values of every row. */
static bool make_share(const struct opts *o, const struct plan *p, struct share *sh) {
    if (o->aggregate) {
        if (p->nrows > (size_t)INT_MAX / 5)
            return false;
        sh->agg = calloc(p->nrows ? 5 * p->nrows : 1, sizeof *sh->agg);
        return sh->agg != NULL;
    }
    for (int c = 0; c < SX_NCOLS; c++)
        if ((sh->buf[c] = malloc(PIECE * sizeof(int64_t))) == NULL)
            return false;
    return true;
}

/* The perf counter totals --perf describes, added to the finished file. */
static enum sx_status write_perf(const struct opts *o, const struct plan *p,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    static char *names[2] = {"cycles", "instructions"};
    const size_t nr = p->nnames < 2 ? p->nnames : 2;
    struct sx_perf_rank *pr = calloc(p->nranks + 1, sizeof *pr);
    struct sx_perf_region *regs = calloc(p->nranks * nr + 1, sizeof *regs);
    uint64_t *vals = calloc(p->nranks * nr * 2 + 1, sizeof *vals);
    if (pr == NULL || regs == NULL || vals == NULL) {
        st = sx_error_set(err, SX_ERR_NOMEM, o->out, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < p->nranks; i++) {
        pr[i].rank = p->ranks[i];
        pr[i].regions = regs + i * nr;
        pr[i].n = nr;
        for (size_t j = 0; j < nr; j++) {
            struct sx_perf_region *r = &regs[i * nr + j];
            uint64_t *v = vals + (i * nr + j) * 2;
            v[0] = 1000000 * (i + 1) + j;
            v[1] = 2000000 * (i + 1) + j;
            r->name = p->names[j];
            r->calls = 10 * i + j + 1;
            r->event_names = names;
            r->values = v;
            r->nevents = 2;
        }
    }
    st = sx_h5_perf_write(o->out, pr, p->nranks, err);
out:
    free(pr);
    free(regs);
    free(vals);
    return st;
}

/* Every call below the setup is collective when np > 1: the writer agrees on errors. */
static enum sx_status synth(const struct opts *o, int me, int np, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct plan p = {0};
    struct share sh = {.me = me, .np = np};
    struct sx_h5w *w = NULL;
    struct sx_h5w_spec spec;
    struct sx_value meta = {.kind = SX_V_NULL};
    struct sx_lane_rank *threads = NULL, *tasks = NULL;
    struct sx_likwid_rank *likwid = NULL;
    struct sx_lp_rank *lineprof = NULL;

    /* Every process builds the same plan and the same small parts. */
    if (!make_plan(o, &p) || !make_metadata(o, &meta) ||
        (o->lanes && !make_lanes(o, &p, &threads, &tasks)) ||
        (o->likwid && !make_likwid(o, &p, &likwid)) ||
        (o->lineprof && !make_lineprof(&p, &lineprof)) || !make_share(o, &p, &sh))
        st = sx_error_set(err, SX_ERR_NOMEM, o->out, "out of memory");
    if (np > 1 && (st = sx_all_ok(MPI_COMM_WORLD, st, err)) != SX_OK)
        goto out;
    if (st != SX_OK)
        goto out;
    if (o->aggregate && !fill_aggregates(o, &p, &sh))
        st = sx_error_set(err, SX_ERR_NOMEM, o->out, "out of memory");
    if (np > 1 && (st = sx_all_ok(MPI_COMM_WORLD, st, err)) != SX_OK)
        goto out;
    if (st != SX_OK)
        goto out;

    sx_h5w_spec_init(&spec);
    spec.aggregate = o->aggregate;
    spec.cols = o->aggregate ? 0 : o->cols;
    spec.meta = o->meta && !o->aggregate;
    spec.fixed_strings = o->fixed;
    spec.chunk = o->chunk;
    spec.deflate = o->deflate;

    if ((st = sx_h5w_create_mpi(np > 1 ? MPI_COMM_WORLD : MPI_COMM_NULL, o->out, &spec,
                                &w, err)) != SX_OK ||
        (st = sx_h5w_metadata(w, &meta, err)) != SX_OK ||
        (st = sx_h5w_names(w, p.names, p.nnames, err)) != SX_OK ||
        (st = sx_h5w_index(w, p.order, p.nrows, err)) != SX_OK)
        goto out;
    if (!o->aggregate && (st = write_events(o, &p, &sh, w, err)) != SX_OK)
        goto out;
    if (o->lanes && ((st = sx_h5w_threads(w, threads, p.nranks, err)) != SX_OK ||
                     (st = sx_h5w_tasks(w, tasks, p.nranks, err)) != SX_OK))
        goto out;
    if (o->likwid && (st = sx_h5w_likwid(w, likwid, p.nranks, err)) != SX_OK)
        goto out;
    if (o->lineprof && (st = sx_h5w_line_profile(w, lineprof, p.nranks, err)) != SX_OK)
        goto out;
    st = sx_h5w_finish(w, err);
    w = NULL;
    if (o->perf) { /* rank 0 adds them to the closed file, the others wait */
        if (st == SX_OK && me == 0)
            st = write_perf(o, &p, err);
        if (np > 1)
            st = sx_all_ok(MPI_COMM_WORLD, st, err);
    }
    if (st == SX_OK && o->verbose && me == 0) {
        uint64_t total = 0;
        for (size_t i = 0; i < p.nrows; i++)
            total += p.rows[i].count;
        printf("%s: %zu rows, %zu regions, %zu ranks with data, %llu events, %d "
               "process%s\n",
               o->out, p.nrows, p.nnames, p.nranks, (unsigned long long)total, np,
               np > 1 ? "es" : "");
    }
out:
    sx_h5w_abort(w); /* NOTE: collective; every process failed alike */
    free_share(&sh);
    free_lineprof(lineprof, p.nranks);
    free_likwid(likwid, p.nranks);
    free_lanes(tasks, p.nranks);
    free_lanes(threads, p.nranks);
    sx_value_free(&meta);
    free_plan(&p);
    return st;
}

int main(int argc, char **argv) {
    int me = 0, np = 1, rc;
    struct opts o;
    struct sx_error err;

    /* A program, not the library: it may own MPI. Without a launcher MPI runs as a
     * singleton (np = 1) and the file is written serially. */
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "scope-export-synth: MPI_Init failed\n");
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    sx_error_clear(&err);
    int pa = parse_args(argc, argv, me == 0, &o); /* the same on every process */
    if (pa != 0) {
        rc = pa == 1 ? 0 : 2;
    } else {
        enum sx_status st = synth(&o, me, np, &err);
        if (st != SX_OK && me == 0) {
            if (np > 1 && err.rank >= 0)
                fprintf(stderr, "scope-export-synth: %s: %s (%s; rank %d)\n", err.source,
                        err.text, sx_strerror(st), err.rank);
            else
                fprintf(stderr, "scope-export-synth: %s: %s (%s)\n", err.source, err.text,
                        sx_strerror(st));
        }
        rc = st == SX_OK ? 0 : 1;
    }
    MPI_Finalize();
    return rc;
}
