/* sx_fault.h - fault injection for the tests: the Nth call of a kind fails */
#ifndef SX_TEST_FAULT_H
#define SX_TEST_FAULT_H

#include "fault.h"

/*
 * Fail the 'nth' call (1-based) of 'kind' made from now on, once; counting of
 * every kind restarts. 'nth' 0: nothing fails (and the calls are counted).
 */
void sx_fault_arm(enum sx_fault_kind kind, long nth);
/* Fail every pass through export stage 'stage' (enum sx_fail_stage; 0 = none). */
void sx_fault_arm_stage(int stage);
/* Nothing fails; nothing is counted. */
void sx_fault_off(void);
/* Calls of 'kind' since the last sx_fault_arm. */
long sx_fault_count(enum sx_fault_kind kind);
/* Whether the armed failure happened. */
bool sx_fault_fired(void);
/* The old countdown: fail the Nth allocation from now (0 = never). */
void sx_alloc_fail_after(long n);

/*
 * Arm from the environment, on the process whose rank is 'rank' (the test
 * build of the command calls it): SX_FAULT="KIND:N[:RANK]", KIND one of
 * alloc, read, write (the Nth call fails) or stage (N a stage name: open,
 * read, format, compress, send, write); RANK defaults to 0.
 * SX_FAULT="count" prints "sx-fault-count rank R alloc A read B write C" on
 * stderr at exit. Returns -1 (and prints why) for a malformed value.
 */
int sx_fault_from_env(int rank);

#endif
