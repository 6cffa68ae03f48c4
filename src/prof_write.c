/* prof_write.c - pstats (.prof) files, as scope-profiler's export_prof writes them */
#define _GNU_SOURCE /* qsort_r: the sort context per call, not in a global */
#include "prof_write.h"

#include "pipeline.h"

#include "filter.h"
#include "flame_svg.h"
#include "h5_read.h"
#include "json_load.h"
#include "mpi_util.h"
#include "np_sum.h"
#include "out_file.h"
#include "run.h"
#include "trace.h"
#include "trace_calls.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_u32(struct sx_buf *b, uint32_t v) {
    unsigned char c[4] = {(unsigned char)v, (unsigned char)(v >> 8),
                          (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    sx_buf_append(b, c, 4);
}

void sx_marshal_int(struct sx_buf *b, int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
        sx_buf_putc(b, 'i');
        put_u32(b, (uint32_t)(int32_t)v);
        return;
    }
    /* TYPE_LONG: a signed count of 15-bit digits, least significant first */
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    unsigned char d[16];
    int n = 0;
    for (; m != 0; m >>= 15) {
        d[2 * n] = (unsigned char)(m & 0xff);
        d[2 * n + 1] = (unsigned char)((m >> 8) & 0x7f);
        n++;
    }
    sx_buf_putc(b, 'l');
    put_u32(b, (uint32_t)(int32_t)(v < 0 ? -n : n));
    sx_buf_append(b, d, (size_t)(2 * n));
}

void sx_marshal_float(struct sx_buf *b, double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    unsigned char c[8];
    for (int i = 0; i < 8; i++)
        c[i] = (unsigned char)(u >> (8 * i));
    sx_buf_putc(b, 'g');
    sx_buf_append(b, c, 8);
}

void sx_marshal_str(struct sx_buf *b, const char *s, size_t n) {
    bool ascii = true;
    for (size_t i = 0; i < n && ascii; i++)
        ascii = (unsigned char)s[i] < 0x80;
    if (ascii && n < 256) {
        sx_buf_putc(b, 'z');
        sx_buf_putc(b, (char)(unsigned char)n);
    } else {
        sx_buf_putc(b, ascii ? 'a' : 'u');
        put_u32(b, (uint32_t)n);
    }
    sx_buf_append(b, s, n);
}

void sx_marshal_tuple(struct sx_buf *b, size_t n) {
    sx_buf_putc(b, ')');
    sx_buf_putc(b, (char)(unsigned char)n);
}

void sx_marshal_dict(struct sx_buf *b) { sx_buf_putc(b, '{'); }
void sx_marshal_dict_end(struct sx_buf *b) { sx_buf_putc(b, '0'); }

/*
 * A node: a call path (parent path, region) with call_paths, or a caller
 * bucket (caller region + 1, callee region) without; its sums in call order.
 */
struct node {
    int64_t a;  /* parent node (-1: top level), or caller position + 1 (0: the root) */
    uint32_t g; /* region position */
    uint64_t nc, cc;
    double tt, ct;
};

struct table {
    struct node *v;
    size_t n, cap;
    int64_t *slot; /* open addressing: node index, or -1 */
    size_t nslot;
};

static size_t hash(int64_t a, uint32_t g) {
    uint64_t h = (uint64_t)a * 0x9e3779b97f4a7c15u ^ ((uint64_t)g + 0x632be59bd9b4e019u);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9u;
    return (size_t)(h ^ (h >> 32));
}

static void table_free(struct table *t) {
    free(t->v);
    free(t->slot);
    memset(t, 0, sizeof *t);
}

/* The node (a, g), made when new; -1 when out of memory. */
static int64_t table_get(struct table *t, int64_t a, uint32_t g) {
    if (2 * (t->n + 1) > t->nslot) {
        size_t ns = t->nslot ? 2 * t->nslot : 1024;
        int64_t *s = sx_malloc(ns * sizeof *s);
        if (s == NULL)
            return -1;
        for (size_t i = 0; i < ns; i++)
            s[i] = -1;
        for (size_t k = 0; k < t->n; k++) {
            size_t h = hash(t->v[k].a, t->v[k].g) & (ns - 1);
            while (s[h] >= 0)
                h = (h + 1) & (ns - 1);
            s[h] = (int64_t)k;
        }
        free(t->slot);
        t->slot = s;
        t->nslot = ns;
    }
    size_t h = hash(a, g) & (t->nslot - 1);
    for (; t->slot[h] >= 0; h = (h + 1) & (t->nslot - 1)) {
        const struct node *x = &t->v[t->slot[h]];
        if (x->a == a && x->g == g)
            return t->slot[h];
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 256;
        struct node *nv = sx_realloc(t->v, nc * sizeof *nv);
        if (nv == NULL)
            return -1;
        t->v = nv;
        t->cap = nc;
    }
    t->v[t->n] = (struct node){a, g, 0, 0, 0.0, 0.0};
    t->slot[h] = (int64_t)t->n;
    return (int64_t)t->n++;
}

/*
 * A rank's calls in start order over every lane (sx_call_before: start, the
 * longest first, region, call), each nested within its own lane (thread or
 * task). Its rooms are kept from one rank to the next, each with room for
 * 'cap' calls: a rank's calls in fresh pages faulted in every page again (a
 * quarter of a one-process export of every rank, in the kernel).
 */
struct pcalls {
    struct sx_call *c;
    int64_t *parent; /* per call: its parent's position, or -1 */
    size_t n;
    /* building: the lanes' order, the open calls or sorted ends, the radix sort's
     * room; then rank_stats's: the children's time, the path nodes, the top calls */
    int64_t *room[3];
    size_t cap;
};

static void pcalls_free(struct pcalls *p) {
    free(p->c);
    free(p->parent);
    for (int k = 0; k < 3; k++)
        free(p->room[k]);
    memset(p, 0, sizeof *p);
}

/* Room for 'n' calls (an eighth more: the next rank, a little larger, fits). */
static bool pcalls_reserve(struct pcalls *p, size_t n) {
    if (n + 1 <= p->cap)
        return true;
    const size_t cap = n + n / 8 + 1;
    pcalls_free(p);
    p->c = sx_malloc(cap * sizeof *p->c);
    p->parent = sx_malloc(cap * sizeof *p->parent);
    bool ok = p->c != NULL && p->parent != NULL;
    for (int k = 0; k < 3; k++) {
        p->room[k] = sx_malloc(cap * sizeof *p->room[k]);
        ok = ok && p->room[k] != NULL;
    }
    if (!ok)
        pcalls_free(p);
    else
        p->cap = cap;
    return ok;
}

/* The calls' order where a row is out of order (the merge's): start, -end, region,
 * index. */
static int cmp_start(const void *a, const void *b) {
    const struct sx_call *x = a, *y = b;
    return sx_call_before(x, y) ? -1 : sx_call_before(y, x) ? 1 : 0;
}

/* Positions by lane, each lane's in start order (their own order). */
static int cmp_lane(const void *a, const void *b, void *ctx) {
    const struct sx_call *c = ctx;
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    if (c[x].lane != c[y].lane)
        return c[x].lane < c[y].lane ? -1 : 1;
    return (x > y) - (x < y);
}

/*
 * The calls of 'rank' in the selected regions (their columns loaded) into 'p',
 * whose rooms are reused where they have room. Rows recorded by start (the
 * common case) are merged (sx_call_merge); a row out of order sorts them all.
 * Local.
 */
static enum sx_status build_calls(const struct sx_trace *t, int64_t rank,
                                  struct pcalls *p, struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t n = 0, nrow = 0;
    bool lanes = false, sorted = true, back = false;
    struct sx_call_merge m = {0};
    struct sx_call_row *rows = sx_malloc((t->nregions + 1) * sizeof *rows);
    const int64_t **lc = sx_calloc(2 * t->nregions + 1, sizeof *lc); /* threads, tasks */
    p->n = 0;
    SX_CHECK(rows != NULL && lc != NULL, SX_ERR_NOMEM, err, t->run->path,
             "out of memory");
    for (size_t g = 0; g < t->nregions; g++) {
        const struct sx_row *row = sx_trace_row(t, g, rank);
        if (row == NULL || row->is_aggregate)
            continue;
        n += row->count;
        if (row->cols & SX_COLBIT(SX_COL_THREAD))
            lanes = true;
        lc[2 * g] =
            (row->cols & SX_COLBIT(SX_COL_THREAD)) ? row->col[SX_COL_THREAD] : NULL;
        lc[2 * g + 1] =
            (row->cols & SX_COLBIT(SX_COL_TASK)) ? row->col[SX_COL_TASK] : NULL;
        if (row->count == 0)
            continue;
        const int64_t *s = row->col[SX_COL_START], *e = row->col[SX_COL_END];
        sorted &= sx_call_row_sorted(s, e, row->count, &back);
        rows[nrow++] = (struct sx_call_row){s, e, row->count, (uint32_t)g};
    }
    SX_CHECK(pcalls_reserve(p, n) && (!sorted || sx_call_merge_init(&m, rows, nrow)),
             SX_ERR_NOMEM, err, t->run->path,
             "%s: out of memory sorting the %zu calls of rank %" PRId64, t->run->path, n,
             rank);
    struct sx_call *const c = p->c;
    if (sorted) {
        for (size_t at = 0; at < n; at++)
            sx_call_merge_next(&m, &c[at]);
    } else {
        size_t at = 0;
        for (size_t r = 0; r < nrow; r++)
            for (uint64_t i = 0; i < rows[r].n; i++)
                c[at++] = (struct sx_call){.start = rows[r].start[i],
                                           .end = rows[r].end[i],
                                           .lane = -1,
                                           .index = i,
                                           .region = rows[r].region};
        qsort(c, n, sizeof *c, cmp_start);
    }
    p->n = n;
    int64_t *const ix = lanes ? p->room[0] : NULL;
    for (size_t i = 0; lanes && i < n; i++)
        c[i].lane =
            sx_call_lane(lc[2 * c[i].region], lc[2 * c[i].region + 1], c[i].index);
    /* a stable partition by lane (a sort where there are very many lanes) */
    struct sx_lane_map lm = {0};
    bool nomem = false;
    if (lanes && sx_lane_map_build(&lm, c, n, SX_LANES_MAX, &nomem)) {
        size_t *at = sx_malloc((lm.n + 1) * sizeof *at);
        if (at != NULL) {
            sx_lane_map_starts(&lm, c, n, at);
            for (size_t i = 0; i < n; i++)
                ix[at[sx_lane_map_place(&lm, c[i].lane)]++] = (int64_t)i;
        }
        nomem = at == NULL;
        free(at);
        sx_lane_map_free(&lm);
    } else if (lanes && !nomem) {
        for (size_t i = 0; i < n; i++)
            ix[i] = (int64_t)i;
        qsort_r(ix, n, sizeof *ix, cmp_lane, c);
    }
    SX_CHECK(!nomem, SX_ERR_NOMEM, err, t->run->path,
             "%s: out of memory sorting the %zu calls of rank %" PRId64, t->run->path, n,
             rank);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (lanes && j < n && c[ix[j]].lane == c[ix[i]].lane)
            j++;
        if (!lanes)
            j = n;
        const int64_t *lx = lanes ? ix + i : NULL;
        const bool nested =
            !back && sx_calls_nest_stack(c, lx, j - i, p->parent, p->room[1]);
        SX_CHECK(nested ||
                     sx_calls_nest_exact(c, lx, j - i, p->parent, p->room[1], p->room[2]),
                 SX_ERR_FORMAT, err, t->run->path,
                 "%s: recorded calls are not properly nested", t->run->path);
        i = j;
    }
out:
    sx_call_merge_free(&m);
    free(rows);
    free(lc);
    if (st != SX_OK)
        p->n = 0;
    return st;
}

/* The pstats key of region position 'g' on 'rank', its funcname given. */
static void put_key(struct sx_buf *b, const struct sx_trace *t, uint32_t g, int64_t rank,
                    const char *name, size_t nlen) {
    const struct sx_row *row = sx_trace_row(t, g, rank);
    sx_marshal_tuple(b, 3);
    if (row != NULL && row->source_file != NULL && row->source_file[0] != '\0' &&
        row->has_lineno) {
        sx_marshal_str(b, row->source_file, strlen(row->source_file));
        sx_marshal_int(b, row->source_lineno);
    } else {
        sx_marshal_str(b, "~", 1);
        sx_marshal_int(b, 0);
    }
    sx_marshal_str(b, name, nlen);
}

static void put_root_key(struct sx_buf *b, const char *root) {
    sx_marshal_tuple(b, 3);
    sx_marshal_str(b, "~", 1);
    sx_marshal_int(b, 0);
    sx_marshal_str(b, root, strlen(root));
}

static void put_four(struct sx_buf *b, const struct node *x) {
    sx_marshal_int(b, (int64_t)x->cc);
    sx_marshal_int(b, (int64_t)x->nc);
    sx_marshal_float(b, x->tt);
    sx_marshal_float(b, x->ct);
}

/* "a > b > c": the names of path node 'k' from the top, into 'p' (reset). */
static void path_name(const struct sx_trace *t, const struct table *tb, int64_t k,
                      struct sx_buf *p) {
    if (tb->v[k].a >= 0) {
        path_name(t, tb, tb->v[k].a, p);
        sx_buf_puts(p, " > ");
    }
    sx_buf_puts(p, t->run->names[t->regions[tb->v[k].g]]);
}

static int cmp_node_caller(const void *x, const void *y) {
    const struct node *const *a = x, *const *b = y;
    return ((*a)->a > (*b)->a) - ((*a)->a < (*b)->a);
}

/*
 * The marshalled pstats dict of one rank's sorted, nested calls into 'out'.
 * Local.
 */
static enum sx_status rank_stats(const struct sx_trace *t, const struct pcalls *r,
                                 int64_t rank, bool call_paths, int svg_width,
                                 struct sx_buf *out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const size_t n = r->n;
    /* the calls' rooms: each call's children's time, its path node, the top calls' times
     */
    int64_t *const child = r->room[0], *const node_of = r->room[1];
    double *const top = (double *)(void *)r->room[2];
    struct table tb = {0};
    struct sx_buf name = {0};
    /* without call paths: per region position */
    const size_t ng = t->nregions;
    struct node *reg = NULL;
    int64_t *maxend = NULL;
    bool *rec = NULL;
    const struct node **list = NULL;
    char *root = NULL;
    struct sx_flame_frame *frames = NULL;
    size_t ntop = 0;
    memset(child, 0, n * sizeof *child);
    for (size_t i = 0; i < n; i++)
        if (r->parent[i] >= 0)
            child[r->parent[i]] += r->c[i].end - r->c[i].start;
    if (!call_paths) {
        reg = sx_calloc(ng + 1, sizeof *reg);
        maxend = sx_malloc((ng + 1) * sizeof *maxend);
        rec = sx_calloc(n + 1, sizeof *rec);
        SX_CHECK(reg != NULL && maxend != NULL && rec != NULL, SX_ERR_NOMEM, err,
                 t->run->path, "out of memory");
        /*
         * recursive: inside an earlier call of its region (in start order), which
         * started no later and has not ended before this one ends
         */
        for (size_t g = 0; g < ng; g++)
            maxend[g] = INT64_MIN;
        for (size_t i = 0; i < n; i++) {
            const struct sx_call *c = &r->c[i];
            rec[i] = c->start < maxend[c->region] && c->end <= maxend[c->region];
            if (c->end > maxend[c->region])
                maxend[c->region] = c->end;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const int64_t s = r->c[i].start, e = r->c[i].end, p = r->parent[i];
        const uint32_t g = r->c[i].region, pg = p >= 0 ? r->c[p].region : 0;
        const double dur = (double)(e - s) / 1e9;
        const double excl = (double)(e - s - child[i]) / 1e9;
        if (p < 0)
            top[ntop++] = dur;
        if (call_paths) {
            int64_t k = table_get(&tb, p >= 0 ? node_of[p] : -1, g);
            SX_CHECK(k >= 0, SX_ERR_NOMEM, err, t->run->path, "out of memory");
            node_of[i] = k;
            struct node *x = &tb.v[k];
            x->nc++;
            x->cc++;
            x->tt += excl;
            x->ct += dur;
            continue;
        }
        struct node *x = &reg[g];
        const bool recursive = rec[i];
        x->nc++;
        x->tt += excl;
        if (!recursive) {
            x->cc++;
            x->ct += dur;
        }
        int64_t k = table_get(&tb, p >= 0 ? (int64_t)pg + 1 : 0, g);
        SX_CHECK(k >= 0, SX_ERR_NOMEM, err, t->run->path, "out of memory");
        struct node *c = &tb.v[k];
        c->nc++;
        c->tt += excl;
        if (!recursive) {
            c->cc++;
            c->ct += dur;
        }
    }

    const size_t rlen = strlen(t->label) + 64;
    root = sx_malloc(rlen);
    SX_CHECK(root != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
    snprintf(root, rlen, "<%s rank %" PRId64 ">", t->label, rank);
    if (svg_width > 0) { /* the flame graph of the call paths */
        frames = sx_malloc((tb.n + 1) * sizeof *frames);
        SX_CHECK(frames != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
        for (size_t k = 0; k < tb.n; k++)
            frames[k] = (struct sx_flame_frame){
                tb.v[k].a, t->run->names[t->regions[tb.v[k].g]], tb.v[k].ct, tb.v[k].nc};
        sx_flame_svg(out, frames, tb.n, root, sx_np_sum(top, ntop), svg_width);
        SX_CHECK(!out->failed, SX_ERR_NOMEM, err, t->run->path, "out of memory");
        goto out;
    }
    sx_marshal_dict(out);
    if (call_paths) {
        for (size_t k = 0; k < tb.n; k++) {
            const struct node *x = &tb.v[k];
            sx_buf_reset(&name);
            path_name(t, &tb, (int64_t)k, &name);
            SX_CHECK(!name.failed, SX_ERR_NOMEM, err, t->run->path, "out of memory");
            put_key(out, t, x->g, rank, name.data, name.len);
            sx_marshal_tuple(out, 5);
            put_four(out, x);
            sx_marshal_dict(out);
            if (x->a >= 0) {
                sx_buf_reset(&name);
                path_name(t, &tb, x->a, &name);
                SX_CHECK(!name.failed, SX_ERR_NOMEM, err, t->run->path, "out of memory");
                put_key(out, t, tb.v[x->a].g, rank, name.data, name.len);
            } else {
                put_root_key(out, root);
            }
            sx_marshal_tuple(out, 4);
            put_four(out, x);
            sx_marshal_dict_end(out);
        }
    } else {
        list = sx_malloc((tb.n + 1) * sizeof *list);
        SX_CHECK(list != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
        for (uint32_t g = 0; g < ng; g++) {
            const struct node *x = &reg[g];
            if (x->nc == 0)
                continue;
            const char *nm = t->run->names[t->regions[g]];
            put_key(out, t, g, rank, nm, strlen(nm));
            sx_marshal_tuple(out, 5);
            put_four(out, x);
            sx_marshal_dict(out);
            size_t nl = 0;
            for (size_t k = 0; k < tb.n; k++)
                if (tb.v[k].g == g)
                    list[nl++] = &tb.v[k];
            qsort(list, nl, sizeof *list, cmp_node_caller);
            for (size_t k = 0; k < nl; k++) {
                if (list[k]->a == 0) {
                    put_root_key(out, root);
                } else {
                    const uint32_t cg = (uint32_t)(list[k]->a - 1);
                    const char *cn = t->run->names[t->regions[cg]];
                    put_key(out, t, cg, rank, cn, strlen(cn));
                }
                sx_marshal_tuple(out, 4);
                put_four(out, list[k]);
            }
            sx_marshal_dict_end(out);
        }
    }
    /* the root: every top-level call's caller, np.sum of their durations */
    put_root_key(out, root);
    sx_marshal_tuple(out, 5);
    sx_marshal_int(out, 1);
    sx_marshal_int(out, 1);
    sx_marshal_float(out, 0.0);
    sx_marshal_float(out, sx_np_sum(top, ntop));
    sx_marshal_dict(out);
    sx_marshal_dict_end(out);
    sx_marshal_dict_end(out);
    SX_CHECK(!out->failed, SX_ERR_NOMEM, err, t->run->path, "out of memory");
out:
    free(reg);
    free(maxend);
    free(rec);
    free(list);
    free(root);
    free(frames);
    table_free(&tb);
    sx_buf_free(&name);
    return st;
}

/* "<stem>_rank<N><suffix>" beside 'output'. New string. */
static char *rank_path(const char *output, int64_t rank, const char *dflt) {
    const char *slash = strrchr(output, '/');
    const char *base = slash ? slash + 1 : output;
    const char *dot = strrchr(base, '.');
    if (dot == base) /* ".prof" is a stem without suffix, as for pathlib */
        dot = NULL;
    const size_t stem = dot ? (size_t)(dot - output) : strlen(output);
    const char *suffix = dot ? dot : dflt;
    const size_t n = stem + strlen(suffix) + 32;
    char *p = sx_malloc(n);
    if (p != NULL)
        snprintf(p, n, "%.*s_rank%" PRId64 "%s", (int)stem, output, rank, suffix);
    return p;
}

#define PROF_COLS                                                                        \
    (SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END) | SX_COLBIT(SX_COL_THREAD) |        \
     SX_COLBIT(SX_COL_TASK))

/* The pstats (or SVG) files' state: the plan and one output per selected rank. */
struct prof_state {
    struct sx_trace t; /* first: sx_pipe_trace_state */
    struct sx_out_file **files;
};

static void prof_free(void *ctx) {
    struct prof_state *s = ctx;
    if (s == NULL)
        return;
    for (size_t k = 0; s->files != NULL && k < s->t.nranks; k++)
        sx_out_abort(s->files[k]);
    free(s->files);
    sx_trace_free(&s->t);
    free(s);
}

/*
 * NOTE: collective over 'p->comm'. The region order and the reference's
 * checks of the selection, with the ranks' agreement between the stages.
 */
static enum sx_status prof_plan(const struct sx_pipe *p, struct sx_doc_state *ds,
                                struct sx_error *err) {
    /* Stages: the state, the region order (NOTE: collective). */
    enum sx_status st =
        sx_pipe_trace_state(p, ds, sizeof(struct prof_state), prof_free, err);
    if (st != SX_OK)
        return st;
    struct prof_state *s = ds->ctx;
    struct sx_trace *t = &s->t;
    st = sx_trace_check_selection(t, true, err);
    if (st == SX_OK) {
        s->files = sx_calloc(t->nranks + 1, sizeof *s->files);
        if (s->files == NULL)
            st = sx_error_set(err, SX_ERR_NOMEM, t->run->path, "out of memory");
    }
    return st;
}

/*
 * NOTE: collective over 'p->comm'. Each selected rank is built and written
 * by one process (the k-th by k % size); the files are renamed into place
 * once every process has made its own.
 */
static enum sx_status prof_write(const struct sx_pipe *p, void *ctx,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    MPI_Comm comm = p->comm;
    const struct sx_options *o = p->o;
    const char *output = p->output;
    struct prof_state *s = ctx;
    struct sx_trace *t = &s->t;
    struct sx_out_file **files = s->files;
    struct pcalls built = {0};
    struct sx_buf buf = {0};
    char *path = NULL;

    /* Stage: each process builds and writes its share of the selected ranks. */
    /* room for the largest of this process's ranks at once: grown from rank to rank, it
     * faulted in fresh pages again (a tenth of the export of 8 ranks of 10M calls) */
    size_t most = 0;
    for (size_t k = (size_t)p->rank; k < t->nranks; k += (size_t)p->size) {
        const size_t n = (size_t)sx_trace_rank_calls(t, t->ranks[k]);
        most = n > most ? n : most;
    }
    int64_t made = 0;
    if (!pcalls_reserve(&built, most))
        st = sx_error_set(err, SX_ERR_NOMEM, t->run->path,
                          "%s: out of memory sorting the %zu calls of a rank",
                          t->run->path, most);
    for (size_t k = (size_t)p->rank; st == SX_OK && k < t->nranks; k += (size_t)p->size) {
        st = sx_trace_load_rank(t, t->ranks[k], PROF_COLS, err);
        if (st == SX_OK)
            st = build_calls(t, t->ranks[k], &built, err);
        sx_trace_unload_rank(t, t->ranks[k]);
        if (st != SX_OK)
            break;
        if (built.n > 0) {
            sx_buf_reset(&buf);
            const bool svg = o->format == SX_FORMAT_FLAMEGRAPH;
            st = rank_stats(t, &built, t->ranks[k], svg || !o->no_call_paths,
                            svg ? (o->width > 0 ? o->width : 1200) : 0, &buf, err);
            free(path);
            path = st == SX_OK ? rank_path(output, t->ranks[k], svg ? ".svg" : ".prof")
                               : NULL;
            if (st == SX_OK && path == NULL)
                st = sx_error_set(err, SX_ERR_NOMEM, output, "out of memory");
            if (st == SX_OK)
                st = sx_out_open(path, 0, &files[k], err);
            if (st == SX_OK)
                st = sx_out_write(files[k], buf.data, buf.len, err);
            made++;
        }
        if (st != SX_OK)
            break;
    }
    st = sx_all_ok(comm, st, err);
    if (st == SX_OK && comm != MPI_COMM_NULL &&
        MPI_Allreduce(MPI_IN_PLACE, &made, 1, MPI_INT64_T, MPI_SUM, comm) != MPI_SUCCESS)
        st = sx_error_set(err, SX_ERR_MPI, t->run->path, "%s: MPI_Allreduce failed",
                          t->run->path);
    st = sx_all_ok(comm, st, err);
    if (st == SX_OK && made == 0)
        st = sx_trace_value_error(t, SX_ERR_VALUE,
                                  "No calls recorded for the requested ranks.", err);
    if (st != SX_OK)
        goto out;

    /* Stage: every process commits its files. */
    for (size_t k = 0; k < t->nranks; k++) {
        struct sx_out_file *done = files[k];
        files[k] = NULL;
        if (done != NULL && st == SX_OK)
            st = sx_out_commit(done, err);
        else
            sx_out_abort(done);
    }
    st = sx_all_ok(comm, st, err);
out:
    free(path);
    sx_buf_free(&buf);
    pcalls_free(&built);
    return st;
}

/* The files are made from the lanes and events; one file per selected rank. */
const struct sx_doc_type sx_doc_prof = {
    .format = SX_FORMAT_PROF,
    .events_for = "pstats files need",
    .needs = SX_NEED_LANES | SX_NEED_JSON_INPUT,
    .plan = prof_plan,
    .write = prof_write,
};

const struct sx_doc_type sx_doc_flamegraph = {
    .format = SX_FORMAT_FLAMEGRAPH,
    .events_for = "pstats files need",
    .needs = SX_NEED_LANES | SX_NEED_JSON_INPUT,
    .plan = prof_plan,
    .write = prof_write,
};
