/*
 * test_file_map.c - the mapping's SIGBUS guard behaves as a guest: a read of a file cut
 * short fails with an I/O error on any thread; a SIGBUS that is not ours reaches the
 * host's handler, and ours stays for the next read; closing the last mapping puts the
 * host's handler back, and leaves alone one the host set in the meantime.
 */
#include "h5_direct_map.h"
#include "sx_test.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

static atomic_int host_calls, late_calls;

static void host_handler(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)si;
    (void)uc;
    atomic_fetch_add(&host_calls, 1);
}

static void late_handler(int sig) {
    (void)sig;
    atomic_fetch_add(&late_calls, 1);
}

static void set_handler(void (*fn)(int, siginfo_t *, void *)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}

struct reader {
    struct sx_file_map *m;
    enum sx_status st;
};

/* A read of the cut-off end of the file: it faults inside the copy. */
static void *read_end(void *arg) {
    struct reader *r = arg;
    char buf[4096];
    struct sx_error e;
    r->st = sx_file_map_read(r->m, 1 << 17, sizeof buf, buf, "f", &e);
    return NULL;
}

int main(void) {
    char path[] = "/tmp/sx_map_XXXXXX";
    int fd = mkstemp(path);
    ASSERT(fd >= 0);
    static char block[1 << 18];
    memset(block, 'x', sizeof block);
    ASSERT(write(fd, block, sizeof block) == (ssize_t)sizeof block);

    alarm(
        30); /* a fault repeating under a handler that returns: a hang, made a failure */
    set_handler(host_handler);
    struct sx_file_map *m = sx_file_map_open(fd, sizeof block, 1 << 20);
    ASSERT(m != NULL);
    char buf[16];
    struct sx_error e;
    CHECK(sx_file_map_read(m, 0, sizeof buf, buf, "f", &e) == SX_OK);

    /* a SIGBUS that is not the copy's: the host's handler gets it */
    raise(SIGBUS);
    CHECK(atomic_load(&host_calls) == 1);

    /* the file cut short: reads of the lost end fail, on this thread and another */
    ASSERT(ftruncate(fd, 4096) == 0);
    struct reader r = {m, SX_OK};
    read_end(&r);
    CHECK(r.st == SX_ERR_IO);
    r.st = SX_OK;
    pthread_t th;
    ASSERT(pthread_create(&th, NULL, read_end, &r) == 0);
    pthread_join(th, NULL);
    CHECK(r.st == SX_ERR_IO);
    CHECK(atomic_load(&host_calls) == 1);

    /* the last close puts the host's handler back */
    sx_file_map_close(m);
    struct sigaction cur;
    sigaction(SIGBUS, NULL, &cur);
    CHECK((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == host_handler);

    /* a handler the host sets while a mapping is open stays after the close */
    m = sx_file_map_open(fd, 4096, 1 << 20);
    ASSERT(m != NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = late_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    sx_file_map_close(m);
    raise(SIGBUS);
    CHECK(atomic_load(&late_calls) == 1);

    close(fd);
    unlink(path);
    TEST_DONE();
}
