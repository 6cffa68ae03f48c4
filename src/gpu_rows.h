/* gpu_rows.h - which rows write a GPU column: the ranks share out the check */
#ifndef SX_GPU_ROWS_H
#define SX_GPU_ROWS_H

#include "h5_read.h"

/*
 * NOTE: collective. Drop the GPU column of every row whose slice
 * has no value >= 0 (the rows are shared out over the ranks).
 */
enum sx_status sx_resolve_gpu(MPI_Comm comm, int rank, int size, struct sx_h5 *h5,
                              struct sx_run *run, struct sx_error *err);

#endif /* SX_GPU_ROWS_H */
