/* stats_regions.h - region_statistics.json, as scope-profiler's plot-data export writes
 * it */
#ifndef SX_STATS_REGIONS_H
#define SX_STATS_REGIONS_H

#include "internal.h"

#include <mpi.h>

/*
 * The whole export of the region statistics document (sx_export with
 * SX_FORMAT_REGION_STATISTICS): write_region_statistics_json of the run in
 * 'input' (HDF5 or a JSON profile) to 'output', byte for byte. Each region
 * is one block of the stream, made by the rank that owns the block: that
 * rank reads every row of the region and reduces the pooled durations
 * alone, so numpy's pairwise order of additions is kept whatever the number
 * of ranks. NOTE: collective over 'comm' (MPI_COMM_NULL: this process alone).
 */
enum sx_status sx_stats_export(MPI_Comm comm, const char *input, const char *output,
                               const struct sx_options *o, struct sx_error *err);

#endif /* SX_STATS_REGIONS_H */
