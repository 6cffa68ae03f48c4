/* run_compare.h - whether two runs are "the same run" */
#ifndef SX_RUN_COMPARE_H
#define SX_RUN_COMPARE_H

#include "run.h"

/*
 * Compare two runs as "the same run" (what read_h5 and read_json would
 * give): returns true when equal; otherwise false and a description of the
 * first difference in 'why' (size 'why_len').
 */
bool sx_run_equal(const struct sx_run *a, const struct sx_run *b, char *why,
                  size_t why_len);

#endif /* SX_RUN_COMPARE_H */
