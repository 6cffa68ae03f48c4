/* doc_ahead.c - the JSON profile's events read ahead for a rank's next blocks, into a
 * reused arena */
#include "doc_ahead.h"

#include "buf.h"
#include "doc_plan.h"
#include "run.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Bounds of one read-ahead: event values (8 bytes each), event pieces and
 * calls whose event_metadata it holds; json_block bounds its blocks. The
 * room is reused from one read-ahead to the next. Each read-ahead of a
 * many-row run touches most of the event columns' file (a block's rows lie
 * over all of it), so fewer, larger ones fault fewer frames of the mapping
 * in (h5_direct.h). But the rooms are fresh memory, twice (two read-aheads),
 * and a virtual machine whose balloon hands free memory back to its host fills
 * fresh large frames at a fifth to a ninth of the speed of 4 KiB pages: 6 MiB
 * of values (a job of five blocks of the 1024 x 64 run, 36k pieces; 12 MiB
 * took six, 43k, and the rooms of their pieces) made that export's own time
 * 0.256 -> 0.225 s with the frames cold, 0.181 -> 0.168 s warm; 3 MiB read too
 * often (0.178 s warm).
 */
enum { AHEAD_VALUES = 3 << 18, AHEAD_PIECES = 3 << 14, AHEAD_META_CALLS = 3 << 17 };
/* Rows of one read-ahead: a row of events has two pieces at least, so this bounds only
 * rows without (a summary's, 400 bytes a row held with its aggregates): without it, one
 * read-ahead took a rank's every block of the 16384 x 100 summary, 240k rows at once. */
enum { AHEAD_ROWS = AHEAD_PIECES / 2 };
_Static_assert(AHEAD_VALUES < (1 << 28) && SX_SEG_TAIL < (1 << 4),
               "a piece's events and segment fit its entry (doc_ahead.h)");
/* Events of a block's average piece from which it is read on its own. */
enum { AHEAD_LONG = 1024 };

void sx_doc_ahead_init(struct sx_doc_ahead *ah) { memset(ah, 0, sizeof *ah); }

/* The rows of the last read-ahead let go of (the source's strings stay its own; a row
 * that holds nothing of its own is left as it is: the next fill writes it whole). */
static void rows_release(struct sx_doc_ahead *ah) {
    for (size_t r = 0; r < ah->nrows; r++) {
        struct sx_row *row = &ah->rows[r];
        bool owns = !row->borrowed || row->group != NULL || row->meta_text != NULL ||
                    row->agg != NULL;
        for (int c = 0; c < SX_NCOLS && !owns; c++)
            owns = row->col[c] != NULL;
        if (owns)
            sx_row_clear(row);
    }
    ah->nrows = 0;
}

void sx_ahead_plan_free(struct sx_ahead_plan *pl) {
    free(pl->block);
    free(pl->first);
    sx_big_free(&pl->ent_mem);
    free(pl->rfirst);
    free(pl->rix);
    free(pl->mfirst);
    free(pl->mrow);
    memset(pl, 0, sizeof *pl);
}

void sx_doc_ahead_free(struct sx_doc_ahead *ah) {
    if (ah == NULL)
        return;
    rows_release(ah);
    sx_ahead_plan_free(&ah->pl);
    sx_big_free(&ah->arena_mem);
    sx_big_free(&ah->rows_mem);
    free(ah->mrows);
    free(ah->moff);
    free(ah->many);
    sx_buf_free(&ah->mtext);
    sx_doc_ahead_init(ah);
}

/* The place of block 'b' among those read ahead, or -1. */
long sx_doc_ahead_find(const struct sx_doc_ahead *ah, size_t b) {
    for (size_t k = 0; ah != NULL && k < ah->pl.nblock; k++)
        if (ah->pl.block[k] == b)
            return (long)k;
    return -1;
}

bool sx_doc_ahead_has(const struct sx_doc_ahead *ah, size_t b) {
    return sx_doc_ahead_find(ah, b) >= 0;
}

/*
 * The bytes to reserve of the plan's pieces for 'want' bytes (never more than the bound
 * of AHEAD_PIECES): 'want' while small, else the bound at once (as room_of, below,
 * from 64 KiB). They grow block by block: a many-row job's 1-2 MiB grown in steps
 * (malloc's, then a mapping) copied and faulted in ~1.2k fresh pages an export (of
 * 8k), on the caller's thread.
 */
static size_t ent_room(size_t want, size_t bound) {
    return want < ((size_t)64 << 10) ? want : bound;
}

/* Make '*p' hold at least 'n' elements of 'size' bytes; its contents are kept. */
static bool grow(void **p, size_t *cap, size_t n, size_t size) {
    if (n <= *cap)
        return true;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < n)
        ncap *= 2;
    void *q = sx_realloc(*p, ncap * size);
    if (q == NULL)
        return false;
    *p = q;
    *cap = ncap;
    return true;
}

enum sx_status sx_doc_ahead_plan(const struct sx_doc *doc,
                                 const struct sx_event_source *src,
                                 struct sx_ahead_plan *pl, const size_t *blocks, size_t n,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_run *run = doc->run;
    struct sx_piece *pieces = NULL;
    size_t capp = 0, np = 0, nrow = 0;
    struct sx_row tmp;
    memset(&tmp, 0, sizeof tmp);
    pl->nblock = pl->nent = pl->nmeta = 0;
    pl->metas =
        src->ops != NULL && src->ops->read_metas != NULL && src->ops->canon_meta != NULL;
    if (src->ops == NULL || src->ops->read_slices == NULL ||
        src->ops->fill_rows == NULL || !sx_run_is_lazy(run))
        goto out;
    uint64_t values = 0, calls = 0;
    for (size_t k = 0; k < n; k++) {
        st = sx_doc_block_pieces(doc, blocks[k], &pieces, &capp, &np, err);
        if (st != SX_OK)
            goto out;
        uint64_t evs = 0, mcalls = 0;
        size_t nev = 0, nm = 0;
        for (size_t q = 0; q < np; q++) {
            if (sx_seg_col(pieces[q].seg) >= 0) {
                evs += pieces[q].z - pieces[q].a;
                nev++;
            } else if (pieces[q].seg == SX_SEG_META && pl->metas) {
                mcalls += sx_plan_row_again(run, doc->order[pieces[q].i], &tmp)->count;
                nm++;
            }
        }
        /* the block's rows: from its first to its last piece's */
        const uint64_t r0 = doc->blocks[blocks[k]].from.row;
        const size_t nbr = np > 0 ? (size_t)(pieces[np - 1].i - r0 + 1) : 0;
        /* long pieces are read well block by block, in bounded batches: read ahead,
         * they would only hold the room of whole blocks (and hold back the block
         * stream, decompressing, say); a job's rows are counted in 32 bits (an
         * entry's row, doc_ahead.h), well within AHEAD_ROWS */
        if (values + evs > AHEAD_VALUES || pl->nent + nev > AHEAD_PIECES ||
            calls + mcalls > AHEAD_META_CALLS || (nev > 0 && evs / nev >= AHEAD_LONG) ||
            nrow + nbr > AHEAD_ROWS)
            break;
        SX_CHECK(grow((void **)&pl->block, &pl->block_cap, pl->nblock + 1,
                      sizeof *pl->block) &&
                     grow((void **)&pl->first, &pl->first_cap, pl->nblock + 2,
                          sizeof *pl->first) &&
                     grow((void **)&pl->mfirst, &pl->mfirst_cap, pl->nblock + 2,
                          sizeof *pl->mfirst) &&
                     grow((void **)&pl->rfirst, &pl->rfirst_cap, pl->nblock + 2,
                          sizeof *pl->rfirst) &&
                     grow((void **)&pl->mrow, &pl->mrow_cap, pl->nmeta + nm,
                          sizeof *pl->mrow) &&
                     grow((void **)&pl->rix, &pl->rix_cap, nrow + nbr, sizeof *pl->rix) &&
                     /* last: 'ent' follows its room at once */
                     sx_big_reserve(&pl->ent_mem,
                                    ent_room((pl->nent + nev) * sizeof *pl->ent,
                                             AHEAD_PIECES * sizeof *pl->ent),
                                    pl->nent * sizeof *pl->ent),
                 SX_ERR_NOMEM, err, run->path, "out of memory");
        pl->ent = pl->ent_mem.p;
        pl->block[pl->nblock] = blocks[k];
        pl->first[pl->nblock] = pl->nent;
        pl->mfirst[pl->nblock] = pl->nmeta;
        pl->rfirst[pl->nblock] = nrow;
        for (size_t r = 0; r < nbr; r++)
            pl->rix[nrow + r] = &run->index[doc->order[r0 + r]];
        for (size_t q = 0; q < np; q++) {
            const struct sx_piece *pc = &pieces[q];
            const size_t row = nrow + (size_t)(pc->i - r0);
            if (sx_seg_col(pc->seg) >= 0) {
                pl->ent[pl->nent++] = (struct sx_doc_ahead_ent){
                    pc->a, values, (uint32_t)row, (uint32_t)(pc->z - pc->a), pc->seg};
                values += pc->z - pc->a;
            } else if (pc->seg == SX_SEG_META && pl->metas) {
                pl->mrow[pl->nmeta++] = row;
            }
        }
        nrow += nbr;
        calls += mcalls;
        pl->nblock++;
        pl->first[pl->nblock] = pl->nent;
        pl->mfirst[pl->nblock] = pl->nmeta;
        pl->rfirst[pl->nblock] = nrow;
    }
out:
    if (st != SX_OK)
        pl->nblock = pl->nent = pl->nmeta = 0;
    free(pieces);
    return st;
}

/* The values of the pieces 'ah' plans. */
static uint64_t ahead_values(const struct sx_doc_ahead *ah) {
    const struct sx_doc_ahead_ent *last =
        ah->pl.nent > 0 ? &ah->pl.ent[ah->pl.nent - 1] : NULL;
    return last != NULL ? last->at + last->n : 0;
}

/*
 * The bytes to reserve of a room for 'want' bytes that never needs more than 'bound':
 * 'want' while it is small (malloc's), else the bound at once: grown in steps, each
 * step's fresh mapping would fault its pages in again (pages never written are never
 * touched; a small export does not touch a large frame for a few bytes).
 */
static size_t room_of(size_t want, size_t bound) {
    return want < SX_BIG_MIN ? want : bound;
}

static size_t arena_room(const struct sx_doc_ahead *ah) {
    return room_of((size_t)(ahead_values(ah) + 1) * sizeof *ah->arena,
                   (AHEAD_VALUES + 1) * sizeof *ah->arena);
}

static size_t slices_room(const struct sx_doc_ahead *ah) {
    return room_of(ah->pl.nent * sizeof(struct sx_slice),
                   AHEAD_PIECES * sizeof(struct sx_slice));
}

enum sx_status sx_doc_ahead_read(const struct sx_doc *doc,
                                 const struct sx_event_source *src,
                                 struct sx_doc_ahead *ah, struct sx_big *slices_mem,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_run *run = doc->run;
    const size_t nrow = ah->pl.nblock > 0 ? ah->pl.rfirst[ah->pl.nblock] : 0;
    rows_release(ah);
    if (nrow == 0)
        goto out;

    /* The rows, as the source fills them: what a block read ahead writes of them. */
    SX_CHECK(sx_big_reserve(&ah->rows_mem, nrow * sizeof *ah->rows, 0), SX_ERR_NOMEM, err,
             run->path, "out of memory");
    ah->rows = ah->rows_mem.p;
    st = src->ops->fill_rows(src->ctx, run, ah->pl.rix, nrow, ah->rows, err);
    ah->nrows = nrow; /* fill_rows zeroes every row before it reads into any */
    if (st != SX_OK)
        goto out;

    /* Their events: one slice per piece, one read. */
    if (ah->pl.nent > 0) {
        SX_CHECK(sx_big_reserve(&ah->arena_mem, arena_room(ah), 0) &&
                     sx_big_reserve(slices_mem, slices_room(ah), 0),
                 SX_ERR_NOMEM, err, run->path, "out of memory");
        ah->arena = ah->arena_mem.p;
        struct sx_slice *slices = slices_mem->p;
        memset(slices, 0, ah->pl.nent * sizeof *slices);
        for (size_t e = 0; e < ah->pl.nent; e++) {
            const struct sx_doc_ahead_ent *en = &ah->pl.ent[e];
            int c = sx_seg_col(en->seg);
            slices[e].row = &ah->rows[en->row];
            slices[e].first = en->a;
            slices[e].n = en->n;
            slices[e].cols = SX_COLBIT(c);
            slices[e].col[c] = ah->arena + en->at;
        }
        st = src->ops->read_slices(src->ctx, run, slices, ah->pl.nent, err);
        if (st != SX_OK)
            goto out;
    }

    /* Their event_metadata: one read. */
    if (ah->pl.nmeta > 0) {
        SX_CHECK(
            grow((void **)&ah->mrows, &ah->mrows_cap, ah->pl.nmeta, sizeof *ah->mrows) &&
                grow((void **)&ah->moff, &ah->moff_cap, ah->pl.nmeta + 1,
                     sizeof *ah->moff) &&
                grow((void **)&ah->many, &ah->many_cap, ah->pl.nmeta, sizeof *ah->many),
            SX_ERR_NOMEM, err, run->path, "out of memory");
        for (size_t m = 0; m < ah->pl.nmeta; m++)
            ah->mrows[m] = &ah->rows[ah->pl.mrow[m]];
        st = src->ops->read_metas(src->ctx, run, ah->mrows, ah->pl.nmeta, true,
                                  &ah->mtext, ah->moff, ah->many, err);
    }
out:
    if (st != SX_OK)
        ah->pl.nblock = ah->pl.nent = ah->pl.nmeta = 0;
    return st;
}

enum sx_status sx_doc_ahead_fill(const struct sx_doc *doc,
                                 const struct sx_event_source *src,
                                 struct sx_doc_ahead *ah, const size_t *blocks, size_t n,
                                 struct sx_big *slices, struct sx_error *err) {
    enum sx_status st = sx_doc_ahead_plan(doc, src, &ah->pl, blocks, n, err);
    return st == SX_OK ? sx_doc_ahead_read(doc, src, ah, slices, err) : st;
}

/* Write a byte of each page of b->p[0 .. n): their frames faulted in. */
static void touch(const struct sx_big *b, size_t n) {
    const long page = sysconf(_SC_PAGESIZE);
    const size_t step = page > 0 ? (size_t)page : 4096;
    for (size_t at = 0; at < n && at < b->cap; at += step)
        ((volatile char *)b->p)[at] = 0;
}

void sx_doc_ahead_warm(struct sx_doc_ahead *ah) {
    const size_t nrow = ah->pl.nblock > 0 ? ah->pl.rfirst[ah->pl.nblock] : 0;
    /* the rooms as sx_doc_ahead_read reserves them, so that it finds them so */
    if (nrow > 0 && sx_big_reserve(&ah->rows_mem, nrow * sizeof *ah->rows, 0))
        touch(&ah->rows_mem, nrow * sizeof *ah->rows);
    if (ah->pl.nent == 0)
        return;
    if (sx_big_reserve(&ah->arena_mem, arena_room(ah), 0))
        touch(&ah->arena_mem, (ahead_values(ah) + 1) * sizeof *ah->arena);
    /* not the slices' room: the caller's, which it may read into meanwhile */
}

const struct sx_row *sx_doc_ahead_rows(const struct sx_doc_ahead *ah, long k) {
    return ah != NULL && ah->rows != NULL && k >= 0 && (size_t)k < ah->pl.nblock
               ? ah->rows + ah->pl.rfirst[k]
               : NULL;
}
