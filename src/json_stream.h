/* json_stream.h - a JSON profile read in one pass, a region row at a time */
#ifndef SX_JSON_STREAM_H
#define SX_JSON_STREAM_H

#include "buf.h"
#include "run.h"

/*
 * The reader walks the document's top-level object. The values of its keys
 * are handed over as text, but for "regions": a list, read an element at a
 * time. An element in the forms the exporters write (the keys of a row with
 * integer lists, strings, event metadata of flat objects) is read straight
 * into a row by the reader's own code, the hot path of every read-back;
 * anything else, and every error, is handed over as the element's text for
 * the general parser (jansson), which keeps its checks and messages.
 * SCOPE_EXPORT_FAST_JSON=0 hands over every element as text.
 *
 * Memory: the text of the largest element (or top-level value), and the
 * consumer's. A gzip document is inflated as it is read.
 */
struct sx_jstream_ops {
    /*
     * A top-level value other than a regions list: key 'key' ('klen' bytes;
     * NULL when the document is not an object, then 'text' is all of it),
     * its text 'n' bytes at document offset 'off'.
     */
    enum sx_status (*value)(void *ctx, const char *key, size_t klen, const char *text,
                            size_t n, uint64_t off, struct sx_error *err);
    /* A regions list begins (again when the key repeats). */
    enum sx_status (*regions)(void *ctx, struct sx_error *err);
    /*
     * Element 'i' of regions. Read by the fast path: 'row' is filled (the
     * callee owns what it holds and leaves it cleared or takes it), its
     * name in 'name' ('nlen' bytes, may hold NUL). Otherwise 'row' is NULL
     * and 'text' ('n' bytes at offset 'off') is the element's text.
     */
    enum sx_status (*element)(void *ctx, size_t i, struct sx_row *row, const char *name,
                              size_t nlen, const char *text, size_t n, uint64_t off,
                              struct sx_error *err);
    /* The document ended well-formed (the consumer's last checks). */
    enum sx_status (*end)(void *ctx, struct sx_error *err);
    /* The rows the fast path reads are only looked at: their columns stay NULL. */
    bool no_columns;
    /* The rows' event columns stay NULL (counted, not copied out); the rest is read. */
    bool no_events;
    /* The rows' event metadata is checked, not gathered (meta_text stays NULL). */
    bool no_meta;
    /* The rows' event columns are the reader's own vectors, lent until the element
     * callback returns (row->lent), not copies: a consumer that writes them out at
     * once (an import's events pass) takes no copy of each row. */
    bool lend_events;
};

/* Read the document at 'path' (.json or gzip by content) through 'ops'. */
enum sx_status sx_jstream_read(const char *path, const struct sx_jstream_ops *ops,
                               void *ctx, struct sx_error *err);

/*
 * A part of a plain (not gzip) document for readers that split it between
 * processes. 'from' 0 reads from the start; otherwise it is the offset of a
 * regions element (a guess: see sx_jstream_guess). Elements are read while
 * they start before 'to' (UINT64_MAX: all); a part that reaches the end of
 * regions reads the rest of the document. '*next' is the offset of the first
 * element not read (UINT64_MAX when regions ended in this part), '*count'
 * the elements read. 'first_index' numbers the elements for 'ops'.
 */
enum sx_status sx_jstream_read_part(const char *path, uint64_t from, uint64_t to,
                                    size_t first_index, const struct sx_jstream_ops *ops,
                                    void *ctx, uint64_t *next, size_t *count,
                                    struct sx_error *err);

/*
 * The offset of the first place at or after 'off' where a regions element
 * seems to start (after "}, " comes '{"name": '), or UINT64_MAX. A guess:
 * the text before it is not read, so the caller must confirm it (a part
 * read from before it must end there).
 */
enum sx_status sx_jstream_guess(const char *path, uint64_t off, uint64_t *at,
                                struct sx_error *err);

/*
 * sx_jstream_read() that also copies the document's text into 'copy', but
 * the event columns the fast path read: each is replaced by the string
 * "\u0000sx<N>", its values appended to 'values' (int64), and where they end
 * (an int64 count of values) to 'ends', which starts with a 0. Each
 * event_metadata list it read is replaced by "\u0000sxm<N>" and is item N of
 * the JSON list in 'metas': [length, index, object, index, object, ...], its
 * non-empty objects with their places (the rest are {}), in their text. To
 * 'slots', int64 pairs in the order of the text: (element of "regions", column)
 * for each column marker, (element, -1) for each event_metadata marker, and
 * (element, -2) for each element left as text; none when the document has no
 * "regions" key or more than one.
 */
enum sx_status sx_jstream_copy(const char *path, const struct sx_jstream_ops *ops,
                               void *ctx, struct sx_buf *copy, struct sx_buf *values,
                               struct sx_buf *ends, struct sx_buf *metas,
                               struct sx_buf *slots, struct sx_error *err);

/* The size of 'path' on disk and whether it is gzip. */
enum sx_status sx_jstream_probe(const char *path, uint64_t *size, bool *gz,
                                struct sx_error *err);

#endif /* SX_JSON_STREAM_H */
