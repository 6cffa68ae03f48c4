/* alloc.c - the library's allocations, each of which a fault test may make fail */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, madvise */
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

/* 'len' bytes (whole frames) mapped at a frame boundary and advised; NULL: none. */
static void *big_map(size_t len) {
    if (len > SIZE_MAX - BIG_FRAME)
        return NULL;
    char *m = mmap(NULL, len + BIG_FRAME, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    const uintptr_t a = ((uintptr_t)m + BIG_FRAME - 1) & ~(uintptr_t)(BIG_FRAME - 1);
    const size_t head = (size_t)(a - (uintptr_t)m);
    if (head > 0)
        munmap(m, head);
    if (BIG_FRAME - head > 0)
        munmap((char *)a + len, BIG_FRAME - head);
#ifdef MADV_HUGEPAGE
    madvise((void *)a, len, MADV_HUGEPAGE); /* advice: refused, 4 KiB pages as before */
#endif
    return (void *)a;
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
