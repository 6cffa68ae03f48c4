/* cli_support.h - what the command takes from the library beyond the public API */
#ifndef SX_CLI_SUPPORT_H
#define SX_CLI_SUPPORT_H

#include "scope_export.h"

#include <stddef.h>

/*
 * Not in the public header: these serve the command's own output names and crash
 * reports. Hidden in libscope_export.so and local in the installed libscope_export.a;
 * the command, the tools and the tests link the internal static library, where they
 * are global.
 */

/*
 * The output path export_json gives a run for the base path 'base' and the run's
 * 'label' (UTF-8) when there are 'n_runs' runs: "<stem><suffix>" for one run,
 * "<stem>_<slug(label)><suffix>" for several. Returns a new string (free()) or NULL
 * when out of memory. Any thread.
 */
char *sx_output_path(const char *base, const char *label, size_t n_runs);

/*
 * The label export_json uses for the run in 'input': its metadata "label" when
 * non-empty, else the file name without its last suffix. Collective over 'comm'
 * (every rank returns the same; MPI_COMM_NULL: this process alone, without MPI).
 * Returns a new string in '*label'. Not concurrently with the calls that read runs.
 */
SX_WARN_UNUSED enum sx_status sx_run_label(MPI_Comm comm, const char *input, char **label,
                                           struct sx_error *err);

/*
 * For a crash or hang report from a signal handler (async-signal-safe): the HDF5 file
 * this process is reading inside the HDF5 library at this moment, or NULL when it is
 * not inside HDF5. The HDF5 library (1.10) may crash or loop forever on some damaged
 * files.
 */
const char *sx_hdf5_file_in_use(void);

/*
 * Make the OTF2 library's errors quiet in this process (its callback is process-wide,
 * so the library never sets it; the command, which owns its process, does): an OTF2
 * export's failure is then the export's one error line alone.
 */
void sx_otf2_quiet_errors(void);

#endif /* SX_CLI_SUPPORT_H */
