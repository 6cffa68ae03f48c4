/* worker.c - a thread of the library's own beside the caller's */
#include "worker.h"

#include <signal.h>

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
