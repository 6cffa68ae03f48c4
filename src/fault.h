/* fault.h - failures injected on purpose at an export's stages (fault tests) */
#ifndef SX_FAULT_H
#define SX_FAULT_H

#include "internal.h"

/* The export's stages, for SX_FAULT_STAGE (see sx_fault_hook in internal.h). */
enum sx_fail_stage {
    SX_FAIL_OPEN = 1,
    SX_FAIL_READ = 2,
    SX_FAIL_FORMAT = 3,
    SX_FAIL_COMPRESS = 4,
    SX_FAIL_SEND = 5,
    SX_FAIL_WRITE = 6
};

/* Start one export of 'input': no stage passed yet. */
void sx_fault_begin(const char *input);
/* Fail here when the hook says so for 'stage'; remembers the stage as passed. */
enum sx_status sx_fault_at(enum sx_fail_stage stage, struct sx_error *err);
/*
 * A rank that owns no block, or writes plain text, never reaches some
 * stages; a failure armed there happens when its share of the work ends, so
 * that every (rank, stage) pair can be made to fail.
 */
enum sx_status sx_fault_rest(struct sx_error *err);

#endif /* SX_FAULT_H */
