/* stop.c - a stop asked for by a signal handler: the flag, and the temporary files */
#include "stop.h"

#include "out_file.h"

#include <signal.h>

static volatile sig_atomic_t stop_flag;

void sx_request_stop(void) {
    stop_flag = 1;
    sx_tmp_remove_all(); /* in case SIGKILL follows before the export unwinds */
}

bool sx_stop_requested(void) { return stop_flag != 0; }

void sx_stop_clear(void) { stop_flag = 0; }
