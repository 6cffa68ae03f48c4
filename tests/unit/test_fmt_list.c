/* test_fmt_list.c - the event-column fast path writes what one-at-a-time formatting
 * writes */
#include "json_write.h"
#include "sx_test.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t state = 0x9e3779b97f4a7c15u;

static uint64_t next(void) {
    uint64_t z = (state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void check_list(const int64_t *v, size_t n, bool first) {
    char *fast = malloc(n * 24 + 32), *slow = malloc(n * 24 + 32);
    ASSERT(fast != NULL && slow != NULL);
    char *end = sx_fmt_i64_list(fast, v, n, first);
    *end = '\0';
    char *p = slow;
    for (size_t i = 0; i < n; i++) {
        if (!first || i > 0)
            p += sprintf(p, ", ");
        p += sprintf(p, "%" PRId64, v[i]);
    }
    *p = '\0';
    CHECK_STR(fast, slow);
    free(fast);
    free(slow);
}

int main(void) {
    static const int64_t edges[] = {0,
                                    -1,
                                    99999999,
                                    100000000,
                                    100000001,
                                    199999999,
                                    200000000,
                                    INT64_MAX,
                                    INT64_MIN,
                                    INT64_MIN + 1,
                                    999999999999999999,
                                    1000000000000000000,
                                    1700000000373180163,
                                    1700000000373180163,
                                    1700000000399999999,
                                    1700000000400000000,
                                    9007199254740993,
                                    -1700000000373180163};
    check_list(edges, sizeof edges / sizeof edges[0], true);
    check_list(edges, sizeof edges / sizeof edges[0], false);
    check_list(edges, 0, true);

    enum { N = 200000 };
    int64_t *v = malloc(N * sizeof *v);
    ASSERT(v != NULL);
    /* a row of increasing timestamps, as start_times_ns are */
    int64_t t = 1700000000000000000;
    for (size_t i = 0; i < N; i++) {
        t += (int64_t)(next() % 2000000);
        v[i] = t;
    }
    check_list(v, N, true);
    /* anything at all: random bits, small numbers, ids with -1 */
    for (size_t i = 0; i < N; i++) {
        uint64_t r = next();
        switch (r % 4) {
        case 0:
            v[i] = (int64_t)next();
            break;
        case 1:
            v[i] = (int64_t)(next() % 1000) - 1;
            break;
        case 2:
            v[i] = (int64_t)(next() % 400000000);
            break;
        default:
            v[i] = -(int64_t)(next() >> 2);
        }
    }
    check_list(v, N, false);
    free(v);
    TEST_DONE();
}
