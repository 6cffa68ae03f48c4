/* worker.h - a thread of the library's own beside the caller's, started and stopped in
 * one place */
#ifndef SX_WORKER_H
#define SX_WORKER_H

#include <pthread.h>
#include <stdbool.h>

/*
 * A thread the library runs beside its caller's: the output's writer, the direct
 * reader's helper. Its owner signals it through 'cv' under 'mu'; 'quit' asks it to
 * return. It makes no MPI call, and changes nothing of its host process: it starts with
 * every signal blocked (signals stay the caller's threads'), and is joined before the
 * call that started it returns.
 */
struct sx_worker {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool quit;
};

/* Start 'fn(arg)' in 't'; false: no thread to be had (nothing is left to stop). */
bool sx_worker_start(struct sx_worker *t, void *(*fn)(void *), void *arg);
/* Ask the thread to quit (it sees 'quit' under 'mu' after a broadcast) and join it. */
void sx_worker_stop(struct sx_worker *t);

/*
 * Whether this process may run a helper thread beside the caller (the direct reader's
 * decoder, the JSON profile's read-ahead): only when it may run on more than one CPU
 * (its affinity: an MPI rank bound to a core has one), may run a thread at all (MPI's
 * thread level, as the output's writer thread), and SCOPE_EXPORT_THREADS is not 0 or 1.
 */
bool sx_helper_allowed(void);

#endif /* SX_WORKER_H */
