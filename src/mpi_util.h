/* mpi_util.h - MPI return codes, the library's communicator, the ranks' one agreement */
#ifndef SX_MPI_UTIL_H
#define SX_MPI_UTIL_H

#include "internal.h"

#include <mpi.h>

/* SX_OK for MPI_SUCCESS; otherwise an SX_ERR_MPI error naming 'call'. */
enum sx_status sx_mpi_check(int rc, const char *call, struct sx_error *err);
/*
 * NOTE: collective. The library's own copy of 'comm' in '*out', whose MPI
 * errors are returned (MPI_ERRORS_RETURN) instead of ending the process.
 * MPI_COMM_NULL gives MPI_COMM_NULL (one process, no MPI call).
 */
enum sx_status sx_comm_dup(MPI_Comm comm, MPI_Comm *out, struct sx_error *err);
/* NOTE: collective. Free a copy made by sx_comm_dup; accepts MPI_COMM_NULL. */
void sx_comm_free(MPI_Comm *comm);
/*
 * NOTE: collective. All ranks agree on the outcome of a local step: returns
 * SX_OK when every rank passed 'st' == SX_OK; otherwise the status of the
 * lowest failing rank, and 'err' holds that rank's error on every rank.
 */
enum sx_status sx_all_ok(MPI_Comm comm, enum sx_status st, struct sx_error *err);

/*
 * NOTE: collective. As sx_all_ok, but the failing rank that speaks is the one
 * with the lowest 'key' (the first failure in the document's order, whichever
 * process found it), the lowest rank among equal keys.
 */
enum sx_status sx_all_ok_first(MPI_Comm comm, enum sx_status st, long key,
                               struct sx_error *err);
/*
 * NOTE: collective. Every rank's 'm[0 .. n)' replaced by the elementwise minimum
 * over the ranks, in pieces (MPI counts are int). A failure names 'path'.
 */
enum sx_status sx_all_min_i64(MPI_Comm comm, int64_t *m, size_t n, const char *path,
                              struct sx_error *err);
/*
 * Whether the process may run a thread of its own beside the caller's: MPI's
 * thread level is MPI_THREAD_FUNNELED or more (only the caller's thread calls
 * MPI), or 'comm' is MPI_COMM_NULL (no MPI call at all).
 */
bool sx_mpi_threads_ok(MPI_Comm comm);
/*
 * The same, where no communicator is at hand: MPI is not running (not initialized, or
 * finalized), or its thread level is MPI_THREAD_FUNNELED or more.
 */
bool sx_mpi_threads_ok_here(void);

#endif /* SX_MPI_UTIL_H */
