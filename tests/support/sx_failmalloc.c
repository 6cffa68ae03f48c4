/* sx_failmalloc.c - test-only LD_PRELOAD library: the Nth allocation called from our
 * code fails, on one rank
 *
 * Independent of sx_malloc and its fault hook: it sees every malloc, calloc, realloc,
 * posix_memalign, strdup and strndup whose caller (the return address) lies in an object
 * whose file name contains SX_FAILMALLOC_MATCH (the scope-export command, which links the
 * library statically, or libscope_export.so), from any thread. Allocations made inside
 * other libraries (HDF5, MPI, jansson) are neither counted nor failed.
 *
 * Environment:
 *   SX_FAILMALLOC=N        fail the Nth such allocation (once); 0 or unset: count only
 *   SX_FAILMALLOC_RANK=R   the rank that counts and fails (OMPI_COMM_WORLD_RANK,
 *                          PMIX_RANK or PMI_RANK; 0 without a launcher); default 0
 *   SX_FAILMALLOC_MATCH=S  substring of the file name of our objects (required)
 *   SX_FAILMALLOC_OUT=DIR  at exit, DIR/count.R holds "calls fired" of this process
 *   SX_FAILMALLOC_TRACE=1  the failing call's stack on stderr (to find the call site)
 *
 * A test program preloaded with it may instead arm it itself (sx_failmalloc_set, found
 * with dlsym) to run many cases in one process.
 *
 * Not for sanitizer builds: AddressSanitizer replaces the allocator itself.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* glibc's own allocator, under the names it exports for interposers like this one */
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);

#define MAX_SEGS 512

struct seg {
    uintptr_t lo, hi;
    int ours;
};

static struct seg segs[MAX_SEGS];
static int nsegs;
static pthread_mutex_t seg_lock = PTHREAD_MUTEX_INITIALIZER;
static char exe_path[4096];
static char match[512];
static atomic_int armed =
    -1; /* -1: not yet read from the environment; 0: off; 1: this rank */
static atomic_long fail_at;
static atomic_long calls;
static atomic_int fired;
static char out_dir[2048];
static int my_rank;

static int seg_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : exe_path;
    const int ours = match[0] != '\0' && strstr(name, match) != NULL;
    for (int i = 0; i < info->dlpi_phnum && nsegs < MAX_SEGS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        segs[nsegs].lo = info->dlpi_addr + ph->p_vaddr;
        segs[nsegs].hi = segs[nsegs].lo + ph->p_memsz;
        segs[nsegs].ours = ours;
        nsegs++;
    }
    return 0;
}

/* 1: 'addr' is in our code, 0: elsewhere; a code address not yet known (an object
 * loaded since) re-reads the list of loaded objects once. */
static int from_our_code(uintptr_t addr) {
    int found = -1;
    pthread_mutex_lock(&seg_lock);
    for (int pass = 0; pass < 2 && found < 0; pass++) {
        if (pass == 1) {
            nsegs = 0;
            dl_iterate_phdr(seg_cb, NULL);
        }
        for (int i = 0; i < nsegs; i++)
            if (addr >= segs[i].lo && addr < segs[i].hi) {
                found = segs[i].ours;
                break;
            }
    }
    pthread_mutex_unlock(&seg_lock);
    return found > 0;
}

static void arm(void) {
    /* getenv and readlink allocate nothing */
    const char *n = getenv("SX_FAILMALLOC");
    const char *r = getenv("SX_FAILMALLOC_RANK");
    const char *m = getenv("SX_FAILMALLOC_MATCH");
    const char *o = getenv("SX_FAILMALLOC_OUT");
    const char *me = getenv("OMPI_COMM_WORLD_RANK");
    if (me == NULL)
        me = getenv("PMIX_RANK");
    if (me == NULL)
        me = getenv("PMI_RANK");
    my_rank = me ? atoi(me) : 0;
    fail_at = n ? atol(n) : 0;
    if (m == NULL || m[0] == '\0' || (r ? atoi(r) : 0) != my_rank) {
        armed = 0;
        return;
    }
    snprintf(match, sizeof match, "%s", m);
    if (o)
        snprintf(out_dir, sizeof out_dir, "%s", o);
    ssize_t k = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[k > 0 ? k : 0] = '\0';
    armed = 1;
}

__attribute__((destructor)) static void report(void) {
    if (armed != 1 || out_dir[0] == '\0')
        return;
    char path[2200], text[64];
    snprintf(path, sizeof path, "%s/count.%d", out_dir, my_rank);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return;
    int len =
        snprintf(text, sizeof text, "%ld %d\n", atomic_load(&calls), atomic_load(&fired));
    if (write(fd, text, (size_t)len) != len)
        (void)0;
    close(fd);
}

/* true: this allocation, made from 'caller', is the one to fail */
static int should_fail(void *caller) {
    if (armed < 0)
        arm();
    if (armed != 1 || !from_our_code((uintptr_t)caller))
        return 0;
    const long k = atomic_fetch_add(&calls, 1) + 1;
    if (fail_at > 0 && k == fail_at) {
        atomic_store(&fired, 1);
        if (getenv("SX_FAILMALLOC_TRACE") != NULL) {
            void *frames[32];
            backtrace_symbols_fd(frames, backtrace(frames, 32), STDERR_FILENO);
        }
        return 1;
    }
    return 0;
}

/* The control of a test program (found with dlsym, so declared here alone): from now on
 * the 'nth' allocation from our code fails (0: none), counted afresh, on this process. */
void sx_failmalloc_set(long nth);
long sx_failmalloc_calls(void);
int sx_failmalloc_fired(void);

void sx_failmalloc_set(long nth) {
    if (armed < 0)
        arm();
    const char *m = getenv("SX_FAILMALLOC_MATCH");
    snprintf(match, sizeof match, "%s", m ? m : "");
    if (exe_path[0] == '\0') {
        ssize_t k = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
        exe_path[k > 0 ? k : 0] = '\0';
    }
    pthread_mutex_lock(&seg_lock);
    nsegs = 0; /* the objects' ownership is decided again with this 'match' */
    pthread_mutex_unlock(&seg_lock);
    atomic_store(&fired, 0);
    atomic_store(&calls, 0);
    fail_at = nth;
    armed = match[0] != '\0';
}

/* Allocations from our code since the last sx_failmalloc_set. */
long sx_failmalloc_calls(void) { return atomic_load(&calls); }

/* 1: the armed allocation failed. */
int sx_failmalloc_fired(void) { return atomic_load(&fired); }

void *malloc(size_t n) {
    if (should_fail(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size) {
    if (should_fail(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n) {
    if (should_fail(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n);
}

int posix_memalign(void **out, size_t align, size_t n) {
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    if (should_fail(__builtin_return_address(0)))
        return ENOMEM;
    void *p = __libc_memalign(align, n);
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

static char *dup_n(const char *s, size_t n) {
    char *d = __libc_malloc(n + 1);
    if (d == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *strdup(const char *s) {
    if (should_fail(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return dup_n(s, strlen(s));
}

char *strndup(const char *s, size_t n) {
    if (should_fail(__builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return dup_n(s, strnlen(s, n));
}
