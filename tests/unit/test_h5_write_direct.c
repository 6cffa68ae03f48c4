/* test_h5_write_direct.c - the event writer's stage (h5_write_direct.h): pieces put in
 * any order give the file's bytes, neighbours go out in one write, a failed write is kept
 * and stops the writing, and the switch */
#include "h5_write_direct.h"
#include "sx_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { FILE_BYTES = 1 << 20, ROWS = 64, COLS = 3 };

static unsigned char want[FILE_BYTES], got[FILE_BYTES];

static uint64_t next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int temp_file(char *path) {
    strcpy(path, "/tmp/sx-wstage-XXXXXX");
    int fd = mkstemp(path);
    ASSERT(fd >= 0);
    unlink(path);
    return fd;
}

static void read_back(int fd) {
    memset(got, 0, sizeof got);
    ASSERT(pread(fd, got, FILE_BYTES, 0) >= 0);
}

/*
 * A run's layout: COLS columns of ROWS rows each, rank-major; the pieces put region by
 * region as an import does (row r of every column, then row r + 1 ...), so out of the
 * file's order, with lengths of 0 to a few KiB, one over a quarter of the stage. With a
 * small stage (several flushes, sorts, full piece tables) the file is the pieces.
 */
static void check_layout(size_t bytes, size_t pieces, bool one_stage) {
    char path[64];
    int fd = temp_file(path), werr = 0;
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    uint64_t off[COLS][ROWS + 1], len[COLS][ROWS];
    uint64_t at = 0;
    memset(want, 0, sizeof want);
    for (int c = 0; c < COLS; c++) {
        for (int r = 0; r < ROWS; r++) {
            len[c][r] = r % 9 == 4 ? 0 : next(&s) % 4000;
            if (c == 1 && r == 7)
                len[c][r] = bytes / 4 + 1 + 8; /* written at once */
            off[c][r] = at;
            at += len[c][r];
        }
        off[c][ROWS] = at;
    }
    ASSERT(at <= FILE_BYTES);
    for (uint64_t i = 0; i < at; i++)
        want[i] = (unsigned char)(next(&s) | 1);
    struct sx_wstage *st = sx_wstage_new(fd, &werr, bytes, pieces);
    ASSERT(st != NULL);
    /* regions in reverse, so that even neighbours come in descending order */
    for (int r = ROWS - 1; r >= 0; r--)
        for (int c = 0; c < COLS; c++)
            sx_wstage_put(st, off[c][r], want + off[c][r], len[c][r]);
    sx_wstage_flush(st);
    CHECK(werr == 0);
    read_back(fd);
    CHECK(memcmp(got, want, at) == 0);
    /* all of it staged: each column's rows adjacent, one write per column (at most 1024
     * pieces in a write), but for the piece written alone */
    if (one_stage)
        CHECK(sx_wstage_writes(st) <= COLS + 2);
    sx_wstage_free(st);
    close(fd);
}

/* A descriptor that cannot be written: the errno is kept, nothing after it is tried. */
static void check_failure(void) {
    char path[64];
    int fd = temp_file(path), werr = 0;
    int ro = open("/dev/null", O_RDONLY);
    ASSERT(ro >= 0);
    struct sx_wstage *st = sx_wstage_new(ro, &werr, 4096, 16);
    ASSERT(st != NULL);
    static const char bytes[64] = "0123456789";
    sx_wstage_put(st, 0, bytes, 10);
    CHECK(werr == 0); /* staged, not written yet */
    sx_wstage_flush(st);
    CHECK(werr == EBADF);
    unsigned long writes = sx_wstage_writes(st);
    sx_wstage_put(st, 100, bytes, 10);
    sx_wstage_put(st, 0, bytes, 2000); /* over a quarter: would be written at once */
    sx_wstage_flush(st);
    CHECK(werr == EBADF);
    CHECK(sx_wstage_writes(st) == writes);
    sx_wstage_free(st);
    close(ro);
    /* a full device: ENOSPC, as the writer reports it */
    int full = open("/dev/full", O_WRONLY);
    if (full >= 0) {
        werr = 0;
        st = sx_wstage_new(full, &werr, 4096, 16);
        ASSERT(st != NULL);
        sx_wstage_put(st, 0, bytes, 10);
        sx_wstage_put(st, 10, bytes, 10);
        sx_wstage_flush(st);
        CHECK(werr == ENOSPC);
        sx_wstage_free(st);
        close(full);
    }
    close(fd);
}

int main(void) {
    check_layout(0, 0, true);      /* the defaults: everything in one stage */
    check_layout(8192, 16, false); /* many flushes, by bytes and by pieces */
    check_layout(16384, 4096, false);
    check_layout(1 << 20, 3, false); /* a table of three pieces */
    check_failure();
    /* the switch */
    setenv("SCOPE_EXPORT_DIRECT_EVENT_WRITES", "0", 1);
    CHECK(!sx_wstage_wanted());
    setenv("SCOPE_EXPORT_DIRECT_EVENT_WRITES", "1", 1);
    const uint16_t one = 1;
    unsigned char low;
    memcpy(&low, &one, 1);
    CHECK(sx_wstage_wanted() == (low == 1));
    sx_wstage_free(NULL);
    TEST_DONE();
}
