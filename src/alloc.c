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

static bool big_wanted(void) {
    const char *e = getenv("SCOPE_EXPORT_HUGE_PAGES");
    return e == NULL || strcmp(e, "0") != 0;
}

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

bool sx_big_reserve(struct sx_big *b, size_t bytes, size_t keep) {
    if (bytes <= b->cap)
        return true;
    if (alloc_should_fail())
        return false;
    size_t cap = b->cap + b->cap / 2;
    cap = cap > bytes ? cap : bytes;
    void *p = NULL;
    size_t map = 0;
    if (cap >= SX_BIG_MIN && cap <= SIZE_MAX - BIG_FRAME && big_wanted()) {
        map = (cap + BIG_FRAME - 1) & ~(BIG_FRAME - 1);
        p = big_map(map);
        if (p != NULL)
            cap = map;
        else
            map = 0;
    }
    if (p == NULL)
        p = malloc(cap);
    if (p == NULL)
        return false;
    keep = keep < b->cap ? keep : b->cap;
    if (keep > 0)
        memcpy(p, b->p, keep);
    sx_big_free(b);
    b->p = p;
    b->cap = cap;
    b->map = map;
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
    if (len == 0 || alloc_should_fail())
        return NULL;
    void *p = len >= SX_BIG_MIN && big_wanted() ? big_map(len) : NULL;
    if (p == NULL) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        p = p != MAP_FAILED ? p : NULL;
    }
    return p;
}

void sx_pages_free(void *p, size_t len) {
    if (p != NULL)
        munmap(p, len);
}

/*
 * Pages 'p' of 'old' bytes grown to 'len': moved by the kernel, not copied (a
 * copy at each doubling held the old pages and the new at once: a block of
 * half a document, twice). At a frame boundary from SX_BIG_MIN, as
 * sx_pages_alloc maps them: the pages move into a reservation of the size
 * and a frame more, whose ends are let go. NULL: 'p' as it was.
 */
void *sx_pages_grow(void *p, size_t old, size_t len) {
    if (alloc_should_fail())
        return NULL;
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
    char *q = sx_pages_alloc(len);
    if (q != NULL) {
        memcpy(q, p, old < len ? old : len);
        sx_pages_free(p, old);
    }
    return q;
#endif
}

bool sx_pages_trim(void *p, size_t old, size_t len) {
    return len >= old || munmap((char *)p + len, old - len) == 0;
}

/* 'n' bytes rounded up to whole frames: a mapping that ends inside a frame fills its
 * last frame 4 KiB at a time, and again at each growth; 0: too large. */
static size_t frame_round(size_t n) {
    return n <= SIZE_MAX - BIG_FRAME ? (n + BIG_FRAME - 1) & ~(BIG_FRAME - 1) : 0;
}

bool sx_grow(void **p, size_t *map, size_t old, size_t len) {
    if (len < SX_BIG_MIN && *map == 0) {
        void *q = sx_realloc(*p, len);
        if (q == NULL)
            return false;
        *p = q;
        return true;
    }
    const size_t want = frame_round(len);
    if (want == 0)
        return false;
    if (*map >= want)
        return true;
    void *q = NULL;
    if (*map > 0) {
        q = sx_pages_grow(*p, *map, want);
    } else if ((q = sx_pages_alloc(want)) != NULL) {
        if (old > 0)
            memcpy(q, *p, old);
        free(*p);
    }
    if (q == NULL)
        return false;
    *p = q;
    *map = want;
    return true;
}

void sx_grow_free(void *p, size_t map) {
    if (map > 0)
        sx_pages_free(p, map);
    else
        free(p);
}
