/* h5_direct_win.c - (h5_direct) kept windows of a file, for rows picked thinly over it
 */
#include "h5_direct_win.h"

#include "fault.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct slot {
    uint64_t base; /* file offset of the window */
    size_t len;    /* bytes it holds: less than a window at the end of the file */
    uint64_t used; /* when last read from; 0: empty */
    unsigned char *mem;
};

struct sx_file_win {
    int fd;
    size_t win, nwin;
    uint64_t clock;
    size_t last; /* the slot of the last read, tried first */
    struct slot *slot;
    unsigned char *mem;
};

struct sx_file_win *sx_file_win_new(int fd, size_t win, size_t nwin) {
    struct sx_file_win *w = sx_calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    w->fd = fd;
    w->win = win;
    w->nwin = nwin;
    w->slot = sx_calloc(nwin, sizeof *w->slot);
    w->mem = sx_malloc(win * nwin);
    if (w->slot == NULL || w->mem == NULL) {
        sx_file_win_free(w);
        return NULL;
    }
    for (size_t i = 0; i < nwin; i++)
        w->slot[i].mem = w->mem + i * win;
    return w;
}

void sx_file_win_free(struct sx_file_win *w) {
    if (w == NULL)
        return;
    free(w->mem);
    free(w->slot);
    free(w);
}

/* The slot holding the window at 'base', read into the least recently used one if none.
 */
static enum sx_status window(struct sx_file_win *w, uint64_t base, struct slot **out,
                             const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct slot *s = &w->slot[w->last];
    if (s->used != 0 && s->base == base)
        goto hit;
    size_t lru = 0;
    for (size_t i = 0; i < w->nwin; i++) {
        if (w->slot[i].used != 0 && w->slot[i].base == base) {
            w->last = i;
            s = &w->slot[i];
            goto hit;
        }
        if (w->slot[i].used < w->slot[lru].used)
            lru = i;
    }
    s = &w->slot[lru];
    s->used = 0;
    SX_CHECK(!sx_fault(SX_FAULT_READ, 0), SX_ERR_IO, err, src,
             "%s cannot be read; the file is truncated or damaged", src);
    size_t got = 0;
    while (got < w->win) {
        ssize_t k = pread(w->fd, s->mem + got, w->win - got, (off_t)(base + got));
        if (k < 0 && errno == EINTR)
            continue;
        SX_CHECK(k >= 0, SX_ERR_IO, err, src,
                 "%s cannot be read (%zu bytes at offset %" PRIu64 "): %s", src, w->win,
                 base, strerror(errno));
        if (k == 0)
            break; /* the end of the file */
        got += (size_t)k;
    }
    s->base = base;
    s->len = got;
    w->last = lru;
hit:
    s->used = ++w->clock;
    *out = s;
out:
    return st;
}

enum sx_status sx_file_win_read(struct sx_file_win *w, uint64_t at, size_t n, void *dst,
                                const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    unsigned char *d = dst;
    while (n > 0) {
        uint64_t base = at & ~(uint64_t)(w->win - 1);
        struct slot *s = NULL;
        st = window(w, base, &s, src, err);
        if (st != SX_OK)
            goto out;
        size_t in = (size_t)(at - base), take = w->win - in < n ? w->win - in : n;
        SX_CHECK(in + take <= s->len, SX_ERR_IO, err, src,
                 "%s cannot be read (%zu bytes at offset %" PRIu64
                 " lie past the end of the file); the file is truncated or damaged",
                 src, n, at);
        memcpy(d, s->mem + in, take);
        d += take;
        at += take;
        n -= take;
    }
out:
    return st;
}
