/* trace_calls.h - a rank's calls in start order: its rows merged, ends sorted */
#ifndef SX_TRACE_CALLS_H
#define SX_TRACE_CALLS_H

#include "internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * One call of a rank, as build_call_arrays sees it (speedscope, pstats, flame
 * graphs). Its place in region order, call order (the sorts' stable tie-break)
 * is (region, index): the rows come in region order.
 */
struct sx_call {
    int64_t start, end;
    int64_t lane;    /* task, else -2 - thread, else -1 */
    uint64_t index;  /* call number in its row */
    uint32_t region; /* region position */
    uint32_t depth;
};

/* Whether 'x' comes before 'y' by start, then the longest first, then region and
 * index (lanes aside). */
static inline bool sx_call_before(const struct sx_call *x, const struct sx_call *y) {
    if (x->start != y->start)
        return x->start < y->start;
    if (x->end != y->end)
        return x->end > y->end;
    if (x->region != y->region)
        return x->region < y->region;
    return x->index < y->index;
}

/*
 * Whether the calls of one row ('start', 'end', 'n' of them) are in that order
 * already (a program records a region's calls by start): one sorted run. Sets
 * '*back' when a call ends before it starts (leaves it alone otherwise).
 */
bool sx_call_row_sorted(const int64_t *start, const int64_t *end, uint64_t n, bool *back);

/* One sorted row of calls (region position 'region'), to merge with the others. */
struct sx_call_row {
    const int64_t *start, *end;
    uint64_t n;
    uint32_t region;
};

/* A row as sx_call_merge reads it: its next call. */
struct sx_call_run {
    const int64_t *start, *end;
    uint64_t i, n;
};

/* A run's next call's key; past its last call, (INT64_MAX, INT64_MIN, UINT32_MAX). */
struct sx_call_head {
    int64_t start, end;
    uint32_t region; /* the runs are of distinct regions: the key is unique */
};

/*
 * Sorted rows merged into one sequence of calls in sx_call_before's order: the
 * rows are the leaves of a tournament tree whose nodes keep the loser of their
 * match, so that a call out, its run's next call plays log2(rows) matches on the
 * way up, one comparison each.
 */
struct sx_call_merge {
    struct sx_call_run *run; /* nleaf of them, the rows first */
    struct sx_call_head *head;
    uint32_t *tree; /* [1, nleaf): the losers; the winners while it is built */
    size_t nleaf;
    uint32_t w; /* the leaf of the next call */
};

/*
 * Start a merge of the sorted rows 'rows[0 .. nrow)' of distinct regions. False: out
 * of memory. sx_call_merge_free frees it, also after a failed start.
 */
bool sx_call_merge_init(struct sx_call_merge *m, const struct sx_call_row *rows,
                        size_t nrow);
void sx_call_merge_free(struct sx_call_merge *m);

/* The next call into 'c' (lane -1, depth 0): as many times as the rows have calls.
 * (Branches: nested calls come out of the merge in a pattern a predictor learns;
 * selects by masks took more time than the branches' misses on 10M nested calls.) */
static inline void sx_call_merge_next(struct sx_call_merge *m, struct sx_call *c) {
    uint32_t w = m->w;
    struct sx_call_run *const ru = &m->run[w];
    struct sx_call_head cur = m->head[w];
    *c = (struct sx_call){.start = cur.start,
                          .end = cur.end,
                          .lane = -1,
                          .index = ru->i,
                          .region = cur.region};
    if (++ru->i < ru->n)
        cur = (struct sx_call_head){ru->start[ru->i], ru->end[ru->i], cur.region};
    else
        cur = (struct sx_call_head){INT64_MAX, INT64_MIN, UINT32_MAX};
    m->head[w] = cur;
    for (size_t node = (w + m->nleaf) >> 1; node > 0; node >>= 1) {
        const uint32_t o = m->tree[node];
        const struct sx_call_head ho = m->head[o];
        const bool lt = ho.start != cur.start ? ho.start < cur.start
                        : ho.end != cur.end   ? ho.end > cur.end
                                              : ho.region < cur.region;
        m->tree[node] = lt ? w : o;
        w = lt ? o : w;
        cur = lt ? ho : cur;
    }
    m->w = w;
}

/* Sort 'n' int64 ascending; 'tmp' has room for n (an LSD radix sort by bytes that
 * skips the bytes every value shares, the high bytes of one rank's times). */
void sx_sort_i64(int64_t *v, size_t n, int64_t *tmp);

/*
 * Nest one lane's calls, in start order (sx_call_before): call k of the lane is
 * c[ix[k]], or c[k] when 'ix' is NULL. A call's depth is the number of calls
 * started before it and not yet ended (an end at a start closes, but a
 * zero-length call stays open over a call starting with it), its parent the
 * latest call one level up: as build_call_arrays' _depths and _parents. Each
 * call's depth goes to its 'depth', its parent's position (or -1) to 'parent'
 * at its own position.
 *
 * sx_calls_nest_exact: 'scratch' and 'tmp' have room for n values ('tmp' may be
 * 'parent' when 'ix' is NULL: it is the sort's room, used before any parent is
 * written). False: a call is closed before it starts (the calls do not nest).
 */
bool sx_calls_nest_exact(struct sx_call *c, const int64_t *ix, size_t n, int64_t *parent,
                         int64_t *scratch, int64_t *tmp);
/*
 * The same in one pass where the calls nest and none ends before it starts:
 * the calls open at a call's start are a stack (each inside the one below), its
 * depth their number, its parent the top. 'open' has room for n values. False at
 * the first call that ends after its parent: the exact method's depths past it
 * can differ (the caller runs it).
 */
bool sx_calls_nest_stack(struct sx_call *c, const int64_t *ix, size_t n, int64_t *parent,
                         int64_t *open);

/* sx_calls_nest_stack's step for the call at position 'at', the open calls'
 * positions 'open[0 .. *depth)' (outermost first). False: it ends after its parent
 * (nothing is written). */
static inline bool sx_calls_stack_step(struct sx_call *c, size_t at, int64_t *parent,
                                       int64_t *open, size_t *depth) {
    const int64_t s2 = 2 * c[at].start;
    size_t d = *depth;
    while (d > 0) {
        const struct sx_call *o = &c[open[d - 1]];
        if (2 * o->end + (o->end == o->start ? 1 : 0) > s2)
            break;
        d--;
    }
    *depth = d;
    if (d > 0 && c[open[d - 1]].end < c[at].end)
        return false;
    c[at].depth = (uint32_t)d;
    parent[at] = d == 0 ? -1 : open[d - 1];
    open[(*depth)++] = (int64_t)at;
    return true;
}

/* A call's lane: its task, else its thread (as -2 - thread), else -1 (the rank's own):
 * call 'i' of a row with the columns 'thread' and 'task' (NULL: none). */
static inline int64_t sx_call_lane(const int64_t *thread, const int64_t *task,
                                   uint64_t i) {
    if (task != NULL && task[i] >= 0)
        return task[i];
    if (thread != NULL && thread[i] >= 0)
        return -2 - thread[i];
    return -1;
}

/*
 * The distinct lanes of a rank's calls, each with its place in ascending lane order:
 * a stable partition of the calls by lane is a count per place and one pass
 * (speedscope's records, pstats' positions), not a sort of the calls.
 */
/* Lanes beyond this many distinct values: the callers sort. */
enum { SX_LANES_MAX = 4096 };

struct sx_lane_slot {
    int64_t lane;
    size_t place;
    bool used;
};
struct sx_lane_map {
    struct sx_lane_slot *h; /* open addressing, 'cap' (a power of two) slots */
    size_t cap, n;
};

/* The lanes of c[0..n) into 'm' (new). False: more than 'max' lanes (the caller sorts)
 * or out of memory ('*nomem'); 'm' is empty then. */
bool sx_lane_map_build(struct sx_lane_map *m, const struct sx_call *c, size_t n,
                       size_t max, bool *nomem);
void sx_lane_map_free(struct sx_lane_map *m);

static inline size_t sx_lane_hash(int64_t lane, size_t cap) {
    return (size_t)(((uint64_t)lane * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (cap - 1);
}

/* The place of 'lane', one of the lanes the map was built from: 0 .. m->n - 1. */
static inline size_t sx_lane_map_place(const struct sx_lane_map *m, int64_t lane) {
    size_t j = sx_lane_hash(lane, m->cap);
    while (m->h[j].lane != lane)
        j = (j + 1) & (m->cap - 1);
    return m->h[j].place;
}

/* Where each lane's calls start in a stable partition of c[0..n) by lane: 'at' (m->n
 * entries) from the counts. */
void sx_lane_map_starts(const struct sx_lane_map *m, const struct sx_call *c, size_t n,
                        size_t *at);

#endif /* SX_TRACE_CALLS_H */
