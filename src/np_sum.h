/* np_sum.h - sums, means and standard deviations in numpy's order of additions */
#ifndef SX_NP_SUM_H
#define SX_NP_SUM_H

#include <stddef.h>

/*
 * np.add.reduce of 'n' doubles: numpy's pairwise summation. Fewer than 8
 * values are added in order from 0.0; up to 128 go to eight running sums
 * (value i to sum i % 8), combined as ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)),
 * then the tail past the last multiple of 8 is added in order; more are cut
 * at half the count rounded down to a multiple of 8 and the two halves summed
 * the same way. The reduction's loop hands the pairwise sum at most 8192
 * values (its buffer size) at a time and adds the pieces' sums in order,
 * from 0.0. The order is part of the result's last bits, so the documents
 * that print these sums must use exactly this one.
 */
double sx_np_sum(const double *v, size_t n);

/* np.mean: sx_np_sum / n ('n' > 0). */
double sx_np_mean(const double *v, size_t n);

/*
 * np.std (ddof 0): the square root of the pairwise sum of squared deviations
 * from np.mean, divided by n. 'tmp' has room for n values ('n' > 0).
 */
double sx_np_std(const double *v, size_t n, double *tmp);

#endif /* SX_NP_SUM_H */
