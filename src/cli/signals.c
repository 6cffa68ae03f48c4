/* signals.c - the command's signal handling: a clean stop, a deadline for it, crash
 * reports in one line */
#include "signals.h"

#include "cli_support.h"
#include "scope_export.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Seconds a stop may take before the process ends itself (see on_signal). */
enum { STOP_GRACE_S = 10 };

static const char *volatile current_input;  /* the run being exported, for the reports */
static const char *volatile current_output; /* its output, for the stop's line */
static int report_rank;                     /* this process's rank, for the reports */
static volatile sig_atomic_t stop_reported; /* the stop's line was printed here */
static char crash_mark[64]; /* sx_cli_crash_once: the ranks' marker file, or "" */

void sx_cli_input(const char *path) { current_input = path; }

void sx_cli_output(const char *path) { current_output = path; }

bool sx_cli_stop_reported(void) { return stop_reported != 0; }

/* Async-signal-safe output: pieces of one line, written at once. */
struct line {
    char text[1024];
    size_t len;
};

static void line_add(struct line *l, const char *s) {
    static const char hex[] = "0123456789abcdef";
    for (; s != NULL && *s != '\0' && l->len < sizeof l->text - 6; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != 0x7f) { /* a file name's newline cannot split the line */
            l->text[l->len++] = (char)c;
        } else if (c == '\n' || c == '\t' || c == '\r') { /* as main.c writes them */
            l->text[l->len++] = '\\';
            l->text[l->len++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
        } else {
            l->text[l->len++] = '\\';
            l->text[l->len++] = 'x';
            l->text[l->len++] = hex[c >> 4];
            l->text[l->len++] = hex[c & 15];
        }
    }
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
    if (crash_mark[0] != '\0') {
        /* Ranks crash together on the same damaged file: the first to make the
         * marker reports, the others end quietly; the marker goes a second later. */
        int fd = open(crash_mark, O_CREAT | O_EXCL | O_WRONLY, 0600);
        if (fd < 0)
            _exit(1);
        close(fd);
        struct timespec pause = {1, 0};
        nanosleep(&pause, NULL);
        unlink(crash_mark);
    }
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

void sx_cli_crash_once(void) {
    /* One marker per job and node: the launcher's job id (Open MPI, PMIx, Slurm),
     * else the parent process that launched the ranks. */
    static const char *const ids[] = {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid",
                                      "SLURM_JOB_ID"};
    char job[32] = "";
    for (size_t i = 0; i < sizeof ids / sizeof ids[0] && job[0] == '\0'; i++) {
        const char *v = getenv(ids[i]);
        size_t n = 0;
        for (; v != NULL && *v != '\0' && n < sizeof job - 1; v++)
            if ((*v >= '0' && *v <= '9') || (*v >= 'A' && *v <= 'Z') ||
                (*v >= 'a' && *v <= 'z'))
                job[n++] = *v;
        job[n] = '\0';
    }
    if (job[0] == '\0')
        snprintf(job, sizeof job, "p%ld", (long)getppid());
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(crash_mark, sizeof crash_mark, "%s/.scope-export-crash-%s", dir, job);
}
