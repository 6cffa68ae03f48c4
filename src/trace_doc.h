/* trace_doc.h - a trace document (Chrome, speedscope, Perfetto) as a table of operations
 */
#ifndef SX_TRACE_DOC_H
#define SX_TRACE_DOC_H

#include "pipeline.h"
#include "trace.h"

/*
 * What makes one trace document different from another, on the shared plan
 * (trace.h): trace_export.c cuts every selected rank's calls into blocks and
 * streams them; a format only says how many bytes a call takes, which ranks
 * it shows, and formats head, blocks and tail. A new trace format is one file
 * that defines one of these, an sx_doc_type whose plan calls
 * sx_trace_doc_plan with it, and one entry in pipeline.c's table.
 */
struct sx_trace_format {
    const char *name;      /* for messages: "Chrome trace" */
    bool every_rank;       /* without --ranks: every rank (else rank 0) */
    bool needs_regions;    /* no region left by the filters is the reference's error */
    bool skip_empty_ranks; /* a selected rank without calls has no block */
    unsigned call_bytes;   /* about how many bytes a call takes: the blocks' size */
    bool rank_blocks;      /* without --block-size, a block per selected rank: one
                              process sorts a rank's calls, once */

    /*
     * NOTE: collective over 'p->comm', agreed inside. The format's state for
     * the planned trace 't' (borrowed, lives until 'free'), new in '*fmt'
     * (NULL accepted by 'free' when it fails).
     */
    enum sx_status (*prepare)(const struct sx_pipe *p, struct sx_trace *t, void **fmt,
                              struct sx_error *err);
    /* The text before block 0 and after the last block (NULL: none). Rank 0 only. */
    void (*head)(void *fmt, struct sx_buf *out);
    void (*tail)(void *fmt, struct sx_buf *out);
    /* Selected rank 'k''s calls [from, to) in the format's order, appended to 'out'. */
    enum sx_status (*block)(void *fmt, size_t k, uint64_t from, uint64_t to,
                            struct sx_buf *out, struct sx_error *err);
    /* Optional, both or neither (the stream's sx_producer.pre): the block's first
     * step, on its maker, and its text from that, on rank 0. */
    enum sx_status (*pre)(void *fmt, size_t k, uint64_t from, uint64_t to,
                          struct sx_buf *out, struct sx_error *err);
    enum sx_status (*finish)(void *fmt, const struct sx_buf *in, struct sx_buf *out,
                             struct sx_error *err);
    void (*free)(void *fmt);
};

/*
 * NOTE: collective over 'p->comm', agreed inside. The trace plan, the
 * reference's checks of the selection, the blocks and the format's state;
 * the producer in 'ds->prod'. 'f' is borrowed (a static table).
 */
enum sx_status sx_trace_doc_plan(const struct sx_pipe *p, struct sx_doc_state *ds,
                                 const struct sx_trace_format *f, struct sx_error *err);

#endif /* SX_TRACE_DOC_H */
