/* h5_read.c - read scope-profiler HDF5 runs (schema 1, 2, 3, aggregate) into the run
 * model */
#include "internal.h"

#include "h5_vlen.h"

#include <hdf5.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CURRENT_SCHEMA 3

/* Event dataset names in the columnar layout, per column. */
static const char *const col_names[SX_NCOLS] = {
    "start_times", "end_times",  "gpu_durations", "call_ids",
    "parent_ids",  "thread_ids", "task_ids",      "await_ns",
};

struct sx_h5 {
    hid_t file;
    char *path;
    hid_t ev[SX_NCOLS]; /* columnar event datasets (START/END: deltas/durations when
                           encoded) */
    hid_t meta;         /* rank_region_index/event_metadata, or -1 */
    bool lazy;          /* sx_h5_open_index: rows are read by sx_h5_fill_rows */
    bool open_only;     /* a rank other than 0 of a shared index: opens, reads no rows */
    hid_t rd[5];        /* lazily read index columns (RD_*), or -1 */
    /* the strings of 'meta' read from the file's global heap, or NULL: HDF5 reads them */
    struct sx_vlen *meta_vlen;
    /* running sums of start_deltas at piece ends, so that a row read in
     * pieces does not re-sum from its first event for every piece */
    struct ckpt {
        uint64_t offset; /* the row's first event: rows come and go, offsets stay */
        uint64_t pos, sum;
    } ck[256];
    size_t ck_next;
    int64_t *scratch; /* reused read buffer of batched slice reads */
    size_t scratch_cap;
    off_t file_size;
    /* contiguous unfiltered little-endian integer event columns are read with
     * pread at their file address: HDF5 reads a many-range selection through a
     * 64 KiB sieve per range, which costs 30x the bytes on a many-row run */
    int fd;
    struct raw_col {
        bool ok;
        uint64_t addr;
        size_t size; /* 1, 2, 4 or 8 bytes */
        bool is_signed;
        uint64_t nelem;
    } raw[SX_NCOLS], rdraw[5];
    /* a lazy run's string columns (RD_FILES..RD_TAGS), read once at open: every
     * distinct string once in a pool, and per row its id (0: empty) */
    struct pool {
        char **s; /* s[id - 1] */
        size_t n, cap;
        uint32_t *slot; /* hash table of ids, 0 = free */
        size_t nslot;
        uint32_t *id; /* per file row */
    } pool[3];
    unsigned char *rbuf;
    size_t rbuf_cap;
};

/* The per-row columns of the index a lazy run reads for the blocks that write them. */
enum { RD_FILES, RD_TEXTS, RD_TAGS, RD_LINES, RD_EXCL, RD_N };
static const char *const rd_names[RD_N] = {"source_files", "source_texts", "tags",
                                           "source_lines", "exclusive_totals"};

/* HDF5 prints its error stack by default; we turn failures into sx_error. */
struct quiet {
    H5E_auto2_t func;
    void *data;
};

static void quiet_begin(struct quiet *q) {
    H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void quiet_end(const struct quiet *q) {
    H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
}

/* Each read may fail on purpose in the fault tests (SX_FAULT_READ). */
static herr_t dread(hid_t d, hid_t mt, hid_t ms, hid_t fs, hid_t x, void *buf) {
    return sx_fault(SX_FAULT_READ, 0) ? -1 : H5Dread(d, mt, ms, fs, x, buf);
}

static herr_t aread(hid_t a, hid_t mt, void *buf) {
    return sx_fault(SX_FAULT_READ, 0) ? -1 : H5Aread(a, mt, buf);
}
#define H5Dread dread
#define H5Aread aread

/* The nearest known running sum at or before event 'first' of 'row'. */
static void ckpt_find(const struct sx_h5 *h5, const struct sx_row *row, uint64_t first,
                      uint64_t *pos, uint64_t *sum) {
    *pos = 0;
    *sum = 0;
    for (size_t i = 0; i < sizeof h5->ck / sizeof h5->ck[0]; i++) {
        const struct ckpt *c = &h5->ck[i];
        if (c->pos > 0 && c->offset == row->offset && c->pos <= first && c->pos > *pos) {
            *pos = c->pos;
            *sum = c->sum;
        }
    }
}

static void ckpt_add(struct sx_h5 *h5, const struct sx_row *row, uint64_t pos,
                     uint64_t sum) {
    if (pos >= row->count)
        return;
    struct ckpt *c = &h5->ck[h5->ck_next++ % (sizeof h5->ck / sizeof h5->ck[0])];
    c->offset = row->offset;
    c->pos = pos;
    c->sum = sum;
}

static void close_id(hid_t id) {
    if (id < 0)
        return;
    switch (H5Iget_type(id)) {
    case H5I_FILE:
        H5Fclose(id);
        break;
    case H5I_GROUP:
        H5Gclose(id);
        break;
    case H5I_DATASET:
        H5Dclose(id);
        break;
    case H5I_ATTR:
        H5Aclose(id);
        break;
    case H5I_DATATYPE:
        H5Tclose(id);
        break;
    case H5I_DATASPACE:
        H5Sclose(id);
        break;
    case H5I_GENPROP_LST:
        H5Pclose(id);
        break;
    default:
        break;
    }
}

/* "file.h5:/object" for error sources. */
static const char *src_name(char *buf, size_t n, const char *path, const char *obj) {
    snprintf(buf, n, "%s:%s", path, obj);
    return buf;
}

static bool link_exists(hid_t loc, const char *name) {
    /* H5Lexists fails on a missing intermediate group; check step by step. */
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", name);
    for (char *p = tmp; *p; p++) {
        if (*p == '/' && p != tmp) {
            *p = '\0';
            if (H5Lexists(loc, tmp, H5P_DEFAULT) <= 0)
                return false;
            *p = '/';
        }
    }
    return H5Lexists(loc, tmp, H5P_DEFAULT) > 0;
}

/* ------------------------------------------------------------------ */
/* Generic dataset readers                                            */

/* Length of a 1-D dataset (a scalar counts as 1); -1 when not 1-D. */
static int64_t dset_len(hid_t d) {
    hid_t sp = H5Dget_space(d);
    if (sp < 0)
        return -1;
    int nd = H5Sget_simple_extent_ndims(sp);
    hsize_t dims[H5S_MAX_RANK];
    int64_t n = -1;
    if (nd == 0)
        n = H5Sget_simple_extent_type(sp) == H5S_NULL ? 0 : 1;
    else if (nd == 1 && H5Sget_simple_extent_dims(sp, dims, NULL) == 1)
        n = (int64_t)dims[0];
    H5Sclose(sp);
    return n;
}

/*
 * Refuse sizes the file cannot hold before taking memory for them: an
 * unfiltered dataset's bytes are in the file; a filtered one compresses
 * at most ~1032:1 (deflate's limit).
 */
static enum sx_status check_claim(const struct sx_h5 *h5, hid_t d, uint64_t n,
                                  size_t elem, const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t dcpl = H5Dget_create_plist(d);
    int nfilters = dcpl >= 0 ? H5Pget_nfilters(dcpl) : 0;
    if (dcpl >= 0)
        H5Pclose(dcpl);
    double need = (double)n * (double)elem;
    double have = (double)h5->file_size;
    if (nfilters > 0)
        have *= 1032.0;
    SX_CHECK(need <= have + 65536.0, SX_ERR_FORMAT, err, src,
             "%s claims %" PRIu64 " values, more than the file's %lld bytes can hold; "
             "the file is truncated or damaged",
             src, n, (long long)h5->file_size);
    /* HDF5 filters this library cannot decode are named, not guessed at. */
    dcpl = H5Dget_create_plist(d);
    for (int i = 0; dcpl >= 0 && i < nfilters; i++) {
        unsigned flags = 0, cd[8];
        size_t ncd = 8;
        char fname[64] = "";
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd,
                                         sizeof fname, fname, NULL);
        if (id >= 0 && H5Zfilter_avail(id) <= 0) {
            const char *known = id == 32000   ? "LZF"
                                : id == 32015 ? "Zstandard"
                                : id == 307   ? "bzip2"
                                : id == 32001 ? "Blosc"
                                : id == 32008 ? "bitshuffle"
                                              : (fname[0] ? fname : "unknown");
            H5Pclose(dcpl);
            st =
                sx_error_set(err, SX_ERR_UNSUPPORTED, src,
                             "%s is compressed with HDF5 filter %d (%s), which this HDF5 "
                             "build cannot decode; install the filter plugin "
                             "(HDF5_PLUGIN_PATH) or repack the file with h5repack",
                             src, (int)id, known);
            goto out;
        }
    }
    if (dcpl >= 0)
        H5Pclose(dcpl);
out:
    return st;
}

/* Read a whole 1-D integer dataset as int64 (or uint64 bits when 'as_unsigned'). */
static enum sx_status read_ints(struct sx_h5 *h5, hid_t loc, const char *name,
                                bool as_unsigned, int64_t **out, uint64_t *n_out,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    char src[1100];
    hid_t d = -1, t = -1;
    int64_t *v = NULL;
    src_name(src, sizeof src, h5->path, name);
    d = H5Dopen2(loc, name, H5P_DEFAULT);
    SX_CHECK(d >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
    t = H5Dget_type(d);
    SX_CHECK(t >= 0 && H5Tget_class(t) == H5T_INTEGER, SX_ERR_FORMAT, err, src,
             "%s has the wrong datatype: integers expected", src);
    int64_t n = dset_len(d);
    SX_CHECK(n >= 0, SX_ERR_FORMAT, err, src, "%s is not one-dimensional", src);
    st = check_claim(h5, d, (uint64_t)n, H5Tget_size(t), src, err);
    if (st != SX_OK)
        goto out;
    v = sx_malloc(((size_t)n + 1) * sizeof *v);
    SX_CHECK(v != NULL, SX_ERR_NOMEM, err, src, "out of memory reading %s", src);
    if (n > 0) {
        herr_t rc = H5Dread(d, as_unsigned ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64,
                            H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
        SX_CHECK(rc >= 0, SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
    }
    *out = v;
    v = NULL;
    *n_out = (uint64_t)n;
out:
    free(v);
    close_id(t);
    close_id(d);
    return st;
}

static enum sx_status read_doubles(struct sx_h5 *h5, hid_t loc, const char *name,
                                   double **out, uint64_t *n_out, hsize_t *dims2,
                                   int *ndims, struct sx_error *err) {
    enum sx_status st = SX_OK;
    char src[1100];
    hid_t d = -1, t = -1, sp = -1;
    double *v = NULL;
    src_name(src, sizeof src, h5->path, name);
    d = H5Dopen2(loc, name, H5P_DEFAULT);
    SX_CHECK(d >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
    t = H5Dget_type(d);
    H5T_class_t cls = H5Tget_class(t);
    SX_CHECK(cls == H5T_FLOAT || cls == H5T_INTEGER, SX_ERR_FORMAT, err, src,
             "%s has the wrong datatype: numbers expected", src);
    sp = H5Dget_space(d);
    int nd = H5Sget_simple_extent_ndims(sp);
    hsize_t dims[H5S_MAX_RANK] = {0};
    SX_CHECK(nd >= 0 && nd <= 2, SX_ERR_FORMAT, err, src,
             "%s has %d dimensions; at most 2 expected", src, nd);
    H5Sget_simple_extent_dims(sp, dims, NULL);
    uint64_t n = nd == 0 ? 1 : nd == 1 ? dims[0] : dims[0] * dims[1];
    st = check_claim(h5, d, n, H5Tget_size(t), src, err);
    if (st != SX_OK)
        goto out;
    v = sx_malloc((n + 1) * sizeof *v);
    SX_CHECK(v != NULL, SX_ERR_NOMEM, err, src, "out of memory reading %s", src);
    if (n > 0)
        SX_CHECK(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0,
                 SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
    if (ndims != NULL)
        *ndims = nd;
    if (dims2 != NULL) {
        dims2[0] = nd >= 1 ? dims[0] : 1;
        dims2[1] = nd == 2 ? dims[1] : 0;
    }
    *out = v;
    v = NULL;
    *n_out = n;
out:
    free(v);
    close_id(sp);
    close_id(t);
    close_id(d);
    return st;
}

/* Strings of a vlen or fixed-length string type, decoded as h5py+errors="replace". */
static enum sx_status convert_strings(hid_t obj, bool is_attr, hid_t ftype, uint64_t n,
                                      char ***out, const char *src,
                                      struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t mt = -1, sp = -1;
    char **v = NULL, *raw = NULL, **vl = NULL;
    v = sx_calloc(n + 1, sizeof *v);
    SX_CHECK(v != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    if (n == 0)
        goto done;
    if (H5Tis_variable_str(ftype) > 0) {
        mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(ftype));
        vl = sx_calloc(n, sizeof *vl);
        SX_CHECK(vl != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        herr_t rc = is_attr ? H5Aread(obj, mt, vl)
                            : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, vl);
        SX_CHECK(rc >= 0, SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
        for (uint64_t i = 0; i < n; i++) {
            const char *s = vl[i] ? vl[i] : "";
            v[i] = sx_utf8_sanitize(s, strlen(s));
            if (v[i] == NULL)
                break;
        }
        sp = is_attr ? H5Aget_space(obj) : H5Dget_space(obj);
        H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, vl);
        for (uint64_t i = 0; i < n; i++)
            SX_CHECK(v[i] != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    } else {
        size_t w = H5Tget_size(ftype);
        SX_CHECK(w > 0, SX_ERR_FORMAT, err, src, "%s has a zero-width string type", src);
        raw = sx_malloc(w * n + 1);
        SX_CHECK(raw != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        mt = H5Tcopy(ftype);
        herr_t rc = is_attr ? H5Aread(obj, mt, raw)
                            : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw);
        SX_CHECK(rc >= 0, SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
        for (uint64_t i = 0; i < n; i++) {
            const char *s = raw + i * w;
            size_t len = w;
            /* numpy's S dtype drops trailing NULs only */
            while (len > 0 && s[len - 1] == '\0')
                len--;
            v[i] = sx_utf8_sanitize(s, len);
            SX_CHECK(v[i] != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        }
    }
done:
    *out = v;
    v = NULL;
out:
    if (v != NULL) {
        for (uint64_t i = 0; i < n; i++)
            free(v[i]);
        free(v);
    }
    free(vl);
    free(raw);
    close_id(sp);
    close_id(mt);
    return st;
}

static enum sx_status read_strings(struct sx_h5 *h5, hid_t loc, const char *name,
                                   char ***out, uint64_t *n_out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    char src[1100];
    hid_t d = -1, t = -1;
    src_name(src, sizeof src, h5->path, name);
    d = H5Dopen2(loc, name, H5P_DEFAULT);
    SX_CHECK(d >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
    t = H5Dget_type(d);
    SX_CHECK(t >= 0 && H5Tget_class(t) == H5T_STRING, SX_ERR_FORMAT, err, src,
             "%s has the wrong datatype: strings expected", src);
    int64_t n = dset_len(d);
    SX_CHECK(n >= 0, SX_ERR_FORMAT, err, src, "%s is not one-dimensional", src);
    st = check_claim(h5, d, (uint64_t)n, H5Tis_variable_str(t) > 0 ? 16 : H5Tget_size(t),
                     src, err);
    if (st != SX_OK)
        goto out;
    st = convert_strings(d, false, t, (uint64_t)n, out, src, err);
    if (st == SX_OK)
        *n_out = (uint64_t)n;
out:
    close_id(t);
    close_id(d);
    return st;
}

static void free_strv(char **v, uint64_t n) {
    if (v == NULL)
        return;
    for (uint64_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* ------------------------------------------------------------------ */
/* Attributes                                                         */

/* h5py writes numpy bools as an int8 enum {FALSE 0, TRUE 1}. */
static bool is_bool_enum(hid_t t) {
    if (H5Tget_class(t) != H5T_ENUM || H5Tget_nmembers(t) != 2)
        return false;
    char *a = H5Tget_member_name(t, 0), *b = H5Tget_member_name(t, 1);
    bool yes = a && b && strcmp(a, "FALSE") == 0 && strcmp(b, "TRUE") == 0;
    H5free_memory(a);
    H5free_memory(b);
    return yes;
}

/* One element (at 'p', of native type class) as a value. */
static enum sx_status attr_values(hid_t a, hid_t t, uint64_t n, struct sx_value *vals,
                                  const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    H5T_class_t cls = H5Tget_class(t);
    void *buf = NULL;
    char **strs = NULL;
    if (cls == H5T_INTEGER || (cls == H5T_ENUM && !is_bool_enum(t))) {
        bool uns = cls == H5T_INTEGER && H5Tget_sign(t) == H5T_SGN_NONE;
        buf = sx_malloc((n + 1) * 8);
        SX_CHECK(buf != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        hid_t base = cls == H5T_ENUM ? H5Tget_super(t) : -1;
        if (base >= 0) {
            uns = H5Tget_sign(base) == H5T_SGN_NONE;
            H5Tclose(base);
        }
        hid_t mt = uns ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64;
        if (cls == H5T_ENUM) {
            /* HDF5 converts enums only to enums: read the base integers, convert in
             * place. */
            hid_t b2 = H5Tget_super(t);
            herr_t rc = H5Aread(a, b2, buf);
            if (rc >= 0)
                rc = H5Tconvert(b2, mt, n, buf, NULL, H5P_DEFAULT);
            H5Tclose(b2);
            SX_CHECK(rc >= 0, SX_ERR_IO, err, src, "%s cannot be read", src);
        } else {
            SX_CHECK(H5Aread(a, mt, buf) >= 0, SX_ERR_IO, err, src, "%s cannot be read",
                     src);
        }
        for (uint64_t i = 0; i < n; i++) {
            if (uns) {
                uint64_t u = ((const uint64_t *)buf)[i];
                if (u > (uint64_t)INT64_MAX) {
                    vals[i].kind = SX_V_UINT;
                    vals[i].u.u = u;
                } else {
                    vals[i] = sx_value_int((int64_t)u);
                }
            } else {
                vals[i] = sx_value_int(((const int64_t *)buf)[i]);
            }
        }
    } else if (cls == H5T_ENUM) {
        buf = sx_malloc(n + 1);
        SX_CHECK(buf != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        hid_t b2 = H5Tget_super(t);
        hid_t mem = H5Tcopy(H5T_NATIVE_INT8);
        herr_t rc = H5Aread(a, b2, buf);
        if (rc >= 0)
            rc = H5Tconvert(b2, mem, n, buf, NULL, H5P_DEFAULT);
        H5Tclose(mem);
        H5Tclose(b2);
        SX_CHECK(rc >= 0, SX_ERR_IO, err, src, "%s cannot be read", src);
        for (uint64_t i = 0; i < n; i++)
            vals[i] = sx_value_bool(((const signed char *)buf)[i] != 0);
    } else if (cls == H5T_FLOAT) {
        buf = sx_malloc((n + 1) * sizeof(double));
        SX_CHECK(buf != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        SX_CHECK(H5Aread(a, H5T_NATIVE_DOUBLE, buf) >= 0, SX_ERR_IO, err, src,
                 "%s cannot be read", src);
        for (uint64_t i = 0; i < n; i++)
            vals[i] = sx_value_float(((const double *)buf)[i]);
    } else if (cls == H5T_STRING) {
        st = convert_strings(a, true, t, n, &strs, src, err);
        if (st != SX_OK)
            goto out;
        for (uint64_t i = 0; i < n; i++) {
            vals[i].kind = SX_V_STR;
            vals[i].u.str.s = strs[i];
            vals[i].u.str.len = strlen(strs[i]);
            strs[i] = NULL;
        }
    } else {
        st = sx_error_set(
            err, SX_ERR_UNSUPPORTED, src,
            "%s has a datatype (HDF5 class %d) that cannot be written as JSON", src,
            (int)cls);
    }
out:
    if (strs != NULL) {
        for (uint64_t i = 0; i < n; i++)
            free(strs[i]);
        free(strs);
    }
    free(buf);
    return st;
}

/* Nest a flat row-major list into arrays of the attribute's shape. */
static bool nest(struct sx_value *out, struct sx_value *flat, const hsize_t *dims, int nd,
                 uint64_t *pos) {
    sx_value_array(out);
    for (hsize_t i = 0; i < dims[0]; i++) {
        struct sx_value item;
        if (nd > 1) {
            if (!nest(&item, flat, dims + 1, nd - 1, pos))
                return false;
        } else {
            item = flat[(*pos)++];
        }
        if (!sx_value_push(out, item))
            return false;
    }
    return true;
}

/* An attribute as a metadata value (h5reader._decode_attribute + _metadata_value). */
static enum sx_status read_attr_value(hid_t a, struct sx_value *out, const char *src,
                                      struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t t = -1, sp = -1;
    struct sx_value *flat = NULL;
    uint64_t n = 0;
    t = H5Aget_type(a);
    sp = H5Aget_space(a);
    SX_CHECK(t >= 0 && sp >= 0, SX_ERR_IO, err, src, "%s cannot be read", src);
    SX_CHECK(H5Sget_simple_extent_type(sp) != H5S_NULL, SX_ERR_UNSUPPORTED, err, src,
             "%s is an empty (null dataspace) attribute, which cannot be written as JSON",
             src);
    int nd = H5Sget_simple_extent_ndims(sp);
    hsize_t dims[H5S_MAX_RANK];
    H5Sget_simple_extent_dims(sp, dims, NULL);
    n = 1;
    for (int i = 0; i < nd; i++)
        n *= dims[i];
    flat = sx_calloc(n + 1, sizeof *flat);
    SX_CHECK(flat != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    st = attr_values(a, t, n, flat, src, err);
    if (st != SX_OK)
        goto out;
    if (nd == 0) {
        *out = flat[0];
    } else {
        uint64_t pos = 0;
        bool ok = nest(out, flat, dims, nd, &pos);
        free(flat);
        flat = NULL;
        SX_CHECK(ok, SX_ERR_NOMEM, err, src, "out of memory");
        goto out;
    }
    free(flat);
    flat = NULL;
out:
    if (flat != NULL) {
        for (uint64_t i = 0; i < n; i++)
            sx_value_free(&flat[i]);
        free(flat);
    }
    close_id(sp);
    close_id(t);
    return st;
}

/* Optional scalar attributes of a group. */
static enum sx_status attr_string(struct sx_h5 *h5, hid_t loc, const char *obj,
                                  const char *name, char **out, bool *found,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t a = -1;
    struct sx_value v = {0};
    char src[1200];
    *out = NULL;
    if (found)
        *found = false;
    if (H5Aexists(loc, name) <= 0)
        goto out;
    snprintf(src, sizeof src, "%s:%s@%s", h5->path, obj, name);
    a = H5Aopen(loc, name, H5P_DEFAULT);
    SX_CHECK(a >= 0, SX_ERR_IO, err, src, "%s cannot be read", src);
    st = read_attr_value(a, &v, src, err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(v.kind == SX_V_STR, SX_ERR_FORMAT, err, src, "%s is not a string", src);
    *out = v.u.str.s;
    v.kind = SX_V_NULL;
    if (found)
        *found = true;
out:
    sx_value_free(&v);
    close_id(a);
    return st;
}

static enum sx_status attr_number(struct sx_h5 *h5, hid_t loc, const char *obj,
                                  const char *name, struct sx_value *out, bool *found,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t a = -1;
    char src[1200];
    *found = false;
    if (H5Aexists(loc, name) <= 0)
        goto out;
    snprintf(src, sizeof src, "%s:%s@%s", h5->path, obj, name);
    a = H5Aopen(loc, name, H5P_DEFAULT);
    SX_CHECK(a >= 0, SX_ERR_IO, err, src, "%s cannot be read", src);
    st = read_attr_value(a, out, src, err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(out->kind == SX_V_INT || out->kind == SX_V_FLOAT || out->kind == SX_V_BOOL ||
                 out->kind == SX_V_UINT,
             SX_ERR_FORMAT, err, src, "%s is not a number", src);
    *found = true;
out:
    close_id(a);
    return st;
}

static int64_t value_as_int(const struct sx_value *v) {
    switch (v->kind) {
    case SX_V_INT:
        return v->u.i;
    case SX_V_UINT:
        return (int64_t)v->u.u;
    case SX_V_BOOL:
        return v->u.b;
    case SX_V_FLOAT:
        return isfinite(v->u.f) ? (int64_t)v->u.f : 0;
    default:
        return 0;
    }
}

/* A 1-D string array attribute (tags, event_names, ...); absent -> empty. */
static enum sx_status attr_strings(struct sx_h5 *h5, hid_t loc, const char *obj,
                                   const char *name, char ***out, size_t *n_out,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t a = -1;
    struct sx_value v = {0};
    char src[1200];
    *out = NULL;
    *n_out = 0;
    if (H5Aexists(loc, name) <= 0)
        goto out;
    snprintf(src, sizeof src, "%s:%s@%s", h5->path, obj, name);
    a = H5Aopen(loc, name, H5P_DEFAULT);
    SX_CHECK(a >= 0, SX_ERR_IO, err, src, "%s cannot be read", src);
    st = read_attr_value(a, &v, src, err);
    if (st != SX_OK)
        goto out;
    if (v.kind == SX_V_STR) { /* a scalar string: one element */
        char **s = sx_calloc(1, sizeof *s);
        SX_CHECK(s != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        s[0] = v.u.str.s;
        v.kind = SX_V_NULL;
        *out = s;
        *n_out = 1;
        goto out;
    }
    SX_CHECK(v.kind == SX_V_ARRAY, SX_ERR_FORMAT, err, src, "%s is not a list of strings",
             src);
    char **s = sx_calloc(v.u.arr.n + 1, sizeof *s);
    SX_CHECK(s != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t i = 0; i < v.u.arr.n; i++) {
        struct sx_value *it = &v.u.arr.items[i];
        if (it->kind != SX_V_STR) {
            free_strv(s, i);
            st =
                sx_error_set(err, SX_ERR_FORMAT, src, "%s is not a list of strings", src);
            goto out;
        }
        s[i] = it->u.str.s;
        it->kind = SX_V_NULL;
    }
    *out = s;
    *n_out = v.u.arr.n;
out:
    sx_value_free(&v);
    close_id(a);
    return st;
}

struct meta_ctx {
    struct sx_h5 *h5;
    struct sx_value *obj;
    enum sx_status st;
    struct sx_error *err;
};

static herr_t meta_cb(hid_t loc, const char *name, const H5A_info_t *info, void *op) {
    (void)info;
    struct meta_ctx *c = op;
    char src[1200];
    snprintf(src, sizeof src, "%s:/metadata@%s", c->h5->path, name);
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) {
        c->st = sx_error_set(c->err, SX_ERR_IO, src, "%s cannot be read", src);
        return -1;
    }
    struct sx_value v = {0};
    c->st = read_attr_value(a, &v, src, c->err);
    H5Aclose(a);
    if (c->st != SX_OK)
        return -1;
    char *key = sx_utf8_sanitize(name, strlen(name));
    if (key == NULL || !sx_value_set(c->obj, key, strlen(key), v)) {
        free(key);
        sx_value_free(&v);
        c->st = sx_error_set(c->err, SX_ERR_NOMEM, src, "out of memory");
        return -1;
    }
    free(key);
    return 0;
}

static enum sx_status read_metadata(struct sx_h5 *h5, struct sx_run *run,
                                    struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = -1;
    if (!link_exists(h5->file, "metadata"))
        goto out;
    char src[1100];
    src_name(src, sizeof src, h5->path, "/metadata");
    g = H5Gopen2(h5->file, "metadata", H5P_DEFAULT);
    SX_CHECK(g >= 0, SX_ERR_FORMAT, err, src, "%s is not a group", src);
    struct meta_ctx c = {h5, &run->metadata, SX_OK, err};
    hsize_t idx = 0;
    /* h5py iterates attributes by name (strcmp order), not by creation order. */
    herr_t rc = H5Aiterate2(g, H5_INDEX_NAME, H5_ITER_INC, &idx, meta_cb, &c);
    if (c.st != SX_OK) {
        st = c.st;
        goto out;
    }
    SX_CHECK(rc >= 0, SX_ERR_IO, err, src, "%s: attributes cannot be read", src);
out:
    close_id(g);
    return st;
}

/* ------------------------------------------------------------------ */
/* Schema and layout                                                  */

static enum sx_status read_schema(struct sx_h5 *h5, struct sx_run *run,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t a = -1, t = -1;
    struct sx_value v = {0};
    char src[1100];
    src_name(src, sizeof src, h5->path, "/@scope_profiler_schema");
    run->schema = 1;
    if (H5Aexists(h5->file, "scope_profiler_schema") <= 0)
        goto layout;
    a = H5Aopen(h5->file, "scope_profiler_schema", H5P_DEFAULT);
    SX_CHECK(a >= 0, SX_ERR_IO, err, src, "%s cannot be read", src);
    st = read_attr_value(a, &v, src, err);
    if (st != SX_OK)
        goto out;
    if (v.kind != SX_V_INT && v.kind != SX_V_UINT) {
        struct sx_buf b = {0};
        sx_write_value(&b, &v, -1, 0);
        sx_buf_putc(&b, '\0');
        st = sx_error_set(
            err, SX_ERR_FORMAT, src,
            "HDF5 schema version attribute 'scope_profiler_schema' must be an "
            "integer, got %s (in %s)",
            b.data && !b.failed ? b.data : "?", h5->path);
        sx_buf_free(&b);
        goto out;
    }
    if (v.kind == SX_V_UINT) {
        st = sx_error_set(err, SX_ERR_UNSUPPORTED, src,
                          "Unsupported scope-profiler HDF5 schema version %" PRIu64
                          "; this package supports versions through %d. Upgrade "
                          "scope-profiler to read this file. (%s)",
                          v.u.u, CURRENT_SCHEMA, h5->path);
        goto out;
    }
    SX_CHECK(v.u.i >= 1, SX_ERR_UNSUPPORTED, err, src,
             "Unsupported scope-profiler HDF5 schema version %" PRId64
             "; versions must be positive (%s)",
             v.u.i, h5->path);
    SX_CHECK(
        v.u.i <= CURRENT_SCHEMA, SX_ERR_UNSUPPORTED, err, src,
        "Unsupported scope-profiler HDF5 schema version %" PRId64
        "; this package supports versions through %d. Upgrade scope-profiler to read "
        "this file. (%s)",
        v.u.i, CURRENT_SCHEMA, h5->path);
    run->schema = (int)v.u.i;
layout:
    run->layout = run->schema >= 2 ? SX_LAYOUT_COLUMNAR : SX_LAYOUT_SCHEMA1;
    if (run->schema >= 2 && H5Aexists(h5->file, "storage_layout") > 0) {
        close_id(a);
        a = H5Aopen(h5->file, "storage_layout", H5P_DEFAULT);
        t = a >= 0 ? H5Aget_type(a) : -1;
        /* Only a str compares equal in Python: a fixed-length (bytes) value reads as
         * columnar. */
        if (t >= 0 && H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) > 0) {
            sx_value_free(&v);
            st = read_attr_value(a, &v, src, err);
            if (st != SX_OK)
                goto out;
            if (v.kind == SX_V_STR && strcmp(v.u.str.s, "aggregate") == 0)
                run->layout = SX_LAYOUT_AGGREGATE;
        }
    }
out:
    sx_value_free(&v);
    close_id(t);
    close_id(a);
    return st;
}

/* ------------------------------------------------------------------ */
/* Columnar index                                                     */

struct index_cols {
    int64_t *region_ids, *ranks, *offsets, *counts, *lines, *excl;
    uint64_t n, n_lines, n_excl;
    char **files, **texts, **tags;
    uint64_t n_files, n_texts, n_tags;
    bool has_lines, has_excl;
};

static void free_index(struct index_cols *ix) {
    free(ix->region_ids);
    free(ix->ranks);
    free(ix->offsets);
    free(ix->counts);
    free(ix->lines);
    free(ix->excl);
    free_strv(ix->files, ix->n_files);
    free_strv(ix->texts, ix->n_texts);
    free_strv(ix->tags, ix->n_tags);
}

static enum sx_status req_len(const struct sx_h5 *h5, const char *name, uint64_t got,
                              uint64_t want, struct sx_error *err) {
    enum sx_status st = SX_OK;
    char src[1100];
    src_name(src, sizeof src, h5->path, name);
    SX_CHECK(got == want, SX_ERR_FORMAT, err, src,
             "%s has %" PRIu64 " rows but rank_region_index/region_ids has %" PRIu64
             "; the index is damaged",
             src, got, want);
out:
    return st;
}

static const int64_t *sort_offsets; /* qsort has no context argument in C11 */

static int cmp_rows(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    uint64_t ox = (uint64_t)sort_offsets[x], oy = (uint64_t)sort_offsets[y];
    if (ox != oy)
        return ox < oy ? -1 : 1;
    return x < y ? -1 : x > y; /* stable: by row */
}

static char *const *sort_names; /* qsort has no context argument in C11 */

static int cmp_name_ids(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int c = strcmp(sort_names[x], sort_names[y]);
    return c != 0 ? c : (x > y) - (x < y);
}

/*
 * Two region ids with one name are one region to the reader (a dict by
 * name): map every id to the first id of its name. NULL when out of memory.
 */
static uint32_t *first_ids(char *const *names, uint64_t n) {
    uint32_t *order = sx_malloc((n + 1) * sizeof *order);
    uint32_t *first = sx_malloc((n + 1) * sizeof *first);
    if (order == NULL || first == NULL) {
        free(order);
        free(first);
        return NULL;
    }
    for (uint64_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    sort_names = names;
    qsort(order, n, sizeof *order, cmp_name_ids);
    for (uint64_t i = 0; i < n; i++) {
        bool same = i > 0 && strcmp(names[order[i]], names[order[i - 1]]) == 0;
        first[order[i]] = same ? first[order[i - 1]] : order[i];
    }
    free(order);
    return first;
}

static enum sx_status validate_index(const struct sx_h5 *h5, const struct index_cols *ix,
                                     uint64_t nevents, struct sx_error *err) {
    enum sx_status st = SX_OK;
    uint64_t *order = NULL;
    char src[1100];
    src_name(src, sizeof src, h5->path, "/rank_region_index");
    uint64_t claimed = 0;
    for (uint64_t r = 0; r < ix->n; r++) {
        uint64_t o = (uint64_t)ix->offsets[r], c = (uint64_t)ix->counts[r];
        SX_CHECK(o + c >= o, SX_ERR_FORMAT, err, src,
                 "%s row %" PRIu64 ": event_offsets + event_counts overflows", src, r);
        if (o + c > claimed)
            claimed = o + c;
    }
    SX_CHECK(claimed <= nevents, SX_ERR_FORMAT, err, src,
             "%s claims %" PRIu64 " recorded events but its event columns hold %" PRIu64
             ". The file is truncated or damaged.",
             h5->path, claimed, nevents);
    order = sx_malloc((ix->n + 1) * sizeof *order);
    SX_CHECK(order != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (uint64_t r = 0; r < ix->n; r++)
        order[r] = r;
    sort_offsets = ix->offsets;
    qsort(order, ix->n, sizeof *order, cmp_rows);
    for (uint64_t i = 0; i + 1 < ix->n; i++) {
        uint64_t a = order[i], b = order[i + 1];
        uint64_t end_a = (uint64_t)ix->offsets[a] + (uint64_t)ix->counts[a];
        SX_CHECK(!((uint64_t)ix->offsets[b] < end_a), SX_ERR_FORMAT, err, src,
                 "%s has overlapping region rows in its event index (rows %" PRIu64
                 " and %" PRIu64 "). The file is damaged.",
                 h5->path, a, b);
    }
out:
    free(order);
    return st;
}

/* Little-endian integers of 'size' bytes to int64. */
static void widen(const unsigned char *p, size_t size, bool is_signed, uint64_t n,
                  int64_t *out) {
    for (uint64_t i = 0; i < n; i++, p += size) {
        uint64_t u = 0;
        for (size_t b = 0; b < size; b++)
            u |= (uint64_t)p[b] << (8 * b);
        if (is_signed && size < 8 && (u >> (8 * size - 1)) & 1)
            u |= ~(uint64_t)0 << (8 * size);
        out[i] = (int64_t)u;
    }
}

/* Whether integer dataset 'd' (of file type 't') can be read at its file address. */
static void raw_info(const struct sx_h5 *h5, hid_t d, hid_t t, struct raw_col *r) {
    memset(r, 0, sizeof *r);
    hid_t dcpl = H5Dget_create_plist(d);
    if (dcpl < 0)
        return;
    bool contig = H5Pget_layout(dcpl) == H5D_CONTIGUOUS && H5Pget_nfilters(dcpl) == 0 &&
                  H5Pget_external_count(dcpl) == 0;
    H5Pclose(dcpl);
    haddr_t addr = H5Dget_offset(d);
    int64_t nelem = dset_len(d);
    size_t size = H5Tget_size(t);
    H5T_sign_t sign = H5Tget_sign(t);
    /* int64 reads of a uint64 column clip, as HDF5's conversion does: leave it to HDF5 */
    if (!contig || addr == HADDR_UNDEF || H5Tget_order(t) != H5T_ORDER_LE ||
        !(size == 1 || size == 2 || size == 4 || size == 8) ||
        (size == 8 && sign != H5T_SGN_2) || h5->fd < 0 || nelem < 0)
        return;
    r->ok = true;
    r->nelem = (uint64_t)nelem;
    r->addr = (uint64_t)addr;
    r->size = size;
    r->is_signed = sign == H5T_SGN_2;
}

/* Open the event columns and check they are integer columns the file can hold. */
static enum sx_status open_events(struct sx_h5 *h5, struct sx_run *run, uint64_t need,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t t = -1;
    char src[1100];
    run->delta_encoded = link_exists(h5->file, "events/start_deltas");
    const char *names[SX_NCOLS];
    for (int c = 0; c < SX_NCOLS; c++)
        names[c] = col_names[c];
    if (run->delta_encoded) {
        names[SX_COL_START] = "start_deltas";
        names[SX_COL_END] = "durations";
    }
    run->nevents = UINT64_MAX;
    for (int c = 0; c < SX_NCOLS; c++) {
        char path[128];
        snprintf(path, sizeof path, "events/%s", names[c]);
        src_name(src, sizeof src, h5->path, path);
        if (!link_exists(h5->file, path)) {
            SX_CHECK(c > SX_COL_END || need == 0, SX_ERR_FORMAT, err, src,
                     "%s is missing: the run has events but no event column", src);
            if (c <= SX_COL_END)
                run->nevents = 0;
            continue;
        }
        h5->ev[c] = H5Dopen2(h5->file, path, H5P_DEFAULT);
        SX_CHECK(h5->ev[c] >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
        t = H5Dget_type(h5->ev[c]);
        SX_CHECK(t >= 0 && H5Tget_class(t) == H5T_INTEGER, SX_ERR_FORMAT, err, src,
                 "%s has the wrong datatype: integers expected", src);
        int64_t n = dset_len(h5->ev[c]);
        SX_CHECK(n >= 0, SX_ERR_FORMAT, err, src, "%s is not one-dimensional", src);
        st = check_claim(h5, h5->ev[c], (uint64_t)n, H5Tget_size(t), src, err);
        if (st != SX_OK)
            goto out;
        raw_info(h5, h5->ev[c], t, &h5->raw[c]);
        close_id(t);
        t = -1;
        if (c <= SX_COL_END) {
            if ((uint64_t)n < run->nevents)
                run->nevents = (uint64_t)n;
        } else {
            SX_CHECK((uint64_t)n >= need, SX_ERR_FORMAT, err, src,
                     "%s claims %" PRIu64 " recorded events but %s holds %" PRId64
                     ". The file is truncated or damaged.",
                     h5->path, need, src, n);
            run->file_cols |= SX_COLBIT(c);
        }
    }
    if (run->nevents == UINT64_MAX)
        run->nevents = 0;
out:
    close_id(t);
    return st;
}

/*
 * The strings of a 1-D string dataset at 'n' points (file rows 'pts', any
 * order) in one read, raw bytes as stored (fixed-length ones without their
 * trailing NULs): string k is text->data[off[k] .. off[k + 1]). One H5Dread
 * instead of one per row: each read costs HDF5 a type-conversion buffer.
 */
static enum sx_status read_point_strings(hid_t d, const hsize_t *pts, hsize_t first,
                                         size_t n, struct sx_buf *text, size_t *off,
                                         const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t fs = -1, ms = -1, t = -1, mt = -1;
    char **vl = NULL, *raw = NULL;
    sx_buf_reset(text);
    off[0] = 0;
    if (n == 0)
        goto out;
    hsize_t count = n;
    fs = H5Dget_space(d);
    ms = H5Screate_simple(1, &count, NULL);
    t = H5Dget_type(d);
    SX_CHECK(fs >= 0 && ms >= 0 && t >= 0, SX_ERR_IO, err, src, "%s: dataspace error",
             src);
    SX_CHECK((pts != NULL ? H5Sselect_elements(fs, H5S_SELECT_SET, n, pts)
                          : H5Sselect_hyperslab(fs, H5S_SELECT_SET, &first, NULL, &count,
                                                NULL)) >= 0,
             SX_ERR_FORMAT, err, src, "%s: rows out of range", src);
    if (H5Tis_variable_str(t) > 0) {
        mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(t));
        vl = sx_calloc(n, sizeof *vl);
        SX_CHECK(vl != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        SX_CHECK(H5Dread(d, mt, ms, fs, H5P_DEFAULT, vl) >= 0, SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
        for (size_t k = 0; k < n; k++) {
            if (vl[k] != NULL)
                sx_buf_append(text, vl[k], strlen(vl[k]));
            off[k + 1] = text->len;
        }
    } else {
        size_t w = H5Tget_size(t);
        SX_CHECK(w > 0, SX_ERR_FORMAT, err, src, "%s has a zero-width string type", src);
        raw = sx_malloc(w * n + 1);
        SX_CHECK(raw != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        mt = H5Tcopy(t);
        SX_CHECK(H5Dread(d, mt, ms, fs, H5P_DEFAULT, raw) >= 0, SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
        for (size_t k = 0; k < n; k++) {
            const char *s = raw + k * w;
            size_t len = w;
            while (len > 0 && s[len - 1] == '\0') /* numpy's S dtype drops these only */
                len--;
            sx_buf_append(text, s, len);
            off[k + 1] = text->len;
        }
    }
    SX_CHECK(!text->failed, SX_ERR_NOMEM, err, src, "out of memory");
out:
    if (vl != NULL) {
        H5Dvlen_reclaim(mt, ms, H5P_DEFAULT, vl);
        free(vl);
    }
    free(raw);
    close_id(mt);
    close_id(t);
    close_id(ms);
    close_id(fs);
    return st;
}

/* FNV-1a */
static uint64_t str_hash(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The id of 's' in 'p' (added when new); 0 for "" and on allocation failure ('*ok'). */
static uint32_t pool_add(struct pool *p, const char *s, bool *ok) {
    if (s[0] == '\0')
        return 0;
    if (2 * (p->n + 1) > p->nslot) { /* grow the table, rehash */
        size_t ns = p->nslot ? 2 * p->nslot : 64;
        uint32_t *t = sx_calloc(ns, sizeof *t);
        if (t == NULL) {
            *ok = false;
            return 0;
        }
        for (size_t i = 0; i < p->nslot; i++) {
            if (p->slot[i] == 0)
                continue;
            size_t j = (size_t)(str_hash(p->s[p->slot[i] - 1]) & (ns - 1));
            while (t[j] != 0)
                j = (j + 1) & (ns - 1);
            t[j] = p->slot[i];
        }
        free(p->slot);
        p->slot = t;
        p->nslot = ns;
    }
    size_t j = (size_t)(str_hash(s) & (p->nslot - 1));
    while (p->slot[j] != 0) {
        if (strcmp(p->s[p->slot[j] - 1], s) == 0)
            return p->slot[j];
        j = (j + 1) & (p->nslot - 1);
    }
    if (p->n == p->cap) {
        size_t nc = p->cap ? 2 * p->cap : 16;
        char **v = sx_realloc(p->s, nc * sizeof *v);
        if (v == NULL) {
            *ok = false;
            return 0;
        }
        p->s = v;
        p->cap = nc;
    }
    p->s[p->n] = sx_strdup(s);
    if (p->s[p->n] == NULL) {
        *ok = false;
        return 0;
    }
    p->slot[j] = (uint32_t)++p->n;
    return p->slot[j];
}

static void pool_free(struct pool *p) {
    for (size_t i = 0; i < p->n; i++)
        free(p->s[i]);
    free(p->s);
    free(p->slot);
    free(p->id);
    memset(p, 0, sizeof *p);
}

/*
 * Read a string column of the index in pieces into a pool: a row's string
 * costs 4 bytes and each distinct string is kept once (a run's rows of one
 * region share their source file, text and tags). Strings are decoded as the
 * full read decodes them.
 */
static enum sx_status read_pool(hid_t d, uint64_t nrows, struct pool *p, const char *src,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    enum { PIECE = 1 << 16 };
    struct sx_buf text = {0};
    size_t *off = NULL;
    p->id = sx_malloc((nrows + 1) * sizeof *p->id);
    off = sx_malloc((PIECE + 1) * sizeof *off);
    SX_CHECK(p->id != NULL && off != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (uint64_t at = 0; at < nrows; at += PIECE) {
        size_t n = nrows - at < PIECE ? (size_t)(nrows - at) : PIECE;
        st = read_point_strings(d, NULL, at, n, &text, off, src, err);
        if (st != SX_OK)
            goto out;
        bool ok = true;
        for (size_t k = 0; k < n && ok; k++) {
            const char *q = text.data != NULL ? text.data + off[k] : "";
            size_t len = strnlen(q, off[k + 1] - off[k]);
            char *v = sx_utf8_sanitize(q, len);
            SX_CHECK(v != NULL, SX_ERR_NOMEM, err, src, "out of memory");
            p->id[at + k] = pool_add(p, v, &ok);
            free(v);
        }
        SX_CHECK(ok, SX_ERR_NOMEM, err, src, "out of memory");
    }
out:
    free(off);
    sx_buf_free(&text);
    return st;
}

/* Open the per-row index columns a lazy run reads later, checked as the full read does.
 */
static enum sx_status open_lazy_cols(struct sx_h5 *h5, uint64_t nrows,
                                     struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t t = -1;
    char src[1100];
    for (int k = 0; k < RD_N; k++) {
        char p[128];
        snprintf(p, sizeof p, "rank_region_index/%s", rd_names[k]);
        if (!link_exists(h5->file, p))
            continue;
        src_name(src, sizeof src, h5->path, p);
        h5->rd[k] = H5Dopen2(h5->file, p, H5P_DEFAULT);
        SX_CHECK(h5->rd[k] >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
        t = H5Dget_type(h5->rd[k]);
        bool strings = k <= RD_TAGS;
        SX_CHECK(t >= 0 && H5Tget_class(t) == (strings ? H5T_STRING : H5T_INTEGER),
                 SX_ERR_FORMAT, err, src, "%s has the wrong datatype: %s expected", src,
                 strings ? "strings" : "integers");
        int64_t n = dset_len(h5->rd[k]);
        SX_CHECK(n >= 0, SX_ERR_FORMAT, err, src, "%s is not one-dimensional", src);
        st = check_claim(h5, h5->rd[k], (uint64_t)n,
                         strings && H5Tis_variable_str(t) > 0 ? 16 : H5Tget_size(t), src,
                         err);
        if (st == SX_OK)
            st = req_len(h5, p, (uint64_t)n, nrows, err);
        if (st == SX_OK && strings && !h5->open_only)
            st = read_pool(h5->rd[k], nrows, &h5->pool[k], src, err);
        if (st != SX_OK)
            goto out;
        if (!strings)
            raw_info(h5, h5->rd[k], t, &h5->rdraw[k]);
        close_id(t);
        t = -1;
    }
out:
    close_id(t);
    return st;
}

/* Open rank_region_index/event_metadata, if the run has it, for reads by row. */
static enum sx_status open_meta(struct sx_h5 *h5, struct sx_run *run, uint64_t nrows,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    char src[1100];
    if (!link_exists(h5->file, "rank_region_index/event_metadata"))
        return SX_OK;
    h5->meta = H5Dopen2(h5->file, "rank_region_index/event_metadata", H5P_DEFAULT);
    src_name(src, sizeof src, h5->path, "/rank_region_index/event_metadata");
    SX_CHECK(h5->meta >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
    int64_t nm = dset_len(h5->meta);
    hid_t mt = H5Dget_type(h5->meta);
    bool is_str = mt >= 0 && H5Tget_class(mt) == H5T_STRING;
    close_id(mt);
    SX_CHECK(is_str, SX_ERR_FORMAT, err, src,
             "%s has the wrong datatype: strings expected", src);
    st = req_len(h5, "/rank_region_index/event_metadata", (uint64_t)(nm < 0 ? 0 : nm),
                 nrows, err);
    if (st == SX_OK)
        st = sx_vlen_open(h5->meta, h5->fd, src, &h5->meta_vlen, err);
    if (st == SX_OK)
        run->has_meta_col = true;
out:
    return st;
}

static enum sx_status read_columnar(struct sx_h5 *h5, struct sx_run *run,
                                    struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct index_cols ix = {0};
    hid_t g = -1;
    char **names = NULL;
    uint64_t nnames = 0, n2 = 0;
    char src[1100];
    const bool agg = run->layout == SX_LAYOUT_AGGREGATE;
    int64_t *acols[5] = {0};
    uint32_t *first = NULL;

    if (link_exists(h5->file, "region_table/names")) {
        st = read_strings(h5, h5->file, "region_table/names", &names, &nnames, err);
        if (st != SX_OK)
            goto out;
    }
    run->names = names;
    run->nnames = (size_t)nnames;
    names = NULL;

    src_name(src, sizeof src, h5->path, "/rank_region_index");
    if (!link_exists(h5->file, "rank_region_index")) {
        SX_CHECK(run->nnames == 0, SX_ERR_FORMAT, err, src,
                 "%s is missing: the file is not a scope-profiler run", src);
        goto out;
    }
    g = H5Gopen2(h5->file, "rank_region_index", H5P_DEFAULT);
    SX_CHECK(g >= 0, SX_ERR_FORMAT, err, src, "%s is not a group", src);
    if (h5->open_only) {
        /* rank 0 reads and checks the rows and shares them (share_index) */
        hid_t d = H5Dopen2(h5->file, "rank_region_index/region_ids", H5P_DEFAULT);
        int64_t n = d >= 0 ? dset_len(d) : -1;
        close_id(d);
        SX_CHECK(n >= 0, SX_ERR_FORMAT, err, src, "%s/region_ids cannot be opened", src);
        ix.n = (uint64_t)n;
        st = open_lazy_cols(h5, ix.n, err);
        if (st == SX_OK)
            st = open_meta(h5, run, ix.n, err);
        if (st == SX_OK)
            st = open_events(h5, run, 0, err);
        goto out;
    }
    st = read_ints(h5, h5->file, "rank_region_index/region_ids", false, &ix.region_ids,
                   &ix.n, err);
    if (st != SX_OK)
        goto out;
    st = read_ints(h5, h5->file, "rank_region_index/ranks", false, &ix.ranks, &n2, err);
    if (st == SX_OK)
        st = req_len(h5, "/rank_region_index/ranks", n2, ix.n, err);
    if (st != SX_OK)
        goto out;

    if (agg) {
        static const char *const an[5] = {"aggregate_counts", "aggregate_totals",
                                          "aggregate_minimums", "aggregate_maximums",
                                          "aggregate_exclusives"};
        for (int k = 0; k < 5; k++) {
            char p[128];
            snprintf(p, sizeof p, "rank_region_index/%s", an[k]);
            st = read_ints(h5, h5->file, p, k == 0, &acols[k], &n2, err);
            if (st == SX_OK)
                st = req_len(h5, p, n2, ix.n, err);
            if (st != SX_OK)
                goto out;
        }
    } else {
        st = read_ints(h5, h5->file, "rank_region_index/event_offsets", true, &ix.offsets,
                       &n2, err);
        if (st == SX_OK)
            st = req_len(h5, "/rank_region_index/event_offsets", n2, ix.n, err);
        if (st == SX_OK)
            st = read_ints(h5, h5->file, "rank_region_index/event_counts", true,
                           &ix.counts, &n2, err);
        if (st == SX_OK)
            st = req_len(h5, "/rank_region_index/event_counts", n2, ix.n, err);
        if (st != SX_OK)
            goto out;
        if (h5->lazy) {
            st = open_lazy_cols(h5, ix.n, err);
            if (st != SX_OK)
                goto out;
        } else {
            if (link_exists(h5->file, "rank_region_index/source_lines")) {
                st = read_ints(h5, h5->file, "rank_region_index/source_lines", false,
                               &ix.lines, &ix.n_lines, err);
                if (st == SX_OK)
                    st = req_len(h5, "/rank_region_index/source_lines", ix.n_lines, ix.n,
                                 err);
                if (st != SX_OK)
                    goto out;
                ix.has_lines = true;
            }
            if (link_exists(h5->file, "rank_region_index/exclusive_totals")) {
                st = read_ints(h5, h5->file, "rank_region_index/exclusive_totals", false,
                               &ix.excl, &ix.n_excl, err);
                if (st == SX_OK)
                    st = req_len(h5, "/rank_region_index/exclusive_totals", ix.n_excl,
                                 ix.n, err);
                if (st != SX_OK)
                    goto out;
                ix.has_excl = true;
            }
            static const char *const sn[3] = {"source_files", "source_texts", "tags"};
            char ***sv[3] = {&ix.files, &ix.texts, &ix.tags};
            uint64_t *sc[3] = {&ix.n_files, &ix.n_texts, &ix.n_tags};
            for (int k = 0; k < 3; k++) {
                char p[128];
                snprintf(p, sizeof p, "rank_region_index/%s", sn[k]);
                if (!link_exists(h5->file, p))
                    continue;
                st = read_strings(h5, h5->file, p, sv[k], sc[k], err);
                if (st == SX_OK)
                    st = req_len(h5, p, *sc[k], ix.n, err);
                if (st != SX_OK)
                    goto out;
            }
        }
        st = open_meta(h5, run, ix.n, err);
        if (st != SX_OK)
            goto out;
        uint64_t need = 0;
        for (uint64_t r = 0; r < ix.n; r++)
            if ((uint64_t)ix.offsets[r] + (uint64_t)ix.counts[r] > need)
                need = (uint64_t)ix.offsets[r] + (uint64_t)ix.counts[r];
        st = open_events(h5, run, need, err);
        if (st != SX_OK)
            goto out;
        st = validate_index(h5, &ix, run->nevents, err);
        if (st != SX_OK)
            goto out;
    }

    src_name(src, sizeof src, h5->path, "/rank_region_index");
    first = first_ids(run->names, nnames);
    SX_CHECK(first != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    const bool lazy = h5->lazy && !agg;
    if (lazy) {
        /* the index alone: free the columns first, they are as big */
        free(ix.lines);
        free(ix.excl);
        ix.lines = ix.excl = NULL;
        run->index = sx_malloc((ix.n + 1) * sizeof *run->index);
        SX_CHECK(run->index != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        run->nindex = (size_t)ix.n;
    } else {
        run->rows = sx_calloc(ix.n + 1, sizeof *run->rows);
        SX_CHECK(run->rows != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        run->nrows = (size_t)ix.n;
    }
    int64_t max_rank = -1;
    for (uint64_t r = 0; r < ix.n; r++) {
        SX_CHECK(ix.region_ids[r] >= 0 && (uint64_t)ix.region_ids[r] < nnames,
                 SX_ERR_FORMAT, err, src,
                 "%s row %" PRIu64 " names region id %" PRId64 ", beyond the %" PRIu64
                 " names of region_table/names; the file is damaged",
                 src, r, ix.region_ids[r], nnames);
        SX_CHECK(ix.ranks[r] >= 0, SX_ERR_FORMAT, err, src,
                 "%s row %" PRIu64 " has a negative rank", src, r);
        if (ix.ranks[r] > max_rank)
            max_rank = ix.ranks[r];
        if (lazy) {
            run->index[r] = (struct sx_index_row){
                .offset = (uint64_t)ix.offsets[r],
                .count = (uint64_t)ix.counts[r],
                .rank = ix.ranks[r],
                .file_row = r,
                .region = first[ix.region_ids[r]],
            };
            continue;
        }
        struct sx_row *row = &run->rows[r];
        row->region = first[ix.region_ids[r]];
        row->rank = ix.ranks[r];
        row->file_row = r;
        if (agg) {
            static const char *const keys[5] = {"count", "total", "minimum", "maximum",
                                                "exclusive"};
            row->is_aggregate = true;
            row->event_data_available = true;
            for (int k = 0; k < 5; k++) {
                row->agg[k].key = keys[k];
                if (k == 0) {
                    row->agg[k].is_unsigned = true;
                    row->agg[k].u = (uint64_t)acols[0][r];
                } else {
                    row->agg[k].i = acols[k][r];
                }
            }
            row->nagg = 5;
            continue;
        }
        row->offset = (uint64_t)ix.offsets[r];
        row->count = (uint64_t)ix.counts[r];
        row->cols = SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END) | run->file_cols;
        row->has_meta_col = run->has_meta_col;
        if (ix.files != NULL && ix.files[r][0] != '\0') {
            row->source_file = ix.files[r];
            ix.files[r] = NULL;
        }
        if (ix.texts != NULL && ix.texts[r][0] != '\0') {
            row->source_text = ix.texts[r];
            ix.texts[r] = NULL;
        }
        if (ix.has_lines && ix.lines[r] >= 0) {
            row->has_lineno = true;
            row->source_lineno = ix.lines[r];
        }
        if (ix.has_excl && ix.excl[r] >= 0) {
            row->has_exclusive = true;
            row->exclusive_total = ix.excl[r];
        }
        if (ix.tags != NULL && ix.tags[r][0] != '\0') {
            st = sx_json_parse_tags(ix.tags[r], strlen(ix.tags[r]), &row->tags,
                                    &row->ntags, err);
            if (st != SX_OK) {
                sx_error_where(err, src);
                goto out;
            }
        }
    }
    /* num_ranks = max(metadata mpi_size (default 1), max rank + 1); 0 without rows */
    if (ix.n == 0) {
        run->num_ranks = 0;
    } else {
        int64_t mpi_size = 1;
        for (size_t i = 0; i < run->metadata.u.obj.n; i++) {
            const struct sx_member *m = &run->metadata.u.obj.items[i];
            if (strcmp(m->key, "mpi_size") == 0)
                mpi_size = value_as_int(&m->value);
        }
        run->num_ranks = mpi_size > max_rank + 1 ? mpi_size : max_rank + 1;
    }
out:
    free(first);
    for (int k = 0; k < 5; k++)
        free(acols[k]);
    free_strv(names, nnames);
    free_index(&ix);
    close_id(g);
    return st;
}

/* ------------------------------------------------------------------ */
/* Summary-only read (read_h5_summary)                                */

struct summary_stats {
    int64_t total, minimum, maximum, first, last, start_minimum, end_maximum;
    uint64_t gpu_count;
    int64_t gpu_total;
    double mean, m2;
};

static enum sx_status read_summary(struct sx_h5 *h5, struct sx_run *run,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t d = -1, mt = -1;
    struct summary_stats *s = NULL;
    char src[1100];
    src_name(src, sizeof src, h5->path, "/rank_region_index/summary_statistics");
    d = H5Dopen2(h5->file, "rank_region_index/summary_statistics", H5P_DEFAULT);
    SX_CHECK(d >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
    int64_t n = dset_len(d);
    SX_CHECK(n >= 0 && (uint64_t)n == run->nrows, SX_ERR_FORMAT, err, src,
             "%s has %" PRId64 " rows but the index has %zu", src, n, run->nrows);
    st = check_claim(h5, d, (uint64_t)n, 88, src, err);
    if (st != SX_OK)
        goto out;
    mt = H5Tcreate(H5T_COMPOUND, sizeof *s);
#define FIELD(name, type) H5Tinsert(mt, #name, offsetof(struct summary_stats, name), type)
    FIELD(total, H5T_NATIVE_INT64);
    FIELD(minimum, H5T_NATIVE_INT64);
    FIELD(maximum, H5T_NATIVE_INT64);
    FIELD(first, H5T_NATIVE_INT64);
    FIELD(last, H5T_NATIVE_INT64);
    FIELD(start_minimum, H5T_NATIVE_INT64);
    FIELD(end_maximum, H5T_NATIVE_INT64);
    FIELD(gpu_count, H5T_NATIVE_UINT64);
    FIELD(gpu_total, H5T_NATIVE_INT64);
    FIELD(mean, H5T_NATIVE_DOUBLE);
    FIELD(m2, H5T_NATIVE_DOUBLE);
#undef FIELD
    s = sx_calloc((size_t)n + 1, sizeof *s);
    SX_CHECK(s != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    if (n > 0)
        SX_CHECK(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, s) >= 0, SX_ERR_IO, err,
                 src, "%s cannot be read; the file is truncated or damaged", src);
    for (size_t r = 0; r < run->nrows; r++) {
        struct sx_row *row = &run->rows[r];
        const struct summary_stats *x = &s[r];
        static const char *const keys[] = {
            "count",         "total",       "minimum",   "maximum",   "first", "last",
            "start_minimum", "end_maximum", "gpu_count", "gpu_total", "mean",  "m2",
            "exclusive"};
        int64_t iv[] = {0,        x->total,    x->minimum,       x->maximum,
                        x->first, x->last,     x->start_minimum, x->end_maximum,
                        0,        x->gpu_total};
        row->is_aggregate = true;
        row->event_data_available = false;
        for (int k = 0; k < 13; k++) {
            struct sx_agg_field *f = &row->agg[k];
            f->key = keys[k];
            if (k == 0) {
                f->is_unsigned = true;
                f->u = row->count;
            } else if (k == 8) {
                f->is_unsigned = true;
                f->u = x->gpu_count;
            } else if (k == 10 || k == 11) {
                f->is_float = true;
                f->f = k == 10 ? x->mean : x->m2;
            } else if (k == 12) {
                f->i = row->has_exclusive ? row->exclusive_total : x->total;
            } else {
                f->i = iv[k];
            }
        }
        row->nagg = 13;
    }
out:
    free(s);
    close_id(mt);
    close_id(d);
    return st;
}

/* ------------------------------------------------------------------ */
/* Schema 1                                                           */

struct name_list {
    char **v;
    size_t n, cap;
    bool nomem; /* the listing stopped for want of memory */
};

static herr_t collect_cb(hid_t g, const char *name, const H5L_info_t *info, void *op) {
    (void)g;
    (void)info;
    struct name_list *l = op;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **v = sx_realloc(l->v, cap * sizeof *v);
        l->nomem = v == NULL;
        if (v == NULL)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n] = sx_strdup(name);
    l->nomem = l->v[l->n] == NULL;
    if (l->v[l->n] == NULL)
        return -1;
    l->n++;
    return 0;
}

/* Link names of a group in h5py order (by name). */
static enum sx_status list_links(hid_t g, struct name_list *l, const char *src,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    hsize_t idx = 0;
    herr_t rc = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_cb, l);
    SX_CHECK(!l->nomem, SX_ERR_NOMEM, err, src, "%s: out of memory", src);
    SX_CHECK(rc >= 0, SX_ERR_IO, err, src, "%s: members cannot be listed", src);
out:
    return st;
}

static void free_names(struct name_list *l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* "rank<digits>" -> rank, else -1. */
static int64_t rank_of(const char *name) {
    if (strncmp(name, "rank", 4) != 0 || name[4] == '\0')
        return -1;
    int64_t r = 0;
    for (const char *p = name + 4; *p; p++) {
        if (*p < '0' || *p > '9' || r > INT64_MAX / 10 - 10)
            return -1;
        r = r * 10 + (*p - '0');
    }
    return r;
}

struct rank_group {
    int64_t rank;
    char *name;
};

static int cmp_rank_group(const void *a, const void *b) {
    const struct rank_group *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static void free_names_v(struct rank_group *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(v[i].name);
}

/* Rank groups of the root in numeric order. */
static enum sx_status rank_groups(struct sx_h5 *h5, struct rank_group **out,
                                  size_t *n_out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct name_list l = {0};
    struct rank_group *v = NULL;
    size_t n = 0;
    char src[1100];
    src_name(src, sizeof src, h5->path, "/");
    st = list_links(h5->file, &l, src, err);
    if (st != SX_OK)
        goto out;
    v = sx_calloc(l.n + 1, sizeof *v);
    SX_CHECK(v != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t i = 0; i < l.n; i++) {
        int64_t r = rank_of(l.v[i]);
        if (r < 0)
            continue;
        H5O_info_t oi;
        if (H5Oget_info_by_name2(h5->file, l.v[i], &oi, H5O_INFO_BASIC, H5P_DEFAULT) <
                0 ||
            oi.type != H5O_TYPE_GROUP)
            continue;
        v[n].rank = r;
        v[n].name = l.v[i];
        l.v[i] = NULL;
        n++;
    }
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_rank_group);
    /* "rank0" and "rank00" would be one rank twice: the document could not say which */
    for (size_t i = 0; i + 1 < n; i++) {
        if (v[i].rank == v[i + 1].rank) {
            st =
                sx_error_set(err, SX_ERR_FORMAT, src,
                             "%s: the groups /%s and /%s are both rank %lld; the file is "
                             "damaged",
                             h5->path, v[i].name, v[i + 1].name, (long long)v[i].rank);
            free_names_v(v, n);
            goto out;
        }
    }
    *out = v;
    *n_out = n;
    v = NULL;
out:
    free(v);
    free_names(&l);
    return st;
}

static void free_rank_groups(struct rank_group *v, size_t n) {
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i].name);
    free(v);
}

static int64_t name_index(struct sx_run *run, const char *name) {
    for (size_t i = 0; i < run->nnames; i++)
        if (strcmp(run->names[i], name) == 0)
            return (int64_t)i;
    return -1;
}

static enum sx_status read_schema1(struct sx_h5 *h5, struct sx_run *run,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct rank_group *rg = NULL;
    size_t nrg = 0;
    struct name_list regs = {0};
    hid_t g = -1, d = -1, t = -1;
    char src[1400];
    size_t cap_rows = 0, cap_names = 0;
    st = rank_groups(h5, &rg, &nrg, err);
    if (st != SX_OK)
        goto out;
    run->num_ranks = (int64_t)nrg;
    /* no schema attribute, no metadata, no rank group: some other HDF5 file */
    if (nrg == 0 && !link_exists(h5->file, "metadata")) {
        src_name(src, sizeof src, h5->path, "/");
        st = sx_error_set(
            err, SX_ERR_FORMAT, src,
            "%s is an HDF5 file but not a scope-profiler run: it has no "
            "scope_profiler_schema attribute, no /metadata and no rank groups",
            h5->path);
        goto out;
    }
    for (size_t k = 0; k < nrg; k++) {
        char gp[300];
        snprintf(gp, sizeof gp, "%s/regions", rg[k].name);
        if (!link_exists(h5->file, gp))
            continue;
        src_name(src, sizeof src, h5->path, gp);
        g = H5Gopen2(h5->file, gp, H5P_DEFAULT);
        SX_CHECK(g >= 0, SX_ERR_FORMAT, err, src, "%s is not a group", src);
        free_names(&regs);
        st = list_links(g, &regs, src, err);
        if (st != SX_OK)
            goto out;
        for (size_t i = 0; i < regs.n; i++) {
            char rp[1100];
            snprintf(rp, sizeof rp, "/%s/regions/%s", rg[k].name, regs.v[i]);
            src_name(src, sizeof src, h5->path, rp);
            char *name = sx_utf8_sanitize(regs.v[i], strlen(regs.v[i]));
            SX_CHECK(name != NULL, SX_ERR_NOMEM, err, src, "out of memory");
            int64_t id = name_index(run, name);
            if (id < 0) {
                if (run->nnames == cap_names) {
                    cap_names = cap_names ? cap_names * 2 : 16;
                    char **nv = sx_realloc(run->names, cap_names * sizeof *nv);
                    if (nv == NULL)
                        free(name);
                    SX_CHECK(nv != NULL, SX_ERR_NOMEM, err, src, "out of memory");
                    run->names = nv;
                }
                id = (int64_t)run->nnames;
                run->names[run->nnames++] = name;
            } else {
                free(name);
            }
            if (run->nrows == cap_rows) {
                cap_rows = cap_rows ? cap_rows * 2 : 16;
                struct sx_row *nr = sx_realloc(run->rows, cap_rows * sizeof *nr);
                SX_CHECK(nr != NULL, SX_ERR_NOMEM, err, src, "out of memory");
                run->rows = nr;
            }
            struct sx_row *row = &run->rows[run->nrows++];
            *row = (struct sx_row){0};
            row->region = (uint32_t)id;
            row->rank = rg[k].rank;
            row->group = sx_strdup(rp);
            SX_CHECK(row->group != NULL, SX_ERR_NOMEM, err, src, "out of memory");
            hid_t rgp = H5Gopen2(g, regs.v[i], H5P_DEFAULT);
            SX_CHECK(rgp >= 0, SX_ERR_FORMAT, err, src, "%s is not a region group", src);
            close_id(d);
            d = rgp; /* closed below or at out */
            SX_CHECK(link_exists(rgp, "start_times") && link_exists(rgp, "end_times"),
                     SX_ERR_FORMAT, err, src,
                     "%s has no start_times/end_times datasets; the file is damaged",
                     src);
            row->cols = SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END);
            uint64_t count = 0;
            for (int c = 0; c < 5; c++) {
                static const int cc[5] = {SX_COL_START, SX_COL_END, SX_COL_GPU,
                                          SX_COL_CALL, SX_COL_PARENT};
                if (!link_exists(rgp, col_names[cc[c]]))
                    continue;
                hid_t ds = H5Dopen2(rgp, col_names[cc[c]], H5P_DEFAULT);
                char cs[1500];
                snprintf(cs, sizeof cs, "%s/%s", src, col_names[cc[c]]);
                SX_CHECK(ds >= 0, SX_ERR_FORMAT, err, cs, "%s cannot be opened", cs);
                t = H5Dget_type(ds);
                bool isint = t >= 0 && H5Tget_class(t) == H5T_INTEGER;
                int64_t n = dset_len(ds);
                if (isint && n >= 0)
                    st = check_claim(h5, ds, (uint64_t)n, H5Tget_size(t), cs, err);
                close_id(t);
                t = -1;
                H5Dclose(ds);
                if (st != SX_OK)
                    goto out;
                SX_CHECK(isint, SX_ERR_FORMAT, err, cs,
                         "%s has the wrong datatype: integers expected", cs);
                SX_CHECK(n >= 0, SX_ERR_FORMAT, err, cs, "%s is not one-dimensional", cs);
                if (c == 0)
                    count = (uint64_t)n;
                else
                    SX_CHECK((uint64_t)n == count, SX_ERR_FORMAT, err, cs,
                             "%s has %" PRId64 " values but start_times has %" PRIu64, cs,
                             n, count);
                row->cols |= SX_COLBIT(cc[c]);
            }
            row->count = count;
            bool found = false;
            st = attr_string(h5, rgp, rp, "source_file", &row->source_file, &found, err);
            if (st == SX_OK)
                st = attr_string(h5, rgp, rp, "source_text", &row->source_text, &found,
                                 err);
            if (st != SX_OK)
                goto out;
            struct sx_value lv = {0};
            st = attr_number(h5, rgp, rp, "source_lineno", &lv, &found, err);
            if (st != SX_OK)
                goto out;
            if (found) {
                row->has_lineno = true;
                row->source_lineno = value_as_int(&lv);
            }
            st = attr_strings(h5, rgp, rp, "tags", &row->tags, &row->ntags, err);
            if (st != SX_OK)
                goto out;
        }
        close_id(g);
        g = -1;
    }
out:
    free_names(&regs);
    free_rank_groups(rg, nrg);
    close_id(t);
    close_id(d);
    close_id(g);
    return st;
}

/* ------------------------------------------------------------------ */
/* Lanes, LIKWID, line profile                                        */

static int cmp_i64v(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Distinct ranks of a lane table, ascending. */
static size_t distinct(const int64_t *ranks, uint64_t n, int64_t *out) {
    memcpy(out, ranks, n * sizeof *out);
    qsort(out, n, sizeof *out, cmp_i64v);
    size_t k = 0;
    for (uint64_t i = 0; i < n; i++)
        if (k == 0 || out[k - 1] != out[i])
            out[k++] = out[i];
    return k;
}

static enum sx_status read_lanes(struct sx_h5 *h5, struct sx_run *run, bool tasks,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    const char *grp = tasks ? "task_table" : "thread_table";
    static const char *const tcols[] = {"index",    "ident",  "native_id", "daemon",
                                        "start_ns", "end_ns", "cpu_ns"};
    static const char *const kcols[] = {"index", "thread_index", "created_ns",  "done_ns",
                                        "steps", "running_ns",   "suspended_ns"};
    const char *const *icols = tasks ? kcols : tcols;
    int64_t *ic[7] = {0}, *ranks = NULL, *uniq = NULL;
    char **sc[3] = {0};
    uint64_t n = 0, m = 0, nsc = tasks ? 3 : 1;
    static const char *const tsc[] = {"name"};
    static const char *const ksc[] = {"kind", "name", "coro_name"};
    const char *const *scn = tasks ? ksc : tsc;
    char p[128], src[1100];
    if (!link_exists(h5->file, grp))
        goto out;
    if (tasks)
        run->has_tasks = true;
    else
        run->has_threads = true;
    snprintf(p, sizeof p, "%s/ranks", grp);
    st = read_ints(h5, h5->file, p, false, &ranks, &n, err);
    if (st != SX_OK)
        goto out;
    for (int k = 0; k < 7; k++) {
        snprintf(p, sizeof p, "%s/%s", grp, icols[k]);
        st = read_ints(h5, h5->file, p, false, &ic[k], &m, err);
        if (st == SX_OK)
            st = req_len(h5, p, m, n, err);
        if (st != SX_OK)
            goto out;
    }
    for (uint64_t k = 0; k < nsc; k++) {
        snprintf(p, sizeof p, "%s/%s", grp, scn[k]);
        st = read_strings(h5, h5->file, p, &sc[k], &m, err);
        if (st == SX_OK)
            st = req_len(h5, p, m, n, err);
        if (st != SX_OK) {
            /* 'out' frees n strings per column: this one holds m */
            free_strv(sc[k], m);
            sc[k] = NULL;
            goto out;
        }
    }
    src_name(src, sizeof src, h5->path, grp);
    uniq = sx_malloc((n + 1) * sizeof *uniq);
    SX_CHECK(uniq != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    size_t nr = distinct(ranks, n, uniq);
    struct sx_lane_rank *lanes = sx_calloc(nr + 1, sizeof *lanes);
    SX_CHECK(lanes != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    if (tasks) {
        run->tasks = lanes;
        run->ntasks = nr;
    } else {
        run->threads = lanes;
        run->nthreads = nr;
    }
    for (size_t k = 0; k < nr; k++) {
        struct sx_lane_rank *L = &lanes[k];
        L->rank = uniq[k];
        size_t cnt = 0;
        for (uint64_t i = 0; i < n; i++)
            cnt += ranks[i] == uniq[k];
        if (tasks)
            L->tasks = sx_calloc(cnt + 1, sizeof *L->tasks);
        else
            L->threads = sx_calloc(cnt + 1, sizeof *L->threads);
        SX_CHECK(tasks ? L->tasks != NULL : L->threads != NULL, SX_ERR_NOMEM, err, src,
                 "out of memory");
        for (uint64_t i = 0; i < n; i++) {
            if (ranks[i] != uniq[k])
                continue;
            if (tasks) {
                struct sx_task *x = &L->tasks[L->n++];
                x->index = ic[0][i];
                x->thread_index = ic[1][i];
                x->created_ns = ic[2][i];
                x->done_ns = ic[3][i];
                x->steps = ic[4][i];
                x->running_ns = ic[5][i];
                x->suspended_ns = ic[6][i];
                x->kind = sc[0][i];
                x->name = sc[1][i];
                x->coro_name = sc[2][i];
                sc[0][i] = sc[1][i] = sc[2][i] = NULL;
            } else {
                struct sx_thread *x = &L->threads[L->n++];
                x->index = ic[0][i];
                x->ident = ic[1][i];
                x->native_id = ic[2][i];
                x->daemon = ic[3][i] != 0;
                x->start_ns = ic[4][i];
                x->end_ns = ic[5][i];
                x->cpu_ns = ic[6][i];
                x->name = sc[0][i];
                sc[0][i] = NULL;
            }
        }
    }
out:
    for (int k = 0; k < 7; k++)
        free(ic[k]);
    for (uint64_t k = 0; k < 3; k++)
        free_strv(sc[k], n);
    free(ranks);
    free(uniq);
    return st;
}

static enum sx_status read_ints_opt(struct sx_h5 *h5, hid_t loc, const char *name,
                                    int64_t **out, size_t *n, struct sx_error *err) {
    uint64_t m = 0;
    *out = NULL;
    *n = 0;
    if (!link_exists(loc, name))
        return SX_OK;
    enum sx_status st = read_ints(h5, loc, name, false, out, &m, err);
    *n = (size_t)m;
    return st;
}

static enum sx_status read_doubles_opt(struct sx_h5 *h5, hid_t loc, const char *name,
                                       double **out, size_t *n, struct sx_error *err) {
    uint64_t m = 0;
    *out = NULL;
    *n = 0;
    if (!link_exists(loc, name))
        return SX_OK;
    enum sx_status st = read_doubles(h5, loc, name, out, &m, NULL, NULL, err);
    *n = (size_t)m;
    return st;
}

static enum sx_status read_matrix(struct sx_h5 *h5, hid_t loc, const char *name,
                                  struct sx_matrix *m, const char *src,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    uint64_t n = 0;
    hsize_t dims[2] = {0, 0};
    int nd = 0;
    m->v = NULL;
    m->rows = m->cols = 0;
    if (!link_exists(loc, name))
        goto out;
    st = read_doubles(h5, loc, name, &m->v, &n, dims, &nd, err);
    if (st != SX_OK)
        goto out;
    if (nd == 2) {
        m->rows = dims[0];
        m->cols = dims[1];
    } else {
        /* Only an empty placeholder may be other than 2-D (the exporter reshapes it). */
        SX_CHECK(n == 0, SX_ERR_FORMAT, err, src,
                 "%s/%s is a non-empty %d-D array; LIKWID events and metrics must be 2-D",
                 src, name, nd);
    }
out:
    return st;
}

static enum sx_status read_likwid(struct sx_h5 *h5, struct sx_run *run, hid_t rgrp,
                                  int64_t rank, const char *rname, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = -1, e = -1;
    struct name_list l = {0};
    char src[1400];
    struct sx_likwid_rank *lr = NULL;
    struct sx_likwid_rank *nv =
        sx_realloc(run->likwid, (run->nlikwid + 1) * sizeof *run->likwid);
    src_name(src, sizeof src, h5->path, rname);
    SX_CHECK(nv != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    run->likwid = nv;
    lr = &run->likwid[run->nlikwid++];
    *lr = (struct sx_likwid_rank){.rank = rank};
    if (!link_exists(rgrp, "likwid/regions"))
        goto out;
    g = H5Gopen2(rgrp, "likwid/regions", H5P_DEFAULT);
    SX_CHECK(g >= 0, SX_ERR_FORMAT, err, src, "%s/likwid/regions is not a group", src);
    st = list_links(g, &l, src, err);
    if (st != SX_OK)
        goto out;
    lr->entries = sx_calloc(l.n + 1, sizeof *lr->entries);
    SX_CHECK(lr->entries != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t i = 0; i < l.n; i++) {
        char obj[1200];
        snprintf(obj, sizeof obj, "/%s/likwid/regions/%s", rname, l.v[i]);
        src_name(src, sizeof src, h5->path, obj);
        e = H5Gopen2(g, l.v[i], H5P_DEFAULT);
        SX_CHECK(e >= 0, SX_ERR_FORMAT, err, src, "%s is not a group", src);
        struct sx_likwid_entry x = {0};
        bool found = false;
        struct sx_value nvv = {0};
        st = attr_string(h5, e, obj, "tag", &x.tag, &found, err);
        if (st == SX_OK && !found)
            x.tag = sx_strdup("");
        if (st == SX_OK)
            st = attr_number(h5, e, obj, "group_id", &nvv, &found, err);
        x.group_id = found ? value_as_int(&nvv) : -1;
        if (st == SX_OK)
            st = attr_string(h5, e, obj, "group_name", &x.group_name, &found, err);
        if (st == SX_OK && !found)
            x.group_name = sx_strdup("");
        if (st == SX_OK)
            st = attr_string(h5, e, obj, "source", &x.source, &found, err);
        if (st == SX_OK && !found)
            x.source = sx_strdup("");
        if (st == SX_OK)
            st = attr_strings(h5, e, obj, "event_names", &x.event_names, &x.nevent_names,
                              err);
        if (st == SX_OK)
            st = attr_strings(h5, e, obj, "counter_names", &x.counter_names,
                              &x.ncounter_names, err);
        if (st == SX_OK)
            st = attr_strings(h5, e, obj, "metric_names", &x.metric_names,
                              &x.nmetric_names, err);
        if (st == SX_OK)
            st = read_ints_opt(h5, e, "cpus", &x.cpus, &x.ncpus, err);
        if (st == SX_OK)
            st = read_doubles_opt(h5, e, "times", &x.times, &x.ntimes, err);
        if (st == SX_OK)
            st =
                read_ints_opt(h5, e, "call_counts", &x.call_counts, &x.ncall_counts, err);
        if (st == SX_OK)
            st = read_matrix(h5, e, "events", &x.events, src, err);
        if (st == SX_OK)
            st = read_matrix(h5, e, "metrics", &x.metrics, src, err);
        close_id(e);
        e = -1;
        /* the entry is owned by lr from here, freed with the run */
        if (x.tag == NULL || x.group_name == NULL || x.source == NULL) {
            if (st == SX_OK)
                st = sx_error_set(err, SX_ERR_NOMEM, src, "out of memory");
        }
        /* a duplicate tag replaces the earlier entry in place (dict semantics) */
        size_t at = lr->n;
        for (size_t j = 0; x.tag != NULL && j < lr->n; j++)
            if (strcmp(lr->entries[j].tag, x.tag) == 0)
                at = j;
        if (at < lr->n) {
            sx_likwid_entry_clear(&lr->entries[at]);
            lr->entries[at] = x;
        } else {
            lr->entries[lr->n++] = x;
        }
        if (st != SX_OK)
            goto out;
    }
out:
    free_names(&l);
    close_id(e);
    close_id(g);
    return st;
}

static int cmp_likwid_tag(const void *a, const void *b) {
    const struct sx_likwid_entry *x = a, *y = b;
    return strcmp(x->tag, y->tag); /* UTF-8 byte order == code point order */
}

static enum sx_status read_line_profile(struct sx_h5 *h5, struct sx_run *run, hid_t rgrp,
                                        int64_t rank, const char *rname,
                                        struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = -1, e = -1;
    struct name_list l = {0};
    char src[1400];
    struct sx_lp_rank *nv = sx_realloc(run->line_profile, (run->nline_profile + 1) *
                                                              sizeof *run->line_profile);
    src_name(src, sizeof src, h5->path, rname);
    SX_CHECK(nv != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    run->line_profile = nv;
    struct sx_lp_rank *lr = &run->line_profile[run->nline_profile++];
    *lr = (struct sx_lp_rank){.rank = rank};
    g = H5Gopen2(rgrp, "line_profile", H5P_DEFAULT);
    SX_CHECK(g >= 0, SX_ERR_FORMAT, err, src, "%s/line_profile is not a group", src);
    st = list_links(g, &l, src, err); /* name order: "0", "1", "10", "2" */
    if (st != SX_OK)
        goto out;
    lr->records = sx_calloc(l.n + 1, sizeof *lr->records);
    SX_CHECK(lr->records != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t i = 0; i < l.n; i++) {
        char obj[1200];
        snprintf(obj, sizeof obj, "/%s/line_profile/%s", rname, l.v[i]);
        src_name(src, sizeof src, h5->path, obj);
        e = H5Gopen2(g, l.v[i], H5P_DEFAULT);
        SX_CHECK(e >= 0, SX_ERR_FORMAT, err, src, "%s is not a group", src);
        struct sx_lp_record *x = &lr->records[lr->n++];
        bool found = false;
        struct sx_value v = {0};
        st = attr_string(h5, e, obj, "region", &x->region, &found, err);
        if (st == SX_OK && !found)
            x->region = sx_strdup("");
        if (st == SX_OK)
            st = attr_string(h5, e, obj, "filename", &x->filename, &found, err);
        if (st == SX_OK && !found)
            x->filename = sx_strdup("");
        if (st == SX_OK)
            st = attr_string(h5, e, obj, "function", &x->function, &found, err);
        if (st == SX_OK && !found)
            x->function = sx_strdup("");
        if (st == SX_OK)
            st = attr_number(h5, e, obj, "first_lineno", &v, &found, err);
        x->first_lineno = found ? value_as_int(&v) : 0;
        if (st == SX_OK)
            st = attr_number(h5, e, obj, "unit", &v, &found, err);
        x->unit = !found ? 1.0 : v.kind == SX_V_FLOAT ? v.u.f : (double)value_as_int(&v);
        if (st == SX_OK)
            st = read_ints_opt(h5, e, "line_numbers", &x->line_numbers, &x->nline_numbers,
                               err);
        if (st == SX_OK)
            st = read_ints_opt(h5, e, "hits", &x->hits, &x->nhits, err);
        if (st == SX_OK)
            st = read_doubles_opt(h5, e, "times", &x->times, &x->ntimes, err);
        close_id(e);
        e = -1;
        if (st == SX_OK && (!x->region || !x->filename || !x->function))
            st = sx_error_set(err, SX_ERR_NOMEM, src, "out of memory");
        if (st != SX_OK)
            goto out;
    }
out:
    free_names(&l);
    close_id(e);
    close_id(g);
    return st;
}

static enum sx_status h5_read_extras_impl(struct sx_h5 *h5, struct sx_run *run,
                                          struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct quiet q;
    struct rank_group *rg = NULL;
    size_t nrg = 0;
    hid_t g = -1;
    quiet_begin(&q);
    if (run->layout != SX_LAYOUT_SCHEMA1) {
        st = read_lanes(h5, run, false, err);
        if (st == SX_OK)
            st = read_lanes(h5, run, true, err);
        if (st != SX_OK)
            goto out;
    }
    st = rank_groups(h5, &rg, &nrg, err);
    if (st != SX_OK)
        goto out;
    for (size_t k = 0; k < nrg; k++) {
        g = H5Gopen2(h5->file, rg[k].name, H5P_DEFAULT);
        if (g < 0)
            continue;
        if (link_exists(g, "likwid")) {
            st = read_likwid(h5, run, g, rg[k].rank, rg[k].name, err);
            if (st != SX_OK)
                goto out;
            struct sx_likwid_rank *lr = &run->likwid[run->nlikwid - 1];
            if (lr->n > 1)
                qsort(lr->entries, lr->n, sizeof *lr->entries, cmp_likwid_tag);
        }
        if (link_exists(g, "line_profile")) {
            st = read_line_profile(h5, run, g, rg[k].rank, rg[k].name, err);
            if (st != SX_OK)
                goto out;
        }
        close_id(g);
        g = -1;
    }
out:
    close_id(g);
    free_rank_groups(rg, nrg);
    quiet_end(&q);
    return st;
}

/* ------------------------------------------------------------------ */
/* Open / close                                                       */

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
static enum sx_status share_index(MPI_Comm comm, struct sx_h5 *h5, struct sx_run *run,
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

static enum sx_status h5_open_impl(MPI_Comm comm, const char *path, bool summary,
                                   bool lazy, struct sx_h5 **out, struct sx_run **run_out,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_h5 *h5 = NULL;
    struct sx_run *run = NULL;
    hid_t fapl = -1;
    struct quiet q;
    struct stat sb;
    int rank = 0;
    bool opened_mpi = false; /* every rank passed the agreement on the file */
    quiet_begin(&q);
    *out = NULL;
    *run_out = NULL;
    if (comm != MPI_COMM_NULL)
        MPI_Comm_rank(comm, &rank);
    /* Every rank reaches the agreement below, whatever failed before it. */
    h5 = sx_calloc(1, sizeof *h5);
    if (h5 != NULL) {
        h5->file = -1;
        h5->meta = -1;
        h5->fd = -1;
        h5->lazy = lazy && !summary;
        for (int k = 0; k < RD_N; k++)
            h5->rd[k] = -1;
        for (int c = 0; c < SX_NCOLS; c++)
            h5->ev[c] = -1;
        h5->path = sx_strdup(path);
    }
    if (h5 == NULL || h5->path == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, path, "%s: out of memory", path);
    else if (stat(path, &sb) != 0)
        st = sx_error_set(err, SX_ERR_NOT_FOUND, path, "HDF5 file not found: %s", path);
    else if (!S_ISREG(sb.st_mode))
        st = sx_error_set(err, SX_ERR_OPEN, path, "%s is not a regular file", path);
    /* NOTE: collective: agree (on the file's existence) before the collective open */
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    opened_mpi = comm != MPI_COMM_NULL;
    h5->file_size = sb.st_size;
    h5->fd = open(path, O_RDONLY | O_CLOEXEC);

    fapl = H5Pcreate(H5P_FILE_ACCESS);
    SX_CHECK(fapl >= 0, SX_ERR_INTERNAL, err, path, "H5Pcreate failed");
    if (comm != MPI_COMM_NULL)
        H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL); /* NOTE: collective open below */
    h5->file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    SX_CHECK(
        h5->file >= 0, SX_ERR_OPEN, err, path,
        "%s is not a readable HDF5 profiling file. A run that was interrupted while "
        "writing leaves a truncated file behind; the underlying error was: HDF5 could "
        "not open it (not HDF5, or truncated)",
        path);

    run = sx_run_new();
    SX_CHECK(run != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    run->path = sx_strdup(path);
    SX_CHECK(run->path != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    run->summary = summary;
    st = read_schema(h5, run, err);
    if (st == SX_OK)
        st = read_metadata(h5, run, err);
    if (st != SX_OK)
        goto out;
    h5->open_only = h5->lazy && comm != MPI_COMM_NULL && rank != 0 &&
                    run->layout == SX_LAYOUT_COLUMNAR;
    if (run->layout == SX_LAYOUT_SCHEMA1) {
        st = read_schema1(h5, run, err);
    } else {
        st = read_columnar(h5, run, err);
        if (st == SX_OK && summary && run->layout == SX_LAYOUT_COLUMNAR &&
            link_exists(h5->file, "rank_region_index/summary_statistics"))
            st = read_summary(h5, run, err);
    }
    if (st != SX_OK)
        goto out;
    /* read_h5_summary flags the run; a file without statistics falls back to read_h5 */
    if (summary && run->layout != SX_LAYOUT_SCHEMA1 &&
        (run->layout == SX_LAYOUT_AGGREGATE ||
         link_exists(h5->file, "rank_region_index/summary_statistics")))
        run->event_data_available = false;
out:
    /* NOTE: collective: every rank of a lazy open joins, whatever its status */
    if (h5 != NULL && h5->lazy && comm != MPI_COMM_NULL && opened_mpi)
        st = share_index(comm, h5, run, st, err);
    close_id(fapl);
    quiet_end(&q);
    if (st != SX_OK) {
        sx_run_free(run);
        run = NULL;
    }
    *out = h5;
    *run_out = run;
    return st;
}

static void h5_close_impl(struct sx_h5 *h5) {
    if (h5 == NULL)
        return;
    struct quiet q;
    quiet_begin(&q);
    for (int c = 0; c < SX_NCOLS; c++)
        close_id(h5->ev[c]);
    sx_vlen_close(h5->meta_vlen);
    close_id(h5->meta);
    for (int k = 0; k < RD_N; k++)
        close_id(h5->rd[k]);
    for (int k = 0; k < 3; k++)
        pool_free(&h5->pool[k]);
    close_id(h5->file); /* NOTE: collective with the MPI-IO driver */
    quiet_end(&q);
    if (h5->fd >= 0)
        close(h5->fd);
    free(h5->rbuf);
    free(h5->scratch);
    free(h5->path);
    free(h5);
}

long sx_h5_open_ids(void) { return (long)H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL); }

/* ------------------------------------------------------------------ */
/* Event reads                                                        */

static enum sx_status read_slab(hid_t d, uint64_t first, uint64_t n, int64_t *out,
                                const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t fs = -1, ms = -1;
    if (n == 0)
        goto out;
    hsize_t start = first, count = n;
    fs = H5Dget_space(d);
    ms = H5Screate_simple(1, &count, NULL);
    SX_CHECK(fs >= 0 && ms >= 0, SX_ERR_IO, err, src, "%s: dataspace error", src);
    SX_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL) >= 0,
             SX_ERR_FORMAT, err, src,
             "%s: events %" PRIu64 "..%" PRIu64 " are out of range", src, first,
             first + n);
    SX_CHECK(H5Dread(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, out) >= 0, SX_ERR_IO, err,
             src,
             "%s cannot be read (events %" PRIu64 "..%" PRIu64
             "); the file is truncated or damaged",
             src, first, first + n);
out:
    close_id(ms);
    close_id(fs);
    return st;
}

/* Sum of start_deltas over [from, to) of the file, read in bounded pieces. */
static enum sx_status sum_deltas(struct sx_h5 *h5, uint64_t from, uint64_t to,
                                 uint64_t *sum, const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    enum { PIECE = 1 << 16 };
    int64_t *buf = NULL;
    uint64_t s = 0;
    if (to <= from)
        goto done;
    buf = sx_malloc(PIECE * sizeof *buf);
    SX_CHECK(buf != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (uint64_t p = from; p < to; p += PIECE) {
        uint64_t n = to - p < PIECE ? to - p : PIECE;
        st = read_slab(h5->ev[SX_COL_START], p, n, buf, src, err);
        if (st != SX_OK)
            goto out;
        for (uint64_t i = 0; i < n; i++)
            s += (uint64_t)buf[i];
    }
done:
    *sum = s;
out:
    free(buf);
    return st;
}

static enum sx_status read_schema1_events(struct sx_h5 *h5, const struct sx_row *row,
                                          uint64_t first, uint64_t n, unsigned cols,
                                          int64_t *const out[SX_NCOLS],
                                          struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = -1, d = -1;
    char src[1400];
    src_name(src, sizeof src, h5->path, row->group);
    g = H5Gopen2(h5->file, row->group, H5P_DEFAULT);
    SX_CHECK(g >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
    for (int c = 0; c < SX_NCOLS; c++) {
        if (!(cols & SX_COLBIT(c)) || !(row->cols & SX_COLBIT(c)))
            continue;
        char cs[1500];
        snprintf(cs, sizeof cs, "%s/%s", src, col_names[c]);
        d = H5Dopen2(g, col_names[c], H5P_DEFAULT);
        SX_CHECK(d >= 0, SX_ERR_FORMAT, err, cs, "%s cannot be opened", cs);
        st = read_slab(d, first, n, out[c], cs, err);
        close_id(d);
        d = -1;
        if (st != SX_OK)
            goto out;
    }
out:
    close_id(d);
    close_id(g);
    return st;
}

static enum sx_status h5_read_events_impl(struct sx_h5 *h5, const struct sx_run *run,
                                          const struct sx_row *row, uint64_t first,
                                          uint64_t n, unsigned cols,
                                          int64_t *const out[SX_NCOLS],
                                          struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct quiet q;
    char src[1100];
    quiet_begin(&q);
    if (n == 0)
        goto out;
    if (run->layout == SX_LAYOUT_SCHEMA1) {
        st = read_schema1_events(h5, row, first, n, cols, out, err);
        goto out;
    }
    uint64_t at = row->offset + first;
    if (run->delta_encoded &&
        (cols & (SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END)))) {
        /* start = running sum of deltas restarting at each row; end = start + duration */
        src_name(src, sizeof src, h5->path, "/events/start_deltas");
        uint64_t prefix = 0;
        if (first > 0) {
            uint64_t from = 0, base = 0;
            ckpt_find(h5, row, first, &from, &base);
            uint64_t s = 0;
            st = sum_deltas(h5, row->offset + from, row->offset + first, &s, src, err);
            if (st != SX_OK)
                goto out;
            prefix = base + s;
        }
        int64_t *start = out[SX_COL_START];
        st = read_slab(h5->ev[SX_COL_START], at, n, start, src, err);
        if (st != SX_OK)
            goto out;
        uint64_t acc = prefix;
        for (uint64_t i = 0; i < n; i++) {
            acc += (uint64_t)start[i];
            start[i] = (int64_t)acc;
        }
        ckpt_add(h5, row, first + n, acc);
        if (cols & SX_COLBIT(SX_COL_END)) {
            src_name(src, sizeof src, h5->path, "/events/durations");
            int64_t *end = out[SX_COL_END];
            st = read_slab(h5->ev[SX_COL_END], at, n, end, src, err);
            if (st != SX_OK)
                goto out;
            for (uint64_t i = 0; i < n; i++)
                end[i] = (int64_t)((uint64_t)start[i] + (uint64_t)end[i]);
        }
        cols &= ~(SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END));
    }
    for (int c = 0; c < SX_NCOLS; c++) {
        if (!(cols & SX_COLBIT(c)) || h5->ev[c] < 0)
            continue;
        char obj[64];
        snprintf(obj, sizeof obj, "/events/%s", col_names[c]);
        src_name(src, sizeof src, h5->path, obj);
        st = read_slab(h5->ev[c], at, n, out[c], src, err);
        if (st != SX_OK)
            goto out;
    }
out:
    quiet_end(&q);
    return st;
}

static enum sx_status h5_read_meta_impl(struct sx_h5 *h5, const struct sx_run *run,
                                        const struct sx_row *row, struct sx_buf *out,
                                        bool *any, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct quiet q;
    hid_t fs = -1, ms = -1, t = -1, mt = -1;
    char *vl = NULL, *raw = NULL;
    char src[1100];
    quiet_begin(&q);
    *any = false;
    if (h5->meta < 0 || run->layout != SX_LAYOUT_COLUMNAR)
        goto out;
    src_name(src, sizeof src, h5->path, "/rank_region_index/event_metadata");
    hsize_t start = row->file_row, count = 1;
    fs = H5Dget_space(h5->meta);
    ms = H5Screate_simple(1, &count, NULL);
    SX_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL) >= 0,
             SX_ERR_FORMAT, err, src, "%s: row %" PRIu64 " out of range", src,
             row->file_row);
    t = H5Dget_type(h5->meta);
    const char *text = "";
    size_t len = 0;
    if (H5Tis_variable_str(t) > 0) {
        mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(t));
        SX_CHECK(H5Dread(h5->meta, mt, ms, fs, H5P_DEFAULT, &vl) >= 0, SX_ERR_IO, err,
                 src,
                 "%s cannot be read (row %" PRIu64 "); the file is truncated or damaged",
                 src, row->file_row);
        text = vl ? vl : "";
        len = strlen(text);
    } else {
        size_t w = H5Tget_size(t);
        raw = sx_malloc(w + 1);
        SX_CHECK(raw != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        mt = H5Tcopy(t);
        SX_CHECK(H5Dread(h5->meta, mt, ms, fs, H5P_DEFAULT, raw) >= 0, SX_ERR_IO, err,
                 src,
                 "%s cannot be read (row %" PRIu64 "); the file is truncated or damaged",
                 src, row->file_row);
        len = w;
        while (len > 0 && raw[len - 1] == '\0')
            len--;
        text = raw;
    }
    if (len == 0)
        goto out;
    uint64_t n = 0;
    char where[1200];
    snprintf(where, sizeof where, "%s[%" PRIu64 "]", src, row->file_row);
    st = sx_json_canon_meta(text, len, out, any, &n, err);
    if (st != SX_OK) {
        if (err != NULL && err->source[0] == '\0')
            snprintf(err->source, sizeof err->source, "%.500s", where);
        goto out;
    }
    SX_CHECK(n == 0 || n == row->count, SX_ERR_FORMAT, err, where,
             "%s: event metadata must match the call count (%" PRIu64
             " entries for %" PRIu64 " calls)",
             where, n, row->count);
    if (n == 0) {
        out->len = 0;
        *any = false;
    }
out:
    if (vl != NULL) {
        hsize_t one = 1;
        hid_t s1 = H5Screate_simple(1, &one, NULL);
        H5Dvlen_reclaim(mt, s1, H5P_DEFAULT, &vl);
        H5Sclose(s1);
    }
    free(raw);
    close_id(mt);
    close_id(t);
    close_id(ms);
    close_id(fs);
    quiet_end(&q);
    return st;
}

static enum sx_status h5_read_metas_impl(struct sx_h5 *h5, const struct sx_run *run,
                                         const struct sx_row *const *rows, size_t n,
                                         struct sx_buf *out, size_t *off, bool *any,
                                         struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct quiet q;
    hsize_t *pts = NULL;
    size_t *roff = NULL;
    struct sx_buf raw = {0};
    char src[1100];
    quiet_begin(&q);
    sx_buf_reset(out);
    for (size_t k = 0; k <= n; k++)
        off[k] = 0;
    for (size_t k = 0; k < n; k++)
        any[k] = false;
    if (h5->meta < 0 || run->layout != SX_LAYOUT_COLUMNAR || n == 0)
        goto out;
    src_name(src, sizeof src, h5->path, "/rank_region_index/event_metadata");
    pts = sx_malloc(n * sizeof *pts);
    roff = sx_malloc((n + 1) * sizeof *roff);
    SX_CHECK(pts != NULL && roff != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t k = 0; k < n; k++)
        pts[k] = rows[k]->file_row;
    st = h5->meta_vlen != NULL
             ? sx_vlen_read(h5->meta_vlen, pts, n, &raw, roff, src, err)
             : read_point_strings(h5->meta, pts, 0, n, &raw, roff, src, err);
    if (st != SX_OK)
        goto out;
    for (size_t k = 0; k < n; k++) {
        size_t len = roff[k + 1] - roff[k];
        size_t at = out->len;
        uint64_t cnt = 0;
        if (len > 0) {
            char where[1200];
            snprintf(where, sizeof where, "%s[%" PRIu64 "]", src, rows[k]->file_row);
            st = sx_json_canon_meta(raw.data + roff[k], len, out, &any[k], &cnt, err);
            if (st != SX_OK) {
                if (err != NULL && err->source[0] == '\0')
                    snprintf(err->source, sizeof err->source, "%.500s", where);
                goto out;
            }
            SX_CHECK(cnt == 0 || cnt == rows[k]->count, SX_ERR_FORMAT, err, where,
                     "%s: event metadata must match the call count (%" PRIu64
                     " entries for %" PRIu64 " calls)",
                     where, cnt, rows[k]->count);
            if (cnt == 0) {
                out->len = at;
                any[k] = false;
            }
        }
        off[k + 1] = out->len;
    }
    SX_CHECK(!out->failed, SX_ERR_NOMEM, err, src, "out of memory");
out:
    sx_buf_free(&raw);
    free(roff);
    free(pts);
    quiet_end(&q);
    return st;
}

/* Integers of a 1-D dataset at 'n' points in one read. */
static enum sx_status read_point_ints(hid_t d, const hsize_t *pts, size_t n, int64_t *out,
                                      const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t fs = -1, ms = -1;
    if (n == 0)
        goto out;
    hsize_t count = n;
    fs = H5Dget_space(d);
    ms = H5Screate_simple(1, &count, NULL);
    SX_CHECK(fs >= 0 && ms >= 0, SX_ERR_IO, err, src, "%s: dataspace error", src);
    SX_CHECK(H5Sselect_elements(fs, H5S_SELECT_SET, n, pts) >= 0, SX_ERR_FORMAT, err, src,
             "%s: rows out of range", src);
    SX_CHECK(H5Dread(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, out) >= 0, SX_ERR_IO, err,
             src, "%s cannot be read; the file is truncated or damaged", src);
out:
    close_id(ms);
    close_id(fs);
    return st;
}

/*
 * Integers of a contiguous dataset at 'n' points by pread, through a window
 * of 64 KiB: a block's rows of one region are spread thin over the index,
 * one window holds many of them.
 */
static enum sx_status read_window_ints(struct sx_h5 *h5, const struct raw_col *rc,
                                       const hsize_t *pts, size_t n, int64_t *out,
                                       const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    enum { WINDOW = 1 << 16 };
    unsigned char *w = sx_malloc(WINDOW);
    uint64_t lo = 1, hi = 0; /* rows in the window: [lo, hi) */
    SX_CHECK(w != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t k = 0; k < n; k++) {
        uint64_t r = pts[k];
        SX_CHECK(r < rc->nelem, SX_ERR_FORMAT, err, src,
                 "%s: row %" PRIu64 " out of range", src, r);
        if (r < lo || r >= hi) {
            lo = r;
            hi = r + WINDOW / rc->size;
            if (hi > rc->nelem)
                hi = rc->nelem;
            size_t bytes = (size_t)(hi - lo) * rc->size, got = 0;
            while (got < bytes) {
                ssize_t g = pread(h5->fd, w + got, bytes - got,
                                  (off_t)(rc->addr + lo * rc->size + got));
                if (g < 0 && errno == EINTR)
                    continue;
                SX_CHECK(g > 0, SX_ERR_IO, err, src,
                         "%s cannot be read; the file is truncated or damaged", src);
                got += (size_t)g;
            }
        }
        widen(w + (r - lo) * rc->size, rc->size, rc->is_signed, 1, &out[k]);
    }
out:
    free(w);
    return st;
}

static enum sx_status h5_fill_rows_impl(struct sx_h5 *h5, const struct sx_run *run,
                                        const struct sx_index_row *const *ix, size_t n,
                                        struct sx_row *out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct quiet q;
    hsize_t *pts = NULL;
    size_t *off = NULL;
    int64_t *iv = NULL;
    struct sx_buf text = {0};
    char src[1100];
    quiet_begin(&q);
    const unsigned cols =
        SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END) | run->file_cols;
    for (size_t k = 0; k < n; k++) {
        struct sx_row *row = &out[k];
        memset(row, 0, sizeof *row);
        row->region = ix[k]->region;
        row->rank = ix[k]->rank;
        row->offset = ix[k]->offset;
        row->count = ix[k]->count;
        row->file_row = ix[k]->file_row;
        row->cols = cols;
        if (ix[k]->flags & SX_IR_NO_GPU)
            row->cols &= ~SX_COLBIT(SX_COL_GPU);
        row->has_meta_col = run->has_meta_col;
    }
    if (n == 0)
        goto out;
    pts = sx_malloc(n * sizeof *pts);
    off = sx_malloc((n + 1) * sizeof *off);
    iv = sx_malloc(n * sizeof *iv);
    SX_CHECK(pts != NULL && off != NULL && iv != NULL, SX_ERR_NOMEM, err, h5->path,
             "out of memory");
    for (size_t k = 0; k < n; k++)
        pts[k] = ix[k]->file_row;
    for (int c = 0; c < RD_N; c++) {
        if (h5->rd[c] < 0)
            continue;
        char obj[128];
        snprintf(obj, sizeof obj, "rank_region_index/%s", rd_names[c]);
        src_name(src, sizeof src, h5->path, obj);
        if (c == RD_LINES || c == RD_EXCL) {
            st = h5->rdraw[c].ok
                     ? read_window_ints(h5, &h5->rdraw[c], pts, n, iv, src, err)
                     : read_point_ints(h5->rd[c], pts, n, iv, src, err);
            if (st != SX_OK)
                goto out;
            for (size_t k = 0; k < n; k++) {
                if (iv[k] < 0)
                    continue;
                if (c == RD_LINES) {
                    out[k].has_lineno = true;
                    out[k].source_lineno = iv[k];
                } else {
                    out[k].has_exclusive = true;
                    out[k].exclusive_total = iv[k];
                }
            }
            continue;
        }
        const struct pool *pl = &h5->pool[c];
        for (size_t k = 0; k < n; k++) {
            uint32_t id = pl->id[ix[k]->file_row];
            if (id == 0) /* "" is None, as the full read has it */
                continue;
            const char *p = pl->s[id - 1];
            if (c == RD_TAGS) {
                st = sx_json_parse_tags(p, strlen(p), &out[k].tags, &out[k].ntags, err);
                if (st != SX_OK)
                    goto out;
                continue;
            }
            char *v = sx_strdup(p);
            SX_CHECK(v != NULL, SX_ERR_NOMEM, err, src, "out of memory");
            if (c == RD_FILES)
                out[k].source_file = v;
            else
                out[k].source_text = v;
        }
    }
out:
    sx_buf_free(&text);
    free(iv);
    free(off);
    free(pts);
    quiet_end(&q);
    return st;
}

static enum sx_status h5_gpu_present_impl(struct sx_h5 *h5, const struct sx_run *run,
                                          const struct sx_row *row, bool *present,
                                          struct sx_error *err) {
    enum sx_status st = SX_OK;
    enum { PIECE = 1 << 16 };
    int64_t *buf = NULL;
    struct quiet q;
    char src[1100];
    quiet_begin(&q);
    *present = false;
    if (run->layout != SX_LAYOUT_COLUMNAR || h5->ev[SX_COL_GPU] < 0 || row->is_aggregate)
        goto out;
    src_name(src, sizeof src, h5->path, "/events/gpu_durations");
    buf = sx_malloc(PIECE * sizeof *buf);
    SX_CHECK(buf != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (uint64_t p = 0; p < row->count && !*present; p += PIECE) {
        uint64_t n = row->count - p < PIECE ? row->count - p : PIECE;
        st = read_slab(h5->ev[SX_COL_GPU], row->offset + p, n, buf, src, err);
        if (st != SX_OK)
            goto out;
        for (uint64_t i = 0; i < n; i++)
            if (buf[i] >= 0) {
                *present = true;
                break;
            }
    }
out:
    free(buf);
    quiet_end(&q);
    return st;
}

/* ------------------------------------------------------------------ */
/* Full load                                                          */

static enum sx_status h5_load_impl(const char *path, bool summary, struct sx_run **out,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_h5 *h5 = NULL;
    struct sx_run *run = NULL;
    struct sx_buf mb = {0};
    *out = NULL;
    st = sx_h5_open(MPI_COMM_NULL, path, summary, &h5, &run, err);
    if (st != SX_OK)
        goto out;
    st = sx_h5_read_extras(h5, run, err);
    if (st != SX_OK)
        goto out;
    for (size_t r = 0; r < run->nrows; r++) {
        struct sx_row *row = &run->rows[r];
        if (row->is_aggregate)
            continue;
        if (run->layout == SX_LAYOUT_COLUMNAR && (row->cols & SX_COLBIT(SX_COL_GPU))) {
            bool present = false;
            st = sx_h5_gpu_present(h5, run, row, &present, err);
            if (st != SX_OK)
                goto out;
            if (!present)
                row->cols &= ~SX_COLBIT(SX_COL_GPU);
        }
        for (int c = 0; c < SX_NCOLS; c++) {
            if (!(row->cols & SX_COLBIT(c)))
                continue;
            row->col[c] = sx_malloc((row->count + 1) * sizeof(int64_t));
            SX_CHECK(row->col[c] != NULL, SX_ERR_NOMEM, err, path, "out of memory");
        }
        st = sx_h5_read_events(h5, run, row, 0, row->count, row->cols, row->col, err);
        if (st != SX_OK)
            goto out;
        if (row->has_meta_col) {
            sx_buf_reset(&mb);
            bool any = false;
            st = sx_h5_read_meta(h5, run, row, &mb, &any, err);
            if (st != SX_OK)
                goto out;
            if (mb.len > 0) {
                row->meta_text = sx_strndup(mb.data, mb.len);
                SX_CHECK(row->meta_text != NULL, SX_ERR_NOMEM, err, path,
                         "out of memory");
            }
            row->meta_any = any;
        }
    }
out:
    sx_buf_free(&mb);
    sx_h5_close(h5);
    if (st != SX_OK) {
        sx_run_free(run);
        run = NULL;
    }
    *out = run;
    return st;
}

/* ------------------------------------------------------------------ */
/* Batched slice reads                                                */

struct span {
    uint64_t start, n; /* file range */
    size_t slice;
};

static int cmp_span(const void *a, const void *b) {
    const struct span *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/*
 * The file range [lo, hi) covering the sorted spans i .. j-1 that lie less
 * than 'gap' events apart; returns j, the first span after them.
 */
static size_t merge_spans(const struct span *sp, size_t n, size_t i, uint64_t gap,
                          uint64_t *lo, uint64_t *hi) {
    *lo = sp[i].start;
    *hi = sp[i].start + sp[i].n;
    size_t j = i + 1;
    while (j < n && sp[j].start <= *hi + gap) {
        if (sp[j].start + sp[j].n > *hi)
            *hi = sp[j].start + sp[j].n;
        j++;
    }
    return j;
}

/*
 * The direct path of read_col_spans: one pread per run of ranges less than a
 * page apart, converted from the file's little-endian integers.
 */
static enum sx_status read_col_spans_raw(struct sx_h5 *h5, const struct raw_col *rc,
                                         const struct span *sp, size_t n,
                                         struct sx_slice *s, int c, const char *src,
                                         struct sx_error *err) {
    enum sx_status st = SX_OK;
    const uint64_t gap = 4096 / rc->size;
    size_t i = 0;
    while (i < n) {
        uint64_t lo, hi;
        size_t j = merge_spans(sp, n, i, gap, &lo, &hi);
        size_t bytes = (size_t)(hi - lo) * rc->size;
        if (bytes > h5->rbuf_cap) {
            free(h5->rbuf);
            h5->rbuf = sx_malloc(bytes);
            h5->rbuf_cap = h5->rbuf != NULL ? bytes : 0;
        }
        SX_CHECK(h5->rbuf != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        uint64_t at = rc->addr + lo * rc->size;
        size_t got = 0;
        while (got < bytes) {
            ssize_t k = pread(h5->fd, h5->rbuf + got, bytes - got, (off_t)(at + got));
            if (k < 0 && errno == EINTR)
                continue;
            SX_CHECK(k > 0, SX_ERR_IO, err, src,
                     "%s cannot be read (events %" PRIu64 "..%" PRIu64
                     "); the file is truncated or damaged",
                     src, lo, hi);
            got += (size_t)k;
        }
        for (size_t k = i; k < j; k++) {
            const unsigned char *p = h5->rbuf + (sp[k].start - lo) * rc->size;
            if (rc->size == 8)
                memcpy(s[sp[k].slice].col[c], p, sp[k].n * 8);
            else
                widen(p, rc->size, rc->is_signed, sp[k].n, s[sp[k].slice].col[c]);
        }
        i = j;
    }
out:
    return st;
}

/*
 * One column of many slices: merge ranges closer than GAP events into
 * covering reads, select them with one OR-ed hyperslab, read once, and
 * scatter to the slices.
 */
static enum sx_status read_col_spans(struct sx_h5 *h5, hid_t d, struct span *sp, size_t n,
                                     struct sx_slice *s, int c, const char *src,
                                     struct sx_error *err) {
    enum sx_status st = SX_OK;
    enum { GAP = 4096 };
    hid_t fs = -1, ms = -1;
    int64_t *buf = NULL;
    qsort(sp, n, sizeof *sp, cmp_span);
    if (h5->raw[c].ok && h5->ev[c] == d)
        return read_col_spans_raw(h5, &h5->raw[c], sp, n, s, c, src, err);
    fs = H5Dget_space(d);
    SX_CHECK(fs >= 0, SX_ERR_IO, err, src, "%s: dataspace error", src);
    H5Sselect_none(fs);
    uint64_t total = 0;
    size_t i = 0;
    while (i < n) {
        uint64_t lo, hi;
        size_t j = merge_spans(sp, n, i, GAP, &lo, &hi);
        hsize_t start = lo, count = hi - lo;
        if (count > 0)
            SX_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_OR, &start, NULL, &count, NULL) >=
                         0,
                     SX_ERR_FORMAT, err, src,
                     "%s: events %" PRIu64 "..%" PRIu64 " are out of range", src, lo, hi);
        total += hi - lo;
        i = j;
    }
    if (total == 0)
        goto out;
    if (total > h5->scratch_cap) {
        free(h5->scratch);
        h5->scratch = sx_malloc(total * sizeof *h5->scratch);
        h5->scratch_cap = h5->scratch != NULL ? total : 0;
    }
    buf = h5->scratch;
    SX_CHECK(buf != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    hsize_t mt = total;
    ms = H5Screate_simple(1, &mt, NULL);
    SX_CHECK(H5Dread(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, buf) >= 0, SX_ERR_IO, err,
             src, "%s cannot be read; the file is truncated or damaged", src);
    /* scatter: walk the merged ranges again in file order */
    uint64_t pos = 0;
    i = 0;
    while (i < n) {
        uint64_t lo, hi;
        size_t j = merge_spans(sp, n, i, GAP, &lo, &hi);
        for (size_t k = i; k < j; k++)
            memcpy(s[sp[k].slice].col[c], buf + pos + (sp[k].start - lo),
                   sp[k].n * sizeof *buf);
        pos += hi - lo;
        i = j;
    }
out:
    close_id(ms);
    close_id(fs);
    return st;
}

static enum sx_status h5_read_slices_impl(struct sx_h5 *h5, const struct sx_run *run,
                                          struct sx_slice *s, size_t ns,
                                          struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct quiet q;
    struct span *sp = NULL;
    int64_t *tmp = NULL;
    char src[1100];
    quiet_begin(&q);
    if (run->layout != SX_LAYOUT_COLUMNAR) {
        for (size_t i = 0; i < ns && st == SX_OK; i++) {
            /* schema 1: one dataset per row; the end column needs its own buffer */
            st = sx_h5_read_events(h5, run, s[i].row, s[i].first, s[i].n, s[i].cols,
                                   s[i].col, err);
        }
        goto out;
    }
    sp = sx_malloc((ns + 1) * sizeof *sp);
    SX_CHECK(sp != NULL, SX_ERR_NOMEM, err, h5->path, "out of memory");
    const bool delta = run->delta_encoded;
    for (int c = 0; c < SX_NCOLS; c++) {
        /* delta-encoded ends need the starts too: read deltas for END slices into tmp */
        size_t n = 0;
        for (size_t i = 0; i < ns; i++) {
            bool want = (s[i].cols & SX_COLBIT(c)) != 0;
            if (delta && c == SX_COL_START && (s[i].cols & SX_COLBIT(SX_COL_END)))
                want = true;
            if (want && s[i].n > 0)
                sp[n++] = (struct span){s[i].row->offset + s[i].first, s[i].n, i};
        }
        if (n == 0 || h5->ev[c] < 0)
            continue;
        char obj[64];
        snprintf(obj, sizeof obj, "/events/%s",
                 delta && c == SX_COL_START ? "start_deltas"
                 : delta && c == SX_COL_END ? "durations"
                                            : col_names[c]);
        src_name(src, sizeof src, h5->path, obj);
        if (delta && c == SX_COL_START) {
            /* START slices read in place; END-only slices read deltas into temp room */
            uint64_t extra = 0;
            for (size_t i = 0; i < ns; i++)
                if (!(s[i].cols & SX_COLBIT(SX_COL_START)) &&
                    (s[i].cols & SX_COLBIT(SX_COL_END)))
                    extra += s[i].n;
            free(tmp);
            tmp = sx_malloc((extra + 1) * sizeof *tmp);
            SX_CHECK(tmp != NULL, SX_ERR_NOMEM, err, src, "out of memory");
            uint64_t used = 0;
            for (size_t i = 0; i < ns; i++)
                if (!(s[i].cols & SX_COLBIT(SX_COL_START)) &&
                    (s[i].cols & SX_COLBIT(SX_COL_END))) {
                    s[i].col[SX_COL_START] = tmp + used;
                    used += s[i].n;
                }
        }
        st = read_col_spans(h5, h5->ev[c], sp, n, s, c, src, err);
        if (st != SX_OK)
            goto out;
        if (delta && c == SX_COL_START) {
            for (size_t i = 0; i < ns; i++) {
                if (s[i].col[SX_COL_START] == NULL || s[i].n == 0)
                    continue;
                uint64_t prefix = 0;
                if (s[i].first > 0) {
                    uint64_t from = 0, base = 0, sum = 0;
                    ckpt_find(h5, s[i].row, s[i].first, &from, &base);
                    st = sum_deltas(h5, s[i].row->offset + from,
                                    s[i].row->offset + s[i].first, &sum, src, err);
                    if (st != SX_OK)
                        goto out;
                    prefix = base + sum;
                }
                int64_t *v = s[i].col[SX_COL_START];
                uint64_t acc = prefix;
                for (uint64_t k = 0; k < s[i].n; k++) {
                    acc += (uint64_t)v[k];
                    v[k] = (int64_t)acc;
                }
                ckpt_add(h5, s[i].row, s[i].first + s[i].n, acc);
            }
        }
        if (delta && c == SX_COL_END) {
            for (size_t i = 0; i < ns; i++) {
                if (!(s[i].cols & SX_COLBIT(SX_COL_END)))
                    continue;
                const int64_t *st0 = s[i].col[SX_COL_START];
                int64_t *v = s[i].col[SX_COL_END];
                for (uint64_t k = 0; k < s[i].n; k++)
                    v[k] = (int64_t)((uint64_t)st0[k] + (uint64_t)v[k]);
            }
        }
    }
out:
    /* END-only slices must not keep pointers into tmp */
    for (size_t i = 0; i < ns; i++)
        if (!(s[i].cols & SX_COLBIT(SX_COL_START)))
            s[i].col[SX_COL_START] = NULL;
    free(tmp);
    free(sp);
    quiet_end(&q);
    return st;
}

/* ------------------------------------------------------------------ */
/* Where the process is, for a crash report                            */

/*
 * The HDF5 library may crash or loop on a damaged file (1.10 does on some).
 * Every entry point below marks the file it reads while inside, so that a
 * signal handler can say which file and whether HDF5 was at work.
 */
static const char *volatile h5_file_in_use;
static volatile sig_atomic_t h5_depth;

const char *sx_hdf5_file_in_use(void) { return h5_depth > 0 ? h5_file_in_use : NULL; }

static void h5_enter(const char *path) {
    if (h5_depth++ == 0)
        h5_file_in_use = path;
}

static void h5_leave(void) {
    if (--h5_depth == 0)
        h5_file_in_use = NULL;
}

enum sx_status sx_h5_open(MPI_Comm comm, const char *path, bool summary,
                          struct sx_h5 **h5, struct sx_run **run, struct sx_error *err) {
    h5_enter(path);
    enum sx_status st = h5_open_impl(comm, path, summary, false, h5, run, err);
    h5_leave();
    return st;
}

enum sx_status sx_h5_open_index(MPI_Comm comm, const char *path, bool summary,
                                struct sx_h5 **h5, struct sx_run **run,
                                struct sx_error *err) {
    h5_enter(path);
    enum sx_status st = h5_open_impl(comm, path, summary, true, h5, run, err);
    h5_leave();
    return st;
}

enum sx_status sx_h5_fill_rows(struct sx_h5 *h5, const struct sx_run *run,
                               const struct sx_index_row *const *ix, size_t n,
                               struct sx_row *out, struct sx_error *err) {
    h5_enter(h5->path);
    enum sx_status st = h5_fill_rows_impl(h5, run, ix, n, out, err);
    h5_leave();
    return st;
}

void sx_h5_close(struct sx_h5 *h5) {
    h5_enter(h5 != NULL ? h5->path : NULL);
    h5_close_impl(h5);
    h5_leave();
}

enum sx_status sx_h5_read_extras(struct sx_h5 *h5, struct sx_run *run,
                                 struct sx_error *err) {
    h5_enter(h5->path);
    enum sx_status st = h5_read_extras_impl(h5, run, err);
    h5_leave();
    return st;
}

enum sx_status sx_h5_read_events(struct sx_h5 *h5, const struct sx_run *run,
                                 const struct sx_row *row, uint64_t first, uint64_t n,
                                 unsigned cols, int64_t *const out[SX_NCOLS],
                                 struct sx_error *err) {
    h5_enter(h5->path);
    enum sx_status st = h5_read_events_impl(h5, run, row, first, n, cols, out, err);
    h5_leave();
    return st;
}

enum sx_status sx_h5_read_meta(struct sx_h5 *h5, const struct sx_run *run,
                               const struct sx_row *row, struct sx_buf *out, bool *any,
                               struct sx_error *err) {
    h5_enter(h5->path);
    enum sx_status st = h5_read_meta_impl(h5, run, row, out, any, err);
    h5_leave();
    return st;
}

enum sx_status sx_h5_read_metas(struct sx_h5 *h5, const struct sx_run *run,
                                const struct sx_row *const *rows, size_t n,
                                struct sx_buf *out, size_t *off, bool *any,
                                struct sx_error *err) {
    h5_enter(h5->path);
    enum sx_status st = h5_read_metas_impl(h5, run, rows, n, out, off, any, err);
    h5_leave();
    return st;
}

enum sx_status sx_h5_gpu_present(struct sx_h5 *h5, const struct sx_run *run,
                                 const struct sx_row *row, bool *present,
                                 struct sx_error *err) {
    h5_enter(h5->path);
    enum sx_status st = h5_gpu_present_impl(h5, run, row, present, err);
    h5_leave();
    return st;
}

enum sx_status sx_h5_load(const char *path, bool summary, struct sx_run **run,
                          struct sx_error *err) {
    h5_enter(path);
    enum sx_status st = h5_load_impl(path, summary, run, err);
    h5_leave();
    return st;
}

enum sx_status sx_h5_read_slices(struct sx_h5 *h5, const struct sx_run *run,
                                 struct sx_slice *s, size_t ns, struct sx_error *err) {
    h5_enter(h5->path);
    enum sx_status st = h5_read_slices_impl(h5, run, s, ns, err);
    h5_leave();
    return st;
}
