/* worker.c - a thread of the library's own beside the caller's */
#define _GNU_SOURCE /* sched_getaffinity */
#include "worker.h"

#include "mpi_util.h"

#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

bool sx_worker_start(struct sx_worker *t, void *(*fn)(void *), void *arg) {
    sigset_t all, old;
    t->quit = false;
    if (pthread_mutex_init(&t->mu, NULL) != 0)
        return false;
    if (pthread_cond_init(&t->cv, NULL) != 0) {
        pthread_mutex_destroy(&t->mu);
        return false;
    }
    /* signals stay the caller's: the thread starts with all of them blocked */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    const bool started = pthread_create(&t->th, NULL, fn, arg) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!started) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
    }
    return started;
}

void sx_worker_stop(struct sx_worker *t) {
    pthread_mutex_lock(&t->mu);
    t->quit = true;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->th, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
}

bool sx_helper_allowed(void) {
    const char *v = getenv("SCOPE_EXPORT_THREADS");
    if ((v != NULL && (strcmp(v, "0") == 0 || strcmp(v, "1") == 0)) ||
        !sx_mpi_threads_ok_here())
        return false;
    cpu_set_t set;
    CPU_ZERO(&set);
    return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 2;
}
