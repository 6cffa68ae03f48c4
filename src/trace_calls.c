/* trace_calls.c - a rank's calls in start order: its rows merged, ends sorted */
#include "trace_calls.h"

#include <stdlib.h>
#include <string.h>

bool sx_call_row_sorted(const int64_t *start, const int64_t *end, uint64_t n,
                        bool *back) {
    if (n == 0)
        return true;
    bool b = end[0] < start[0], down = false;
    for (uint64_t i = 1; i < n; i++) {
        b |= end[i] < start[i];
        down |= (start[i] < start[i - 1]) |
                ((start[i] == start[i - 1]) & (end[i] > end[i - 1]));
    }
    if (b)
        *back = true;
    return !down;
}

static bool head_before(const struct sx_call_head *x, const struct sx_call_head *y) {
    if (x->start != y->start)
        return x->start < y->start;
    if (x->end != y->end)
        return x->end > y->end;
    return x->region < y->region;
}

bool sx_call_merge_init(struct sx_call_merge *m, const struct sx_call_row *rows,
                        size_t nrow) {
    memset(m, 0, sizeof *m);
    size_t nleaf = 1;
    while (nleaf < nrow)
        nleaf *= 2;
    m->run = sx_calloc(nleaf, sizeof *m->run);
    m->head = sx_malloc(nleaf * sizeof *m->head);
    m->tree = sx_malloc(3 * nleaf * sizeof *m->tree);
    if (m->run == NULL || m->head == NULL || m->tree == NULL)
        return false;
    m->nleaf = nleaf;
    for (size_t k = 0; k < nleaf; k++) {
        if (k < nrow && rows[k].n > 0) {
            const struct sx_call_row *w = &rows[k];
            m->run[k] = (struct sx_call_run){w->start, w->end, 0, w->n};
            m->head[k] = (struct sx_call_head){w->start[0], w->end[0], w->region};
        } else {
            m->head[k] = (struct sx_call_head){INT64_MAX, INT64_MIN, UINT32_MAX};
        }
    }
    uint32_t *const win = m->tree + nleaf; /* the winners, while the tree is built */
    for (size_t i = 0; i < nleaf; i++)
        win[nleaf + i] = (uint32_t)i;
    for (size_t node = nleaf - 1; node > 0; node--) {
        const uint32_t a = win[2 * node], b = win[2 * node + 1];
        const bool lt = head_before(&m->head[b], &m->head[a]);
        win[node] = lt ? b : a;
        m->tree[node] = lt ? a : b;
    }
    m->w = win[1];
    return true;
}

void sx_call_merge_free(struct sx_call_merge *m) {
    free(m->run);
    free(m->head);
    free(m->tree);
    memset(m, 0, sizeof *m);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Below this many values, qsort. */
enum { RADIX_MIN = 64 };

void sx_sort_i64(int64_t *v, size_t n, int64_t *tmp) {
    if (n <= RADIX_MIN) {
        qsort(v, n, sizeof *v, cmp_i64);
        return;
    }
    const uint64_t flip = UINT64_C(1) << 63;
    size_t cnt[8][256];
    memset(cnt, 0, sizeof cnt);
    for (size_t i = 0; i < n; i++) {
        const uint64_t x = (uint64_t)v[i] ^ flip;
        for (int d = 0; d < 8; d++)
            cnt[d][(x >> (8 * d)) & 0xff]++;
    }
    int64_t *src = v, *dst = tmp;
    for (int d = 0; d < 8; d++) {
        size_t *c = cnt[d];
        if (c[((((uint64_t)v[0]) ^ flip) >> (8 * d)) & 0xff] == n)
            continue; /* one value of this byte: the pass would move nothing */
        size_t at = 0;
        for (size_t b = 0; b < 256; b++) {
            const size_t k = c[b];
            c[b] = at;
            at += k;
        }
        for (size_t i = 0; i < n; i++)
            dst[c[((((uint64_t)src[i]) ^ flip) >> (8 * d)) & 0xff]++] = src[i];
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
}

/* The k-th call of a lane: position ix[k], or k. */
#define AT(ix, k) ((ix) != NULL ? (size_t)(ix)[k] : (k))

bool sx_calls_nest_exact(struct sx_call *c, const int64_t *ix, size_t n, int64_t *parent,
                         int64_t *scratch, int64_t *tmp) {
    /* closed(i) = ends (doubled, zero-length + 1) at or before 2 * start(i) */
    for (size_t i = 0; i < n; i++) {
        const struct sx_call *x = &c[AT(ix, i)];
        scratch[i] = 2 * x->end + (x->end == x->start ? 1 : 0);
    }
    sx_sort_i64(scratch, n, tmp);
    size_t closed = 0;
    for (size_t i = 0; i < n; i++) {
        const int64_t s2 = 2 * c[AT(ix, i)].start;
        while (closed < n && scratch[closed] <= s2)
            closed++;
        if (closed > i)
            return false;
        c[AT(ix, i)].depth = (uint32_t)(i - closed);
    }
    /* The depth grows by one at most from a call to the next, so the latest call seen
     * at each depth (kept in 'scratch', whose sorted ends are no longer needed) is the
     * parent of the next one below it. */
    for (size_t i = 0; i < n; i++) {
        const uint32_t d = c[AT(ix, i)].depth;
        parent[AT(ix, i)] = d == 0 ? -1 : (int64_t)AT(ix, (size_t)scratch[d - 1]);
        scratch[d] = (int64_t)i;
    }
    return true;
}

bool sx_calls_nest_stack(struct sx_call *c, const int64_t *ix, size_t n, int64_t *parent,
                         int64_t *open) {
    size_t depth = 0;
    for (size_t i = 0; i < n; i++)
        if (!sx_calls_stack_step(c, AT(ix, i), parent, open, &depth))
            return false;
    return true;
}

/* ------------------------------------------------------------------ */
/* Lanes                                                               */

static int cmp_slot_lane(const void *a, const void *b) {
    const struct sx_lane_slot *x = a, *y = b;
    return (x->lane > y->lane) - (x->lane < y->lane);
}

void sx_lane_map_free(struct sx_lane_map *m) {
    free(m->h);
    *m = (struct sx_lane_map){0};
}

/* Put 'lane' into 'h' ('cap' slots, room for it). */
static struct sx_lane_slot *slot_of(struct sx_lane_slot *h, size_t cap, int64_t lane) {
    size_t j = sx_lane_hash(lane, cap);
    while (h[j].used && h[j].lane != lane)
        j = (j + 1) & (cap - 1);
    return &h[j];
}

bool sx_lane_map_build(struct sx_lane_map *m, const struct sx_call *c, size_t n,
                       size_t max, bool *nomem) {
    *m = (struct sx_lane_map){sx_calloc(64, sizeof *m->h), 64, 0};
    *nomem = m->h == NULL;
    for (size_t i = 0; i < n && m->h != NULL; i++) {
        struct sx_lane_slot *s = slot_of(m->h, m->cap, c[i].lane);
        if (s->used)
            continue;
        if (++m->n > max) {
            sx_lane_map_free(m);
            return false;
        }
        *s = (struct sx_lane_slot){c[i].lane, 0, true};
        if (2 * m->n > m->cap) { /* grow: rehash */
            struct sx_lane_slot *g = sx_calloc(2 * m->cap, sizeof *g);
            *nomem = g == NULL;
            for (size_t q = 0; g != NULL && q < m->cap; q++)
                if (m->h[q].used)
                    *slot_of(g, 2 * m->cap, m->h[q].lane) = m->h[q];
            free(m->h);
            m->h = g;
            m->cap *= 2;
        }
    }
    /* the places: the lanes sorted */
    struct sx_lane_slot *v = m->h != NULL ? sx_malloc((m->n + 1) * sizeof *v) : NULL;
    if (v == NULL) {
        *nomem = true;
        sx_lane_map_free(m);
        return false;
    }
    size_t k = 0;
    for (size_t q = 0; q < m->cap; q++)
        if (m->h[q].used)
            v[k++] = m->h[q];
    qsort(v, k, sizeof *v, cmp_slot_lane);
    for (size_t q = 0; q < k; q++)
        slot_of(m->h, m->cap, v[q].lane)->place = q;
    free(v);
    return true;
}

void sx_lane_map_starts(const struct sx_lane_map *m, const struct sx_call *c, size_t n,
                        size_t *at) {
    memset(at, 0, m->n * sizeof *at);
    for (size_t i = 0; i < n; i++)
        at[sx_lane_map_place(m, c[i].lane)]++;
    size_t sum = 0;
    for (size_t q = 0; q < m->n; q++) {
        size_t k = at[q];
        at[q] = sum;
        sum += k;
    }
}
