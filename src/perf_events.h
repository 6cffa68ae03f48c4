/* perf_events.h - Linux perf counter totals of a run (rank<N>/perf_events groups): the
 * model, read from and written to HDF5 by h5_perf.c */
#ifndef SX_PERF_EVENTS_H
#define SX_PERF_EVENTS_H

#include "internal.h"

#include <stddef.h>
#include <stdint.h>

/* rank<N>/perf_events/<region>/: Linux perf counter totals of one region. */
struct sx_perf_region {
    char *name;
    uint64_t calls;
    char **event_names;
    uint64_t *values;
    size_t nevents;
};

struct sx_perf_rank {
    int64_t rank;
    struct sx_perf_region *regions; /* HDF5 name order */
    size_t n;
};

/* h5_perf.c: every rank's perf_events groups of the HDF5 run 'path' (POSIX driver). */
enum sx_status sx_h5_perf_read(const char *path, int64_t num_ranks,
                               struct sx_perf_rank **out, size_t *nout,
                               struct sx_error *err);
/* Add perf_events groups to the closed HDF5 file 'path' (the generator's). */
enum sx_status sx_h5_perf_write(const char *path, const struct sx_perf_rank *p, size_t n,
                                struct sx_error *err);
void sx_perf_free(struct sx_perf_rank *p, size_t n);

#endif /* SX_PERF_EVENTS_H */
