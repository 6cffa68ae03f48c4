/* h5_write.c - write a run as a schema-3 HDF5 file in scope-profiler's layout */
#include "h5_write.h"

#include "h5_util.h"

#include "fault.h"
#include "json_write.h"
#include "mpi_util.h"
#include "out_file.h"
#include "run.h"
#include "value.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCHEMA_VERSION 3
#define DEFAULT_CHUNK 16384

/* Per-row running statistics (spec 1.3.1); Welford for the variance. */
struct row_acc {
    uint64_t n;
    uint64_t total; /* unsigned: int64 sums wrap like numpy, without UB */
    int64_t minimum, maximum, first, last, start_minimum, end_maximum;
    uint64_t gpu_count, gpu_total;
    double mean, m2;    /* Welford, for rows written in pieces */
    bool exact;         /* the whole row came in one piece: 'm2_exact' holds */
    double m2_exact;    /* numpy's two-pass sum((d - total / n) ** 2) */
    int64_t prev_start; /* last start written, for the next piece's delta */
};

/* summary_statistics as stored: 88 bytes, packed, little endian. */
struct stat_rec {
    int64_t total, minimum, maximum, first, last, start_minimum, end_maximum;
    uint64_t gpu_count;
    int64_t gpu_total;
    double mean, m2;
};

/* A vlen string dataset kept for the serial phase (HDF5 1.10 cannot write vlen data
 * through MPI-IO): rank 0 creates it after the parallel phase. */
struct pending {
    char *group; /* absolute path of the parent group */
    char *name;
    char **strs; /* owned copies; never NULL entries */
    size_t n;
};

/* One row's result, sent from the process that wrote it to rank 0 by sx_h5w_finish(). */
struct row_out {
    uint64_t row, n;
    int64_t exclusive;
    struct stat_rec rec;
};

struct sx_h5w {
    char *path;              /* final name, for messages */
    char *final;             /* where it goes: the target of a symbolic link 'path' */
    char *tmp;               /* the file being written (HDF5's drivers open it by name) */
    struct sx_out_file *out; /* 'in_memory': where the image goes */
    struct stat old;         /* the file replaced, for its mode and owner */
    struct sx_h5w_spec spec;
    MPI_Comm comm;       /* a dup of the caller's; MPI_COMM_NULL: one process, POSIX */
    int rank;            /* in 'comm'; 0 when serial */
    bool collective;     /* the MPI-IO phase: every process makes every HDF5 call */
    hid_t dxpl;          /* collective transfer, for the event columns */
    enum sx_status late; /* a failure that waited for the end of the call (see carry()) */
    bool *mine;          /* rows whose events or exclusive total this process wrote */
    struct pending *pend;
    size_t npend, cappend;
    hid_t file;
    hid_t t_str; /* vlen UTF-8 */
    hid_t ev[SX_NCOLS];
    hid_t ev_space[SX_NCOLS];
    bool names_done, index_done, threads_done, tasks_done;
    size_t nnames;
    size_t nrows;
    uint64_t nevents;
    uint64_t *offset, *count;
    int64_t *exclusive;
    struct row_acc *acc;
    int64_t *scratch; /* one piece of one encoded column */
    uint64_t scratch_n;
    bool failed;
    char src[SX_ERROR_SOURCE_LENGTH];
};

/* Event column datasets under /events, by enum sx_col. */
static const char *const ev_names[SX_NCOLS] = {
    "start_deltas", "durations",  "gpu_durations", "call_ids",
    "parent_ids",   "thread_ids", "task_ids",      "await_ns"};

#define OPTIONAL_COLS                                                                    \
    (SX_COLBIT(SX_COL_GPU) | SX_COLBIT(SX_COL_CALL) | SX_COLBIT(SX_COL_PARENT) |         \
     SX_COLBIT(SX_COL_THREAD) | SX_COLBIT(SX_COL_TASK) | SX_COLBIT(SX_COL_AWAIT))

static int64_t fill_value(int c) { return c == SX_COL_AWAIT ? 0 : -1; }

/* ------------------------------------------------------------------ */
/* HDF5 error handling                                                */

/* Each write may fail on purpose in the fault tests (SX_FAULT_WRITE). */
static herr_t dwrite(hid_t d, hid_t mt, hid_t ms, hid_t fs, hid_t x, const void *buf) {
    return sx_fault(SX_FAULT_WRITE, 0) ? -1 : H5Dwrite(d, mt, ms, fs, x, buf);
}

static herr_t awrite(hid_t a, hid_t mt, const void *buf) {
    return sx_fault(SX_FAULT_WRITE, 0) ? -1 : H5Awrite(a, mt, buf);
}
#define H5Dwrite dwrite
#define H5Awrite awrite

static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *data) {
    char *out = data;
    (void)n;
    if (out[0] != '\0' || e->desc == NULL || e->desc[0] == '\0')
        return 0;
    /* A failed system call: "file write failed: time = ..., errno = 28, error
     * message = '...'" (several lines) becomes "file write failed: No space left on
     * device", the words an export uses for the same failure. */
    const char *en = strstr(e->desc, "errno = ");
    const char *colon = strchr(e->desc, ':');
    int code = en != NULL ? atoi(en + 8) : 0;
    if (code > 0 && colon != NULL && colon < en)
        snprintf(out, 160, "%.*s: %s", (int)(colon - e->desc), e->desc, strerror(code));
    else
        snprintf(out, 160, "%s", e->desc);
    return 0;
}

/* The innermost message on HDF5's error stack, for the error text. */
static const char *h5_detail(void) {
    static char buf[160];
    buf[0] = '\0';
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, buf);
    return buf[0] ? buf : "HDF5 call failed";
}

/* "<final path>:<object>" for sx_error.source; valid until the next call. */
static const char *src(struct sx_h5w *w, const char *obj) {
    snprintf(w->src, sizeof w->src, "%s%s%s", w->path, obj ? ":" : "", obj ? obj : "");
    return w->src;
}

/* Checks an HDF5 return value (negative = failure) against object 'obj'. */
#define H5OK(expr, obj, what)                                                            \
    SX_CHECK((expr) >= 0, SX_ERR_IO, err, src(w, (obj)), "cannot %s: %s", (what),        \
             h5_detail())

/* Close any kind of id and mark it closed. */
static void close_id(hid_t *id) {
    sx_h5_close_id(*id);
    *id = -1;
}

/*
 * In the MPI-IO phase a process must not leave a call early while the others
 * go on to the next collective HDF5 call: a local failure (a write only rank 0
 * makes, an allocation only it needs) is kept in 'late' and the call goes on;
 * agree() reports it at the end. Serially the failure is returned at once.
 */
static enum sx_status carry(struct sx_h5w *w, enum sx_status st) {
    if (st == SX_OK || !w->collective)
        return st;
    if (w->late == SX_OK)
        w->late = st;
    return SX_OK;
}

/*
 * NOTE: collective in the MPI-IO phase. Every process learns the first
 * failure (and its text) and returns it, so that all of them take the same
 * path to the next collective call. Serially: 'st', or a carried failure.
 */
static enum sx_status agree(struct sx_h5w *w, enum sx_status st, struct sx_error *err) {
    if (st == SX_OK && w->late != SX_OK)
        st = w->late;
    if (w->collective)
        st = sx_all_ok(w->comm, st, err);
    return st;
}

/* ------------------------------------------------------------------ */
/* Small writers: attributes and whole 1-D datasets                   */

static hid_t str_type(size_t width) /* 0 = variable length */
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0)
        return t;
    if (H5Tset_size(t, width ? width : H5T_VARIABLE) < 0 ||
        H5Tset_cset(t, H5T_CSET_UTF8) < 0 ||
        (width && H5Tset_strpad(t, H5T_STR_NULLPAD) < 0)) {
        H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

/* h5py's numpy bool: enum {int8: FALSE 0, TRUE 1}. */
static hid_t bool_type(void) {
    hid_t t = H5Tenum_create(H5T_NATIVE_INT8);
    int8_t v0 = 0, v1 = 1;
    if (t < 0)
        return t;
    if (H5Tenum_insert(t, "FALSE", &v0) < 0 || H5Tenum_insert(t, "TRUE", &v1) < 0) {
        H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

/* Attribute 'name' on 'loc': 'n' values (scalar when 'n' < 0) of 'ftype'/'mtype'. */
static enum sx_status put_attr(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, hid_t ftype, hid_t mtype, long n,
                               const void *buf, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t space = H5I_INVALID_HID, attr = H5I_INVALID_HID;
    hsize_t dim = n < 0 ? 0 : (hsize_t)n;

    space = n < 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &dim, NULL);
    H5OK(space, obj, "create a dataspace");
    attr = H5Acreate2(loc, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    SX_CHECK(attr >= 0, SX_ERR_IO, err, src(w, obj), "cannot create attribute '%s': %s",
             name, h5_detail());
    if (n != 0)
        SX_CHECK(H5Awrite(attr, mtype, buf) >= 0, SX_ERR_IO, err, src(w, obj),
                 "cannot write attribute '%s': %s", name, h5_detail());
out:
    close_id(&attr);
    close_id(&space);
    return st;
}

static enum sx_status attr_i64(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, int64_t v, struct sx_error *err) {
    return put_attr(w, loc, obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, -1, &v, err);
}

static enum sx_status attr_f64(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, double v, struct sx_error *err) {
    return put_attr(w, loc, obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, -1, &v, err);
}

static enum sx_status attr_str(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, const char *s, struct sx_error *err) {
    const char *p = s ? s : "";
    return put_attr(w, loc, obj, name, w->t_str, w->t_str, -1, &p, err);
}

/* A 1-D vlen string attribute; NULL entries are written as "". 'p' has room for 'n'. */
static enum sx_status attr_strs(struct sx_h5w *w, hid_t loc, const char *obj,
                                const char *name, char *const *s, size_t n,
                                const char **p, struct sx_error *err) {
    for (size_t i = 0; i < n; i++)
        p[i] = s[i] ? s[i] : "";
    return put_attr(w, loc, obj, name, w->t_str, w->t_str, (long)n, p, err);
}

/*
 * Dataset 'name' in 'loc': 'rank' dims 'dims' of 'ftype', written whole from
 * 'buf' ('mtype') unless it is empty. 'dcpl' may be H5P_DEFAULT (contiguous).
 */
static enum sx_status put_dset(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, hid_t ftype, hid_t mtype, int rank,
                               const hsize_t *dims, const void *buf,
                               struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t space = H5I_INVALID_HID, dset = H5I_INVALID_HID;
    hsize_t total = 1;

    for (int i = 0; i < rank; i++)
        total *= dims[i];
    space = H5Screate_simple(rank, dims, NULL);
    H5OK(space, obj, "create a dataspace");
    dset = H5Dcreate2(loc, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    SX_CHECK(dset >= 0, SX_ERR_IO, err, src(w, obj), "cannot create dataset '%s': %s",
             name, h5_detail());
    /* Every process creates the dataset; rank 0 alone writes it (spec 5.1). */
    if (total > 0 && buf != NULL && w->rank == 0 &&
        H5Dwrite(dset, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        st = carry(w, sx_error_set(err, SX_ERR_IO, src(w, obj),
                                   "cannot write dataset '%s': %s", name, h5_detail()));
        if (st != SX_OK)
            goto out;
    }
out:
    close_id(&dset);
    close_id(&space);
    return st;
}

static enum sx_status put_1d(struct sx_h5w *w, hid_t loc, const char *obj,
                             const char *name, hid_t ftype, hid_t mtype, size_t n,
                             const void *buf, struct sx_error *err) {
    hsize_t dim = n;
    return put_dset(w, loc, obj, name, ftype, mtype, 1, &dim, buf, err);
}

static void free_pending(struct pending *p) {
    for (size_t i = 0; i < p->n; i++)
        free(p->strs[i]);
    free(p->strs);
    free(p->name);
    free(p->group);
}

/* Keep a vlen string dataset for rank 0 to write after the MPI-IO phase. */
static enum sx_status defer_strs(struct sx_h5w *w, hid_t loc, const char *obj,
                                 const char *name, const char *const *s, size_t n,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct pending pd = {0};
    ssize_t len = H5Iget_name(loc, NULL, 0);

    H5OK(len, obj, "name the group");
    if (w->npend == w->cappend) {
        size_t cap = w->cappend ? 2 * w->cappend : 16;
        struct pending *np = sx_realloc(w->pend, cap * sizeof *np);
        SX_CHECK(np != NULL, SX_ERR_NOMEM, err, src(w, obj), "out of memory");
        w->pend = np;
        w->cappend = cap;
    }
    pd.group = sx_malloc((size_t)len + 1);
    pd.name = sx_strdup(name);
    pd.strs = sx_calloc(n ? n : 1, sizeof *pd.strs);
    SX_CHECK(pd.group && pd.name && pd.strs, SX_ERR_NOMEM, err, src(w, obj),
             "out of memory");
    H5OK(H5Iget_name(loc, pd.group, (size_t)len + 1), obj, "name the group");
    for (; pd.n < n; pd.n++) {
        pd.strs[pd.n] = sx_strdup(s[pd.n] ? s[pd.n] : "");
        SX_CHECK(pd.strs[pd.n] != NULL, SX_ERR_NOMEM, err, src(w, obj), "out of memory");
    }
    w->pend[w->npend++] = pd;
    pd = (struct pending){0};
out:
    free_pending(&pd);
    return st;
}

/*
 * A 1-D string dataset: vlen UTF-8, or NULLPAD fixed-length with the width
 * of the longest value (at least 1) when 'fixed'. NULL entries become "".
 * In the MPI-IO phase a vlen dataset is only recorded (by rank 0): HDF5 1.10
 * refuses vlen writes through MPI-IO, so sx_h5w_finish() writes it serially.
 */
static enum sx_status put_strs(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, const char *const *s, size_t n,
                               bool fixed, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t t = H5I_INVALID_HID;
    const char **p = NULL;
    char *fbuf = NULL;
    size_t width = 1;

    if (!fixed && w->collective)
        return w->rank == 0 ? carry(w, defer_strs(w, loc, obj, name, s, n, err)) : SX_OK;
    if (!fixed) {
        p = sx_calloc(n, sizeof *p);
        SX_CHECK(p != NULL, SX_ERR_NOMEM, err, src(w, obj), "out of memory");
        for (size_t i = 0; i < n; i++)
            p[i] = s[i] ? s[i] : "";
        st = put_1d(w, loc, obj, name, w->t_str, w->t_str, n, p, err);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        size_t len = s[i] ? strlen(s[i]) : 0;
        if (len > width)
            width = len;
    }
    SX_CHECK(n == 0 || width <= SIZE_MAX / n, SX_ERR_NOMEM, err, src(w, obj),
             "out of memory");
    if (w->rank == 0) { /* the only writer; the others need just the width */
        fbuf = sx_calloc(n ? n * width : 1, 1);
        if (fbuf == NULL && (st = carry(w, sx_error_set(err, SX_ERR_NOMEM, src(w, obj),
                                                        "out of memory"))) != SX_OK)
            goto out;
        for (size_t i = 0; i < n && fbuf != NULL; i++)
            if (s[i])
                memcpy(fbuf + i * width, s[i], strlen(s[i]));
    }
    t = str_type(width);
    H5OK(t, obj, "create a string type");
    st = put_1d(w, loc, obj, name, t, t, n, fbuf, err);
out:
    close_id(&t);
    free(fbuf);
    free(p);
    return st;
}

static enum sx_status make_group(struct sx_h5w *w, hid_t loc, const char *obj,
                                 const char *name, hid_t *g, struct sx_error *err) {
    enum sx_status st = SX_OK;
    *g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    SX_CHECK(*g >= 0, SX_ERR_IO, err, src(w, obj), "cannot create group '%s': %s", name,
             h5_detail());
out:
    return st;
}

/* Open group 'name' in 'loc', creating it when it does not exist yet. */
static enum sx_status open_group(struct sx_h5w *w, hid_t loc, const char *obj,
                                 const char *name, hid_t *g, struct sx_error *err) {
    enum sx_status st = SX_OK;
    htri_t has = H5Lexists(loc, name, H5P_DEFAULT);
    H5OK(has, obj, "look up a group");
    if (!has)
        return make_group(w, loc, obj, name, g, err);
    *g = H5Gopen2(loc, name, H5P_DEFAULT);
    SX_CHECK(*g >= 0, SX_ERR_IO, err, src(w, obj), "cannot open group '%s': %s", name,
             h5_detail());
out:
    return st;
}

/* ------------------------------------------------------------------ */
/* Create, metadata, names                                            */

void sx_h5w_spec_init(struct sx_h5w_spec *spec) { *spec = (struct sx_h5w_spec){0}; }

static void free_w(struct sx_h5w *w) {
    sx_out_abort(w->out);
    free(w->path);
    free(w->final);
    free(w->tmp);
    free(w->offset);
    free(w->count);
    free(w->exclusive);
    free(w->acc);
    free(w->scratch);
    free(w->mine);
    for (size_t i = 0; i < w->npend; i++)
        free_pending(&w->pend[i]);
    free(w->pend);
    if (w->comm != MPI_COMM_NULL)
        MPI_Comm_free(&w->comm);
    free(w);
}

/* Close every id; remove the temporary file unless it was renamed. */
static void close_all(struct sx_h5w *w) {
    for (int c = 0; c < SX_NCOLS; c++) {
        close_id(&w->ev_space[c]);
        close_id(&w->ev[c]);
    }
    close_id(&w->t_str);
    close_id(&w->dxpl);
    close_id(&w->file);
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
    free_w(w);
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
        st = sx_out_open(path, false, &w->out, err);
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

/* NOTE: collective. Every process learns rank 0's temporary name ('comm' not NULL). */
static enum sx_status share_tmp(struct sx_h5w *w, struct sx_error *err) {
    enum sx_status st = SX_OK;
    unsigned long len = w->rank == 0 ? (unsigned long)strlen(w->tmp) : 0;

    st =
        sx_mpi_check(MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG, 0, w->comm), "MPI_Bcast", err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(len < INT_MAX, SX_ERR_USAGE, err, w->path, "output path too long");
    if (w->rank != 0) {
        w->tmp = sx_calloc(len + 1, 1);
        if (w->tmp == NULL)
            st = sx_error_set(err, SX_ERR_NOMEM, w->path, "out of memory");
    }
    if ((st = sx_all_ok(w->comm, st, err)) != SX_OK)
        goto out;
    st =
        sx_mpi_check(MPI_Bcast(w->tmp, (int)len, MPI_CHAR, 0, w->comm), "MPI_Bcast", err);
out:
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
        H5OK(H5Pset_fapl_core(fapl, 1 << 20, 0), NULL, "select the memory driver");
    } else {
        H5OK(H5Pset_fapl_sec2(fapl), NULL, "select the POSIX driver");
    }
    /* SEMI: closing the file fails while an object is open, so a leak is an error. */
    H5OK(H5Pset_fclose_degree(fapl, H5F_CLOSE_SEMI), NULL, "set the close degree");
    w->file =
        H5Fcreate(w->out != NULL ? w->path : w->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5OK(w->file, NULL, "create the file");
    w->t_str = str_type(0);
    H5OK(w->t_str, NULL, "create a string type");

    st = attr_i64(w, w->file, "/", "scope_profiler_schema", SCHEMA_VERSION, err);
    if (st == SX_OK)
        st = attr_str(w, w->file, "/", "storage_layout",
                      spec->aggregate ? "aggregate" : "columnar", err);
    if (st != SX_OK)
        goto out;
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        st = make_group(w, w->file, "/", groups[i], &g, err);
        if (st != SX_OK)
            goto out;
        close_id(&g);
    }
out:
    close_id(&g);
    close_id(&fapl);
    st = agree(w, st, err);
early:
    sx_h5_quiet_end(&q);
    if (st != SX_OK) {
        sx_h5w_abort(w); /* NOTE: collective: every process failed alike */
        w = NULL;
    }
    *wp = w;
    return st;
}

/* The attribute of one metadata value. */
static enum sx_status meta_attr(struct sx_h5w *w, hid_t g, const char *key,
                                const struct sx_value *v, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t tb = H5I_INVALID_HID;
    void *buf = NULL;
    const char *obj = "/metadata";

    switch (v->kind) {
    case SX_V_INT:
        return attr_i64(w, g, obj, key, v->u.i, err);
    case SX_V_UINT:
        return put_attr(w, g, obj, key, H5T_STD_U64LE, H5T_NATIVE_UINT64, -1, &v->u.u,
                        err);
    case SX_V_FLOAT:
        return attr_f64(w, g, obj, key, v->u.f, err);
    case SX_V_NULL:
        /* h5py has no null; NaN reads back as null and keeps the key. */
        return attr_f64(w, g, obj, key, NAN, err);
    case SX_V_STR:
        return attr_str(w, g, obj, key, v->u.str.s, err);
    case SX_V_BOOL: {
        int8_t b = v->u.b ? 1 : 0;
        tb = bool_type();
        H5OK(tb, obj, "create the bool type");
        st = put_attr(w, g, obj, key, tb, tb, -1, &b, err);
        goto out;
    }
    case SX_V_ARRAY:
        break;
    default:
        SX_CHECK(false, SX_ERR_UNSUPPORTED, err, src(w, obj),
                 "metadata '%s': nested objects cannot be stored as HDF5 attributes",
                 key);
    }

    /* An array: the narrowest numpy dtype holding every item, as h5py stores it. */
    size_t n = v->u.arr.n, nstr = 0, nbool = 0, nfloat = 0, nuint = 0, nneg = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sx_value *it = &v->u.arr.items[i];
        switch (it->kind) {
        case SX_V_STR:
            nstr++;
            break;
        case SX_V_BOOL:
            nbool++;
            break;
        case SX_V_FLOAT:
        case SX_V_NULL:
            nfloat++;
            break;
        case SX_V_UINT:
            nuint++;
            break;
        case SX_V_INT:
            nneg += it->u.i < 0;
            break;
        default:
            SX_CHECK(
                false, SX_ERR_UNSUPPORTED, err, src(w, obj),
                "metadata '%s': nested containers cannot be stored as HDF5 attributes",
                key);
        }
    }
    SX_CHECK(nstr == 0 || nstr == n, SX_ERR_UNSUPPORTED, err, src(w, obj),
             "metadata '%s': a list mixing strings and other values has no HDF5 form",
             key);
    SX_CHECK(nuint == 0 || nneg == 0, SX_ERR_UNSUPPORTED, err, src(w, obj),
             "metadata '%s': a list mixing negative and uint64 values has no HDF5 form",
             key);
    /* One buffer for every element type: 8 bytes or a pointer each. */
    buf = sx_calloc(n ? n : 1, sizeof(int64_t) + sizeof(char *));
    SX_CHECK(buf != NULL, SX_ERR_NOMEM, err, src(w, obj), "out of memory");
    if (n == 0 || nstr == n) {
        /* An empty list is stored as an empty string array (h5py's choice for []). */
        const char **p = buf;
        for (size_t i = 0; i < n; i++)
            p[i] = v->u.arr.items[i].u.str.s ? v->u.arr.items[i].u.str.s : "";
        st = put_attr(w, g, obj, key, w->t_str, w->t_str, (long)n, p, err);
    } else if (nfloat > 0) {
        double *d = buf;
        for (size_t i = 0; i < n; i++) {
            const struct sx_value *it = &v->u.arr.items[i];
            d[i] = it->kind == SX_V_FLOAT  ? it->u.f
                   : it->kind == SX_V_INT  ? (double)it->u.i
                   : it->kind == SX_V_UINT ? (double)it->u.u
                   : it->kind == SX_V_BOOL ? (double)it->u.b
                                           : NAN;
        }
        st = put_attr(w, g, obj, key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, (long)n, d, err);
    } else if (nbool == n) {
        int8_t *b = buf;
        for (size_t i = 0; i < n; i++)
            b[i] = v->u.arr.items[i].u.b ? 1 : 0;
        tb = bool_type();
        H5OK(tb, obj, "create the bool type");
        st = put_attr(w, g, obj, key, tb, tb, (long)n, b, err);
    } else if (nuint > 0) {
        uint64_t *u = buf;
        for (size_t i = 0; i < n; i++) {
            const struct sx_value *it = &v->u.arr.items[i];
            u[i] = it->kind == SX_V_UINT  ? it->u.u
                   : it->kind == SX_V_INT ? (uint64_t)it->u.i
                                          : (uint64_t)it->u.b;
        }
        st = put_attr(w, g, obj, key, H5T_STD_U64LE, H5T_NATIVE_UINT64, (long)n, u, err);
    } else {
        int64_t *i64 = buf;
        for (size_t i = 0; i < n; i++) {
            const struct sx_value *it = &v->u.arr.items[i];
            i64[i] = it->kind == SX_V_INT ? it->u.i : (int64_t)it->u.b;
        }
        st = put_attr(w, g, obj, key, H5T_STD_I64LE, H5T_NATIVE_INT64, (long)n, i64, err);
    }
out:
    close_id(&tb);
    free(buf);
    return st;
}

enum sx_status sx_h5w_metadata(struct sx_h5w *w, const struct sx_value *meta,
                               struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = H5I_INVALID_HID;
    struct h5_quiet q;

    sx_h5_quiet_begin(&q);
    SX_CHECK(!w->failed, SX_ERR_USAGE, err, src(w, NULL), "writer used after a failure");
    if (meta == NULL || meta->kind == SX_V_NULL)
        goto out;
    SX_CHECK(meta->kind == SX_V_OBJECT, SX_ERR_USAGE, err, src(w, "/metadata"),
             "metadata is not an object");
    g = H5Gopen2(w->file, "metadata", H5P_DEFAULT);
    H5OK(g, "/metadata", "open the group");
    for (size_t i = 0; i < meta->u.obj.n; i++) {
        const struct sx_member *m = &meta->u.obj.items[i];
        SX_CHECK(m->key != NULL && m->key[0] != '\0' && strlen(m->key) == m->key_len,
                 SX_ERR_UNSUPPORTED, err, src(w, "/metadata"),
                 "metadata key %zu is empty or holds a NUL byte", i);
        st = meta_attr(w, g, m->key, &m->value, err);
        if (st != SX_OK)
            goto out;
    }
out:
    close_id(&g);
    st = agree(w, st, err);
    sx_h5_quiet_end(&q);
    if (st != SX_OK)
        w->failed = true;
    return st;
}

enum sx_status sx_h5w_names(struct sx_h5w *w, char *const *names, size_t n,
                            struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = H5I_INVALID_HID;
    struct h5_quiet q;

    sx_h5_quiet_begin(&q);
    SX_CHECK(!w->failed && !w->names_done, SX_ERR_USAGE, err, src(w, "/region_table"),
             "region names written twice or after a failure");
    g = H5Gopen2(w->file, "region_table", H5P_DEFAULT);
    H5OK(g, "/region_table", "open the group");
    st = put_strs(w, g, "/region_table/names", "names", (const char *const *)names, n,
                  w->spec.fixed_strings, err);
    w->nnames = n;
out:
    close_id(&g);
    st = agree(w, st, err);
    w->names_done = st == SX_OK;
    sx_h5_quiet_end(&q);
    if (st != SX_OK)
        w->failed = true;
    return st;
}

/* ------------------------------------------------------------------ */
/* Index                                                              */

/* One aggregate value of 'row' by key; false when the row lacks it. */
static bool agg_get(const struct sx_row *row, const char *key, int64_t *v) {
    for (size_t i = 0; i < row->nagg; i++) {
        const struct sx_agg_field *f = &row->agg[i];
        if (f->key == NULL || strcmp(f->key, key) != 0)
            continue;
        *v = f->is_float ? (int64_t)f->f : f->is_unsigned ? (int64_t)f->u : f->i;
        return true;
    }
    return false;
}

/* The tags of 'row' as Python's json.dumps(list) text into 'b'. */
static void tags_json(struct sx_buf *b, const struct sx_row *row) {
    sx_buf_reset(b);
    sx_buf_putc(b, '[');
    for (size_t i = 0; i < row->ntags; i++) {
        if (i > 0)
            sx_buf_puts(b, ", ");
        sx_buf_cstr(b, row->tags[i] ? row->tags[i] : "");
    }
    sx_buf_putc(b, ']');
    sx_buf_putc(b, '\0');
}

/* An event column dataset of the final length (chunked and filtered per spec). */
static enum sx_status make_event_dset(struct sx_h5w *w, hid_t g, int c, uint64_t n,
                                      struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t dcpl = H5I_INVALID_HID;
    hsize_t dim = n, maxdim = n, chunk;
    char obj[64];
    bool chunked = w->spec.chunk > 0 || w->spec.deflate > 0;

    snprintf(obj, sizeof obj, "/events/%s", ev_names[c]);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5OK(dcpl, obj, "create a dataset property list");
    if (chunked) {
        /* Resizable like the serial writer's datasets (maxshape None). */
        chunk = w->spec.chunk ? w->spec.chunk : DEFAULT_CHUNK;
        maxdim = H5S_UNLIMITED;
        H5OK(H5Pset_chunk(dcpl, 1, &chunk), obj, "set the chunk size");
        if (w->spec.deflate > 0) {
            H5OK(H5Pset_shuffle(dcpl), obj, "set the shuffle filter");
            H5OK(H5Pset_deflate(dcpl, (unsigned)w->spec.deflate), obj,
                 "set the deflate filter");
        }
    }
    w->ev_space[c] = H5Screate_simple(1, &dim, &maxdim);
    H5OK(w->ev_space[c], obj, "create a dataspace");
    w->ev[c] = H5Dcreate2(g, ev_names[c], H5T_STD_I64LE, w->ev_space[c], H5P_DEFAULT,
                          dcpl, H5P_DEFAULT);
    H5OK(w->ev[c], obj, "create the dataset");
out:
    close_id(&dcpl);
    return st;
}

/*
 * Rank 0 alone, in the MPI-IO phase (the caller agrees on the result). Parallel HDF5
 * allocates every dataset's space when it is created, so once the event columns exist the
 * end of the last one is known: rank 0 reserves that much disk for the temporary
 * file before any event is written. A full disk is then one error here, instead of a
 * failed MPI-IO write (which Open MPI reports on its own) and a file that can no longer
 * be closed. Where the file system cannot reserve space the writes themselves still
 * report it.
 */
static enum sx_status reserve(struct sx_h5w *w, struct sx_error *err) {
    enum sx_status st = SX_OK;
    uint64_t end = 0;
    int fd = -1, e = 0;

    if (w->rank != 0 || w->tmp == NULL)
        goto out;
    /* The end of the last event column (chunked columns have no single offset; their
     * chunks are not reserved). */
    for (int c = 0; c < SX_NCOLS; c++) {
        if (w->ev[c] < 0)
            continue;
        haddr_t at = H5Dget_offset(w->ev[c]);
        hsize_t size = H5Dget_storage_size(w->ev[c]);
        if (at != HADDR_UNDEF && at <= (haddr_t)INT64_MAX && size <= INT64_MAX - at &&
            at + size > end)
            end = at + size;
    }
    if (end == 0)
        goto out;
    fd = open(w->tmp, O_WRONLY | O_CLOEXEC);
    SX_CHECK(fd >= 0, SX_ERR_IO, err, src(w, NULL), "cannot write %s: %s", w->path,
             strerror(errno));
    e = posix_fallocate(fd, 0, (off_t)end);
    SX_CHECK(e == 0 || e == EINVAL || e == EOPNOTSUPP, SX_ERR_IO, err, src(w, NULL),
             "cannot write %s: %s", w->path, strerror(e));
out:
    if (fd >= 0)
        close(fd);
    return st;
}

static enum sx_status index_aggregate(struct sx_h5w *w, hid_t g,
                                      const struct sx_row *const *rows, size_t n,
                                      int64_t *i64, struct sx_error *err) {
    enum sx_status st = SX_OK;
    static const char *const keys[] = {"total", "minimum", "maximum", "exclusive"};
    static const char *const dsets[] = {"aggregate_totals", "aggregate_minimums",
                                        "aggregate_maximums", "aggregate_exclusives"};
    const char *obj = "/rank_region_index";
    uint64_t *u64 = (uint64_t *)i64; /* same size; one buffer for all columns */
    int64_t v;

    for (size_t r = 0; r < n; r++) {
        SX_CHECK(agg_get(rows[r], "count", &v) && v >= 0, SX_ERR_VALUE, err, src(w, obj),
                 "aggregate row %zu has no call count", r);
        u64[r] = (uint64_t)v;
    }
    st = put_1d(w, g, obj, "aggregate_counts", H5T_STD_U64LE, H5T_NATIVE_UINT64, n, u64,
                err);
    for (size_t k = 0; k < 4 && st == SX_OK; k++) {
        for (size_t r = 0; r < n; r++) {
            int64_t total = 0;
            if (!agg_get(rows[r], keys[k], &i64[r])) {
                /* A summary without "exclusive" means no child time: all of it. */
                SX_CHECK(k == 3 && agg_get(rows[r], "total", &total), SX_ERR_VALUE, err,
                         src(w, obj), "aggregate row %zu has no '%s'", r, keys[k]);
                i64[r] = total;
            }
        }
        st = put_1d(w, g, obj, dsets[k], H5T_STD_I64LE, H5T_NATIVE_INT64, n, i64, err);
    }
    if (st != SX_OK)
        goto out;
    /* The per-event columns exist but stay empty (spec 1.4). */
    static const char *const empty_u64[] = {"event_offsets", "event_counts"};
    static const char *const empty_i64[] = {"source_lines", "exclusive_totals"};
    static const char *const empty_str[] = {"source_files", "source_texts", "tags",
                                            "event_metadata"};
    for (size_t k = 0; k < 2 && st == SX_OK; k++)
        st = put_1d(w, g, obj, empty_u64[k], H5T_STD_U64LE, H5T_NATIVE_UINT64, 0, NULL,
                    err);
    for (size_t k = 0; k < 2 && st == SX_OK; k++)
        st = put_1d(w, g, obj, empty_i64[k], H5T_STD_I64LE, H5T_NATIVE_INT64, 0, NULL,
                    err);
    for (size_t k = 0; k < 4 && st == SX_OK; k++)
        st = put_strs(w, g, obj, empty_str[k], NULL, 0, w->spec.fixed_strings, err);
out:
    return st;
}

/* Scratch of sx_h5w_index(), one entry per row. */
struct index_buf {
    uint32_t *u32;
    int64_t *i64;
    const char **strs;
    char **owned; /* tags as JSON text */
};

/* The local part of sx_h5w_index(): checks, memory, offsets, tag texts. */
static enum sx_status index_prepare(struct sx_h5w *w, const struct sx_row *const *rows,
                                    size_t n, struct index_buf *ib,
                                    struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_buf b;
    const char *obj = "/rank_region_index";

    sx_buf_init(&b);
    SX_CHECK(!w->failed && w->names_done && !w->index_done, SX_ERR_USAGE, err,
             src(w, obj),
             "index written twice, before the region names, or after a failure");
    SX_CHECK(!w->collective || n <= INT_MAX, SX_ERR_UNSUPPORTED, err, src(w, obj),
             "%zu index rows: more than an MPI count can hold", n);
    ib->u32 = sx_calloc(n ? n : 1, sizeof *ib->u32);
    ib->i64 = sx_calloc(n ? n : 1, sizeof *ib->i64);
    ib->strs = sx_calloc(n ? n : 1, sizeof *ib->strs);
    ib->owned = sx_calloc(n ? n : 1, sizeof *ib->owned);
    w->offset = sx_calloc(n ? n : 1, sizeof *w->offset);
    w->count = sx_calloc(n ? n : 1, sizeof *w->count);
    w->exclusive = sx_calloc(n ? n : 1, sizeof *w->exclusive);
    w->acc = sx_calloc(n ? n : 1, sizeof *w->acc);
    w->mine = sx_calloc(n ? n : 1, sizeof *w->mine);
    SX_CHECK(ib->u32 && ib->i64 && ib->strs && ib->owned && w->offset && w->count &&
                 w->exclusive && w->acc && w->mine,
             SX_ERR_NOMEM, err, src(w, obj), "out of memory");
    w->nrows = n;

    for (size_t r = 0; r < n; r++) {
        const struct sx_row *row = rows[r];
        SX_CHECK(row->region < w->nnames, SX_ERR_VALUE, err, src(w, obj),
                 "row %zu names region %u of %zu", r, (unsigned)row->region, w->nnames);
        SX_CHECK(row->rank >= 0 && row->rank <= (int64_t)UINT32_MAX, SX_ERR_VALUE, err,
                 src(w, obj), "row %zu has rank %lld, not a uint32", r,
                 (long long)row->rank);
        SX_CHECK(r == 0 || row->rank >= rows[r - 1]->rank, SX_ERR_USAGE, err, src(w, obj),
                 "rows are not in ascending rank order (row %zu)", r);
        if (!w->spec.aggregate) {
            SX_CHECK(row->count <= UINT64_MAX - w->nevents, SX_ERR_VALUE, err,
                     src(w, obj), "too many events");
            w->offset[r] = w->nevents;
            w->count[r] = row->count;
            w->nevents += row->count;
            w->exclusive[r] = row->has_exclusive ? row->exclusive_total : -1;
        }
    }
    for (size_t r = 0; r < n && !w->spec.aggregate; r++) {
        tags_json(&b, rows[r]);
        SX_CHECK(!b.failed, SX_ERR_NOMEM, err, src(w, obj), "out of memory");
        ib->owned[r] = sx_strdup(b.data);
        SX_CHECK(ib->owned[r] != NULL, SX_ERR_NOMEM, err, src(w, obj), "out of memory");
    }
out:
    sx_buf_free(&b);
    return st;
}

enum sx_status sx_h5w_index(struct sx_h5w *w, const struct sx_row *const *rows, size_t n,
                            struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = H5I_INVALID_HID, ge = H5I_INVALID_HID;
    struct index_buf ib = {0};
    struct h5_quiet q;
    const char *obj = "/rank_region_index";

    sx_h5_quiet_begin(&q);
    st = index_prepare(w, rows, n, &ib, err);
    if ((st = agree(w, st, err)) != SX_OK)
        goto out;
    /* NOTE: collective from here in the MPI-IO phase: every process creates every
     * dataset; put_dset() lets rank 0 alone write the values. */
    g = H5Gopen2(w->file, "rank_region_index", H5P_DEFAULT);
    H5OK(g, obj, "open the group");
    for (size_t r = 0; r < n; r++)
        ib.u32[r] = rows[r]->region;
    st =
        put_1d(w, g, obj, "region_ids", H5T_STD_U32LE, H5T_NATIVE_UINT32, n, ib.u32, err);
    if (st != SX_OK)
        goto out;
    for (size_t r = 0; r < n; r++)
        ib.u32[r] = (uint32_t)rows[r]->rank;
    st = put_1d(w, g, obj, "ranks", H5T_STD_U32LE, H5T_NATIVE_UINT32, n, ib.u32, err);
    if (st != SX_OK)
        goto out;

    if (w->spec.aggregate) {
        st = index_aggregate(w, g, rows, n, ib.i64, err);
        if (st != SX_OK)
            goto out;
    } else {
        st = put_1d(w, g, obj, "event_offsets", H5T_STD_U64LE, H5T_NATIVE_UINT64, n,
                    w->offset, err);
        if (st == SX_OK)
            st = put_1d(w, g, obj, "event_counts", H5T_STD_U64LE, H5T_NATIVE_UINT64, n,
                        w->count, err);
        if (st != SX_OK)
            goto out;
        for (size_t r = 0; r < n; r++)
            ib.i64[r] = rows[r]->has_lineno ? rows[r]->source_lineno : -1;
        st = put_1d(w, g, obj, "source_lines", H5T_STD_I64LE, H5T_NATIVE_INT64, n, ib.i64,
                    err);
        if (st != SX_OK)
            goto out;
        for (size_t r = 0; r < n; r++)
            ib.strs[r] = rows[r]->source_file;
        st = put_strs(w, g, obj, "source_files", ib.strs, n, w->spec.fixed_strings, err);
        if (st != SX_OK)
            goto out;
        for (size_t r = 0; r < n; r++)
            ib.strs[r] = rows[r]->source_text;
        st = put_strs(w, g, obj, "source_texts", ib.strs, n, w->spec.fixed_strings, err);
        if (st != SX_OK)
            goto out;
        st = put_strs(w, g, obj, "tags", (const char *const *)ib.owned, n,
                      w->spec.fixed_strings, err);
        if (st != SX_OK)
            goto out;
        if (w->spec.meta) {
            for (size_t r = 0; r < n; r++)
                ib.strs[r] = rows[r]->meta_text ? rows[r]->meta_text : "[]";
            st = put_strs(w, g, obj, "event_metadata", ib.strs, n, w->spec.fixed_strings,
                          err);
            if (st != SX_OK)
                goto out;
        }
    }

    /* The event columns, at their final length (empty for the aggregate layout). */
    ge = H5Gopen2(w->file, "events", H5P_DEFAULT);
    H5OK(ge, "/events", "open the group");
    for (int c = 0; c < SX_NCOLS; c++) {
        if (c > SX_COL_END && (w->spec.aggregate || !(w->spec.cols & SX_COLBIT(c))))
            continue;
        st = make_event_dset(w, ge, c, w->nevents, err);
        if (st != SX_OK)
            goto out;
    }
    if (w->collective)
        st = reserve(w, err); /* rank 0 alone; agreed on below */
out:
    if (ib.owned != NULL)
        for (size_t r = 0; r < n; r++)
            free(ib.owned[r]);
    free(ib.owned);
    free(ib.strs);
    free(ib.i64);
    free(ib.u32);
    close_id(&ge);
    close_id(&g);
    st = agree(w, st, err);
    w->index_done = st == SX_OK;
    sx_h5_quiet_end(&q);
    if (st != SX_OK)
        w->failed = true;
    return st;
}

enum sx_status sx_h5w_set_exclusive(struct sx_h5w *w, size_t row, int64_t ns,
                                    struct sx_error *err) {
    enum sx_status st = SX_OK;
    SX_CHECK(w->index_done && !w->spec.aggregate && row < w->nrows, SX_ERR_USAGE, err,
             src(w, "/rank_region_index/exclusive_totals"), "no index row %zu", row);
    w->exclusive[row] = ns < 0 ? -1 : ns;
    w->mine[row] = true;
out:
    return st;
}

/* ------------------------------------------------------------------ */
/* Events                                                             */

static void acc_add(struct row_acc *a, int64_t start, int64_t dur, bool has_gpu,
                    int64_t gpu) {
    int64_t end = (int64_t)((uint64_t)start + (uint64_t)dur);
    if (a->n == 0) {
        a->minimum = a->maximum = a->first = dur;
        a->start_minimum = start;
        a->end_maximum = end;
    }
    a->n++;
    a->total += (uint64_t)dur;
    a->minimum = dur < a->minimum ? dur : a->minimum;
    a->maximum = dur > a->maximum ? dur : a->maximum;
    a->last = dur;
    a->start_minimum = start < a->start_minimum ? start : a->start_minimum;
    a->end_maximum = end > a->end_maximum ? end : a->end_maximum;
    if (has_gpu && gpu >= 0) {
        a->gpu_count++;
        a->gpu_total += (uint64_t)gpu;
    }
    double d = (double)dur - a->mean;
    a->mean += d / (double)a->n;
    a->m2 += d * ((double)dur - a->mean);
}

static double sq_dev(const int64_t *s, const int64_t *e, size_t i, double mean) {
    double x = (double)(int64_t)((uint64_t)e[i] - (uint64_t)s[i]) - mean;
    return x * x;
}

/*
 * sum((d - mean) ** 2) over the durations e - s, added in numpy's pairwise
 * order (8 running sums per block of up to 128, halves split at a multiple
 * of 8), so m2 is bit-identical to what scope-profiler stores.
 */
static double pairwise_m2(const int64_t *s, const int64_t *e, size_t n, double mean) {
    if (n < 8) {
        double r = 0.0;
        for (size_t i = 0; i < n; i++)
            r += sq_dev(s, e, i, mean);
        return r;
    }
    if (n <= 128) {
        double r[8];
        size_t i;
        for (int k = 0; k < 8; k++)
            r[k] = sq_dev(s, e, (size_t)k, mean);
        for (i = 8; i < n - n % 8; i += 8)
            for (int k = 0; k < 8; k++)
                r[k] += sq_dev(s, e, i + (size_t)k, mean);
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += sq_dev(s, e, i, mean);
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_m2(s, e, n2, mean) + pairwise_m2(s + n2, e + n2, n - n2, mean);
}

/* The local part of sx_h5w_events(): checks and scratch space. */
static enum sx_status events_prepare(struct sx_h5w *w, size_t row, uint64_t first,
                                     uint64_t n, const int64_t *const col[SX_NCOLS],
                                     struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct row_acc *a;

    SX_CHECK(!w->failed && w->index_done && !w->spec.aggregate, SX_ERR_USAGE, err,
             src(w, "/events"),
             "events written before the index, after a failure, or "
             "into an aggregate file");
    if (n == 0 && w->collective)
        goto out; /* this process only joins the collective writes */
    SX_CHECK(row < w->nrows, SX_ERR_USAGE, err, src(w, "/events"), "no index row %zu",
             row);
    a = &w->acc[row];
    SX_CHECK(first == a->n && n <= w->count[row] - first, SX_ERR_USAGE, err,
             src(w, "/events"),
             "row %zu: events %llu..%llu out of order or beyond its %llu", row,
             (unsigned long long)first, (unsigned long long)(first + n),
             (unsigned long long)w->count[row]);
    SX_CHECK(n == 0 || (col[SX_COL_START] != NULL && col[SX_COL_END] != NULL),
             SX_ERR_USAGE, err, src(w, "/events"), "row %zu: no start or end times", row);
    SX_CHECK(n <= (uint64_t)SIZE_MAX / sizeof(int64_t), SX_ERR_NOMEM, err,
             src(w, "/events"), "out of memory");
    if (w->scratch_n < n) {
        int64_t *p = sx_realloc(w->scratch, (size_t)n * sizeof *p);
        SX_CHECK(p != NULL, SX_ERR_NOMEM, err, src(w, "/events"), "out of memory");
        w->scratch = p;
        w->scratch_n = n;
    }
out:
    return st;
}

enum sx_status sx_h5w_events(struct sx_h5w *w, size_t row, uint64_t first, uint64_t n,
                             const int64_t *const col[SX_NCOLS], struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t mspace = H5I_INVALID_HID;
    struct h5_quiet q;
    struct row_acc *a = NULL;
    hsize_t off = 0, cnt = n ? n : 1;
    static const int64_t none = 0; /* a valid buffer for an empty selection */

    sx_h5_quiet_begin(&q);
    st = events_prepare(w, row, first, n, col, err);
    if ((st = agree(w, st, err)) != SX_OK || (n == 0 && !w->collective))
        goto out;
    /* NOTE: collective from here in the MPI-IO phase: every process makes the same
     * H5Dwrite calls, one with an empty selection when it has no events (n = 0). */
    if (n > 0) {
        a = &w->acc[row];
        off = w->offset[row] + first;
        w->mine[row] = true;
    }
    mspace = H5Screate_simple(1, &cnt, NULL);
    H5OK(mspace, "/events", "create a dataspace");
    if (n == 0)
        H5OK(H5Sselect_none(mspace), "/events", "select nothing");

    const int64_t *s = col[SX_COL_START], *e = col[SX_COL_END];
    const int64_t *gpu = (w->spec.cols & SX_COLBIT(SX_COL_GPU)) ? col[SX_COL_GPU] : NULL;
    for (int c = 0; c < SX_NCOLS; c++) {
        const int64_t *data = &none;
        char obj[64];
        herr_t rc;
        if (w->ev[c] < 0)
            continue;
        snprintf(obj, sizeof obj, "/events/%s", ev_names[c]);
        if (n == 0) {
            rc = H5Sselect_none(w->ev_space[c]);
        } else {
            if (c == SX_COL_START) {
                /* The first start of a row is absolute; numpy int64 diff wraps. */
                int64_t prev = first == 0 ? 0 : a->prev_start;
                for (uint64_t i = 0; i < n; i++) {
                    w->scratch[i] = (int64_t)((uint64_t)s[i] - (uint64_t)prev);
                    prev = s[i];
                }
                if (first == 0)
                    w->scratch[0] = s[0];
                data = w->scratch;
            } else if (c == SX_COL_END) {
                for (uint64_t i = 0; i < n; i++)
                    w->scratch[i] = (int64_t)((uint64_t)e[i] - (uint64_t)s[i]);
                data = w->scratch;
            } else if (col[c] != NULL) {
                data = col[c];
            } else {
                for (uint64_t i = 0; i < n; i++)
                    w->scratch[i] = fill_value(c);
                data = w->scratch;
            }
            rc = H5Sselect_hyperslab(w->ev_space[c], H5S_SELECT_SET, &off, NULL, &cnt,
                                     NULL);
        }
        if (rc >= 0)
            rc = H5Dwrite(w->ev[c], H5T_NATIVE_INT64, mspace, w->ev_space[c],
                          w->collective ? w->dxpl : H5P_DEFAULT, data);
        if (rc < 0 && (st = carry(w, sx_error_set(err, SX_ERR_IO, src(w, obj),
                                                  "cannot write events: %s",
                                                  h5_detail()))) != SX_OK)
            goto out;
    }
    if (n == 0 || w->late != SX_OK)
        goto out;
    for (uint64_t i = 0; i < n; i++)
        acc_add(a, s[i], (int64_t)((uint64_t)e[i] - (uint64_t)s[i]), gpu != NULL,
                gpu ? gpu[i] : -1);
    a->prev_start = s[n - 1];
    if (first == 0 && n == w->count[row]) {
        a->exact = true;
        a->m2_exact = pairwise_m2(s, e, n, (double)(int64_t)a->total / (double)n);
    }
out:
    close_id(&mspace);
    st = agree(w, st, err);
    sx_h5_quiet_end(&q);
    if (st != SX_OK)
        w->failed = true;
    return st;
}

/* ------------------------------------------------------------------ */
/* Lane tables                                                        */

/* The checks of sx_h5w_threads() ('threads') and sx_h5w_tasks(); the row count. */
static enum sx_status lanes_check(struct sx_h5w *w, const struct sx_lane_rank *lanes,
                                  size_t n, bool threads, size_t *total,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    const char *obj = threads ? "/thread_table" : "/task_table";

    *total = 0;
    SX_CHECK(!w->failed && !(threads ? w->threads_done : w->tasks_done), SX_ERR_USAGE,
             err, src(w, obj), "%s table written twice or after a failure",
             threads ? "thread" : "task");
    for (size_t i = 0; i < n; i++) {
        SX_CHECK(lanes[i].n == 0 ||
                     (threads ? lanes[i].threads != NULL : lanes[i].tasks != NULL),
                 SX_ERR_USAGE, err, src(w, obj), "lane list %zu holds no %s", i,
                 threads ? "threads" : "tasks");
        SX_CHECK(lanes[i].rank >= 0 && lanes[i].rank <= (int64_t)UINT32_MAX, SX_ERR_VALUE,
                 err, src(w, obj), "rank %lld is not a uint32", (long long)lanes[i].rank);
        *total += lanes[i].n;
    }
out:
    return st;
}

enum sx_status sx_h5w_threads(struct sx_h5w *w, const struct sx_lane_rank *lanes,
                              size_t n, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = H5I_INVALID_HID;
    size_t total = 0, k = 0;
    uint32_t *ranks = NULL;
    int8_t *daemon = NULL;
    int64_t *v = NULL;
    const char **names = NULL;
    struct h5_quiet q;
    const char *obj = "/thread_table";
    static const char *const cols[] = {"index",    "ident",  "native_id",
                                       "start_ns", "end_ns", "cpu_ns"};

    sx_h5_quiet_begin(&q);
    st = lanes_check(w, lanes, n, true, &total, err);
    if (st == SX_OK) {
        ranks = sx_calloc(total ? total : 1, sizeof *ranks);
        daemon = sx_calloc(total ? total : 1, sizeof *daemon);
        v = sx_calloc(total ? total : 1, sizeof *v);
        names = sx_calloc(total ? total : 1, sizeof *names);
        if (!(ranks && daemon && v && names))
            st = sx_error_set(err, SX_ERR_NOMEM, src(w, obj), "out of memory");
    }
    if ((st = agree(w, st, err)) != SX_OK)
        goto out;
    /* NOTE: collective from here in the MPI-IO phase. */
    g = H5Gcreate2(w->file, "thread_table", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5OK(g, obj, "create the group");
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < lanes[i].n; j++, k++) {
            ranks[k] = (uint32_t)lanes[i].rank;
            daemon[k] = lanes[i].threads[j].daemon ? 1 : 0;
            names[k] = lanes[i].threads[j].name;
        }
    st = put_1d(w, g, obj, "ranks", H5T_STD_U32LE, H5T_NATIVE_UINT32, total, ranks, err);
    if (st == SX_OK)
        st = put_1d(w, g, obj, "daemon", H5T_STD_I8LE, H5T_NATIVE_INT8, total, daemon,
                    err);
    if (st == SX_OK)
        st = put_strs(w, g, obj, "name", names, total, false, err);
    for (size_t c = 0; c < sizeof cols / sizeof cols[0] && st == SX_OK; c++) {
        k = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < lanes[i].n; j++, k++) {
                const struct sx_thread *t = &lanes[i].threads[j];
                const int64_t f[] = {t->index,    t->ident,  t->native_id,
                                     t->start_ns, t->end_ns, t->cpu_ns};
                v[k] = f[c];
            }
        st = put_1d(w, g, obj, cols[c], H5T_STD_I64LE, H5T_NATIVE_INT64, total, v, err);
    }
out:
    close_id(&g);
    st = agree(w, st, err);
    w->threads_done = st == SX_OK;
    free(names);
    free(v);
    free(daemon);
    free(ranks);
    sx_h5_quiet_end(&q);
    if (st != SX_OK)
        w->failed = true;
    return st;
}

enum sx_status sx_h5w_tasks(struct sx_h5w *w, const struct sx_lane_rank *lanes, size_t n,
                            struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = H5I_INVALID_HID;
    size_t total = 0, k = 0;
    uint32_t *ranks = NULL;
    int64_t *v = NULL;
    const char **s = NULL;
    struct h5_quiet q;
    const char *obj = "/task_table";
    static const char *const cols[] = {"index", "thread_index", "created_ns",  "done_ns",
                                       "steps", "running_ns",   "suspended_ns"};
    static const char *const scols[] = {"kind", "name", "coro_name"};

    sx_h5_quiet_begin(&q);
    st = lanes_check(w, lanes, n, false, &total, err);
    if (st == SX_OK) {
        ranks = sx_calloc(total ? total : 1, sizeof *ranks);
        v = sx_calloc(total ? total : 1, sizeof *v);
        s = sx_calloc(total ? total : 1, sizeof *s);
        if (!(ranks && v && s))
            st = sx_error_set(err, SX_ERR_NOMEM, src(w, obj), "out of memory");
    }
    if ((st = agree(w, st, err)) != SX_OK)
        goto out;
    /* NOTE: collective from here in the MPI-IO phase. */
    g = H5Gcreate2(w->file, "task_table", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5OK(g, obj, "create the group");
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < lanes[i].n; j++, k++)
            ranks[k] = (uint32_t)lanes[i].rank;
    st = put_1d(w, g, obj, "ranks", H5T_STD_U32LE, H5T_NATIVE_UINT32, total, ranks, err);
    for (size_t c = 0; c < sizeof cols / sizeof cols[0] && st == SX_OK; c++) {
        k = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < lanes[i].n; j++, k++) {
                const struct sx_task *t = &lanes[i].tasks[j];
                const int64_t f[] = {t->index,       t->thread_index, t->created_ns,
                                     t->done_ns,     t->steps,        t->running_ns,
                                     t->suspended_ns};
                v[k] = f[c];
            }
        st = put_1d(w, g, obj, cols[c], H5T_STD_I64LE, H5T_NATIVE_INT64, total, v, err);
    }
    for (size_t c = 0; c < sizeof scols / sizeof scols[0] && st == SX_OK; c++) {
        k = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < lanes[i].n; j++, k++) {
                const struct sx_task *t = &lanes[i].tasks[j];
                s[k] = c == 0 ? t->kind : c == 1 ? t->name : t->coro_name;
            }
        st = put_strs(w, g, obj, scols[c], s, total, false, err);
    }
out:
    close_id(&g);
    st = agree(w, st, err);
    w->tasks_done = st == SX_OK;
    free(s);
    free(v);
    free(ranks);
    sx_h5_quiet_end(&q);
    if (st != SX_OK)
        w->failed = true;
    return st;
}

/* ------------------------------------------------------------------ */
/* Per-rank groups: LIKWID, line profile                              */

/* A LIKWID matrix: 2-D [rows, cols], or h5py's 1-D (0,) placeholder when both are 0. */
static enum sx_status put_matrix(struct sx_h5w *w, hid_t g, const char *obj,
                                 const char *name, const struct sx_matrix *m,
                                 struct sx_error *err) {
    hsize_t dims[2] = {m->rows, m->cols};
    if (m->rows == 0 && m->cols == 0)
        return put_dset(w, g, obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, dims, NULL,
                        err);
    return put_dset(w, g, obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, dims, m->v,
                    err);
}

/* Memory for sx_h5w_likwid(), taken before its collective part. */
struct likwid_buf {
    char *name;        /* a group name: the longest tag */
    const char **strs; /* the longest name list */
};

static enum sx_status likwid_entry(struct sx_h5w *w, hid_t regions, const char *robj,
                                   const struct sx_likwid_entry *e,
                                   const struct likwid_buf *lb, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = H5I_INVALID_HID;
    char *name = lb->name;
    char obj[SX_ERROR_SOURCE_LENGTH];
    const char *tag = e->tag ? e->tag : "";

    strcpy(name, tag);
    for (char *p = name; *p; p++)
        if (*p == '/')
            *p = '|';
    snprintf(obj, sizeof obj, "%s/%s", robj, name);
    SX_CHECK(name[0] != '\0' && strcmp(name, ".") != 0, SX_ERR_VALUE, err, src(w, robj),
             "LIKWID tag '%s' cannot name an HDF5 group", tag);
    st = make_group(w, regions, robj, name, &g, err);
    if (st != SX_OK)
        goto out;
    if ((st = attr_str(w, g, obj, "tag", tag, err)) != SX_OK ||
        (st = attr_i64(w, g, obj, "group_id", e->group_id, err)) != SX_OK ||
        (st = attr_str(w, g, obj, "group_name", e->group_name, err)) != SX_OK ||
        (st = attr_str(w, g, obj, "source", e->source, err)) != SX_OK ||
        (st = attr_strs(w, g, obj, "event_names", e->event_names, e->nevent_names,
                        lb->strs, err)) != SX_OK ||
        (st = attr_strs(w, g, obj, "counter_names", e->counter_names, e->ncounter_names,
                        lb->strs, err)) != SX_OK ||
        (st = attr_strs(w, g, obj, "metric_names", e->metric_names, e->nmetric_names,
                        lb->strs, err)) != SX_OK)
        goto out;
    if ((st = put_1d(w, g, obj, "cpus", H5T_STD_I64LE, H5T_NATIVE_INT64, e->ncpus,
                     e->cpus, err)) != SX_OK ||
        (st = put_1d(w, g, obj, "times", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, e->ntimes,
                     e->times, err)) != SX_OK ||
        (st = put_1d(w, g, obj, "call_counts", H5T_STD_I64LE, H5T_NATIVE_INT64,
                     e->ncall_counts, e->call_counts, err)) != SX_OK ||
        (st = put_matrix(w, g, obj, "events", &e->events, err)) != SX_OK ||
        (st = put_matrix(w, g, obj, "metrics", &e->metrics, err)) != SX_OK)
        goto out;
out:
    close_id(&g);
    return st;
}

/* The local part of sx_h5w_likwid(): checks and memory. */
static enum sx_status likwid_prepare(struct sx_h5w *w, const struct sx_likwid_rank *lk,
                                     size_t n, struct likwid_buf *lb,
                                     struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t tag = 0, names = 1;

    SX_CHECK(!w->failed, SX_ERR_USAGE, err, src(w, NULL), "writer used after a failure");
    for (size_t i = 0; i < n; i++) {
        SX_CHECK(lk[i].rank >= 0, SX_ERR_VALUE, err, src(w, NULL), "LIKWID rank %lld",
                 (long long)lk[i].rank);
        for (size_t j = 0; j < lk[i].n; j++) {
            const struct sx_likwid_entry *e = &lk[i].entries[j];
            size_t len = e->tag ? strlen(e->tag) : 0;
            tag = len > tag ? len : tag;
            names = e->nevent_names > names ? e->nevent_names : names;
            names = e->ncounter_names > names ? e->ncounter_names : names;
            names = e->nmetric_names > names ? e->nmetric_names : names;
        }
    }
    lb->name = sx_malloc(tag + 1);
    lb->strs = sx_calloc(names, sizeof *lb->strs);
    SX_CHECK(lb->name && lb->strs, SX_ERR_NOMEM, err, src(w, NULL), "out of memory");
out:
    return st;
}

enum sx_status sx_h5w_likwid(struct sx_h5w *w, const struct sx_likwid_rank *lk, size_t n,
                             struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t gr = H5I_INVALID_HID, gl = H5I_INVALID_HID, gg = H5I_INVALID_HID;
    char rname[32], obj[96];
    struct likwid_buf lb = {0};
    struct h5_quiet q;

    sx_h5_quiet_begin(&q);
    st = likwid_prepare(w, lk, n, &lb, err);
    if ((st = agree(w, st, err)) != SX_OK)
        goto out;
    /* NOTE: collective from here in the MPI-IO phase: every process creates every
     * rank's groups; rank 0 writes the (small) values, as it does for the index. */
    for (size_t i = 0; i < n; i++) {
        snprintf(rname, sizeof rname, "rank%lld", (long long)lk[i].rank);
        snprintf(obj, sizeof obj, "/%s", rname);
        if ((st = open_group(w, w->file, "/", rname, &gr, err)) != SX_OK)
            goto out;
        snprintf(obj, sizeof obj, "/%s/likwid", rname);
        if ((st = make_group(w, gr, obj, "likwid", &gl, err)) != SX_OK)
            goto out;
        if ((st = attr_i64(w, gl, obj, "num_regions", (int64_t)lk[i].n, err)) != SX_OK)
            goto out;
        snprintf(obj, sizeof obj, "/%s/likwid/regions", rname);
        if ((st = make_group(w, gl, obj, "regions", &gg, err)) != SX_OK)
            goto out;
        for (size_t j = 0; j < lk[i].n; j++)
            if ((st = likwid_entry(w, gg, obj, &lk[i].entries[j], &lb, err)) != SX_OK)
                goto out;
        close_id(&gg);
        close_id(&gl);
        close_id(&gr);
    }
out:
    close_id(&gg);
    close_id(&gl);
    close_id(&gr);
    free(lb.strs);
    free(lb.name);
    st = agree(w, st, err);
    sx_h5_quiet_end(&q);
    if (st != SX_OK)
        w->failed = true;
    return st;
}

static int cmp_decimal(const void *a, const void *b) {
    char x[24], y[24];
    snprintf(x, sizeof x, "%zu", *(const size_t *)a);
    snprintf(y, sizeof y, "%zu", *(const size_t *)b);
    return strcmp(x, y);
}

static enum sx_status lp_record(struct sx_h5w *w, hid_t lp, const char *name,
                                const char *obj, const struct sx_lp_record *r,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = H5I_INVALID_HID;

    if ((st = make_group(w, lp, obj, name, &g, err)) != SX_OK)
        goto out;
    if ((st = attr_str(w, g, obj, "region", r->region, err)) != SX_OK ||
        (st = attr_str(w, g, obj, "filename", r->filename, err)) != SX_OK ||
        (st = attr_str(w, g, obj, "function", r->function, err)) != SX_OK ||
        (st = attr_i64(w, g, obj, "first_lineno", r->first_lineno, err)) != SX_OK ||
        (st = attr_f64(w, g, obj, "unit", r->unit, err)) != SX_OK)
        goto out;
    if ((st = put_1d(w, g, obj, "line_numbers", H5T_STD_I64LE, H5T_NATIVE_INT64,
                     r->nline_numbers, r->line_numbers, err)) != SX_OK ||
        (st = put_1d(w, g, obj, "hits", H5T_STD_I64LE, H5T_NATIVE_INT64, r->nhits,
                     r->hits, err)) != SX_OK ||
        (st = put_1d(w, g, obj, "times", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, r->ntimes,
                     r->times, err)) != SX_OK)
        goto out;
out:
    close_id(&g);
    return st;
}

/* The local part of sx_h5w_line_profile(): checks, room for the longest record list. */
static enum sx_status lp_prepare(struct sx_h5w *w, const struct sx_lp_rank *lp, size_t n,
                                 size_t **order, struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t most = 1;

    SX_CHECK(!w->failed, SX_ERR_USAGE, err, src(w, NULL), "writer used after a failure");
    for (size_t i = 0; i < n; i++) {
        SX_CHECK(lp[i].rank >= 0, SX_ERR_VALUE, err, src(w, NULL),
                 "line-profile rank %lld", (long long)lp[i].rank);
        most = lp[i].n > most ? lp[i].n : most;
    }
    *order = sx_calloc(most, sizeof **order);
    SX_CHECK(*order != NULL, SX_ERR_NOMEM, err, src(w, NULL), "out of memory");
out:
    return st;
}

enum sx_status sx_h5w_line_profile(struct sx_h5w *w, const struct sx_lp_rank *lp,
                                   size_t n, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t gr = H5I_INVALID_HID, gl = H5I_INVALID_HID;
    size_t *order = NULL;
    char rname[32], name[24], obj[128];
    struct h5_quiet q;

    sx_h5_quiet_begin(&q);
    st = lp_prepare(w, lp, n, &order, err);
    if ((st = agree(w, st, err)) != SX_OK)
        goto out;
    /* NOTE: collective from here in the MPI-IO phase (see sx_h5w_likwid()). */
    for (size_t i = 0; i < n; i++) {
        snprintf(rname, sizeof rname, "rank%lld", (long long)lp[i].rank);
        if ((st = open_group(w, w->file, "/", rname, &gr, err)) != SX_OK)
            goto out;
        snprintf(obj, sizeof obj, "/%s/line_profile", rname);
        if ((st = make_group(w, gr, obj, "line_profile", &gl, err)) != SX_OK)
            goto out;
        /* Record k gets the k-th of "0".."n-1" in byte order: read order = our order. */
        for (size_t k = 0; k < lp[i].n; k++)
            order[k] = k;
        qsort(order, lp[i].n, sizeof *order, cmp_decimal);
        for (size_t k = 0; k < lp[i].n; k++) {
            snprintf(name, sizeof name, "%zu", order[k]);
            snprintf(obj, sizeof obj, "/%s/line_profile/%s", rname, name);
            if ((st = lp_record(w, gl, name, obj, &lp[i].records[k], err)) != SX_OK)
                goto out;
        }
        close_id(&gl);
        close_id(&gr);
    }
out:
    free(order);
    close_id(&gl);
    close_id(&gr);
    st = agree(w, st, err);
    sx_h5_quiet_end(&q);
    if (st != SX_OK)
        w->failed = true;
    return st;
}

/* ------------------------------------------------------------------ */
/* Finish                                                             */

static hid_t stat_type(bool file) {
    static const char *const names[] = {
        "total",       "minimum",   "maximum",   "first", "last", "start_minimum",
        "end_maximum", "gpu_count", "gpu_total", "mean",  "m2"};
    hid_t t = H5Tcreate(H5T_COMPOUND, file ? 88 : sizeof(struct stat_rec));
    if (t < 0)
        return t;
    for (size_t i = 0; i < 11; i++) {
        hid_t ft = i == 7 ? H5T_STD_U64LE : i >= 9 ? H5T_IEEE_F64LE : H5T_STD_I64LE;
        hid_t mt = i == 7   ? H5T_NATIVE_UINT64
                   : i >= 9 ? H5T_NATIVE_DOUBLE
                            : H5T_NATIVE_INT64;
        if (H5Tinsert(t, names[i], i * 8, file ? ft : mt) < 0) {
            H5Tclose(t);
            return H5I_INVALID_HID;
        }
    }
    return t;
}

static struct stat_rec make_rec(const struct row_acc *a) {
    return (struct stat_rec){
        .total = (int64_t)a->total,
        .minimum = a->minimum,
        .maximum = a->maximum,
        .first = a->first,
        .last = a->last,
        .start_minimum = a->start_minimum,
        .end_maximum = a->end_maximum,
        .gpu_count = a->gpu_count,
        .gpu_total = (int64_t)a->gpu_total,
        .mean = a->n ? (double)(int64_t)a->total / (double)a->n : 0.0,
        .m2 = a->exact ? a->m2_exact : a->m2,
    };
}

/*
 * NOTE: collective. Rank 0 receives the statistics, event count and exclusive
 * total of every row from the process that wrote it, into 'rec', 'got' and
 * w->exclusive; a row claimed by two processes is an error. Memory is taken
 * and agreed on before each collective; a failed process sends nothing.
 */
static enum sx_status gather_rows(struct sx_h5w *w, struct stat_rec *rec, uint64_t *got,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct row_out *mine = NULL, *all = NULL;
    int *counts = NULL, *displs = NULL, size = 1, nmine = 0, total = 0;
    bool *seen = NULL;
    MPI_Datatype t_row = MPI_DATATYPE_NULL;
    const char *obj = "/rank_region_index";

    if ((st = sx_mpi_check(MPI_Comm_size(w->comm, &size), "MPI_Comm_size", err)) != SX_OK)
        goto out;
    for (size_t r = 0; r < w->nrows; r++)
        nmine += w->mine[r];
    mine = sx_calloc((size_t)nmine, sizeof *mine);
    if (w->rank == 0) {
        counts = sx_calloc((size_t)size, sizeof *counts);
        displs = sx_calloc((size_t)size, sizeof *displs);
        seen = sx_calloc(w->nrows, sizeof *seen);
    }
    if (mine == NULL || (w->rank == 0 && !(counts && displs && seen)))
        st = sx_error_set(err, SX_ERR_NOMEM, src(w, obj), "out of memory");
    if ((st = sx_all_ok(w->comm, st, err)) != SX_OK)
        goto out;
    for (size_t r = 0, k = 0; r < w->nrows; r++)
        if (w->mine[r])
            mine[k++] = (struct row_out){.row = r,
                                         .n = w->acc[r].n,
                                         .exclusive = w->exclusive[r],
                                         .rec = make_rec(&w->acc[r])};
    st = sx_mpi_check(MPI_Gather(&nmine, 1, MPI_INT, counts, 1, MPI_INT, 0, w->comm),
                      "MPI_Gather", err);
    if (w->rank == 0 && st == SX_OK) {
        /* Each process claims distinct rows, so the sum is at most nrows <= INT_MAX. */
        for (int i = 0; i < size && st == SX_OK; i++) {
            displs[i] = total;
            if (counts[i] > (int)w->nrows - total)
                st = sx_error_set(err, SX_ERR_USAGE, src(w, obj),
                                  "processes claim more rows than the index holds");
            else
                total += counts[i];
        }
        if (st == SX_OK && (all = sx_calloc((size_t)total, sizeof *all)) == NULL)
            st = sx_error_set(err, SX_ERR_NOMEM, src(w, obj), "out of memory");
    }
    if ((st = sx_all_ok(w->comm, st, err)) != SX_OK)
        goto out;
    st = sx_mpi_check(MPI_Type_contiguous((int)sizeof(struct row_out), MPI_BYTE, &t_row),
                      "MPI_Type_contiguous", err);
    if (st == SX_OK)
        st = sx_mpi_check(MPI_Type_commit(&t_row), "MPI_Type_commit", err);
    if ((st = sx_all_ok(w->comm, st, err)) != SX_OK)
        goto out;
    st = sx_mpi_check(
        MPI_Gatherv(mine, nmine, t_row, all, counts, displs, t_row, 0, w->comm),
        "MPI_Gatherv", err);
    if (st != SX_OK)
        goto out;
    for (int i = 0; i < total; i++) {
        size_t r = (size_t)all[i].row;
        SX_CHECK(r < w->nrows && !seen[r], SX_ERR_USAGE, err, src(w, "/events"),
                 "row %zu written by two processes", r);
        seen[r] = true;
        got[r] = all[i].n;
        rec[r] = all[i].rec;
        w->exclusive[r] = all[i].exclusive;
    }
out:
    if (t_row != MPI_DATATYPE_NULL)
        MPI_Type_free(&t_row);
    free(seen);
    free(all);
    free(displs);
    free(counts);
    free(mine);
    return st;
}

/* exclusive_totals and summary_statistics, known only once every event is in. */
static enum sx_status write_stats(struct sx_h5w *w, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = H5I_INVALID_HID, ft = H5I_INVALID_HID, mt = H5I_INVALID_HID;
    struct stat_rec *rec = NULL;
    uint64_t *got = NULL;
    size_t n = w->spec.aggregate ? 0 : w->nrows;
    const char *obj = "/rank_region_index";

    _Static_assert(sizeof(struct stat_rec) == 88, "summary_statistics record is packed");
    rec = sx_calloc(n ? n : 1, sizeof *rec);
    got = sx_calloc(n ? n : 1, sizeof *got);
    if (rec == NULL || got == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, src(w, obj), "out of memory");
    if ((st = agree(w, st, err)) != SX_OK)
        goto out;
    if (w->collective) {
        st = gather_rows(w, rec, got, err);
    } else {
        for (size_t r = 0; r < n; r++) {
            got[r] = w->acc[r].n;
            rec[r] = make_rec(&w->acc[r]);
        }
    }
    for (size_t r = 0; r < n && st == SX_OK && w->rank == 0; r++)
        if (got[r] != w->count[r]) /* no goto: the agreement below is due */
            st =
                sx_error_set(err, SX_ERR_USAGE, src(w, "/events"),
                             "row %zu: %llu of %llu events written", r,
                             (unsigned long long)got[r], (unsigned long long)w->count[r]);
    if ((st = agree(w, st, err)) != SX_OK)
        goto out;
    /* NOTE: collective from here in the MPI-IO phase; rank 0 holds the values. */
    g = H5Gopen2(w->file, "rank_region_index", H5P_DEFAULT);
    H5OK(g, obj, "open the group");
    if (!w->spec.aggregate) {
        st = put_1d(w, g, obj, "exclusive_totals", H5T_STD_I64LE, H5T_NATIVE_INT64, n,
                    w->exclusive, err);
        if (st != SX_OK)
            goto out;
    }
    ft = stat_type(true);
    mt = stat_type(false);
    H5OK(ft, obj, "create the summary type");
    H5OK(mt, obj, "create the summary type");
    st = put_1d(w, g, obj, "summary_statistics", ft, mt, n, rec, err);
out:
    close_id(&mt);
    close_id(&ft);
    close_id(&g);
    free(got);
    free(rec);
    return agree(w, st, err);
}

/* After the MPI-IO phase, rank 0 alone: reopen the file serially for the vlen strings. */
static enum sx_status write_pending(struct sx_h5w *w, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t fapl = H5I_INVALID_HID, g = H5I_INVALID_HID;
    char obj[256]; /* leaves room for the path in src() */
    herr_t rc;

    if (w->npend == 0)
        return SX_OK;
    fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5OK(fapl, NULL, "create a file access list");
    H5OK(H5Pset_fapl_sec2(fapl), NULL, "select the POSIX driver");
    H5OK(H5Pset_fclose_degree(fapl, H5F_CLOSE_SEMI), NULL, "set the close degree");
    w->file = H5Fopen(w->tmp, H5F_ACC_RDWR, fapl);
    H5OK(w->file, NULL, "reopen the file");
    for (size_t i = 0; i < w->npend; i++) {
        const struct pending *pd = &w->pend[i];
        snprintf(obj, sizeof obj, "%s/%s", strcmp(pd->group, "/") ? pd->group : "",
                 pd->name);
        g = H5Gopen2(w->file, pd->group, H5P_DEFAULT);
        H5OK(g, obj, "open the group");
        st = put_strs(w, g, obj, pd->name, (const char *const *)pd->strs, pd->n, false,
                      err);
        if (st != SX_OK)
            goto out;
        close_id(&g);
    }
    rc = H5Fclose(w->file);
    w->file = H5I_INVALID_HID;
    H5OK(rc, NULL, "close the file");
out:
    close_id(&g);
    close_id(&fapl);
    return st;
}

/*
 * The whole file of an in-memory writer, as it would be on disk, in '*img'
 * (new). The file is closed afterwards without a write that could fail:
 * libhdf5 1.10 leaves a file whose close failed (a full disk, a size limit)
 * half closed, and its exit handler then crashes on it, in a host process too.
 */
static enum sx_status take_image(struct sx_h5w *w, char **img, size_t *n,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    /* the superblock's end of file is written by a flush */
    H5OK(H5Fflush(w->file, H5F_SCOPE_GLOBAL), NULL, "flush the file");
    ssize_t len = H5Fget_file_image(w->file, NULL, 0);
    H5OK(len, NULL, "read the file's image");
    *img = sx_malloc(len > 0 ? (size_t)len : 1);
    SX_CHECK(*img != NULL, SX_ERR_NOMEM, err, src(w, NULL), "out of memory");
    H5OK(H5Fget_file_image(w->file, *img, (size_t)len), NULL, "read the file's image");
    *n = (size_t)len;
out:
    return st;
}

enum sx_status sx_h5w_finish(struct sx_h5w *w, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct h5_quiet q;
    bool quieted = false;
    herr_t rc;
    char *img = NULL;
    size_t nimg = 0;

    if (w == NULL)
        return sx_error_set(err, SX_ERR_USAGE, "", "no writer");
    /* A run without regions still has its (empty) table and index. */
    if (!w->failed && !w->names_done)
        st = sx_h5w_names(w, NULL, 0, err);
    if (st == SX_OK && !w->failed && !w->index_done)
        st = sx_h5w_index(w, NULL, 0, err);
    if (st != SX_OK)
        goto out;
    sx_h5_quiet_begin(&q);
    quieted = true;
    SX_CHECK(!w->failed, SX_ERR_USAGE, err, src(w, NULL), "writer used after a failure");
    if ((st = write_stats(w, err)) != SX_OK)
        goto out;
    /* NOTE: collective in the MPI-IO phase: every process closes; failures are
     * carried to the agreement after the file is closed. */
    for (int c = 0; c < SX_NCOLS; c++) {
        close_id(&w->ev_space[c]);
        if (w->ev[c] < 0)
            continue;
        rc = H5Dclose(w->ev[c]);
        w->ev[c] = H5I_INVALID_HID;
        if (rc < 0 && (st = carry(w, sx_error_set(err, SX_ERR_IO, src(w, "/events"),
                                                  "cannot close an event column: %s",
                                                  h5_detail()))) != SX_OK)
            goto out;
    }
    close_id(&w->dxpl);
    if (w->out != NULL && (st = take_image(w, &img, &nimg, err)) != SX_OK)
        goto out;
    rc = H5Fclose(w->file);
    w->file = H5I_INVALID_HID;
    if (rc < 0 &&
        (st = carry(w, sx_error_set(err, SX_ERR_IO, src(w, NULL),
                                    "cannot close the file: %s", h5_detail()))) != SX_OK)
        goto out;
    if ((st = agree(w, st, err)) != SX_OK)
        goto out;
    if (w->rank == 0) {
        /* Serial from here: rank 0 writes what MPI-IO cannot, then publishes. */
        w->collective = false;
        st = write_pending(w, err);
        close_id(&w->t_str);
        if (st == SX_OK && w->out != NULL) {
            st = sx_out_write(w->out, img, nimg, err);
            if (st == SX_OK) {
                st = sx_out_commit(w->out, err); /* releases it, on failure too */
                w->out = NULL;
            }
        } else if (st == SX_OK && sx_tmp_commit(w->tmp, w->final) != 0)
            st = errno == EINTR
                     ? sx_error_set(err, SX_ERR_INTERRUPTED, src(w, NULL),
                                    "interrupted by a signal; the file was not "
                                    "written")
                     : sx_error_set(err, SX_ERR_IO, src(w, NULL),
                                    "cannot rename the temporary file into "
                                    "place: %s",
                                    strerror(errno));
        if (st == SX_OK) {
            free(w->tmp);
            w->tmp = NULL;
        }
    }
    w->collective = false;
    close_id(&w->t_str);
    if (w->comm != MPI_COMM_NULL)
        st = sx_all_ok(w->comm, st, err); /* NOTE: collective */
out:
    free(img);
    if (quieted)
        sx_h5_quiet_end(&q);
    if (st != SX_OK)
        sx_h5w_abort(w);
    else
        free_w(w);
    return st;
}

/* ------------------------------------------------------------------ */
/* The whole run in one call                                          */

/* Whether 'run' is stored in the aggregate layout. */
static bool run_is_aggregate(const struct sx_run *run) {
    int64_t v;
    if (run->layout == SX_LAYOUT_AGGREGATE)
        return true;
    if (run->nrows == 0)
        return false;
    for (size_t r = 0; r < run->nrows; r++)
        if (!run->rows[r].is_aggregate || !agg_get(&run->rows[r], "count", &v))
            return false;
    return true;
}

static int cmp_rank(const void *a, const void *b) {
    const struct sx_row *x = *(const struct sx_row *const *)a;
    const struct sx_row *y = *(const struct sx_row *const *)b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x < y ? -1 : x > y; /* stable: keep the run's order within a rank */
}

enum sx_status sx_h5_write(const struct sx_run *run, const char *path,
                           struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_h5w *w = NULL;
    struct sx_h5w_spec spec;
    const struct sx_row **order = NULL;

    sx_h5w_spec_init(&spec);
    spec.in_memory = true; /* the run is in memory already */
    spec.aggregate = run_is_aggregate(run);
    if (!spec.aggregate) {
        spec.cols = run->file_cols;
        spec.meta = run->has_meta_col;
        for (size_t r = 0; r < run->nrows; r++) {
            spec.cols |= run->rows[r].cols;
            spec.meta = spec.meta || run->rows[r].has_meta_col || run->rows[r].meta_text;
        }
        spec.cols &= OPTIONAL_COLS;
    }
    order = sx_calloc(run->nrows ? run->nrows : 1, sizeof *order);
    SX_CHECK(order != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    for (size_t r = 0; r < run->nrows; r++) {
        const struct sx_row *row = &run->rows[r];
        order[r] = row;
        SX_CHECK(spec.aggregate || row->count == 0 ||
                     (row->col[SX_COL_START] != NULL && row->col[SX_COL_END] != NULL),
                 SX_ERR_UNSUPPORTED, err, path,
                 "row %zu (rank %lld) has no event data: a summary-only run can only be "
                 "stored in the aggregate layout",
                 r, (long long)row->rank);
    }
    /* scope-profiler writes rank by rank, each rank's regions in its own order. */
    qsort(order, run->nrows, sizeof *order, cmp_rank);

    if ((st = sx_h5w_create(path, &spec, &w, err)) != SX_OK)
        goto out;
    if ((st = sx_h5w_metadata(w, &run->metadata, err)) != SX_OK ||
        (st = sx_h5w_names(w, run->names, run->nnames, err)) != SX_OK ||
        (st = sx_h5w_index(w, order, run->nrows, err)) != SX_OK)
        goto out;
    for (size_t r = 0; r < run->nrows && !spec.aggregate; r++) {
        const int64_t *col[SX_NCOLS];
        for (int c = 0; c < SX_NCOLS; c++)
            col[c] = (c <= SX_COL_END || (order[r]->cols & SX_COLBIT(c)))
                         ? order[r]->col[c]
                         : NULL;
        if ((st = sx_h5w_events(w, r, 0, order[r]->count, col, err)) != SX_OK)
            goto out;
    }
    if ((run->has_threads || run->nthreads > 0) &&
        (st = sx_h5w_threads(w, run->threads, run->nthreads, err)) != SX_OK)
        goto out;
    if ((run->has_tasks || run->ntasks > 0) &&
        (st = sx_h5w_tasks(w, run->tasks, run->ntasks, err)) != SX_OK)
        goto out;
    if ((st = sx_h5w_likwid(w, run->likwid, run->nlikwid, err)) != SX_OK ||
        (st = sx_h5w_line_profile(w, run->line_profile, run->nline_profile, err)) !=
            SX_OK)
        goto out;
    st = sx_h5w_finish(w, err);
    w = NULL;
out:
    sx_h5w_abort(w);
    free(order);
    return st;
}
