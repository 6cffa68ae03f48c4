/* read_batch.c - many reads of one file in one system call, where io_uring is at hand */
#define _DEFAULT_SOURCE /* madvise */
#include "read_batch.h"

#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#if SX_HAVE_URING
#include <liburing.h>

#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#else
#define VALGRIND_MAKE_MEM_DEFINED(p, n) ((void)(p), (void)(n))
#endif

struct sx_read_batch {
    struct io_uring ring;
    bool broken;         /* a call failed: pread from now on */
    unsigned long count; /* reads completed */
};

/* Submissions that fail for a passing reason (a signal, a full queue) before a batch
 * gives up on the ring. */
enum { RETRIES = 1000 };
#define RING_LEN_MAX (1u << 30)

static bool passing(int ret) { return ret == -EINTR || ret == -EAGAIN || ret == -EBUSY; }

struct sx_read_batch *sx_read_batch_new(void) {
    if (!sx_switch_on("SCOPE_EXPORT_URING"))
        return NULL;
    struct sx_read_batch *b = sx_calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    /* no flags: the ring is used by one thread at a time, not always the same one */
    if (io_uring_queue_init(SX_READ_BATCH_MAX, &b->ring, 0) != 0) {
        free(b);
        return NULL;
    }
    return b;
}

void sx_read_batch_free(struct sx_read_batch *b) {
    if (b == NULL)
        return;
    io_uring_queue_exit(&b->ring);
    free(b);
}

bool sx_read_batch_built(void) { return true; }

unsigned long sx_read_batch_count(const struct sx_read_batch *b) {
    return b != NULL ? b->count : 0;
}

/* Take the completions there are: each read's bytes, counted in '*done'. */
static void reap(struct sx_read_batch *b, struct sx_read_one *r, size_t n, size_t *done) {
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&b->ring, head, cqe) {
        const size_t k = (size_t)(uintptr_t)io_uring_cqe_get_data(cqe);
        if (k < n && cqe->res > 0) {
            r[k].got = (size_t)cqe->res;
            /* the kernel wrote it: a checker of reads of unwritten memory is told so */
            VALGRIND_MAKE_MEM_DEFINED(r[k].to, r[k].got);
        }
        seen++;
    }
    io_uring_cq_advance(&b->ring, seen);
    *done += seen;
    b->count += seen;
}

/*
 * Read r[0 .. n) (n <= SX_READ_BATCH_MAX), each once: r[k].got bytes of it. A read short
 * of its 'len' (an error, the file's end, a read the kernel cut) is left to pread. false:
 * nothing was read (every 'got' 0).
 */
static bool ring_reads(struct sx_read_batch *b, int fd, struct sx_read_one *r, size_t n) {
    if (b == NULL || b->broken || n == 0 || n > SX_READ_BATCH_MAX)
        return false;
    for (size_t k = 0; k < n; k++) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
        if (sqe == NULL) { /* not with n entries free: the ring is not as made */
            b->broken = true;
            return false;
        }
        /* (a read's length is 32 bits: pread reads on past a GiB) */
        const unsigned len = r[k].len < RING_LEN_MAX ? (unsigned)r[k].len : RING_LEN_MAX;
        io_uring_prep_read(sqe, fd, r[k].to, len, r[k].off);
        io_uring_sqe_set_data(sqe, (void *)(uintptr_t)k);
        r[k].got = 0;
    }
    size_t sent = 0, done = 0;
    int fails = 0;
    while (sent < n) {
        int ret = io_uring_submit(&b->ring);
        if (ret > 0) {
            sent += (size_t)ret;
        } else if (ret == 0 || !passing(ret) || ++fails > RETRIES) {
            /* the reads not sent stay queued: the ring is not used again, and they go
             * with it; those sent are waited for, the others left to pread */
            b->broken = true;
            break;
        }
    }
    /* every read sent completes before its buffer is the caller's again; a wait fails
     * for good only when the ring is gone (and its reads with it) */
    while (done < sent) {
        struct io_uring_cqe *cqe = NULL;
        int ret = io_uring_wait_cqe(&b->ring, &cqe);
        if (ret < 0 && !passing(ret)) {
            b->broken = true;
            break;
        }
        if (ret == 0)
            reap(b, r, n, &done);
    }
    return sent > 0;
}

#else /* without liburing: pread */

struct sx_read_batch *sx_read_batch_new(void) {
    return NULL;
}

void sx_read_batch_free(struct sx_read_batch *b) { (void)b; }

bool sx_read_batch_built(void) { return false; }

unsigned long sx_read_batch_count(const struct sx_read_batch *b) {
    (void)b;
    return 0;
}

#endif

struct sx_read_batch *sx_read_ring_for(struct sx_read_ring *r, size_t n) {
    if (n > 1 && !r->tried) {
        r->tried = true;
        r->b = sx_read_batch_new();
    }
    return r->b;
}

/* ------------------------------------------------------------------ */
/* Mapped reads (read_batch.h)                                         */

/* Whether the file system of 'fd' is a local one, whose mapped pages come as fast as
 * its reads (statfs magic numbers, linux/magic.h). */
static bool local_fs(int fd) {
    static const unsigned long local[] = {
        0xEF53,     /* ext2, ext3, ext4 */
        0x58465342, /* XFS */
        0x9123683E, /* Btrfs */
        0x01021994, /* tmpfs */
        0xF2F52010, /* F2FS */
        0x794C7630, /* overlayfs */
    };
    struct statfs fs;
    if (fstatfs(fd, &fs) != 0)
        return false;
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++)
        if ((unsigned long)fs.f_type == local[i])
            return true;
    return false;
}

void sx_read_map_open(int fd, uint64_t len, struct sx_read_map *m) {
    memset(m, 0, sizeof *m);
    if (!sx_switch_on("SCOPE_EXPORT_MAPPED_READS") || fd < 0 || len == 0 ||
        len > SIZE_MAX || !local_fs(fd))
        return;
    void *p = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return;
    m->p = p;
    m->len = len;
    m->mapped = p;
}

void sx_read_map_view(const struct sx_read_map *owner, struct sx_read_map *view) {
    memset(view, 0, sizeof *view);
    if (owner != NULL) {
        view->p = owner->p;
        view->len = owner->len;
    }
}

/* Let go of the whole pages of [lo, hi) of 'm' (a failure leaves them mapped: harmless).
 */
static void map_drop(const struct sx_read_map *m, uint64_t lo, uint64_t hi) {
    /* in whole 2 MiB frames: the page cache may hold a file in large folios, mapped a
     * frame at a time, and a frame let go in part stays mapped whole (the 10M-event run's
     * mapping held 12 MiB with its pages let go 1 MiB at a time) */
    const uint64_t frame = (uint64_t)2 << 20;
    lo -= lo % frame;
    hi = hi > m->len - m->len % frame ? m->len : hi + (frame - hi % frame) % frame;
    if (lo < hi) /* a length past a page is rounded up to it */
        madvise((void *)(uintptr_t)(m->p + lo), (size_t)(hi - lo), MADV_DONTNEED);
}

void sx_read_map_used(struct sx_read_map *m, uint64_t off, uint64_t len) {
    if (m->lo >= m->hi) {
        m->lo = off;
        m->hi = off + len;
    } else {
        m->lo = off < m->lo ? off : m->lo;
        m->hi = off + len > m->hi ? off + len : m->hi;
    }
    if (m->hi - m->lo >= SX_READ_MAP_KEEP)
        sx_read_map_release(m);
}

void sx_read_map_release(struct sx_read_map *m) {
    if (m->p != NULL && m->lo < m->hi)
        map_drop(m, m->lo, m->hi);
    m->lo = m->hi = 0;
}

void sx_read_map_close(struct sx_read_map *m) {
    sx_read_map_release(m);
    if (m->mapped != NULL)
        munmap(m->mapped, (size_t)m->len);
    memset(m, 0, sizeof *m);
}

bool sx_read_map_ok(struct sx_read_map *m, int fd) {
    struct stat sb;
    if (m == NULL || m->p == NULL)
        return false;
    if (fstat(fd, &sb) == 0 && sb.st_size >= 0 && (uint64_t)sb.st_size >= m->len)
        return true;
    sx_read_map_release(m);
    m->p = NULL;
    return false;
}

const unsigned char *sx_read_map_at(const struct sx_read_map *m, uint64_t off,
                                    size_t len) {
    return m != NULL && m->p != NULL && off <= m->len && len <= m->len - off ? m->p + off
                                                                             : NULL;
}

size_t sx_read_all(struct sx_read_map *mp, struct sx_read_batch *b, int fd,
                   struct sx_read_one *r, size_t n) {
    const bool map_ok = n > 0 && sx_read_map_ok(mp, fd);
    for (size_t i = 0; i < n; i += SX_READ_BATCH_MAX) {
        const size_t m = n - i < SX_READ_BATCH_MAX ? n - i : SX_READ_BATCH_MAX;
        bool rung = false, mapped = map_ok;
        for (size_t k = i; k < i + m && mapped; k++)
            mapped = sx_read_map_at(mp, r[k].off, r[k].len) != NULL;
        if (mapped) {
            for (size_t k = i; k < i + m; k++) {
                if (r[k].len > 0) {
                    memcpy(r[k].to, mp->p + r[k].off, r[k].len);
                    sx_read_map_used(mp, r[k].off, r[k].len);
                }
                r[k].got = r[k].len;
            }
            continue;
        }
#if SX_HAVE_URING
        rung = m > 1 && ring_reads(b, fd, r + i, m);
#else
        (void)b;
#endif
        for (size_t k = i; k < i + m; k++) {
            unsigned char *to = r[k].to;
            if (!rung)
                r[k].got = 0;
            while (r[k].got < r[k].len) {
                ssize_t got = pread(fd, to + r[k].got, r[k].len - r[k].got,
                                    (off_t)(r[k].off + r[k].got));
                if (got < 0 && errno == EINTR)
                    continue;
                if (got <= 0) {
                    if (got == 0)
                        errno = 0;
                    return k;
                }
                r[k].got += (size_t)got;
            }
        }
    }
    return n;
}
