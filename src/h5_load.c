/* h5_load.c - a whole run, events included, in memory (compare and import) */
#include "buf.h"
#include "h5_read.h"
#include "h5_reader.h"
#include "h5_util.h"
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Full load                                                          */

static enum sx_status load_run(const char *path, bool summary, struct sx_run **out,
                               struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_h5 *h5 = NULL;
    struct sx_run *run = NULL;
    struct sx_buf mb = {0};
    *out = NULL;
    st = sx_h5_open(MPI_COMM_NULL, path, summary, &h5, &run, err);
    if (st != SX_OK)
        goto out;
    st = sx_h5_read_extras(h5, run, err);
    if (st != SX_OK)
        goto out;
    for (size_t r = 0; r < run->nrows; r++) {
        struct sx_row *row = &run->rows[r];
        if (row->is_aggregate)
            continue;
        if (run->layout == SX_LAYOUT_COLUMNAR && (row->cols & SX_COLBIT(SX_COL_GPU))) {
            bool present = false;
            st = sx_h5_gpu_present(h5, run, row, &present, err);
            if (st != SX_OK)
                goto out;
            if (!present)
                row->cols &= ~SX_COLBIT(SX_COL_GPU);
        }
        for (int c = 0; c < SX_NCOLS; c++) {
            if (!(row->cols & SX_COLBIT(c)))
                continue;
            row->col[c] = sx_malloc((row->count + 1) * sizeof(int64_t));
            SX_CHECK(row->col[c] != NULL, SX_ERR_NOMEM, err, path, "out of memory");
        }
        st = sx_h5_read_events(h5, run, row, 0, row->count, row->cols, row->col, err);
        if (st != SX_OK)
            goto out;
        if (row->has_meta_col) {
            sx_buf_reset(&mb);
            bool any = false;
            st = sx_h5_read_meta(h5, run, row, &mb, &any, err);
            if (st != SX_OK)
                goto out;
            if (mb.len > 0) {
                row->meta_text = sx_strndup(mb.data, mb.len);
                SX_CHECK(row->meta_text != NULL, SX_ERR_NOMEM, err, path,
                         "out of memory");
            }
            row->meta_any = any;
        }
    }
out:
    sx_buf_free(&mb);
    sx_h5_close(h5);
    if (st != SX_OK) {
        sx_run_free(run);
        run = NULL;
    }
    *out = run;
    return st;
}

enum sx_status sx_h5_load(const char *path, bool summary, struct sx_run **run,
                          struct sx_error *err) {
    sx_h5_enter(path);
    enum sx_status st = load_run(path, summary, run, err);
    sx_h5_leave();
    return st;
}
