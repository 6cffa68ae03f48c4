/* trace_speedscope.c - speedscope's evented profiles: calls sorted, nested, per lane */
#include "json_write.h"
#include "mpi_util.h"
#include "pipeline.h"
#include "run.h"
#include "trace.h"
#include "trace_calls.h"
#include "trace_doc.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct profile {
    int64_t lane;
    size_t first, n;  /* calls [first, first + n) */
    size_t last_root; /* its last top-level call: the profile's last event closes it */
};

struct ss_rank {
    int64_t rank;
    struct sx_call *calls; /* sorted by lane, start, -end, region, index */
    int64_t *parent;       /* per call: its parent's position, or -1 */
    size_t n;
    struct profile *profiles;
    size_t nprofiles;
    /* 'calls', 'parent' and 'scratch' have room for 'cap' calls: kept from one rank to
     * the next, so that each rank's calls do not land in fresh pages (their first touch
     * was a sixth of a one-process export) */
    int64_t *scratch;
    size_t cap;
};

static int cmp_call(const void *a, const void *b) {
    const struct sx_call *x = a, *y = b;
    if (x->lane != y->lane)
        return x->lane < y->lane ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    if (x->region != y->region)
        return x->region < y->region ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/*
 * The calls' order, cheaply. They are made in region order, each region's
 * calls in call order, which a program records by start: within a lane they
 * are a few sorted runs (one per region), merged here in one pass. What is
 * not (many lanes, unsorted rows) falls back to qsort; the order is the same.
 */

/* Merge the sorted runs 'run[0 .. nrun)' (starts; run[nrun] the end) of 'c' into 'out'.
 */
static void merge_runs(const struct sx_call *c, size_t *run, size_t *heap, size_t *pos,
                       size_t nrun, struct sx_call *out) {
    size_t nh = 0;
    for (size_t r = 0; r < nrun; r++) { /* a min-heap of run numbers by their heads */
        pos[r] = run[r];
        size_t i = nh++;
        while (i > 0 && sx_call_before(&c[pos[r]], &c[pos[heap[(i - 1) / 2]]])) {
            heap[i] = heap[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        heap[i] = r;
    }
    while (nh > 0) {
        const size_t r = heap[0];
        *out++ = c[pos[r]++];
        size_t top = r;
        if (pos[r] == run[r + 1]) { /* the run is done: the last leaf sifts down */
            top = heap[--nh];
            if (nh == 0)
                break;
        }
        size_t i = 0;
        for (;;) {
            size_t l = 2 * i + 1, m = i;
            const struct sx_call *best = &c[pos[top]];
            if (l < nh && sx_call_before(&c[pos[heap[l]]], best)) {
                m = l;
                best = &c[pos[heap[l]]];
            }
            if (l + 1 < nh && sx_call_before(&c[pos[heap[l + 1]]], best))
                m = l + 1;
            if (m == i)
                break;
            heap[i] = heap[m];
            i = m;
        }
        heap[i] = top;
    }
}

/* Sort one lane's calls [0, n) by start, -end, region, index; 'tmp' has room for n calls.
 */
static bool sort_lane(struct sx_call *c, size_t n, struct sx_call *tmp) {
    size_t nrun = 1;
    for (size_t i = 1; i < n; i++)
        nrun += sx_call_before(&c[i], &c[i - 1]);
    if (nrun <= 1)
        return true;
    if (nrun > 64 && nrun > n / 16) { /* not a few runs: a sort does as well */
        qsort(c, n, sizeof *c, cmp_call);
        return true;
    }
    size_t *run = sx_malloc((3 * nrun + 1) * sizeof *run);
    if (run == NULL)
        return false;
    size_t r = 0;
    run[r++] = 0;
    for (size_t i = 1; i < n; i++)
        if (sx_call_before(&c[i], &c[i - 1]))
            run[r++] = i;
    run[nrun] = n;
    merge_runs(c, run, run + nrun + 1, run + 2 * nrun + 1, nrun, tmp);
    memcpy(c, tmp, n * sizeof *c);
    free(run);
    return true;
}

/* Stable partition of the calls by lane, in ascending lane order, through 'tmp'.
 * False: too many lanes (the caller sorts) or no memory ('*nomem'). */
static bool by_lane(struct sx_call *c, size_t n, struct sx_call *tmp, bool *nomem) {
    struct sx_lane_map m;
    if (!sx_lane_map_build(&m, c, n, SX_LANES_MAX, nomem))
        return false;
    size_t *at = sx_malloc((m.n + 1) * sizeof *at);
    *nomem = at == NULL;
    if (at != NULL) {
        sx_lane_map_starts(&m, c, n, at);
        for (size_t i = 0; i < n; i++)
            tmp[at[sx_lane_map_place(&m, c[i].lane)]++] = c[i];
        memcpy(c, tmp, n * sizeof *c);
    }
    free(at);
    sx_lane_map_free(&m);
    return at != NULL;
}

/* Sort a rank's calls by lane, start, -end, region, index (cmp_call). False: out of
 * memory. */
static bool sort_calls(struct sx_call *c, size_t n, bool lanes, struct sx_call *tmp) {
    bool nomem = false;
    if (lanes && !by_lane(c, n, tmp, &nomem)) {
        if (nomem)
            return false;
        qsort(c, n, sizeof *c, cmp_call);
        return true;
    }
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && c[j].lane == c[i].lane)
            j++;
        if (!sort_lane(c + i, j - i, tmp))
            return false;
        i = j;
    }
    return true;
}

/* Python's repr() of a str, for the nesting error's region names. */
static void py_repr(struct sx_buf *b, const char *s) {
    char q = strchr(s, '\'') != NULL && strchr(s, '"') == NULL ? '"' : '\'';
    sx_buf_putc(b, q);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char tmp[8];
        if (*p == '\\' || *p == (unsigned char)q) {
            sx_buf_putc(b, '\\');
            sx_buf_putc(b, (char)*p);
        } else if (*p == '\n') {
            sx_buf_puts(b, "\\n");
        } else if (*p == '\r') {
            sx_buf_puts(b, "\\r");
        } else if (*p == '\t') {
            sx_buf_puts(b, "\\t");
        } else if (*p < 0x20 || *p == 0x7f) {
            snprintf(tmp, sizeof tmp, "\\x%02x", *p);
            sx_buf_puts(b, tmp);
        } else {
            sx_buf_putc(b, (char)*p);
        }
    }
    sx_buf_putc(b, q);
}

static void call_label(const struct sx_trace *t, const struct sx_call *c,
                       struct sx_buf *b) {
    char tmp[96];
    py_repr(b, t->run->names[t->regions[c->region]]);
    snprintf(tmp, sizeof tmp, " call %" PRIu64 " [%" PRId64 ", %" PRId64 "] ns", c->index,
             c->start, c->end);
    sx_buf_puts(b, tmp);
}

/* NestingError("recorded calls are not properly nested: ...") for 'c' inside 'p'. */
static enum sx_status overlap_error(const struct sx_trace *t, const struct sx_call *c,
                                    const struct sx_call *p, struct sx_error *err) {
    struct sx_buf b = {0};
    sx_buf_puts(&b, "recorded calls are not properly nested: ");
    call_label(t, c, &b);
    sx_buf_puts(&b, " starts inside ");
    call_label(t, p, &b);
    sx_buf_puts(&b, " but ends after it. Regions must nest completely or not overlap at "
                    "all - check for a missing or misordered sp_end / __exit__.");
    enum sx_status st =
        sx_trace_value_error(t, SX_ERR_FORMAT, b.data ? b.data : "out of memory", err);
    sx_buf_free(&b);
    return st;
}

enum sx_status sx_ss_nest_error(const struct sx_trace *t, const struct sx_ss_call *c,
                                const struct sx_ss_call *p, struct sx_error *err) {
    const struct sx_call
        x = {.start = c->start, .end = c->end, .region = c->region, .index = c->index},
        y = {.start = p->start, .end = p->end, .region = p->region, .index = p->index};
    return overlap_error(t, &x, &y, err);
}

/*
 * Depths and the nesting check of one lane's calls [0, n), sorted by start,
 * -end: as _depths, _parents and the escape check of build_call_arrays.
 * 'scratch' and 'parent' have room for n values.
 */
static enum sx_status nest_lane_exact(const struct sx_trace *t, struct sx_call *c,
                                      size_t n, int64_t *scratch, int64_t *parent,
                                      struct sx_error *err) {
    /* ('parent' is the sort's room: it is free until the parents are found) */
    if (!sx_calls_nest_exact(c, NULL, n, parent, scratch, parent))
        return sx_trace_value_error(t, SX_ERR_FORMAT,
                                    "recorded calls are not properly nested", err);
    /* Every child lies inside its parent: only its end can escape. */
    for (size_t i = 0; i < n; i++)
        if (parent[i] >= 0 && c[parent[i]].end < c[i].end)
            return overlap_error(t, &c[i], &c[parent[i]], err);
    return SX_OK;
}

/* nest_lane_exact's depths and parents in one pass where the calls nest
 * (sx_calls_nest_stack); the first call that ends after its parent: the exact
 * method again, which names the reference's call. */
static enum sx_status nest_lane(const struct sx_trace *t, struct sx_call *c, size_t n,
                                int64_t *scratch, int64_t *parent, struct sx_error *err) {
    if (sx_calls_nest_stack(c, NULL, n, parent, scratch))
        return SX_OK;
    return nest_lane_exact(t, c, n, scratch, parent, err);
}

/*
 * Without lanes, the common case: a program records each region's calls by
 * start, so every row is one run in the calls' order, and the calls are
 * merged from the rows' columns straight into r->calls (no copy in region
 * order first, no second array: sx_call_merge) and nested as they come out
 * (nest_lane's stack: no second pass), making the rank's one profile.
 * '*merged': false when a row is out of order (the caller sorts and nests).
 */
static enum sx_status merge_rows(const struct sx_trace *t, struct ss_rank *r,
                                 bool *merged, struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t nrun = 0;
    bool sorted = true, back = false;
    struct sx_call_merge m = {0};
    struct sx_call_row *rows = sx_malloc((t->nregions + 1) * sizeof *rows);
    *merged = false;
    SX_CHECK(rows != NULL, SX_ERR_NOMEM, err, t->run->path,
             "%s: out of memory sorting the %zu calls of rank %" PRId64, t->run->path,
             r->n, r->rank);
    for (size_t g = 0; g < t->nregions; g++) {
        const struct sx_row *row = sx_trace_row(t, g, r->rank);
        if (row == NULL || row->is_aggregate || row->count == 0)
            continue;
        const int64_t *s = row->col[SX_COL_START], *e = row->col[SX_COL_END];
        sorted &= sx_call_row_sorted(s, e, row->count, &back);
        rows[nrun++] = (struct sx_call_row){s, e, row->count, (uint32_t)g};
    }
    if (back) {
        st = sx_trace_value_error(t, SX_ERR_FORMAT,
                                  "a recorded call ends before it starts", err);
        goto out;
    }
    if (!sorted)
        goto out;
    r->profiles = sx_malloc(sizeof *r->profiles);
    SX_CHECK(sx_call_merge_init(&m, rows, nrun) && r->profiles != NULL, SX_ERR_NOMEM, err,
             t->run->path, "%s: out of memory sorting the %zu calls of rank %" PRId64,
             t->run->path, r->n, r->rank);
    struct sx_call *const c = r->calls;
    int64_t *const open = r->scratch, *const parent = r->parent;
    size_t depth = 0, last_root = 0;
    bool nested = true;
    for (size_t at = 0; at < r->n; at++) {
        sx_call_merge_next(&m, &c[at]);
        if (nested && !sx_calls_stack_step(c, at, parent, open, &depth))
            nested = false; /* the exact method names the call, below */
        else if (nested && depth == 1)
            last_root = at;
    }
    if (!nested) {
        st = nest_lane_exact(t, c, r->n, open, parent, err);
        for (size_t i = 0; st == SX_OK && i < r->n; i++)
            last_root = parent[i] < 0 ? i : last_root;
    }
    if (st == SX_OK) {
        r->nprofiles = r->n > 0 ? 1 : 0;
        r->profiles[0] = (struct profile){-1, 0, r->n, last_root};
        *merged = true;
    }
out:
    sx_call_merge_free(&m);
    free(rows);
    return st;
}

static void ss_free(struct ss_rank *r);

/* Build selected rank 'k''s profiles (start, end, thread, task loaded) in 'r', whose
 * arrays are reused where they have room. */
static enum sx_status ss_build(const struct sx_trace *t, size_t k, struct ss_rank *r,
                               struct sx_error *err) {
    enum sx_status st = SX_OK;
    const int64_t rank = t->ranks[k];
    r->rank = rank;
    r->n = 0;
    r->nprofiles = 0;
    free(r->profiles);
    r->profiles = NULL;
    size_t n = 0;
    bool lanes = false;
    for (size_t g = 0; g < t->nregions; g++) {
        const struct sx_row *row = sx_trace_row(t, g, rank);
        if (row == NULL || row->is_aggregate)
            continue;
        n += row->count;
        if (row->cols & SX_COLBIT(SX_COL_THREAD))
            lanes = true;
    }
    if (n + 1 > r->cap) { /* an eighth more: the next rank, a little larger, fits */
        const size_t cap = n + n / 8 + 1;
        free(r->calls);
        free(r->scratch);
        free(r->parent);
        r->calls = sx_malloc(cap * sizeof *r->calls);
        r->scratch = sx_malloc(cap * sizeof *r->scratch);
        r->parent = sx_malloc(cap * sizeof *r->parent);
        r->cap = r->calls != NULL && r->scratch != NULL && r->parent != NULL ? cap : 0;
    }
    int64_t *const scratch = r->scratch;
    SX_CHECK(r->cap >= n + 1, SX_ERR_NOMEM, err, t->run->path,
             "%s: out of memory sorting the %zu calls of rank %" PRId64, t->run->path, n,
             rank);
    r->n = n;
    bool merged = false;
    if (!lanes) { /* checks every call's end, merges and nests when the rows are sorted */
        st = merge_rows(t, r, &merged, err);
        if (st != SX_OK || merged)
            goto out;
    }
    for (size_t g = 0; lanes && g < t->nregions; g++) {
        const struct sx_row *row = sx_trace_row(t, g, rank);
        if (row == NULL || row->is_aggregate)
            continue;
        const int64_t *st0 = row->col[SX_COL_START], *en0 = row->col[SX_COL_END];
        for (uint64_t i = 0; i < row->count; i++)
            if (en0[i] < st0[i]) {
                st = sx_trace_value_error(t, SX_ERR_FORMAT,
                                          "a recorded call ends before it starts", err);
                goto out;
            }
    }
    { /* lanes, or rows out of order: in region order, then sorted */
        size_t at = 0;
        for (size_t g = 0; g < t->nregions; g++) {
            const struct sx_row *row = sx_trace_row(t, g, rank);
            if (row == NULL || row->is_aggregate)
                continue;
            const int64_t *th =
                (row->cols & SX_COLBIT(SX_COL_THREAD)) ? row->col[SX_COL_THREAD] : NULL;
            const int64_t *tk =
                (row->cols & SX_COLBIT(SX_COL_TASK)) ? row->col[SX_COL_TASK] : NULL;
            for (uint64_t i = 0; i < row->count; i++) {
                struct sx_call *c = &r->calls[at++];
                c->start = row->col[SX_COL_START][i];
                c->end = row->col[SX_COL_END][i];
                c->lane = lanes ? sx_call_lane(th, tk, i) : -1;
                c->region = (uint32_t)g;
                c->depth = 0;
                c->index = i;
            }
        }
        struct sx_call *tmp = sx_malloc((n + 1) * sizeof *tmp);
        bool sorted = tmp != NULL && sort_calls(r->calls, n, lanes, tmp);
        free(tmp);
        SX_CHECK(sorted, SX_ERR_NOMEM, err, t->run->path,
                 "%s: out of memory sorting the %zu calls of rank %" PRId64, t->run->path,
                 n, rank);
    }
    /* Profiles: runs of one lane, in ascending lane order. */
    /* one profile per lane: the sorted calls change lane that many times */
    size_t nlanes = n > 0 ? 1 : 0;
    for (size_t i = 1; i < n; i++)
        nlanes += r->calls[i].lane != r->calls[i - 1].lane;
    r->profiles = sx_malloc((nlanes + 1) * sizeof *r->profiles);
    SX_CHECK(r->profiles != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && r->calls[j].lane == r->calls[i].lane)
            j++;
        st = nest_lane(t, r->calls + i, j - i, scratch, r->parent + i, err);
        if (st != SX_OK)
            goto out;
        size_t last_root = i;
        for (size_t q = i; q < j; q++) {
            if (r->parent[q] >= 0)
                r->parent[q] += (int64_t)i; /* positions in the rank's array */
            else
                last_root = q;
        }
        r->profiles[r->nprofiles++] =
            (struct profile){r->calls[i].lane, i, j - i, last_root};
        i = j;
    }
out:
    if (st != SX_OK) {
        r->n = 0;
        r->nprofiles = 0;
    }
    return st;
}

static void ss_free(struct ss_rank *r) {
    if (r == NULL)
        return;
    free(r->calls);
    free(r->parent);
    free(r->scratch);
    free(r->profiles);
    free(r);
}

/*
 * What the survey needs of a rank (its columns loaded), without sorting its
 * calls: their number, the first start, and the frames in the order the
 * rank's profiles first open them: each region's first call in the sorted
 * order is its least call (cmp_call), and the regions' first calls sorted as
 * the calls are give that order. 'fc' and 'order' have room for every region.
 * The order's length.
 */
static size_t ss_scan(const struct sx_trace *t, int64_t rank, struct sx_call *fc,
                      uint32_t *order, uint64_t *ncalls, int64_t *first) {
    size_t nf = 0;
    uint64_t n = 0;
    int64_t lo = INT64_MAX;
    bool lanes = false; /* as ss_build: any row with threads puts every call on a lane */
    for (size_t g = 0; g < t->nregions; g++) {
        const struct sx_row *row = sx_trace_row(t, g, rank);
        if (row != NULL && !row->is_aggregate && (row->cols & SX_COLBIT(SX_COL_THREAD)))
            lanes = true;
    }
    for (size_t g = 0; g < t->nregions; g++) {
        const struct sx_row *row = sx_trace_row(t, g, rank);
        if (row == NULL || row->is_aggregate || row->count == 0)
            continue;
        const int64_t *st = row->col[SX_COL_START], *en = row->col[SX_COL_END];
        const int64_t *th = lanes && (row->cols & SX_COLBIT(SX_COL_THREAD))
                                ? row->col[SX_COL_THREAD]
                                : NULL;
        const int64_t *tk =
            lanes && (row->cols & SX_COLBIT(SX_COL_TASK)) ? row->col[SX_COL_TASK] : NULL;
        struct sx_call b = {.start = st[0],
                            .end = en[0],
                            .lane = sx_call_lane(th, tk, 0),
                            .region = (uint32_t)g};
        for (uint64_t i = 1; i < row->count; i++) {
            const struct sx_call c = {.start = st[i],
                                      .end = en[i],
                                      .lane = sx_call_lane(th, tk, i),
                                      .index = i,
                                      .region = (uint32_t)g};
            if (c.lane < b.lane || (c.lane == b.lane && sx_call_before(&c, &b)))
                b = c;
            if (st[i] < lo)
                lo = st[i];
        }
        if (st[0] < lo)
            lo = st[0];
        fc[nf++] = b;
        n += row->count;
    }
    qsort(fc, nf, sizeof *fc, cmp_call);
    for (size_t i = 0; i < nf; i++)
        order[i] = fc[i].region;
    *ncalls = n;
    *first = lo;
    return nf;
}

static void ss_head(const struct sx_trace *t, const uint32_t *frames, size_t nframes,
                    struct sx_buf *out) {
    sx_buf_puts(out,
                "{\"$schema\": \"https://www.speedscope.app/file-format-schema.json\", "
                "\"exporter\": \"scope-export@" SX_VERSION_STRING "\", \"name\": ");
    sx_buf_cstr(out, t->label);
    sx_buf_puts(out, ", \"activeProfileIndex\": 0, \"shared\": {\"frames\": [");
    for (size_t i = 0; i < nframes; i++) {
        sx_buf_puts(out, i > 0 ? ", {\"name\": " : "{\"name\": ");
        sx_buf_append(out, t->jname[frames[i]], t->jname_len[frames[i]]);
        sx_buf_putc(out, '}');
    }
    sx_buf_puts(out, "]}, \"profiles\": [");
}

static void ss_tail(struct sx_buf *out) { sx_buf_puts(out, "]}"); }

#define PUT(p, lit)                                                                      \
    do {                                                                                 \
        memcpy((p), (lit), sizeof(lit) - 1);                                             \
        (p) += sizeof(lit) - 1;                                                          \
    } while (0)

static char *put_event(char *p, bool open, uint32_t frame, double at, bool first) {
    if (!first)
        PUT(p, ", ");
    if (open)
        PUT(p, "{\"type\": \"O\", \"frame\": ");
    else
        PUT(p, "{\"type\": \"C\", \"frame\": ");
    p += sx_fmt_u64(p, frame);
    PUT(p, ", \"at\": ");
    p += sx_fmt_double(p, at);
    *p++ = '}';
    return p;
}

static void profile_head(const struct sx_trace *t, const struct ss_rank *r,
                         const struct profile *pf, double origin, bool first,
                         struct sx_buf *out, struct sx_buf *tmp) {
    if (!first)
        sx_buf_puts(out, ", ");
    sx_buf_puts(out, "{\"type\": \"evented\", \"name\": ");
    sx_buf_reset(tmp);
    sx_buf_puts(tmp, "rank ");
    sx_buf_i64(tmp, r->rank);
    if (pf->lane != -1) {
        sx_buf_puts(tmp, " - ");
        sx_trace_lane_label(t->run, pf->lane, r->rank, tmp);
    }
    sx_buf_str(out, tmp->data ? tmp->data : "", tmp->len);
    out->failed |= tmp->failed; /* the scratch text's failure is the document's */
    sx_buf_puts(out, ", \"unit\": \"seconds\", \"startValue\": ");
    sx_buf_double(out, (double)r->calls[pf->first].start / 1e9 - origin);
    sx_buf_puts(out, ", \"endValue\": ");
    sx_buf_double(out, (double)r->calls[pf->last_root].end / 1e9 - origin);
    sx_buf_puts(out, ", \"events\": [");
}

/*
 * A block in two steps (sx_trace_format.pre): its maker sorts and nests the rank's
 * calls and writes, in place of each event's text, a record of the event (its
 * time in ns, not yet in seconds: a double's text is most of the cost), and its
 * other text as text records; rank 0 then writes the text (ss_finish). The
 * records are 16 bytes, in the maker's byte order (both ends are one program).
 */
enum { EV_OPEN = 1u, EV_FIRST = 2u, EV_TEXT = 4u };

struct ev_rec {
    int64_t ns;     /* the event's time; a text record: its length */
    uint32_t frame; /* the frame's position */
    uint32_t flags; /* EV_* */
};

/* One event: its text, or its record when 'pre'. */
static inline bool put_ev(struct sx_buf *out, bool pre, bool open, uint32_t frame,
                          int64_t ns, double origin, bool first) {
    if (!sx_buf_reserve(out, 96))
        return false;
    if (pre) {
        const struct ev_rec e = {ns, frame,
                                 (open ? EV_OPEN : 0u) | (first ? EV_FIRST : 0u)};
        memcpy(out->data + out->len, &e, sizeof e);
        out->len += sizeof e;
        return true;
    }
    char *p =
        put_event(out->data + out->len, open, frame, (double)ns / 1e9 - origin, first);
    out->len = (size_t)(p - out->data);
    return true;
}

/* Text 'txt' into 'out': as it is, or as a text record when 'pre' (padded to 8). */
static void put_txt(struct sx_buf *out, bool pre, const struct sx_buf *txt) {
    if (pre) {
        const struct ev_rec e = {(int64_t)txt->len, 0, EV_TEXT};
        static const char zero[8] = {0};
        sx_buf_append(out, (const char *)&e, sizeof e);
        sx_buf_append(out, txt->data != NULL ? txt->data : "", txt->len);
        sx_buf_append(out, zero, (8 - txt->len % 8) % 8);
    } else {
        sx_buf_append(out, txt->data != NULL ? txt->data : "", txt->len);
    }
    out->failed |= txt->failed;
}

/* Close the open calls of 'stack' down to 'depth' entries. */
static inline bool close_to(const struct ss_rank *r, const uint32_t *frame_of,
                            double origin, size_t *stack, size_t *depth, size_t keep,
                            bool pre, struct sx_buf *out) {
    while (*depth > keep) {
        const struct sx_call *o = &r->calls[stack[--*depth]];
        if (!put_ev(out, pre, false, frame_of[o->region], o->end, origin, false))
            return false;
    }
    return true;
}

/* Calls [i0, i1) of the rank 'r' built: their events' text, or when 'pre' their
 * records. Inlined twice, so that 'pre' costs the text nothing. */
static inline __attribute__((always_inline)) enum sx_status
ss_block_as(const struct sx_trace *t, const struct ss_rank *r, const uint32_t *frame_of,
            double origin, bool doc_first, size_t i0, size_t i1, bool pre,
            struct sx_buf *out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_buf tmp = {0}, txt = {0};
    size_t *stack = NULL, depth = 0, cap = 0;
    size_t q = 0; /* the profile of call i */
    while (q + 1 < r->nprofiles && r->profiles[q].first + r->profiles[q].n <= i0)
        q++;
    for (size_t i = i0; i < i1 && i < r->n; i++) {
        const struct profile *pf = &r->profiles[q];
        const struct sx_call *c = &r->calls[i];
        bool ev_first = false;
        if (i == pf->first) {
            sx_buf_reset(&txt);
            profile_head(t, r, pf, origin, doc_first && q == 0, pre ? &txt : out, &tmp);
            if (pre)
                put_txt(out, true, &txt);
            depth = 0;
            ev_first = true;
        } else if (i == i0) {
            /* a block that starts inside a profile: the calls still open */
            size_t d = 0;
            for (int64_t j = (int64_t)i - 1; j >= 0; j = r->parent[j])
                d++;
            if (d > cap) {
                free(stack);
                cap = d + 16;
                stack = sx_malloc(cap * sizeof *stack);
                SX_CHECK(stack != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
            }
            depth = d;
            for (int64_t j = (int64_t)i - 1; j >= 0; j = r->parent[j])
                stack[--d] = (size_t)j;
        }
        if (!close_to(r, frame_of, origin, stack, &depth, c->depth, pre, out))
            break;
        if (depth + 1 > cap) {
            size_t nc = cap ? cap * 2 : 64;
            size_t *ns = sx_realloc(stack, nc * sizeof *ns);
            SX_CHECK(ns != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
            stack = ns;
            cap = nc;
        }
        if (!put_ev(out, pre, true, frame_of[c->region], c->start, origin, ev_first))
            break;
        stack[depth++] = i;
        if (i + 1 == pf->first + pf->n) { /* the profile's end */
            if (!close_to(r, frame_of, origin, stack, &depth, 0, pre, out))
                break;
            static const struct sx_buf end = {.data = (char *)"]}", .len = 2};
            put_txt(out, pre, &end);
            if (q + 1 < r->nprofiles)
                q++;
        }
    }
    if (out->data != NULL && !pre)
        out->data[out->len] = '\0';
out:
    free(stack);
    sx_buf_free(&tmp);
    sx_buf_free(&txt);
    if (st == SX_OK && out->failed)
        st = sx_error_set(err, SX_ERR_NOMEM, t->run->path,
                          "%s: out of memory formatting the profiles of rank %" PRId64,
                          t->run->path, r->rank);
    return st;
}

static enum sx_status ss_block(const struct sx_trace *t, const struct ss_rank *r,
                               const uint32_t *frame_of, double origin, bool doc_first,
                               size_t i0, size_t i1, struct sx_buf *out,
                               struct sx_error *err) {
    return ss_block_as(t, r, frame_of, origin, doc_first, i0, i1, false, out, err);
}

static enum sx_status ss_block_pre(const struct sx_trace *t, const struct ss_rank *r,
                                   const uint32_t *frame_of, double origin,
                                   bool doc_first, size_t i0, size_t i1,
                                   struct sx_buf *out, struct sx_error *err) {
    return ss_block_as(t, r, frame_of, origin, doc_first, i0, i1, true, out, err);
}

/* The text of a block's records (ss_block_pre), on rank 0. */
static enum sx_status ss_finish_text(const char *path, double origin,
                                     const struct sx_buf *in, struct sx_buf *out,
                                     struct sx_error *err) {
    size_t at = 0;
    while (at + sizeof(struct ev_rec) <= in->len) {
        struct ev_rec e;
        memcpy(&e, in->data + at, sizeof e);
        at += sizeof e;
        if (e.flags & EV_TEXT) {
            const size_t n = (size_t)e.ns;
            if (e.ns < 0 || n > in->len - at)
                break;
            sx_buf_append(out, in->data + at, n);
            at += n + (8 - n % 8) % 8;
            continue;
        }
        if (!put_ev(out, false, e.flags & EV_OPEN, e.frame, e.ns, origin,
                    e.flags & EV_FIRST))
            break;
    }
    if (out->failed)
        return sx_error_set(err, SX_ERR_NOMEM, path,
                            "%s: out of memory formatting the profiles", path);
    if (at != in->len)
        return sx_error_set(err, SX_ERR_INTERNAL, path,
                            "%s: a speedscope block's records end inside a record", path);
    if (out->data != NULL)
        out->data[out->len] = '\0';
    return SX_OK;
}

/* MPI counts are int: the survey's records stay under this many. */
#define MAX_MSG (1u << 28)

/* The document's state on this process. */
struct ss_doc {
    struct sx_trace *t;
    uint32_t *frames, *frame_of;
    size_t nframes;
    double origin;
    size_t first_k;        /* the selected rank whose first profile opens the list */
    struct ss_rank *built; /* the rank this process built last */
    size_t built_k;
};

/* speedscope's columns: the times and the lanes. */
#define SS_COLS                                                                          \
    (SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END) | SX_COLBIT(SX_COL_THREAD) |        \
     SX_COLBIT(SX_COL_TASK))

/* Selected rank k's sorted, nested calls: read and built once per process. */
static enum sx_status ss_load(struct ss_doc *d, size_t k, struct sx_error *err) {
    enum sx_status st = SX_OK;
    if (d->built != NULL && d->built_k == k)
        return SX_OK;
    if (d->built == NULL)
        d->built = sx_calloc(1, sizeof *d->built);
    SX_CHECK(d->built != NULL, SX_ERR_NOMEM, err, d->t->run->path, "out of memory");
    d->built_k = SIZE_MAX; /* until it is built */
    st = sx_trace_load_rank(d->t, d->t->ranks[k], SS_COLS, err);
    if (st == SX_OK)
        st = ss_build(d->t, k, d->built, err);
    sx_trace_unload_rank(d->t, d->t->ranks[k]);
    if (st == SX_OK)
        d->built_k = k;
out:
    return st;
}

/*
 * speedscope's first pass over this process's share of the selected ranks
 * (k % size == rank): per rank its calls, first start and the frames its
 * profiles open, as int64 records [k, ncalls, first_start, nframes,
 * frames...] appended to 'rec'; a scan, not a sort. A rank's calls are sorted
 * and checked by each process that formats its blocks (ss_load): calls that
 * do not nest fail the rank's first block, and the stream reports the first
 * failing block of the document, so the error is the first such rank's, as
 * the reference's.
 * On a failure, '*bad_k' is the lowest selected rank that failed (else
 * unchanged).
 */
static enum sx_status ss_survey(struct ss_doc *d, int rank, int size, int64_t **rec,
                                size_t *nrec, size_t *bad_k, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_trace *t = d->t;
    struct sx_call *fc = sx_calloc(t->nregions + 1, sizeof *fc);
    uint32_t *order = sx_calloc(t->nregions + 1, sizeof *order);
    size_t cap = 64, n = 0;
    int64_t *v = sx_malloc(cap * sizeof *v);
    SX_CHECK(fc != NULL && order != NULL && v != NULL, SX_ERR_NOMEM, err, t->run->path,
             "out of memory");
    /* In order: the first failure is this process's lowest failing rank. */
    for (size_t k = (size_t)rank; k < t->nranks; k += (size_t)size) {
        st = sx_trace_load_rank(t, t->ranks[k], SS_COLS, err);
        uint64_t nc = 0;
        int64_t first = INT64_MAX;
        size_t nf = st == SX_OK ? ss_scan(t, t->ranks[k], fc, order, &nc, &first) : 0;
        sx_trace_unload_rank(t, t->ranks[k]);
        if (st != SX_OK) {
            *bad_k = k;
            break;
        }
        if (n + 4 + nf > cap) {
            cap = (n + 4 + nf) * 2;
            int64_t *nv = sx_realloc(v, cap * sizeof *nv);
            SX_CHECK(nv != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
            v = nv;
        }
        v[n++] = (int64_t)k;
        v[n++] = (int64_t)nc;
        v[n++] = first;
        v[n++] = (int64_t)nf;
        for (size_t i = 0; i < nf; i++)
            v[n++] = order[i];
    }
out:
    free(fc);
    free(order);
    if (st != SX_OK) {
        free(v);
        v = NULL;
        n = 0;
    }
    *rec = v;
    *nrec = n;
    return st;
}

/* NOTE: collective. Every process gets every process's survey records. */
static enum sx_status gather_records(MPI_Comm comm, int size, const int64_t *mine,
                                     size_t n, int64_t **all, size_t *nall,
                                     struct sx_error *err) {
    enum sx_status st = SX_OK;
    int *counts = NULL, *displs = NULL;
    int64_t *v = NULL;
    *all = NULL;
    *nall = 0;
    if (comm == MPI_COMM_NULL) {
        v = sx_malloc((n + 1) * sizeof *v);
        SX_CHECK(v != NULL, SX_ERR_NOMEM, err, "", "out of memory");
        memcpy(v, mine, n * sizeof *v);
        *all = v;
        *nall = n;
        return SX_OK;
    }
    /* NOTE: collective: a local failure is agreed before each collective, so that no
     * rank leaves the others waiting in it */
    counts = sx_calloc((size_t)size, sizeof *counts);
    displs = sx_calloc((size_t)size, sizeof *displs);
    if (counts == NULL || displs == NULL || n >= MAX_MSG)
        st = sx_error_set(err, SX_ERR_NOMEM, "", "out of memory");
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    int c = (int)n;
    SX_CHECK(MPI_Allgather(&c, 1, MPI_INT, counts, 1, MPI_INT, comm) == MPI_SUCCESS,
             SX_ERR_MPI, err, "", "MPI_Allgather failed");
    size_t total = 0;
    for (int r = 0; r < size; r++) {
        displs[r] = (int)total;
        total += (size_t)counts[r];
    }
    SX_CHECK(total < MAX_MSG, SX_ERR_NOMEM, err, "", "too many ranks to survey");
    v = sx_malloc((total + 1) * sizeof *v);
    if (v == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, "", "out of memory");
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(MPI_Allgatherv(mine, c, MPI_INT64_T, v, counts, displs, MPI_INT64_T, comm) ==
                 MPI_SUCCESS,
             SX_ERR_MPI, err, "", "MPI_Allgatherv failed");
    *all = v;
    v = NULL;
    *nall = total;
out:
    free(v);
    free(counts);
    free(displs);
    return st;
}

/* The shared frame table, the origin and the first profile, from every record. */
static enum sx_status ss_shared_frames(struct ss_doc *d, const int64_t *rec, size_t n,
                                       struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_trace *t = d->t;
    const int64_t **by_k = sx_calloc(t->nranks + 1, sizeof *by_k);
    bool *seen = sx_calloc(t->nregions + 1, sizeof *seen);
    d->frames = sx_calloc(t->nregions + 1, sizeof *d->frames);
    d->frame_of = sx_calloc(t->nregions + 1, sizeof *d->frame_of);
    SX_CHECK(by_k != NULL && seen != NULL && d->frames != NULL && d->frame_of != NULL,
             SX_ERR_NOMEM, err, t->run->path, "out of memory");
    for (size_t i = 0; i + 4 <= n; i += 4 + (size_t)rec[i + 3])
        if (rec[i] >= 0 && (size_t)rec[i] < t->nranks)
            by_k[rec[i]] = rec + i;
    int64_t first = INT64_MAX;
    uint64_t ncalls = 0;
    d->first_k = t->nranks;
    for (size_t k = 0; k < t->nranks; k++) {
        const int64_t *r = by_k[k];
        SX_CHECK(r != NULL, SX_ERR_INTERNAL, err, t->run->path,
                 "%s: no survey of selected rank %zu", t->run->path, k);
        if (r[1] == 0)
            continue;
        if (d->first_k == t->nranks)
            d->first_k = k;
        ncalls += (uint64_t)r[1];
        if (r[2] < first)
            first = r[2];
        for (int64_t i = 0; i < r[3]; i++) {
            uint32_t g = (uint32_t)r[4 + i];
            if (g < t->nregions && !seen[g]) {
                seen[g] = true;
                d->frame_of[g] = (uint32_t)d->nframes;
                d->frames[d->nframes++] = g;
            }
        }
    }
    if (ncalls == 0) {
        st = sx_trace_value_error(t, SX_ERR_VALUE,
                                  "No calls recorded for the requested ranks.", err);
        goto out;
    }
    d->origin = (double)first / 1e9;
out:
    free(by_k);
    free(seen);
    return st;
}

static void ss_doc_free(void *fmt) {
    struct ss_doc *d = fmt;
    if (d == NULL)
        return;
    ss_free(d->built);
    free(d->frames);
    free(d->frame_of);
    free(d);
}

/* NOTE: collective. Every rank surveys its share of the selected ranks; all learn the
 * frames, the origin and the first profile. */
static enum sx_status ss_prepare(const struct sx_pipe *p, struct sx_trace *t, void **fmt,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    int64_t *rec = NULL, *all = NULL;
    size_t nrec = 0, nall = 0;
    struct ss_doc *d = sx_calloc(1, sizeof *d);
    *fmt = d;
    if (d == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, t->run->path, "out of memory");
    else
        d->t = t;
    st = sx_all_ok(p->comm, st, err);
    size_t bad_k = SIZE_MAX;
    if (st == SX_OK)
        st = ss_survey(d, p->rank, p->size, &rec, &nrec, &bad_k, err);
    /* the error of the first selected rank that fails, whichever process checked it */
    st = sx_all_ok_first(p->comm, st, bad_k < t->nranks ? (long)bad_k : LONG_MAX, err);
    if (st == SX_OK)
        st = gather_records(p->comm, p->size, rec, nrec, &all, &nall, err);
    st = sx_all_ok(p->comm, st, err);
    if (st == SX_OK)
        st = ss_shared_frames(d, all, nall, err); /* the same on every rank */
    free(rec);
    free(all);
    return st;
}

static void ss_doc_head(void *fmt, struct sx_buf *out) {
    const struct ss_doc *d = fmt;
    ss_head(d->t, d->frames, d->nframes, out);
}

static void ss_doc_tail(void *fmt, struct sx_buf *out) {
    (void)fmt;
    ss_tail(out);
}

/* Block k's [from, to): its text, or its records when 'pre' (finished on rank 0). */
static enum sx_status ss_doc_make(void *fmt, size_t k, uint64_t from, uint64_t to,
                                  bool pre, struct sx_buf *out, struct sx_error *err) {
    struct ss_doc *d = fmt;
    enum sx_status st = ss_load(d, k, err);
    if (st != SX_OK)
        return st;
    const bool first = k == d->first_k;
    return pre ? ss_block_pre(d->t, d->built, d->frame_of, d->origin, first, (size_t)from,
                              (size_t)to, out, err)
               : ss_block(d->t, d->built, d->frame_of, d->origin, first, (size_t)from,
                          (size_t)to, out, err);
}

static enum sx_status ss_doc_block(void *fmt, size_t k, uint64_t from, uint64_t to,
                                   struct sx_buf *out, struct sx_error *err) {
    return ss_doc_make(fmt, k, from, to, false, out, err);
}

static enum sx_status ss_doc_pre(void *fmt, size_t k, uint64_t from, uint64_t to,
                                 struct sx_buf *out, struct sx_error *err) {
    return ss_doc_make(fmt, k, from, to, true, out, err);
}

static enum sx_status ss_doc_finish(void *fmt, const struct sx_buf *in,
                                    struct sx_buf *out, struct sx_error *err) {
    const struct ss_doc *d = fmt;
    return ss_finish_text(d->t->run->path, d->origin, in, out, err);
}

/* An open and a close event a call (about 110 bytes); a rank without calls has no
 * profile. */
static const struct sx_trace_format ss_format = {
    .name = "speedscope",
    .needs_regions = true,
    .skip_empty_ranks = true,
    .call_bytes = 110,
    .prepare = ss_prepare,
    .head = ss_doc_head,
    .tail = ss_doc_tail,
    .block = ss_doc_block,
    .pre = ss_doc_pre,
    .finish = ss_doc_finish,
    .free = ss_doc_free,
};

static enum sx_status ss_plan(const struct sx_pipe *p, struct sx_doc_state *ds,
                              struct sx_error *err) {
    return sx_trace_doc_plan(p, ds, &ss_format, err);
}

const struct sx_doc_type sx_doc_speedscope = {
    .format = SX_FORMAT_SPEEDSCOPE,
    .events_for = "speedscope document needs",
    .needs = SX_NEED_LANES | SX_NEED_GPU | SX_NEED_JSON_INPUT,
    .plan = ss_plan,
    /* every process that formats a block of a rank sorts and nests its calls first */
    .root_writes_only = true,
};
