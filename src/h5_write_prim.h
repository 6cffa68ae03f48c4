/* h5_write_prim.h - what the HDF5 writer's files share: the writer, its primitives */
#ifndef SX_H5_WRITE_PRIM_H
#define SX_H5_WRITE_PRIM_H

#include "h5_write.h"
#include "h5_write_direct.h"
#include "h5_write_vfd.h"
#include "internal.h"
#include "run.h"

#include <hdf5.h>

#include <sys/stat.h>

struct sx_out_file; /* out_file.h */

#define OPTIONAL_COLS                                                                    \
    (SX_COLBIT(SX_COL_GPU) | SX_COLBIT(SX_COL_CALL) | SX_COLBIT(SX_COL_PARENT) |         \
     SX_COLBIT(SX_COL_THREAD) | SX_COLBIT(SX_COL_TASK) | SX_COLBIT(SX_COL_AWAIT))

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

/* A vlen string dataset kept for the serial phase (HDF5 1.10 cannot write vlen data
 * through MPI-IO): rank 0 creates it after the parallel phase. */
struct pending {
    char *group; /* absolute path of the parent group */
    char *name;
    char **strs; /* owned copies; never NULL entries */
    size_t n;
};

struct sx_h5w {
    char *path;              /* final name, for messages */
    char *final;             /* where it goes: the target of a symbolic link 'path' */
    char *tmp;               /* the file being written (HDF5's drivers open it by name) */
    struct sx_out_file *out; /* 'in_memory': where the file goes */
    struct sx_h5vfd vfd;     /* 'in_memory': HDF5's driver over 'out' (driver < 0: the
                                memory driver's image is written out whole instead) */
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
    uint64_t ev_at[SX_NCOLS]; /* a column's file address, written around HDF5 (its stage);
                                 0: through H5Dwrite */
    struct sx_wstage *stage;  /* h5_write_direct.h */
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
    char detail[160]; /* sx_h5w_detail's text: the writer's, not a static shared by
                         threads */
};

/* Each write may fail on purpose in the fault tests (SX_FAULT_WRITE): the writer's files
 * call these through the macros below. */
herr_t sx_h5w_dwrite(hid_t d, hid_t mt, hid_t ms, hid_t fs, hid_t x, const void *buf);
herr_t sx_h5w_awrite(hid_t a, hid_t mt, const void *buf);
#define H5Dwrite(...) sx_h5w_dwrite(__VA_ARGS__)
#define H5Awrite(...) sx_h5w_awrite(__VA_ARGS__)

/* Checks an HDF5 return value (negative = failure) against object 'obj'. */
#define H5OK(expr, obj, what)                                                            \
    SX_CHECK((expr) >= 0, SX_ERR_IO, err, sx_h5w_src(w, (obj)), "cannot %s: %s", (what), \
             sx_h5w_detail(w))

/* h5_write_prim.c: errors, agreement, attributes, datasets, groups */

/* The innermost message on HDF5's error stack, for the error text; valid until the
 * next call. */
const char *sx_h5w_detail(struct sx_h5w *w);

/* "<final path>:<object>" for sx_error.source; valid until the next call. */
const char *sx_h5w_src(struct sx_h5w *w, const char *obj);

/* Close any kind of id and mark it closed. */
void sx_h5w_close_id(hid_t *id);

/*
 * In the MPI-IO phase a process must not leave a call early while the others
 * go on to the next collective HDF5 call: a local failure (a write only rank 0
 * makes, an allocation only it needs) is kept in 'late' and the call goes on;
 * sx_h5w_agree() reports it at the end. Serially the failure is returned at once.
 */
enum sx_status sx_h5w_carry(struct sx_h5w *w, enum sx_status st);

/*
 * NOTE: collective in the MPI-IO phase. Every process learns the first
 * failure (and its text) and returns it, so that all of them take the same
 * path to the next collective call. Serially: 'st', or a carried failure.
 */
enum sx_status sx_h5w_agree(struct sx_h5w *w, enum sx_status st, struct sx_error *err);

/* A UTF-8 string type of 'width' bytes, NUL-padded; 0: variable length. */
hid_t sx_h5w_str_type(size_t width);

/* h5py's numpy bool: enum {int8: FALSE 0, TRUE 1}. */
hid_t sx_h5w_bool_type(void);

/* Attribute 'name' on 'loc': 'n' values (scalar when 'n' < 0) of 'ftype'/'mtype'. */
enum sx_status sx_h5w_put_attr(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, hid_t ftype, hid_t mtype, long n,
                               const void *buf, struct sx_error *err);

enum sx_status sx_h5w_attr_i64(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, int64_t v, struct sx_error *err);

enum sx_status sx_h5w_attr_f64(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, double v, struct sx_error *err);

enum sx_status sx_h5w_attr_str(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, const char *s, struct sx_error *err);

/* A 1-D vlen string attribute; NULL entries are written as "". 'p' has room for 'n'. */
enum sx_status sx_h5w_attr_strs(struct sx_h5w *w, hid_t loc, const char *obj,
                                const char *name, char *const *s, size_t n,
                                const char **p, struct sx_error *err);

/*
 * Dataset 'name' in 'loc': 'rank' dims 'dims' of 'ftype', written whole from
 * 'buf' ('mtype') unless it is empty. 'dcpl' may be H5P_DEFAULT (contiguous).
 */
enum sx_status sx_h5w_put_dset(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, hid_t ftype, hid_t mtype, int rank,
                               const hsize_t *dims, const void *buf,
                               struct sx_error *err);

enum sx_status sx_h5w_put_1d(struct sx_h5w *w, hid_t loc, const char *obj,
                             const char *name, hid_t ftype, hid_t mtype, size_t n,
                             const void *buf, struct sx_error *err);

void sx_h5w_free_pending(struct pending *p);

/*
 * A 1-D string dataset: vlen UTF-8, or NULLPAD fixed-length with the width
 * of the longest value (at least 1) when 'fixed'. NULL entries become "".
 * In the MPI-IO phase a vlen dataset is only recorded (by rank 0): HDF5 1.10
 * refuses vlen writes through MPI-IO, so sx_h5w_finish() writes it serially.
 */
enum sx_status sx_h5w_put_strs(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, const char *const *s, size_t n,
                               bool fixed, struct sx_error *err);

enum sx_status sx_h5w_make_group(struct sx_h5w *w, hid_t loc, const char *obj,
                                 const char *name, hid_t *g, struct sx_error *err);

/* Open group 'name' in 'loc', creating it when it does not exist yet. */
enum sx_status sx_h5w_open_group(struct sx_h5w *w, hid_t loc, const char *obj,
                                 const char *name, hid_t *g, struct sx_error *err);

/* h5_write_create.c: the writer made and dropped */

void sx_h5w_free_w(struct sx_h5w *w);

/* h5_write_stats.c: per-row statistics */

void sx_h5w_acc_add(struct row_acc *a, int64_t start, int64_t dur, bool has_gpu,
                    int64_t gpu);

/*
 * sum((d - mean) ** 2) over the durations e - s, added in numpy's pairwise
 * order (8 running sums per block of up to 128, halves split at a multiple
 * of 8), so m2 is bit-identical to what scope-profiler stores.
 */
double sx_h5w_pairwise_m2(const int64_t *s, const int64_t *e, size_t n, double mean);

/* exclusive_totals and summary_statistics, known only once every event is in. */
enum sx_status sx_h5w_write_stats(struct sx_h5w *w, struct sx_error *err);

/* h5_write.c: metadata, names, the index, events, the finish */

/* One aggregate value of 'row' by key; false when the row lacks it. */
bool sx_h5w_agg_get(const struct sx_row *row, const char *key, int64_t *v);

#endif /* SX_H5_WRITE_PRIM_H */
