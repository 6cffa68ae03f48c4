/* json_doc.c - the JSON profile as a pipeline document: its plan, blocks read ahead */
#include "doc.h"
#include "doc_ahead.h"
#include "doc_plan.h"
#include "h5_read.h"
#include "pipeline.h"
#include "run.h"
#include "stream.h"
#include "worker.h"

#include <stdlib.h>
#include <string.h>

/*
 * The next blocks read ahead in a helper thread while the caller formats those read
 * before: in a many-row run, reading a block (the index rows, the event columns'
 * pages, their deltas, the event metadata as stored) costs about its formatting. The
 * thread reads into the read-ahead the caller does not format from, one job at a time,
 * planned, given and collected by json_prepare (the caller plans the next job while the
 * thread reads, and makes the event metadata canonical as it formats: neither reads the
 * source); the caller asks nothing of the source while a job runs (a block read ahead
 * needs nothing more of it, and any other waits for the job first), so the source is
 * never used by two threads at once. Only where a helper thread may run
 * (sx_helper_allowed): one process, or ranks not bound to one core each.
 */
struct reader {
    struct sx_worker t;
    struct json_doc *j;
    bool given, done;        /* a job given; and done (under t.mu) */
    struct sx_doc_ahead *ah; /* planned by the caller, read by the thread */
    bool warm;               /* the job is sx_doc_ahead_warm: the source is not read */
    enum sx_status st;
    struct sx_error err;
};

/* The JSON profile as a stream producer: the plan's blocks, events from 'src'. */
struct json_doc {
    struct sx_doc doc;
    struct sx_event_source src;
    struct sx_doc_ahead ahead[2]; /* ahead[cur] is formatted from, the other read into */
    int cur;
    /* with a reader, the plan of its next job, made while it reads the one before;
     * nblock 0: none */
    struct sx_ahead_plan plan;
    struct sx_big slices; /* the slices of a read-ahead's read (sx_doc_ahead_fill) */
    struct reader *rd;    /* NULL: none (yet, or to be had) */
    bool rd_tried, warmed;
    struct sx_doc_room room;
};

static enum sx_status json_head(void *ctx, struct sx_buf *out, struct sx_error *err) {
    return sx_doc_header(&((const struct json_doc *)ctx)->doc, out, err);
}

static enum sx_status json_tail(void *ctx, struct sx_buf *out, struct sx_error *err) {
    return sx_doc_trailer(&((const struct json_doc *)ctx)->doc, out, err);
}

static void *reader_main(void *arg) {
    struct reader *r = arg;
    pthread_mutex_lock(&r->t.mu);
    for (;;) {
        while (!r->t.quit && (!r->given || r->done))
            pthread_cond_wait(&r->t.cv, &r->t.mu);
        if (r->t.quit)
            break;
        pthread_mutex_unlock(&r->t.mu);
        sx_error_clear(&r->err);
        if (r->warm)
            sx_doc_ahead_warm(r->ah);
        else
            r->st =
                sx_doc_ahead_read(&r->j->doc, &r->j->src, r->ah, &r->j->slices, &r->err);
        pthread_mutex_lock(&r->t.mu);
        r->done = true;
        pthread_cond_broadcast(&r->t.cv);
    }
    pthread_mutex_unlock(&r->t.mu);
    return NULL;
}

/* Wait for the job given, if any, and with 'collect' take it back (its read-ahead and
 * status are the caller's again): false when there was none. */
static bool reader_wait(struct reader *r, bool collect) {
    if (r == NULL || !r->given) /* 'given' is the caller's to change */
        return false;
    pthread_mutex_lock(&r->t.mu);
    while (!r->done)
        pthread_cond_wait(&r->t.cv, &r->t.mu);
    if (collect)
        r->given = false;
    pthread_mutex_unlock(&r->t.mu);
    return true;
}

/* Give the reader the blocks 'ah' plans to read into it, or with 'warm' its rooms to
 * fault in (no job is given). */
static void reader_give(struct reader *r, struct sx_doc_ahead *ah, bool warm) {
    pthread_mutex_lock(&r->t.mu);
    r->ah = ah;
    r->warm = warm;
    r->st = SX_OK;
    r->given = true;
    r->done = false;
    pthread_cond_broadcast(&r->t.cv);
    pthread_mutex_unlock(&r->t.mu);
}

/* The reader thread, started at the first job it can take; NULL: none. */
static struct reader *reader_of(struct json_doc *j) {
    if (j->rd != NULL || j->rd_tried)
        return j->rd;
    j->rd_tried = true;
    if (!sx_helper_allowed())
        return NULL;
    struct reader *r = sx_calloc(1, sizeof *r);
    if (r == NULL)
        return NULL; /* read in the caller's thread, as without a helper */
    r->j = j;
    if (!sx_worker_start(&r->t, reader_main, r)) {
        free(r);
        return NULL;
    }
    j->rd = r;
    return r;
}

static void reader_stop(struct json_doc *j) {
    if (j->rd == NULL)
        return;
    sx_worker_stop(&j->rd->t); /* a job under way ends first */
    free(j->rd);
    j->rd = NULL;
}

/* The reader's first job, when it follows the first block: its blocks at most. The
 * caller waits for it (after the block it reads itself), and a job of a few blocks keeps
 * it waiting less: the 1024 x 64 run's first job of six blocks had it wait ~8 ms (export
 * 0.127 -> 0.121 s with two). Blocks after the first looked through for it: those before
 * it are read where they are formatted (long pieces, doc_ahead.c), and meanwhile its
 * rooms are faulted in for a whole job. */
enum { FIRST_JOB = 2, FIRST_JOB_SCAN = 16 };

/*
 * Give the reader next[0 .. n): the plan made for them before, else made now, into the
 * read-ahead not formatted from; then plan the job after it, made here while the reader
 * reads (planning is about a tenth of a job, and the reader is the slower of the two).
 */
static enum sx_status give_next(struct json_doc *j, const size_t *next, size_t n,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_doc_ahead *into = &j->ahead[1 - j->cur];
    if (into->pl.nblock > 0 && into->pl.block[0] == next[0])
        ; /* planned and warmed (a plan left from blocks formatted lies before next[0]) */
    else if (j->plan.nblock > 0 && j->plan.block[0] == next[0]) {
        const struct sx_ahead_plan t = into->pl; /* its rooms stay its own */
        into->pl = j->plan;
        j->plan = t;
    } else
        st = sx_doc_ahead_plan(&j->doc, &j->src, &into->pl, next, n, err);
    j->plan.nblock = 0;
    if (st != SX_OK || into->pl.nblock == 0)
        return st;
    reader_give(j->rd, into, false);
    if (into->pl.nblock < n)
        st = sx_doc_ahead_plan(&j->doc, &j->src, &j->plan, next + into->pl.nblock,
                               n - into->pl.nblock, err);
    return st;
}

/*
 * The reader's first job, planned into the read-ahead not formatted from and given to
 * the reader to fault its rooms in (sx_doc_ahead_warm): the first blocks after next[0]
 * that can be read ahead, FIRST_JOB of them right after it, else a whole job's. The
 * caller goes on meanwhile (the warming reads no source), and collects it only to give
 * the reader its first read: the rooms of a job of the 1024 x 64 run are ~8 MiB of fresh
 * memory, which a virtual machine fills at 0.2-2 GB/s, and its first job (after the
 * run's first blocks, of long rows, formatted here alone) had the caller wait 11-61 ms.
 */
static enum sx_status warm_first(struct json_doc *j, struct reader *r, const size_t *next,
                                 size_t n, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_ahead_plan *pl = &j->ahead[1 - j->cur].pl;
    j->warmed = true;
    for (size_t k = 1; k < n && k <= FIRST_JOB_SCAN && st == SX_OK; k++) {
        st = sx_doc_ahead_plan(&j->doc, &j->src, pl, next + k,
                               k == 1 && n - k > FIRST_JOB ? FIRST_JOB : n - k, err);
        if (st == SX_OK && pl->nblock > 0) {
            reader_give(r, &j->ahead[1 - j->cur], true);
            break;
        }
    }
    return st;
}

/*
 * Make this rank's next blocks ready: those the reader read, else read here; then give
 * the reader the blocks after those ready.
 */
static enum sx_status json_prepare(void *ctx, const size_t *next, size_t n, size_t *ready,
                                   struct sx_error *err) {
    struct json_doc *j = ctx;
    enum sx_status st = SX_OK;
    *ready = 0;
    struct reader *r = n > 0 ? reader_of(j) : j->rd;
    /* a job read: collected (a warming is collected when the reader is next needed) */
    if ((r == NULL || !r->given || !r->warm || n == 0) && reader_wait(r, true)) {
        if (r->st != SX_OK) {
            *err = r->err;
            return r->st;
        }
        if (n > 0 && sx_doc_ahead_has(&j->ahead[1 - j->cur], next[0]))
            j->cur = 1 - j->cur;
    }
    struct sx_doc_ahead *ah = &j->ahead[j->cur];
    if (r != NULL && !j->warmed && n > 1)
        st = warm_first(j, r, next, n, err);
    /* with a reader, only the first block here: the reader reads the next meanwhile (a
     * block not read ahead is read here beside a warming, as that reads no source) */
    if (st == SX_OK && n > 0 && !sx_doc_ahead_has(ah, next[0]))
        st = sx_doc_ahead_fill(&j->doc, &j->src, ah, next, r != NULL ? 1 : n, &j->slices,
                               err);
    while (*ready < n && sx_doc_ahead_has(ah, next[*ready]))
        ++*ready;
    if (r != NULL && st == SX_OK && *ready > 0 && *ready < n) {
        if (r->given && r->warm) {
            /* warming: taken back only for a job to give (not while the blocks next are
             * of long rows, read here) */
            if (j->plan.nblock == 0 || j->plan.block[0] != next[*ready])
                st = sx_doc_ahead_plan(&j->doc, &j->src, &j->plan, next + *ready,
                                       n - *ready, err);
            if (st != SX_OK || j->plan.nblock == 0)
                return st;
            reader_wait(r, true);
        }
        st = give_next(j, next + *ready, n - *ready, err);
    }
    return st;
}

static enum sx_status json_block(void *ctx, size_t b, struct sx_buf *out,
                                 struct sx_error *err) {
    struct json_doc *j = ctx;
    const struct sx_doc_ahead *ah = &j->ahead[j->cur];
    if (!sx_doc_ahead_has(ah, b) && (j->rd == NULL || !j->rd->warm))
        reader_wait(j->rd, false); /* it reads the source itself: not beside the reader */
    return sx_doc_block(&j->doc, &j->src, ah, &j->room, b, out, err);
}

/* The rows of this rank's blocks, told to the source: a summary holds their statistics
 * alone (h5_summary.c), 104 bytes a row of the run on every rank otherwise. */
static enum sx_status json_claim(void *ctx, const bool *mine, struct sx_error *err) {
    struct json_doc *j = ctx;
    const struct sx_doc *doc = &j->doc;
    const struct sx_run *run = doc->run;
    enum sx_status st = SX_OK;
    if (j->src.ops == NULL || j->src.ops->hold_rows == NULL || !run->summary_index)
        return SX_OK;
    uint8_t *want = sx_calloc(run->nindex + 1, 1);
    SX_CHECK(want != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
    for (size_t b = 0; b < doc->nblocks; b++) {
        if (!mine[b])
            continue;
        const struct sx_block *blk = &doc->blocks[b];
        /* to its last row, which a block may end within */
        uint64_t end = blk->to.row + (blk->to.seg > 0 || blk->to.ev > 0);
        for (uint64_t i = blk->from.row; i < end && i < doc->nrows; i++)
            want[doc->order[i]] = 1;
    }
    st = j->src.ops->hold_rows(j->src.ctx, run, want, err);
out:
    free(want);
    return st;
}

static uint64_t json_units(void *ctx, size_t b) {
    return ((const struct json_doc *)ctx)->doc.blocks[b].units;
}

/* The plan, the same on every rank; events from the HDF5 run. Local. */
static void json_free(void *ctx) {
    struct json_doc *j = ctx;
    if (j == NULL)
        return;
    reader_stop(j);
    sx_doc_ahead_free(&j->ahead[0]);
    sx_doc_ahead_free(&j->ahead[1]);
    sx_ahead_plan_free(&j->plan);
    sx_big_free(&j->slices);
    sx_doc_room_free(&j->room);
    sx_doc_free(&j->doc);
    free(j);
}

static enum sx_status json_plan(const struct sx_pipe *p, struct sx_doc_state *d,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct json_doc *j = sx_calloc(1, sizeof *j);
    d->ctx = j;
    d->free = json_free;
    SX_CHECK(j != NULL, SX_ERR_NOMEM, err, p->input, "out of memory");
    sx_doc_ahead_init(&j->ahead[0]);
    sx_doc_ahead_init(&j->ahead[1]); /* (j->plan: zero, from calloc) */
    j->src = sx_h5_event_source(p->h5);
    st = sx_doc_plan(&j->doc, p->run, p->filter, p->o->indent, p->o->block_bytes, err);
    d->prod = (struct sx_producer){.ctx = j,
                                   .nblocks = j->doc.nblocks,
                                   .total_bytes = j->doc.total_units,
                                   .head = json_head,
                                   .tail = json_tail,
                                   .block = json_block,
                                   .block_units = json_units,
                                   .prepare = json_prepare,
                                   .claim = json_claim};
out:
    return st;
}

const struct sx_doc_type sx_doc_json = {
    .format = SX_FORMAT_JSON,
    .events_for = NULL, /* a summary-only read is a JSON profile too */
    .needs = SX_NEED_INDEX | SX_NEED_LANES_ROOT | SX_NEED_GPU,
    .plan = json_plan,
    .plan_native = sx_native_json_plan,
};
