/* trace_export.c - a trace document's plan and producer, for any trace format */
#include "mpi_util.h"
#include "pipeline.h"
#include "run.h"
#include "stream.h"
#include "trace.h"
#include "trace_doc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A block of the document: calls [from, to) of selected rank k. */
struct tblock {
    size_t k;
    uint64_t from, to;
};

/* A trace document's state: the plan, the blocks, the format's own. The plan comes
 * first (sx_pipe_trace_state). */
struct trace_state {
    struct sx_trace t;
    const struct sx_trace_format *f;
    void *fmt;
    struct tblock *blocks;
    size_t nblocks;
};

static enum sx_status doc_head(void *ctx, struct sx_buf *out, struct sx_error *err) {
    struct trace_state *s = ctx;
    (void)err;
    if (s->f->head != NULL)
        s->f->head(s->fmt, out);
    return SX_OK;
}

static enum sx_status doc_tail(void *ctx, struct sx_buf *out, struct sx_error *err) {
    struct trace_state *s = ctx;
    (void)err;
    if (s->f->tail != NULL)
        s->f->tail(s->fmt, out);
    return SX_OK;
}

static enum sx_status doc_block(void *ctx, size_t b, struct sx_buf *out,
                                struct sx_error *err) {
    struct trace_state *s = ctx;
    const struct tblock *tb = &s->blocks[b];
    return s->f->block(s->fmt, tb->k, tb->from, tb->to, out, err);
}

static enum sx_status doc_pre(void *ctx, size_t b, struct sx_buf *out,
                              struct sx_error *err) {
    struct trace_state *s = ctx;
    const struct tblock *tb = &s->blocks[b];
    return s->f->pre(s->fmt, tb->k, tb->from, tb->to, out, err);
}

static enum sx_status doc_finish(void *ctx, size_t b, const struct sx_buf *in,
                                 struct sx_buf *out, struct sx_error *err) {
    struct trace_state *s = ctx;
    (void)b;
    return s->f->finish(s->fmt, in, out, err);
}

/* A block's part: its selected rank. */
static size_t doc_part(void *ctx, size_t b) {
    return ((const struct trace_state *)ctx)->blocks[b].k;
}

/* Progress counts calls, and one for each block (a rank without calls has one). */
static uint64_t doc_units(void *ctx, size_t b) {
    const struct tblock *tb = &((const struct trace_state *)ctx)->blocks[b];
    return tb->to - tb->from + 1;
}

/* Cut every selected rank's calls into blocks of about 'block_bytes' of text. */
static enum sx_status plan_blocks(struct trace_state *s, size_t block_bytes,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_trace *t = &s->t;
    const uint64_t per = s->f->call_bytes > 0 ? s->f->call_bytes : 1;
    uint64_t calls = block_bytes / per > 0 ? block_bytes / per : 1;
    size_t cap = 16, n = 0;
    s->blocks = sx_malloc(cap * sizeof *s->blocks);
    SX_CHECK(s->blocks != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
    for (size_t k = 0; k < t->nranks; k++) {
        uint64_t nk = sx_trace_rank_calls(t, t->ranks[k]);
        if (s->f->skip_empty_ranks && nk == 0)
            continue;
        uint64_t at = 0;
        do {
            uint64_t to = nk - at > calls ? at + calls : nk;
            if (n == cap) {
                cap *= 2;
                struct tblock *nb = sx_realloc(s->blocks, cap * sizeof *nb);
                SX_CHECK(nb != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
                s->blocks = nb;
            }
            s->blocks[n++] = (struct tblock){k, at, to};
            at = to;
        } while (at < nk);
    }
    s->nblocks = n;
out:
    return st;
}

static void trace_free(void *ctx) {
    struct trace_state *s = ctx;
    if (s == NULL)
        return;
    if (s->f != NULL && s->f->free != NULL)
        s->f->free(s->fmt); /* (before the plan: it may unload a rank's columns) */
    free(s->blocks);
    sx_trace_free(&s->t);
    free(s);
}

enum sx_status sx_trace_doc_plan(const struct sx_pipe *p, struct sx_doc_state *ds,
                                 const struct sx_trace_format *f, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_options *o = p->o;
    /* Stages: the state, the region order (NOTE: collective). */
    struct trace_state *s = NULL;
    st = sx_pipe_trace_state(p, ds, sizeof *s, trace_free, err);
    if (st != SX_OK)
        return st;
    s = ds->ctx;
    s->f = f;
    struct sx_trace *t = &s->t;
    t->perf = p->perf;
    t->nperf = p->nperf; /* borrowed */
    if (f->every_rank && o->ranks == NULL)
        st = sx_trace_select_every_rank(t, err);
    if (st == SX_OK)
        st = sx_trace_check_selection(t, f->needs_regions, err);
    if (st == SX_OK)
        st = plan_blocks(s,
                         o->block_bytes   ? o->block_bytes
                         : f->rank_blocks ? SIZE_MAX
                                          : (size_t)4 << 20,
                         err);
    st = sx_all_ok(p->comm, st, err);
    if (st != SX_OK)
        return st;
    /* Stage: the format's own state (NOTE: collective, its own agreement). */
    st = f->prepare(p, t, &s->fmt, err);
    st = sx_all_ok(p->comm, st, err);
    if (st != SX_OK)
        return st;
    uint64_t units = 0;
    for (size_t b = 0; b < s->nblocks; b++)
        units += doc_units(s, b);
    const bool two_step = f->pre != NULL && f->finish != NULL;
    ds->prod = (struct sx_producer){.ctx = s,
                                    .nblocks = s->nblocks,
                                    .total_bytes = units,
                                    .head = doc_head,
                                    .tail = doc_tail,
                                    .block = doc_block,
                                    .block_units = doc_units,
                                    .part = doc_part,
                                    .pre = two_step ? doc_pre : NULL,
                                    .finish = two_step ? doc_finish : NULL};
    return SX_OK;
}
