/* export.c - sx_export(): the export's stages, with the ranks' agreement between them */
#include "doc.h"
#include "doc_plan.h"
#include "fault.h"
#include "gpu_rows.h"
#include "h5_read.h"
#include "json_write.h"
#include "mpi_util.h"
#include "out_file.h"
#include "prof_write.h"
#include "regex.h"
#include "run.h"
#include "stats_regions.h"
#include "stop.h"
#include "stream.h"
#include "trace.h"

#include <inttypes.h>
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

/* The JSON profile as a stream producer: the plan's blocks, events from 'src'. */
struct json_doc {
    const struct sx_doc *doc;
    const struct sx_event_source *src;
    int rank, size; /* who formats which block: sx_stream_owner */
    bool gz;
    struct sx_doc_ahead ahead;
};

/* Blocks one read-ahead may cover, at most; the room bounds it first. */
enum { AHEAD_BLOCKS = 64 };

static enum sx_status json_head(void *ctx, struct sx_buf *out, struct sx_error *err) {
    return sx_doc_header(((const struct json_doc *)ctx)->doc, out, err);
}

static enum sx_status json_tail(void *ctx, struct sx_buf *out, struct sx_error *err) {
    return sx_doc_trailer(((const struct json_doc *)ctx)->doc, out, err);
}

static enum sx_status json_block(void *ctx, size_t b, struct sx_buf *out,
                                 struct sx_error *err) {
    struct json_doc *j = ctx;
    if (!sx_doc_ahead_has(&j->ahead, b)) {
        /* this rank's next blocks, from 'b' on */
        size_t next[AHEAD_BLOCKS], n = 0;
        for (size_t k = b; k < j->doc->nblocks && n < AHEAD_BLOCKS; k++)
            if (sx_stream_owner(k, j->size, j->gz) == j->rank)
                next[n++] = k;
        enum sx_status st = sx_doc_ahead_fill(j->doc, j->src, &j->ahead, next, n, err);
        if (st != SX_OK)
            return st;
    }
    return sx_doc_block(j->doc, j->src, &j->ahead, b, out, err);
}

static uint64_t json_units(void *ctx, size_t b) {
    return ((const struct json_doc *)ctx)->doc->blocks[b].units;
}

/*
 * NOTE: collective. Every rank learns rank 0's temporary output name in
 * 'tmp' and tracks it, so that a signal on any rank removes the file: when
 * rank 0 is killed outright, the launcher stops the others with SIGTERM.
 */
static enum sx_status share_tmp(MPI_Comm comm, int rank, const struct sx_out_file *f,
                                char tmp[SX_TMP_NAME], struct sx_error *err) {
    if (comm == MPI_COMM_NULL)
        return SX_OK;
    if (rank == 0)
        snprintf(tmp, SX_TMP_NAME, "%s", sx_out_tmp_path(f));
    enum sx_status st =
        sx_mpi_check(MPI_Bcast(tmp, SX_TMP_NAME, MPI_CHAR, 0, comm), "MPI_Bcast", err);
    if (st == SX_OK && rank != 0)
        sx_tmp_track(tmp);
    return st;
}

static enum sx_status check_paths(const char *input, const char *output,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct stat a, b;
    SX_CHECK(input != NULL && output != NULL, SX_ERR_USAGE, err, "",
             "input and output needed");
    SX_CHECK(!(stat(input, &a) == 0 && stat(output, &b) == 0 && a.st_dev == b.st_dev &&
               a.st_ino == b.st_ino),
             SX_ERR_USAGE, err, output,
             "the output %s is the input file itself; refusing to overwrite the run",
             output);
out:
    return st;
}

/*
 * The export is a sequence of stages. No collective call happens inside a
 * stage; between two stages every rank calls sx_all_ok, so a stage's failure
 * (a 'goto' to its end, never past the agreement) is known to all ranks
 * before the next collective. sx_h5_open, sx_resolve_gpu and sx_stream are
 * collective and agree inside themselves in the same way.
 */
enum sx_status sx_export(MPI_Comm comm, const char *input, const char *output,
                         const struct sx_options *opts, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_options defaults;
    MPI_Comm c = MPI_COMM_NULL;
    struct sx_h5 *h5 = NULL;
    struct sx_run *run = NULL;
    struct sx_filter *filter = NULL;
    struct sx_out_file *f = NULL;
    struct sx_doc doc;
    struct sx_error local;
    int rank = 0, size = 1;
    bool opened = false;
    char tmp[SX_TMP_NAME] = "";

    memset(&doc, 0, sizeof doc);
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
    const bool gz = sx_out_is_gz(output);
    sx_fault_begin(input);

    /* Stage: options and paths; every rank checks the same things. */
    if (st == SX_OK)
        st = check_paths(input, output, err);
    if (st == SX_OK && (opts->gzip_level < 0 || opts->gzip_level > 9))
        st = sx_error_set(err, SX_ERR_USAGE, output, "gzip level %d is not in 0..9",
                          opts->gzip_level);
    if (st == SX_OK && gz && opts->deflate == SX_DEFLATE_ISAL && !sx_has_isal())
        st = sx_error_set(err, SX_ERR_USAGE, output,
                          "this build has no ISA-L deflate engine; use the zlib engine");
    if (st == SX_OK)
        st = sx_filter_new(opts, &filter, err);
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;
    if (opts->format == SX_FORMAT_REGION_STATISTICS) { /* its own stages too */
        st = sx_stats_export(c, input, output, opts, err);
        goto out;
    }
    if (opts->format == SX_FORMAT_PROF || opts->format == SX_FORMAT_FLAMEGRAPH) {
        st = sx_prof_export(c, input, output, opts, err);
        goto out;
    }
    if (opts->format != SX_FORMAT_JSON) { /* the trace documents have their own stages */
        st = sx_trace_export(c, input, output, opts, err);
        goto out;
    }

    /* Stage: NOTE: collective open; rank 0 reads the index, every rank gets it. */
    st = sx_h5_open_index(c, input, opts->summary != 0, &h5, &run, err);
    opened = true;
    if (st == SX_OK)
        st = sx_fault_at(SX_FAIL_OPEN, err);
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;
    st = sx_resolve_gpu(c, rank, size, h5, run, err);
    if (st != SX_OK)
        goto out;

    /* Stage: the plan, the same on every rank. */
    st = sx_doc_plan(&doc, run, filter, opts->indent, opts->block_bytes, err);
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;

    /* Stage: rank 0 alone reads the lane tables and per-rank groups, opens the output. */
    if (rank == 0) {
        st = sx_h5_read_extras(h5, run, err);
        if (st == SX_OK)
            st = sx_out_open(output, sx_mpi_threads_ok(c), &f, err);
    }
    st = sx_all_ok(c, st, err);
    if (st == SX_OK)
        st = share_tmp(c, rank, f, tmp, err);
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;

    /* Stage: the block stream (its own protocol and agreement). */
    struct sx_event_source src = sx_h5_event_source(h5);
    struct json_doc jd = {&doc, &src, rank, size, gz, {0}};
    sx_doc_ahead_init(&jd.ahead);
    struct sx_producer prod = {&jd,       doc.nblocks, doc.total_units, json_head,
                               json_tail, json_block,  json_units};
    struct sx_stream_opts so = {
        output, gz, opts->gzip_level, opts->deflate, opts->progress, opts->progress_user};
    st = sx_stream(c, &prod, &so, f, err);
    sx_doc_ahead_free(&jd.ahead);
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
                 output, input);
        snprintf(err->source, sizeof err->source, "%s", output);
    }
    sx_out_abort(f); /* removes the temporary file of a failed run */
    if (rank != 0)
        sx_tmp_forget(tmp);
    sx_stop_clear(); /* a stop asked for during this export ends with it */
    sx_doc_free(&doc);
    sx_filter_free(filter);
    sx_run_free(run);
    if (opened)
        sx_h5_close(h5); /* NOTE: collective */
    sx_comm_free(&c);
    return st;
}
