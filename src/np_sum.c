/* np_sum.c - sums, means and standard deviations in numpy's order of additions */
#include "np_sum.h"

#include <math.h>

enum { NP_BLOCK = 128, NP_UNROLL = 8, NP_BUFSIZE = 8192 };

static double pairwise(const double *v, size_t n) {
    if (n < NP_UNROLL) {
        double s = 0.0;
        for (size_t i = 0; i < n; i++)
            s += v[i];
        return s;
    }
    if (n <= NP_BLOCK) {
        double r[NP_UNROLL];
        for (size_t j = 0; j < NP_UNROLL; j++)
            r[j] = v[j];
        size_t i = NP_UNROLL;
        for (; i < n - n % NP_UNROLL; i += NP_UNROLL)
            for (size_t j = 0; j < NP_UNROLL; j++)
                r[j] += v[i + j];
        double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            s += v[i];
        return s;
    }
    size_t half = n / 2;
    half -= half % NP_UNROLL;
    return pairwise(v, half) + pairwise(v + half, n - half);
}

double sx_np_sum(const double *v, size_t n) {
    /* the reduction's inner loop sees at most a buffer's worth at a time */
    double s = 0.0;
    for (size_t at = 0; at < n; at += NP_BUFSIZE)
        s += pairwise(v + at, n - at < NP_BUFSIZE ? n - at : NP_BUFSIZE);
    return s;
}

double sx_np_mean(const double *v, size_t n) { return sx_np_sum(v, n) / (double)n; }

double sx_np_std(const double *v, size_t n, double *tmp) {
    const double mean = sx_np_mean(v, n);
    for (size_t i = 0; i < n; i++) {
        double d = v[i] - mean;
        tmp[i] = d * d;
    }
    return sqrt(sx_np_sum(tmp, n) / (double)n);
}
