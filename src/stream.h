/* stream.h - the block stream: owners format blocks, rank 0 writes them in order */
#ifndef SX_STREAM_H
#define SX_STREAM_H

#include "buf.h"
#include "out_file.h"

/*
 * A document cut into blocks. Rank 0 writes 'head', then blocks 0 ..
 * nblocks-1 in order, then 'tail'; each block's text is made by the rank
 * that owns it (sx_stream_owner). The callbacks are local: they must make no
 * collective call. A failing callback sets 'err' and returns its status; the
 * stream's protocol then stops every rank and agrees on that error.
 */
struct sx_producer {
    void *ctx;
    size_t nblocks;
    uint64_t total_bytes; /* the progress total: bytes of the whole text (exact when
                             known), or the sum of block_units */
    /* Text before block 0 and after the last block. Rank 0 only. */
    enum sx_status (*head)(void *ctx, struct sx_buf *out, struct sx_error *err);
    enum sx_status (*tail)(void *ctx, struct sx_buf *out, struct sx_error *err);
    /* Text of block 'b', appended to the empty 'out'. On the block's owner only. */
    enum sx_status (*block)(void *ctx, size_t b, struct sx_buf *out,
                            struct sx_error *err);
    /* Optional, rank 0: block 'b''s share of the progress (exact, where bytes are only
     * estimated before the text is made). NULL: the progress counts bytes. */
    uint64_t (*block_units)(void *ctx, size_t b);
    /*
     * Optional, on every rank: before it formats block next[0], the blocks this
     * rank formats next, 'next[0 .. n)' in order (n <= SX_STREAM_AHEAD), so that
     * their events can be read together. '*ready' is how many of them, from the
     * first, the producer made ready: it is asked again at the first block after
     * those. Which rank formats which block stays the stream's business.
     */
    enum sx_status (*prepare)(void *ctx, const size_t *next, size_t n, size_t *ready,
                              struct sx_error *err);
    /* Optional, on every rank that formats a block, once before its first block (and
     * 'prepare'): mine[b] for every block, true for those this rank formats, so that it
     * holds what those need alone. An error is that block's. */
    enum sx_status (*claim)(void *ctx, const bool *mine, struct sx_error *err);
    /* Optional, on every rank: the part of the document block 'b' belongs to (a trace's
     * rank), ascending with 'b'; a stream in 'turns' hands out the blocks by part. */
    size_t (*part)(void *ctx, size_t b);
    /*
     * Optional, both or neither: a block made in two steps, so that rank 0 can take the
     * second. 'pre', on the block's owner, appends what 'finish', on rank 0, turns
     * into the block's text (appended to the empty 'out'): 'block''s text, exactly.
     * A stream in 'root_writes_only' at two processes has rank 0 finish the worker's
     * blocks while it keeps up with them (the worker makes the text itself when rank 0
     * falls behind), when the first step is the costly part that a block repeats
     * (speedscope's sort of a rank) and the second is most of the rest (its text).
     */
    enum sx_status (*pre)(void *ctx, size_t b, struct sx_buf *out, struct sx_error *err);
    enum sx_status (*finish)(void *ctx, size_t b, const struct sx_buf *in,
                             struct sx_buf *out, struct sx_error *err);
};

/* Blocks one 'prepare' call is told of, at most. */
enum { SX_STREAM_AHEAD = 64 };

/* How the stream writes. */
struct sx_stream_opts {
    const char *path; /* the output, for messages */
    bool gz;          /* one gzip member of independently deflated segments */
    int level;
    enum sx_deflate eng;
    void (*progress)(uint64_t done, uint64_t total, void *user);
    void *progress_user;
    /* The text is small next to the work of making it (a compressed trace): rank 0,
     * though it writes every byte, formats a full share of the blocks, as for .gz. */
    bool compact;
    /* Making a block takes a setup per part of the document that every block of that
     * part repeats (speedscope sorts a rank's calls): for plain text, rank 0 formats
     * none of the blocks when other ranks can, and only writes. */
    bool root_writes_only;
    /* Making a block takes a setup per part of the document (p->part) that a process
     * pays once for the part's blocks it makes (a trace reads a rank's lanes, a native
     * run opens the rank's file): the blocks go out in turns, each up to
     * SX_STREAM_TURN consecutive blocks of one part, rank 0 included. A worker makes
     * up to a turn ahead of rank 0, so that while rank 0 makes its turn, the next
     * one is being made. */
    bool turns;
};

/* Blocks of one turn, at most; the parts of up to this many blocks go out whole. */
enum { SX_STREAM_TURN = 4 };

/* Which rank formats block 'b' of a stream over 'size' ranks. Producers need not ask
 * ('prepare' tells them); only a plan that moves events between ranks before the stream
 * does (and its stream is not 'root_writes_only'). */
int sx_stream_owner(size_t b, int size, bool gz);

/*
 * NOTE: collective over 'comm' (MPI_COMM_NULL: this process alone). Rank 0
 * passes the open output 'f' (NULL elsewhere) and writes the whole text into
 * it; it does not commit it. Returns the status every rank agreed on, with
 * the failing rank's error in 'err' on every rank.
 */
enum sx_status sx_stream(MPI_Comm comm, const struct sx_producer *p,
                         const struct sx_stream_opts *so, struct sx_out_file *f,
                         struct sx_error *err);

#endif /* SX_STREAM_H */
