/* doc_plan.h - the JSON document's plan: rows in document order, segments, blocks */
#ifndef SX_DOC_PLAN_H
#define SX_DOC_PLAN_H

#include "filter.h"
#include "run.h"

/*
 * A position in the document's row list: 'row' is an index into the
 * ordered rows, 'seg' a segment of that row, 'ev' an event in it.
 */
enum sx_seg {
    SX_SEG_HEAD = 0, /* "{name, rank, source..., tags" (and the aggregate branch) */
    SX_SEG_START,
    SX_SEG_END,
    SX_SEG_META,
    SX_SEG_GPU,
    SX_SEG_CALL,
    SX_SEG_PARENT,
    SX_SEG_THREAD,
    SX_SEG_TASK,
    SX_SEG_AWAIT,
    SX_SEG_TAIL, /* exclusive_total_ns and "}" */
    SX_NSEGS
};

struct sx_pos {
    uint64_t row;
    uint32_t seg;
    uint64_t ev;
};

/* One block of the document: a contiguous range of its region rows' text. */
struct sx_block {
    struct sx_pos from, to; /* [from, to) in (row, seg, ev) order */
    uint64_t weight;        /* estimated bytes */
    uint64_t units; /* exact progress: its rows and the events of its start column */
};

/* The document: ordered rows (after filters) and their blocks. */
struct sx_doc {
    const struct sx_run *run;
    /* indexes into run->rows (or run->index), in document order; 4 bytes: every rank
     * holds one a row of the run (a run of more rows is refused: sx_doc_plan) */
    uint32_t *order;
    uint64_t nrows;
    int indent;
    struct sx_block *blocks;
    size_t nblocks;
    uint64_t total_weight;
    uint64_t total_units; /* rows and events of the document: the progress total */
    const struct sx_filter *filter;
};

/* Order the rows and cut them into blocks of about 'block_bytes' each. */
enum sx_status sx_doc_plan(struct sx_doc *doc, const struct sx_run *run,
                           const struct sx_filter *filter, int indent, size_t block_bytes,
                           struct sx_error *err);
void sx_doc_free(struct sx_doc *doc);

/* The plan's view of rows and segments, which the text shares. */
/* The event column behind a segment, or -1. */
int sx_seg_col(unsigned seg);

/* Whether 'row' writes segment 'seg' at all. */
bool sx_row_has_seg(const struct sx_row *row, unsigned seg);

/* Events a segment spans: atomic segments count as one unit. */
uint64_t sx_seg_units(const struct sx_row *row, unsigned seg);

/* Whether the run was read lazily: its rows known by their index entries. */
bool sx_run_is_lazy(const struct sx_run *run);

/* The plan's view of row 'r' of the run: its own row, or one made from the index. */
const struct sx_row *sx_plan_row(const struct sx_run *run, uint64_t r,
                                 struct sx_row *tmp);
/*
 * The same, into a 'tmp' that is zeroed or that an earlier call of either
 * filled: only what the index gives is set (a row is 520 bytes, the index's
 * part of it a few dozen).
 */
const struct sx_row *sx_plan_row_again(const struct sx_run *run, uint64_t r,
                                       struct sx_row *tmp);

/* Rows are planned in document order, and the index (or the rows read whole) is in the
 * file's (rank by rank): the index row of order[i + SX_PLAN_AHEAD] asked of the cache
 * while row i is planned (or the row, its first lines: 1.6M rows of ~200 bytes are far
 * out of the caches). A macro: GCC 12 drops a prefetch inlined from a function into
 * these loops. */
enum { SX_PLAN_AHEAD = 16 };
/* The first three cache lines of row 'row' (a const struct sx_row *), where a row's
 * region, rank, strings, count and aggregates lie. */
#define SX_PREFETCH_ROW(row)                                                             \
    do {                                                                                 \
        const char *pf_ = (const char *)(row);                                           \
        __builtin_prefetch(pf_);                                                         \
        __builtin_prefetch(pf_ + 64);                                                    \
        __builtin_prefetch(pf_ + 128);                                                   \
    } while (0)
#define SX_PLAN_PREFETCH(run, order, i, n)                                               \
    do {                                                                                 \
        if ((i) + SX_PLAN_AHEAD < (n)) {                                                 \
            if ((run)->index != NULL)                                                    \
                __builtin_prefetch(&(run)->index[(order)[(i) + SX_PLAN_AHEAD]]);         \
            else                                                                         \
                SX_PREFETCH_ROW(&(run)->rows[(order)[(i) + SX_PLAN_AHEAD]]);             \
        }                                                                                \
    } while (0)

/* Events a piece of a block is read and written in at the most. */
enum { SX_PIECE_EVENTS = 1 << 16 };

/* A slice request for one segment piece of a row. */
struct sx_piece {
    uint64_t i; /* index in doc order */
    unsigned seg;
    uint64_t a, z; /* events [a, z) (atomic segments: 0, 1) */
};

/* The pieces of block 'bi', in text order, into '*out' (grown as needed; '*np' of them).
 */
enum sx_status sx_doc_block_pieces(const struct sx_doc *doc, size_t bi,
                                   struct sx_piece **out, size_t *cap, size_t *np,
                                   struct sx_error *err);

#endif /* SX_DOC_PLAN_H */
