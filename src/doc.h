/* doc.h - the JSON document's text: row order, blocks, header, rows, trailer */
#ifndef SX_DOC_H
#define SX_DOC_H

#include "json_write.h"
#include "regex.h"
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
    uint64_t *order; /* indexes into run->rows, in document order */
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

/* The document's text up to and including "regions": [ . */
enum sx_status sx_doc_header(const struct sx_doc *doc, struct sx_buf *out,
                             struct sx_error *err);
/* "]" and the rest of the document after the region rows. */
enum sx_status sx_doc_trailer(const struct sx_doc *doc, struct sx_buf *out,
                              struct sx_error *err);

/* Where a block's events come from. */
struct sx_event_source {
    struct sx_h5 *h5; /* NULL: the run's loaded columns */
};

/* Append the text of block 'b' (header and trailer excluded) to 'out'. */
enum sx_status sx_doc_block(const struct sx_doc *doc, const struct sx_event_source *src,
                            size_t b, struct sx_buf *out, struct sx_error *err);

#endif /* SX_DOC_H */
