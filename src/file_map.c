/* file_map.c - a run's file mapped read-only, for reads scattered over all of it
 */
#define _GNU_SOURCE /* MADV_DONTNEED, siginfo_t's codes */
#include "file_map.h"

#include "fault.h"

#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { FRAME_BITS = 16 }; /* 64 KiB frames: what a fault maps around it */

struct sx_file_map {
    const unsigned char *base;
    uint64_t size;
    size_t budget, held; /* bytes of frames read since the last drop */
    uint64_t *seen;      /* one bit per frame read since the last drop */
    size_t nwords;
    unsigned long drops;
};

/*
 * SIGBUS: a read of a page the file no longer has. While a read copies, the
 * handler jumps back into it; any other SIGBUS goes to the handler there was
 * before the first mapping (restored, then the fault repeats or the signal
 * is raised again).
 */
/* volatile: the stores around the copy must happen, though memcpy never reads it */
static _Thread_local sigjmp_buf *volatile guard;
static struct sigaction old_bus;
static int nmaps;

static void on_bus(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    if (guard != NULL)
        siglongjmp(*guard, 1);
    sigaction(SIGBUS, &old_bus, NULL);
    if (si == NULL || si->si_code <= 0)
        raise(sig); /* sent, not a fault: the fault would not repeat */
}

static void guard_install(void) {
    if (nmaps++ > 0)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_bus;
    /* NODEFER: the jump out of the handler leaves SIGBUS unblocked */
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &old_bus);
}

static void guard_remove(void) {
    if (--nmaps == 0)
        sigaction(SIGBUS, &old_bus, NULL);
}

struct sx_file_map *sx_file_map_open(int fd, uint64_t size, size_t budget) {
    if (fd < 0 || size == 0 || size > SIZE_MAX)
        return NULL;
    struct sx_file_map *m = sx_calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
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

/* Copy under the SIGBUS guard: false when the file lost the bytes. */
static bool copy(void *dst, const unsigned char *p, size_t n) {
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0) != 0) {
        guard = NULL;
        return false;
    }
    guard = &jb;
    memcpy(dst, p, n);
    guard = NULL;
    return true;
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
    SX_CHECK(copy(dst, m->base + at, n), SX_ERR_IO, err, src,
             "%s cannot be read (%zu bytes at offset %" PRIu64
             "): the file was cut short while it was read",
             src, n, at);
out:
    return st;
}
