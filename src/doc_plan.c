/* doc_plan.c - the JSON document's plan: rows in document order after the filters, cut
 * into blocks of about equal text, with exact progress units */
#define _GNU_SOURCE /* qsort_r: the sort context per call, not in a global */
#include "doc_plan.h"

#include "filter.h"
#include "run.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The event column behind a segment, or -1. */
int sx_seg_col(unsigned seg) {
    switch (seg) {
    case SX_SEG_START:
        return SX_COL_START;
    case SX_SEG_END:
        return SX_COL_END;
    case SX_SEG_GPU:
        return SX_COL_GPU;
    case SX_SEG_CALL:
        return SX_COL_CALL;
    case SX_SEG_PARENT:
        return SX_COL_PARENT;
    case SX_SEG_THREAD:
        return SX_COL_THREAD;
    case SX_SEG_TASK:
        return SX_COL_TASK;
    case SX_SEG_AWAIT:
        return SX_COL_AWAIT;
    default:
        return -1;
    }
}

/* Whether 'row' writes segment 'seg' at all. */
bool sx_row_has_seg(const struct sx_row *row, unsigned seg) {
    if (seg == SX_SEG_HEAD || seg == SX_SEG_TAIL)
        return true;
    if (row->is_aggregate)
        return false;
    if (seg == SX_SEG_META)
        return row->has_meta_col || row->meta_text != NULL;
    int c = sx_seg_col(seg);
    return c >= 0 && (row->cols & SX_COLBIT(c));
}

/* Events a segment spans: atomic segments count as one unit. */
uint64_t sx_seg_units(const struct sx_row *row, unsigned seg) {
    return sx_seg_col(seg) >= 0 ? row->count : 1;
}

/* ------------------------------------------------------------------ */
/* Plan                                                               */

/* Rows of a lazily read run: the plan knows them by their index entry alone. */
enum { SX_BLOCK_ROWS = 4096 }; /* most rows a block of a lazy run holds */
bool sx_run_is_lazy(const struct sx_run *run) { return run->index != NULL; }

static size_t sx_run_nrows(const struct sx_run *run) {
    return sx_run_is_lazy(run) ? run->nindex : run->nrows;
}

/* The plan's view of row 'r' of the run: its own row, or one made from the index. */
const struct sx_row *sx_plan_row(const struct sx_run *run, uint64_t r,
                                 struct sx_row *tmp) {
    if (!sx_run_is_lazy(run))
        return &run->rows[r];
    memset(tmp, 0, sizeof *tmp);
    return sx_plan_row_again(run, r, tmp);
}

const struct sx_row *sx_plan_row_again(const struct sx_run *run, uint64_t r,
                                       struct sx_row *tmp) {
    if (!sx_run_is_lazy(run))
        return &run->rows[r];
    const struct sx_index_row *x = &run->index[r];
    tmp->region = x->region;
    tmp->rank = x->rank;
    tmp->count = x->count;
    tmp->offset = x->offset;
    tmp->file_row = r;
    tmp->cols = SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END) | run->file_cols;
    if (x->flags & SX_IR_NO_GPU)
        tmp->cols &= ~SX_COLBIT(SX_COL_GPU);
    tmp->has_meta_col = run->has_meta_col;
    if (run->summary_index) { /* as sx_h5_summary_rows makes it, but its aggregates */
        tmp->is_aggregate = true;
        tmp->event_data_available = false;
        tmp->nagg = SX_AGG_NKEYS;
    }
    return tmp;
}

static int cmp_doc_rows(const void *a, const void *b, void *ctx) {
    const struct sx_run *sort_run = ctx;
    uint64_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint32_t xr, yr;
    int64_t xk, yk;
    if (sx_run_is_lazy(sort_run)) {
        xr = sort_run->index[i].region, yr = sort_run->index[j].region;
        xk = sort_run->index[i].rank, yk = sort_run->index[j].rank;
    } else {
        xr = sort_run->rows[i].region, yr = sort_run->rows[j].region;
        xk = sort_run->rows[i].rank, yk = sort_run->rows[j].rank;
    }
    if (xr != yr)
        return xr < yr ? -1 : 1;
    if (xk != yk)
        return xk < yk ? -1 : 1;
    return (i > j) - (i < j);
}

/* Row r's region and rank, from the index or the loaded rows. */
static void row_key(const struct sx_run *run, uint64_t r, uint32_t *region,
                    int64_t *rank) {
    if (sx_run_is_lazy(run)) {
        *region = run->index[r].region;
        *rank = run->index[r].rank;
    } else {
        *region = run->rows[r].region;
        *rank = run->rows[r].rank;
    }
}

/*
 * 'order' (rows ascending) sorted as cmp_doc_rows sorts it: counted into its
 * regions in one pass over the rows in their order, which keeps the rows of a
 * region in theirs (a run's file has them rank by rank: sorted already); a
 * region whose ranks are not is sorted alone. A sort of the whole through the
 * comparator read the index in no order at all, a cache miss a comparison.
 * Without memory for the counts, that sort.
 */
static void sort_doc_rows(const struct sx_run *run, uint32_t *order, size_t n) {
    size_t *start = sx_calloc(run->nnames + 2, sizeof *start);
    uint32_t *to = sx_malloc((n + 1) * sizeof *to);
    int64_t *ranks = sx_malloc((n + 1) * sizeof *ranks);
    if (start == NULL || to == NULL || ranks == NULL) {
        qsort_r(order, n, sizeof *order, cmp_doc_rows, (void *)run);
        goto out;
    }
    uint32_t region;
    int64_t rank;
    for (size_t j = 0; j < n; j++) {
        row_key(run, order[j], &region, &rank);
        start[region + 1]++;
    }
    for (size_t g = 0; g < run->nnames; g++)
        start[g + 1] += start[g];
    for (size_t j = 0; j < n; j++) {
        row_key(run, order[j], &region, &rank);
        const size_t at = start[region]++; /* the next region's start once done */
        to[at] = order[j];
        ranks[at] = rank;
    }
    memcpy(order, to, n * sizeof *order);
    for (size_t g = 0, from = 0; g < run->nnames; from = start[g++]) {
        size_t j = from + 1;
        while (j < start[g] && ranks[j - 1] <= ranks[j])
            j++;
        if (j < start[g]) /* equal ranks keep their rows' order: cmp_doc_rows's */
            qsort_r(order + from, start[g] - from, sizeof *order, cmp_doc_rows,
                    (void *)run);
    }
out:
    free(start);
    free(to);
    free(ranks);
}

static size_t str_weight(const char *s) { return s ? strlen(s) + 24 : 0; }

/* Estimated bytes of one event of a segment: weights only balance blocks. */
static uint64_t ev_weight(const struct sx_doc *doc, unsigned seg) {
    uint64_t w = seg == SX_SEG_START || seg == SX_SEG_END ? 21
                 : seg == SX_SEG_META                     ? 40
                                                          : 8;
    if (doc->indent >= 0)
        w += (uint64_t)doc->indent * 4 + 1;
    return w;
}

static uint64_t head_weight(const struct sx_row *row, const struct sx_run *run) {
    uint64_t w = 64 + strlen(run->names[row->region]);
    if (sx_run_is_lazy(
            run)) /* strings not read yet: a typical source file, text and tags */
        w += 96;
    w += str_weight(row->source_file) + str_weight(row->source_text);
    for (size_t i = 0; i < row->ntags; i++)
        w += str_weight(row->tags[i]);
    if (row->is_aggregate)
        w += 24 * row->nagg;
    return w;
}

/* Append block [from, to) of weight 'w' and progress 'units'; false when out of memory.
 */
static bool add_block(struct sx_doc *doc, size_t *cap, struct sx_pos from,
                      struct sx_pos to, uint64_t w, uint64_t units) {
    if (doc->nblocks == *cap) {
        struct sx_block *nb = sx_realloc(doc->blocks, 2 * *cap * sizeof *nb);
        if (nb == NULL)
            return false;
        doc->blocks = nb;
        *cap *= 2;
    }
    doc->blocks[doc->nblocks++] = (struct sx_block){from, to, w, units};
    doc->total_weight += w;
    doc->total_units += units;
    return true;
}

enum sx_status sx_doc_plan(struct sx_doc *doc, const struct sx_run *run,
                           const struct sx_filter *filter, int indent, size_t block_bytes,
                           struct sx_error *err) {
    enum sx_status st = SX_OK;
    bool *keep_name = NULL;
    memset(doc, 0, sizeof *doc);
    doc->run = run;
    doc->indent = indent;
    doc->filter = filter;
    if (block_bytes == 0)
        block_bytes = 4u << 20;

    keep_name = sx_calloc(run->nnames + 1, sizeof *keep_name);
    SX_CHECK(keep_name != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
    for (size_t i = 0; i < run->nnames; i++)
        keep_name[i] = sx_filter_name(filter, run->names[i]);
    const size_t nall = sx_run_nrows(run);
    struct sx_row tmp;
    memset(&tmp, 0, sizeof tmp);
    SX_CHECK(nall <= UINT32_MAX, SX_ERR_FORMAT, err, run->path,
             "%s: %zu rows (a region on a rank each) are more than the %" PRIu32
             " a document can hold",
             run->path, nall, UINT32_MAX);
    doc->order = sx_malloc((nall + 1) * sizeof *doc->order);
    SX_CHECK(doc->order != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
    uint64_t n = 0;
    uint32_t region, nx_region;
    int64_t rank, nx_rank;
    for (size_t r = 0; r < nall; r++) { /* a row's key alone: not the whole row made */
        row_key(run, r, &region, &rank);
        if (keep_name[region] && sx_filter_rank(filter, rank))
            doc->order[n++] = (uint32_t)r;
    }
    /* Region-major (region table order), then rank ascending. */
    sort_doc_rows(run, doc->order, n);
    /* A (name, rank) written twice: the later row wins, as in the reader's dict. */
    uint64_t k = 0;
    if (n > 0)
        row_key(run, doc->order[0], &nx_region, &nx_rank);
    for (uint64_t i = 0; i < n; i++) {
        SX_PLAN_PREFETCH(run, doc->order, i + 1, n);
        region = nx_region;
        rank = nx_rank;
        if (i + 1 < n) {
            row_key(run, doc->order[i + 1], &nx_region, &nx_rank);
            if (nx_region == region && nx_rank == rank)
                continue;
        }
        doc->order[k++] = doc->order[i];
    }
    doc->nrows = k;

    /* Cut the rows into blocks of about block_bytes, splitting big columns by event.
     * A block's progress units count its rows and the events of its start column:
     * exact, so that the progress ends at its total. */
    size_t cap = 16;
    doc->blocks = sx_malloc(cap * sizeof *doc->blocks);
    SX_CHECK(doc->blocks != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
    struct sx_pos from = {0, 0, 0};
    uint64_t acc = 0, acc_units = 0;
    for (uint64_t i = 0; i < doc->nrows; i++) {
        SX_PLAN_PREFETCH(run, doc->order, i, doc->nrows);
        const struct sx_row *row = sx_plan_row_again(run, doc->order[i], &tmp);
        /* a lazy block reads its rows in full: bound how many it holds */
        if (sx_run_is_lazy(run) && acc > 0 && i - from.row >= SX_BLOCK_ROWS) {
            struct sx_pos to = {i, 0, 0};
            SX_CHECK(add_block(doc, &cap, from, to, acc, acc_units), SX_ERR_NOMEM, err,
                     run->path, "out of memory");
            from = to;
            acc = acc_units = 0;
        }
        for (unsigned seg = 0; seg < SX_NSEGS; seg++) {
            if (!sx_row_has_seg(row, seg))
                continue;
            uint64_t units = sx_seg_units(row, seg);
            uint64_t per = seg == SX_SEG_HEAD   ? head_weight(row, run)
                           : seg == SX_SEG_TAIL ? 24
                                                : ev_weight(doc, seg);
            if (seg == SX_SEG_META)
                per = ev_weight(doc, seg) * (row->count + 1);
            uint64_t ev = 0;
            while (ev < units) {
                uint64_t room = acc < block_bytes ? block_bytes - acc : 0;
                uint64_t take = (room + per - 1) / per;
                if (take == 0)
                    take = 1;
                if (take > units - ev)
                    take = units - ev;
                acc += take * per;
                acc_units += seg == SX_SEG_HEAD ? 1 : seg == SX_SEG_START ? take : 0;
                ev += take;
                if (acc >= block_bytes) {
                    struct sx_pos to = {i, seg, ev};
                    if (ev == units) { /* normalise: end of segment = start of the next */
                        to.seg = seg + 1;
                        to.ev = 0;
                        if (to.seg == SX_NSEGS) {
                            to.row = i + 1;
                            to.seg = 0;
                        }
                    }
                    SX_CHECK(add_block(doc, &cap, from, to, acc, acc_units), SX_ERR_NOMEM,
                             err, run->path, "out of memory");
                    from = to;
                    acc = acc_units = 0;
                }
            }
        }
    }
    if (acc > 0 || doc->nblocks == 0) {
        struct sx_pos end = {doc->nrows, 0, 0};
        SX_CHECK(add_block(doc, &cap, from, end, acc, acc_units), SX_ERR_NOMEM, err,
                 run->path, "out of memory");
    }
out:
    free(keep_name);
    return st;
}

void sx_doc_free(struct sx_doc *doc) {
    if (doc == NULL)
        return;
    free(doc->order);
    free(doc->blocks);
    memset(doc, 0, sizeof *doc);
}

/* The pieces of block 'bi', in text order, into '*out' (grown as needed; '*np' of them).
 */
enum sx_status sx_doc_block_pieces(const struct sx_doc *doc, size_t bi,
                                   struct sx_piece **out, size_t *cap, size_t *np,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_run *run = doc->run;
    const struct sx_block *blk = &doc->blocks[bi];
    struct sx_row tmp;
    memset(&tmp, 0, sizeof tmp);
    *np = 0;
    for (uint64_t i = blk->from.row; i < doc->nrows && i <= blk->to.row; i++) {
        if (i == blk->to.row && blk->to.seg == 0 && blk->to.ev == 0)
            break;
        SX_PLAN_PREFETCH(run, doc->order, i,
                         blk->to.row + 1 < doc->nrows ? blk->to.row + 1 : doc->nrows);
        const struct sx_row *row = sx_plan_row_again(run, doc->order[i], &tmp);
        unsigned s0 = i == blk->from.row ? blk->from.seg : 0;
        for (unsigned seg = s0; seg < SX_NSEGS; seg++) {
            if (i == blk->to.row && seg > blk->to.seg)
                break;
            if (i == blk->to.row && seg == blk->to.seg && blk->to.ev == 0)
                break;
            if (!sx_row_has_seg(row, seg))
                continue;
            uint64_t a = (i == blk->from.row && seg == blk->from.seg) ? blk->from.ev : 0;
            uint64_t z = (i == blk->to.row && seg == blk->to.seg)
                             ? blk->to.ev
                             : sx_seg_units(row, seg);
            if (*np == *cap) {
                size_t ncap = *cap ? *cap * 2 : 64;
                struct sx_piece *nv = sx_realloc(*out, ncap * sizeof *nv);
                SX_CHECK(nv != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
                *out = nv;
                *cap = ncap;
            }
            (*out)[(*np)++] = (struct sx_piece){i, seg, a, z};
        }
    }
out:
    return st;
}
