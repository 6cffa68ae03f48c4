/* test_trace_calls.c - a rank's calls: rows merged in sx_call_before's order as a sort
 * puts them, ends sorted as qsort does, the one-pass nesting the same as the exact
 * method where it answers, which is the definition counted out call by call, and the
 * partition by lane the same as a stable sort */
#define _GNU_SOURCE /* qsort_r */
#include "sx_test.h"
#include "trace_calls.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t state = 0x2545f4914f6cdd1du;
static uint64_t rnd(uint64_t n) { /* xorshift64, in [0, n) */
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return n > 0 ? state % n : 0;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_call(const void *a, const void *b) {
    const struct sx_call *x = a, *y = b;
    return sx_call_before(x, y) ? -1 : sx_call_before(y, x) ? 1 : 0;
}

/* sx_sort_i64 against qsort: few and many values, negative ones, values that share
 * their high bytes (one rank's times) and values that do not. */
static void test_sort_i64(void) {
    const size_t sizes[] = {0, 1, 2, 63, 64, 65, 1000, 100000};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        for (int kind = 0; kind < 4; kind++) {
            const size_t n = sizes[s];
            int64_t *v = malloc((n + 1) * sizeof *v), *w = malloc((n + 1) * sizeof *w);
            int64_t *tmp = malloc((n + 1) * sizeof *tmp);
            ASSERT(v != NULL && w != NULL && tmp != NULL);
            for (size_t i = 0; i < n; i++) {
                if (kind == 0) /* 2 * end + 1 of a run's calls: high bytes shared */
                    v[i] = 2 * (INT64_C(1700000000000000000) + (int64_t)rnd(1u << 30)) +
                           (int64_t)rnd(2);
                else if (kind == 1) /* anything, negative too */
                    v[i] = (int64_t)(rnd(UINT64_MAX) - (UINT64_MAX >> 1));
                else if (kind == 2) /* few distinct values */
                    v[i] = (int64_t)rnd(4) - 2;
                else /* a byte in the middle shared, those above it not */
                    v[i] = (int64_t)((rnd(1u << 16) << 40) | (UINT64_C(0xab) << 32) |
                                     rnd(UINT64_C(1) << 32));
                w[i] = v[i];
            }
            sx_sort_i64(v, n, tmp);
            qsort(w, n, sizeof *w, cmp_i64);
            CHECK(n == 0 || memcmp(v, w, n * sizeof *v) == 0);
            free(v);
            free(w);
            free(tmp);
        }
    }
}

/* Rows of calls, each sorted by start and the longest first, some starts and ends
 * shared between rows and within one (equal keys: the region and the call order
 * decide); merged, they come out as qsort puts them. */
static void test_merge(void) {
    for (int round = 0; round < 200; round++) {
        const size_t nrow = 1 + (size_t)rnd(40);
        struct sx_call_row *rows = calloc(nrow, sizeof *rows);
        int64_t **s = calloc(nrow, sizeof *s), **e = calloc(nrow, sizeof *e);
        ASSERT(rows != NULL && s != NULL && e != NULL);
        size_t total = 0;
        for (size_t r = 0; r < nrow; r++) {
            const uint64_t n = rnd(5) == 0 ? 0 : rnd(300);
            s[r] = malloc((n + 1) * sizeof **s);
            e[r] = malloc((n + 1) * sizeof **e);
            ASSERT(s[r] != NULL && e[r] != NULL);
            int64_t at = (int64_t)rnd(50);
            for (uint64_t i = 0; i < n; i++) {
                s[r][i] = at;
                e[r][i] = at + (int64_t)rnd(40);
                if (i > 0 && s[r][i] == s[r][i - 1] && e[r][i] > e[r][i - 1])
                    e[r][i] = e[r][i - 1]; /* the longest first */
                at += (int64_t)rnd(3);     /* starts repeat */
            }
            bool back = false;
            CHECK(sx_call_row_sorted(s[r], e[r], n, &back));
            CHECK(!back);
            rows[r] = (struct sx_call_row){s[r], e[r], n, (uint32_t)(r * 3)};
            total += n;
        }
        struct sx_call *got = malloc((total + 1) * sizeof *got);
        struct sx_call *want = malloc((total + 1) * sizeof *want);
        ASSERT(got != NULL && want != NULL);
        size_t k = 0;
        for (size_t r = 0; r < nrow; r++)
            for (uint64_t i = 0; i < rows[r].n; i++)
                want[k++] = (struct sx_call){s[r][i], e[r][i], -1, i, rows[r].region, 0};
        qsort(want, total, sizeof *want, cmp_call);
        struct sx_call_merge m;
        ASSERT(sx_call_merge_init(&m, rows, nrow));
        for (size_t i = 0; i < total; i++)
            sx_call_merge_next(&m, &got[i]);
        sx_call_merge_free(&m);
        for (size_t i = 0; i < total; i++)
            CHECK(got[i].start == want[i].start && got[i].end == want[i].end &&
                  got[i].region == want[i].region && got[i].index == want[i].index &&
                  got[i].lane == -1 && got[i].depth == 0);
        free(got);
        free(want);
        for (size_t r = 0; r < nrow; r++) {
            free(s[r]);
            free(e[r]);
        }
        free(s);
        free(e);
        free(rows);
    }
    /* a row out of order, a call that ends before it starts */
    const int64_t s1[] = {1, 5, 3}, e1[] = {2, 6, 4};
    const int64_t s2[] = {1, 1}, e2[] = {2, 3}; /* equal starts, the shorter first */
    const int64_t s3[] = {1, 4}, e3[] = {2, 3};
    bool back = false;
    CHECK(!sx_call_row_sorted(s1, e1, 3, &back) && !back);
    CHECK(!sx_call_row_sorted(s2, e2, 2, &back) && !back);
    CHECK(sx_call_row_sorted(s3, e3, 2, &back) && back);
}

/* Calls nested as a program makes them inside [a, b]: children side by side, some
 * of zero length, some sharing their parent's start or end or a sibling's end. */
static void nest_tree(struct sx_call *c, size_t *n, size_t cap, int64_t a, int64_t b,
                      int level) {
    int64_t at = a;
    while (*n < cap && level < 8 && rnd(4) != 0) {
        const int64_t start = at + (rnd(3) == 0 ? 0 : (int64_t)rnd(5));
        if (start > b)
            break;
        int64_t end = start + (rnd(5) == 0 ? 0 : (int64_t)rnd(30));
        if (end > b || rnd(8) == 0)
            end = b;
        c[(*n)++] = (struct sx_call){start, end, 0, *n, 0, 0};
        nest_tree(c, n, cap, start, end, level + 1);
        at = end;
    }
}

/* The exact method's definition, call by call: depth = the calls before it less those
 * of all the lane's calls closed at its start; parent = the latest earlier call one
 * level up. False where a call is closed before it starts. */
static bool brute(const struct sx_call *c, size_t n, uint32_t *depth, int64_t *parent) {
    for (size_t i = 0; i < n; i++) {
        size_t closed = 0;
        for (size_t j = 0; j < n; j++)
            closed += 2 * c[j].end + (c[j].end == c[j].start) <= 2 * c[i].start;
        if (closed > i)
            return false;
        depth[i] = (uint32_t)(i - closed);
        parent[i] = -1;
        for (size_t k = i; depth[i] > 0 && k-- > 0;)
            if (depth[k] == depth[i] - 1) {
                parent[i] = (int64_t)k;
                break;
            }
    }
    return true;
}

static void test_nest(void) {
    enum { CAP = 400 };
    int stack_ok = 0, stack_refused = 0, exact_refused = 0;
    for (int round = 0; round < 3000; round++) {
        struct sx_call c[CAP], x[CAP];
        int64_t parent[CAP], p2[CAP], scratch[CAP], tmp[CAP], want_p[CAP], ix[CAP];
        uint32_t want_d[CAP];
        size_t n = 0;
        const int kind = round % 3;
        if (kind == 0) { /* nested */
            nest_tree(c, &n, CAP, 0, 1000, 0);
        } else { /* anything: overlaps, ends before starts */
            n = (size_t)rnd(60);
            for (size_t i = 0; i < n; i++) {
                const int64_t s = (int64_t)rnd(100);
                c[i] = (struct sx_call){
                    s, s + (int64_t)rnd(30) - (kind == 2 ? 3 : 0), 0, i, 0, 0};
            }
        }
        qsort(c, n, sizeof *c, cmp_call);
        const bool defined = brute(c, n, want_d, want_p);
        memcpy(x, c, n * sizeof *c);
        const bool exact = sx_calls_nest_exact(x, NULL, n, parent, scratch, tmp);
        CHECK(exact == defined);
        for (size_t i = 0; exact && defined && i < n; i++)
            CHECK(x[i].depth == want_d[i] && parent[i] == want_p[i]);
        exact_refused += !exact;
        bool back = false;
        for (size_t i = 0; i < n; i++)
            back |= c[i].end < c[i].start;
        memcpy(x, c, n * sizeof *c);
        const bool stack = sx_calls_nest_stack(x, NULL, n, p2, scratch);
        if (kind == 0)
            CHECK(stack);
        if (stack && !back) {
            stack_ok++;
            CHECK(defined);
            for (size_t i = 0; defined && i < n; i++)
                CHECK(x[i].depth == want_d[i] && p2[i] == want_p[i]);
        } else {
            stack_refused += !stack;
        }
        /* the same lane spread over a larger array of two lanes: positions through
         * 'ix', the other lane's parents left alone */
        struct sx_call two[2 * CAP];
        int64_t tp[2 * CAP];
        for (size_t i = 0; i < n; i++) {
            two[2 * i] = c[i];
            two[2 * i + 1] = (struct sx_call){0, 0, 7, i, 1, 0};
            tp[2 * i] = -7;
            tp[2 * i + 1] = 12345;
            ix[i] = (int64_t)(2 * i);
        }
        if (!back && sx_calls_nest_stack(two, ix, n, tp, scratch))
            for (size_t i = 0; defined && i < n; i++)
                CHECK(two[2 * i].depth == want_d[i] &&
                      tp[2 * i] == (want_p[i] < 0 ? -1 : 2 * want_p[i]) &&
                      tp[2 * i + 1] == 12345);
        for (size_t i = 0; i < n; i++)
            tp[2 * i] = -7;
        const bool e2 = sx_calls_nest_exact(two, ix, n, tp, scratch, tmp);
        CHECK(e2 == defined);
        for (size_t i = 0; e2 && defined && i < n; i++)
            CHECK(two[2 * i].depth == want_d[i] &&
                  tp[2 * i] == (want_p[i] < 0 ? -1 : 2 * want_p[i]) &&
                  tp[2 * i + 1] == 12345);
    }
    /* every way was taken */
    CHECK(stack_ok > 500 && stack_refused > 50 && exact_refused > 50);
}

/* Lane then position: the order of a stable partition by lane. */
static int cmp_lane_pos(const void *a, const void *b, void *ctx) {
    const struct sx_call *c = ctx;
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    if (c[x].lane != c[y].lane)
        return c[x].lane < c[y].lane ? -1 : 1;
    return (x > y) - (x < y);
}

/* The lane map's partition against a stable sort by lane: few lanes, negative ones
 * (threads), lanes that collide in the table, more than its first size (it grows), and
 * more than the callers' limit (it declines). */
static void test_lanes(void) {
    enum { N = 20000 };
    static struct sx_call c[N];
    static int64_t want[N], got[N];
    static size_t at[N];
    const int64_t spreads[] = {1, 3, 50, 700, 5000};
    for (size_t k = 0; k < sizeof spreads / sizeof spreads[0]; k++) {
        for (size_t i = 0; i < N; i++) {
            int64_t v = (int64_t)rnd((uint64_t)spreads[k]);
            c[i] = (struct sx_call){.lane = i % 3 == 0 ? -2 - v : v * (INT64_C(1) << 32)};
            want[i] = (int64_t)i;
        }
        struct sx_lane_map m;
        bool nomem = true;
        const bool built = sx_lane_map_build(&m, c, N, SX_LANES_MAX, &nomem);
        CHECK(!nomem);
        if (spreads[k] * 2 > SX_LANES_MAX) { /* 2 * spread distinct lanes, nearly */
            CHECK(!built);
            continue;
        }
        ASSERT(built);
        qsort_r(want, N, sizeof *want, cmp_lane_pos, c);
        size_t lanes = 1;
        for (size_t i = 1; i < N; i++)
            lanes += c[want[i]].lane != c[want[i - 1]].lane;
        CHECK(m.n == lanes);
        sx_lane_map_starts(&m, c, N, at);
        for (size_t i = 0; i < N; i++)
            got[at[sx_lane_map_place(&m, c[i].lane)]++] = (int64_t)i;
        CHECK(memcmp(got, want, sizeof got) == 0);
        sx_lane_map_free(&m);
    }
}

int main(void) {
    test_sort_i64();
    test_merge();
    test_nest();
    test_lanes();
    TEST_DONE();
}
