/* test_read_batch.c - many reads of a file in batches (io_uring), by pread and from a
 * mapping: the same bytes, the same stop at the file's end and at an error, the
 * switches, and proof that a ring and a mapping read where they are to be had */
#include "internal.h"
#include "read_batch.h"
#include "sx_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
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
 * side by side), over the batch size several times: from the map 'm' where they lie in
 * it, else through 'b' (or pread, NULL), each gives the file's bytes, and nothing is
 * written past a read.
 */
static void check_reads(struct sx_read_map *m, struct sx_read_batch *b, int fd) {
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
    CHECK(sx_read_all(m, b, fd, r, NREAD) == NREAD);
    for (size_t k = 0; k < NREAD; k++) {
        CHECK(r[k].got == r[k].len);
        CHECK(memcmp(got[k], file + r[k].off, r[k].len) == 0);
        CHECK(got[k][r[k].len] == 0xa5);
    }
}

/* A read that runs past the file's end stops the batch there: its index, errno 0, its
 * bytes as far as the file goes; the reads before it are whole. */
static void check_end(struct sx_read_map *m, struct sx_read_batch *b, int fd) {
    static unsigned char got[10][4096];
    struct sx_read_one r[10];
    for (size_t k = 0; k < 10; k++)
        r[k] = (struct sx_read_one){got[k], 4096, (uint64_t)k * 4096, 0};
    r[6].off = FILE_BYTES - 100; /* 100 bytes of its 4096 are there */
    errno = EINVAL;
    CHECK(sx_read_all(m, b, fd, r, 10) == 6);
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
    CHECK(sx_read_all(NULL, b, fd, r, 2) == 0);
    CHECK(errno == EISDIR);
    close(fd);
}

/* The resident KiB of the mapping that starts at 'p' (/proc/self/smaps), or -1. */
static long mapped_rss_kib(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    long kib = -1;
    bool in = false;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
            in = lo == (unsigned long)(uintptr_t)p;
        else if (in && sscanf(line, "Rss: %ld kB", &kib) == 1)
            break;
    }
    if (f != NULL)
        fclose(f);
    return kib;
}

/* A file four times SX_READ_MAP_KEEP read whole from its mapping, a MiB a read: the
 * right bytes, and no more than about SX_READ_MAP_KEEP of it left resident (mapped
 * pages count in the process's resident set; kept, all of them would be). */
static void check_let_go(const char *dir) {
    enum { BIG = 4 * SX_READ_MAP_KEEP, READ = 1 << 20 };
    char path[4200];
    snprintf(path, sizeof path, "%s/sx_read_map.XXXXXX", dir);
    int fd = mkstemp(path);
    ASSERT(fd >= 0);
    for (size_t at = 0; at < BIG; at += FILE_BYTES)
        ASSERT(write(fd, file, FILE_BYTES) == FILE_BYTES);
    struct sx_read_map m;
    sx_read_map_open(fd, BIG, &m);
    if (m.p != NULL) {
        static unsigned char got[READ];
        for (size_t at = 0; at < BIG; at += READ) {
            struct sx_read_one r = {got, READ, at, 0};
            CHECK(sx_read_all(&m, NULL, fd, &r, 1) == 1);
            CHECK(memcmp(got, file + at % FILE_BYTES, READ) == 0);
        }
        const long kib = mapped_rss_kib(m.p);
        CHECK(kib >= 0 && kib <= (SX_READ_MAP_KEEP + READ) / 1024);
        sx_read_map_release(&m);
        CHECK(mapped_rss_kib(m.p) == 0);
    }
    sx_read_map_close(&m);
    close(fd);
    unlink(path);
}

/* A mapped file cut short by another hand before a read: the read says so (the file's
 * end, errno 0) where a copy from the map would be a SIGBUS, and the map is let go;
 * what is left of the file still reads. */
static void check_cut_short(void) {
    char path[] = "/tmp/sx_read_cut.XXXXXX";
    int cut = mkstemp(path);
    ASSERT(cut >= 0 && write(cut, file, FILE_BYTES) == FILE_BYTES);
    struct sx_read_map m;
    sx_read_map_open(cut, FILE_BYTES, &m);
    CHECK(m.p != NULL);
    ASSERT(ftruncate(cut, FILE_BYTES / 2) == 0);
    unsigned char got[64];
    struct sx_read_one r = {got, sizeof got, FILE_BYTES * 3 / 4, 0};
    errno = EINVAL;
    CHECK(sx_read_all(&m, NULL, cut, &r, 1) == 0 && errno == 0 && r.got == 0);
    CHECK(m.p == NULL);
    r = (struct sx_read_one){got, sizeof got, 100, 0};
    CHECK(sx_read_all(&m, NULL, cut, &r, 1) == 1 && memcmp(got, file + 100, 64) == 0);
    sx_read_map_close(&m); /* the mapping kept till now (for views), let go */
    close(cut);
    unlink(path);
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
    check_reads(NULL, NULL, fd);
    check_end(NULL, NULL, fd);
    check_error(NULL);

    /* the ring: there when built with it and the kernel allows one, and it reads */
    unsetenv("SCOPE_EXPORT_URING");
    struct sx_read_batch *b = sx_read_batch_new();
    if (sx_read_batch_built() && sx_test_kernel_rings())
        CHECK(b != NULL);
    if (b != NULL) {
        check_reads(NULL, b, fd);
        CHECK(sx_read_batch_count(b) >= NREAD); /* all of them through it */
        check_end(NULL, b, fd);
        check_error(b);
        check_reads(NULL, b, fd); /* an error left the ring as it was */
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

    /* mapped: there on a local file system (this test's own, at least ext4 and tmpfs),
     * and its reads are copies (a file of the same size and other bytes, named as the
     * descriptor, reads the mapped file's bytes); reads past the mapping are read,
     * whole or to the file's end */
    struct sx_read_map m;
    struct statfs fs;
    unsetenv("SCOPE_EXPORT_MAPPED_READS");
    sx_read_map_open(fd, FILE_BYTES, &m);
    if (fstatfs(fd, &fs) == 0 && (fs.f_type == 0xEF53 || fs.f_type == 0x01021994))
        CHECK(m.p != NULL && m.len == FILE_BYTES);
    if (m.p != NULL) {
        char opath[] = "/tmp/sx_read_other.XXXXXX";
        int other = mkstemp(opath);
        ASSERT(other >= 0 && ftruncate(other, FILE_BYTES) == 0); /* zeros */
        check_reads(&m, NULL, other);
        CHECK(m.p != NULL);
        close(other);
        unlink(opath);
        check_reads(&m, NULL, fd);
        check_end(&m, NULL, fd);
        /* a view reads the same pages and, closed, leaves its owner's mapping there */
        struct sx_read_map view;
        sx_read_map_view(&m, &view);
        CHECK(view.p == m.p && view.len == m.len && view.mapped == NULL);
        check_reads(&view, NULL, fd);
        sx_read_map_close(&view);
        CHECK(view.p == NULL);
        check_reads(&m, NULL, fd);
        sx_read_map_view(NULL, &view);
        CHECK(view.p == NULL);
        sx_read_map_close(&m);
        CHECK(m.p == NULL);
        sx_read_map_open(fd, FILE_BYTES / 2, &m); /* half: batches mapped and read */
        CHECK(m.p != NULL);
        check_reads(&m, NULL, fd);
        unsigned char one[8];
        CHECK(sx_read_map_at(&m, FILE_BYTES / 2 - 8, 8) != NULL);
        CHECK(sx_read_map_at(&m, FILE_BYTES / 2 - 7, 8) == NULL);
        struct sx_read_one past = {one, 8, FILE_BYTES / 2, 0};
        CHECK(sx_read_all(&m, NULL, fd, &past, 1) == 1); /* not mapped: read */
        CHECK(memcmp(one, file + FILE_BYTES / 2, 8) == 0);
        sx_read_map_close(&m);
        check_cut_short();
    } else {
        printf("no mapping here (not a local file system)\n");
    }
    sx_read_map_close(&m);
    sx_read_map_close(&m); /* twice: still nothing */
    check_let_go("/tmp");
    /* the switch: not mapped */
    setenv("SCOPE_EXPORT_MAPPED_READS", "0", 1);
    sx_read_map_open(fd, FILE_BYTES, &m);
    CHECK(m.p == NULL);
    unsetenv("SCOPE_EXPORT_MAPPED_READS");

    close(fd);
    unlink(path);
    TEST_DONE();
}
