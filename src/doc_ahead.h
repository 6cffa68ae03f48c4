/* doc_ahead.h - the JSON profile's events read ahead for a rank's next blocks */
#ifndef SX_DOC_AHEAD_H
#define SX_DOC_AHEAD_H

#include "buf.h"
#include "doc_plan.h"
#include "run.h"

/*
 * Events read ahead for the blocks one rank formats next. In a file written
 * rank by rank, one block's rows (a region, rank after rank) lie far apart,
 * one read each per column; the rows of a rank in the next blocks lie side by
 * side, so reading several blocks together takes one read per rank and column.
 *
 * A piece read ahead: events [a, a + n) of segment 'seg' of rows[row] (its row in
 * document order is the block's first, sx_block.from.row, plus row - rfirst[k]), its
 * values at arena[at ..). 24 bytes: a many-row job plans tens of thousands (the
 * pieces' bound) in each of three plans; 48 took a large frame more in each.
 */
struct sx_doc_ahead_ent {
    uint64_t a;
    uint64_t at;
    uint32_t row;
    uint32_t n : 28; /* at most the values' bound (doc_ahead.c) */
    uint32_t seg : 4;
};

/*
 * What a read-ahead is to read (sx_doc_ahead_plan writes it; nothing of the source is
 * read): the blocks, their pieces and rows. A plan made beside another read-ahead's read
 * is moved into a read-ahead whole (one assignment each way).
 */
struct sx_ahead_plan {
    size_t *block; /* the blocks read ahead, in document order */
    size_t nblock, block_cap;
    size_t *first; /* block k's pieces are ent[first[k] .. first[k + 1]) */
    size_t first_cap;
    struct sx_doc_ahead_ent *ent; /* ent_mem's: a read-ahead's tens of thousands of
                                     pieces, in large frames (internal.h) */
    size_t nent;
    struct sx_big ent_mem;
    /* block k's rows (see sx_doc_ahead.rows) from rfirst[k]; the index rows they are
     * filled from */
    size_t *rfirst, rfirst_cap;
    const struct sx_index_row **rix;
    size_t rix_cap;
    /* event_metadata, when the source reads it: block k's are those of the pieces
     * mfirst[k] .. mfirst[k + 1]; each meta piece's row in rows */
    bool metas;
    size_t *mfirst, mfirst_cap;
    size_t *mrow, mrow_cap;
    size_t nmeta;
};

struct sx_doc_ahead {
    struct sx_ahead_plan pl; /* what it reads (or read) */
    /* the large rooms, kept from one read-ahead to the next (in large frames:
     * sx_big); each pointer is its room's memory */
    int64_t *arena; /* the pieces' events */
    struct sx_big arena_mem;
    /* the blocks' rows as the source fills them: block k's, from its first row r0
     * (sx_block.from.row) to the row of its last piece, are rows[pl.rfirst[k] + i - r0];
     * a row two blocks share is there twice */
    struct sx_row *rows;
    struct sx_big rows_mem;
    size_t nrows;
    /* event_metadata (pl.metas): block k's text at mtext[moff[m] .. moff[m + 1]) for
     * m from pl.mfirst[k], as stored: the formatting makes it canonical (canon_meta),
     * beside the next reads */
    const struct sx_row **mrows;
    size_t mrows_cap;
    struct sx_buf mtext;
    size_t *moff, moff_cap;
    bool *many;
    size_t many_cap;
};

void sx_doc_ahead_init(struct sx_doc_ahead *ah);
void sx_doc_ahead_free(struct sx_doc_ahead *ah);
/* The place of block 'b' among those read ahead, or -1. */
long sx_doc_ahead_find(const struct sx_doc_ahead *ah, size_t b);
/* Whether block 'b' was read ahead. */
bool sx_doc_ahead_has(const struct sx_doc_ahead *ah, size_t b);
/*
 * Read ahead the rows, events and event_metadata of 'blocks[0 .. n)' (in
 * document order), as many of them, from the first, as fit a bounded room; none
 * if the source has no reader or the first alone does not fit. Blocks of long
 * pieces are left to be read block by block, in bounded batches. What was read
 * ahead before is gone. A block read ahead asks nothing more of the source
 * (sx_doc_block), which is then free to read the next blocks meanwhile.
 *
 * 'slices' is the room of the read's slices (one a piece, 96 bytes: more than its
 * values in a many-row run), needed only while it reads: the caller's, one for all its
 * read-aheads, as their reads never run at once (each a source's, used by one thread at
 * a time).
 */
enum sx_status sx_doc_ahead_fill(const struct sx_doc *doc,
                                 const struct sx_event_source *src,
                                 struct sx_doc_ahead *ah, const size_t *blocks, size_t n,
                                 struct sx_big *slices, struct sx_error *err);

/*
 * sx_doc_ahead_fill in two steps: the plan (which blocks, their pieces and rows: nothing
 * of the source is read), and the read of what 'ah' plans (ah->pl). A plan may be made
 * apart, while another thread reads, and moved into a read-ahead (an assignment of pl).
 */
enum sx_status sx_doc_ahead_plan(const struct sx_doc *doc,
                                 const struct sx_event_source *src,
                                 struct sx_ahead_plan *pl, const size_t *blocks, size_t n,
                                 struct sx_error *err);
enum sx_status sx_doc_ahead_read(const struct sx_doc *doc,
                                 const struct sx_event_source *src,
                                 struct sx_doc_ahead *ah, struct sx_big *slices,
                                 struct sx_error *err);
void sx_ahead_plan_free(struct sx_ahead_plan *pl);

/* Fault in the rooms sx_doc_ahead_read of what 'ah' plans will write (nothing of the
 * source is read, nor of 'ah' but its rooms; no memory: left as they are, for the read
 * to find). */
void sx_doc_ahead_warm(struct sx_doc_ahead *ah);

/* Block k's rows read ahead (see 'rows'), or NULL when k is none of its blocks. */
const struct sx_row *sx_doc_ahead_rows(const struct sx_doc_ahead *ah, long k);

#endif /* SX_DOC_AHEAD_H */
