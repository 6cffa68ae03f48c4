/* h5_write_run.c - a run model written whole (sx_h5_write), or its index first and its
 * events as a reader brings them (sx_h5w_run_plan, sx_h5w_run_rest) */
#include "h5_write_prim.h"

#include "json_value.h"

#include <stdlib.h>
#include <string.h>

/* Whether 'run' is stored in the aggregate layout. */
static bool run_is_aggregate(const struct sx_run *run) {
    int64_t v;
    if (run->layout == SX_LAYOUT_AGGREGATE)
        return true;
    if (run->nrows == 0)
        return false;
    for (size_t r = 0; r < run->nrows; r++)
        if (!run->rows[r].is_aggregate || !sx_h5w_agg_get(&run->rows[r], "count", &v))
            return false;
    return true;
}

static int cmp_rank(const void *a, const void *b) {
    const struct sx_row *x = *(const struct sx_row *const *)a;
    const struct sx_row *y = *(const struct sx_row *const *)b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x < y ? -1 : x > y; /* stable: keep the run's order within a rank */
}

enum sx_status sx_h5w_run_plan(const struct sx_run *run, const char *path,
                               bool index_only, struct sx_h5w_spec *spec,
                               const struct sx_row ***order_out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_row **order = NULL;

    *order_out = NULL;
    sx_h5w_spec_init(spec);
    spec->aggregate = run_is_aggregate(run);
    if (!spec->aggregate) {
        spec->cols = run->file_cols;
        spec->meta = run->has_meta_col;
        for (size_t r = 0; r < run->nrows; r++) {
            spec->cols |= run->rows[r].cols;
            spec->meta =
                spec->meta || run->rows[r].has_meta_col || run->rows[r].meta_text;
        }
        spec->cols &= OPTIONAL_COLS;
    }
    order = sx_calloc(run->nrows ? run->nrows : 1, sizeof *order);
    SX_CHECK(order != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    for (size_t r = 0; r < run->nrows; r++) {
        const struct sx_row *row = &run->rows[r];
        const bool events =
            index_only ? !row->is_aggregate
                       : row->col[SX_COL_START] != NULL && row->col[SX_COL_END] != NULL;
        order[r] = row;
        SX_CHECK(spec->aggregate || row->count == 0 || events, SX_ERR_UNSUPPORTED, err,
                 path,
                 "row %zu (rank %lld) has no event data: a summary-only run can only be "
                 "stored in the aggregate layout",
                 r, (long long)row->rank);
    }
    /* scope-profiler writes rank by rank, each rank's regions in its own order. */
    qsort(order, run->nrows, sizeof *order, cmp_rank);
    *order_out = order;
    order = NULL;
out:
    free(order);
    return st;
}

enum sx_status sx_h5w_run_rest(struct sx_h5w *w, const struct sx_run *run,
                               struct sx_error *err) {
    enum sx_status st = SX_OK;
    if ((run->has_threads || run->nthreads > 0) &&
        (st = sx_h5w_threads(w, run->threads, run->nthreads, err)) != SX_OK)
        return st;
    if ((run->has_tasks || run->ntasks > 0) &&
        (st = sx_h5w_tasks(w, run->tasks, run->ntasks, err)) != SX_OK)
        return st;
    if ((st = sx_h5w_likwid(w, run->likwid, run->nlikwid, err)) != SX_OK)
        return st;
    return sx_h5w_line_profile(w, run->line_profile, run->nline_profile, err);
}

enum sx_status sx_h5_write(const struct sx_run *run, const char *path,
                           struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_h5w *w = NULL;
    struct sx_h5w_spec spec;
    const struct sx_row **order = NULL;

    if ((st = sx_h5w_run_plan(run, path, false, &spec, &order, err)) != SX_OK)
        goto out;
    spec.in_memory = true; /* the run is in memory already */
    if ((st = sx_h5w_create(path, &spec, &w, err)) != SX_OK)
        goto out;
    if ((st = sx_h5w_metadata(w, &run->metadata, err)) != SX_OK ||
        (st = sx_h5w_names(w, run->names, run->nnames, err)) != SX_OK ||
        (st = sx_h5w_index(w, order, run->nrows, err)) != SX_OK)
        goto out;
    for (size_t r = 0; r < run->nrows && !spec.aggregate; r++) {
        const int64_t *col[SX_NCOLS];
        for (int c = 0; c < SX_NCOLS; c++)
            col[c] = (c <= SX_COL_END || (order[r]->cols & SX_COLBIT(c)))
                         ? order[r]->col[c]
                         : NULL;
        if ((st = sx_h5w_events(w, r, 0, order[r]->count, col, err)) != SX_OK)
            goto out;
    }
    if ((st = sx_h5w_run_rest(w, run, err)) != SX_OK)
        goto out;
    st = sx_h5w_finish(w, err);
    w = NULL;
out:
    sx_h5w_abort(w);
    free(order);
    return st;
}
