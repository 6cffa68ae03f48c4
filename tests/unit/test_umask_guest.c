/*
 * test_umask_guest.c - an export leaves the host's process state alone: a second thread
 * reading "Umask:" from /proc/self/status while exports and an import run never sees
 * anything but the host's 027, the library never calls umask(2) (linked with
 * --wrap=umask), and the outputs get what open(2) with 0666 would give them under it:
 * 0640. Nor does it touch the host's signal handlers: no sigaction(2) or signal(2) call
 * that sets one (--wrap=sigaction,--wrap=signal), and the host's SIGBUS handler is the
 * one installed after the exports.
 */
#include "sx_test.h"

#include "scope_export.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every umask(2) call of the program, the library's included (-Wl,--wrap=umask). */
mode_t __wrap_umask(mode_t mask);
mode_t __real_umask(mode_t mask);
static atomic_int umask_calls;
mode_t __wrap_umask(mode_t mask) {
    atomic_fetch_add(&umask_calls, 1);
    return __real_umask(mask);
}

/* Every sigaction(2) and signal(2) call of the program that sets a handler. */
int __wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
int __real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
typedef void (*handler_fn)(int);
handler_fn __wrap_signal(int sig, handler_fn fn);
handler_fn __real_signal(int sig, handler_fn fn);
static atomic_int handler_sets;
int __wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    if (act != NULL)
        atomic_fetch_add(&handler_sets, 1);
    return __real_sigaction(sig, act, old);
}
handler_fn __wrap_signal(int sig, handler_fn fn) {
    atomic_fetch_add(&handler_sets, 1);
    return __real_signal(sig, fn);
}
static void host_bus(int sig) { (void)sig; }

static atomic_int stop, reads, others;
static atomic_long other_seen;

/* The umask as /proc shows it, or -1. */
static long proc_umask(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "Umask:", 6) == 0) {
            v = strtol(line + 6, NULL, 8);
            break;
        }
    if (f != NULL)
        fclose(f);
    return v;
}

static void *poll_umask(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        const long v = proc_umask();
        atomic_fetch_add(&reads, 1);
        if (v != 027) {
            atomic_fetch_add(&others, 1);
            atomic_store(&other_seen, v);
        }
    }
    return NULL;
}

int main(void) {
    if (proc_umask() < 0) {
        printf("skipped: no Umask line in /proc/self/status\n");
        return 77;
    }
    char dir[] = "/tmp/sx_umask_XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    char out[256], json[256], h5[256];
    snprintf(out, sizeof out, "%s/p.json", dir);
    snprintf(h5, sizeof h5, "%s/i.h5", dir);
    snprintf(json, sizeof json, "%s/golden/basic_nested/run.json", SX_SHARED_DIR);
    const char *in = SX_SHARED_DIR "/golden/basic_nested/run.h5";

    umask(027);
    atomic_store(&umask_calls, 0);
    struct sigaction host, seen;
    memset(&host, 0, sizeof host);
    host.sa_handler = host_bus;
    sigemptyset(&host.sa_mask);
    ASSERT(sigaction(SIGBUS, &host, NULL) == 0);
    atomic_store(&handler_sets, 0);
    pthread_t th;
    ASSERT(pthread_create(&th, NULL, poll_umask, NULL) == 0);
    struct sx_options o;
    sx_options_init(&o);
    for (int i = 0; i < 40; i++) {
        struct sx_error e;
        enum sx_status st = sx_export(MPI_COMM_NULL, in, out, &o, &e);
        if (st != SX_OK)
            fprintf(stderr, "export: %s\n", e.text);
        CHECK(st == SX_OK);
    }
    struct sx_error e;
    enum sx_status st = sx_import(json, h5, &e);
    if (st != SX_OK)
        fprintf(stderr, "import: %s\n", e.text);
    CHECK(st == SX_OK);
    while (atomic_load(&reads) < 100) /* the poller ran during the exports too */
        sched_yield();
    atomic_store(&stop, 1);
    pthread_join(th, NULL);

    printf("%d umask reads during the exports, %d not 027\n", atomic_load(&reads),
           atomic_load(&others));
    if (atomic_load(&others) != 0)
        fprintf(stderr, "the umask was %03lo for a moment\n", atomic_load(&other_seen));
    CHECK(atomic_load(&others) == 0);
    CHECK(atomic_load(&umask_calls) == 0);
    printf("%d signal handlers set during the exports\n", atomic_load(&handler_sets));
    CHECK(atomic_load(&handler_sets) == 0);
    ASSERT(sigaction(SIGBUS, NULL, &seen) == 0);
    CHECK(!(seen.sa_flags & SA_SIGINFO) && seen.sa_handler == host_bus);
    struct stat sb;
    CHECK(stat(out, &sb) == 0 && (sb.st_mode & 0777) == 0640);
    CHECK(stat(h5, &sb) == 0 && (sb.st_mode & 0777) == 0640);
    unlink(out);
    unlink(h5);
    rmdir(dir);
    TEST_DONE();
}
