/* read_batch.h - many reads of one file in one system call, where io_uring is at hand */
#ifndef SX_READ_BATCH_H
#define SX_READ_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Why: a many-row run's read-ahead reads thousands of small pieces of the event columns
 * a job (one per rank and column), each a pread; on a virtual machine a system call
 * costs 1.5-2.5 us, more than the copy of the piece (4096 x 64 regions: 577k preads,
 * most of its export). A batch of reads through one io_uring costs one call and ~0.5 us
 * a read. This file is the only one that includes liburing; without it (not built with
 * it, SCOPE_EXPORT_URING=0 read at each sx_read_batch_new, or a kernel or sandbox that
 * refuses a ring) every read is a pread, as before.
 */
struct sx_read_batch;

/* One read of a batch: 'len' bytes at file offset 'off' to 'to'; 'got' is set. */
struct sx_read_one {
    void *to;
    size_t len;
    uint64_t off;
    size_t got; /* bytes read: fewer than 'len' at an error or the file's end */
};

/* Most reads a batch takes in one call. */
enum { SX_READ_BATCH_MAX = 128 };

/* A ring for batches of reads (new), or NULL: none to be had (read with pread). */
struct sx_read_batch *sx_read_batch_new(void);
/* Accepts NULL. */
void sx_read_batch_free(struct sx_read_batch *b);
/* Whether this build has the rings (liburing). */
bool sx_read_batch_built(void);
/* Reads the ring 'b' has completed (0 for NULL): a test's proof that it read. */
unsigned long sx_read_batch_count(const struct sx_read_batch *b);

/* A reader's ring, made when it first has a batch to read; zeroed: not yet. Its 'b' is
 * freed with sx_read_batch_free. */
struct sx_read_ring {
    struct sx_read_batch *b;
    bool tried; /* sx_read_batch_new was asked (once: NULL stays NULL) */
};
/* The ring of 'r' for a batch of 'n' reads: made at the first batch of two or more, or
 * NULL (pread each). */
struct sx_read_batch *sx_read_ring_for(struct sx_read_ring *r, size_t n);
/*
 * Read r[0 .. n) of descriptor 'fd' whole: through the ring 'b' in batches of
 * SX_READ_BATCH_MAX, each read it leaves short (or all, when 'b' is NULL or its ring
 * fails) finished with pread. Returns n, or the first read that could not be had whole
 * (its 'got' as far as it went; errno set, 0 at the file's end).
 */
size_t sx_read_all(struct sx_read_batch *b, int fd, struct sx_read_one *r, size_t n);

#endif /* SX_READ_BATCH_H */
