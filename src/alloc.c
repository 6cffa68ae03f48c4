/* alloc.c - the library's allocations, each of which a fault test may make fail */
#define _GNU_SOURCE /* MAP_ANONYMOUS, madvise, mremap */
#include "fault.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static bool alloc_should_fail(void) { return sx_fault(SX_FAULT_ALLOC, 0); }

void *sx_malloc(size_t n) { return alloc_should_fail() ? NULL : malloc(n ? n : 1); }

void *sx_calloc(size_t n, size_t size) {
    return alloc_should_fail() ? NULL : calloc(n ? n : 1, size ? size : 1);
}

void *sx_realloc(void *p, size_t n) {
    return alloc_should_fail() ? NULL : realloc(p, n ? n : 1);
}

char *sx_strndup(const char *s, size_t n) {
    char *d = sx_malloc(n + 1);
    if (d == NULL)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *sx_strdup(const char *s) { return sx_strndup(s, strlen(s)); }

/* ------------------------------------------------------------------ */
/* Large buffers in large frames (internal.h)                          */

#define BIG_FRAME ((size_t)2 << 20)

static bool big_wanted(void) { return sx_switch_on("SCOPE_EXPORT_HUGE_PAGES"); }

/* The first frame boundary of a reservation 'm' of 'len' bytes and a frame more. */
static char *frame_start(char *m) {
    return (char *)(((uintptr_t)m + BIG_FRAME - 1) & ~(uintptr_t)(BIG_FRAME - 1));
}

/* The reservation 'm' let go but for its 'len' bytes at 'a' (frame_start), advised. */
static void *frame_keep(char *m, char *a, size_t len) {
    const size_t head = (size_t)(a - m);
    if (head > 0)
        munmap(m, head);
    if (BIG_FRAME - head > 0)
        munmap(a + len, BIG_FRAME - head);
#ifdef MADV_HUGEPAGE
    madvise(a, len, MADV_HUGEPAGE); /* advice: refused, 4 KiB pages as before */
#endif
    return a;
}

/* 'len' bytes (whole frames) mapped at a frame boundary and advised; NULL: none. */
static void *big_map(size_t len) {
    if (len > SIZE_MAX - BIG_FRAME)
        return NULL;
    char *m = mmap(NULL, len + BIG_FRAME, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    return frame_keep(m, frame_start(m), len);
}

/* 'len' bytes (whole pages) mapped at a page, in frames from SX_BIG_MIN; NULL: none. */
static void *pages_map(size_t len) {
    void *p = len >= SX_BIG_MIN && big_wanted() ? big_map(len) : NULL;
    if (p == NULL) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        p = p != MAP_FAILED ? p : NULL;
    }
    return p;
}

/* 'n' bytes rounded up to whole frames: a mapping that ends inside a frame fills its
 * last frame 4 KiB at a time, and again at each growth; 0: too large. */
static size_t frame_round(size_t n) {
    return n <= SIZE_MAX - BIG_FRAME ? (n + BIG_FRAME - 1) & ~(BIG_FRAME - 1) : 0;
}

/*
 * Pages 'p' of 'old' bytes grown to 'len': moved by the kernel, not copied (a
 * copy at each doubling held the old pages and the new at once: a block of
 * half a document, twice). At a frame boundary from SX_BIG_MIN, as
 * sx_pages_alloc maps them: the pages move into a reservation of the size
 * and a frame more, whose ends are let go. NULL: 'p' as it was.
 */
static void *pages_move(void *p, size_t old, size_t len) {
#ifdef MREMAP_FIXED
    if (len >= SX_BIG_MIN && len <= SIZE_MAX - BIG_FRAME && big_wanted()) {
        char *r = mmap(NULL, len + BIG_FRAME, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (r != MAP_FAILED) {
            char *a = frame_start(r);
            if (mremap(p, old, len, MREMAP_MAYMOVE | MREMAP_FIXED, a) != MAP_FAILED)
                return frame_keep(r, a, len);
            munmap(r, len + BIG_FRAME);
        }
    }
    void *q = mremap(p, old, len, MREMAP_MAYMOVE);
    return q != MAP_FAILED ? q : NULL;
#else /* no mremap: a copy */
    char *q = pages_map(len);
    if (q != NULL) {
        memcpy(q, p, old < len ? old : len);
        munmap(p, old);
    }
    return q;
#endif
}

/*
 * Growth of a buffer with bytes to keep costs no copy where it can: a mapped one's
 * pages move (pages_move), a malloc'd one stays malloc's (realloc) while small. A
 * loader's row table and a reader's column vectors grow so; copied at each doubling
 * into fresh 4 KiB pages, they were a fifth of an import's time in page faults on a
 * virtual machine. Nothing kept: a fresh mapping (it reads as zeros).
 */
bool sx_big_reserve(struct sx_big *b, size_t bytes, size_t keep) {
    if (bytes <= b->cap)
        return true;
    if (alloc_should_fail())
        return false;
    size_t cap = b->cap + b->cap / 2;
    cap = cap > bytes ? cap : bytes;
    keep = keep < b->cap ? keep : b->cap;
    const size_t map = cap >= SX_BIG_MIN && big_wanted() ? frame_round(cap) : 0;
    void *p = NULL;
    if (map > 0 && keep > 0 && b->map > 0) {
        p = pages_move(b->p, b->map, map); /* b->p let go with its pages */
        if (p != NULL) {
            b->p = p;
            b->cap = b->map = map;
            return true;
        }
    }
    const bool mapped = map > 0 && (p = big_map(map)) != NULL;
    if (mapped) {
        cap = map;
    } else if (keep > 0 && b->map == 0) {
        if ((p = realloc(b->p, cap)) == NULL)
            return false;
        b->p = p;
        b->cap = cap;
        return true;
    } else if ((p = malloc(cap)) == NULL) {
        return false;
    }
    if (keep > 0)
        memcpy(p, b->p, keep);
    sx_big_free(b);
    b->p = p;
    b->cap = cap;
    b->map = mapped ? map : 0;
    return true;
}

void sx_big_free(struct sx_big *b) {
    if (b->map > 0)
        munmap(b->p, b->map);
    else
        free(b->p);
    b->p = NULL;
    b->cap = b->map = 0;
}

void *sx_pages_alloc(size_t len) {
    return len == 0 || alloc_should_fail() ? NULL : pages_map(len);
}

void sx_pages_free(void *p, size_t len) {
    if (p != NULL)
        munmap(p, len);
}

bool sx_pages_trim(void *p, size_t old, size_t len) {
    return len >= old || munmap((char *)p + len, old - len) == 0;
}

void *sx_pages_grow(void *p, size_t old, size_t len) {
    return alloc_should_fail() ? NULL : pages_move(p, old, len);
}
