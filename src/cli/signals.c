/* signals.c - the command's signal handling: a clean stop, a deadline for it, crash
 * reports in one line */
#include "signals.h"

#include "scope_export.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

/* Seconds a stop may take before the process ends itself (see on_signal). */
enum { STOP_GRACE_S = 10 };

static const char *volatile current_input;  /* the run being exported, for the reports */
static const char *volatile current_output; /* its output, for the stop's line */
static int report_rank;                     /* this process's rank, for the reports */
static volatile sig_atomic_t stop_reported; /* the stop's line was printed here */

void sx_cli_input(const char *path) { current_input = path; }

void sx_cli_output(const char *path) { current_output = path; }

bool sx_cli_stop_reported(void) { return stop_reported != 0; }

/* Async-signal-safe output: pieces of one line, written at once. */
struct line {
    char text[1024];
    size_t len;
};

static void line_add(struct line *l, const char *s) {
    while (s != NULL && *s != '\0' && l->len < sizeof l->text - 2)
        l->text[l->len++] = *s++;
}

static void line_int(struct line *l, int v) {
    char d[16];
    int n = 0;
    unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
    do
        d[n++] = (char)('0' + u % 10);
    while ((u /= 10) != 0 && n < (int)sizeof d);
    if (v < 0)
        line_add(l, "-");
    while (n > 0 && l->len < sizeof l->text - 2)
        l->text[l->len++] = d[--n];
}

/* "scope-export: error: FILE: ", FILE being the one HDF5 is reading, else the run. */
static void line_subject(struct line *l, const char *h5) {
    line_add(l, "scope-export: error: ");
    line_add(l, h5 != NULL ? h5 : current_input != NULL ? current_input : "scope-export");
    line_add(l, ": ");
}

/* End the line with the rank, write it (unless the stop's line was), and end the
 * process with status 1. */
static void line_exit(struct line *l) {
    line_add(l, "; no output was written [rank ");
    line_int(l, report_rank);
    line_add(l, "]");
    l->text[l->len++] = '\n';
    if (!stop_reported) {
        ssize_t w = write(STDERR_FILENO, l->text, l->len);
        (void)w;
    }
    _exit(1);
}

/*
 * SIGALRM after a stop was asked for: the export did not unwind in time,
 * which happens when the HDF5 library loops on a damaged file. The temporary
 * output is already gone (sx_request_stop); say where it was stuck and end.
 */
static void on_deadline(int sig) {
    (void)sig;
    struct line l = {.len = 0};
    const char *h5 = sx_hdf5_file_in_use();
    line_subject(&l, h5);
    line_add(&l, h5 != NULL ? "stopped by a signal, but still inside the HDF5 library "
                              "reading this file after "
                            : "stopped by a signal, but the export did not end within ");
    line_int(&l, STOP_GRACE_S);
    line_add(&l, h5 != NULL ? " s (libhdf5 can loop on a damaged file); ending now"
                            : " s; ending now");
    line_exit(&l);
}

/*
 * The first SIGTERM or SIGINT: a clean stop. When it removed the output being
 * written, that export is sure to fail, and rank 0 says so here and now: under
 * mpirun the signal is a SIGTERM that Open MPI follows with SIGKILL about 1 s
 * later, often before the export has unwound to print its error (then no line
 * at all). The export's own error is not printed again (sx_cli_stop_reported).
 */
static void on_signal(int sig) {
    (void)sig;
    int removed = sx_request_stop();
    alarm(STOP_GRACE_S); /* a stop that does not come in time ends the process */
    const char *out = current_output, *in = current_input;
    if (removed > 0 && report_rank == 0 && out != NULL && !stop_reported) {
        struct line l = {.len = 0};
        line_add(&l, "scope-export: error: ");
        line_add(&l, out);
        line_add(&l, ": export");
        if (in != NULL) {
            line_add(&l, " of ");
            line_add(&l, in);
        }
        line_add(&l, " interrupted by a signal; the output was not written (an existing "
                     "file is left as it was) [rank 0]");
        l.text[l.len++] = '\n';
        stop_reported = 1;
        ssize_t w = write(STDERR_FILENO, l.text, l.len);
        (void)w;
    }
}

/*
 * SIGSEGV, SIGBUS, SIGFPE, SIGILL: one line that says which file, and
 * whether the HDF5 library was reading it (it crashes on some damaged files)
 * or scope-export itself failed; the temporary output is removed; exit 1.
 */
static void on_crash(int sig) {
    struct line l = {.len = 0};
    const char *h5 = sx_hdf5_file_in_use();
    sx_request_stop(); /* removes the temporary output */
    line_subject(&l, h5);
    line_add(&l, h5 != NULL ? "the HDF5 library crashed (" : "scope-export crashed (");
    line_add(&l, sig == SIGSEGV  ? "SIGSEGV"
                 : sig == SIGBUS ? "SIGBUS"
                 : sig == SIGFPE ? "SIGFPE"
                                 : "SIGILL");
    line_add(&l, h5 != NULL
                     ? ") reading this file; it does so on some damaged files, so "
                       "the file is most likely damaged"
                     : ") exporting this run, a bug in scope-export: please report "
                       "it with the file");
    line_exit(&l);
}

void sx_cli_signals_install(int rank) {
    report_rank = rank;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    /* the first signal asks for a clean stop; a second one ends the process at once */
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_deadline;
    sa.sa_flags = 0;
    sigaction(SIGALRM, &sa, NULL);
    /* (in sanitizer builds too: their checks do not wait for a SIGSEGV, and the tests
     * check this report there as well) */
    sa.sa_handler = on_crash;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGFPE, &sa, NULL);
    sigaction(SIGILL, &sa, NULL);
}
