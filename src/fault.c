/* fault.c - failures injected on purpose at an export's stages (fault tests) */
#include "fault.h"

#include <stddef.h>

static const char *fault_path; /* the input of the export under way, for the message */
static int fault_rank = -1;
static int fault_stage;
static unsigned fault_seen; /* stages this rank has passed in this export */

void sx_fault_begin(const struct sx_options *o, const char *input) {
    fault_path = input;
    fault_rank = o->fail_rank;
    fault_stage = o->fail_stage;
    fault_seen = 0;
}

enum sx_status sx_fault_at(int rank, enum sx_fail_stage stage, struct sx_error *err) {
    static const char *const names[] = {"",         "open", "read", "format",
                                        "compress", "send", "write"};
    fault_seen |= 1u << stage;
    if (fault_rank >= 0 && fault_rank == rank && fault_stage == (int)stage)
        return sx_error_set(err, SX_ERR_INTERNAL, fault_path ? fault_path : "",
                            "%s: failure injected at the %s stage (fault test)",
                            fault_path ? fault_path : "export", names[stage]);
    return SX_OK;
}

enum sx_status sx_fault_rest(int rank, struct sx_error *err) {
    enum sx_status st = SX_OK;
    for (int stage = SX_FAIL_READ; st == SX_OK && stage <= SX_FAIL_WRITE; stage++)
        if (!(fault_seen & (1u << stage)))
            st = sx_fault_at(rank, (enum sx_fail_stage)stage, err);
    return st;
}
