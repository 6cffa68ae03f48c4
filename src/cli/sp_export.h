/* sp_export.h - scope-profiler's own `export KIND FILES... -o DIR` command line */
#ifndef SX_CLI_SP_EXPORT_H
#define SX_CLI_SP_EXPORT_H

#include <mpi.h>
#include <stdbool.h>

/*
 * Whether `export ARG ...` is scope-profiler's form: 'arg' is one of its
 * kinds (json, chrome-trace, speedscope, prof, plot-data, flamegraph) and no
 * file or directory of that name exists (then it is an input of our own form).
 */
bool sx_cli_sp_form(const char *arg);

/*
 * `scope-export export KIND FILES... -o DIR [options]` as `scope-profiler
 * export` takes it: argv[first] is KIND. Exports with 'world' (MPI_COMM_NULL:
 * this process alone); rank 0 prints. Returns the exit status (0, 1, or 2 on
 * a usage error). NOTE: collective over 'world'.
 */
int sx_cli_sp_export(MPI_Comm world, int rank, int argc, char **argv, int first);

#endif /* SX_CLI_SP_EXPORT_H */
