/* h5_write_prim.c - the HDF5 writer's primitives: errors, agreement, typed attributes,
 * whole datasets, groups */
#include "h5_write_prim.h"

#include "fault.h"
#include "h5_util.h"
#include "mpi_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

herr_t sx_h5w_dwrite(hid_t d, hid_t mt, hid_t ms, hid_t fs, hid_t x, const void *buf) {
    return sx_fault(SX_FAULT_WRITE, 0) ? -1 : (H5Dwrite)(d, mt, ms, fs, x, buf);
}

herr_t sx_h5w_awrite(hid_t a, hid_t mt, const void *buf) {
    return sx_fault(SX_FAULT_WRITE, 0) ? -1 : (H5Awrite)(a, mt, buf);
}

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
const char *sx_h5w_detail(struct sx_h5w *w) {
    w->detail[0] = '\0';
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, w->detail);
    return w->detail[0] ? w->detail : "HDF5 call failed";
}

/* "<final path>:<object>" for sx_error.source; valid until the next call. */
const char *sx_h5w_src(struct sx_h5w *w, const char *obj) {
    snprintf(w->src, sizeof w->src, "%s%s%s", w->path, obj ? ":" : "", obj ? obj : "");
    return w->src;
}

/* Close any kind of id and mark it closed. */
void sx_h5w_close_id(hid_t *id) {
    sx_h5_close_id(*id);
    *id = -1;
}

/*
 * In the MPI-IO phase a process must not leave a call early while the others
 * go on to the next collective HDF5 call: a local failure (a write only rank 0
 * makes, an allocation only it needs) is kept in 'late' and the call goes on;
 * sx_h5w_agree() reports it at the end. Serially the failure is returned at once.
 */
enum sx_status sx_h5w_carry(struct sx_h5w *w, enum sx_status st) {
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
enum sx_status sx_h5w_agree(struct sx_h5w *w, enum sx_status st, struct sx_error *err) {
    if (st == SX_OK && w->late != SX_OK)
        st = w->late;
    if (w->collective)
        st = sx_all_ok(w->comm, st, err);
    return st;
}

/* ------------------------------------------------------------------ */
/* Small writers: attributes and whole 1-D datasets                   */

hid_t sx_h5w_str_type(size_t width) /* 0 = variable length */
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
hid_t sx_h5w_bool_type(void) {
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
enum sx_status sx_h5w_put_attr(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, hid_t ftype, hid_t mtype, long n,
                               const void *buf, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t space = H5I_INVALID_HID, attr = H5I_INVALID_HID;
    hsize_t dim = n < 0 ? 0 : (hsize_t)n;

    space = n < 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &dim, NULL);
    H5OK(space, obj, "create a dataspace");
    attr = H5Acreate2(loc, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    SX_CHECK(attr >= 0, SX_ERR_IO, err, sx_h5w_src(w, obj),
             "cannot create attribute '%s': %s", name, sx_h5w_detail(w));
    if (n != 0)
        SX_CHECK(H5Awrite(attr, mtype, buf) >= 0, SX_ERR_IO, err, sx_h5w_src(w, obj),
                 "cannot write attribute '%s': %s", name, sx_h5w_detail(w));
out:
    sx_h5w_close_id(&attr);
    sx_h5w_close_id(&space);
    return st;
}

enum sx_status sx_h5w_attr_i64(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, int64_t v, struct sx_error *err) {
    return sx_h5w_put_attr(w, loc, obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, -1, &v,
                           err);
}

enum sx_status sx_h5w_attr_f64(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, double v, struct sx_error *err) {
    return sx_h5w_put_attr(w, loc, obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, -1, &v,
                           err);
}

enum sx_status sx_h5w_attr_str(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, const char *s, struct sx_error *err) {
    const char *p = s ? s : "";
    return sx_h5w_put_attr(w, loc, obj, name, w->t_str, w->t_str, -1, &p, err);
}

/* A 1-D vlen string attribute; NULL entries are written as "". 'p' has room for 'n'. */
enum sx_status sx_h5w_attr_strs(struct sx_h5w *w, hid_t loc, const char *obj,
                                const char *name, char *const *s, size_t n,
                                const char **p, struct sx_error *err) {
    for (size_t i = 0; i < n; i++)
        p[i] = s[i] ? s[i] : "";
    return sx_h5w_put_attr(w, loc, obj, name, w->t_str, w->t_str, (long)n, p, err);
}

/*
 * Dataset 'name' in 'loc': 'rank' dims 'dims' of 'ftype', written whole from
 * 'buf' ('mtype') unless it is empty. 'dcpl' may be H5P_DEFAULT (contiguous).
 */
enum sx_status sx_h5w_put_dset(struct sx_h5w *w, hid_t loc, const char *obj,
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
    SX_CHECK(dset >= 0, SX_ERR_IO, err, sx_h5w_src(w, obj),
             "cannot create dataset '%s': %s", name, sx_h5w_detail(w));
    /* Every process creates the dataset; rank 0 alone writes it (spec 5.1). */
    if (total > 0 && buf != NULL && w->rank == 0 &&
        H5Dwrite(dset, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        st = sx_h5w_carry(w, sx_error_set(err, SX_ERR_IO, sx_h5w_src(w, obj),
                                          "cannot write dataset '%s': %s", name,
                                          sx_h5w_detail(w)));
        if (st != SX_OK)
            goto out;
    }
out:
    sx_h5w_close_id(&dset);
    sx_h5w_close_id(&space);
    return st;
}

enum sx_status sx_h5w_put_1d(struct sx_h5w *w, hid_t loc, const char *obj,
                             const char *name, hid_t ftype, hid_t mtype, size_t n,
                             const void *buf, struct sx_error *err) {
    hsize_t dim = n;
    return sx_h5w_put_dset(w, loc, obj, name, ftype, mtype, 1, &dim, buf, err);
}

void sx_h5w_free_pending(struct pending *p) {
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
        SX_CHECK(np != NULL, SX_ERR_NOMEM, err, sx_h5w_src(w, obj), "out of memory");
        w->pend = np;
        w->cappend = cap;
    }
    pd.group = sx_malloc((size_t)len + 1);
    pd.name = sx_strdup(name);
    pd.strs = sx_calloc(n ? n : 1, sizeof *pd.strs);
    SX_CHECK(pd.group && pd.name && pd.strs, SX_ERR_NOMEM, err, sx_h5w_src(w, obj),
             "out of memory");
    H5OK(H5Iget_name(loc, pd.group, (size_t)len + 1), obj, "name the group");
    for (; pd.n < n; pd.n++) {
        pd.strs[pd.n] = sx_strdup(s[pd.n] ? s[pd.n] : "");
        SX_CHECK(pd.strs[pd.n] != NULL, SX_ERR_NOMEM, err, sx_h5w_src(w, obj),
                 "out of memory");
    }
    w->pend[w->npend++] = pd;
    pd = (struct pending){0};
out:
    sx_h5w_free_pending(&pd);
    return st;
}

/*
 * A 1-D string dataset: vlen UTF-8, or NULLPAD fixed-length with the width
 * of the longest value (at least 1) when 'fixed'. NULL entries become "".
 * In the MPI-IO phase a vlen dataset is only recorded (by rank 0): HDF5 1.10
 * refuses vlen writes through MPI-IO, so sx_h5w_finish() writes it serially.
 */
enum sx_status sx_h5w_put_strs(struct sx_h5w *w, hid_t loc, const char *obj,
                               const char *name, const char *const *s, size_t n,
                               bool fixed, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t t = H5I_INVALID_HID;
    const char **p = NULL;
    char *fbuf = NULL;
    size_t width = 1;

    if (!fixed && w->collective)
        return w->rank == 0 ? sx_h5w_carry(w, defer_strs(w, loc, obj, name, s, n, err))
                            : SX_OK;
    if (!fixed) {
        p = sx_calloc(n, sizeof *p);
        SX_CHECK(p != NULL, SX_ERR_NOMEM, err, sx_h5w_src(w, obj), "out of memory");
        for (size_t i = 0; i < n; i++)
            p[i] = s[i] ? s[i] : "";
        st = sx_h5w_put_1d(w, loc, obj, name, w->t_str, w->t_str, n, p, err);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        size_t len = s[i] ? strlen(s[i]) : 0;
        if (len > width)
            width = len;
    }
    SX_CHECK(n == 0 || width <= SIZE_MAX / n, SX_ERR_NOMEM, err, sx_h5w_src(w, obj),
             "out of memory");
    if (w->rank == 0) { /* the only writer; the others need just the width */
        fbuf = sx_calloc(n ? n * width : 1, 1);
        if (fbuf == NULL &&
            (st = sx_h5w_carry(w, sx_error_set(err, SX_ERR_NOMEM, sx_h5w_src(w, obj),
                                               "out of memory"))) != SX_OK)
            goto out;
        for (size_t i = 0; i < n && fbuf != NULL; i++)
            if (s[i])
                memcpy(fbuf + i * width, s[i], strlen(s[i]));
    }
    t = sx_h5w_str_type(width);
    H5OK(t, obj, "create a string type");
    st = sx_h5w_put_1d(w, loc, obj, name, t, t, n, fbuf, err);
out:
    sx_h5w_close_id(&t);
    free(fbuf);
    free(p);
    return st;
}

enum sx_status sx_h5w_make_group(struct sx_h5w *w, hid_t loc, const char *obj,
                                 const char *name, hid_t *g, struct sx_error *err) {
    enum sx_status st = SX_OK;
    *g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    SX_CHECK(*g >= 0, SX_ERR_IO, err, sx_h5w_src(w, obj), "cannot create group '%s': %s",
             name, sx_h5w_detail(w));
out:
    return st;
}

/* Open group 'name' in 'loc', creating it when it does not exist yet. */
enum sx_status sx_h5w_open_group(struct sx_h5w *w, hid_t loc, const char *obj,
                                 const char *name, hid_t *g, struct sx_error *err) {
    enum sx_status st = SX_OK;
    htri_t has = H5Lexists(loc, name, H5P_DEFAULT);
    H5OK(has, obj, "look up a group");
    if (!has)
        return sx_h5w_make_group(w, loc, obj, name, g, err);
    *g = H5Gopen2(loc, name, H5P_DEFAULT);
    SX_CHECK(*g >= 0, SX_ERR_IO, err, sx_h5w_src(w, obj), "cannot open group '%s': %s",
             name, sx_h5w_detail(w));
out:
    return st;
}
