/* stats_regions.h - region_statistics.json, as scope-profiler's plot-data export writes
 * it */
#ifndef SX_STATS_REGIONS_H
#define SX_STATS_REGIONS_H

#include "internal.h"

#include <mpi.h>

/*
 * The region statistics document (sx_export with SX_FORMAT_REGION_STATISTICS):
 * write_region_statistics_json of the run (HDF5 or a JSON profile), byte for
 * byte, as the pipeline's document sx_doc_stats (pipeline.h). Each region is
 * one block of the stream, made by the rank that owns the block: that rank
 * reads every row of the region and reduces the pooled durations alone, so
 * numpy's pairwise order of additions is kept whatever the number of ranks.
 */

#endif /* SX_STATS_REGIONS_H */
