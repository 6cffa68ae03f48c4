/* test_np_sum.c - sx_np_sum adds in numpy's order (np.add.reduce), not in a running sum
 */
#include "np_sum.h"
#include "sx_test.h"

#include <math.h>
#include <stdint.h>

static uint64_t state = 0x9e3779b97f4a7c15u;
static double next(void) { /* xorshift64: durations of a few microseconds, as a run's */
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (double)(1000 + state % 9000000) / 1e9;
}

static double running(const double *v, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return s;
}

/* Eight accumulators over 8 <= n <= 128 values, written out by hand. */
static double unrolled(const double *v, size_t n) {
    double r[8];
    for (int j = 0; j < 8; j++)
        r[j] = v[j];
    size_t i = 8;
    while (i + 8 <= n) {
        for (int j = 0; j < 8; j++)
            r[j] = r[j] + v[i + j];
        i += 8;
    }
    double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    while (i < n)
        s = s + v[i++];
    return s;
}

int main(void) {
    static double v[20000], tmp[20000];
    for (size_t i = 0; i < 20000; i++)
        v[i] = next();

    /* under 8: a running sum */
    for (size_t n = 0; n < 8; n++)
        CHECK(sx_np_sum(v, n) == running(v, n));
    /* 8 .. 128: eight accumulators, then the tail */
    for (size_t n = 8; n <= 128; n++)
        CHECK(sx_np_sum(v, n) == unrolled(v, n));
    /* 300 splits at 144 (150 rounded down to a multiple of 8), 144 at 72 */
    double left = unrolled(v, 72) + unrolled(v + 72, 72);
    double right = unrolled(v + 144, 78) + unrolled(v + 222, 78);
    CHECK(sx_np_sum(v, 300) == left + right);
    /* 129 splits at 64 */
    CHECK(sx_np_sum(v, 129) == unrolled(v, 64) + unrolled(v + 64, 65));
    /* past 8192 the pieces of 8192 are summed apart and added in order */
    CHECK(sx_np_sum(v, 20000) ==
          (sx_np_sum(v, 8192) + sx_np_sum(v + 8192, 8192)) + sx_np_sum(v + 16384, 3616));
    /* and the order shows: a running sum differs in the last bits */
    size_t differ = 0;
    for (size_t n = 129; n < 20000; n += 97)
        differ += sx_np_sum(v, n) != running(v, n);
    CHECK(differ > 50);

    /* mean and std as np.mean and np.std (ddof 0) compute them */
    CHECK(sx_np_mean(v, 300) == sx_np_sum(v, 300) / 300.0);
    double m = sx_np_sum(v, 300) / 300.0, sq[300];
    for (size_t i = 0; i < 300; i++)
        sq[i] = (v[i] - m) * (v[i] - m);
    CHECK(sx_np_std(v, 300, tmp) == sqrt(sx_np_sum(sq, 300) / 300.0));
    double one = 2.5e-6;
    CHECK(sx_np_std(&one, 1, tmp) == 0.0);

    /* numpy's own results: script.test_stats_golden, against the golden documents */
    TEST_DONE();
}
