/* h5_direct_map.c - (h5_direct) the run's file mapped read-only, for scattered reads
 */
#define _GNU_SOURCE /* MADV_DONTNEED, siginfo_t's codes */
#include "h5_direct_map.h"

#include "fault.h"

#include <errno.h>

#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { FRAME_BITS = 16 }; /* 64 KiB frames: what a fault maps around it */

struct sx_file_map {
    int fd; /* borrowed: read with pread when no copier slot is free */
    const unsigned char *base;
    uint64_t size;
    size_t budget, held; /* bytes of frames read since the last drop */
    uint64_t *seen;      /* one bit per frame read since the last drop */
    size_t nwords;
    unsigned long drops;
    /* The kernel's id of the thread that read first, asked once: a read is a few
     * bytes, a gettid per read cost a tenth of an export. Reads of one map do not
     * run concurrently (scope_export.h), so it is set once and then only read. */
    bool reader_known;
    pthread_t reader;
    int reader_tid;
};

/*
 * SIGBUS: a read of a page the file no longer has. While a read copies, the
 * handler jumps back into it. The library is a guest in its host's process, so:
 * - the handler is installed once, while any mapping is open (counted under a mutex),
 *   and removed with the last one only if it is still the one installed;
 * - it finds the copying thread's jump buffer in a fixed table keyed by thread id, with
 *   atomic loads: no thread-local storage, whose first use from a handler in a
 *   dlopen'ed library may allocate (__tls_get_addr), and no lock;
 * - any other SIGBUS goes to the handler there was before: called when it is a
 *   function; else that one is restored and the fault repeats under it (or the signal,
 *   sent rather than a fault, is raised again).
 * A thread that finds the table full reads with pread instead.
 */
enum { MAX_COPIERS = 64 };
static struct {
    atomic_int tid;            /* the thread copying under this slot, 0: free */
    sigjmp_buf *volatile jump; /* volatile: set around a memcpy that never reads it */
} copiers[MAX_COPIERS];
static pthread_mutex_t guard_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction old_bus; /* written under guard_mu before the handler is set */
static int nmaps;                /* under guard_mu */

static int thread_id(void) { return (int)syscall(SYS_gettid); }

static void on_bus(int sig, siginfo_t *si, void *uc) {
    const int me = thread_id();
    for (int i = 0; i < MAX_COPIERS; i++)
        if (atomic_load(&copiers[i].tid) == me && copiers[i].jump != NULL)
            siglongjmp(*copiers[i].jump, 1);
    if ((old_bus.sa_flags & SA_SIGINFO) && old_bus.sa_sigaction != NULL) {
        old_bus.sa_sigaction(sig, si, uc);
        return;
    }
    if (!(old_bus.sa_flags & SA_SIGINFO) && old_bus.sa_handler != SIG_DFL &&
        old_bus.sa_handler != SIG_IGN) {
        old_bus.sa_handler(sig);
        return;
    }
    sigaction(SIGBUS, &old_bus, NULL);
    if (si == NULL || si->si_code <= 0)
        raise(sig); /* sent, not a fault: the fault would not repeat */
}

static void guard_install(void) {
    pthread_mutex_lock(&guard_mu);
    if (nmaps++ == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_bus;
        /* NODEFER: the jump out of the handler leaves SIGBUS unblocked */
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, NULL, &old_bus);
        sigaction(SIGBUS, &sa, NULL);
    }
    pthread_mutex_unlock(&guard_mu);
}

static void guard_remove(void) {
    pthread_mutex_lock(&guard_mu);
    if (--nmaps == 0) {
        /* a handler the host set since is the host's: left alone */
        struct sigaction cur;
        if (sigaction(SIGBUS, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
            cur.sa_sigaction == on_bus)
            sigaction(SIGBUS, &old_bus, NULL);
    }
    pthread_mutex_unlock(&guard_mu);
}

struct sx_file_map *sx_file_map_open(int fd, uint64_t size, size_t budget) {
    if (fd < 0 || size == 0 || size > SIZE_MAX)
        return NULL;
    struct sx_file_map *m = sx_calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    m->fd = fd;
    m->size = size;
    m->budget = budget < ((size_t)1 << FRAME_BITS) ? (size_t)1 << FRAME_BITS : budget;
    m->nwords = (size_t)((((size - 1) >> FRAME_BITS) + 64) / 64);
    m->seen = sx_calloc(m->nwords, sizeof *m->seen);
    void *p = m->seen != NULL ? mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0)
                              : MAP_FAILED;
    if (p == MAP_FAILED) {
        free(m->seen);
        free(m);
        return NULL;
    }
    m->base = p;
    guard_install();
    return m;
}

void sx_file_map_close(struct sx_file_map *m) {
    if (m == NULL)
        return;
    munmap((void *)m->base, (size_t)m->size);
    guard_remove();
    free(m->seen);
    free(m);
}

unsigned long sx_file_map_drops(const struct sx_file_map *m) { return m->drops; }

/* Let the process hold nothing of the file, and start counting again. */
static void drop(struct sx_file_map *m) {
    madvise((void *)m->base, (size_t)m->size, MADV_DONTNEED);
    memset(m->seen, 0, m->nwords * sizeof *m->seen);
    m->held = 0;
    m->drops++;
}

/* All of 'n' bytes at 'at' of 'fd' into 'dst'. */
static bool pread_all(int fd, void *dst, size_t n, uint64_t at) {
    char *d = dst;
    while (n > 0) {
        const ssize_t r = pread(fd, d, n, (off_t)at);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        d += r;
        n -= (size_t)r;
        at += (uint64_t)r;
    }
    return true;
}

/* memcpy with '*jump' set for the handler: false when the copy faulted. */
static bool guarded_memcpy(sigjmp_buf *volatile *jump, void *dst, const void *src,
                           size_t n) {
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0) != 0) {
        *jump = NULL;
        return false;
    }
    *jump = &jb;
    memcpy(dst, src, n);
    *jump = NULL;
    return true;
}

/* The calling thread's kernel id, as the handler finds it. */
static int reader_id(struct sx_file_map *m) {
    if (m->reader_known && pthread_equal(pthread_self(), m->reader))
        return m->reader_tid;
    const int me = thread_id();
    if (!m->reader_known) {
        m->reader = pthread_self();
        m->reader_tid = me;
        m->reader_known = true;
    }
    return me;
}

/* Copy under the SIGBUS guard: false when the file lost the bytes. */
static bool copy(struct sx_file_map *m, void *dst, uint64_t at, size_t n) {
    const int me = reader_id(m);
    for (int i = 0; i < MAX_COPIERS; i++) {
        int free_tid = 0;
        if (atomic_compare_exchange_strong(&copiers[i].tid, &free_tid, me)) {
            const bool ok = guarded_memcpy(&copiers[i].jump, dst, m->base + at, n);
            atomic_store(&copiers[i].tid, 0);
            return ok;
        }
    }
    return pread_all(m->fd, dst, n, at);
}

enum sx_status sx_file_map_read(struct sx_file_map *m, uint64_t at, size_t n, void *dst,
                                const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    if (n == 0)
        return SX_OK;
    SX_CHECK(at <= m->size && n <= m->size - at, SX_ERR_IO, err, src,
             "%s cannot be read (%zu bytes at offset %" PRIu64
             " lie past the end of the file); the file is truncated or damaged",
             src, n, at);
    for (uint64_t f = at >> FRAME_BITS; f <= (at + n - 1) >> FRAME_BITS; f++) {
        uint64_t bit = (uint64_t)1 << (f % 64);
        if (m->seen[f / 64] & bit)
            continue;
        SX_CHECK(!sx_fault(SX_FAULT_READ, 0), SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
        if (m->held + ((size_t)1 << FRAME_BITS) > m->budget)
            drop(m);
        m->seen[f / 64] |= bit;
        m->held += (size_t)1 << FRAME_BITS;
    }
    SX_CHECK(copy(m, dst, at, n), SX_ERR_IO, err, src,
             "%s cannot be read (%zu bytes at offset %" PRIu64
             "): the file was cut short while it was read",
             src, n, at);
out:
    return st;
}
