/* stop.c - a stop asked for by a signal handler: the flag, and the temporary files */
#include "stop.h"

#include "out_file.h"

#include <signal.h>
#include <stdatomic.h>

static volatile sig_atomic_t stop_flag;

int sx_request_stop(void) {
    stop_flag = 1;
    /* the flag before the look at the temporary files, as sx_tmp_commit() has it
     * the other way round: one of the two sees the other's write */
    atomic_thread_fence(memory_order_seq_cst);
    return sx_tmp_remove_all(); /* in case SIGKILL follows before the export unwinds */
}

bool sx_stop_requested(void) { return stop_flag != 0; }

void sx_stop_clear(void) { stop_flag = 0; }
