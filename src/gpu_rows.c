/* gpu_rows.c - which rows write a GPU column: the ranks share out the check */
#include "gpu_rows.h"

#include "h5_read.h"
#include "mpi_util.h"
#include "run.h"

#include <stdlib.h>

/* MPI counts are int: reduce large arrays in pieces of at most 1 GiB. */
#define MAX_MSG (1u << 30)

/*
 * Mark the GPU column of rows whose slice has no value >= 0 as absent. The
 * rows are split over the ranks, and the ranks' findings are or-ed.
 */
enum sx_status sx_resolve_gpu(MPI_Comm comm, int rank, int size, struct sx_h5 *h5,
                              struct sx_run *run, struct sx_error *err) {
    enum sx_status st = SX_OK;
    unsigned char *present = NULL;
    if (run->layout != SX_LAYOUT_COLUMNAR || !(run->file_cols & SX_COLBIT(SX_COL_GPU)))
        return SX_OK; /* the same on every rank: the index is */

    /* Stage: this rank's share of the rows (of the index, for a lazily read run). */
    const bool lazy = run->index != NULL;
    const size_t nrows = lazy ? run->nindex : run->nrows;
    present = sx_calloc(nrows + 1, 1);
    if (present == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, run->path, "%s: out of memory", run->path);
    for (size_t r = (size_t)rank; st == SX_OK && r < nrows; r += (size_t)size) {
        bool p = false;
        struct sx_row one = {0};
        if (lazy) {
            one.offset = run->index[r].offset;
            one.count = run->index[r].count;
        }
        st = sx_h5_gpu_present(h5, run, lazy ? &one : &run->rows[r], &p, err);
        present[r] = p;
    }
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;

    /* Stage: NOTE: collective; MPI counts are int, so reduce in pieces. */
    for (size_t at = 0; comm != MPI_COMM_NULL && st == SX_OK && at < nrows;
         at += MAX_MSG) {
        size_t n = nrows - at < MAX_MSG ? nrows - at : MAX_MSG;
        if (MPI_Allreduce(MPI_IN_PLACE, present + at, (int)n, MPI_UNSIGNED_CHAR, MPI_BOR,
                          comm) != MPI_SUCCESS)
            st = sx_error_set(err, SX_ERR_MPI, run->path, "%s: MPI_Allreduce failed",
                              run->path);
    }
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    for (size_t r = 0; r < nrows; r++)
        if (!present[r] && lazy)
            run->index[r].flags |= SX_IR_NO_GPU;
        else if (!present[r])
            run->rows[r].cols &= ~SX_COLBIT(SX_COL_GPU);
out:
    free(present);
    return st;
}
