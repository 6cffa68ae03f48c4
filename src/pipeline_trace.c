/* pipeline_trace.c - the trace plan stage the documents built on one share (the traces,
 * region statistics, pstats and flame graphs): first starts min-reduced, region order */
#include "pipeline.h"

#include "mpi_util.h"
#include "run.h"
#include "trace.h"

#include <stdlib.h>

enum sx_status sx_pipe_trace_plan(const struct sx_pipe *p, struct sx_trace *t,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    int64_t *mins = NULL;
    const struct sx_run *run = p->run;
    /* Stage: the rows' first starts (this rank's share), min-reduced. */
    st = sx_trace_row_mins(run, p->h5, p->events, p->rank, p->size, &mins, err);
    st = sx_all_ok(p->comm, st, err);
    if (st == SX_OK)
        st = sx_all_min_i64(p->comm, mins, run->nrows, run->path, err);
    st = sx_all_ok(p->comm, st, err);
    if (st != SX_OK) {
        free(mins);
        return st;
    }
    /* the region order: local, the same on every rank ('mins' taken over) */
    return sx_trace_plan(t, p->run, p->h5, p->events, p->filter, p->o, mins, err);
}
