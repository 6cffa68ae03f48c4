/* stop.h - a stop asked for by a signal handler */
#ifndef SX_STOP_H
#define SX_STOP_H

#include "internal.h"

/*
 * A stop applies to the exports running when it is asked for. Every export clears the
 * flag when it starts (a stop asked for while none ran, or left by an earlier one, is
 * not this export's) and when it ends (a stop asked for during it ends with it): two
 * exports in one process give what two processes would.
 */
/* Raise the flag (async-signal-safe); sx_request_stop() does, before it removes the
 * temporary files. */
void sx_stop_set(void);
/* Whether sx_request_stop() was called since the last sx_stop_clear(). */
bool sx_stop_requested(void);
void sx_stop_clear(void);

#endif /* SX_STOP_H */
