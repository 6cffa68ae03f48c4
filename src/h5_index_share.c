/* h5_index_share.c - a lazy run's index read by rank 0 and broadcast to every rank */
#include "h5_reader.h"
#include "h5_util.h"
#include "mpi_util.h"

#include <stdlib.h>
#include <string.h>

/* NOTE: collective. MPI counts are int: broadcast 'n' bytes in pieces of 1 GiB. */
static bool bcast_big(void *p, uint64_t n, MPI_Comm comm) {
    bool ok = true;
    for (uint64_t at = 0; at < n; at += 1u << 30) {
        int k = n - at < (1u << 30) ? (int)(n - at) : (int)(1u << 30);
        ok &= MPI_Bcast((char *)p + at, k, MPI_BYTE, 0, comm) == MPI_SUCCESS;
    }
    return ok;
}

/*
 * NOTE: collective over 'comm'. The index of a lazily read columnar run is
 * read by rank 0 alone and sent to every rank: at thousands of ranks, every
 * rank reading every index column would storm a parallel file system. The
 * others opened the file's datasets but read no row ('open_only'). Every rank
 * calls this whatever its 'st'; returns the agreed status.
 */
enum sx_status sx_h5_share_index(MPI_Comm comm, struct sx_h5 *h5, struct sx_run *run,
                                 enum sx_status st, struct sx_error *err) {
    int rank = 0;
    struct share_hdr {
        uint64_t nindex, npool[3], bytes[3];
        int64_t num_ranks;
        int32_t shared, has_ids[3];
    } hd;
    char *blob = NULL;
    MPI_Comm_rank(comm, &rank);
    memset(&hd, 0, sizeof hd);
    if (rank == 0 && st == SX_OK && run->index != NULL) {
        hd.shared = 1;
        hd.nindex = run->nindex;
        hd.num_ranks = run->num_ranks;
        for (int k = 0; k < 3; k++) {
            hd.has_ids[k] = h5->pool[k].id != NULL;
            hd.npool[k] = h5->pool[k].n;
            for (size_t i = 0; i < h5->pool[k].n; i++)
                hd.bytes[k] += strlen(h5->pool[k].s[i]) + 1;
        }
    }
    if (MPI_Bcast(&hd, (int)sizeof hd, MPI_BYTE, 0, comm) != MPI_SUCCESS && st == SX_OK)
        st = sx_error_set(err, SX_ERR_MPI, h5->path, "%s: MPI_Bcast of the index failed",
                          h5->path);
    /* room on the receivers */
    if (rank != 0 && st == SX_OK && hd.shared) {
        if (!h5->open_only)
            st = sx_error_set(err, SX_ERR_INTERNAL, h5->path,
                              "%s: the ranks disagree on the file's layout", h5->path);
        run->index = sx_malloc((hd.nindex + 1) * sizeof *run->index);
        run->nindex = (size_t)hd.nindex;
        run->num_ranks = hd.num_ranks;
        bool ok = run->index != NULL;
        for (int k = 0; k < 3 && ok; k++) {
            struct pool *pl = &h5->pool[k];
            if (hd.has_ids[k])
                ok = (pl->id = sx_malloc((hd.nindex + 1) * sizeof *pl->id)) != NULL;
            if (ok && hd.npool[k] > 0)
                ok = (pl->s = sx_calloc(hd.npool[k], sizeof *pl->s)) != NULL;
            pl->cap = (size_t)hd.npool[k];
        }
        if (!ok)
            st = sx_error_set(err, SX_ERR_NOMEM, h5->path,
                              "%s: out of memory for the run's index", h5->path);
    }
    uint64_t most = 0;
    for (int k = 0; k < 3; k++)
        most = hd.bytes[k] > most ? hd.bytes[k] : most;
    if (st == SX_OK && hd.shared && (blob = sx_malloc(most + 1)) == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, h5->path, "%s: out of memory", h5->path);
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK || !hd.shared)
        goto out;

    bool ok = bcast_big(run->index, hd.nindex * sizeof *run->index, comm);
    for (int k = 0; k < 3; k++) {
        struct pool *pl = &h5->pool[k];
        if (hd.has_ids[k])
            ok &= bcast_big(pl->id, hd.nindex * sizeof *pl->id, comm);
        if (hd.npool[k] == 0)
            continue;
        char *q = blob;
        for (size_t i = 0; rank == 0 && i < pl->n; i++) {
            size_t len = strlen(pl->s[i]) + 1;
            memcpy(q, pl->s[i], len);
            q += len;
        }
        ok &= bcast_big(blob, hd.bytes[k], comm);
        q = blob;
        for (size_t i = 0; rank != 0 && i < hd.npool[k]; i++) {
            size_t len = strlen(q) + 1;
            pl->s[i] = sx_strdup(q);
            if (pl->s[i] == NULL && st == SX_OK)
                st = sx_error_set(err, SX_ERR_NOMEM, h5->path, "%s: out of memory",
                                  h5->path);
            if (pl->s[i] != NULL)
                pl->n = i + 1;
            q += len;
        }
    }
    if (!ok && st == SX_OK)
        st = sx_error_set(err, SX_ERR_MPI, h5->path, "%s: MPI_Bcast of the index failed",
                          h5->path);
    st = sx_all_ok(comm, st, err);
out:
    free(blob);
    return st;
}
