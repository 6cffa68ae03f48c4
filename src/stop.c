/* stop.c - a stop asked for by a signal handler: the flag */
#include "stop.h"

#include <signal.h>

static volatile sig_atomic_t stop_flag;

void sx_stop_set(void) { stop_flag = 1; }

bool sx_stop_requested(void) { return stop_flag != 0; }

void sx_stop_clear(void) { stop_flag = 0; }
