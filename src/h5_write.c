/* h5_write.c - write a run as a schema-3 HDF5 file in scope-profiler's layout: metadata,
 * names, the index, events, the finish */
#include "h5_write_prim.h"

#include "buf.h"
#include "fault.h"
#include "h5_util.h"
#include "json_value.h"
#include "json_write.h"
#include "mpi_util.h"
#include "out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_CHUNK 16384

/* Event column datasets under /events, by enum sx_col. */
static const char *const ev_names[SX_NCOLS] = {
    "start_deltas", "durations",  "gpu_durations", "call_ids",
    "parent_ids",   "thread_ids", "task_ids",      "await_ns"};

static int64_t fill_value(int c) { return c == SX_COL_AWAIT ? 0 : -1; }

static enum sx_status meta_attr(struct sx_h5w *w, hid_t g, const char *key,
                                const struct sx_value *v, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t tb = H5I_INVALID_HID;
    void *buf = NULL;
    const char *obj = "/metadata";

    switch (v->kind) {
    case SX_V_INT:
        return sx_h5w_attr_i64(w, g, obj, key, v->u.i, err);
    case SX_V_UINT:
        return sx_h5w_put_attr(w, g, obj, key, H5T_STD_U64LE, H5T_NATIVE_UINT64, -1,
                               &v->u.u, err);
    case SX_V_FLOAT:
        return sx_h5w_attr_f64(w, g, obj, key, v->u.f, err);
    case SX_V_NULL:
        /* h5py has no null; NaN reads back as null and keeps the key. */
        return sx_h5w_attr_f64(w, g, obj, key, NAN, err);
    case SX_V_STR:
        return sx_h5w_attr_str(w, g, obj, key, v->u.str.s, err);
    case SX_V_BOOL: {
        int8_t b = v->u.b ? 1 : 0;
        tb = sx_h5w_bool_type();
        H5OK(tb, obj, "create the bool type");
        st = sx_h5w_put_attr(w, g, obj, key, tb, tb, -1, &b, err);
        goto out;
    }
    case SX_V_ARRAY:
        break;
    default:
        SX_CHECK(false, SX_ERR_UNSUPPORTED, err, sx_h5w_src(w, obj),
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
                false, SX_ERR_UNSUPPORTED, err, sx_h5w_src(w, obj),
                "metadata '%s': nested containers cannot be stored as HDF5 attributes",
                key);
        }
    }
    SX_CHECK(nstr == 0 || nstr == n, SX_ERR_UNSUPPORTED, err, sx_h5w_src(w, obj),
             "metadata '%s': a list mixing strings and other values has no HDF5 form",
             key);
    SX_CHECK(nuint == 0 || nneg == 0, SX_ERR_UNSUPPORTED, err, sx_h5w_src(w, obj),
             "metadata '%s': a list mixing negative and uint64 values has no HDF5 form",
             key);
    /* One buffer for every element type: 8 bytes or a pointer each. */
    buf = sx_calloc(n ? n : 1, sizeof(int64_t) + sizeof(char *));
    SX_CHECK(buf != NULL, SX_ERR_NOMEM, err, sx_h5w_src(w, obj), "out of memory");
    if (n == 0 || nstr == n) {
        /* An empty list is stored as an empty string array (h5py's choice for []). */
        const char **p = buf;
        for (size_t i = 0; i < n; i++)
            p[i] = v->u.arr.items[i].u.str.s ? v->u.arr.items[i].u.str.s : "";
        st = sx_h5w_put_attr(w, g, obj, key, w->t_str, w->t_str, (long)n, p, err);
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
        st = sx_h5w_put_attr(w, g, obj, key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, (long)n,
                             d, err);
    } else if (nbool == n) {
        int8_t *b = buf;
        for (size_t i = 0; i < n; i++)
            b[i] = v->u.arr.items[i].u.b ? 1 : 0;
        tb = sx_h5w_bool_type();
        H5OK(tb, obj, "create the bool type");
        st = sx_h5w_put_attr(w, g, obj, key, tb, tb, (long)n, b, err);
    } else if (nuint > 0) {
        uint64_t *u = buf;
        for (size_t i = 0; i < n; i++) {
            const struct sx_value *it = &v->u.arr.items[i];
            u[i] = it->kind == SX_V_UINT  ? it->u.u
                   : it->kind == SX_V_INT ? (uint64_t)it->u.i
                                          : (uint64_t)it->u.b;
        }
        st = sx_h5w_put_attr(w, g, obj, key, H5T_STD_U64LE, H5T_NATIVE_UINT64, (long)n, u,
                             err);
    } else {
        int64_t *i64 = buf;
        for (size_t i = 0; i < n; i++) {
            const struct sx_value *it = &v->u.arr.items[i];
            i64[i] = it->kind == SX_V_INT ? it->u.i : (int64_t)it->u.b;
        }
        st = sx_h5w_put_attr(w, g, obj, key, H5T_STD_I64LE, H5T_NATIVE_INT64, (long)n,
                             i64, err);
    }
out:
    sx_h5w_close_id(&tb);
    free(buf);
    return st;
}

enum sx_status sx_h5w_metadata(struct sx_h5w *w, const struct sx_value *meta,
                               struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = H5I_INVALID_HID;
    struct h5_quiet q;

    sx_h5_quiet_begin(&q);
    SX_CHECK(!w->failed, SX_ERR_USAGE, err, sx_h5w_src(w, NULL),
             "writer used after a failure");
    if (meta == NULL || meta->kind == SX_V_NULL)
        goto out;
    SX_CHECK(meta->kind == SX_V_OBJECT, SX_ERR_USAGE, err, sx_h5w_src(w, "/metadata"),
             "metadata is not an object");
    g = H5Gopen2(w->file, "metadata", H5P_DEFAULT);
    H5OK(g, "/metadata", "open the group");
    for (size_t i = 0; i < meta->u.obj.n; i++) {
        const struct sx_member *m = &meta->u.obj.items[i];
        SX_CHECK(m->key != NULL && m->key[0] != '\0' && strlen(m->key) == m->key_len,
                 SX_ERR_UNSUPPORTED, err, sx_h5w_src(w, "/metadata"),
                 "metadata key %zu is empty or holds a NUL byte", i);
        st = meta_attr(w, g, m->key, &m->value, err);
        if (st != SX_OK)
            goto out;
    }
out:
    sx_h5w_close_id(&g);
    st = sx_h5w_agree(w, st, err);
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
    SX_CHECK(!w->failed && !w->names_done, SX_ERR_USAGE, err,
             sx_h5w_src(w, "/region_table"),
             "region names written twice or after a failure");
    g = H5Gopen2(w->file, "region_table", H5P_DEFAULT);
    H5OK(g, "/region_table", "open the group");
    st = sx_h5w_put_strs(w, g, "/region_table/names", "names", (const char *const *)names,
                         n, w->spec.fixed_strings, err);
    w->nnames = n;
out:
    sx_h5w_close_id(&g);
    st = sx_h5w_agree(w, st, err);
    w->names_done = st == SX_OK;
    sx_h5_quiet_end(&q);
    if (st != SX_OK)
        w->failed = true;
    return st;
}

/* ------------------------------------------------------------------ */
/* Index                                                              */

/* One aggregate value of 'row' by key; false when the row lacks it. */
bool sx_h5w_agg_get(const struct sx_row *row, const char *key, int64_t *v) {
    for (size_t i = 0; i < row->nagg; i++) {
        const struct sx_agg_field *f = &row->agg[i];
        if (strcmp(sx_agg_keys[f->key], key) != 0)
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
    /* Its space allocated now, where the stage writes it around HDF5
     * (h5_write_direct.h); the same without the stage, so that the file is the same
     * (parallel HDF5 allocates every dataset's space early anyway). */
    const bool direct = !chunked && w->stage != NULL;
    if (!chunked)
        H5OK(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY), obj,
             "set the allocation time");
    w->ev_space[c] = H5Screate_simple(1, &dim, &maxdim);
    H5OK(w->ev_space[c], obj, "create a dataspace");
    w->ev[c] = H5Dcreate2(g, ev_names[c], H5T_STD_I64LE, w->ev_space[c], H5P_DEFAULT,
                          dcpl, H5P_DEFAULT);
    H5OK(w->ev[c], obj, "create the dataset");
    if (direct) {
        haddr_t at = H5Dget_offset(w->ev[c]);
        if (at != HADDR_UNDEF && at > 0 && H5Dget_storage_size(w->ev[c]) == n * 8)
            w->ev_at[c] = (uint64_t)at;
    }
out:
    sx_h5w_close_id(&dcpl);
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
    SX_CHECK(fd >= 0, SX_ERR_IO, err, sx_h5w_src(w, NULL), "cannot write %s: %s", w->path,
             strerror(errno));
    e = posix_fallocate(fd, 0, (off_t)end);
    SX_CHECK(e == 0 || e == EINVAL || e == EOPNOTSUPP, SX_ERR_IO, err,
             sx_h5w_src(w, NULL), "cannot write %s: %s", w->path, strerror(e));
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
        SX_CHECK(sx_h5w_agg_get(rows[r], "count", &v) && v >= 0, SX_ERR_VALUE, err,
                 sx_h5w_src(w, obj), "aggregate row %zu has no call count", r);
        u64[r] = (uint64_t)v;
    }
    st = sx_h5w_put_1d(w, g, obj, "aggregate_counts", H5T_STD_U64LE, H5T_NATIVE_UINT64, n,
                       u64, err);
    for (size_t k = 0; k < 4 && st == SX_OK; k++) {
        for (size_t r = 0; r < n; r++) {
            int64_t total = 0;
            if (!sx_h5w_agg_get(rows[r], keys[k], &i64[r])) {
                /* A summary without "exclusive" means no child time: all of it. */
                SX_CHECK(k == 3 && sx_h5w_agg_get(rows[r], "total", &total), SX_ERR_VALUE,
                         err, sx_h5w_src(w, obj), "aggregate row %zu has no '%s'", r,
                         keys[k]);
                i64[r] = total;
            }
        }
        st = sx_h5w_put_1d(w, g, obj, dsets[k], H5T_STD_I64LE, H5T_NATIVE_INT64, n, i64,
                           err);
    }
    if (st != SX_OK)
        goto out;
    /* The per-event columns exist but stay empty (spec 1.4). */
    static const char *const empty_u64[] = {"event_offsets", "event_counts"};
    static const char *const empty_i64[] = {"source_lines", "exclusive_totals"};
    static const char *const empty_str[] = {"source_files", "source_texts", "tags",
                                            "event_metadata"};
    for (size_t k = 0; k < 2 && st == SX_OK; k++)
        st = sx_h5w_put_1d(w, g, obj, empty_u64[k], H5T_STD_U64LE, H5T_NATIVE_UINT64, 0,
                           NULL, err);
    for (size_t k = 0; k < 2 && st == SX_OK; k++)
        st = sx_h5w_put_1d(w, g, obj, empty_i64[k], H5T_STD_I64LE, H5T_NATIVE_INT64, 0,
                           NULL, err);
    for (size_t k = 0; k < 4 && st == SX_OK; k++)
        st =
            sx_h5w_put_strs(w, g, obj, empty_str[k], NULL, 0, w->spec.fixed_strings, err);
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
             sx_h5w_src(w, obj),
             "index written twice, before the region names, or after a failure");
    SX_CHECK(!w->collective || n <= INT_MAX, SX_ERR_UNSUPPORTED, err, sx_h5w_src(w, obj),
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
             SX_ERR_NOMEM, err, sx_h5w_src(w, obj), "out of memory");
    w->nrows = n;

    for (size_t r = 0; r < n; r++) {
        const struct sx_row *row = rows[r];
        SX_CHECK(row->region < w->nnames, SX_ERR_VALUE, err, sx_h5w_src(w, obj),
                 "row %zu names region %u of %zu", r, (unsigned)row->region, w->nnames);
        SX_CHECK(row->rank >= 0 && row->rank <= (int64_t)UINT32_MAX, SX_ERR_VALUE, err,
                 sx_h5w_src(w, obj), "row %zu has rank %lld, not a uint32", r,
                 (long long)row->rank);
        SX_CHECK(r == 0 || row->rank >= rows[r - 1]->rank, SX_ERR_USAGE, err,
                 sx_h5w_src(w, obj), "rows are not in ascending rank order (row %zu)", r);
        if (!w->spec.aggregate) {
            SX_CHECK(row->count <= UINT64_MAX - w->nevents, SX_ERR_VALUE, err,
                     sx_h5w_src(w, obj), "too many events");
            w->offset[r] = w->nevents;
            w->count[r] = row->count;
            w->nevents += row->count;
            w->exclusive[r] = row->has_exclusive ? row->exclusive_total : -1;
        }
    }
    for (size_t r = 0; r < n && !w->spec.aggregate; r++) {
        tags_json(&b, rows[r]);
        SX_CHECK(!b.failed, SX_ERR_NOMEM, err, sx_h5w_src(w, obj), "out of memory");
        ib->owned[r] = sx_strdup(b.data);
        SX_CHECK(ib->owned[r] != NULL, SX_ERR_NOMEM, err, sx_h5w_src(w, obj),
                 "out of memory");
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
    if ((st = sx_h5w_agree(w, st, err)) != SX_OK)
        goto out;
    /* NOTE: collective from here in the MPI-IO phase: every process creates every
     * dataset; sx_h5w_put_dset() lets rank 0 alone write the values. */
    g = H5Gopen2(w->file, "rank_region_index", H5P_DEFAULT);
    H5OK(g, obj, "open the group");
    for (size_t r = 0; r < n; r++)
        ib.u32[r] = rows[r]->region;
    st = sx_h5w_put_1d(w, g, obj, "region_ids", H5T_STD_U32LE, H5T_NATIVE_UINT32, n,
                       ib.u32, err);
    if (st != SX_OK)
        goto out;
    for (size_t r = 0; r < n; r++)
        ib.u32[r] = (uint32_t)rows[r]->rank;
    st = sx_h5w_put_1d(w, g, obj, "ranks", H5T_STD_U32LE, H5T_NATIVE_UINT32, n, ib.u32,
                       err);
    if (st != SX_OK)
        goto out;

    if (w->spec.aggregate) {
        st = index_aggregate(w, g, rows, n, ib.i64, err);
        if (st != SX_OK)
            goto out;
    } else {
        st = sx_h5w_put_1d(w, g, obj, "event_offsets", H5T_STD_U64LE, H5T_NATIVE_UINT64,
                           n, w->offset, err);
        if (st == SX_OK)
            st = sx_h5w_put_1d(w, g, obj, "event_counts", H5T_STD_U64LE,
                               H5T_NATIVE_UINT64, n, w->count, err);
        if (st != SX_OK)
            goto out;
        for (size_t r = 0; r < n; r++)
            ib.i64[r] = rows[r]->has_lineno ? rows[r]->source_lineno : -1;
        st = sx_h5w_put_1d(w, g, obj, "source_lines", H5T_STD_I64LE, H5T_NATIVE_INT64, n,
                           ib.i64, err);
        if (st != SX_OK)
            goto out;
        for (size_t r = 0; r < n; r++)
            ib.strs[r] = rows[r]->source_file;
        st = sx_h5w_put_strs(w, g, obj, "source_files", ib.strs, n, w->spec.fixed_strings,
                             err);
        if (st != SX_OK)
            goto out;
        for (size_t r = 0; r < n; r++)
            ib.strs[r] = rows[r]->source_text;
        st = sx_h5w_put_strs(w, g, obj, "source_texts", ib.strs, n, w->spec.fixed_strings,
                             err);
        if (st != SX_OK)
            goto out;
        st = sx_h5w_put_strs(w, g, obj, "tags", (const char *const *)ib.owned, n,
                             w->spec.fixed_strings, err);
        if (st != SX_OK)
            goto out;
        if (w->spec.meta) {
            for (size_t r = 0; r < n; r++)
                ib.strs[r] = rows[r]->meta_text ? rows[r]->meta_text : "[]";
            st = sx_h5w_put_strs(w, g, obj, "event_metadata", ib.strs, n,
                                 w->spec.fixed_strings, err);
            if (st != SX_OK)
                goto out;
        }
    }

    /* The event columns, at their final length (empty for the aggregate layout); the
     * serial writer over its own driver stages them (h5_write_direct.h) where it can:
     * without the memory for the stage, HDF5 writes them */
    if (!w->collective && w->out != NULL && w->vfd.driver >= 0 && !w->spec.aggregate &&
        w->nevents > 0 && sx_wstage_wanted())
        w->stage = sx_wstage_new(w->vfd.fd, &w->vfd.werr, 0, 0);
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
    sx_h5w_close_id(&ge);
    sx_h5w_close_id(&g);
    st = sx_h5w_agree(w, st, err);
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
             sx_h5w_src(w, "/rank_region_index/exclusive_totals"), "no index row %zu",
             row);
    w->exclusive[row] = ns < 0 ? -1 : ns;
    w->mine[row] = true;
out:
    return st;
}

/* ------------------------------------------------------------------ */
/* Events                                                             */

static enum sx_status events_prepare(struct sx_h5w *w, size_t row, uint64_t first,
                                     uint64_t n, const int64_t *const col[SX_NCOLS],
                                     struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct row_acc *a;

    SX_CHECK(!w->failed && w->index_done && !w->spec.aggregate, SX_ERR_USAGE, err,
             sx_h5w_src(w, "/events"),
             "events written before the index, after a failure, or "
             "into an aggregate file");
    if (n == 0 && w->collective)
        goto out; /* this process only joins the collective writes */
    SX_CHECK(row < w->nrows, SX_ERR_USAGE, err, sx_h5w_src(w, "/events"),
             "no index row %zu", row);
    a = &w->acc[row];
    SX_CHECK(first == a->n && n <= w->count[row] - first, SX_ERR_USAGE, err,
             sx_h5w_src(w, "/events"),
             "row %zu: events %llu..%llu out of order or beyond its %llu", row,
             (unsigned long long)first, (unsigned long long)(first + n),
             (unsigned long long)w->count[row]);
    SX_CHECK(n == 0 || (col[SX_COL_START] != NULL && col[SX_COL_END] != NULL),
             SX_ERR_USAGE, err, sx_h5w_src(w, "/events"),
             "row %zu: no start or end times", row);
    SX_CHECK(n <= (uint64_t)SIZE_MAX / sizeof(int64_t), SX_ERR_NOMEM, err,
             sx_h5w_src(w, "/events"), "out of memory");
    if (w->scratch_n < n) {
        int64_t *p = sx_realloc(w->scratch, (size_t)n * sizeof *p);
        SX_CHECK(p != NULL, SX_ERR_NOMEM, err, sx_h5w_src(w, "/events"), "out of memory");
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
    if ((st = sx_h5w_agree(w, st, err)) != SX_OK || (n == 0 && !w->collective))
        goto out;
    /* NOTE: collective from here in the MPI-IO phase: every process makes the same
     * H5Dwrite calls, one with an empty selection when it has no events (n = 0). */
    if (n > 0) {
        a = &w->acc[row];
        off = w->offset[row] + first;
        w->mine[row] = true;
    }
    const int64_t *s = col[SX_COL_START], *e = col[SX_COL_END];
    const int64_t *gpu = (w->spec.cols & SX_COLBIT(SX_COL_GPU)) ? col[SX_COL_GPU] : NULL;
    for (int c = 0; c < SX_NCOLS; c++) {
        const int64_t *data = &none;
        char obj[64];
        herr_t rc;
        if (w->ev[c] < 0)
            continue;
        snprintf(obj, sizeof obj, "/events/%s", ev_names[c]);
        if (n > 0) {
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
        }
        if (n > 0 && w->ev_at[c] != 0) {
            /* staged, written around HDF5 (h5_write_direct.h) */
            rc = sx_fault(SX_FAULT_WRITE, 0) ? -1 : 0;
            if (rc == 0)
                sx_wstage_put(w->stage, w->ev_at[c] + 8 * off, data, (size_t)n * 8);
        } else {
            rc = n == 0 ? H5Sselect_none(w->ev_space[c])
                        : H5Sselect_hyperslab(w->ev_space[c], H5S_SELECT_SET, &off, NULL,
                                              &cnt, NULL);
            if (rc >= 0 && mspace < 0) { /* the memory's dataspace, at the first write */
                mspace = H5Screate_simple(1, &cnt, NULL);
                rc = mspace < 0 || (n == 0 && H5Sselect_none(mspace) < 0) ? -1 : 0;
            }
            if (rc >= 0)
                rc = H5Dwrite(w->ev[c], H5T_NATIVE_INT64, mspace, w->ev_space[c],
                              w->collective ? w->dxpl : H5P_DEFAULT, data);
        }
        if (rc < 0 &&
            (st = sx_h5w_carry(w, sx_error_set(err, SX_ERR_IO, sx_h5w_src(w, obj),
                                               "cannot write events: %s",
                                               sx_h5w_detail(w)))) != SX_OK)
            goto out;
    }
    if (n == 0 || w->late != SX_OK)
        goto out;
    for (uint64_t i = 0; i < n; i++)
        sx_h5w_acc_add(a, s[i], (int64_t)((uint64_t)e[i] - (uint64_t)s[i]), gpu != NULL,
                       gpu ? gpu[i] : -1);
    a->prev_start = s[n - 1];
    if (first == 0 && n == w->count[row]) {
        a->exact = true;
        a->m2_exact = sx_h5w_pairwise_m2(s, e, n, (double)(int64_t)a->total / (double)n);
    }
out:
    sx_h5w_close_id(&mspace);
    st = sx_h5w_agree(w, st, err);
    sx_h5_quiet_end(&q);
    if (st != SX_OK)
        w->failed = true;
    return st;
}

static enum sx_status write_pending(struct sx_h5w *w, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t fapl = H5I_INVALID_HID, g = H5I_INVALID_HID;
    char obj[256]; /* leaves room for the path in sx_h5w_src() */
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
        st = sx_h5w_put_strs(w, g, obj, pd->name, (const char *const *)pd->strs, pd->n,
                             false, err);
        if (st != SX_OK)
            goto out;
        sx_h5w_close_id(&g);
    }
    rc = H5Fclose(w->file);
    w->file = H5I_INVALID_HID;
    H5OK(rc, NULL, "close the file");
out:
    sx_h5w_close_id(&g);
    sx_h5w_close_id(&fapl);
    return st;
}

/*
 * The whole file of an in-memory writer, as it would be on disk, written to
 * its output from HDF5's own buffer (the memory driver's handle is its
 * buffer): the file is then closed without a write that could fail: libhdf5
 * 1.10 leaves a file whose close failed (a full disk, a size limit) half
 * closed, and its exit handler then crashes on it, in a host process too.
 * H5Fget_file_image() would copy the buffer: the file's size twice in memory.
 */
static enum sx_status write_image(struct sx_h5w *w, struct sx_error *err) {
    enum sx_status st = SX_OK;
    void *handle = NULL;
    char *img = NULL;
    /* the superblock's end of file is written by a flush */
    H5OK(H5Fflush(w->file, H5F_SCOPE_GLOBAL), NULL, "flush the file");
    const ssize_t len = H5Fget_file_image(w->file, NULL, 0);
    H5OK(len, NULL, "read the file's image");
    H5OK(H5Fget_vfd_handle(w->file, H5P_DEFAULT, &handle), NULL, "read the file's image");
    SX_CHECK(handle != NULL && *(void **)handle != NULL, SX_ERR_INTERNAL, err,
             sx_h5w_src(w, NULL), "the memory driver gave no image");
    const unsigned char *mem = *(const unsigned char **)handle;
    if (len >= 24 && mem[8] <= 1) {
        /* a version 0 or 1 superblock: its consistency flags, set while the file is
         * open for writing, are 0 in the file as it is closed */
        unsigned char head[24];
        memcpy(head, mem, sizeof head);
        memset(head + 20, 0, 4);
        st = sx_out_write(w->out, (const char *)head, sizeof head, err);
        if (st == SX_OK)
            st = sx_out_write(w->out, (const char *)mem + sizeof head,
                              (size_t)len - sizeof head, err);
        goto out;
    }
    /* another superblock (a checksum over its flags): HDF5's own copy of the image */
    img = sx_malloc(len > 0 ? (size_t)len : 1);
    SX_CHECK(img != NULL, SX_ERR_NOMEM, err, sx_h5w_src(w, NULL), "out of memory");
    H5OK(H5Fget_file_image(w->file, img, (size_t)len), NULL, "read the file's image");
    st = sx_out_write(w->out, img, (size_t)len, err);
out:
    free(img);
    return st;
}

/*
 * The file HDF5 wrote through the writer's driver, made final before HDF5 closes
 * it: flushed, then frozen (HDF5's closing writes are dropped, the close cannot
 * fail), with what write_image() gives the memory driver's file: its length, and a
 * version 0 or 1 superblock's consistency flags 0. A write that failed on the way
 * is the writer's error now.
 */
static enum sx_status freeze_file(struct sx_h5w *w, struct sx_error *err) {
    enum sx_status st = SX_OK;
    char *img = NULL;
    struct sx_h5vfd *s = &w->vfd;
    H5OK(H5Fflush(w->file, H5F_SCOPE_GLOBAL), NULL, "flush the file");
    const ssize_t len = H5Fget_file_image(w->file, NULL, 0);
    H5OK(len, NULL, "read the file's length");
    s->frozen = true;
    unsigned char head[24];
    if (s->werr == 0 && len >= 24 && pread(s->fd, head, sizeof head, 0) == 24 &&
        head[8] <= 1) {
        static const unsigned char zero[4] = {0};
        if (pwrite(s->fd, zero, sizeof zero, 20) != 4)
            s->werr = errno ? errno : EIO;
    } else if (s->werr == 0) {
        /* another superblock (a checksum over its flags): HDF5's own image */
        img = sx_malloc(len > 0 ? (size_t)len : 1);
        SX_CHECK(img != NULL, SX_ERR_NOMEM, err, sx_h5w_src(w, NULL), "out of memory");
        H5OK(H5Fget_file_image(w->file, img, (size_t)len), NULL, "read the file's image");
        for (ssize_t at = 0; at < len && s->werr == 0;) {
            ssize_t k = pwrite(s->fd, img + at, (size_t)(len - at), (off_t)at);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                s->werr = k < 0 ? errno : EIO;
            else
                at += k;
        }
    }
    if (s->werr == 0 && ftruncate(s->fd, (off_t)len) != 0)
        s->werr = errno;
    SX_CHECK(s->werr == 0, SX_ERR_IO, err, sx_h5w_src(w, NULL), "cannot write %s: %s",
             w->path, strerror(s->werr));
    /* the fault tests' failed write of the output */
    st = sx_out_write(w->out, "", 0, err);
out:
    free(img);
    return st;
}

enum sx_status sx_h5w_finish(struct sx_h5w *w, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct h5_quiet q;
    bool quieted = false;
    herr_t rc;

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
    SX_CHECK(!w->failed, SX_ERR_USAGE, err, sx_h5w_src(w, NULL),
             "writer used after a failure");
    /* the staged events reach the file before HDF5 flushes or reads it */
    sx_wstage_flush(w->stage);
    if ((st = sx_h5w_write_stats(w, err)) != SX_OK)
        goto out;
    /* NOTE: collective in the MPI-IO phase: every process closes; failures are
     * carried to the agreement after the file is closed. */
    for (int c = 0; c < SX_NCOLS; c++) {
        sx_h5w_close_id(&w->ev_space[c]);
        if (w->ev[c] < 0)
            continue;
        rc = H5Dclose(w->ev[c]);
        w->ev[c] = H5I_INVALID_HID;
        if (rc < 0 &&
            (st = sx_h5w_carry(w, sx_error_set(err, SX_ERR_IO, sx_h5w_src(w, "/events"),
                                               "cannot close an event column: %s",
                                               sx_h5w_detail(w)))) != SX_OK)
            goto out;
    }
    sx_h5w_close_id(&w->dxpl);
    if (w->out != NULL &&
        (st = w->vfd.driver >= 0 ? freeze_file(w, err) : write_image(w, err)) != SX_OK)
        goto out;
    rc = H5Fclose(w->file);
    w->file = H5I_INVALID_HID;
    if (rc < 0 && (st = sx_h5w_carry(w, sx_error_set(err, SX_ERR_IO, sx_h5w_src(w, NULL),
                                                     "cannot close the file: %s",
                                                     sx_h5w_detail(w)))) != SX_OK)
        goto out;
    if ((st = sx_h5w_agree(w, st, err)) != SX_OK)
        goto out;
    if (w->rank == 0) {
        /* Serial from here: rank 0 writes what MPI-IO cannot, then publishes. */
        w->collective = false;
        st = write_pending(w, err);
        sx_h5w_close_id(&w->t_str);
        if (st == SX_OK && w->out != NULL) {
            st = sx_out_commit(w->out, err); /* releases it, on failure too */
            w->out = NULL;
        } else if (st == SX_OK && sx_tmp_commit(w->tmp, w->final) != 0)
            st = errno == EINTR
                     ? sx_error_set(err, SX_ERR_INTERRUPTED, sx_h5w_src(w, NULL),
                                    "interrupted by a signal; the file was not "
                                    "written")
                     : sx_error_set(err, SX_ERR_IO, sx_h5w_src(w, NULL),
                                    "cannot rename the temporary file into "
                                    "place: %s",
                                    strerror(errno));
        if (st == SX_OK) {
            free(w->tmp);
            w->tmp = NULL;
        }
    }
    w->collective = false;
    sx_h5w_close_id(&w->t_str);
    if (w->comm != MPI_COMM_NULL)
        st = sx_all_ok(w->comm, st, err); /* NOTE: collective */
out:
    if (quieted)
        sx_h5_quiet_end(&q);
    if (st != SX_OK)
        sx_h5w_abort(w);
    else
        sx_h5w_free_w(w);
    return st;
}
