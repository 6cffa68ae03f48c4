/* fault.h - failures injected on purpose at an export's stages (fault tests) */
#ifndef SX_FAULT_H
#define SX_FAULT_H

#include "internal.h"

/* Arm the injection for one export of 'input' ('o->fail_rank' < 0: none). */
void sx_fault_begin(const struct sx_options *o, const char *input);
/* Fail here when this is the armed (rank, stage); remembers the stage as passed. */
enum sx_status sx_fault_at(int rank, enum sx_fail_stage stage, struct sx_error *err);
/*
 * A rank that owns no block, or writes plain text, never reaches some
 * stages; a failure armed there happens when its share of the work ends, so
 * that every (rank, stage) pair can be made to fail.
 */
enum sx_status sx_fault_rest(int rank, struct sx_error *err);

#endif /* SX_FAULT_H */
