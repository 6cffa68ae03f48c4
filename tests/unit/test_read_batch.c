/* test_read_batch.c - many reads of a file in batches (io_uring) and by pread: the same
 * bytes, the same stop at the file's end and at an error, the switch, and proof that a
 * ring read where one is to be had */
#include "internal.h"
#include "read_batch.h"
#include "sx_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { FILE_BYTES = 1 << 20, NREAD = 700 };

static unsigned char file[FILE_BYTES];

/* A small deterministic generator, so that a failure can be run again. */
static uint64_t next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/*
 * NREAD reads at random offsets and lengths (empty ones, some of a page and more, some
 * side by side), over the batch size several times: through 'b' (or pread, NULL) each
 * gives the file's bytes, and nothing is written past a read.
 */
static void check_reads(struct sx_read_batch *b, int fd) {
    static unsigned char got[NREAD][9000];
    struct sx_read_one r[NREAD];
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    memset(got, 0xa5, sizeof got);
    for (size_t k = 0; k < NREAD; k++) {
        size_t len = (size_t)(next(&s) % 8192);
        if (k % 50 == 0)
            len = 0;
        uint64_t off = next(&s) % (FILE_BYTES - len);
        r[k] = (struct sx_read_one){got[k], len, off, 0};
    }
    CHECK(sx_read_all(b, fd, r, NREAD) == NREAD);
    for (size_t k = 0; k < NREAD; k++) {
        CHECK(r[k].got == r[k].len);
        CHECK(memcmp(got[k], file + r[k].off, r[k].len) == 0);
        CHECK(got[k][r[k].len] == 0xa5);
    }
}

/* A read that runs past the file's end stops the batch there: its index, errno 0, its
 * bytes as far as the file goes; the reads before it are whole. */
static void check_end(struct sx_read_batch *b, int fd) {
    static unsigned char got[10][4096];
    struct sx_read_one r[10];
    for (size_t k = 0; k < 10; k++)
        r[k] = (struct sx_read_one){got[k], 4096, (uint64_t)k * 4096, 0};
    r[6].off = FILE_BYTES - 100; /* 100 bytes of its 4096 are there */
    errno = EINVAL;
    CHECK(sx_read_all(b, fd, r, 10) == 6);
    CHECK(errno == 0);
    CHECK(r[6].got == 100 && memcmp(got[6], file + FILE_BYTES - 100, 100) == 0);
    for (size_t k = 0; k < 6; k++)
        CHECK(r[k].got == 4096 && memcmp(got[k], file + k * 4096, 4096) == 0);
}

/* A descriptor that reads nothing: the first read fails with its errno. */
static void check_error(struct sx_read_batch *b) {
    unsigned char got[2][16];
    struct sx_read_one r[2] = {{got[0], 16, 0, 0}, {got[1], 16, 64, 0}};
    int fd = open("/", O_RDONLY | O_DIRECTORY);
    ASSERT(fd >= 0);
    CHECK(sx_read_all(b, fd, r, 2) == 0);
    CHECK(errno == EISDIR);
    close(fd);
}

int main(void) {
    char path[] = "/tmp/sx_read_batch.XXXXXX";
    int fd = mkstemp(path);
    ASSERT(fd >= 0);
    uint64_t s = 42;
    for (size_t i = 0; i < FILE_BYTES; i++)
        file[i] = (unsigned char)next(&s);
    ASSERT(write(fd, file, FILE_BYTES) == FILE_BYTES);

    /* pread alone */
    check_reads(NULL, fd);
    check_end(NULL, fd);
    check_error(NULL);

    /* the ring: there when built with it and the kernel allows one, and it reads */
    unsetenv("SCOPE_EXPORT_URING");
    struct sx_read_batch *b = sx_read_batch_new();
    if (sx_read_batch_built() && sx_test_kernel_rings())
        CHECK(b != NULL);
    if (b != NULL) {
        check_reads(b, fd);
        CHECK(sx_read_batch_count(b) >= NREAD); /* all of them through it */
        check_end(b, fd);
        check_error(b);
        check_reads(b, fd); /* an error left the ring as it was */
        CHECK(sx_read_batch_count(b) >= 2 * NREAD);
    } else {
        printf("no ring here (built without liburing, or the kernel refuses one)\n");
    }
    sx_read_batch_free(b);
    sx_read_batch_free(NULL);

    /* the switch: no ring */
    setenv("SCOPE_EXPORT_URING", "0", 1);
    CHECK(sx_read_batch_new() == NULL);
    unsetenv("SCOPE_EXPORT_URING");

    close(fd);
    unlink(path);
    TEST_DONE();
}
