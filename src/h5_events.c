/* h5_events.c - event data of rows: slices of the event columns (batched), delta
 * decoding, event_metadata, the GPU column's presence */
#include "buf.h"
#include "h5_direct.h"
#include "h5_read.h"
#include "h5_reader.h"
#include "h5_util.h"
#include "json_parse.h"
#include "run.h"

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
    sx_h5_close_id(ms);
    sx_h5_close_id(fs);
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
    sx_h5_src_name(src, sizeof src, h5->path, row->group);
    g = H5Gopen2(h5->file, row->group, H5P_DEFAULT);
    SX_CHECK(g >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
    for (int c = 0; c < SX_NCOLS; c++) {
        if (!(cols & SX_COLBIT(c)) || !(row->cols & SX_COLBIT(c)))
            continue;
        char cs[1500];
        snprintf(cs, sizeof cs, "%s/%s", src, sx_h5_col_names[c]);
        d = H5Dopen2(g, sx_h5_col_names[c], H5P_DEFAULT);
        SX_CHECK(d >= 0, SX_ERR_FORMAT, err, cs, "%s cannot be opened", cs);
        st = sx_h5_local_data(d, cs, err);
        if (st == SX_OK)
            st = read_slab(d, first, n, out[c], cs, err);
        sx_h5_close_id(d);
        d = -1;
        if (st != SX_OK)
            goto out;
    }
out:
    sx_h5_close_id(d);
    sx_h5_close_id(g);
    return st;
}

static enum sx_status read_events(struct sx_h5 *h5, const struct sx_run *run,
                                  const struct sx_row *row, uint64_t first, uint64_t n,
                                  unsigned cols, int64_t *const out[SX_NCOLS],
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct h5_quiet q;
    char src[1100];
    sx_h5_quiet_begin(&q);
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
        sx_h5_src_name(src, sizeof src, h5->path, "/events/start_deltas");
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
            sx_h5_src_name(src, sizeof src, h5->path, "/events/durations");
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
        snprintf(obj, sizeof obj, "/events/%s", sx_h5_col_names[c]);
        sx_h5_src_name(src, sizeof src, h5->path, obj);
        st = read_slab(h5->ev[c], at, n, out[c], src, err);
        if (st != SX_OK)
            goto out;
    }
out:
    sx_h5_quiet_end(&q);
    return st;
}

/* The name of the event_metadata dataset of 'h5' in messages. */
static const char *meta_src(const struct sx_h5 *h5, char *buf, size_t n) {
    return sx_h5_src_name(buf, n, h5->path, "/rank_region_index/event_metadata");
}

/*
 * Row 'row''s stored event_metadata 'text' (len > 0) of 'h5' canonical, appended to
 * 'out': '*any' whether some dict of it is non-empty; a list of no entries appends
 * nothing. The dataset is named only in messages (a row is a few us). No HDF5 call: it
 * may run beside the file's reads.
 */
static enum sx_status canon_one(const struct sx_h5 *h5, const struct sx_row *row,
                                const char *text, size_t len, struct sx_buf *out,
                                bool *any, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const size_t at = out->len;
    uint64_t cnt = 0;
    char src[1100], where[1200];
    *any = false;
    st = sx_json_canon_meta(text, len, out, any, &cnt, err);
    if (st != SX_OK || (cnt != 0 && cnt != row->count))
        snprintf(where, sizeof where, "%s[%" PRIu64 "]", meta_src(h5, src, sizeof src),
                 row->file_row);
    if (st != SX_OK) {
        if (err != NULL && err->source[0] == '\0')
            snprintf(err->source, sizeof err->source, "%.500s", where);
        goto out;
    }
    SX_CHECK(cnt == 0 || cnt == row->count, SX_ERR_FORMAT, err, where,
             "%s: event metadata must match the call count (%" PRIu64
             " entries for %" PRIu64 " calls)",
             where, cnt, row->count);
    if (cnt == 0) {
        out->len = at;
        *any = false;
    }
out:
    return st;
}

static enum sx_status read_meta(struct sx_h5 *h5, const struct sx_run *run,
                                const struct sx_row *row, struct sx_buf *out, bool *any,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct h5_quiet q;
    hid_t fs = -1, ms = -1, t = -1, mt = -1;
    char *vl = NULL, *raw = NULL;
    char src[1100];
    sx_h5_quiet_begin(&q);
    *any = false;
    if (h5->meta < 0 || run->layout != SX_LAYOUT_COLUMNAR)
        goto out;
    meta_src(h5, src, sizeof src);
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
        st = sx_h5_vlen_guard_in(&h5->facts, h5->meta, ms, fs, src, err);
        if (st != SX_OK)
            goto out;
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
    st = canon_one(h5, row, text, len, out, any, err);
out:
    if (vl != NULL) {
        hsize_t one = 1;
        hid_t s1 = H5Screate_simple(1, &one, NULL);
        H5Dvlen_reclaim(mt, s1, H5P_DEFAULT, &vl);
        H5Sclose(s1);
    }
    free(raw);
    sx_h5_close_id(mt);
    sx_h5_close_id(t);
    sx_h5_close_id(ms);
    sx_h5_close_id(fs);
    sx_h5_quiet_end(&q);
    return st;
}

static enum sx_status read_metas(struct sx_h5 *h5, const struct sx_run *run,
                                 const struct sx_row *const *rows, size_t n, bool stored,
                                 struct sx_buf *out, size_t *off, bool *any,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct h5_quiet q;
    hsize_t *pts = NULL;
    size_t *roff = NULL;
    struct sx_buf raw = {0};
    char src[1100];
    sx_h5_quiet_begin(&q);
    sx_buf_reset(out);
    for (size_t k = 0; k <= n; k++)
        off[k] = 0;
    for (size_t k = 0; k < n; k++)
        any[k] = false;
    if (h5->meta < 0 || run->layout != SX_LAYOUT_COLUMNAR || n == 0)
        goto out;
    meta_src(h5, src, sizeof src);
    pts = sx_malloc(n * sizeof *pts);
    roff = stored ? off : sx_malloc((n + 1) * sizeof *roff);
    SX_CHECK(pts != NULL && roff != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t k = 0; k < n; k++)
        pts[k] = rows[k]->file_row;
    st = sx_direct_read_strings(h5->direct, &h5->meta_vlen, h5->meta, pts, 0, n,
                                stored ? out : &raw, roff, src, err);
    if (st != SX_OK || stored) {
        for (size_t k = 0; st == SX_OK && k < n; k++)
            any[k] = off[k + 1] > off[k];
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
        const size_t len = roff[k + 1] - roff[k];
        if (len > 0) {
            st = canon_one(h5, rows[k], raw.data + roff[k], len, out, &any[k], err);
            if (st != SX_OK)
                goto out;
        }
        off[k + 1] = out->len;
    }
    SX_CHECK(!out->failed, SX_ERR_NOMEM, err, src, "out of memory");
out:
    sx_buf_free(&raw);
    if (roff != off)
        free(roff);
    free(pts);
    sx_h5_quiet_end(&q);
    return st;
}

static enum sx_status gpu_present(struct sx_h5 *h5, const struct sx_run *run,
                                  const struct sx_row *row, bool *present,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    enum { PIECE = 1 << 16 };
    int64_t *buf = NULL;
    struct h5_quiet q;
    char src[1100];
    sx_h5_quiet_begin(&q);
    *present = false;
    if (run->layout != SX_LAYOUT_COLUMNAR || h5->ev[SX_COL_GPU] < 0 || row->is_aggregate)
        goto out;
    sx_h5_src_name(src, sizeof src, h5->path, "/events/gpu_durations");
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
    sx_h5_quiet_end(&q);
    return st;
}

/* ------------------------------------------------------------------ */
/* Batched slice reads                                                */

struct span {
    uint64_t start, n; /* file range */
    size_t slice;
};

/*
 * Sort 'sp[0 .. n)' by file offset. Spans come as a few ascending runs (a
 * block's rows of a region, rank after rank, then the next region's), so the
 * runs are merged, pairwise, until one is left; 'tmp' has room for 'n'.
 * Returns the sorted array: 'sp' or 'tmp'.
 */
static struct span *sort_spans(struct span *sp, struct span *tmp, size_t n) {
    bool sorted = true;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = sp[i - 1].start <= sp[i].start;
    while (!sorted) {
        /* one pass: merge runs 2k and 2k + 1 from 'sp' into 'tmp' */
        size_t i = 0, o = 0, runs = 0;
        while (i < n) {
            size_t a = i, m = i + 1;
            while (m < n && sp[m - 1].start <= sp[m].start)
                m++;
            size_t z = m;
            if (m < n) {
                z = m + 1;
                while (z < n && sp[z - 1].start <= sp[z].start)
                    z++;
            }
            size_t x = a, y = m;
            while (x < m && y < z)
                tmp[o++] = sp[y].start < sp[x].start ? sp[y++] : sp[x++];
            while (x < m)
                tmp[o++] = sp[x++];
            while (y < z)
                tmp[o++] = sp[y++];
            i = z;
            runs++;
        }
        struct span *t = sp;
        sp = tmp;
        tmp = t;
        sorted = runs == 1;
    }
    return sp;
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
 * One column of many slices: merge ranges closer than GAP events into
 * covering reads, select them with one OR-ed hyperslab, read once, and
 * scatter to the slices.
 */
static enum sx_status read_col_spans(struct sx_h5 *h5, hid_t d, struct span *sp,
                                     struct span *room, size_t n, struct sx_slice *s,
                                     int c, const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    enum { GAP = 4096 };
    hid_t fs = -1, ms = -1;
    int64_t *buf = NULL;
    sp = sort_spans(sp, room, n);
    if ((h5->raw[c].ok || h5->raw[c].zip) && h5->ev[c] == d) {
        SX_CHECK(
            sx_big_reserve(&h5->dspans_mem, (n + 1) * sizeof(struct sx_direct_span), 0),
            SX_ERR_NOMEM, err, src, "out of memory");
        struct sx_direct_span *ds = h5->dspans_mem.p;
        for (size_t k = 0; k < n; k++)
            ds[k] = (struct sx_direct_span){sp[k].start, sp[k].n, s[sp[k].slice].col[c]};
        st = h5->raw[c].ok
                 ? sx_direct_read_spans(h5->direct, &h5->raw[c], ds, n, src, err)
                 : sx_direct_read_zspans(h5->direct, &h5->raw[c], ds, n, src, err);
        if (st != SX_ERR_UNSUPPORTED)
            return st;
        h5->raw[c].zip = false; /* deflated chunks HDF5 is to read: from now on */
        st = SX_OK;
    }
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
    SX_CHECK(sx_big_reserve(&h5->scratch, total * sizeof *buf, 0), SX_ERR_NOMEM, err, src,
             "out of memory");
    buf = h5->scratch.p;
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
    sx_h5_close_id(ms);
    sx_h5_close_id(fs);
    return st;
}

static enum sx_status read_slices(struct sx_h5 *h5, const struct sx_run *run,
                                  struct sx_slice *s, size_t ns, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct h5_quiet q;
    struct span *sp = NULL;
    size_t *twin = NULL;
    int64_t *tmp = NULL;
    bool lent = false; /* END-only slices hold starts (tmp, or a twin's) */
    char src[1100];
    sx_h5_quiet_begin(&q);
    if (run->layout != SX_LAYOUT_COLUMNAR) {
        for (size_t i = 0; i < ns && st == SX_OK; i++) {
            /* schema 1: one dataset per row; the end column needs its own buffer */
            st = sx_h5_read_events(h5, run, s[i].row, s[i].first, s[i].n, s[i].cols,
                                   s[i].col, err);
        }
        goto out;
    }
    /*
     * Three passes over the slices (a read-ahead holds tens of thousands, more than the
     * caches): count each column's spans, make them, and after the reads make the
     * times of the deltas (and take back the starts lent to END-only slices).
     * Delta-encoded ends need the starts too. An END-only slice whose events the START
     * slice just before it reads too (a row's times, one after the other) takes that
     * slice's starts ('twin'); the others read their starts' deltas into temp room.
     */
    const bool delta = run->delta_encoded;
    const unsigned s_bit = SX_COLBIT(SX_COL_START), e_bit = SX_COLBIT(SX_COL_END);
    size_t count[SX_NCOLS] = {0}, base[SX_NCOLS], total = 0;
    uint64_t extra = 0;
    SX_CHECK(sx_big_reserve(&h5->twins_mem, (ns + 1) * sizeof *twin, 0), SX_ERR_NOMEM,
             err, h5->path, "out of memory");
    twin = h5->twins_mem.p;
    for (size_t i = 0; i < ns; i++) {
        const unsigned cols = s[i].cols;
        twin[i] = SIZE_MAX;
        if (s[i].n == 0)
            continue;
        for (int c = 0; c < SX_NCOLS; c++)
            count[c] += (cols >> c) & 1u;
        if (!delta || (cols & (s_bit | e_bit)) != e_bit)
            continue;
        for (size_t k = i - 1; k + 2 >= i && k < i && twin[i] == SIZE_MAX; k--)
            if ((s[k].cols & s_bit) && s[k].row == s[i].row && s[k].n == s[i].n &&
                s[k].first == s[i].first)
                twin[i] = k;
        if (twin[i] == SIZE_MAX) {
            count[SX_COL_START]++;
            extra += s[i].n;
        }
    }
    for (int c = 0; c < SX_NCOLS; c++) {
        base[c] = total;
        total += count[c];
    }
    /* the spans, and room to sort them */
    SX_CHECK(sx_big_reserve(&h5->spans_mem, (2 * total + 1) * sizeof *sp, 0),
             SX_ERR_NOMEM, err, h5->path, "out of memory");
    sp = h5->spans_mem.p;
    if (extra > 0) {
        SX_CHECK(sx_big_reserve(&h5->end_deltas, (extra + 1) * sizeof *tmp, 0),
                 SX_ERR_NOMEM, err, h5->path, "out of memory");
        tmp = h5->end_deltas.p;
    }
    size_t fill[SX_NCOLS];
    memcpy(fill, base, sizeof fill);
    uint64_t used = 0;
    for (size_t i = 0; i < ns; i++) {
        const unsigned cols = s[i].cols;
        if (s[i].n == 0)
            continue;
        const uint64_t at = s[i].row->offset + s[i].first;
        for (int c = 0; c < SX_NCOLS; c++)
            if ((cols >> c) & 1u)
                sp[fill[c]++] = (struct span){at, s[i].n, i};
        if (!delta || (cols & (s_bit | e_bit)) != e_bit)
            continue;
        lent = true;
        if (twin[i] != SIZE_MAX) {
            s[i].col[SX_COL_START] = s[twin[i]].col[SX_COL_START];
        } else {
            s[i].col[SX_COL_START] = tmp + used;
            used += s[i].n;
            sp[fill[SX_COL_START]++] = (struct span){at, s[i].n, i};
        }
    }
    for (int c = 0; c < SX_NCOLS; c++) {
        if (count[c] == 0 || h5->ev[c] < 0)
            continue;
        char obj[64];
        snprintf(obj, sizeof obj, "/events/%s",
                 delta && c == SX_COL_START ? "start_deltas"
                 : delta && c == SX_COL_END ? "durations"
                                            : sx_h5_col_names[c]);
        sx_h5_src_name(src, sizeof src, h5->path, obj);
        st = read_col_spans(h5, h5->ev[c], sp + base[c], sp + total + base[c], count[c],
                            s, c, src, err);
        if (st != SX_OK)
            goto out;
    }
    if (!delta)
        goto out;
    /* the times: starts from their deltas (a twin's before the END slice that takes
     * them), then ends from their starts */
    sx_h5_src_name(src, sizeof src, h5->path, "/events/start_deltas");
    for (size_t i = 0; i < ns; i++) {
        int64_t *v = s[i].col[SX_COL_START];
        const uint64_t m = s[i].n;
        if (v != NULL && m > 0 && twin[i] == SIZE_MAX && h5->ev[SX_COL_START] >= 0) {
            uint64_t prefix = 0;
            if (s[i].first > 0) {
                uint64_t from = 0, b = 0, sum = 0;
                ckpt_find(h5, s[i].row, s[i].first, &from, &b);
                st = sum_deltas(h5, s[i].row->offset + from,
                                s[i].row->offset + s[i].first, &sum, src, err);
                if (st != SX_OK)
                    goto out;
                prefix = b + sum;
            }
            uint64_t acc = prefix;
            for (uint64_t k = 0; k < m; k++) {
                acc += (uint64_t)v[k];
                v[k] = (int64_t)acc;
            }
            ckpt_add(h5, s[i].row, s[i].first + m, acc);
        }
        if ((s[i].cols & e_bit) && h5->ev[SX_COL_END] >= 0) {
            const int64_t *restrict st0 = s[i].col[SX_COL_START];
            int64_t *restrict e = s[i].col[SX_COL_END];
            for (uint64_t k = 0; k < m; k++)
                e[k] = (int64_t)((uint64_t)st0[k] + (uint64_t)e[k]);
        }
        if (!(s[i].cols & s_bit)) /* an END-only slice keeps no pointer into tmp */
            s[i].col[SX_COL_START] = NULL;
    }
    lent = false;
out:
    /* a failure on the way: the END-only slices lent starts let go of them */
    for (size_t i = 0; lent && i < ns; i++)
        if (!(s[i].cols & SX_COLBIT(SX_COL_START)))
            s[i].col[SX_COL_START] = NULL;
    sx_h5_quiet_end(&q);
    return st;
}

enum sx_status sx_h5_read_events(struct sx_h5 *h5, const struct sx_run *run,
                                 const struct sx_row *row, uint64_t first, uint64_t n,
                                 unsigned cols, int64_t *const out[SX_NCOLS],
                                 struct sx_error *err) {
    sx_h5_enter(h5->path);
    enum sx_status st = read_events(h5, run, row, first, n, cols, out, err);
    sx_h5_leave();
    return st;
}

enum sx_status sx_h5_read_meta(struct sx_h5 *h5, const struct sx_run *run,
                               const struct sx_row *row, struct sx_buf *out, bool *any,
                               struct sx_error *err) {
    sx_h5_enter(h5->path);
    enum sx_status st = read_meta(h5, run, row, out, any, err);
    sx_h5_leave();
    return st;
}

enum sx_status sx_h5_read_metas(struct sx_h5 *h5, const struct sx_run *run,
                                const struct sx_row *const *rows, size_t n, bool stored,
                                struct sx_buf *out, size_t *off, bool *any,
                                struct sx_error *err) {
    sx_h5_enter(h5->path);
    enum sx_status st = read_metas(h5, run, rows, n, stored, out, off, any, err);
    sx_h5_leave();
    return st;
}

enum sx_status sx_h5_canon_meta(const struct sx_h5 *h5, const struct sx_row *row,
                                const char *text, size_t len, struct sx_buf *out,
                                bool *any, struct sx_error *err) {
    char src[1100];
    *any = false;
    if (len == 0)
        return SX_OK;
    const enum sx_status st = canon_one(h5, row, text, len, out, any, err);
    return st == SX_OK && out->failed
               ? sx_error_set(err, SX_ERR_NOMEM, meta_src(h5, src, sizeof src),
                              "out of memory")
               : st;
}

enum sx_status sx_h5_gpu_present(struct sx_h5 *h5, const struct sx_run *run,
                                 const struct sx_row *row, bool *present,
                                 struct sx_error *err) {
    sx_h5_enter(h5->path);
    enum sx_status st = gpu_present(h5, run, row, present, err);
    sx_h5_leave();
    return st;
}

enum sx_status sx_h5_read_slices(struct sx_h5 *h5, const struct sx_run *run,
                                 struct sx_slice *s, size_t ns, struct sx_error *err) {
    sx_h5_enter(h5->path);
    enum sx_status st = read_slices(h5, run, s, ns, err);
    sx_h5_leave();
    return st;
}

static enum sx_status src_fill_rows(void *ctx, const struct sx_run *run,
                                    const struct sx_index_row *const *ix, size_t n,
                                    struct sx_row *out, struct sx_error *err) {
    return sx_h5_fill_rows(ctx, run, ix, n, out, err);
}

static enum sx_status src_hold_rows(void *ctx, const struct sx_run *run,
                                    const uint8_t *want, struct sx_error *err) {
    return sx_h5_hold_rows(ctx, run, want, err);
}

static enum sx_status src_read_metas(void *ctx, const struct sx_run *run,
                                     const struct sx_row *const *rows, size_t n,
                                     bool stored, struct sx_buf *out, size_t *off,
                                     bool *any, struct sx_error *err) {
    return sx_h5_read_metas(ctx, run, rows, n, stored, out, off, any, err);
}

static enum sx_status src_canon_meta(const void *ctx, const struct sx_row *row,
                                     const char *text, size_t len, struct sx_buf *out,
                                     bool *any, struct sx_error *err) {
    return sx_h5_canon_meta(ctx, row, text, len, out, any, err);
}

static enum sx_status src_read_slices(void *ctx, const struct sx_run *run,
                                      struct sx_slice *s, size_t ns,
                                      struct sx_error *err) {
    return sx_h5_read_slices(ctx, run, s, ns, err);
}

struct sx_event_source sx_h5_event_source(struct sx_h5 *h5) {
    static const struct sx_event_ops ops = {.fill_rows = src_fill_rows,
                                            .hold_rows = src_hold_rows,
                                            .read_metas = src_read_metas,
                                            .canon_meta = src_canon_meta,
                                            .read_slices = src_read_slices};
    if (h5 == NULL)
        return (struct sx_event_source){NULL, NULL};
    return (struct sx_event_source){&ops, h5};
}

void sx_h5_events_later(const struct sx_h5 *h5, const struct sx_run *run,
                        struct sx_direct_later *out) {
    memset(out, 0, sizeof *out);
    if (!run->delta_encoded && h5->ev[SX_COL_START] >= 0 && h5->ev[SX_COL_END] >= 0)
        sx_direct_later_init(h5->direct, &h5->raw[SX_COL_START], &h5->raw[SX_COL_END],
                             out);
}
