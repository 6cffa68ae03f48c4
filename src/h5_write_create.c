/* h5_write_create.c - the HDF5 writer made (serial, in memory or MPI-IO) and dropped */
#include "h5_write_prim.h"

#include "h5_util.h"
#include "mpi_util.h"
#include "out_file.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCHEMA_VERSION 3

void sx_h5w_spec_init(struct sx_h5w_spec *spec) { *spec = (struct sx_h5w_spec){0}; }

void sx_h5w_free_w(struct sx_h5w *w) {
    sx_h5vfd_drop(&w->vfd); /* its file is closed */
    sx_out_abort(w->out);
    if (w->tmp != NULL && w->rank != 0)
        sx_tmp_forget(
            w->tmp); /* rank 0 renames or removes it; the others only track it */
    free(w->path);
    free(w->final);
    free(w->tmp);
    free(w->offset);
    free(w->count);
    free(w->exclusive);
    free(w->acc);
    free(w->scratch);
    sx_wstage_free(w->stage);
    free(w->mine);
    for (size_t i = 0; i < w->npend; i++)
        sx_h5w_free_pending(&w->pend[i]);
    free(w->pend);
    if (w->comm != MPI_COMM_NULL)
        MPI_Comm_free(&w->comm);
    free(w);
}

/* Close every id; remove the temporary file unless it was renamed. */
static void close_all(struct sx_h5w *w) {
    for (int c = 0; c < SX_NCOLS; c++) {
        sx_h5w_close_id(&w->ev_space[c]);
        sx_h5w_close_id(&w->ev[c]);
    }
    sx_h5w_close_id(&w->t_str);
    sx_h5w_close_id(&w->dxpl);
    sx_h5w_close_id(&w->file);
}

void sx_h5w_abort(struct sx_h5w *w) {
    struct h5_quiet q;
    if (w == NULL)
        return;
    sx_h5_quiet_begin(&q);
    close_all(w);
    sx_h5_quiet_end(&q);
    if (w->tmp != NULL && w->rank == 0) {
        unlink(w->tmp);
        sx_tmp_forget(w->tmp);
    }
    sx_h5w_free_w(w);
}

/* The local part of creating a writer: checks, memory, rank 0's temporary file. */
static enum sx_status create_local(MPI_Comm comm, const char *path,
                                   const struct sx_h5w_spec *spec, struct sx_h5w **wp,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_h5w *w = NULL;

    SX_CHECK(path != NULL && path[0] != '\0', SX_ERR_USAGE, err, "", "no output path");
    SX_CHECK(spec->deflate >= 0 && spec->deflate <= 9, SX_ERR_USAGE, err, path,
             "deflate level %d is not in 0..9", spec->deflate);
    SX_CHECK((spec->cols & ~(unsigned)OPTIONAL_COLS) == 0, SX_ERR_USAGE, err, path,
             "unknown event columns requested");
    w = *wp = sx_calloc(1, sizeof *w);
    SX_CHECK(w != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    w->file = w->t_str = w->dxpl = H5I_INVALID_HID;
    w->vfd.fd = -1;
    w->vfd.driver = H5I_INVALID_HID;
    for (int c = 0; c < SX_NCOLS; c++)
        w->ev[c] = w->ev_space[c] = H5I_INVALID_HID;
    w->spec = *spec;
    w->comm = comm;
    w->collective = comm != MPI_COMM_NULL;
    if (w->collective &&
        (st = sx_mpi_check(MPI_Comm_rank(comm, &w->rank), "MPI_Comm_rank", err)) != SX_OK)
        goto out;
    w->path = sx_strdup(path);
    SX_CHECK(w->path != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    if (w->rank != 0)
        goto out;
    if (spec->in_memory && !w->collective) {
        st = sx_out_open(path, 0, &w->out, err);
        goto out;
    }
    int fd = -1;
    st = sx_out_target(path, &w->final, &w->old, err);
    if (st == SX_OK)
        st = sx_tmp_create(w->final, &w->tmp, &fd, err);
    if (st == SX_OK) {
        sx_out_adopt(fd, &w->old);
        close(fd);
    }
out:
    return st;
}

/* NOTE: collective. Every process learns rank 0's temporary name ('comm' not NULL), and
 * the others track it (sx_tmp_share). */
static enum sx_status share_tmp(struct sx_h5w *w, struct sx_error *err) {
    enum sx_status st = SX_OK;
    char *name = sx_calloc(SX_TMP_NAME, 1);

    if (name == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, w->path, "out of memory");
    else if (w->rank == 0 && strlen(w->tmp) >= SX_TMP_NAME)
        st = sx_error_set(err, SX_ERR_USAGE, w->path, "output path too long");
    else if (w->rank == 0)
        memcpy(name, w->tmp, strlen(w->tmp) + 1);
    if ((st = sx_all_ok(w->comm, st, err)) != SX_OK)
        goto out;
    st = sx_tmp_share(w->comm, w->rank, name, err);
    if (st == SX_OK && w->rank != 0) {
        w->tmp = name;
        name = NULL;
    }
out:
    free(name);
    return st;
}

enum sx_status sx_h5w_create(const char *path, const struct sx_h5w_spec *spec,
                             struct sx_h5w **wp, struct sx_error *err) {
    return sx_h5w_create_mpi(MPI_COMM_NULL, path, spec, wp, err);
}

enum sx_status sx_h5w_create_mpi(MPI_Comm comm, const char *path,
                                 const struct sx_h5w_spec *spec, struct sx_h5w **wp,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_h5w *w = NULL;
    MPI_Comm dup = MPI_COMM_NULL;
    hid_t fapl = H5I_INVALID_HID, g = H5I_INVALID_HID;
    struct h5_quiet q;
    static const char *const groups[] = {"metadata", "region_table", "rank_region_index",
                                         "events"};

    sx_h5_quiet_begin(&q);
    *wp = NULL;
    if (comm != MPI_COMM_NULL && MPI_Comm_dup(comm, &dup) != MPI_SUCCESS) {
        /* The default handler aborts first; this is for a caller's own handler. */
        st = sx_error_set(err, SX_ERR_MPI, path ? path : "", "MPI_Comm_dup failed");
        goto early;
    }
    st = create_local(dup, path, spec, &w, err);
    if (dup != MPI_COMM_NULL)
        st = sx_all_ok(dup, st, err); /* NOTE: collective, with or without a writer */
    if (st != SX_OK) {
        if (w == NULL && dup != MPI_COMM_NULL)
            MPI_Comm_free(&dup); /* otherwise the writer owns it */
        goto early;
    }
    if (w->collective && (st = share_tmp(w, err)) != SX_OK)
        goto out;

    fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5OK(fapl, NULL, "create a file access list");
    if (w->collective) {
        H5OK(H5Pset_fapl_mpio(fapl, w->comm, MPI_INFO_NULL), NULL,
             "select the MPI-IO driver");
        w->dxpl = H5Pcreate(H5P_DATASET_XFER);
        H5OK(w->dxpl, NULL, "create a transfer list");
        H5OK(H5Pset_dxpl_mpio(w->dxpl, H5FD_MPIO_COLLECTIVE), NULL,
             "select collective transfers");
    } else if (w->out != NULL) {
        /* HDF5 writes the output where it is (memory that does not grow with the
         * file); the memory driver, building the file whole in memory, where the
         * driver cannot be registered or SCOPE_EXPORT_H5_IN_MEMORY=1 asks for it */
        const char *mem = getenv("SCOPE_EXPORT_H5_IN_MEMORY");
        w->vfd.fd = sx_out_fd(w->out);
        if ((mem != NULL && strcmp(mem, "1") == 0) || sx_h5vfd_use(&w->vfd, fapl) < 0)
            H5OK(H5Pset_fapl_core(fapl, 1 << 20, 0), NULL, "select the memory driver");
    } else {
        H5OK(H5Pset_fapl_sec2(fapl), NULL, "select the POSIX driver");
    }
    /* SEMI: closing the file fails while an object is open, so a leak is an error. */
    H5OK(H5Pset_fclose_degree(fapl, H5F_CLOSE_SEMI), NULL, "set the close degree");
    w->file =
        H5Fcreate(w->out != NULL ? w->path : w->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    /* the driver's failed allocation is the run's lack of memory, not an I/O error */
    SX_CHECK(w->file >= 0 || !w->vfd.nomem, SX_ERR_NOMEM, err, sx_h5w_src(w, NULL),
             "cannot create the file: out of memory");
    H5OK(w->file, NULL, "create the file");
    w->t_str = sx_h5w_str_type(0);
    H5OK(w->t_str, NULL, "create a string type");

    st = sx_h5w_attr_i64(w, w->file, "/", "scope_profiler_schema", SCHEMA_VERSION, err);
    if (st == SX_OK)
        st = sx_h5w_attr_str(w, w->file, "/", "storage_layout",
                             spec->aggregate ? "aggregate" : "columnar", err);
    if (st != SX_OK)
        goto out;
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        st = sx_h5w_make_group(w, w->file, "/", groups[i], &g, err);
        if (st != SX_OK)
            goto out;
        sx_h5w_close_id(&g);
    }
out:
    sx_h5w_close_id(&g);
    sx_h5w_close_id(&fapl);
    st = sx_h5w_agree(w, st, err);
early:
    sx_h5_quiet_end(&q);
    if (st != SX_OK) {
        sx_h5w_abort(w); /* NOTE: collective: every process failed alike */
        w = NULL;
    }
    *wp = w;
    return st;
}
