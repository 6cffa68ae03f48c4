/* internal.h - what every file of the library shares: errors, the checking macro,
 * allocations */
#ifndef SX_INTERNAL_H
#define SX_INTERNAL_H

#include "scope_export.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* error.c                                                            */

/* Set 'err' unless it already holds an error (the first error wins). */
enum sx_status sx_error_set(struct sx_error *err, enum sx_status code, const char *source,
                            const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void sx_error_clear(struct sx_error *err);
/* Name 'source' as the error's source when the error has none yet. */
void sx_error_where(struct sx_error *err, const char *source);

/* The one checking macro: on a false 'cond', record the error and goto out. */
#define SX_CHECK(cond, code, err, source, ...)                                           \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            st = sx_error_set((err), (code), (source), __VA_ARGS__);                     \
            goto out;                                                                    \
        }                                                                                \
    } while (0)

/*
 * Ownership, the library's one rule: a function that takes ownership of an argument
 * takes it in every case, on failure too (as jansson's json_array_append_new): the
 * caller neither frees nor uses what it passed, whatever the call returns.
 */

/* Allocations: each may fail on purpose in the fault tests (SX_FAULT_ALLOC). */
void *sx_malloc(size_t n);
void *sx_calloc(size_t n, size_t size);
void *sx_realloc(void *p, size_t n);
char *sx_strdup(const char *s);
char *sx_strndup(const char *s, size_t n);

/*
 * Large working buffers in large frames (alloc.c). A buffer of SX_BIG_MIN bytes
 * or more is mapped on its own at a 2 MiB boundary and advised MADV_HUGEPAGE,
 * so that the kernel fills it a 2 MiB frame at a time where transparent huge
 * pages are on (Debian's "madvise" mode): a page fault costs microseconds on a
 * virtual machine, and 4 KiB ones on a many-row export's read-ahead were a
 * tenth of its time. From 1 MiB: that export's rooms of 1-4 MiB (the plan's
 * pieces, the reads' spans) took ~2k more faults (~10 us each on a VM that
 * backs a fresh page on first touch), for at most a frame of RSS a buffer
 * (a 1 MiB buffer may fill a 2 MiB frame). Smaller buffers, a refused mapping, or
 * SCOPE_EXPORT_HUGE_PAGES=0 (read at each growth): malloc, as any other. The
 * advice is on our own mapping, unmapped by sx_big_free: nothing of the
 * process's own memory changes.
 */
#define SX_BIG_MIN ((size_t)1 << 20)
struct sx_big {
    void *p;
    size_t cap; /* bytes */
    size_t map; /* bytes mapped at p; 0: p is malloc's */
};
/* Make 'b' hold 'bytes', its first 'keep' bytes kept (grown by half again at least;
 * mapped pages move, not copied: a growing array's storage); keep 0: fresh room, and
 * mapped room reads as zeros. false: no memory, 'b' as it was. A fault test may fail
 * it (SX_FAULT_ALLOC). */
bool sx_big_reserve(struct sx_big *b, size_t bytes, size_t keep);
/* Accepts an empty 'b' (zeroed); leaves it empty. */
void sx_big_free(struct sx_big *b);
/* 'len' bytes (whole pages) mapped at a page, in large frames from SX_BIG_MIN as above:
 * a buffer written around the page cache (an aligned sx_buf). NULL: none (a fault test
 * may fail it). Unmapped by sx_pages_free with the same length; accepts NULL. */
void *sx_pages_alloc(size_t len);
void sx_pages_free(void *p, size_t len);
/* Pages of sx_pages_alloc, 'p' of 'old' bytes, grown to 'len' (whole pages) without a
 * copy; NULL: no memory (a fault test may fail it), 'p' as it was. */
void *sx_pages_grow(void *p, size_t old, size_t len);
/* Its pages from 'len' (whole pages) on let go: true, or false and 'p' as it was. */
bool sx_pages_trim(void *p, size_t old, size_t len);

/* ------------------------------------------------------------------ */
/* Switches                                                            */

/* Whether the switch 'name', an environment variable read at each call, is on: unset, or
 * any value but 0. Each way the library goes around another (direct reads and writes,
 * mapped reads, io_uring, large frames, libdeflate) has one, to turn it off. */
static inline bool sx_switch_on(const char *name) {
    const char *v = getenv(name);
    return v == NULL || strcmp(v, "0") != 0;
}

#endif /* SX_INTERNAL_H */
