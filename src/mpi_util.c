/* mpi_util.c - the library's communicator; ranks agree on errors before the next
 * collective */
#include "mpi_util.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

enum sx_status sx_mpi_check(int rc, const char *call, struct sx_error *err) {
    if (rc == MPI_SUCCESS)
        return SX_OK;
    char text[MPI_MAX_ERROR_STRING] = "";
    int n = 0;
    if (MPI_Error_string(rc, text, &n) != MPI_SUCCESS)
        snprintf(text, sizeof text, "error %d", rc);
    return sx_error_set(err, SX_ERR_MPI, call, "%s failed: %s", call, text);
}

/* NOTE: collective */
enum sx_status sx_comm_dup(MPI_Comm comm, MPI_Comm *out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    *out = MPI_COMM_NULL;
    if (comm == MPI_COMM_NULL) /* one process without MPI */
        return SX_OK;
    st = sx_mpi_check(MPI_Comm_dup(comm, out), "MPI_Comm_dup", err);
    /* a failed MPI call is an error to report, never the end of the caller's process */
    if (st == SX_OK)
        st = sx_mpi_check(MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN),
                          "MPI_Comm_set_errhandler", err);
    if (st != SX_OK && *out != MPI_COMM_NULL)
        MPI_Comm_free(out);
    return st;
}

/* NOTE: collective */
void sx_comm_free(MPI_Comm *comm) {
    if (*comm != MPI_COMM_NULL)
        MPI_Comm_free(comm);
    *comm = MPI_COMM_NULL;
}

/* One process without MPI: rank 0 of one. */
static enum sx_status alone(enum sx_status st, struct sx_error *err) {
    if (st != SX_OK && err != NULL) {
        if (err->code == SX_OK)
            err->code = st;
        if (err->rank < 0)
            err->rank = 0;
    }
    return st;
}

/* NOTE: collective. The failing rank 'first' (of 'size'; 'size': none failed) speaks
 * for all: its error is broadcast. */
static enum sx_status tell_first(MPI_Comm comm, int rank, int size, int first,
                                 enum sx_status st, struct sx_error *err) {
    if (first == size)
        return SX_OK;
    struct sx_error e;
    sx_error_clear(&e);
    if (rank == first) {
        if (err != NULL && err->code != SX_OK)
            e = *err;
        else
            e.code = st;
        if (e.rank < 0)
            e.rank = rank;
        if (e.code == SX_OK)
            e.code = SX_ERR_INTERNAL;
    }
    enum sx_status mst = sx_mpi_check(MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, first, comm),
                                      "MPI_Bcast", err);
    if (mst != SX_OK)
        return mst;
    if (err != NULL)
        *err = e;
    return e.code;
}

static enum sx_status rank_size(MPI_Comm comm, int *rank, int *size,
                                struct sx_error *err) {
    enum sx_status mst = sx_mpi_check(MPI_Comm_rank(comm, rank), "MPI_Comm_rank", err);
    if (mst == SX_OK)
        mst = sx_mpi_check(MPI_Comm_size(comm, size), "MPI_Comm_size", err);
    return mst;
}

/* NOTE: collective */
enum sx_status sx_all_ok_first(MPI_Comm comm, enum sx_status st, long key,
                               struct sx_error *err) {
    int rank = 0, size = 1;
    if (comm == MPI_COMM_NULL)
        return alone(st, err);
    enum sx_status mst = rank_size(comm, &rank, &size, err);
    if (mst != SX_OK)
        return mst;
    /* The failing rank of the lowest key speaks for all (MINLOC: the lowest rank of
     * equal keys); a rank that did not fail offers the largest key and rank 'size',
     * which wins only when none failed. */
    struct {
        long key;
        int rank;
    } mine = {st != SX_OK ? key : LONG_MAX, st != SX_OK ? rank : size}, first;
    mst = sx_mpi_check(MPI_Allreduce(&mine, &first, 1, MPI_LONG_INT, MPI_MINLOC, comm),
                       "MPI_Allreduce", err);
    if (mst != SX_OK)
        return mst;
    return tell_first(comm, rank, size, first.rank, st, err);
}

/* NOTE: collective. Every failing rank offers the same key: the lowest one speaks. */
enum sx_status sx_all_ok(MPI_Comm comm, enum sx_status st, struct sx_error *err) {
    return sx_all_ok_first(comm, st, 0, err);
}

bool sx_mpi_threads_ok(MPI_Comm comm) {
    int level = MPI_THREAD_SINGLE;
    return comm == MPI_COMM_NULL ||
           (MPI_Query_thread(&level) == MPI_SUCCESS && level >= MPI_THREAD_FUNNELED);
}

bool sx_mpi_threads_ok_here(void) {
    int init = 0, fin = 0;
    if (MPI_Initialized(&init) != MPI_SUCCESS || MPI_Finalized(&fin) != MPI_SUCCESS)
        return false;
    return !init || fin || sx_mpi_threads_ok(MPI_COMM_WORLD);
}

/* MPI counts are int: long arrays go in pieces. */
#define MIN_PIECE ((size_t)1 << 28)

/* NOTE: collective */
enum sx_status sx_all_min_i64(MPI_Comm comm, int64_t *m, size_t n, const char *path,
                              struct sx_error *err) {
    for (size_t at = 0; comm != MPI_COMM_NULL && at < n; at += MIN_PIECE) {
        size_t k = n - at < MIN_PIECE ? n - at : MIN_PIECE;
        if (MPI_Allreduce(MPI_IN_PLACE, m + at, (int)k, MPI_INT64_T, MPI_MIN, comm) !=
            MPI_SUCCESS)
            return sx_error_set(err, SX_ERR_MPI, path, "%s: MPI_Allreduce failed", path);
    }
    return SX_OK;
}
