/* validate.c - check a JSON profile (read in one pass, or in parts by the ranks of a
 * communicator) or an HDF5 run by reading it whole */
#include "h5_read.h"
#include "json_load.h"
#include "json_stream.h"
#include "mpi_util.h"
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A part of a document smaller than this is not worth a process of its own. */
#define PART_MIN ((uint64_t)1 << 20)

enum sx_status sx_validate(const char *path, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_run *run = NULL;

    sx_error_clear(err);
    SX_CHECK(path != NULL, SX_ERR_USAGE, err, "", "no input file given");
    /* a FIFO would block the first open, a device (/dev/zero) never end */
    struct stat sb;
    SX_CHECK(stat(path, &sb) != 0 || S_ISREG(sb.st_mode), SX_ERR_OPEN, err, path,
             "%s is not a regular file", path);
    if (sx_is_hdf5(path))
        st = sx_h5_load(path, false, &run, err);
    else
        st = sx_json_load_ex(path, SX_JSON_KEEP_NONE, NULL, NULL, &run, NULL, err);
out:
    sx_run_free(run);
    return st;
}

/* What a rank learned of its part. */
struct part {
    uint64_t from, next, count;
    int32_t status, format_checked;
};

/*
 * Rank 0 alone: sx_validate(); its outcome is every rank's. NOTE: collective.
 */
static enum sx_status alone(MPI_Comm comm, int rank, const char *path,
                            struct sx_error *err) {
    enum sx_status st = rank == 0 ? sx_validate(path, err) : SX_OK;
    return sx_all_ok(comm, st, err);
}

/*
 * The document in parts, one a rank: each part starts at a guessed element
 * of regions, and is confirmed when the part before it ends exactly there
 * (the first part starts at the document's start). A guess that was not an
 * element (a look-alike inside event metadata) breaks the chain: rank 0 then
 * reads the document alone. An error is the first in the document's order:
 * that of the first failing part of the confirmed chain, read again with its
 * elements numbered from where that part starts. NOTE: collective.
 */
enum sx_status sx_validate_mpi(MPI_Comm comm, const char *path, struct sx_error *err) {
    enum sx_status st = SX_OK;
    MPI_Comm c = MPI_COMM_NULL;
    int rank = 0, size = 1;
    uint64_t fsize = 0, *starts = NULL;
    bool gz = false;
    struct part mine = {0}, *all = NULL;

    sx_error_clear(err);
    if (comm == MPI_COMM_NULL)
        return sx_validate(path, err);
    if ((st = sx_comm_dup(comm, &c, err)) != SX_OK)
        return st;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &size);

    /* stage 1: what the file is; every rank looks for itself */
    if (path == NULL) {
        st = alone(c, rank, path, err);
        goto out;
    }
    struct stat sb;
    st = stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && !sx_is_hdf5(path)
             ? sx_jstream_probe(path, &fsize, &gz, err)
             : SX_ERR_OPEN;
    int plain = st == SX_OK && !gz && fsize >= 2 * PART_MIN && size > 1;
    MPI_Allreduce(MPI_IN_PLACE, &plain, 1, MPI_INT, MPI_MIN, c);
    if (!plain) {
        sx_error_clear(err);
        st = alone(c, rank, path, err);
        goto out;
    }

    /* stage 2: where the parts start */
    const uint64_t parts =
        fsize / PART_MIN < (uint64_t)size ? fsize / PART_MIN : (uint64_t)size;
    starts = sx_calloc((size_t)size + 1, sizeof *starts);
    all = sx_calloc((size_t)size, sizeof *all);
    st = starts != NULL && all != NULL
             ? SX_OK
             : sx_error_set(err, SX_ERR_NOMEM, path, "out of memory");
    uint64_t guess = rank == 0 ? 0 : UINT64_MAX;
    if (st == SX_OK && rank > 0 && (uint64_t)rank < parts)
        st = sx_jstream_guess(path, fsize / parts * (uint64_t)rank, &guess, err);
    if ((st = sx_all_ok(c, st, err)) != SX_OK)
        goto out;
    MPI_Allgather(&guess, 1, MPI_UINT64_T, starts, 1, MPI_UINT64_T, c);
    starts[size] = UINT64_MAX;
    for (int r = size - 1; r > 0; r--) /* a part may be empty, never backwards */
        if (starts[r] > starts[r + 1])
            starts[r] = starts[r + 1];

    /* stage 3: every rank its part */
    mine.from = starts[rank];
    mine.next = UINT64_MAX;
    if (rank == 0 || mine.from != UINT64_MAX) {
        size_t count = 0;
        bool checked = false;
        st = sx_json_check_part(path, mine.from, starts[rank + 1], 0, &mine.next, &count,
                                &checked, err);
        mine.count = count;
        mine.format_checked = checked;
    }
    mine.status = (int32_t)st;
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, c);

    /* stage 4: the confirmed chain of parts, and its first error */
    int speaker = -1; /* the part whose error is the document's */
    bool chain = all[0].format_checked || all[0].status != SX_OK;
    uint64_t before = 0; /* elements before a part */
    for (int r = 0; chain && r < size; r++) {
        if (all[r].status != SX_OK) {
            speaker = r;
            break;
        }
        if (all[r].next == UINT64_MAX)
            break; /* the document ended in this part */
        before += all[r].count;
        chain = r + 1 < size && all[r].next == starts[r + 1];
    }
    if (!chain) {
        sx_error_clear(err);
        st = alone(c, rank, path, err);
        goto out;
    }
    st = SX_OK;
    if (rank == speaker) {
        st = (enum sx_status)mine.status;
        if (rank > 0 && st == SX_ERR_FORMAT) {
            /* again, numbering its elements as the document does; a failure that
             * does not come back (of a resource, not of the text) stays the first */
            const struct sx_error first = *err;
            uint64_t next = 0;
            size_t count = 0;
            bool checked = false;
            sx_error_clear(err);
            st = sx_json_check_part(path, mine.from, starts[rank + 1], (size_t)before,
                                    &next, &count, &checked, err);
            if (st == SX_OK) {
                *err = first;
                st = (enum sx_status)mine.status;
            }
        }
    }
    st = sx_all_ok(c, st, err);
out:
    free(starts);
    free(all);
    sx_comm_free(&c);
    return st;
}
