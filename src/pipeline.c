/* pipeline.c - sx_export(), sx_export_native(): every export's stages, agreed between
 * each two */
#include "pipeline.h"

#include "fault.h"
#include "filter.h"
#include "gpu_rows.h"
#include "h5_read.h"
#include "json_load.h"
#include "mpi_util.h"
#include "native.h"
#include "out_file.h"
#include "run.h"
#include "stop.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void sx_options_init(struct sx_options *o) {
    memset(o, 0, sizeof *o);
    o->indent = -1;
    o->gzip_level = 6;
    o->deflate = SX_DEFLATE_ZLIB;
}

/* ------------------------------------------------------------------ */
/* The documents: adding a format is one entry here                    */

static const struct sx_doc_type *const doc_types[] = {
    &sx_doc_json, &sx_doc_chrome,     &sx_doc_speedscope, &sx_doc_stats,
    &sx_doc_prof, &sx_doc_flamegraph, &sx_doc_perfetto,   &sx_doc_otf2,
};

static const struct sx_doc_type *doc_type_of(enum sx_format f) {
    for (size_t i = 0; i < sizeof doc_types / sizeof doc_types[0]; i++)
        if (doc_types[i]->format == f)
            return doc_types[i];
    return NULL;
}

/* ------------------------------------------------------------------ */
/* The sources                                                         */

/*
 * A source opens the run for a document. 'check' runs on every rank before
 * anything is opened; 'open' is collective over the export's communicator
 * 'c' and agrees inside; 'root' is rank 0's last local step before it opens
 * the output; 'close' is collective (called whenever 'open' was).
 */
struct source_type {
    enum sx_status (*check)(const struct sx_pipe_input *in, const char *output,
                            const struct sx_options *o, struct sx_error *err);
    enum sx_status (*open)(MPI_Comm c, const struct sx_pipe_input *in,
                           const struct sx_doc_type *dt, struct sx_pipe *p,
                           struct sx_error *err);
    enum sx_status (*root)(struct sx_pipe *p, const struct sx_doc_type *dt,
                           struct sx_error *err);
    void (*close)(struct sx_pipe *p);
};

/* An HDF5 run or a JSON profile: the output is not the input. */
static enum sx_status file_check(const struct sx_pipe_input *in, const char *output,
                                 const struct sx_options *o, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct stat a, b;
    (void)o;
    SX_CHECK(in->path != NULL && output != NULL, SX_ERR_USAGE, err, "",
             "input and output needed");
    SX_CHECK(!(stat(in->path, &a) == 0 && stat(output, &b) == 0 && a.st_dev == b.st_dev &&
               a.st_ino == b.st_ino),
             SX_ERR_USAGE, err, output,
             "the output %s is the input file itself; refusing to overwrite the run",
             output);
out:
    return st;
}

/* NOTE: collective: open the HDF5 run, then what the document needs of it. */
static enum sx_status h5_open(MPI_Comm c, const struct sx_pipe_input *in,
                              const struct sx_doc_type *dt, struct sx_pipe *p,
                              struct sx_error *err) {
    enum sx_status st = SX_OK;
    int rank = 0, size = 1;
    if (c != MPI_COMM_NULL) {
        MPI_Comm_rank(c, &rank);
        MPI_Comm_size(c, &size);
    }
    /* rank 0 reads the index, every rank gets it */
    if (dt->needs & SX_NEED_INDEX)
        st = sx_h5_open_index(c, in->path, p->o->summary != 0, &p->h5, &p->run, err);
    else
        st = sx_h5_open(c, in->path, false, &p->h5, &p->run, err);
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        return st;
    /* Stage: the lane tables (the lanes' names), the perf counter totals. */
    if (dt->needs & SX_NEED_LANES)
        st = sx_h5_read_extras(p->h5, p->run, err);
    if (st == SX_OK && (dt->needs & SX_NEED_PERF))
        st = sx_h5_perf_read(in->path, p->run->num_ranks, &p->perf, &p->nperf, err);
    st = sx_all_ok(c, st, err);
    if (st == SX_OK && (dt->needs & SX_NEED_GPU))
        st = sx_resolve_gpu(c, rank, size, p->h5, p->run, err); /* agrees inside */
    return st;
}

static enum sx_status h5_root(struct sx_pipe *p, const struct sx_doc_type *dt,
                              struct sx_error *err) {
    return dt->needs & SX_NEED_LANES_ROOT ? sx_h5_read_extras(p->h5, p->run, err) : SX_OK;
}

static void h5_close(struct sx_pipe *p) {
    sx_perf_free(p->perf, p->nperf);
    sx_run_free(p->run);
    sx_h5_close(p->h5); /* NOTE: collective */
}

/* NOTE: collective: a JSON profile, loaded whole by every rank. */
static enum sx_status json_open(MPI_Comm c, const struct sx_pipe_input *in,
                                const struct sx_doc_type *dt, struct sx_pipe *p,
                                struct sx_error *err) {
    (void)dt;
    return sx_all_ok(c, sx_json_load(in->path, &p->run, err), err);
}

static void json_close(struct sx_pipe *p) { sx_run_free(p->run); }

static enum sx_status native_check(const struct sx_pipe_input *in, const char *output,
                                   const struct sx_options *o, struct sx_error *err) {
    if (output == NULL || (in->nfiles > 0 && in->files == NULL))
        return sx_error_set(err, SX_ERR_USAGE, "", "inputs and an output needed");
    if (o->summary)
        return sx_error_set(err, SX_ERR_USAGE, "",
                            "a summary-only read does not apply to a native run");
    return SX_OK;
}

/*
 * NOTE: collective: find, read and merge the indexes (their own agreement);
 * then the run as an event source, for the documents without a native plan.
 */
static enum sx_status native_open(MPI_Comm c, const struct sx_pipe_input *in,
                                  const struct sx_doc_type *dt, struct sx_pipe *p,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_native *nr = NULL;
    (void)dt;
    st = sx_native_open(c, in->files, in->nfiles, in->label, p->output, &nr, err);
    if (st != SX_OK)
        return st;
    p->nr = nr;
    p->run = nr->run;
    st = sx_native_events_new(nr, &p->native_events, err);
    p->events = &p->native_events;
    return sx_all_ok(c, st, err);
}

static enum sx_status native_root(struct sx_pipe *p, const struct sx_doc_type *dt,
                                  struct sx_error *err) {
    (void)dt;
    return sx_native_check_output(p->nr, p->output, err);
}

static void native_close(struct sx_pipe *p) {
    sx_native_events_free(&p->native_events);
    sx_native_free(p->nr);
}

static const struct source_type source_h5 = {file_check, h5_open, h5_root, h5_close};
static const struct source_type source_json = {file_check, json_open, NULL, json_close};
static const struct source_type source_native = {native_check, native_open, native_root,
                                                 native_close};

/* ------------------------------------------------------------------ */
/* The stages                                                          */

/* NOTE: collective. Every rank learns rank 0's temporary output name (sx_tmp_share). */
static enum sx_status share_tmp(MPI_Comm comm, int rank, const struct sx_out_file *f,
                                char tmp[SX_TMP_NAME], struct sx_error *err) {
    if (comm == MPI_COMM_NULL)
        return SX_OK;
    if (rank == 0)
        snprintf(tmp, SX_TMP_NAME, "%s", sx_out_tmp_path(f));
    return sx_tmp_share(comm, rank, tmp, err);
}

/* The options every rank checks alike, after the source's own checks. */
static enum sx_status check_options(const struct sx_pipe_input *in, const char *output,
                                    const struct sx_options *o,
                                    const struct source_type *src, struct sx_error *err) {
    enum sx_status st = src->check(in, output, o, err);
    /* the error's source as each entry point has always named it */
    const char *where = in->native ? "" : output;
    if (st == SX_OK && (o->gzip_level < 0 || o->gzip_level > 9))
        st = sx_error_set(err, SX_ERR_USAGE, where, "gzip level %d is not in 0..9",
                          o->gzip_level);
    if (st == SX_OK && sx_out_is_gz(output) && o->deflate == SX_DEFLATE_ISAL &&
        !sx_has_isal())
        st = sx_error_set(err, SX_ERR_USAGE, where,
                          "this build has no ISA-L deflate engine; use the zlib engine");
    return st;
}

/* The document of format 'o->format', and whether it can be made of what is asked. */
static enum sx_status check_document(const struct sx_options *o,
                                     const struct sx_doc_type **dt,
                                     struct sx_error *err) {
    *dt = doc_type_of(o->format);
    if (*dt == NULL)
        return sx_error_set(err, SX_ERR_USAGE, "", "unknown document format %d",
                            (int)o->format);
    if ((*dt)->events_for != NULL && o->summary)
        return sx_error_set(err, SX_ERR_USAGE, "",
                            "--summary has no per-call events, which the %s",
                            (*dt)->events_for);
    return SX_OK;
}

/*
 * The export is a sequence of stages. No collective call happens inside a
 * stage; between two stages every rank calls sx_all_ok, so a stage's failure
 * (a 'goto' to its end, never past the agreement) is known to all ranks
 * before the next collective. The source's open, the document's plan and the
 * stream are collective and agree inside themselves in the same way.
 */
enum sx_status sx_pipeline_run(MPI_Comm comm, const struct sx_pipe_input *in,
                               const char *output, const struct sx_options *opts,
                               struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_options defaults;
    struct sx_error local;
    MPI_Comm c = MPI_COMM_NULL;
    struct sx_filter *filter = NULL;
    struct sx_out_file *f = NULL;
    const struct sx_doc_type *dt = NULL;
    const struct source_type *src = in->native ? &source_native : &source_h5;
    struct sx_doc_state d;
    struct sx_pipe p;
    int rank = 0, size = 1;
    bool opened = false;
    char tmp[SX_TMP_NAME] = "";
    const char *first =
        in->native
            ? (in->nfiles > 0 && in->files != NULL && in->files[0] ? in->files[0] : "")
            : in->path;

    memset(&d, 0, sizeof d);
    memset(&p, 0, sizeof p);
    sx_stop_clear(); /* see stop.h: a stop from before this export is not its own */
    sx_error_clear(&local);
    if (err == NULL)
        err = &local;
    sx_error_clear(err);
    if (opts == NULL) {
        sx_options_init(&defaults);
        opts = &defaults;
    }
    /* MPI_COMM_NULL: this process alone, without MPI (which need not be initialized) */
    st = sx_comm_dup(comm, &c, err);
    if (st != SX_OK)
        return st;
    if (c != MPI_COMM_NULL)
        st = sx_mpi_check(MPI_Comm_rank(c, &rank), "MPI_Comm_rank", err);
    if (c != MPI_COMM_NULL && st == SX_OK)
        st = sx_mpi_check(MPI_Comm_size(c, &size), "MPI_Comm_size", err);
    sx_fault_begin(first);

    /* Stage: options, paths, the filter, the document; every rank checks the same. */
    if (st == SX_OK)
        st = check_options(in, output, opts, src, err);
    if (st == SX_OK)
        st = sx_filter_new(opts, &filter, err);
    if (st == SX_OK)
        st = check_document(opts, &dt, err);
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;
    if (!in->native && (dt->needs & SX_NEED_JSON_INPUT) && !sx_is_hdf5(in->path))
        src = &source_json;
    p.comm = c;
    p.rank = rank;
    p.size = size;
    p.input = first;
    p.output = output;
    p.o = opts;
    p.filter = filter;

    /* Stage: NOTE: collective open of the source (its own agreement). */
    st = src->open(c, in, dt, &p, err);
    opened = true;
    if (st == SX_OK)
        st = sx_fault_at(SX_FAIL_OPEN, err);
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;
    /* Stage: the document's plan (NOTE: collective, its own agreement). */
    st = p.nr != NULL && dt->plan_native != NULL ? dt->plan_native(&p, &d, err)
                                                 : dt->plan(&p, &d, err);
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;
    if (dt->write != NULL) { /* a document of several files writes them itself */
        st = dt->write(&p, d.ctx, err);
        st = sx_all_ok(c, st, err);
        goto out;
    }

    /* Stage: rank 0 opens the output; every rank learns its temporary name. */
    if (rank == 0 && src->root != NULL)
        st = src->root(&p, dt, err);
    if (rank == 0 && st == SX_OK)
        st = sx_out_open(
            output, (sx_mpi_threads_ok(c) ? SX_OUT_THREAD : 0u) | SX_OUT_DIRECT, &f, err);
    st = sx_all_ok(c, st, err);
    if (st == SX_OK)
        st = share_tmp(c, rank, f, tmp, err);
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;

    /* Stage: the block stream (its own protocol and agreement). */
    const struct sx_stream_opts so = {
        output,        sx_out_is_gz(output), opts->gzip_level,
        opts->deflate, opts->progress,       opts->progress_user,
        dt->compact,   dt->root_writes_only, dt->turns};
    st = sx_stream(c, &d.prod, &so, f, err);
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;

    /* Stage: rank 0 commits the file. */
    if (rank == 0) {
        struct sx_out_file *done = f;
        f = NULL;
        st = sx_out_commit(done, err);
    }
    st = sx_all_ok(c, st, err);
out:
    /* Whichever rank saw the signal first, and at whichever stage, the user asks
     * about the output: name it, and say it was not written. */
    if (st == SX_ERR_INTERRUPTED && err->code == SX_ERR_INTERRUPTED) {
        snprintf(err->text, sizeof err->text,
                 "%s: export of %s interrupted by a signal; the output was not written "
                 "(an existing file is left as it was)",
                 output, first);
        snprintf(err->source, sizeof err->source, "%s", output);
    }
    sx_out_abort(f); /* removes the temporary file of a failed run */
    if (rank != 0)
        sx_tmp_forget(tmp);
    sx_stop_clear(); /* a stop asked for during this export ends with it */
    if (d.free != NULL)
        d.free(d.ctx);
    sx_filter_free(filter);
    if (opened)
        src->close(&p); /* NOTE: collective */
    sx_comm_free(&c);
    return st;
}

enum sx_status sx_export(MPI_Comm comm, const char *input, const char *output,
                         const struct sx_options *opts, struct sx_error *err) {
    const struct sx_pipe_input in = {input, false, NULL, 0, NULL};
    return sx_pipeline_run(comm, &in, output, opts, err);
}

enum sx_status sx_export_native(MPI_Comm comm, const char *const *inputs, size_t n_inputs,
                                const char *output, const char *label,
                                const struct sx_options *opts, struct sx_error *err) {
    const struct sx_pipe_input in = {NULL, true, inputs, n_inputs, label};
    return sx_pipeline_run(comm, &in, output, opts, err);
}
