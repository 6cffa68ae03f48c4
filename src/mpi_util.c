/* mpi_util.c - ranks agree on errors before the next collective */
#include "internal.h"

#include <string.h>

/* NOTE: collective */
enum sx_status sx_all_ok(MPI_Comm comm, enum sx_status st, struct sx_error *err) {
    int rank = 0, size = 1;
    if (comm == MPI_COMM_NULL) { /* one process without MPI: nobody to agree with */
        if (st != SX_OK && err != NULL) {
            if (err->code == SX_OK)
                err->code = st;
            if (err->rank < 0)
                err->rank = 0;
        }
        return st;
    }
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* The lowest failing rank speaks for all: its error is broadcast. */
    int mine = st != SX_OK ? rank : size;
    int first = size;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
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
    MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, first, comm);
    if (err != NULL)
        *err = e;
    return e.code;
}
