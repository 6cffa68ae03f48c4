/* pipeline_trace.c - the trace plan stage the documents built on one share (the traces,
 * region statistics, pstats and flame graphs): first starts min-reduced, region order;
 * and their state, planned that way */
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
    /* the region order: the same on every rank ('mins' taken over), but an allocation
     * may fail on one: agreed */
    st = sx_trace_plan(t, p->run, p->h5, p->events, p->filter, p->o, mins, err);
    return sx_all_ok(p->comm, st, err);
}

enum sx_status sx_pipe_trace_state(const struct sx_pipe *p, struct sx_doc_state *ds,
                                   size_t size, void (*free_ctx)(void *ctx),
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_trace *t = sx_calloc(1, size); /* the state's first member */
    ds->ctx = t;
    ds->free = free_ctx;
    if (t == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, p->run->path, "out of memory");
    st = sx_all_ok(p->comm, st, err);
    if (st != SX_OK)
        return st;
    return sx_pipe_trace_plan(p, t, err); /* (agreed inside) */
}
