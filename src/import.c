/* import.c - a JSON profile into a schema-3 HDF5 run, its events written as they are read
 */
#include "h5_write.h"
#include "json_load.h"
#include "run.h"

#include <stdlib.h>
#include <sys/stat.h>

/*
 * Two passes over the document, so that no more than a row's events is ever
 * in memory: the first reads every row but its events (the index the writer
 * needs first, in rank order), the second writes each row's events where the
 * index put them.
 */
struct pass2 {
    struct sx_h5w *w;
    const size_t *pos; /* element -> index row, SIZE_MAX: not written */
    size_t nelements;
};

static enum sx_status write_row(void *ctx, size_t i, struct sx_row *row,
                                struct sx_error *err) {
    const struct pass2 *p = ctx;
    const int64_t *col[SX_NCOLS];

    if (i >= p->nelements || p->pos[i] == SIZE_MAX || row->is_aggregate)
        return SX_OK; /* a row a later element of the same (name, rank) replaced */
    for (int c = 0; c < SX_NCOLS; c++)
        col[c] = (c <= SX_COL_END || (row->cols & SX_COLBIT(c))) ? row->col[c] : NULL;
    return sx_h5w_events(p->w, p->pos[i], 0, row->count, col, err);
}

enum sx_status sx_import(const char *input, const char *output, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_run *run = NULL, *again = NULL;
    struct sx_h5w *w = NULL;
    struct sx_h5w_spec spec;
    const struct sx_row **order = NULL;
    size_t *pos = NULL, nelements = 0;

    sx_error_clear(err);
    SX_CHECK(input != NULL && output != NULL, SX_ERR_USAGE, err, "",
             "import needs an input and an output file");
    /* As export refuses it: the output would replace the profile being read. */
    struct stat a, b;
    SX_CHECK(!(stat(input, &a) == 0 && stat(output, &b) == 0 && a.st_dev == b.st_dev &&
               a.st_ino == b.st_ino),
             SX_ERR_USAGE, err, output,
             "the output %s is the input file itself; refusing to overwrite the profile",
             output);
    st = sx_json_load_ex(input, SX_JSON_KEEP_INDEX, NULL, NULL, &run, &nelements, err);
    if (st != SX_OK)
        goto out;

    st = sx_h5w_run_plan(run, output, true, &spec, &order, err);
    if (st != SX_OK)
        goto out;
    pos = sx_malloc((nelements ? nelements : 1) * sizeof *pos);
    SX_CHECK(pos != NULL, SX_ERR_NOMEM, err, output, "out of memory");
    for (size_t e = 0; e < nelements; e++)
        pos[e] = SIZE_MAX;
    for (size_t r = 0; r < run->nrows; r++)
        if (order[r]->file_row < nelements)
            pos[order[r]->file_row] = r;

    /* Built in memory and written out whole: libhdf5 1.10 crashes at the process's
     * exit on a file whose close failed (a full disk), a host process too. */
    spec.in_memory = true;
    if ((st = sx_h5w_create(output, &spec, &w, err)) != SX_OK)
        goto out;
    if ((st = sx_h5w_metadata(w, &run->metadata, err)) != SX_OK ||
        (st = sx_h5w_names(w, run->names, run->nnames, err)) != SX_OK ||
        (st = sx_h5w_index(w, order, run->nrows, err)) != SX_OK)
        goto out;
    if (!spec.aggregate) {
        struct pass2 p = {w, pos, nelements};
        st =
            sx_json_load_ex(input, SX_JSON_KEEP_EVENTS, write_row, &p, &again, NULL, err);
        if (st != SX_OK)
            goto out;
    }
    if ((st = sx_h5w_run_rest(w, run, err)) != SX_OK)
        goto out;
    st = sx_h5w_finish(w, err);
    w = NULL;
out:
    sx_h5w_abort(w);
    free(order);
    free(pos);
    sx_run_free(again);
    sx_run_free(run);
    return st;
}
