/* out_file.c - output under a temporary name, renamed into place only when complete */
#define _GNU_SOURCE /* realpath, O_TMPFILE, linkat */
#include "out_file.h"

#include "fault.h"
#include "mpi_util.h"
#include "stop.h"
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The output is written by a thread of its own while the caller formats the
 * next bytes: sx_out_write_buf hands it a buffer and takes back the one it
 * wrote before. With direct writes there are two stages of half the room,
 * page-aligned buffers (lb): the caller fills one and hands the thread its
 * whole pages, filling the other while the thread writes (a direct write of
 * 8 MiB took ~7-10 ms here, and held up the next buffer when the thread copied
 * into one stage and wrote it itself). Only the caller's thread asks the fault
 * hook; a write that fails in the thread is the caller's error at its next
 * write or commit.
 */
struct sx_out_file {
    int fd;
    char *path; /* final name */
    char *tmp;  /* temporary name beside it; NULL while the file has no name */
    bool threaded;
    bool counted;        /* unnamed, and counted in 'unnamed_live' */
    struct sx_worker wt; /* the writer */
    struct sx_buf busy;  /* the thread's: bytes to write while 'pending' */
    char *full;          /* or, while 'pending', whole pages to write: 'full_len' bytes */
    size_t full_len;
    bool pending;
    int werr; /* errno of the thread's first failed write, or 0 */
    /* direct writes (SX_OUT_DIRECT; see flush_buf) */
    char *stage; /* without the thread: DIO_STAGE bytes, page-aligned; NULL: buffered */
    size_t stage_len;
    size_t staged; /* bytes in 'stage' not yet written */
    off_t at;      /* bytes of text written before them */
    bool dio;      /* the descriptor is O_DIRECT */
    bool dio_off;  /* refused or done with: buffered from now on */
    bool cut;      /* a padded write went past the text: cut the file at 'at' */
    /* with the thread ('two'), the two stages: lb[cur] the caller's, holding the bytes
     * not yet written, lb[cur ^ 1] the thread's while it writes; either may be lent */
    bool two;
    struct sx_buf lb[2];
    int cur;
    bool lent;            /* lb[cur] is with the caller, who gave 'parked' */
    struct sx_buf parked; /* the caller's own buffer while it has lb[cur] */
};

/*
 * Direct writes, the one place the output goes around the page cache. A
 * large document written through the cache costs a copy of every byte into
 * freshly allocated cache pages (on a virtual machine, pages the host must
 * hand back first: the most of a one-process export's time), and leaves the
 * whole text dirty in the node's memory, where the job beside us wants it.
 * So an output opened with SX_OUT_DIRECT gathers its bytes in an aligned
 * stage; the first time the stage fills, the descriptor turns O_DIRECT and
 * each full stage is written around the cache; the tail is written padded to
 * the alignment and the file cut to its length. An output smaller than a
 * stage never turns: it is written once, through the cache, as before.
 *
 * The fall-back is the page cache, never an error: no stage to be had, a file
 * system that refuses O_DIRECT or the alignment (EINVAL), a short write; the
 * descriptor turns back and the same bytes are written buffered. The
 * environment variable SCOPE_EXPORT_DIRECT_WRITES=0, read at each open, keeps
 * every write buffered.
 */
enum { DIO_ALIGN = 4096 };
#define DIO_STAGE ((size_t)8 << 20)
/* the stages' rooms kept, in stages: see lb_hand */
enum { LENT_KEEP = 2 };

static bool direct_writes_wanted(void) {
    return sx_switch_on("SCOPE_EXPORT_DIRECT_WRITES");
}

/* All of p[0..n) to 'fd' at 'at': 0, or the errno of the failed write. */
static int pwrite_all(int fd, const char *p, size_t n, off_t at) {
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n > (1u << 30) ? (1u << 30) : n, at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return errno;
        if (w == 0)
            return EIO;
        p += w;
        at += w;
        n -= (size_t)w;
    }
    return 0;
}

static void dio_stop(struct sx_out_file *f) {
    const int fl = fcntl(f->fd, F_GETFL);
    if (f->dio && fl >= 0)
        fcntl(f->fd, F_SETFL, fl & ~O_DIRECT);
    f->dio = false;
    f->dio_off = true;
}

/* Stage 'buf' (n bytes) to the file (the last of the text with 'last'): 0, or an
 * errno. The file's state (at, dio, cut) is the writer's: the thread's while
 * it holds a full stage. */
static int flush_buf(struct sx_out_file *f, char *buf, size_t n, bool last) {
    size_t done = 0;
    if (n == 0)
        return 0;
    if (!last && !f->dio && !f->dio_off) {
        const int fl = fcntl(f->fd, F_GETFL);
        if (fl >= 0 && fcntl(f->fd, F_SETFL, fl | O_DIRECT) == 0)
            f->dio = true;
        else
            f->dio_off = true;
    }
    if (f->dio) {
        const size_t padded = (n + DIO_ALIGN - 1) & ~(size_t)(DIO_ALIGN - 1);
        ssize_t w;
        memset(buf + n, 0, padded - n);
        do
            w = pwrite(f->fd, buf, padded, f->at);
        while (w < 0 && errno == EINTR);
        if (w > 0 && (size_t)w > n)
            f->cut = true; /* padding went in */
        if (w == (ssize_t)padded) {
            f->at += (off_t)n;
            return 0;
        }
        if (w < 0 && errno != EINVAL)
            return errno;
        done = w > 0 ? ((size_t)w < n ? (size_t)w : n) : 0;
        dio_stop(f); /* refused, or short: the rest through the cache */
    }
    const int e = pwrite_all(f->fd, buf + done, n - done, f->at + (off_t)done);
    if (e == 0)
        f->at += (off_t)n;
    return e;
}

/* The staged bytes to the file: 0, or an errno. */
static int stage_flush(struct sx_out_file *f, bool last) {
    const size_t n = f->staged;
    f->staged = 0;
    return flush_buf(f, f->stage, n, last);
}

static int writer_idle(struct sx_out_file *f);

/* Whether the output has the two stages, lb: set only with the thread, which stops
 * before the last flush. */
static bool two_stages(const struct sx_out_file *f) { return f->two; }

/* The whole pages of the caller's stage handed to the thread, which writes them while
 * the caller fills the other, the tail (less than a page) first in it: 0, or the
 * thread's errno of an earlier stage. */
static int lb_hand(struct sx_out_file *f) {
    const int e = writer_idle(f); /* the thread is done with the other */
    if (e != 0)
        return e;
    struct sx_buf *l = &f->lb[f->cur], *o = &f->lb[f->cur ^ 1];
    /* a stage grown for a block lent to the caller, written now, keeps LENT_KEEP stages
     * of room (half a stage before a block of up to a stage and a half), no more, so
     * that a larger block does not keep its size in both. Trimmed back to one stage, it
     * regrew with fresh pages for most blocks: a 4 MiB block lent after 0.5-2 MiB needs
     * more than a stage, and the 6M-event export (60 blocks) grew and trimmed 4 MiB 60
     * times, a fifth of its caller's time faulting pages in */
    sx_buf_align_trim(o, LENT_KEEP * f->stage_len + DIO_ALIGN);
    const size_t pages = l->len & ~(size_t)(DIO_ALIGN - 1);
    o->len = l->len - pages; /* its room is a stage at least */
    memcpy(o->data, l->data + pages, o->len + 1);
    pthread_mutex_lock(&f->wt.mu);
    f->full = l->data;
    f->full_len = pages;
    f->pending = true;
    pthread_cond_broadcast(&f->wt.cv);
    pthread_mutex_unlock(&f->wt.mu);
    l->len = 0;
    f->cur ^= 1;
    return 0;
}

/* p[0..n) to the output through the two stages: 0, or an errno. */
static int lb_put(struct sx_out_file *f, const char *p, size_t n) {
    while (n > 0) {
        struct sx_buf *l = &f->lb[f->cur];
        const size_t room = l->len < f->stage_len ? f->stage_len - l->len : 0;
        const size_t k = n < room ? n : room;
        memcpy(l->data + l->len, p, k);
        l->len += k;
        l->data[l->len] = '\0';
        p += k;
        n -= k;
        if (l->len >= f->stage_len) {
            const int e = lb_hand(f);
            if (e != 0)
                return e;
        }
    }
    return 0;
}

/* p[0..n) to the output through the one stage, written by the caller as it fills: 0,
 * or an errno. */
static int stage_put(struct sx_out_file *f, const char *p, size_t n) {
    while (n > 0) {
        const size_t k = n < f->stage_len - f->staged ? n : f->stage_len - f->staged;
        memcpy(f->stage + f->staged, p, k);
        f->staged += k;
        p += k;
        n -= k;
        if (f->staged == f->stage_len) {
            const int e = stage_flush(f, false);
            if (e != 0)
                return e;
        }
    }
    return 0;
}

/* The last staged bytes written and the file cut to its text: 0, or an errno. */
static int stage_end(struct sx_out_file *f) {
    if (f->stage == NULL && !f->two)
        return 0;
    const struct sx_buf *l = &f->lb[f->cur];
    int e = !f->two   ? stage_flush(f, true)
            : f->lent ? EINVAL /* a lent buffer not given back: the text is not whole */
                      : flush_buf(f, l->data, l->len, true);
    if (e == 0 && f->cut && ftruncate(f->fd, f->at) != 0)
        e = errno;
    dio_stop(f);
    return e;
}

/* Bytes to the output: staged, or written as they come. 0, or an errno. */
static int out_put(struct sx_out_file *f, const char *p, size_t n);

/*
 * Every temporary file this process is writing, or knows another rank to be
 * writing, for sx_tmp_remove_all(): a signal may be followed by SIGKILL
 * before the export unwinds, so the handler removes the files itself
 * (unlink is async-signal-safe). A slot is filled before it is marked set.
 */
enum { MAX_TMP = 16 };
static struct {
    char path[SX_TMP_NAME];
    volatile sig_atomic_t set;
} pending[MAX_TMP];

void sx_tmp_track(const char *tmp) {
    for (int i = 0; tmp != NULL && tmp[0] != '\0' && i < MAX_TMP; i++)
        if (!pending[i].set && strlen(tmp) < sizeof pending[i].path) {
            memcpy(pending[i].path, tmp, strlen(tmp) + 1);
            pending[i].set = 1;
            return;
        }
}

enum sx_status sx_tmp_share(MPI_Comm comm, int rank, char tmp[SX_TMP_NAME],
                            struct sx_error *err) {
    enum sx_status st =
        sx_mpi_check(MPI_Bcast(tmp, SX_TMP_NAME, MPI_CHAR, 0, comm), "MPI_Bcast", err);
    if (st == SX_OK && rank != 0)
        sx_tmp_track(tmp);
    return st;
}

void sx_tmp_forget(const char *tmp) {
    for (int i = 0; tmp != NULL && i < MAX_TMP; i++)
        if (pending[i].set && strcmp(pending[i].path, tmp) == 0) {
            pending[i].set = 0;
            return;
        }
}

/*
 * Unnamed outputs (O_TMPFILE) being written: nothing to remove, but a stop
 * that finds one must say so, as for a named one, and the commit must then
 * see the stop (sx_out_commit keeps it counted until its name is tracked).
 */
static volatile sig_atomic_t unnamed_live;

static void unnamed_count(struct sx_out_file *f, bool on) {
    if (f->counted == on)
        return;
    f->counted = on;
    unnamed_live = unnamed_live + (on ? 1 : -1);
}

int sx_tmp_remove_all(void) {
    int n = unnamed_live;
    for (int i = 0; i < MAX_TMP; i++)
        if (pending[i].set) {
            unlink(pending[i].path);
            n++;
        }
    return n;
}

/* The public stop lives here, beside the commit it races with: the flag, then the
 * temporary files. */
int sx_request_stop(void) {
    sx_stop_set();
    /* the flag before the look at the temporary files, as sx_tmp_commit() has it
     * the other way round: one of the two sees the other's write */
    atomic_thread_fence(memory_order_seq_cst);
    return sx_tmp_remove_all(); /* in case SIGKILL follows before the export unwinds */
}

int sx_tmp_commit(const char *tmp, const char *path) {
    /* Untracked first, then the look at the stop flag (sx_request_stop() does the
     * reverse): a stop whose handler saw 'tmp' pending, and said the output will not
     * be written, is seen here, and the rename does not happen. */
    sx_tmp_forget(tmp);
    atomic_thread_fence(memory_order_seq_cst);
    if (sx_stop_requested()) {
        errno = EINTR;
        return -1;
    }
    return rename(tmp, path);
}

/*
 * The process's umask, or -1 when unknown. umask(2) cannot read it without setting it,
 * and setting then restoring it changes every thread's umask for a moment: a host
 * process's threads may create files then. Linux shows it in /proc/self/status (since
 * 4.7); read with no allocation.
 */
static int read_umask(void) {
    char buf[4096];
    const int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    const ssize_t n = read(fd, buf, sizeof buf - 1); /* "Umask:" is its second line */
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = strstr(buf, "\nUmask:");
    if (p == NULL)
        return -1;
    char *end = NULL;
    const long v = strtol(p + 7, &end, 8);
    return end == p + 7 || v < 0 || v > 0777 ? -1 : (int)v;
}

enum sx_status sx_tmp_create(const char *path, char **tmp, int *fd,
                             struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t n = strlen(path) + 32;
    char *t = NULL;
    int d = -1;
    SX_CHECK(n <= SX_TMP_NAME, SX_ERR_IO, err, path,
             "cannot create %s: the name is too long", path);
    t = sx_malloc(n);
    SX_CHECK(t != NULL, SX_ERR_NOMEM, err, path, "%s: out of memory", path);
    /* same directory, so the final rename is atomic */
    const char *base = strrchr(path, '/');
    if (base == NULL)
        snprintf(t, n, ".%s.XXXXXX", path);
    else
        snprintf(t, n, "%.*s/.%s.XXXXXX", (int)(base - path), path, base + 1);
    d = mkstemp(t);
    SX_CHECK(d >= 0, SX_ERR_IO, err, path, "cannot create %s: %s", path, strerror(errno));
    sx_tmp_track(t);
    /* mkstemp makes 0600; give the file what open(2) with 0666 would under the umask
     * (when it cannot be read, the file stays 0600) */
    const int um = read_umask();
    if (um >= 0 && fchmod(d, 0666 & ~(mode_t)um) != 0) {
        /* not fatal: the data is what matters */
    }
out:
    if (st != SX_OK) {
        free(t);
        t = NULL;
    } else if (fd == NULL) {
        close(d);
    } else {
        *fd = d;
    }
    *tmp = t;
    return st;
}

/* All of p[0..n) to 'fd': 0, or the errno of the failed write. */
static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return errno;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int out_put(struct sx_out_file *f, const char *p, size_t n) {
    return f->two             ? lb_put(f, p, n)
           : f->stage != NULL ? stage_put(f, p, n)
                              : write_all(f->fd, p, n);
}

/* A written buffer larger than IDLE_KEEP goes back to the heap: the thread is idle
 * most of the time, and a block of a whole rank (Perfetto's, 13 MB at 10M events) is
 * not held for the next write, which brings its own. Smaller ones are kept, their
 * pages touched, for the buffer the caller takes back. */
enum { IDLE_KEEP = 8 << 20 };

static void *writer(void *arg) {
    struct sx_out_file *f = arg;
    pthread_mutex_lock(&f->wt.mu);
    for (;;) {
        while (!f->pending && !f->wt.quit)
            pthread_cond_wait(&f->wt.cv, &f->wt.mu);
        if (!f->pending)
            break;
        char *full = f->full;
        pthread_mutex_unlock(&f->wt.mu);
        int e = full != NULL ? (f->werr == 0 ? flush_buf(f, full, f->full_len, false) : 0)
                             : out_put(f, f->busy.data, f->busy.len);
        pthread_mutex_lock(&f->wt.mu);
        if (e != 0 && f->werr == 0)
            f->werr = e;
        f->full = NULL;
        f->busy.len = 0;
        if (f->busy.cap > IDLE_KEEP)
            sx_buf_free(&f->busy);
        f->pending = false;
        pthread_cond_broadcast(&f->wt.cv);
    }
    pthread_mutex_unlock(&f->wt.mu);
    return NULL;
}

/* Start the writer; without it (no thread to be had) the caller writes. */
static void writer_start(struct sx_out_file *f) {
    f->threaded = sx_worker_start(&f->wt, writer, f);
}

/* Wait for the thread to have written all it was given: 0, or its first errno. */
static int writer_idle(struct sx_out_file *f) {
    if (!f->threaded)
        return 0;
    pthread_mutex_lock(&f->wt.mu);
    while (f->pending)
        pthread_cond_wait(&f->wt.cv, &f->wt.mu);
    int e = f->werr;
    pthread_mutex_unlock(&f->wt.mu);
    return e;
}

static void writer_stop(struct sx_out_file *f) {
    if (!f->threaded)
        return;
    sx_worker_stop(&f->wt);
    sx_buf_free(&f->busy);
    f->threaded = false;
}

/* Whether a write, close or rename fails on purpose (fault tests), as EIO. */
static bool faulty(void) {
    if (!sx_fault(SX_FAULT_WRITE, 0))
        return false;
    errno = EIO;
    return true;
}

/* mkdir -p of the directory part of 'path'. */
static enum sx_status make_parents(const char *path, struct sx_error *err) {
    enum sx_status st = SX_OK;
    char *dir = sx_strdup(path);
    SX_CHECK(dir != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    char *slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir)
        goto out;
    *slash = '\0';
    for (char *p = dir + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
                st = sx_error_set(err, SX_ERR_IO, dir, "cannot create directory %s: %s",
                                  dir, strerror(errno));
                goto out;
            }
            struct stat sb;
            if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
                st = sx_error_set(err, SX_ERR_IO, dir, "cannot create directory %s: %s",
                                  dir, "a file of that name is in the way");
                goto out;
            }
            *p = c;
            if (c == '\0')
                break;
        }
    }
out:
    free(dir);
    return st;
}

enum sx_status sx_out_target(const char *path, char **final, struct stat *old,
                             struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct stat sb;
    char *resolved = NULL;
    *final = NULL;
    old->st_mode = 0;
    SX_CHECK(path != NULL && path[0] != '\0', SX_ERR_USAGE, err, "",
             "no output path given");
    SX_CHECK(!(stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)), SX_ERR_IO, err, path,
             "cannot write %s: it is a directory", path);
    /* A link is followed, so that its target is written, as a shell's > does. */
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
        resolved = realpath(path, NULL);
        SX_CHECK(
            resolved != NULL, SX_ERR_IO, err, path,
            "cannot write %s: it is a symbolic link whose target cannot be resolved (%s)",
            path, strerror(errno));
        path = resolved;
    }
    if (stat(path, &sb) == 0) {
        /* A device, FIFO or socket would be replaced by the rename: refuse it. */
        SX_CHECK(S_ISREG(sb.st_mode), SX_ERR_IO, err, path,
                 "cannot write %s: it exists and is not a regular file (a device, FIFO "
                 "or socket); remove it or choose another name",
                 path);
        /* Refused where a shell's > would fail; root, whom no mode bit stops, is
         * refused a file that nobody may write (0444): that is what it says. */
        SX_CHECK(faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0, SX_ERR_IO, err, path,
                 "cannot write %s: %s", path, strerror(errno));
        SX_CHECK((sb.st_mode & 0222) != 0, SX_ERR_IO, err, path,
                 "cannot write %s: it is read-only (mode %04o); make it writable or "
                 "remove it first",
                 path, (unsigned)(sb.st_mode & 07777));
        *old = sb;
    }
    if (resolved == NULL) {
        resolved = sx_strdup(path);
        SX_CHECK(resolved != NULL, SX_ERR_NOMEM, err, path, "%s: out of memory", path);
    }
out:
    if (st != SX_OK) {
        free(resolved);
        resolved = NULL;
    }
    *final = resolved;
    return st;
}

void sx_out_adopt(int fd, const struct stat *old) {
    if (fd < 0 || old->st_mode == 0)
        return;
    /* Owner first: a chown may clear the set-id bits that the chmod then restores.
     * Only root may give a file away: elsewhere the new file stays ours. */
    if (fchown(fd, old->st_uid, old->st_gid) != 0 &&
        fchown(fd, (uid_t)-1, old->st_gid) != 0) {
        /* not fatal, as a shell's > keeps no owner either when it cannot */
    }
    if (fchmod(fd, old->st_mode & 07777) != 0) {
        /* not fatal: the data is what matters */
    }
}

/*
 * An unnamed file in the directory of 'path' (O_TMPFILE): whatever ends the
 * process, even SIGKILL, nothing is left. It is linked under a name at the
 * commit through /proc/self/fd. -1 where the file system or the kernel has
 * no such files, or /proc is not mounted: the caller names the file.
 */
static int unnamed_create(const char *path) {
#ifdef O_TMPFILE
    if (access("/proc/self/fd", X_OK) != 0)
        return -1;
    const char *slash = strrchr(path, '/');
    char *dir = slash == NULL   ? sx_strdup(".")
                : slash == path ? sx_strdup("/")
                                : sx_strndup(path, (size_t)(slash - path));
    if (dir == NULL)
        return -1;
    /* 0666 under the umask, as open(2) makes a new file */
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
    free(dir);
    return fd;
#else
    (void)path;
    return -1;
#endif
}

/* Give the unnamed file a temporary name beside its final one (tracked). */
static enum sx_status unnamed_link(struct sx_out_file *f, struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t n = strlen(f->path) + 32;
    char proc[64];
    char *t = sx_malloc(n);
    SX_CHECK(t != NULL, SX_ERR_NOMEM, err, f->path, "%s: out of memory", f->path);
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", f->fd);
    const char *base = strrchr(f->path, '/');
    for (unsigned k = 0;; k++) {
        unsigned long r = ((unsigned long)getpid() * 2654435761u) ^
                          ((unsigned long)(uintptr_t)f >> 4) ^ (k * 40503u);
        if (base == NULL)
            snprintf(t, n, ".%s.%06lx", f->path, r & 0xffffff);
        else
            snprintf(t, n, "%.*s/.%s.%06lx", (int)(base - f->path), f->path, base + 1,
                     r & 0xffffff);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, t, AT_SYMLINK_FOLLOW) == 0)
            break;
        SX_CHECK(errno == EEXIST && k < 100, SX_ERR_IO, err, f->path,
                 "cannot write %s: %s", f->path, strerror(errno));
    }
    sx_tmp_track(t);
    f->tmp = t;
    t = NULL;
out:
    free(t);
    return st;
}

enum sx_status sx_out_open(const char *path, unsigned flags, struct sx_out_file **out,
                           struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_out_file *f = NULL;
    struct stat old;
    char *resolved = NULL;
    *out = NULL;
    st = sx_out_target(path, &resolved, &old, err);
    if (st != SX_OK)
        goto out;
    path = resolved;
    st = make_parents(path, err);
    if (st != SX_OK)
        goto out;
    f = sx_calloc(1, sizeof *f);
    SX_CHECK(f != NULL, SX_ERR_NOMEM, err, path, "%s: out of memory", path);
    f->fd = -1;
    f->path = resolved;
    resolved = NULL;
    f->fd = unnamed_create(f->path);
    if (f->fd >= 0)
        unnamed_count(f, true);
    else
        st = sx_tmp_create(f->path, &f->tmp, &f->fd, err);
    if (st == SX_OK)
        sx_out_adopt(f->fd, &old);
    if (st == SX_OK && (flags & SX_OUT_THREAD))
        writer_start(f);
    /* the stages' pages in large frames where the kernel has them (sx_pages_alloc): 2048
     * faults of 4 KiB at the first fill of every large output. None: buffered writes. */
    if (st == SX_OK && (flags & SX_OUT_DIRECT) && direct_writes_wanted() && f->threaded) {
        f->stage_len = DIO_STAGE / 2;
        f->two = sx_buf_align(&f->lb[0], f->stage_len) &&
                 sx_buf_align(&f->lb[1], f->stage_len);
        if (!f->two) {
            sx_buf_free(&f->lb[0]);
            sx_buf_free(&f->lb[1]);
        }
    } else if (st == SX_OK && (flags & SX_OUT_DIRECT) && direct_writes_wanted()) {
        f->stage = sx_pages_alloc(DIO_STAGE);
        f->stage_len = DIO_STAGE;
    }
out:
    free(resolved);
    if (st != SX_OK) {
        sx_out_abort(f);
        f = NULL;
    }
    *out = f;
    return st;
}

static enum sx_status write_failed(const struct sx_out_file *f, int e,
                                   struct sx_error *err) {
    return sx_error_set(err, SX_ERR_IO, f->path, "cannot write %s: %s", f->path,
                        strerror(e));
}

/* The thread's first errno, or 0, without waiting for it: with two stages it only
 * ever holds a full stage, and the caller's bytes go to the other. */
static int writer_err(struct sx_out_file *f) {
    pthread_mutex_lock(&f->wt.mu);
    const int e = f->werr;
    pthread_mutex_unlock(&f->wt.mu);
    return e;
}

enum sx_status sx_out_write(struct sx_out_file *f, const void *p, size_t n,
                            struct sx_error *err) {
    /* in order: after what the thread holds, unless that is a stage */
    int e = two_stages(f) ? writer_err(f) : writer_idle(f);
    if (e == 0 && faulty())
        e = EIO;
    if (e == 0 && f->lent) /* bytes between a lend and its give-back: out of order */
        e = EINVAL;
    if (e == 0)
        e = out_put(f, p, n);
    return e != 0 ? write_failed(f, e, err) : SX_OK;
}

/*
 * Lending. A block formatted in a buffer of its own was copied into a stage, a
 * tenth of a one-process export's time: here the caller formats straight into
 * the stage whose whole pages the thread writes. lb[cur] holds the bytes not
 * yet written; the caller's text goes after them ('front'); given back, once
 * they reach a stage its whole pages go to the thread as they are, and the tail
 * (less than a page) starts the other stage. Without the two stages nothing is
 * lent, and the caller's own buffer is written as before.
 */
bool sx_out_lend(struct sx_out_file *f, struct sx_buf *b) {
    if (!f->two || f->lent)
        return false;
    /* half a stage and more waiting: written first, so that a buffer holds at most half
     * a stage and a block (two of them held a stage and a block each: 8 MiB more at
     * rank 0 than the stage and the block they replace) */
    if (f->lb[f->cur].len >= f->stage_len / 2 && lb_hand(f) != 0)
        return false; /* the thread's error: the caller's write reports it */
    struct sx_buf *l = &f->lb[f->cur];
    f->parked = *b;
    *b = *l;
    b->data += l->len;
    b->front = l->len;
    b->cap -= l->len;
    sx_buf_reset(b);
    *l = (struct sx_buf){0};
    f->lent = true;
    return true;
}

/* The lent buffer 'b' back, its text after the unwritten bytes: 0, or an errno. */
static int give_back(struct sx_out_file *f, struct sx_buf *b) {
    struct sx_buf *l = &f->lb[f->cur];
    *l = *b;
    l->data -= b->front;
    l->len += b->front;
    l->cap += b->front;
    l->front = 0;
    *b = f->parked;
    f->parked = (struct sx_buf){0};
    f->lent = false;
    sx_buf_reset(b);
    if (l->failed) { /* grown out of memory: its bytes are not whole (the caller's
                        error); the stage stays a stage */
        l->failed = false;
        return ENOMEM;
    }
    return l->len >= f->stage_len ? lb_hand(f) : 0;
}

enum sx_status sx_out_write_buf(struct sx_out_file *f, struct sx_buf *b,
                                struct sx_error *err) {
    if (two_stages(f)) {
        int e = writer_err(f);
        if (e == 0 && faulty())
            e = EIO;
        if (f->lent) {
            const int g = give_back(f, b);
            return e != 0 || g != 0 ? write_failed(f, e != 0 ? e : g, err) : SX_OK;
        }
        if (e == 0)
            e = lb_put(f, b->data, b->len);
        if (b->cap > IDLE_KEEP) /* as the thread does with one it wrote */
            sx_buf_free(b);
        sx_buf_reset(b);
        return e != 0 ? write_failed(f, e, err) : SX_OK;
    }
    if (!f->threaded) {
        enum sx_status st = sx_out_write(f, b->data, b->len, err);
        sx_buf_reset(b);
        return st;
    }
    int e = writer_idle(f);
    if (e == 0 && faulty())
        e = EIO;
    if (e != 0)
        return write_failed(f, e, err);
    pthread_mutex_lock(&f->wt.mu);
    struct sx_buf done = f->busy;
    f->busy = *b;
    f->pending = f->busy.len > 0;
    pthread_cond_broadcast(&f->wt.cv);
    pthread_mutex_unlock(&f->wt.mu);
    *b = done;
    sx_buf_reset(b);
    return SX_OK;
}

enum sx_status sx_out_commit(struct sx_out_file *f, struct sx_error *err) {
    enum sx_status st = SX_OK;
    int e = writer_idle(f);
    writer_stop(f);
    if (e == 0)
        e = stage_end(f);
    SX_CHECK(e == 0, SX_ERR_IO, err, f->path, "cannot write %s: %s", f->path,
             strerror(e));
    if (f->tmp == NULL && (st = unnamed_link(f, err)) != SX_OK)
        goto out;
    unnamed_count(f, false); /* its name is tracked now, until sx_tmp_commit */
    int fd = f->fd;
    f->fd = -1;
    /* a failed close is a failed write (NFS, quotas) */
    SX_CHECK(close(fd) == 0 && !faulty(), SX_ERR_IO, err, f->path, "cannot write %s: %s",
             f->path, strerror(errno));
    SX_CHECK(!faulty(), SX_ERR_IO, err, f->path,
             "cannot rename the finished output to %s: %s", f->path, strerror(errno));
    if (sx_tmp_commit(f->tmp, f->path) != 0) {
        st = errno == EINTR
                 ? sx_error_set(err, SX_ERR_INTERRUPTED, f->path,
                                "%s: export interrupted by a signal; no output "
                                "was written",
                                f->path)
                 : sx_error_set(err, SX_ERR_IO, f->path,
                                "cannot rename the finished output to %s: %s", f->path,
                                strerror(errno));
        goto out;
    }
    free(f->tmp);
    f->tmp = NULL;
out:
    sx_out_abort(f);
    return st;
}

const char *sx_out_tmp_path(const struct sx_out_file *f) { return f->tmp ? f->tmp : ""; }

int sx_out_fd(const struct sx_out_file *f) { return f->fd; }

size_t sx_out_stage_bytes(const struct sx_out_file *f) {
    return two_stages(f) ? f->stage_len : 0;
}

bool sx_out_is_gz(const char *path) {
    size_t n = path != NULL ? strlen(path) : 0;
    return n >= 3 && path[n - 3] == '.' && (path[n - 2] | 0x20) == 'g' &&
           (path[n - 1] | 0x20) == 'z';
}

void sx_out_abort(struct sx_out_file *f) {
    if (f == NULL)
        return;
    writer_stop(f);
    unnamed_count(f, false);
    if (f->fd >= 0)
        close(f->fd);
    sx_pages_free(f->stage, DIO_STAGE);
    sx_buf_free(&f->lb[0]);
    sx_buf_free(&f->lb[1]);
    sx_buf_free(&f->parked);
    if (f->tmp != NULL) {
        unlink(f->tmp);
        sx_tmp_forget(f->tmp);
    }
    free(f->tmp);
    free(f->path);
    free(f);
}
