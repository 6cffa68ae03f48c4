/* stop.h - a stop asked for by a signal handler */
#ifndef SX_STOP_H
#define SX_STOP_H

#include "internal.h"

/* Whether sx_request_stop() was called since the last sx_stop_clear(). */
bool sx_stop_requested(void);
/* The end of an export: a stop asked for during it does not outlive it. */
void sx_stop_clear(void);

#endif /* SX_STOP_H */
