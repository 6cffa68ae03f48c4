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
 * A file's bytes mapped for reading. Why: a read-ahead of a many-row run reads tens of
 * thousands of pieces of a kilobyte or two a job, and read() costs its call and a
 * look-up of every page in the page cache on top of the copy: the reader thread of the
 * 1024 x 64 run spent ~40% of its job there (the 16384 x 100 export 2.61 -> 1.92 s on
 * one process mapped, its pages let go as below; the 1024 x 64 no faster). Only on a
 * local file system (ext2/3/4, XFS, Btrfs, tmpfs, F2FS, overlayfs): a network or
 * parallel file system (NFS, Lustre, GPFS) reads a mapping a page per request, where
 * large reads go at its speed. SCOPE_EXPORT_MAPPED_READS=0, read at each
 * sx_read_map_open, reads as before. The price: a file cut short by another process
 * while its pages are copied is a SIGBUS, where a read says "truncated". Each call that
 * copies from the map first looks at the file's size (sx_read_map_ok), so that a file
 * cut short before it is read, not mapped any more, says so as a read does: only a cut
 * in the microseconds of a copy is not caught.
 */
struct sx_read_map {
    const unsigned char *p; /* NULL: not mapped (or not any more: cut short), read */
    uint64_t len;
    /* the bytes read since their pages were last let go; lo >= hi: none */
    uint64_t lo, hi;
    void *mapped; /* the mapping this map unmaps at close; NULL: a view (below) */
};
/* Map the first 'len' bytes of 'fd' (read-only, shared) where the above allows; else
 * m->p is NULL. Never fails: the reads are the fall-back. */
void sx_read_map_open(int fd, uint64_t len, struct sx_read_map *m);
/* Its pages let go, and unmapped if it is the owner. Accepts a map never opened or not
 * mapped (zeroed); leaves it zeroed. */
void sx_read_map_close(struct sx_read_map *m);
/* Whether 'm' is mapped and its file 'fd' still as long: a file cut short is not read
 * from the map any more (m->p NULL; its reads are read, and say so); its mapping stays
 * until sx_read_map_close, for any view of it that still copies from it. */
bool sx_read_map_ok(struct sx_read_map *m, int fd);
/* A view of 'owner' (NULL: none) for a reader of its own: the same pages, its own
 * let-go (read in another thread, a view keeps no state another changes; a page let go
 * under another reader is faulted in again). Closed with sx_read_map_close, before its
 * owner; it unmaps nothing. */
void sx_read_map_view(const struct sx_read_map *owner, struct sx_read_map *view);
/* Bytes [off, off + len) of the map 'm', or NULL: not mapped, or not all within it. */
const unsigned char *sx_read_map_at(const struct sx_read_map *m, uint64_t off,
                                    size_t len);
/*
 * Bytes [off, off + len) of 'm' were read: their pages are let go (MADV_DONTNEED; the
 * page cache keeps them) once the bytes read since the last let-go span SX_READ_MAP_KEEP,
 * and at sx_read_map_release. A mapped page counts in the process's resident set, where a
 * read's copy does not: kept, the 4096 x 64 export at -n 2 grew from 68-76 MiB a rank to
 * the file's 212-221 MiB (a batch system that counts resident memory would count it).
 */
enum { SX_READ_MAP_KEEP = 4 << 20 };
void sx_read_map_used(struct sx_read_map *m, uint64_t off, uint64_t len);
void sx_read_map_release(struct sx_read_map *m);

/*
 * Read r[0 .. n) of descriptor 'fd' whole: a read within the map 'm' (NULL: none; its
 * file's size looked at first, sx_read_map_ok) as a copy (its pages let go as
 * sx_read_map_used says), the others through the ring 'b' in
 * batches of SX_READ_BATCH_MAX, each read it leaves short (or all, when 'b' is NULL or
 * its ring fails) finished with pread.
 * Returns n, or the first read that could not be had whole (its 'got' as far as it
 * went; errno set, 0 at the file's end).
 */
size_t sx_read_all(struct sx_read_map *m, struct sx_read_batch *b, int fd,
                   struct sx_read_one *r, size_t n);

#endif /* SX_READ_BATCH_H */
