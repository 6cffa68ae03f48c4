/* h5_index.c - open and close a run; its columnar index read (lazy or full); a lazy
 * run's rows filled by index entry */
#define _GNU_SOURCE /* qsort_r: the sort context per call, not in a global */
#include "h5_direct.h"
#include "h5_direct_heap.h"
#include "h5_read.h"
#include "h5_reader.h"
#include "h5_util.h"
#include "json_parse.h"
#include "json_value.h"
#include "json_write.h"
#include "mpi_util.h"
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
    sx_h5_free_strv(ix->files, ix->n_files);
    sx_h5_free_strv(ix->texts, ix->n_texts);
    sx_h5_free_strv(ix->tags, ix->n_tags);
}

static int cmp_rows(const void *a, const void *b, void *ctx) {
    const int64_t *sort_offsets = ctx;
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    uint64_t ox = (uint64_t)sort_offsets[x], oy = (uint64_t)sort_offsets[y];
    if (ox != oy)
        return ox < oy ? -1 : 1;
    return x < y ? -1 : x > y; /* stable: by row */
}

static int cmp_name_ids(const void *a, const void *b, void *ctx) {
    char *const *sort_names = ctx;
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
    qsort_r(order, n, sizeof *order, cmp_name_ids, (void *)names);
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
    sx_h5_src_name(src, sizeof src, h5->path, "/rank_region_index");
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
    qsort_r(order, ix->n, sizeof *order, cmp_rows, (void *)ix->offsets);
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

/* Open the event columns and check they are integer columns the file can hold. */
static enum sx_status open_events(struct sx_h5 *h5, struct sx_run *run, uint64_t need,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t t = -1;
    char src[1100];
    run->delta_encoded = sx_h5_has_link(h5, h5->file, "events/start_deltas");
    const char *names[SX_NCOLS];
    for (int c = 0; c < SX_NCOLS; c++)
        names[c] = sx_h5_col_names[c];
    if (run->delta_encoded) {
        names[SX_COL_START] = "start_deltas";
        names[SX_COL_END] = "durations";
    }
    run->nevents = UINT64_MAX;
    for (int c = 0; c < SX_NCOLS; c++) {
        char path[128];
        snprintf(path, sizeof path, "events/%s", names[c]);
        sx_h5_src_name(src, sizeof src, h5->path, path);
        if (!sx_h5_has_link(h5, h5->file, path)) {
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
        int64_t n = sx_h5_dset_len(h5->ev[c]);
        SX_CHECK(n >= 0, SX_ERR_FORMAT, err, src, "%s is not one-dimensional", src);
        /* one copy of the creation properties for the check and the raw view */
        hid_t dcpl = H5Dget_create_plist(h5->ev[c]);
        st = sx_h5_check_claim_dcpl(h5, dcpl, (uint64_t)n, H5Tget_size(t), src, err);
        if (st == SX_OK)
            sx_direct_int_col_dcpl(h5->direct, h5->ev[c], t, dcpl, &h5->raw[c]);
        sx_h5_close_id(dcpl);
        if (st != SX_OK)
            goto out;
        sx_h5_close_id(t);
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
    sx_h5_close_id(t);
    return st;
}

/*
 * File row 'r' of string column 'c' (RD_FILES..RD_TAGS) into 'row', borrowed from the
 * column's pool ("" is None, as the full read has it); tags are parsed the first time a
 * row needs them, once a distinct string. 'src' names the column.
 */
static enum sx_status pool_string(struct sx_h5 *h5, int c, uint64_t r, struct sx_row *row,
                                  const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct pool *pl = &h5->pool[c];
    const uint32_t id = pl->id[r];
    if (id == 0)
        return SX_OK;
    const char *p = pl->s[id - 1];
    if (c == RD_FILES) {
        row->source_file = (char *)p;
        return SX_OK;
    }
    if (c == RD_TEXTS) {
        row->source_text = (char *)p;
        return SX_OK;
    }
    if (pl->tags == NULL) {
        pl->tags = sx_calloc(pl->n, sizeof *pl->tags);
        pl->ntags = sx_calloc(pl->n, sizeof *pl->ntags);
        if (pl->tags == NULL || pl->ntags == NULL) {
            free(pl->tags);
            free(pl->ntags);
            pl->tags = NULL;
            pl->ntags = NULL;
        }
        SX_CHECK(pl->tags != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    }
    if (pl->ntags[id - 1] == 0) {
        size_t nt = 0;
        char where[1200];
        snprintf(where, sizeof where, "%.1100s row %" PRIu64, src, r);
        st = sx_json_parse_tags(p, strlen(p), where, &pl->tags[id - 1], &nt, err);
        if (st != SX_OK)
            goto out;
        pl->ntags[id - 1] = nt + 1;
    }
    row->tags = pl->tags[id - 1];
    row->ntags = pl->ntags[id - 1] - 1;
out:
    return st;
}

/* Open the per-row index columns a lazy run reads later, checked as the full read does.
 */
static enum sx_status open_lazy_cols(struct sx_h5 *h5, uint64_t nrows,
                                     struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t t = -1;
    char src[1100];
    /* the string columns' pools, read together after the loop */
    char names[RD_TAGS + 1][1100];
    const char *pnames[RD_TAGS + 1];
    hid_t pd[RD_TAGS + 1];
    struct pool *pp[RD_TAGS + 1];
    int np = 0;
    for (int k = 0; k < RD_N; k++) {
        char p[128];
        snprintf(p, sizeof p, "rank_region_index/%s", sx_h5_rd_names[k]);
        if (!sx_h5_has_link(h5, h5->file, p))
            continue;
        sx_h5_src_name(src, sizeof src, h5->path, p);
        h5->rd[k] = H5Dopen2(h5->file, p, H5P_DEFAULT);
        SX_CHECK(h5->rd[k] >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
        t = H5Dget_type(h5->rd[k]);
        bool strings = k <= RD_TAGS;
        SX_CHECK(t >= 0 && H5Tget_class(t) == (strings ? H5T_STRING : H5T_INTEGER),
                 SX_ERR_FORMAT, err, src, "%s has the wrong datatype: %s expected", src,
                 strings ? "strings" : "integers");
        int64_t n = sx_h5_dset_len(h5->rd[k]);
        SX_CHECK(n >= 0, SX_ERR_FORMAT, err, src, "%s is not one-dimensional", src);
        hid_t dcpl = H5Dget_create_plist(h5->rd[k]);
        st = sx_h5_check_claim_dcpl(
            h5, dcpl, (uint64_t)n,
            strings && H5Tis_variable_str(t) > 0 ? 16 : H5Tget_size(t), src, err);
        if (st == SX_OK && !strings)
            sx_direct_int_col_dcpl(h5->direct, h5->rd[k], t, dcpl, &h5->rdraw[k]);
        sx_h5_close_id(dcpl);
        if (st == SX_OK)
            st = sx_h5_req_len(h5, p, (uint64_t)n, nrows, err);
        if (st == SX_OK && strings && !h5->open_only) {
            snprintf(names[np], sizeof names[np], "%s", src);
            pnames[np] = names[np];
            pd[np] = h5->rd[k];
            pp[np++] = &h5->pool[k];
        }
        if (st != SX_OK)
            goto out;
        sx_h5_close_id(t);
        t = -1;
    }
    st = sx_h5_read_pools(h5->direct, pd, np, nrows, pp, pnames, err);
out:
    sx_h5_close_id(t);
    return st;
}

/* Open rank_region_index/event_metadata, if the run has it, for reads by row. */
static enum sx_status open_meta(struct sx_h5 *h5, struct sx_run *run, uint64_t nrows,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    char src[1100];
    if (!sx_h5_has_link(h5, h5->file, "rank_region_index/event_metadata"))
        return SX_OK;
    h5->meta = H5Dopen2(h5->file, "rank_region_index/event_metadata", H5P_DEFAULT);
    sx_h5_src_name(src, sizeof src, h5->path, "/rank_region_index/event_metadata");
    SX_CHECK(h5->meta >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
    st = sx_h5_local_data(h5->meta, src, err);
    if (st != SX_OK)
        goto out;
    int64_t nm = sx_h5_dset_len(h5->meta);
    hid_t mt = H5Dget_type(h5->meta);
    bool is_str = mt >= 0 && H5Tget_class(mt) == H5T_STRING;
    sx_h5_close_id(mt);
    SX_CHECK(is_str, SX_ERR_FORMAT, err, src,
             "%s has the wrong datatype: strings expected", src);
    st = sx_h5_req_len(h5, "/rank_region_index/event_metadata",
                       (uint64_t)(nm < 0 ? 0 : nm), nrows, err);
    if (st == SX_OK)
        st = sx_direct_strings_open(h5->direct, h5->meta, src, &h5->meta_vlen, err);
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

    if (sx_h5_has_link(h5, h5->file, "region_table/names")) {
        st = sx_h5_read_strings(h5, h5->file, "region_table/names", &names, &nnames, err);
        if (st != SX_OK)
            goto out;
    }
    run->names = names;
    run->nnames = (size_t)nnames;
    names = NULL;

    sx_h5_src_name(src, sizeof src, h5->path, "/rank_region_index");
    if (!sx_h5_has_link(h5, h5->file, "rank_region_index")) {
        SX_CHECK(run->nnames == 0, SX_ERR_FORMAT, err, src,
                 "%s is missing: the file is not a scope-profiler run", src);
        goto out;
    }
    g = H5Gopen2(h5->file, "rank_region_index", H5P_DEFAULT);
    SX_CHECK(g >= 0, SX_ERR_FORMAT, err, src, "%s is not a group", src);
    if (h5->open_only) {
        /* rank 0 reads and checks the rows and shares them (share_index) */
        hid_t d = H5Dopen2(h5->file, "rank_region_index/region_ids", H5P_DEFAULT);
        int64_t n = d >= 0 ? sx_h5_dset_len(d) : -1;
        sx_h5_close_id(d);
        SX_CHECK(n >= 0, SX_ERR_FORMAT, err, src, "%s/region_ids cannot be opened", src);
        ix.n = (uint64_t)n;
        st = open_lazy_cols(h5, ix.n, err);
        if (st == SX_OK)
            st = open_meta(h5, run, ix.n, err);
        if (st == SX_OK)
            st = open_events(h5, run, 0, err);
        goto out;
    }
    st = sx_h5_read_ints(h5, h5->file, "rank_region_index/region_ids", false,
                         &ix.region_ids, &ix.n, err);
    if (st != SX_OK)
        goto out;
    st = sx_h5_read_ints(h5, h5->file, "rank_region_index/ranks", false, &ix.ranks, &n2,
                         err);
    if (st == SX_OK)
        st = sx_h5_req_len(h5, "/rank_region_index/ranks", n2, ix.n, err);
    if (st != SX_OK)
        goto out;

    if (agg) {
        static const char *const an[5] = {"aggregate_counts", "aggregate_totals",
                                          "aggregate_minimums", "aggregate_maximums",
                                          "aggregate_exclusives"};
        for (int k = 0; k < 5; k++) {
            char p[128];
            snprintf(p, sizeof p, "rank_region_index/%s", an[k]);
            st = sx_h5_read_ints(h5, h5->file, p, k == 0, &acols[k], &n2, err);
            if (st == SX_OK)
                st = sx_h5_req_len(h5, p, n2, ix.n, err);
            if (st != SX_OK)
                goto out;
        }
    } else {
        st = sx_h5_read_ints(h5, h5->file, "rank_region_index/event_offsets", true,
                             &ix.offsets, &n2, err);
        if (st == SX_OK)
            st = sx_h5_req_len(h5, "/rank_region_index/event_offsets", n2, ix.n, err);
        if (st == SX_OK)
            st = sx_h5_read_ints(h5, h5->file, "rank_region_index/event_counts", true,
                                 &ix.counts, &n2, err);
        if (st == SX_OK)
            st = sx_h5_req_len(h5, "/rank_region_index/event_counts", n2, ix.n, err);
        if (st != SX_OK)
            goto out;
        if (h5->lazy) {
            st = open_lazy_cols(h5, ix.n, err);
            if (st != SX_OK)
                goto out;
        } else {
            if (sx_h5_has_link(h5, h5->file, "rank_region_index/source_lines")) {
                st = sx_h5_read_ints(h5, h5->file, "rank_region_index/source_lines",
                                     false, &ix.lines, &ix.n_lines, err);
                if (st == SX_OK)
                    st = sx_h5_req_len(h5, "/rank_region_index/source_lines", ix.n_lines,
                                       ix.n, err);
                if (st != SX_OK)
                    goto out;
                ix.has_lines = true;
            }
            if (sx_h5_has_link(h5, h5->file, "rank_region_index/exclusive_totals")) {
                st = sx_h5_read_ints(h5, h5->file, "rank_region_index/exclusive_totals",
                                     false, &ix.excl, &ix.n_excl, err);
                if (st == SX_OK)
                    st = sx_h5_req_len(h5, "/rank_region_index/exclusive_totals",
                                       ix.n_excl, ix.n, err);
                if (st != SX_OK)
                    goto out;
                ix.has_excl = true;
            }
            if (h5->borrow) {
                /* rows that borrow: the string columns in pools, each string once */
                st = open_lazy_cols(h5, ix.n, err);
                if (st != SX_OK)
                    goto out;
            } else {
                char ***sv[RD_TAGS + 1] = {
                    [RD_FILES] = &ix.files, [RD_TEXTS] = &ix.texts, [RD_TAGS] = &ix.tags};
                uint64_t *sc[RD_TAGS + 1] = {[RD_FILES] = &ix.n_files,
                                             [RD_TEXTS] = &ix.n_texts,
                                             [RD_TAGS] = &ix.n_tags};
                for (int k = RD_FILES; k <= RD_TAGS; k++) {
                    char p[128];
                    snprintf(p, sizeof p, "rank_region_index/%s", sx_h5_rd_names[k]);
                    if (!sx_h5_has_link(h5, h5->file, p))
                        continue;
                    st = sx_h5_read_strings(h5, h5->file, p, sv[k], sc[k], err);
                    if (st == SX_OK)
                        st = sx_h5_req_len(h5, p, *sc[k], ix.n, err);
                    if (st != SX_OK)
                        goto out;
                }
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

    sx_h5_src_name(src, sizeof src, h5->path, "/rank_region_index");
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
    char col_src[RD_TAGS + 1][1100]; /* the string columns, named in errors */
    for (int c = RD_FILES; c <= RD_TAGS && h5->borrow; c++) {
        char obj[128];
        snprintf(obj, sizeof obj, "rank_region_index/%s", sx_h5_rd_names[c]);
        sx_h5_src_name(col_src[c], sizeof col_src[c], h5->path, obj);
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
                .region = first[ix.region_ids[r]],
            };
            continue;
        }
        struct sx_row *row = &run->rows[r];
        row->region = first[ix.region_ids[r]];
        row->rank = ix.ranks[r];
        row->file_row = r;
        if (agg) {
            static const uint8_t keys[5] = {SX_AGG_COUNT, SX_AGG_TOTAL, SX_AGG_MINIMUM,
                                            SX_AGG_MAXIMUM, SX_AGG_EXCLUSIVE};
            row->is_aggregate = true;
            row->event_data_available = true;
            SX_CHECK(sx_row_agg(row), SX_ERR_NOMEM, err, src, "out of memory");
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
        if (h5->borrow) {
            row->borrowed = true;
            for (int c = RD_FILES; c <= RD_TAGS && st == SX_OK; c++)
                if (h5->rd[c] >= 0)
                    st = pool_string(h5, c, r, row, col_src[c], err);
            if (st != SX_OK)
                goto out;
        }
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
            char where[1200];
            snprintf(where, sizeof where, "%.1100s:/rank_region_index/tags row %" PRIu64,
                     h5->path, r);
            st = sx_json_parse_tags(ix.tags[r], strlen(ix.tags[r]), where, &row->tags,
                                    &row->ntags, err);
            if (st != SX_OK)
                goto out;
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
                mpi_size = sx_h5_value_as_int(&m->value);
        }
        run->num_ranks = mpi_size > max_rank + 1 ? mpi_size : max_rank + 1;
    }
out:
    free(first);
    for (int k = 0; k < 5; k++)
        free(acols[k]);
    sx_h5_free_strv(names, nnames);
    free_index(&ix);
    sx_h5_close_id(g);
    return st;
}

static enum sx_status open_run(MPI_Comm comm, const char *path, bool summary, bool lazy,
                               struct sx_h5 **out, struct sx_run **run_out,
                               struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_h5 *h5 = NULL;
    struct sx_run *run = NULL;
    hid_t fapl = -1;
    struct h5_quiet q;
    struct stat sb;
    int rank = 0;
    bool opened_mpi = false; /* every rank passed the agreement on the file */
    sx_h5_quiet_begin(&q);
    *out = NULL;
    *run_out = NULL;
    if (comm != MPI_COMM_NULL)
        MPI_Comm_rank(comm, &rank);
    /* Every rank reaches the agreement below, whatever failed before it. */
    h5 = sx_calloc(1, sizeof *h5);
    if (h5 != NULL) {
        h5->file = -1;
        h5->meta = -1;
        h5->lazy = lazy; /* a summary too: its statistics are held apart (h5->sum) */
        h5->borrow = lazy;
        for (int k = 0; k < RD_N; k++)
            h5->rd[k] = -1;
        for (int c = 0; c < SX_NCOLS; c++)
            h5->ev[c] = -1;
        h5->path = sx_strdup(path);
        h5->raw = sx_calloc(SX_NCOLS + RD_N, sizeof *h5->raw);
        h5->rdraw = h5->raw != NULL ? h5->raw + SX_NCOLS : NULL;
    }
    if (h5 == NULL || h5->path == NULL || h5->raw == NULL)
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

    /* Every rank opens the run on its own through the POSIX driver: the reads are
     * independent anyway, and MPI-IO (ROMIO) would create and delete lock-test files
     * beside the input, writing into a directory that may be shared or read-only. */
    fapl = H5Pcreate(H5P_FILE_ACCESS);
    SX_CHECK(fapl >= 0, SX_ERR_INTERNAL, err, path, "H5Pcreate failed");
    SX_CHECK(H5Pset_fapl_sec2(fapl) >= 0, SX_ERR_INTERNAL, err, path,
             "H5Pset_fapl_sec2 failed");
    h5->file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    /* Not the file's fault when it cannot be opened at all (too many open files, no
     * permission): say why, not that it may be truncated. */
    if (h5->file < 0) {
        int probe = open(path, O_RDONLY | O_CLOEXEC), why = errno;
        if (probe >= 0)
            close(probe);
        SX_CHECK(probe >= 0, SX_ERR_OPEN, err, path, "cannot open %s: %s", path,
                 strerror(why));
    }
    SX_CHECK(
        h5->file >= 0, SX_ERR_OPEN, err, path,
        "%s is not a readable HDF5 profiling file. A run that was interrupted while "
        "writing leaves a truncated file behind; the underlying error was: HDF5 could "
        "not open it (not HDF5, or truncated)",
        path);

    /* the size and the raw views are those of the file HDF5 opened, whatever the
     * path names by now */
    const int hfd = sx_h5_posix_fd(h5->file);
    if (hfd >= 0 && fstat(hfd, &sb) == 0)
        h5->file_size = sb.st_size;
    sx_h5_facts_fill(&h5->facts, h5->file, hfd);
    sx_direct_open(hfd, path, &h5->direct);
    if (h5->facts.sizes_ok && h5->facts.fd >= 0) /* the sizes and the user block */
        sx_direct_set_file_sizes(h5->direct, h5->facts.sa, h5->facts.sl,
                                 h5->facts.userblock);
    st = sx_h5_refuse_foreign_links(h5->file, path, &h5->links, err);
    if (st != SX_OK)
        goto out;
    run = sx_run_new();
    SX_CHECK(run != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    run->path = sx_strdup(path);
    SX_CHECK(run->path != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    run->summary = summary;
    st = sx_h5_read_schema(h5, run, err);
    if (st == SX_OK)
        st = sx_h5_read_metadata(h5, run, err);
    if (st != SX_OK)
        goto out;
    h5->open_only = h5->lazy && comm != MPI_COMM_NULL && rank != 0 &&
                    run->layout == SX_LAYOUT_COLUMNAR;
    if (run->layout == SX_LAYOUT_SCHEMA1) {
        st = sx_h5_read_schema1(h5, run, err);
    } else {
        st = read_columnar(h5, run, err);
        if (st == SX_OK && summary && run->layout == SX_LAYOUT_COLUMNAR &&
            sx_h5_has_link(h5, h5->file, "rank_region_index/summary_statistics")) {
            if (h5->lazy) {
                st = sx_h5_open_summary(h5, run, err);
                run->summary_index = st == SX_OK;
            } else {
                st = sx_h5_read_summary(h5, run, err);
            }
        }
    }
    if (st != SX_OK)
        goto out;
    /* read_h5_summary flags the run; a file without statistics falls back to read_h5 */
    if (summary && run->layout != SX_LAYOUT_SCHEMA1 &&
        (run->layout == SX_LAYOUT_AGGREGATE ||
         sx_h5_has_link(h5, h5->file, "rank_region_index/summary_statistics")))
        run->event_data_available = false;
out:
    /* NOTE: collective: every rank of a lazy open joins, whatever its status */
    if (h5 != NULL && h5->lazy && comm != MPI_COMM_NULL && opened_mpi)
        st = sx_h5_share_index(comm, h5, run, st, err);
    sx_h5_close_id(fapl);
    sx_h5_quiet_end(&q);
    if (st != SX_OK) {
        sx_run_free(run);
        run = NULL;
    }
    *out = h5;
    *run_out = run;
    return st;
}

static void close_run(struct sx_h5 *h5) {
    if (h5 == NULL)
        return;
    struct h5_quiet q;
    sx_h5_quiet_begin(&q);
    for (int c = 0; c < SX_NCOLS; c++)
        sx_h5_close_id(h5->ev[c]);
    sx_vlen_close(h5->meta_vlen);
    sx_h5_close_id(h5->meta);
    for (int k = 0; k < RD_N; k++)
        sx_h5_close_id(h5->rd[k]);
    for (int k = 0; k < 3; k++)
        sx_h5_pool_free(&h5->pool[k]);
    sx_h5_close_id(h5->file);
    sx_h5_quiet_end(&q);
    sx_h5_summary_free(h5);
    sx_direct_close(h5->direct);
    sx_h5_links_free(h5->links);
    sx_big_free(&h5->scratch);
    sx_big_free(&h5->end_deltas);
    sx_big_free(&h5->spans_mem);
    sx_big_free(&h5->twins_mem);
    sx_big_free(&h5->dspans_mem);
    free(h5->raw);
    free(h5->path);
    free(h5);
}

long sx_h5_open_ids(void) { return (long)H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL); }

static enum sx_status fill_rows(struct sx_h5 *h5, const struct sx_run *run,
                                const struct sx_index_row *const *ix, size_t n,
                                struct sx_row *out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct h5_quiet q;
    hsize_t *pts = NULL;
    size_t *off = NULL;
    int64_t *iv = NULL;
    struct sx_buf text = {0};
    char src[1100];
    sx_h5_quiet_begin(&q);
    const unsigned cols =
        SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END) | run->file_cols;
    for (size_t k = 0; k < n; k++) {
        struct sx_row *row = &out[k];
        memset(row, 0, sizeof *row);
        row->region = ix[k]->region;
        row->rank = ix[k]->rank;
        row->offset = ix[k]->offset;
        row->count = ix[k]->count;
        row->file_row = sx_index_file_row(run, ix[k]);
        row->cols = cols;
        if (ix[k]->flags & SX_IR_NO_GPU)
            row->cols &= ~SX_COLBIT(SX_COL_GPU);
        row->has_meta_col = run->has_meta_col;
        row->borrowed = true; /* the strings are the pools' (sx_h5_close frees them) */
    }
    if (n == 0)
        goto out;
    pts = sx_malloc(n * sizeof *pts);
    off = sx_malloc((n + 1) * sizeof *off);
    iv = sx_malloc(n * sizeof *iv);
    SX_CHECK(pts != NULL && off != NULL && iv != NULL, SX_ERR_NOMEM, err, h5->path,
             "out of memory");
    for (size_t k = 0; k < n; k++)
        pts[k] = out[k].file_row;
    for (int c = 0; c < RD_N; c++) {
        if (h5->rd[c] < 0 || ((c == RD_LINES || c == RD_EXCL) && run->summary_index))
            continue; /* a summary's lines and exclusive times: held, set below */
        char obj[128];
        snprintf(obj, sizeof obj, "rank_region_index/%s", sx_h5_rd_names[c]);
        sx_h5_src_name(src, sizeof src, h5->path, obj);
        if (c == RD_LINES || c == RD_EXCL) {
            st = sx_direct_point_ints(h5->direct, &h5->rdraw[c], h5->rd[c], pts, n, iv,
                                      src, err);
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
        for (size_t k = 0; k < n && st == SX_OK; k++)
            st = pool_string(h5, c, out[k].file_row, &out[k], src, err);
        if (st != SX_OK)
            goto out;
    }
    /* a summary's rows: their lines, exclusive times and aggregates, held */
    if (run->summary_index)
        st = sx_h5_summary_rows(h5, out, n, err);
out:
    sx_buf_free(&text);
    free(iv);
    free(off);
    free(pts);
    sx_h5_quiet_end(&q);
    return st;
}

enum sx_status sx_h5_open(MPI_Comm comm, const char *path, bool summary,
                          struct sx_h5 **h5, struct sx_run **run, struct sx_error *err) {
    sx_h5_enter(path);
    enum sx_status st = open_run(comm, path, summary, false, h5, run, err);
    sx_h5_leave();
    return st;
}

enum sx_status sx_h5_open_index(MPI_Comm comm, const char *path, bool summary,
                                struct sx_h5 **h5, struct sx_run **run,
                                struct sx_error *err) {
    sx_h5_enter(path);
    enum sx_status st = open_run(comm, path, summary, true, h5, run, err);
    sx_h5_leave();
    return st;
}

enum sx_status sx_h5_fill_rows(struct sx_h5 *h5, const struct sx_run *run,
                               const struct sx_index_row *const *ix, size_t n,
                               struct sx_row *out, struct sx_error *err) {
    sx_h5_enter(h5->path);
    enum sx_status st = fill_rows(h5, run, ix, n, out, err);
    sx_h5_leave();
    return st;
}

enum sx_status sx_h5_hold_rows(struct sx_h5 *h5, const struct sx_run *run,
                               const uint8_t *want, struct sx_error *err) {
    if (!run->summary_index)
        return SX_OK;
    struct h5_quiet q;
    sx_h5_enter(h5->path);
    sx_h5_quiet_begin(&q);
    enum sx_status st = sx_h5_hold_summary(h5, want, err);
    sx_h5_quiet_end(&q);
    sx_h5_leave();
    return st;
}

void sx_h5_close(struct sx_h5 *h5) {
    sx_h5_enter(h5 != NULL ? h5->path : NULL);
    close_run(h5);
    sx_h5_leave();
}
