/* h5_summary.c - summary_statistics as aggregate rows, for --summary (read_h5_summary) */
#include "h5_reader.h"
#include "h5_util.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* A row of summary_statistics as read: its fields, all of 8 bytes, in the file's order.
 */
struct stat_rec {
    int64_t total, minimum, maximum, first, last, start_minimum, end_maximum;
    uint64_t gpu_count;
    int64_t gpu_total;
    double mean, m2;
};

/* A row held by a lazy summary: its statistics, source line and exclusive time (-1:
 * none). */
struct sx_h5_sum {
    struct stat_rec s;
    int64_t line, excl;
};

static const char STATS[] = "rank_region_index/summary_statistics";

/* The memory type of a stat_rec, or < 0. */
static hid_t stat_type(void) {
    hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(struct stat_rec));
    if (mt < 0)
        return mt;
#define FIELD(name, type) H5Tinsert(mt, #name, offsetof(struct stat_rec, name), type)
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
    return mt;
}

/* summary_statistics opened and checked as to size: its rows in *n. */
static enum sx_status open_stats(struct sx_h5 *h5, hid_t *d, uint64_t *n, const char *src,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    *d = H5Dopen2(h5->file, STATS, H5P_DEFAULT);
    SX_CHECK(*d >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
    int64_t len = sx_h5_dset_len(*d);
    SX_CHECK(len >= 0, SX_ERR_FORMAT, err, src, "%s is not one-dimensional", src);
    *n = (uint64_t)len;
    st = sx_h5_check_claim(h5, *d, *n, 88, src, err);
out:
    return st;
}

/* Rows [first, first + n) of 1-D dataset 'd' as memory type 'mt' into 'buf'. */
static enum sx_status read_range(hid_t d, hid_t mt, uint64_t first, size_t n, void *buf,
                                 const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hsize_t at = first, count = n;
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &count, NULL);
    SX_CHECK(fs >= 0 && ms >= 0, SX_ERR_IO, err, src, "%s: dataspace error", src);
    SX_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at, NULL, &count, NULL) >= 0,
             SX_ERR_FORMAT, err, src, "%s: rows out of range", src);
    SX_CHECK(H5Dread(d, mt, ms, fs, H5P_DEFAULT, buf) >= 0, SX_ERR_IO, err, src,
             "%s cannot be read; the file is truncated or damaged", src);
out:
    sx_h5_close_id(ms);
    sx_h5_close_id(fs);
    return st;
}

/* Row 'row' (its count and exclusive time set) made the aggregate row of statistics x. */
static bool sum_row(struct sx_row *row, const struct stat_rec *x) {
    const int64_t iv[] = {0,        x->total,    x->minimum,       x->maximum,
                          x->first, x->last,     x->start_minimum, x->end_maximum,
                          0,        x->gpu_total};
    row->is_aggregate = true;
    row->event_data_available = false;
    if (!sx_row_agg(row))
        return false;
    for (int k = 0; k < SX_AGG_NKEYS; k++) { /* every key, in its order */
        struct sx_agg_field *f = &row->agg[k];
        f->key = (uint8_t)k;
        if (k == SX_AGG_COUNT) {
            f->is_unsigned = true;
            f->u = row->count;
        } else if (k == SX_AGG_GPU_COUNT) {
            f->is_unsigned = true;
            f->u = x->gpu_count;
        } else if (k == SX_AGG_MEAN || k == SX_AGG_M2) {
            f->is_float = true;
            f->f = k == SX_AGG_MEAN ? x->mean : x->m2;
        } else if (k == SX_AGG_EXCLUSIVE) {
            f->i = row->has_exclusive ? row->exclusive_total : x->total;
        } else {
            f->i = iv[k];
        }
    }
    row->nagg = SX_AGG_NKEYS;
    return true;
}

enum sx_status sx_h5_read_summary(struct sx_h5 *h5, struct sx_run *run,
                                  struct sx_error *err) {
    hid_t d = -1;
    char src[1100];
    sx_h5_src_name(src, sizeof src, h5->path, STATS);
    enum sx_status st = open_stats(h5, &d, &h5->nsum, src, err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(h5->nsum == run->nrows, SX_ERR_FORMAT, err, src,
             "%s has %" PRIu64 " rows but the index has %zu", src, h5->nsum, run->nrows);
    /* made as a lazy summary's rows are; their lines and exclusive times, read with
     * them, stay (the held ones are -1 when h5->rd is not open, or the same values) */
    st = sx_h5_hold_summary(h5, NULL, err);
    if (st == SX_OK)
        st = sx_h5_summary_rows(h5, run->rows, run->nrows, err);
out:
    sx_h5_summary_free(h5);
    sx_h5_close_id(d);
    return st;
}

enum sx_status sx_h5_open_summary(struct sx_h5 *h5, const struct sx_run *run,
                                  struct sx_error *err) {
    hid_t d = -1;
    char src[1100];
    sx_h5_src_name(src, sizeof src, h5->path, STATS);
    enum sx_status st = open_stats(h5, &d, &h5->nsum, src, err);
    if (st != SX_OK)
        goto out;
    /* the ranks that read no index have the same file: rank 0's check is theirs */
    SX_CHECK(h5->open_only || h5->nsum == run->nindex, SX_ERR_FORMAT, err, src,
             "%s has %" PRIu64 " rows but the index has %zu", src, h5->nsum, run->nindex);
out:
    sx_h5_close_id(d);
    return st;
}

void sx_h5_summary_free(struct sx_h5 *h5) {
    free(h5->sum);
    free(h5->sum_slot);
    h5->sum = NULL;
    h5->sum_slot = NULL;
}

/* Rows of summary_statistics (and of the lines and exclusive times) one read takes. */
enum { HOLD_ROWS = 1 << 15 };

enum sx_status sx_h5_hold_summary(struct sx_h5 *h5, const uint8_t *want,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t d = -1, mt = -1;
    struct stat_rec *buf = NULL;
    int64_t *iv[2] = {NULL, NULL};
    char src[1100], isrc[2][1100];
    uint64_t n = 0, m = 0;
    sx_h5_src_name(src, sizeof src, h5->path, STATS);
    sx_h5_summary_free(h5);
    st = open_stats(h5, &d, &n, src, err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(n == h5->nsum, SX_ERR_FORMAT, err, src, "%s changed length while open", src);
    for (uint64_t r = 0; r < n; r++)
        m += want == NULL || want[r];
    if (m == n) /* all of them (one process): by file row, without the slots' lookup */
        want = NULL;
    mt = stat_type();
    SX_CHECK(mt >= 0, SX_ERR_INTERNAL, err, src, "%s: H5Tcreate failed", src);
    buf = sx_malloc(HOLD_ROWS * sizeof *buf);
    h5->sum = sx_malloc((m + 1) * sizeof *h5->sum);
    if (want != NULL)
        h5->sum_slot = sx_calloc(n + 1, sizeof *h5->sum_slot);
    SX_CHECK(buf != NULL && h5->sum != NULL && (want == NULL || h5->sum_slot != NULL),
             SX_ERR_NOMEM, err, src, "out of memory");
    for (int c = 0; c < 2; c++) {
        const int rd = c == 0 ? RD_LINES : RD_EXCL;
        char obj[128];
        snprintf(obj, sizeof obj, "rank_region_index/%s", sx_h5_rd_names[rd]);
        sx_h5_src_name(isrc[c], sizeof isrc[c], h5->path, obj);
        if (h5->rd[rd] >= 0) {
            iv[c] = sx_malloc(HOLD_ROWS * sizeof *iv[c]);
            SX_CHECK(iv[c] != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        }
    }
    /* in file order, a read at a time: each record is kept where it is wanted */
    uint64_t k = 0;
    for (uint64_t at = 0; at < n; at += HOLD_ROWS) {
        const size_t q = n - at < HOLD_ROWS ? (size_t)(n - at) : HOLD_ROWS;
        st = read_range(d, mt, at, q, buf, src, err);
        for (int c = 0; c < 2 && st == SX_OK; c++)
            if (iv[c] != NULL)
                st = read_range(h5->rd[c == 0 ? RD_LINES : RD_EXCL], H5T_NATIVE_INT64, at,
                                q, iv[c], isrc[c], err);
        if (st != SX_OK)
            goto out;
        for (size_t i = 0; i < q; i++) {
            if (want != NULL && !want[at + i])
                continue;
            h5->sum[k] = (struct sx_h5_sum){buf[i], iv[0] != NULL ? iv[0][i] : -1,
                                            iv[1] != NULL ? iv[1][i] : -1};
            if (want != NULL)
                h5->sum_slot[at + i] = (uint32_t)(k + 1);
            k++;
        }
    }
out:
    if (st != SX_OK)
        sx_h5_summary_free(h5);
    free(buf);
    free(iv[0]);
    free(iv[1]);
    sx_h5_close_id(mt);
    sx_h5_close_id(d);
    return st;
}

/* The record held of file row 'r', or NULL: not held. */
static const struct sx_h5_sum *held(const struct sx_h5 *h5, uint64_t r) {
    if (r >= h5->nsum)
        return NULL;
    if (h5->sum_slot == NULL)
        return &h5->sum[r];
    return h5->sum_slot[r] > 0 ? &h5->sum[h5->sum_slot[r] - 1] : NULL;
}

enum sx_status sx_h5_summary_rows(struct sx_h5 *h5, struct sx_row *rows, size_t n,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    char src[1100];
    sx_h5_src_name(src, sizeof src, h5->path, STATS);
    if (h5->sum == NULL) { /* no rows claimed (sx_h5_hold_summary): hold them all */
        st = sx_h5_hold_summary(h5, NULL, err);
        if (st != SX_OK)
            goto out;
    }
    /* the rows lie in the file rank by rank, and come region by region: each record a
     * miss of every cache, asked for SUM_AHEAD rows before it is read (its two lines) */
    enum { SUM_AHEAD = 8 };
    for (size_t k = 0; k < n; k++) {
        const struct sx_h5_sum *next =
            k + SUM_AHEAD < n ? held(h5, rows[k + SUM_AHEAD].file_row) : NULL;
        if (next != NULL) {
            __builtin_prefetch(next);
            __builtin_prefetch((const char *)next + sizeof *next - 1);
        }
        const struct sx_h5_sum *x = held(h5, rows[k].file_row);
        SX_CHECK(x != NULL, SX_ERR_INTERNAL, err, src,
                 "%s: row %" PRIu64 " of the index was not held for this process", src,
                 rows[k].file_row);
        if (x->line >= 0) {
            rows[k].has_lineno = true;
            rows[k].source_lineno = x->line;
        }
        if (x->excl >= 0) {
            rows[k].has_exclusive = true;
            rows[k].exclusive_total = x->excl;
        }
        SX_CHECK(sum_row(&rows[k], &x->s), SX_ERR_NOMEM, err, src, "out of memory");
    }
out:
    return st;
}
