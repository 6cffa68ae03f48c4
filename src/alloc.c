/* alloc.c - the library's allocations, each of which a fault test may make fail */
#include "fault.h"

#include <stdlib.h>
#include <string.h>

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
