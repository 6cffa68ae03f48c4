/* fault.h - failures injected on purpose (fault tests): the hook, and the export's stages
 */
#ifndef SX_FAULT_H
#define SX_FAULT_H

#include "internal.h"

/*
 * Fault injection. The hook is NULL in the library and the command; only the
 * test programs set it (tests/support/sx_fault.c). The library asks before
 * every call that may fail: true means "fail this one".
 */
enum sx_fault_kind {
    SX_FAULT_ALLOC = 0, /* sx_malloc & co. */
    SX_FAULT_READ,      /* an HDF5 read (H5Dread, H5Aread) */
    SX_FAULT_WRITE,     /* a write, close or rename of an output */
    SX_FAULT_STAGE,     /* a stage of the export ('stage': below) */
    SX_NFAULTS
};
extern bool (*sx_fault_hook)(enum sx_fault_kind kind, int stage);
static inline bool sx_fault(enum sx_fault_kind kind, int stage) {
    return sx_fault_hook != NULL && sx_fault_hook(kind, stage);
}
/* Tests only (tests/support/sx_fault.c): fail the Nth allocation from now; 0 = none. */
void sx_alloc_fail_after(long n);

/* The export's stages, for SX_FAULT_STAGE. */
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
