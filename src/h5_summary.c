/* h5_summary.c - summary_statistics as aggregate rows, for --summary (read_h5_summary) */
#include "h5_reader.h"
#include "h5_util.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>

struct summary_stats {
    int64_t total, minimum, maximum, first, last, start_minimum, end_maximum;
    uint64_t gpu_count;
    int64_t gpu_total;
    double mean, m2;
};

enum sx_status sx_h5_read_summary(struct sx_h5 *h5, struct sx_run *run,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t d = -1, mt = -1;
    struct summary_stats *s = NULL;
    char src[1100];
    sx_h5_src_name(src, sizeof src, h5->path, "/rank_region_index/summary_statistics");
    d = H5Dopen2(h5->file, "rank_region_index/summary_statistics", H5P_DEFAULT);
    SX_CHECK(d >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
    int64_t n = sx_h5_dset_len(d);
    SX_CHECK(n >= 0 && (uint64_t)n == run->nrows, SX_ERR_FORMAT, err, src,
             "%s has %" PRId64 " rows but the index has %zu", src, n, run->nrows);
    st = sx_h5_check_claim(h5, d, (uint64_t)n, 88, src, err);
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
        int64_t iv[] = {0,        x->total,    x->minimum,       x->maximum,
                        x->first, x->last,     x->start_minimum, x->end_maximum,
                        0,        x->gpu_total};
        row->is_aggregate = true;
        row->event_data_available = false;
        SX_CHECK(sx_row_agg(row), SX_ERR_NOMEM, err, src, "out of memory");
        for (int k = 0; k < SX_AGG_NKEYS; k++) { /* every key, in its order */
            struct sx_agg_field *f = &row->agg[k];
            f->key = (uint8_t)k;
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
        row->nagg = SX_AGG_NKEYS;
    }
out:
    free(s);
    sx_h5_close_id(mt);
    sx_h5_close_id(d);
    return st;
}
