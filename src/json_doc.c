/* json_doc.c - the JSON profile as a pipeline document: its plan, blocks read ahead */
#include "doc.h"
#include "doc_ahead.h"
#include "doc_plan.h"
#include "h5_read.h"
#include "pipeline.h"
#include "run.h"
#include "stream.h"

#include <stdlib.h>

/* The JSON profile as a stream producer: the plan's blocks, events from 'src'. */
struct json_doc {
    struct sx_doc doc;
    struct sx_event_source src;
    struct sx_doc_ahead ahead;
    struct sx_doc_room room;
};

static enum sx_status json_head(void *ctx, struct sx_buf *out, struct sx_error *err) {
    return sx_doc_header(&((const struct json_doc *)ctx)->doc, out, err);
}

static enum sx_status json_tail(void *ctx, struct sx_buf *out, struct sx_error *err) {
    return sx_doc_trailer(&((const struct json_doc *)ctx)->doc, out, err);
}

/* Read this rank's next blocks together, unless the first of them was read already. */
static enum sx_status json_prepare(void *ctx, const size_t *next, size_t n, size_t *ready,
                                   struct sx_error *err) {
    struct json_doc *j = ctx;
    enum sx_status st = SX_OK;
    if (n > 0 && !sx_doc_ahead_has(&j->ahead, next[0]))
        st = sx_doc_ahead_fill(&j->doc, &j->src, &j->ahead, next, n, err);
    *ready = 0;
    while (*ready < n && sx_doc_ahead_has(&j->ahead, next[*ready]))
        ++*ready;
    return st;
}

static enum sx_status json_block(void *ctx, size_t b, struct sx_buf *out,
                                 struct sx_error *err) {
    struct json_doc *j = ctx;
    return sx_doc_block(&j->doc, &j->src, &j->ahead, &j->room, b, out, err);
}

static uint64_t json_units(void *ctx, size_t b) {
    return ((const struct json_doc *)ctx)->doc.blocks[b].units;
}

/* The plan, the same on every rank; events from the HDF5 run. Local. */
static void json_free(void *ctx) {
    struct json_doc *j = ctx;
    if (j == NULL)
        return;
    sx_doc_ahead_free(&j->ahead);
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
    sx_doc_ahead_init(&j->ahead);
    j->src = sx_h5_event_source(p->h5);
    st = sx_doc_plan(&j->doc, p->run, p->filter, p->o->indent, p->o->block_bytes, err);
    d->prod = (struct sx_producer){.ctx = j,
                                   .nblocks = j->doc.nblocks,
                                   .total_bytes = j->doc.total_units,
                                   .head = json_head,
                                   .tail = json_tail,
                                   .block = json_block,
                                   .block_units = json_units,
                                   .prepare = json_prepare};
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
