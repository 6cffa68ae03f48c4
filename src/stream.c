/* stream.c - the block stream: owners format blocks, rank 0 writes them in order */
#include "stream.h"

#include "buf.h"
#include "deflate_out.h"
#include "fault.h"
#include "mpi_util.h"
#include "out_file.h"
#include "stop.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * The protocol, on the stream's communicator:
 *   worker -> 0  TAG_HDR   a block's header, then its bytes as TAG_DATA pieces;
 *                          last, an 'end' header carrying the worker's status
 *   0 -> worker  TAG_CTRL  one word: 1 = stop producing (sent as soon as rank 0
 *                          fails or learns of a failure), 0 = all went well
 * Rank 0 receives blocks in document order; after the loop it drains every
 * worker up to its 'end' header, so no send is ever left unmatched and no
 * rank waits for a message that will not come. Pieces are bounded, so rank 0
 * can always consume a block, even one it has no memory to keep.
 */
enum { TAG_HDR = 11, TAG_DATA = 12, TAG_CTRL = 13 };

/* Bytes of one TAG_DATA message: what rank 0 can always receive and drop. */
#define PIECE ((uint64_t)1 << 20)

struct block_hdr {
    int32_t status; /* SX_OK, or the sender's error (then 'error' is valid) */
    int32_t end;    /* 1: the sender has nothing more to send */
    uint64_t raw_len;
    uint64_t data_len; /* deflated bytes (gz only) */
    uint32_t crc;
    uint32_t pre; /* 1: the data is the block's first step, rank 0 finishes it */
    struct sx_error error;
};

int sx_stream_owner(size_t b, int size, bool gz) {
    /*
     * For .gz every rank deflates its share, rank 0 included: compression is
     * the cost. For plain text rank 0 also receives and writes every byte, so
     * it formats half a share: in every 2 * size - 1 blocks, one is rank 0's
     * and two in a row are each other rank's (reading compressed columns,
     * formatting costs several times the writing; rank 0 idle would waste it).
     */
    if (gz || size == 1)
        return (int)(b % (size_t)size);
    size_t j = b % (2 * (size_t)size - 1);
    return j == 0 ? 0 : 1 + (int)((j - 1) / 2);
}

/* The owner of block 'b' of this stream: from the turns' table 'own' when there is one.
 */
static int owner_of(const struct sx_stream_opts *so, const int *own, size_t b, int size) {
    if (own != NULL)
        return own[b];
    if (so->root_writes_only && !so->gz && size > 1)
        return 1 + (int)(b % (size_t)(size - 1));
    return sx_stream_owner(b, size, so->gz || so->compact);
}

/* Rank 0 may finish the blocks the one worker only begins (sx_producer.pre); the
 * worker decides block by block (stream_worker) and says so in the block's header. */
static bool root_may_finish(const struct sx_producer *p, const struct sx_stream_opts *so,
                            int size) {
    return p->pre != NULL && p->finish != NULL && so->root_writes_only && !so->gz &&
           size == 2;
}

/*
 * The owners of a stream in turns (sx_stream_opts.turns), in 'own[b]': a part
 * of m blocks makes ceil(m / SX_STREAM_TURN) turns of near-equal length, and
 * the turns are dealt round robin, rank 0 included: with its writes in a thread
 * and around the page cache, receiving and writing take little of its time, and
 * a smaller share for rank 0 was slower (a Chrome trace of 256 native files at
 * two processes: a third 0.93x the time of rank 0 formatting nothing, an equal
 * share 0.75x). NULL when out of memory.
 */
static int *turn_owners(const struct sx_producer *p, int size) {
    int *own = sx_malloc((p->nblocks + 1) * sizeof *own);
    if (own == NULL)
        return NULL;
    size_t turn = 0;
    for (size_t b0 = 0, b1; b0 < p->nblocks; b0 = b1) {
        const size_t q = p->part(p->ctx, b0);
        for (b1 = b0 + 1; b1 < p->nblocks && p->part(p->ctx, b1) == q; b1++)
            ;
        const size_t m = b1 - b0, nt = (m + SX_STREAM_TURN - 1) / SX_STREAM_TURN;
        for (size_t j = 0; j < nt; j++, turn++) /* turn j: blocks [m*j/nt, m*(j+1)/nt) */
            for (size_t b = b0 + m * j / nt; b < b0 + m * (j + 1) / nt; b++)
                own[b] = (int)(turn % (size_t)size);
    }
    return own;
}

/*
 * The owners of a compact stream (sx_stream_opts.compact) whose blocks say
 * their cost (p->block_units), in 'own[b]': the blocks, the costliest first,
 * each to the process with the least cost so far, a worker on a tie. A trace's
 * ranks can differ a hundredfold (one rank with half the calls): dealt round
 * robin, the process that drew the largest made most of the document alone,
 * and rank 0, when that was its, held the largest rank's calls. Rank 0 makes
 * its own blocks ahead while it waits for a worker's (stream_root), so that
 * the document's order costs it little waiting. NULL when out of memory.
 */
struct costed {
    uint64_t cost;
    size_t b;
};

static int cmp_costed(const void *a, const void *b) {
    const struct costed *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1;
    return (x->b > y->b) - (x->b < y->b);
}

static int *cost_owners(const struct sx_producer *p, int size) {
    int *own = sx_malloc((p->nblocks + 1) * sizeof *own);
    struct costed *c = sx_malloc((p->nblocks + 1) * sizeof *c);
    uint64_t *load = sx_calloc((size_t)size, sizeof *load);
    if (own == NULL || c == NULL || load == NULL) {
        free(own);
        own = NULL;
        goto out;
    }
    for (size_t b = 0; b < p->nblocks; b++)
        c[b] = (struct costed){p->block_units(p->ctx, b), b};
    qsort(c, p->nblocks, sizeof *c, cmp_costed);
    for (size_t i = 0; i < p->nblocks; i++) {
        int to = 1;
        for (int r = 2; r < size; r++)
            if (load[r] < load[to])
                to = r;
        if (load[0] < load[to])
            to = 0;
        own[c[i].b] = to;
        load[to] += c[i].cost;
    }
out:
    free(c);
    free(load);
    return own;
}

/*
 * A worker waits for rank 0 without spinning. Open MPI's blocking calls poll
 * a core at full speed; a worker waits when rank 0 writes slower than it
 * formats, and its core is then what the kernel needs to take the written
 * pages (the page cache, its writeback), or what the job beside the export
 * runs on. The wait tests, then sleeps a little longer each time (up to
 * WAIT_MAX_NS): a block takes milliseconds to make, so the latency is lost in
 * it. Its longest wait is the last: for rank 0 to write what is left and say
 * that all went well. Rank 0 waits for a block's header the same way, but
 * sleeps less long (recv_hdr_ahead): a sleep there delays the block it writes.
 */
#define WAIT_MAX_NS 200000L

/*
 * The header of a block rank 0 is to write next is waited for with shorter
 * sleeps (at most ROOT_WAIT_MAX_NS, a hundredth of a block's making): rank 0
 * waits for a worker that formats on the core that MPI's own wait would spin
 * on, beside rank 0's writer thread (speedscope of 10M calls at two processes
 * on two cores: 1.58 s against 1.76 s, medians of 5).
 */
#define ROOT_WAIT_MAX_NS 50000L

/*
 * MPI_Waitall, sleeping between tests, each sleep twice the last up to max_ns;
 * or, while 'work' (when given) finds something to do, doing it instead.
 */
static int wait_doing(int n, MPI_Request *reqs, long max_ns, bool (*work)(void *),
                      void *ctx) {
    long ns = 1000;
    for (;;) {
        int done = 0;
        int rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS || done)
            return rc;
        if (work != NULL && work(ctx))
            continue;
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        ns = ns * 2 < max_ns ? ns * 2 : max_ns;
    }
}

static int wait_all(int n, MPI_Request *reqs, long max_ns) {
    return wait_doing(n, reqs, max_ns, NULL, NULL);
}

/* MPI_Recv of rank 0's control word, sleeping until it is there. */
static int recv_ctrl(int *ctrl, MPI_Comm comm) {
    MPI_Request req;
    int rc = MPI_Irecv(ctrl, 1, MPI_INT, 0, TAG_CTRL, comm, &req);
    return rc == MPI_SUCCESS ? wait_all(1, &req, WAIT_MAX_NS) : rc;
}

static enum sx_status mpi_failed(const char *what, struct sx_error *err) {
    return sx_error_set(err, SX_ERR_MPI, "", "%s failed in the block stream", what);
}

/* A block's text and, for .gz, its deflate segment and CRC. */
struct block_out {
    struct sx_buf raw;
    struct sx_buf z;
    uint32_t crc;
};

/* This rank's place in the stream, for the producer's 'prepare'. */
struct ahead {
    int rank, size;
    size_t from;    /* blocks before 'from' were made ready by the last 'prepare' */
    const int *own; /* the turns' owners, or NULL */
    bool claimed;   /* the producer was told this rank's blocks (sx_producer.claim) */
};

/* Tell the producer which blocks are this rank's, once. */
static enum sx_status claim(const struct sx_producer *p, const struct sx_stream_opts *so,
                            struct ahead *ah, struct sx_error *err) {
    if (p->claim == NULL || ah->claimed)
        return SX_OK;
    ah->claimed = true;
    bool *mine = sx_malloc((p->nblocks + 1) * sizeof *mine);
    if (mine == NULL)
        return sx_error_set(err, SX_ERR_NOMEM, so->path, "out of memory");
    for (size_t b = 0; b < p->nblocks; b++)
        mine[b] = owner_of(so, ah->own, b, ah->size) == ah->rank;
    enum sx_status st = p->claim(p->ctx, mine, err);
    free(mine);
    return st;
}

/* Tell the producer this rank's next blocks from 'b' on, unless they are ready. */
static enum sx_status prepare(const struct sx_producer *p,
                              const struct sx_stream_opts *so, struct ahead *ah, size_t b,
                              struct sx_error *err) {
    size_t next[SX_STREAM_AHEAD] = {0}, n = 0, ready = 0;
    if (p->prepare == NULL || b < ah->from)
        return SX_OK;
    for (size_t k = b; k < p->nblocks && n < SX_STREAM_AHEAD; k++)
        if (owner_of(so, ah->own, k, ah->size) == ah->rank)
            next[n++] = k;
    enum sx_status st = p->prepare(p->ctx, next, n, &ready, err);
    ah->from = ready > 0 && ready <= n ? next[ready - 1] + 1 : b + 1;
    return st;
}

/* Block 'b''s text, or only its first step when 'pre' (rank 0 finishes it). */
static enum sx_status make_block(const struct sx_producer *p,
                                 const struct sx_stream_opts *so, struct ahead *ah,
                                 size_t b, bool pre, struct block_out *bo,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    sx_buf_reset(&bo->raw);
    sx_buf_reset(&bo->z);
    if (sx_stop_requested())
        return sx_error_set(err, SX_ERR_INTERRUPTED, so->path,
                            "%s: export interrupted by a signal; no output was written",
                            so->path);
    st = sx_fault_at(SX_FAIL_READ, err);
    if (st == SX_OK)
        st = claim(p, so, ah, err);
    if (st == SX_OK)
        st = prepare(p, so, ah, b, err);
    if (st == SX_OK)
        st = pre ? p->pre(p->ctx, b, &bo->raw, err) : p->block(p->ctx, b, &bo->raw, err);
    if (st == SX_OK && bo->raw.failed)
        st =
            sx_error_set(err, SX_ERR_NOMEM, so->path, "out of memory formatting a block");
    if (st == SX_OK)
        st = sx_fault_at(SX_FAIL_FORMAT, err);
    if (st == SX_OK && so->gz) {
        bo->crc = sx_crc32(0, bo->raw.data, bo->raw.len);
        st = sx_fault_at(SX_FAIL_COMPRESS, err);
        if (st == SX_OK)
            st = sx_deflate_segment(bo->raw.data, bo->raw.len, so->level, so->eng, false,
                                    &bo->z, err);
    }
    return st;
}

/* ------------------------------------------------------------------ */
/* Rank 0                                                             */

struct writer {
    const struct sx_stream_opts *so;
    struct sx_out_file *f;
    uint32_t crc;
    uint64_t isize;
    uint64_t done, total;
    struct sx_buf z; /* rank 0's own deflate output for head and tail */
};

/* The progress of writing 'raw': block 'b''s units (b < 0: head or tail), else its bytes.
 */
static uint64_t progress_of(const struct sx_producer *p, long b,
                            const struct sx_buf *raw) {
    if (p->block_units == NULL)
        return raw->len;
    return b < 0 ? 0 : p->block_units(p->ctx, (size_t)b);
}

static enum sx_status interrupted(const struct writer *w, struct sx_error *err) {
    return sx_error_set(err, SX_ERR_INTERRUPTED, w->so->path,
                        "%s: export interrupted by a signal; the output was not written "
                        "(an existing file is left as it was)",
                        w->so->path);
}

/*
 * Count a block written: for .gz its text's CRC and length go into the
 * trailer's, and its units into the progress reported.
 */
static void account(struct writer *w, uint64_t raw_len, uint32_t crc, uint64_t units) {
    if (w->so->gz) {
        w->crc = sx_crc32_combine(w->crc, crc, raw_len);
        w->isize += raw_len;
    }
    w->done += units;
    if (w->so->progress != NULL)
        w->so->progress(w->done, w->total > w->done ? w->total : w->done,
                        w->so->progress_user);
}

/* Write 'z': a block's text, or of a .gz its deflate data, with the text's length and
 * CRC; the buffer written comes back empty (sx_out_write_buf). */
static enum sx_status write_z(struct writer *w, struct sx_buf *z, uint64_t raw_len,
                              uint32_t crc, uint64_t units, struct sx_error *err) {
    if (sx_stop_requested())
        return interrupted(w, err);
    const enum sx_status st = sx_out_write_buf(w->f, z, err);
    if (st == SX_OK)
        account(w, raw_len, crc, units);
    return st;
}

/* Write 'raw', deflated here for .gz ('final': the last block). */
static enum sx_status write_text(struct writer *w, struct sx_buf *raw, bool final,
                                 uint64_t units, struct sx_error *err) {
    if (!w->so->gz)
        return write_z(w, raw, raw->len, 0, units, err);
    sx_buf_reset(&w->z);
    const uint32_t crc = sx_crc32(0, raw->data, raw->len);
    const enum sx_status st = sx_deflate_segment(raw->data, raw->len, w->so->level,
                                                 w->so->eng, final, &w->z, err);
    return st == SX_OK ? write_z(w, &w->z, raw->len, crc, units, err) : st;
}

/*
 * Receive 'n' bytes from 'from' as pieces into 'dst', or, when 'dst' is NULL,
 * into 'scratch' and drop them: the sender's sends complete either way.
 */
static int recv_pieces(char *dst, uint64_t n, int from, MPI_Comm comm, char *scratch) {
    for (uint64_t at = 0; at < n; at += PIECE) {
        int k = (int)(n - at < PIECE ? n - at : PIECE);
        int rc = MPI_Recv(dst != NULL ? dst + at : scratch, k, MPI_BYTE, from, TAG_DATA,
                          comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/*
 * Receive 'n' bytes from 'from' into 'b'. When 'b' cannot hold them, they
 * still are received (and dropped), and the result is SX_ERR_NOMEM.
 */
static enum sx_status recv_text(struct sx_buf *b, uint64_t n, int from, MPI_Comm comm,
                                char *scratch, const char *path, struct sx_error *err) {
    enum sx_status st = SX_OK;
    sx_buf_reset(b);
    bool keep = sx_buf_reserve(b, n + 1);
    if (!keep)
        st = sx_error_set(err, SX_ERR_NOMEM, path, "%s: out of memory receiving a block",
                          path);
    if (recv_pieces(keep ? b->data : NULL, n, from, comm, scratch) != MPI_SUCCESS)
        return mpi_failed("MPI_Recv", err);
    if (keep)
        b->len = n;
    return st;
}

/* The bytes a worker sends of a block: its deflated segment for .gz (the header says
 * the text's length and CRC), else its text. */
static uint64_t sent_len(const struct block_hdr *h, bool gz) {
    return gz ? h->data_len : h->raw_len;
}

/*
 * Receive worker 'from''s block of header 'h' and write it, up to WRITE_RUN
 * bytes at a time, in a buffer of 8 MiB that rank 0 keeps (see shed): a block
 * of the usual size (about 4 MiB) in one or two runs, and rank 0 never
 * holds more of a larger one (a Perfetto block is a whole rank, a trace's rank
 * can be half the document). A failed write still receives the rest (into
 * 'scratch'), so that the sender's sends complete.
 */
#define WRITE_RUN ((uint64_t)4 << 20)

static enum sx_status write_received(struct writer *w, const struct block_hdr *h,
                                     int from, MPI_Comm comm, struct sx_buf *run,
                                     char *scratch, uint64_t units,
                                     struct sx_error *err) {
    enum sx_status st = SX_OK;
    if (sx_stop_requested())
        st = interrupted(w, err);
    const uint64_t n = sent_len(h, w->so->gz);
    for (uint64_t at = 0; at < n;) {
        const uint64_t m = n - at < WRITE_RUN ? n - at : WRITE_RUN;
        if (st == SX_OK) /* received where the output's pages are written from */
            sx_out_lend(w->f, run);
        sx_buf_reset(run);
        const bool keep = st == SX_OK && sx_buf_reserve(run, m + 1);
        if (st == SX_OK && !keep)
            st = sx_error_set(err, SX_ERR_NOMEM, w->so->path,
                              "%s: out of memory receiving a block", w->so->path);
        if (recv_pieces(keep ? run->data : NULL, m, from, comm, scratch) != MPI_SUCCESS)
            return mpi_failed("MPI_Recv", err);
        at += m;
        if (keep) {
            run->len = (size_t)m;
            st = sx_out_write_buf(w->f, run, err);
        }
    }
    if (st == SX_OK)
        account(w, h->raw_len, h->crc, units);
    return st;
}

/*
 * Rank 0's own blocks, made in their order: each when its turn in the document
 * comes, or earlier, while rank 0 waits for a worker's block before it (at most
 * AHEAD_OWN of them, and none more once those held reach AHEAD_BYTES). A block
 * made ahead keeps its status and error until its turn: the error reported is
 * still the first in the document's order. Only in a stream dealt by a table
 * (turns, or blocks by cost), where rank 0 makes a full share: elsewhere rank 0
 * formats little and writes every byte, and the others wait for it, not it for
 * them (10M events' .json at two processes, rank 0 making ahead: 0.79 s against
 * 0.71, medians of 7). A Perfetto trace of 10M events at two processes, blocks
 * by cost: 2.69 s with making ahead, 3.63 s without it.
 */
enum { AHEAD_OWN = 4 };
#define AHEAD_BYTES ((size_t)32 << 20)

/*
 * A buffer larger than SHED_BYTES that rank 0 is done with goes back to the
 * heap, unless it is the slot made when a block's turn comes (q[0]): the
 * room of the blocks made ahead and of a worker's large block is not kept
 * beside the one in use. Blocks of the usual size (about 4 MiB, in buffers of
 * 8 MiB) keep theirs, whose pages are touched already. A Perfetto trace of
 * 10M events at two processes, a block per rank of 13 MB: rank 0's peak RSS
 * 151 MiB when every buffer was kept, 118 MiB now, in the same time.
 */
#define SHED_BYTES ((size_t)8 << 20)

struct made {
    struct block_out bo; /* of a .gz, its deflate data alone (the text is in 'text') */
    size_t b;
    uint64_t raw_len, units; /* of a .gz, its text's length; its units of progress */
    enum sx_status st;
    struct sx_error err;
};

struct own_queue {
    struct sx_out_file *f; /* a block made to be written at once is made in its buffer */
    const struct sx_producer *p;
    const struct sx_stream_opts *so;
    struct ahead *ah;
    const int *own;
    int size;
    struct made q[AHEAD_OWN]; /* a ring: [head, head + n) */
    size_t head, n;
    size_t next;  /* no block of rank 0's before 'next' is still to make */
    bool stopped; /* a block made ahead failed: none more ahead */
    /* a .gz block's text is needed until it is compressed: rank 0 makes each of its
     * blocks' text here, and the slots hold only their deflate data (a Chrome trace's
     * .gz of 10M events, skewed, at two processes: rank 0 made four blocks ahead, each
     * with the room of its text, 8 MiB, beside it) */
    struct sx_buf text;
    /* and deflates it here, the slot keeping a copy of the deflate data alone: the room
     * a deflate takes is the text's length (deflateBound), four slots of 4 MiB blocks
     * held 16 MiB for about 2 (the same trace, 1M events: rank 0's peak 62 -> 46 MiB) */
    struct sx_buf z;
};

/* Rank 0's .gz block m->b made in the queue's rooms (its text in 'text', its deflate in
 * 'z'), the slot keeping a copy of the deflate data alone. */
static void made_gz(struct own_queue *oq, struct made *m) {
    const struct sx_producer *p = oq->p;
    /* lend the slot the queue's rooms for the make, then take them back */
    struct sx_buf none = m->bo.raw; /* the slot's text room: empty, never used */
    struct sx_buf mine = m->bo.z;   /* the slot's own deflate buffer */
    m->bo.raw = oq->text;
    m->bo.z = oq->z;
    m->st = make_block(p, oq->so, oq->ah, m->b, false, &m->bo, &m->err);
    oq->text = m->bo.raw;
    oq->z = m->bo.z;
    m->bo.raw = none;
    m->bo.z = mine;
    sx_buf_reset(&m->bo.z);
    if (m->st == SX_OK && oq->z.len > 0) {
        sx_buf_append(&m->bo.z, oq->z.data, oq->z.len);
        if (m->bo.z.failed)
            m->st = sx_error_set(&m->err, SX_ERR_NOMEM, oq->so->path,
                                 "out of memory compressing a block");
    }
    m->raw_len = oq->text.len;
    m->units = progress_of(p, (long)m->b, &oq->text);
}

/* Make rank 0's next block, none before 'b_min', into the queue. false: none to make
 * (or no room). */
static bool own_make_next(struct own_queue *oq, size_t b_min) {
    const struct sx_producer *p = oq->p;
    size_t b = oq->next > b_min ? oq->next : b_min;
    while (b < p->nblocks && owner_of(oq->so, oq->own, b, oq->size) != 0)
        b++;
    oq->next = b; /* the next search starts here */
    if (b >= p->nblocks || oq->n == AHEAD_OWN)
        return false;
    struct made *m = &oq->q[(oq->head + oq->n) % AHEAD_OWN];
    m->b = b;
    sx_error_clear(&m->err);
    if (oq->so->gz) {
        made_gz(oq, m);
    } else {
        m->st = make_block(p, oq->so, oq->ah, b, false, &m->bo, &m->err);
        m->units = progress_of(p, (long)b, &m->bo.raw);
    }
    oq->n++;
    oq->next = b + 1;
    if (m->st != SX_OK)
        oq->stopped = true;
    return true;
}

/* Whether rank 0, waiting for block 'b' of a worker's, should make its next one: while
 * the blocks it holds and one more of the largest it holds stay within AHEAD_BYTES. */
static bool own_may_ahead(const struct own_queue *oq) {
    if (oq->own == NULL || oq->stopped || oq->n == AHEAD_OWN)
        return false;
    size_t held = 0, most = 0;
    for (size_t i = 0; i < oq->n; i++) {
        const struct made *m = &oq->q[(oq->head + i) % AHEAD_OWN];
        const size_t k = m->bo.raw.len + m->bo.z.len;
        held += k;
        most = k > most ? k : most;
    }
    return held + most <= AHEAD_BYTES;
}

/* Rank 0's block 'b', made now unless it was ahead; NULL: none (not its block). */
static struct made *own_take(struct own_queue *oq, size_t b) {
    if (oq->n == 0) {
        oq->head = 0; /* made now: in the one slot, whose pages are already touched */
        /* and written next: made in the output's buffer, which is written as it is */
        if (!oq->so->gz)
            sx_out_lend(oq->f, &oq->q[0].bo.raw);
        if (!own_make_next(oq, b))
            return NULL;
    }
    struct made *m = &oq->q[oq->head];
    if (m->b != b)
        return NULL;
    oq->head = (oq->head + 1) % AHEAD_OWN;
    oq->n--;
    return m;
}

static void own_free(struct own_queue *oq) {
    sx_buf_free(&oq->text);
    sx_buf_free(&oq->z);
    for (int i = 0; i < AHEAD_OWN; i++) {
        sx_buf_free(&oq->q[i].bo.raw);
        sx_buf_free(&oq->q[i].bo.z);
    }
}

static void shed(struct sx_buf *b) {
    if (b->cap > SHED_BYTES)
        sx_buf_free(b);
}

/* What rank 0 does while it waits for a worker's block 'after': its own next one. */
struct ahead_work {
    struct own_queue *oq;
    size_t after;
};

static bool work_ahead(void *ctx) {
    struct ahead_work *aw = ctx;
    return own_may_ahead(aw->oq) && own_make_next(aw->oq, aw->after + 1);
}

/* MPI_Recv of the header of worker 'from''s block 'b', on rank 0, making its own next
 * blocks while it is not there. */
static int recv_hdr_ahead(struct block_hdr *h, int from, size_t b, MPI_Comm comm,
                          struct own_queue *oq) {
    MPI_Request req;
    struct ahead_work aw = {oq, b};
    int rc = MPI_Irecv(h, sizeof *h, MPI_BYTE, from, TAG_HDR, comm, &req);
    return rc == MPI_SUCCESS ? wait_doing(1, &req, ROOT_WAIT_MAX_NS, work_ahead, &aw)
                             : rc;
}

/* NOTE: collective (the protocol's rank 0 side). '*fail_at': where in the document's
 * order rank 0 failed (see sx_stream). */
static enum sx_status stream_root(MPI_Comm comm, int size, const struct sx_producer *p,
                                  const struct sx_stream_opts *so, struct writer *w,
                                  char *scratch, const int *own, long *fail_at,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct block_out mine = {0};
    struct sx_buf text = {0}, in = {0};
    bool remote_failed = false;
    int ended = -1; /* the one worker whose 'end' came inside the loop */
    struct block_hdr h;
    struct ahead ah = {0, size, 0, own, false};
    struct own_queue oq = {
        .f = w->f, .p = p, .so = so, .ah = &ah, .own = own, .size = size};

    *fail_at = -1; /* the head */
    if (so->gz) {
        unsigned char gh[10];
        sx_gzip_header(gh, so->level);
        st = sx_out_write(w->f, gh, sizeof gh, err);
    }
    if (st == SX_OK)
        st = p->head(p->ctx, &text, err);
    if (st == SX_OK && text.failed) /* as for blocks: producers need not check */
        st =
            sx_error_set(err, SX_ERR_NOMEM, so->path, "out of memory formatting a block");
    if (st == SX_OK)
        st = write_text(w, &text, false, progress_of(p, -1, &text), err);
    if (st == SX_OK)
        st = sx_fault_at(SX_FAIL_WRITE, err);
    for (size_t b = 0; st == SX_OK && b < p->nblocks; b++) {
        *fail_at = (long)b;
        int owner = owner_of(so, own, b, size);
        if (owner == 0) {
            struct made *m = own_take(&oq, b);
            if (m == NULL) {
                st = sx_error_set(err, SX_ERR_INTERNAL, so->path,
                                  "%s: the block stream lost rank 0's block %zu",
                                  so->path, b);
                break;
            }
            st = m->st;
            if (st != SX_OK && err != NULL)
                *err = m->err;
            if (st == SX_OK)
                st = so->gz ? write_z(w, &m->bo.z, m->raw_len, m->bo.crc, m->units, err)
                            : write_text(w, &m->bo.raw, false, m->units, err);
            if (m != &oq.q[0]) {
                shed(&m->bo.raw);
                shed(&m->bo.z);
            }
            continue;
        }
        if (recv_hdr_ahead(&h, owner, b, comm, &oq) != MPI_SUCCESS) {
            st = mpi_failed("MPI_Recv", err);
            break;
        }
        if (h.end || h.status != SX_OK) { /* the sender reports its error itself */
            ended = owner;
            remote_failed = true;
            break;
        }
        if (h.pre != 0 && !root_may_finish(p, so, size)) {
            st = sx_error_set(err, SX_ERR_INTERNAL, so->path,
                              "%s: block %zu came unfinished from rank %d", so->path, b,
                              owner);
            break;
        }
        if (h.pre != 0) {
            st = recv_text(&in, h.raw_len, owner, comm, scratch, so->path, err);
            if (st == SX_OK) /* its text made in the output's stage (not .gz) */
                sx_out_lend(w->f, &mine.raw);
            sx_buf_reset(&mine.raw);
            if (st == SX_OK)
                st = p->finish(p->ctx, b, &in, &mine.raw, err);
            if (st == SX_OK && mine.raw.failed)
                st = sx_error_set(err, SX_ERR_NOMEM, so->path,
                                  "out of memory formatting a block");
            if (st == SX_OK)
                st = sx_fault_at(SX_FAIL_FORMAT, err);
            if (st == SX_OK)
                st = write_text(w, &mine.raw, false, progress_of(p, (long)b, &mine.raw),
                                err);
            continue;
        }
        st = write_received(
            w, &h, owner, comm, &in, scratch,
            p->block_units != NULL ? p->block_units(p->ctx, b) : h.raw_len, err);
        shed(&in);
    }
    if (st == SX_OK)
        *fail_at = (long)p->nblocks; /* after the blocks */
    if (st == SX_OK && !remote_failed)
        st = sx_fault_rest(err);
    bool failed = st != SX_OK || remote_failed;
    int ctrl = failed ? 1 : 0;
    if (failed) /* stop the others producing: only an abort is urgent */
        for (int r = 1; r < size; r++)
            if (MPI_Send(&ctrl, 1, MPI_INT, r, TAG_CTRL, comm) != MPI_SUCCESS &&
                st == SX_OK)
                st = mpi_failed("MPI_Send", err);
    /* Drain: every worker ends with an 'end' header; what comes before it is dropped. */
    for (int r = 1; r < size; r++) {
        while (r != ended) {
            if (MPI_Recv(&h, sizeof h, MPI_BYTE, r, TAG_HDR, comm, MPI_STATUS_IGNORE) !=
                MPI_SUCCESS) {
                st = st != SX_OK ? st : mpi_failed("MPI_Recv", err);
                break;
            }
            if (h.end)
                break;
            if (recv_pieces(NULL, sent_len(&h, so->gz), r, comm, scratch) !=
                MPI_SUCCESS) {
                st = st != SX_OK ? st : mpi_failed("MPI_Recv", err);
                break;
            }
        }
    }
    if (!failed)
        for (int r = 1; r < size; r++)
            if (MPI_Send(&ctrl, 1, MPI_INT, r, TAG_CTRL, comm) != MPI_SUCCESS &&
                st == SX_OK)
                st = mpi_failed("MPI_Send", err);
    if (st == SX_OK && !remote_failed) {
        sx_buf_reset(&text);
        st = p->tail(p->ctx, &text, err);
        if (st == SX_OK && text.failed)
            st = sx_error_set(err, SX_ERR_NOMEM, so->path,
                              "out of memory formatting a block");
        if (st == SX_OK)
            st = write_text(w, &text, true, progress_of(p, -1, &text), err);
        if (st == SX_OK && so->gz) {
            unsigned char gt[8];
            sx_gzip_trailer(gt, w->crc, w->isize);
            st = sx_out_write(w->f, gt, sizeof gt, err);
        }
    }
    own_free(&oq);
    sx_buf_free(&mine.raw);
    sx_buf_free(&mine.z);
    sx_buf_free(&text);
    sx_buf_free(&in);
    return st;
}

/* ------------------------------------------------------------------ */
/* Workers                                                            */

/*
 * Blocks in flight of a worker whose blocks rank 0 finishes: at most FINISH_AHEAD (small
 * blocks), and no new one while those in flight hold more than FINISH_BYTES. A speedscope
 * block of records is 3-4 MiB: 32 of them in flight took the worker of a 10M-call
 * document to 220-250 MiB, against 130 MiB with 8 MiB in flight, no slower.
 */
enum { FINISH_AHEAD = 32 };
#define FINISH_BYTES ((uint64_t)8 << 20)

/*
 * Of a worker whose blocks rank 0 may finish, the blocks sent and not yet taken by
 * rank 0 from which it makes the next block's text itself (or half FINISH_BYTES in
 * flight). Either end can be the slower (speedscope's worker sorts each rank's calls,
 * rank 0 writes every byte): a worker ahead of rank 0 takes text off it, one behind
 * hands it over, and the two stay busy.
 */
enum { FINISH_BACKLOG = 16 };

/* One block in flight: its text, header and the requests of its sends. */
struct sendset {
    struct block_out bo;
    struct block_hdr hdr;
    MPI_Request *reqs;
    int nreq, cap;
    uint64_t bytes; /* of the block in flight */
};

static int pieces(uint64_t n) { return (int)((n + PIECE - 1) / PIECE); }

/* Send the block of 's'; 'pre': its first step only, for rank 0 to finish. */
static enum sx_status post_sends(struct sendset *s, bool gz, bool pre, MPI_Comm comm,
                                 struct sx_error *err) {
    int need = 1 + pieces(gz ? s->bo.z.len : s->bo.raw.len);
    if (need > s->cap) {
        MPI_Request *r = sx_realloc(s->reqs, (size_t)need * sizeof *r);
        if (r == NULL)
            return sx_error_set(err, SX_ERR_NOMEM, "", "out of memory sending a block");
        s->reqs = r;
        s->cap = need;
    }
    memset(&s->hdr, 0, sizeof s->hdr);
    s->hdr.pre = pre;
    s->hdr.raw_len = s->bo.raw.len;
    s->hdr.data_len = gz ? s->bo.z.len : 0;
    s->hdr.crc = s->bo.crc;
    if (MPI_Isend(&s->hdr, sizeof s->hdr, MPI_BYTE, 0, TAG_HDR, comm,
                  &s->reqs[s->nreq++]) != MPI_SUCCESS)
        return mpi_failed("MPI_Isend", err);
    const struct sx_buf *part = gz ? &s->bo.z : &s->bo.raw;
    for (uint64_t at = 0; at < part->len; at += PIECE) {
        uint64_t left = part->len - at;
        int k = (int)(left < PIECE ? left : PIECE);
        if (MPI_Isend(part->data + at, k, MPI_BYTE, 0, TAG_DATA, comm,
                      &s->reqs[s->nreq++]) != MPI_SUCCESS)
            return mpi_failed("MPI_Isend", err);
    }
    return SX_OK;
}

/* NOTE: collective (the protocol's worker side). '*fail_at': where in the document's
 * order this worker failed (see sx_stream). */
static enum sx_status stream_worker(MPI_Comm comm, int rank, int size,
                                    const struct sx_producer *p,
                                    const struct sx_stream_opts *so, const int *own,
                                    long *fail_at, struct sx_error *err) {
    enum sx_status st = SX_OK;
    /* Blocks in flight: a turn's (or, dealt by a table, as many), so that the next turn
     * is made while rank 0 makes its own; blocks rank 0 finishes, enough for it to go on
     * while the worker begins the next part (they are small); else two: one sent while
     * the next is made. */
    const bool may_pre = root_may_finish(p, so, size);
    const int nsets = own != NULL ? SX_STREAM_TURN : may_pre ? FINISH_AHEAD : 2;
    struct sendset *set = sx_calloc((size_t)nsets, sizeof *set);
    /* the sets in flight in the order sent (rank 0 takes them in that order), from
     * fly[head]; the free ones, the last freed on top (its rooms are warm) */
    int *fly = sx_calloc(2 * (size_t)nsets, sizeof *fly);
    int *idle = fly != NULL ? fly + nsets : NULL, nidle = nsets, head = 0, nfly = 0;
    uint64_t fly_bytes = 0;
    int got_ctrl = 0, ctrl = 0;
    struct ahead ah = {rank, size, 0, own, false};
    if (set == NULL || fly == NULL) {
        st = sx_error_set(err, SX_ERR_NOMEM, "", "out of memory sending blocks");
        *fail_at = -1; /* before its first block */
    }
    for (int j = 0; st == SX_OK && j < nsets; j++)
        idle[j] = nsets - 1 - j;
    for (size_t b = 0; st == SX_OK && b < p->nblocks; b++) {
        if (owner_of(so, own, b, size) != rank)
            continue;
        *fail_at = (long)b;
        int flag = 0;
        if (MPI_Iprobe(0, TAG_CTRL, comm, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            st = mpi_failed("MPI_Iprobe", err);
            break;
        }
        if (flag) { /* rank 0 gave up: stop producing */
            if (MPI_Recv(&ctrl, 1, MPI_INT, 0, TAG_CTRL, comm, MPI_STATUS_IGNORE) !=
                MPI_SUCCESS)
                st = mpi_failed("MPI_Recv", err);
            got_ctrl = 1;
            break;
        }
        /* free the sets rank 0 has taken: the oldest until one is free (and, when rank
         * 0 may finish, until the bytes in flight are within bounds), then, when rank 0
         * may finish, as many more as have gone without waiting */
        while (nfly > 0) {
            struct sendset *o = &set[fly[head]];
            int done = 1;
            if (nidle == 0 || (may_pre && fly_bytes > FINISH_BYTES)) {
                if (wait_all(o->nreq, o->reqs, WAIT_MAX_NS) != MPI_SUCCESS)
                    st = mpi_failed("MPI_Waitall", err);
            } else if (!may_pre) {
                break;
            } else if (MPI_Testall(o->nreq, o->reqs, &done, MPI_STATUSES_IGNORE) !=
                       MPI_SUCCESS) {
                st = mpi_failed("MPI_Testall", err);
            }
            if (st != SX_OK || !done)
                break;
            o->nreq = 0;
            fly_bytes -= o->bytes;
            idle[nidle++] = fly[head];
            head = (head + 1) % nsets;
            nfly--;
        }
        if (st != SX_OK)
            break;
        const bool pre =
            may_pre && nfly < FINISH_BACKLOG && fly_bytes <= FINISH_BYTES / 2;
        const int i = idle[--nidle];
        struct sendset *s = &set[i];
        st = make_block(p, so, &ah, b, pre, &s->bo, err);
        if (st == SX_OK)
            st = sx_fault_at(SX_FAIL_SEND, err);
        if (st == SX_OK)
            st = post_sends(s, so->gz, pre, comm, err);
        /* in flight from here, even with only some of its sends posted */
        s->bytes = so->gz ? s->bo.z.len : s->bo.raw.len;
        fly[(head + nfly) % nsets] = i;
        nfly++;
        fly_bytes += s->bytes;
        if (st != SX_OK)
            break;
    }
    if (st == SX_OK)
        *fail_at = (long)p->nblocks;
    if (st == SX_OK && !got_ctrl)
        st = sx_fault_rest(err);
    for (int j = 0; set != NULL && j < nsets; j++)
        if (wait_all(set[j].nreq, set[j].reqs, WAIT_MAX_NS) != MPI_SUCCESS && st == SX_OK)
            st = mpi_failed("MPI_Waitall", err);
    struct block_hdr end;
    memset(&end, 0, sizeof end);
    end.end = 1;
    end.status = st;
    if (err != NULL)
        end.error = *err;
    if (MPI_Send(&end, sizeof end, MPI_BYTE, 0, TAG_HDR, comm) != MPI_SUCCESS &&
        st == SX_OK)
        st = mpi_failed("MPI_Send", err);
    if (!got_ctrl && recv_ctrl(&ctrl, comm) != MPI_SUCCESS && st == SX_OK)
        st = mpi_failed("MPI_Recv", err);
    for (int j = 0; set != NULL && j < nsets; j++) {
        sx_buf_free(&set[j].bo.raw);
        sx_buf_free(&set[j].bo.z);
        free(set[j].reqs);
    }
    free(set);
    free(fly);
    return st;
}

/* NOTE: collective */
enum sx_status sx_stream(MPI_Comm comm, const struct sx_producer *p,
                         const struct sx_stream_opts *so, struct sx_out_file *f,
                         struct sx_error *err) {
    enum sx_status st = SX_OK;
    int rank = 0, size = 1;
    char *scratch = NULL;
    int *own = NULL;
    struct writer w;
    memset(&w, 0, sizeof w);
    if (comm != MPI_COMM_NULL && (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
                                  MPI_Comm_size(comm, &size) != MPI_SUCCESS))
        st = mpi_failed("MPI_Comm_rank", err);

    /* Stage: what rank 0 needs to take part in the protocol whatever happens. */
    if (st == SX_OK && rank == 0 && size > 1) {
        scratch = sx_malloc(PIECE);
        if (scratch == NULL)
            st = sx_error_set(err, SX_ERR_NOMEM, so->path, "out of memory");
    }
    if (st == SX_OK && size > 1 &&
        ((so->turns && p->part != NULL) || (so->compact && p->block_units != NULL))) {
        own = so->turns && p->part != NULL ? turn_owners(p, size) : cost_owners(p, size);
        if (own == NULL)
            st = sx_error_set(err, SX_ERR_NOMEM, so->path, "out of memory");
    }
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;

    /* Stage: the protocol; a failure anywhere in it is carried to its end. The error
     * agreed on is the first in the document's order (a block's maker or its writer:
     * where one process stopped, another may have gone on and failed further), as one
     * process would meet it; the lowest rank among failures at the same place. */
    long at = LONG_MAX;
    if (rank == 0) {
        w.so = so;
        w.f = f;
        w.total = p->total_bytes;
        st = stream_root(comm, size, p, so, &w, scratch, own, &at, err);
    } else {
        st = stream_worker(comm, rank, size, p, so, own, &at, err);
    }
    sx_error_where(err, so->path); /* the protocol's own errors name the output */
    st = sx_all_ok_first(comm, st, at, err);
out:
    sx_buf_free(&w.z);
    free(scratch);
    free(own);
    return st;
}
