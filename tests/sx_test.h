/* sx_test.h - the assertion macros every test uses */
#ifndef SX_TEST_H
#define SX_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sx_test_failures;

/* Record a failure with expression, file and line, and keep going. */
#define CHECK(expr)                                                                      \
    do {                                                                                 \
        if (!(expr)) {                                                                   \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #expr);     \
            sx_test_failures++;                                                          \
        }                                                                                \
    } while (0)

/* Fail and stop the test at once. */
#define ASSERT(expr)                                                                     \
    do {                                                                                 \
        if (!(expr)) {                                                                   \
            fprintf(stderr, "%s:%d: ASSERT failed: %s\n", __FILE__, __LINE__, #expr);    \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

#define CHECK_STR(got, want)                                                             \
    do {                                                                                 \
        const char *g_ = (got), *w_ = (want);                                            \
        if (strcmp(g_, w_) != 0) {                                                       \
            fprintf(stderr, "%s:%d: CHECK_STR failed: %s\n  got:  [%s]\n  want: [%s]\n", \
                    __FILE__, __LINE__, #got, g_, w_);                                   \
            sx_test_failures++;                                                          \
        }                                                                                \
    } while (0)

#define TEST_DONE()                                                                      \
    do {                                                                                 \
        if (sx_test_failures) {                                                          \
            fprintf(stderr, "%d check(s) failed\n", sx_test_failures);                   \
            return 1;                                                                    \
        }                                                                                \
        return 0;                                                                        \
    } while (0)

/* Whether the kernel lets a process have an io_uring (io_uring_disabled absent or 0):
 * where the build has the rings (sx_read_batch_built), they must then read. */
static inline int sx_test_kernel_rings(void) {
    FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "r");
    int v = 0;
    if (f == NULL)
        return 1;
    if (fscanf(f, "%d", &v) != 1)
        v = 0;
    fclose(f);
    return v == 0;
}

#endif
