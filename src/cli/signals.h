/* signals.h - the command's signal handling: a clean stop, its deadline, crash reports */
#ifndef SX_CLI_SIGNALS_H
#define SX_CLI_SIGNALS_H

#include <stdbool.h>

/*
 * SIGTERM and SIGINT ask the export for a clean stop (a second one ends the
 * process); a stop that takes too long, and a crash, end the process with one
 * line naming the file and 'rank'. The temporary output is removed in every case.
 */
void sx_cli_signals_install(int rank);
/* Several ranks: a crash is reported by the first rank of a node to crash, the
 * others end without a line (they crash together on the same damaged file). */
void sx_cli_crash_once(void);
/* The run being exported now, named by those lines. */
void sx_cli_input(const char *path);
/* The output being written now (NULL: none), named by the stop's line. */
void sx_cli_output(const char *path);
/* Whether a signal's stop printed the one line itself: the export's error is not
 * printed again. */
bool sx_cli_stop_reported(void);

#endif /* SX_CLI_SIGNALS_H */
