/*
 * test_out_file.c - the output file and its writer thread: bytes land in
 * order whichever way they are written; a write that fails in the thread is
 * an error naming the output at the next write or the commit; a failed
 * output leaves no file and no temporary behind, and an existing file as it
 * was. Each with and without direct writes (SX_OUT_DIRECT): the same bytes
 * when the file system takes them around the page cache, and when it refuses
 * them (fcntl and pwrite are interposed below to refuse, or to write short).
 */
#define _GNU_SOURCE /* O_DIRECT, syscall */
#include "buf.h"
#include "out_file.h"
#include "sx_fault.h"
#include "sx_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static char dir[256];
static unsigned flags; /* SX_OUT_THREAD: the writer thread, or the caller writes */

/*
 * The file system, as the library sees it: fcntl and pwrite interposed. 'refuse' 1:
 * turning a descriptor O_DIRECT fails (EINVAL), as where the file system has no direct
 * I/O; 2: a write on an O_DIRECT descriptor fails (EINVAL), as for an alignment coarser
 * than ours; 3: it writes about half of what it is given. 'direct_writes' counts the
 * writes on an O_DIRECT descriptor that went in.
 */
static int refuse;
static long direct_writes;
/* 'hold': a direct write waits (up to 5 s) until the caller sets 'released'; 'held_out'
 * counts the waits that ran out */
static int hold, released, held_out;

static int real_fcntl(int fd, int cmd, long arg) {
    return (int)syscall(SYS_fcntl, fd, cmd, arg);
}

static int fake_fcntl(int fd, int cmd, va_list ap) {
    long arg = 0;
    if (cmd == F_SETFL || cmd == F_SETFD || cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
        arg = va_arg(ap, long);
    else if (cmd != F_GETFL && cmd != F_GETFD)
        arg = (long)va_arg(ap, void *);
    if (cmd == F_SETFL && (arg & O_DIRECT) && refuse == 1) {
        errno = EINVAL;
        return -1;
    }
    return real_fcntl(fd, cmd, arg);
}
int fcntl(int fd, int cmd, ...);
int fcntl64(int fd, int cmd, ...);
int fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    int r = fake_fcntl(fd, cmd, ap);
    va_end(ap);
    return r;
}
int fcntl64(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    int r = fake_fcntl(fd, cmd, ap);
    va_end(ap);
    return r;
}

static ssize_t fake_pwrite(int fd, const void *p, size_t n, off_t at) {
    const int fl = real_fcntl(fd, F_GETFL, 0);
    const bool direct = fl >= 0 && (fl & O_DIRECT);
    if (direct && refuse == 2) {
        errno = EINVAL;
        return -1;
    }
    if (direct && refuse == 3 && n > 8192)
        n = n / 2 / 4096 * 4096; /* short (in whole blocks, as O_DIRECT wants) */
    if (direct && __atomic_load_n(&hold, __ATOMIC_SEQ_CST)) {
        int ms = 0;
        while (!__atomic_load_n(&released, __ATOMIC_SEQ_CST) && ms < 5000) {
            usleep(1000);
            ms++;
        }
        if (ms >= 5000)
            __atomic_fetch_add(&held_out, 1, __ATOMIC_SEQ_CST);
    }
    ssize_t w = (ssize_t)syscall(SYS_pwrite64, fd, p, n, at);
    if (direct && w > 0)
        direct_writes++;
    return w;
}
ssize_t pwrite(int fd, const void *p, size_t n, off_t at);
ssize_t pwrite64(int fd, const void *p, size_t n, off_t at);
ssize_t pwrite(int fd, const void *p, size_t n, off_t at) {
    return fake_pwrite(fd, p, n, at);
}
ssize_t pwrite64(int fd, const void *p, size_t n, off_t at) {
    return fake_pwrite(fd, p, n, at);
}

static unsigned long long rnd_state = 88172645463325252ull;
static unsigned rnd(void) {
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return (unsigned)(rnd_state >> 16);
}

/* The file's bytes, or NULL; their count in '*n'. */
static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)len + 1);
    ASSERT(p != NULL && fread(p, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return p;
}

/* How many names in 'dir' (temporaries are hidden names beside the output). */
static int entries(void) {
    DIR *d = opendir(dir);
    ASSERT(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* Whether the output lends its buffers (sx_out_lend): with the thread and direct
 * writes, unless they are switched off. */
static bool lends(void) {
    const char *env = getenv("SCOPE_EXPORT_DIRECT_WRITES");
    return (flags & SX_OUT_THREAD) && (flags & SX_OUT_DIRECT) &&
           (env == NULL || strcmp(env, "0") != 0);
}

/* Buffers handed over, lent buffers formatted into and bytes copied, interleaved, of
 * many sizes: all of them, in order; the caller's own buffer back after each lend. */
static void test_order(const char *path) {
    size_t cap = (size_t)40 << 20, len = 0;
    char *want = malloc(cap);
    ASSERT(want != NULL);
    struct sx_out_file *f = NULL;
    struct sx_error e;
    sx_error_clear(&e);
    ASSERT(sx_out_open(path, flags, &f, &e) == SX_OK);
    struct sx_buf b = {0};
    int lent = 0;
    for (int k = 0; k < 400; k++) {
        size_t n = k % 50 == 0 ? (size_t)(rnd() % (4u << 20)) : (size_t)(rnd() % 70000);
        if (k % 9 == 4)
            n = (size_t)(rnd() % (12u << 20)); /* lent, and more than a stage */
        char piece[64];
        if (len + n + sizeof piece > cap)
            break;
        const char *own = b.data;
        const bool lend = k % 3 != 0 && sx_out_lend(f, &b);
        CHECK(lend == (k % 3 != 0 && lends()));
        if (lend) {
            lent++;
            CHECK(b.len == 0 && b.data != own &&
                  !sx_out_lend(f, &b)); /* once at a time */
        }
        for (size_t i = 0; i < n; i++) {
            char c = (char)('a' + (k + i) % 26);
            sx_buf_putc(&b, c);
            want[len++] = c;
        }
        ASSERT(!b.failed);
        CHECK(sx_out_write_buf(f, &b, &e) == SX_OK);
        CHECK(b.len == 0); /* it comes back empty */
        if (lend)
            CHECK(b.data == own); /* the caller's own */
        if (k % 7 == 2)           /* lent buffers one after another */
            continue;
        int m = snprintf(piece, sizeof piece, "<%d>", k);
        CHECK(sx_out_write(f, piece, (size_t)m, &e) == SX_OK);
        memcpy(want + len, piece, (size_t)m);
        len += (size_t)m;
    }
    CHECK(sx_out_commit(f, &e) == SX_OK);
    CHECK(lends() == (lent > 0));
    size_t got_n = 0;
    char *got = slurp(path, &got_n);
    CHECK(got != NULL && got_n == len && memcmp(got, want, len) == 0);
    CHECK(entries() == 1);
    sx_buf_free(&b);
    free(got);
    free(want);
}

/*
 * Blocks lent one after another, each after half a stage of the one before: a stage grown
 * for such a block keeps its room once written (no fresh pages for every block, a fifth
 * of a large export's time), and the text is whole.
 */
static void test_lent_room(const char *path) {
    if (!lends())
        return;
    const size_t small = (size_t)3 << 19, large = (size_t)7 << 19; /* 1.5 and 3.5 MiB */
    struct sx_out_file *f = NULL;
    struct sx_error e;
    sx_error_clear(&e);
    ASSERT(sx_out_open(path, flags, &f, &e) == SX_OK);
    ASSERT(large < sx_out_stage_bytes(f) && small + large > sx_out_stage_bytes(f));
    struct sx_buf b = {0};
    size_t len = 0;
    for (int k = 0; k < 12; k++) {
        const size_t n = k % 2 ? large : small;
        ASSERT(sx_out_lend(f, &b));
        /* from the third large block on, both stages have grown once */
        if (k % 2 && k >= 5)
            CHECK(b.cap > n);
        for (size_t i = 0; i < n; i++)
            sx_buf_putc(&b, (char)('a' + (len + i) % 23));
        len += n;
        ASSERT(!b.failed);
        CHECK(sx_out_write_buf(f, &b, &e) == SX_OK);
    }
    CHECK(sx_out_commit(f, &e) == SX_OK);
    size_t got_n = 0;
    char *got = slurp(path, &got_n);
    CHECK(got != NULL && got_n == len);
    size_t bad = 0;
    for (size_t i = 0; got != NULL && i < got_n && i < len; i++)
        bad += got[i] != (char)('a' + i % 23);
    CHECK(bad == 0);
    free(got);
    sx_buf_free(&b);
}

/* Bytes written between a lend and its give-back, or a commit before it: refused, the
 * existing output left as it was, no temporary left. */
static void test_lend_misuse(const char *path) {
    size_t before_n = 0;
    char *before = slurp(path, &before_n);
    ASSERT(before != NULL);
    for (int commit = 0; commit <= 1; commit++) {
        struct sx_out_file *f = NULL;
        struct sx_error e;
        sx_error_clear(&e);
        ASSERT(sx_out_open(path, flags, &f, &e) == SX_OK);
        struct sx_buf b = {0};
        CHECK(sx_out_lend(f, &b) == lends());
        sx_buf_append(&b, "lent", 4);
        if (!lends()) {
            sx_out_abort(f);
        } else if (commit) {
            CHECK(sx_out_commit(f, &e) == SX_ERR_IO);
        } else {
            CHECK(sx_out_write(f, "x", 1, &e) == SX_ERR_IO);
            CHECK(strcmp(e.source, path) == 0);
            CHECK(sx_out_write_buf(f, &b, &e) == SX_OK); /* the lend itself ends well */
            sx_out_abort(f);
        }
        sx_buf_free(&b);
    }
    size_t after_n = 0;
    char *after = slurp(path, &after_n);
    CHECK(after != NULL && after_n == before_n && memcmp(after, before, before_n) == 0);
    CHECK(entries() == 1);
    free(after);
    free(before);
}

/*
 * The thread's write fails (the file size limit, as a full disk would): the
 * caller hears of it, naming the output, by the commit at the latest; the
 * existing output stays, and no temporary is left.
 */
static void test_thread_failure(const char *path) {
    size_t before_n = 0;
    char *before = slurp(path, &before_n);
    ASSERT(before != NULL);
    struct rlimit was, small;
    ASSERT(getrlimit(RLIMIT_FSIZE, &was) == 0);
    small = was;
    small.rlim_cur = 1 << 20;
    signal(SIGXFSZ, SIG_IGN); /* the write fails with EFBIG instead */
    ASSERT(setrlimit(RLIMIT_FSIZE, &small) == 0);
    struct sx_out_file *f = NULL;
    struct sx_error e;
    sx_error_clear(&e);
    ASSERT(sx_out_open(path, flags, &f, &e) == SX_OK);
    struct sx_buf b = {0};
    enum sx_status st = SX_OK;
    for (int k = 0; k < 5 && st == SX_OK; k++) { /* 10 MiB: more than a stage */
        if (k % 2)
            sx_out_lend(f, &b); /* its pages written from where they were made */
        for (int i = 0; i < (1 << 21); i++)
            sx_buf_putc(&b, 'x');
        st = sx_out_write_buf(f, &b, &e);
    }
    if (st == SX_OK)
        st = sx_out_commit(f, &e);
    else
        sx_out_abort(f);
    CHECK(st == SX_ERR_IO);
    CHECK(strcmp(e.source, path) == 0 && strstr(e.text, "cannot write") != NULL &&
          strstr(e.text, path) != NULL);
    ASSERT(setrlimit(RLIMIT_FSIZE, &was) == 0);
    signal(SIGXFSZ, SIG_DFL);
    size_t after_n = 0;
    char *after = slurp(path, &after_n);
    CHECK(after != NULL && after_n == before_n && memcmp(after, before, before_n) == 0);
    CHECK(entries() == 1);
    sx_buf_free(&b);
    free(after);
    free(before);
}

/* A write that fails on purpose, the nth of them for every n: the same. */
static void test_faults(const char *path) {
    size_t before_n = 0;
    char *before = slurp(path, &before_n);
    ASSERT(before != NULL);
    for (long nth = 1;; nth++) {
        struct sx_out_file *f = NULL;
        struct sx_error e;
        sx_error_clear(&e);
        ASSERT(sx_out_open(path, flags, &f, &e) == SX_OK);
        sx_fault_arm(SX_FAULT_WRITE, nth);
        struct sx_buf b = {0};
        enum sx_status st = SX_OK;
        for (int k = 0; k < 6 && st == SX_OK; k++) {
            if (k % 4 == 3)
                sx_out_lend(f, &b);
            sx_buf_append(&b, "0123456789", 10);
            st = k % 2 ? sx_out_write_buf(f, &b, &e) : sx_out_write(f, "ab", 2, &e);
        }
        if (st == SX_OK)
            st = sx_out_commit(f, &e);
        else
            sx_out_abort(f);
        bool fired = sx_fault_fired();
        sx_fault_off();
        sx_buf_free(&b);
        if (!fired) {
            CHECK(st == SX_OK && nth > 6);
            break;
        }
        CHECK(st == SX_ERR_IO && strcmp(e.source, path) == 0);
        size_t n = 0;
        char *now = slurp(path, &n);
        CHECK(now != NULL && n == before_n && memcmp(now, before, n) == 0);
        free(now);
        CHECK(entries() == 1);
    }
    free(before);
}

/*
 * While the thread writes a full stage, the caller fills the next: a direct write that
 * waits for the caller to come back from its next hand-over is released by it. (With
 * one stage the caller would wait for that write, and the write for the caller, until
 * the write's wait runs out.) The bytes are all there, in order.
 */
static void test_overlap(const char *path) {
    struct sx_out_file *f = NULL;
    struct sx_error e;
    sx_error_clear(&e);
    ASSERT(sx_out_open(path, SX_OUT_DIRECT | SX_OUT_THREAD, &f, &e) == SX_OK);
    /* a stage and a quarter, then a quarter more: the second stage does not fill */
    const size_t stage = sx_out_stage_bytes(f), n1 = stage + stage / 4, n2 = stage / 4;
    CHECK(stage >= (1u << 20));
    char *want = malloc(n1 + n2 + 1);
    ASSERT(want != NULL);
    __atomic_store_n(&released, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&held_out, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&hold, 1, __ATOMIC_SEQ_CST);
    struct sx_buf b = {0};
    for (size_t i = 0; i < n1 + n2; i++)
        want[i] = (char)('A' + i % 23);
    sx_buf_append(&b, want, n1); /* a full stage and more: the thread's write begins */
    CHECK(sx_out_write_buf(f, &b, &e) == SX_OK);
    sx_buf_append(&b, want + n1, n2);
    CHECK(sx_out_write_buf(f, &b, &e) == SX_OK); /* back while that write waits */
    __atomic_store_n(&released, 1, __ATOMIC_SEQ_CST);
    CHECK(sx_out_commit(f, &e) == SX_OK);
    __atomic_store_n(&hold, 0, __ATOMIC_SEQ_CST);
    CHECK(__atomic_load_n(&held_out, __ATOMIC_SEQ_CST) == 0);
    size_t got_n = 0;
    char *got = slurp(path, &got_n);
    CHECK(got != NULL && got_n == n1 + n2 && memcmp(got, want, n1 + n2) == 0);
    sx_buf_free(&b);
    free(got);
    free(want);
}

/* Whether the test's directory takes a direct write as the library makes one: a
 * descriptor turned O_DIRECT, an aligned block written (not interposed). */
static bool fs_takes_direct(void) {
    char probe[300];
    snprintf(probe, sizeof probe, "%s/probe", dir);
    const int fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    void *blk = NULL;
    bool ok = fd >= 0 && posix_memalign(&blk, 4096, 4096) == 0;
    if (ok) {
        memset(blk, 'p', 4096);
        const int fl = real_fcntl(fd, F_GETFL, 0);
        ok = fl >= 0 && real_fcntl(fd, F_SETFL, fl | O_DIRECT) == 0 &&
             syscall(SYS_pwrite64, fd, blk, 4096, 0) == 4096;
    }
    free(blk);
    if (fd >= 0)
        close(fd);
    unlink(probe);
    return ok;
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/test_out_file.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ASSERT(mkdtemp(dir) != NULL);
    char path[300];
    snprintf(path, sizeof path, "%s/out.json", dir);
    for (int t = 1; t >= 0; t--) {
        flags = t ? SX_OUT_THREAD : 0;
        test_order(path);
        test_thread_failure(path);
        test_faults(path);
    }
    /* Direct writes: around the page cache where the file system takes them (here, unless
     * SCOPE_EXPORT_DIRECT_WRITES=0 or it has no direct I/O), and each refusal falls back.
     */
    for (int t = 1; t >= 0; t--)
        for (refuse = 0; refuse <= 3; refuse++) {
            flags = SX_OUT_DIRECT | (t ? SX_OUT_THREAD : 0);
            direct_writes = 0;
            test_order(path);
            const bool fs_direct = fs_takes_direct();
            const char *env = getenv("SCOPE_EXPORT_DIRECT_WRITES");
            if (refuse == 1 || (env != NULL && strcmp(env, "0") == 0))
                CHECK(direct_writes == 0);
            else if (refuse != 2 && fs_direct)
                CHECK(direct_writes > 0); /* it did go around the cache */
            test_thread_failure(path);
            test_faults(path);
            test_lend_misuse(path);
            test_lent_room(path);
        }
    refuse = 0;
    if (fs_takes_direct() && getenv("SCOPE_EXPORT_DIRECT_WRITES") == NULL)
        test_overlap(path);
    /* The switch: SCOPE_EXPORT_DIRECT_WRITES=0 keeps every write in the page cache. */
    setenv("SCOPE_EXPORT_DIRECT_WRITES", "0", 1);
    flags = SX_OUT_DIRECT | SX_OUT_THREAD;
    direct_writes = 0;
    test_order(path);
    CHECK(direct_writes == 0);
    unsetenv("SCOPE_EXPORT_DIRECT_WRITES");
    unlink(path);
    rmdir(dir);
    TEST_DONE();
}
