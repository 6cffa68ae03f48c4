/* fault.c - failures injected on purpose at an export's stages (fault tests) */
#include "fault.h"

#include <stddef.h>

/* NULL: nothing fails. Only the test programs set it (tests/support/sx_fault.c). */
bool (*sx_fault_hook)(enum sx_fault_kind kind, int stage);

/*
 * The export under way on this thread: its input (for the message) and the stages it
 * has passed. Not per call: the stages sit deep in stream.c, and the hook that reads
 * them is NULL but in tests. Per thread, because an export's stages all run on its
 * caller's thread (the output's writer thread passes none); every export starts with
 * sx_fault_begin(), so one export never sees an earlier one's state.
 */
static _Thread_local const char *fault_path;
static _Thread_local unsigned fault_seen;

void sx_fault_begin(const char *input) {
    fault_path = input;
    fault_seen = 0;
}

enum sx_status sx_fault_at(enum sx_fail_stage stage, struct sx_error *err) {
    static const char *const names[] = {"",         "open", "read", "format",
                                        "compress", "send", "write"};
    fault_seen |= 1u << stage;
    if (sx_fault(SX_FAULT_STAGE, (int)stage))
        return sx_error_set(err, SX_ERR_INTERNAL, fault_path ? fault_path : "",
                            "%s: failure injected at the %s stage (fault test)",
                            fault_path ? fault_path : "export", names[stage]);
    return SX_OK;
}

enum sx_status sx_fault_rest(struct sx_error *err) {
    enum sx_status st = SX_OK;
    for (int stage = SX_FAIL_READ; st == SX_OK && stage <= SX_FAIL_WRITE; stage++)
        if (!(fault_seen & (1u << stage)))
            st = sx_fault_at((enum sx_fail_stage)stage, err);
    return st;
}
