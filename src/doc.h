/* doc.h - the JSON document's text from its plan: header, blocks of rows, trailer */
#ifndef SX_DOC_H
#define SX_DOC_H

#include "buf.h"
#include "doc_plan.h"
#include "run.h"

struct sx_doc_ahead; /* doc_ahead.h */

/* The document's text up to and including "regions": [ . */
enum sx_status sx_doc_header(const struct sx_doc *doc, struct sx_buf *out,
                             struct sx_error *err);
/* "]" and the rest of the document after the region rows. */
enum sx_status sx_doc_trailer(const struct sx_doc *doc, struct sx_buf *out,
                              struct sx_error *err);

/*
 * Where a block's events are read when they were not read ahead, kept by the
 * caller from one block to the next: a block's room allocated afresh faults
 * every page of it in again (10M events' .json at one process: a third of its
 * CPU time). Zero-initialise; sx_doc_room_free.
 */
struct sx_doc_room {
    int64_t *arena;
    uint64_t arena_cap;
    struct sx_slice *slices;
    size_t slices_cap;
};

void sx_doc_room_free(struct sx_doc_room *room);

/*
 * Append the text of block 'b' (header and trailer excluded) to 'out'; its
 * events come from 'ah' when it was read ahead there ('ah' may be NULL), else
 * are read into 'room' (NULL: room of the block's own).
 */
enum sx_status sx_doc_block(const struct sx_doc *doc, const struct sx_event_source *src,
                            const struct sx_doc_ahead *ah, struct sx_doc_room *room,
                            size_t b, struct sx_buf *out, struct sx_error *err);

#endif /* SX_DOC_H */
