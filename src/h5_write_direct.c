/* h5_write_direct.c - (h5_write) the event columns written at their file address, around
 * HDF5's sieve, by a stage written in file order */
#define _DEFAULT_SOURCE /* pwritev */
#include "h5_write_direct.h"

#include "h5_direct.h"

#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

enum { DEFAULT_BYTES = 16 << 20, DEFAULT_PIECES = 1 << 16, MAX_IOV = 1024 };
/* The stage is filled to 'limit' bytes, FIRST_LIMIT at first, doubled (up to its
 * capacity) after each flush whose writes averaged less than SMALL_WRITE: pieces that
 * come in the file's order, or large, keep it small (the memory it touches). */
enum { FIRST_LIMIT = 1 << 20, SMALL_WRITE = 64 << 10 };

struct piece {
    uint64_t at;  /* file offset */
    uint32_t len; /* bytes */
    uint32_t off; /* in the stage */
};

struct sx_wstage {
    int fd;
    int *werr;
    char *buf;
    size_t cap, limit, used;
    struct piece *pc;
    size_t maxpc, npc;
    bool sorted; /* the pieces were put in ascending order */
    unsigned long writes;
};

bool sx_wstage_wanted(void) {
    return !sx_direct_host_big_endian() &&
           sx_switch_on("SCOPE_EXPORT_DIRECT_EVENT_WRITES");
}

struct sx_wstage *sx_wstage_new(int fd, int *werr, size_t bytes, size_t pieces) {
    struct sx_wstage *s = sx_calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->fd = fd;
    s->werr = werr;
    s->cap = bytes > 0 && bytes <= UINT32_MAX ? bytes : DEFAULT_BYTES;
    s->limit = s->cap < FIRST_LIMIT ? s->cap : FIRST_LIMIT;
    s->maxpc = pieces > 0 ? pieces : DEFAULT_PIECES;
    s->buf = sx_pages_alloc(s->cap); /* in large frames (internal.h) */
    s->pc = sx_malloc(s->maxpc * sizeof *s->pc);
    s->sorted = true;
    if (s->buf == NULL || s->pc == NULL) {
        sx_wstage_free(s);
        return NULL;
    }
    return s;
}

void sx_wstage_free(struct sx_wstage *s) {
    if (s == NULL)
        return;
    sx_pages_free(s->buf, s->cap);
    free(s->pc);
    free(s);
}

unsigned long sx_wstage_writes(const struct sx_wstage *s) { return s ? s->writes : 0; }

static void keep(struct sx_wstage *s, int e) {
    if (*s->werr == 0)
        *s->werr = e != 0 ? e : EIO;
}

/* p[0..n) at 'at', short writes continued; a failure kept. */
static void write_at(struct sx_wstage *s, const char *p, size_t n, uint64_t at) {
    while (n > 0 && *s->werr == 0) {
        ssize_t k = pwrite(s->fd, p, n > (1u << 30) ? (1u << 30) : n, (off_t)at);
        s->writes++;
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            keep(s, k < 0 ? errno : EIO);
            return;
        }
        p += k;
        n -= (size_t)k;
        at += (uint64_t)k;
    }
}

/* Pieces [i, j), adjacent in the file, in one write; what a short write left, piece by
 * piece. */
static void write_run(struct sx_wstage *s, size_t i, size_t j) {
    struct iovec iov[MAX_IOV];
    size_t total = 0;
    if (j - i == 1) {
        write_at(s, s->buf + s->pc[i].off, s->pc[i].len, s->pc[i].at);
        return;
    }
    for (size_t k = i; k < j; k++) {
        iov[k - i].iov_base = s->buf + s->pc[k].off;
        iov[k - i].iov_len = s->pc[k].len;
        total += s->pc[k].len;
    }
    ssize_t w;
    do {
        w = pwritev(s->fd, iov, (int)(j - i), (off_t)s->pc[i].at);
        s->writes++;
    } while (w < 0 && errno == EINTR);
    if (w < 0) {
        keep(s, errno);
        return;
    }
    size_t done = (size_t)w;
    for (size_t k = i; k < j && done < total && *s->werr == 0; k++) {
        const struct piece *q = &s->pc[k];
        uint64_t from = q->at - s->pc[i].at; /* the piece's place in the run */
        if (from + q->len <= done)
            continue;
        size_t skip = done > from ? (size_t)(done - from) : 0;
        write_at(s, s->buf + q->off + skip, q->len - skip, q->at + skip);
    }
}

static int cmp_piece(const void *a, const void *b) {
    const struct piece *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

void sx_wstage_flush(struct sx_wstage *s) {
    if (s == NULL || s->npc == 0)
        return;
    if (!s->sorted)
        qsort(s->pc, s->npc, sizeof *s->pc, cmp_piece);
    size_t runs = 0;
    for (size_t i = 0; i < s->npc && *s->werr == 0; runs++) {
        size_t j = i + 1;
        while (j < s->npc && j - i < MAX_IOV &&
               s->pc[j - 1].at + s->pc[j - 1].len == s->pc[j].at)
            j++;
        write_run(s, i, j);
        i = j;
    }
    if (runs > 0 && s->used / runs < SMALL_WRITE && s->limit < s->cap)
        s->limit = 2 * s->limit < s->cap ? 2 * s->limit : s->cap;
    s->npc = 0;
    s->used = 0;
    s->sorted = true;
}

void sx_wstage_put(struct sx_wstage *s, uint64_t at, const void *p, size_t n) {
    if (n == 0 || *s->werr != 0)
        return;
    if (n > s->limit / 4) {
        write_at(s, p, n, at);
        return;
    }
    if (s->used + n > s->limit || s->npc == s->maxpc)
        sx_wstage_flush(s);
    if (s->npc > 0 && at < s->pc[s->npc - 1].at)
        s->sorted = false;
    s->pc[s->npc++] = (struct piece){at, (uint32_t)n, (uint32_t)s->used};
    memcpy(s->buf + s->used, p, n);
    s->used += n;
}
