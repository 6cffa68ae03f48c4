/* trace_export.c - sx_export() of the Chrome trace and speedscope documents */
#include "trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char hdf5_magic[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

static bool is_hdf5(const char *path) {
    unsigned char head[8] = {0};
    FILE *f = fopen(path, "rb");
    bool yes = false;
    if (f == NULL)
        return false;
    yes = fread(head, 1, sizeof head, f) == sizeof head &&
          memcmp(head, hdf5_magic, sizeof head) == 0;
    fclose(f);
    return yes;
}

static bool ends_with_gz(const char *path) {
    size_t n = strlen(path);
    return n >= 3 && path[n - 3] == '.' && (path[n - 2] | 0x20) == 'g' &&
           (path[n - 1] | 0x20) == 'z';
}

/* The output: plain text, or one gzip member of deflate segments with a running CRC. */
struct writer {
    struct sx_out_file *f;
    bool gz;
    int level;
    enum sx_deflate eng;
    uint32_t crc;
    uint64_t isize;
    uint64_t done;
    const struct sx_options *o;
    struct sx_buf z;
};

static enum sx_status writer_put(struct writer *w, const struct sx_buf *text, bool final,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    if (sx_stop_requested())
        return sx_error_set(err, SX_ERR_INTERRUPTED, "",
                            "export interrupted by a signal");
    if (!w->gz) {
        st = sx_out_write(w->f, text->data, text->len, err);
    } else {
        sx_buf_reset(&w->z);
        uint32_t crc = sx_crc32(0, text->data, text->len);
        st = sx_deflate_segment(text->data, text->len, w->level, w->eng, final, &w->z,
                                err);
        if (st == SX_OK)
            st = sx_out_write(w->f, w->z.data, w->z.len, err);
        w->crc = sx_crc32_combine(w->crc, crc, text->len);
        w->isize += text->len;
    }
    w->done += text->len;
    if (st == SX_OK && w->o->progress != NULL)
        w->o->progress(w->done, w->done, w->o->progress_user);
    return st;
}

static enum sx_status flush_to_writer(void *ctx, struct sx_buf *out,
                                      struct sx_error *err) {
    enum sx_status st = writer_put(ctx, out, false, err);
    sx_buf_reset(out);
    return st;
}

/* Rank 0's text of a Chrome trace, written block by block. */
static enum sx_status write_chrome(struct sx_trace *t, struct writer *w,
                                   const struct sx_trace_sink *sink, struct sx_buf *out,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    for (size_t k = 0; k < t->nranks; k++)
        if (t->ranks[k] < 0 || t->ranks[k] >= t->run->num_ranks) {
            char msg[64];
            snprintf(msg, sizeof msg, "Invalid rank requested: %" PRId64, t->ranks[k]);
            return sx_trace_value_error(t, SX_ERR_VALUE, msg, err);
        }
    sx_chrome_head(t, out);
    for (size_t k = 0; st == SX_OK && k < t->nranks; k++) {
        st = sx_trace_load_rank(t, t->ranks[k], err);
        if (st == SX_OK)
            st = sx_chrome_rank(t, k, out, sink, err);
        sx_trace_unload_rank(t, t->ranks[k]);
        if (st == SX_OK && out->len >= sink->block_bytes)
            st = flush_to_writer(w, out, err);
    }
    if (st == SX_OK)
        sx_chrome_tail(out);
    return st;
}

static enum sx_status write_speedscope(struct sx_trace *t, struct writer *w,
                                       const struct sx_trace_sink *sink,
                                       struct sx_buf *out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_ss_rank *r = NULL;
    bool *seen = NULL;
    uint32_t *frames = NULL, *frame_of = NULL;
    size_t nframes = 0, ncalls = 0;
    int64_t first = INT64_MAX;

    if (t->nregions == 0)
        return sx_trace_value_error(t, SX_ERR_VALUE,
                                    "No regions matched the selected filters.", err);
    seen = sx_calloc(t->nregions + 1, sizeof *seen);
    frames = sx_calloc(t->nregions + 1, sizeof *frames);
    frame_of = sx_calloc(t->nregions + 1, sizeof *frame_of);
    SX_CHECK(seen != NULL && frames != NULL && frame_of != NULL, SX_ERR_NOMEM, err,
             t->run->path, "out of memory");
    /* First pass: the checks, the shared frame table and the origin. */
    for (size_t k = 0; k < t->nranks; k++) {
        if (t->ranks[k] < 0 || t->ranks[k] >= t->run->num_ranks) {
            char msg[64];
            snprintf(msg, sizeof msg, "Invalid rank requested: %" PRId64, t->ranks[k]);
            st = sx_trace_value_error(t, SX_ERR_VALUE, msg, err);
            goto out;
        }
        st = sx_trace_load_rank(t, t->ranks[k], err);
        if (st == SX_OK)
            st = sx_ss_build(t, k, &r, err);
        sx_trace_unload_rank(t, t->ranks[k]);
        if (st != SX_OK)
            goto out;
        if (sx_ss_ncalls(r) > 0) {
            ncalls += sx_ss_ncalls(r);
            int64_t f = sx_ss_first_start(r);
            if (f < first)
                first = f;
            nframes = sx_ss_frames(r, seen, frames, nframes);
        }
        sx_ss_free(r);
        r = NULL;
    }
    if (ncalls == 0) {
        st = sx_trace_value_error(t, SX_ERR_VALUE,
                                  "No calls recorded for the requested ranks.", err);
        goto out;
    }
    for (size_t i = 0; i < nframes; i++)
        frame_of[frames[i]] = (uint32_t)i;
    const double origin = (double)first / 1e9;
    sx_ss_head(t, frames, nframes, out);
    bool first_profile = true;
    for (size_t k = 0; k < t->nranks; k++) {
        st = sx_trace_load_rank(t, t->ranks[k], err);
        if (st == SX_OK)
            st = sx_ss_build(t, k, &r, err);
        sx_trace_unload_rank(t, t->ranks[k]);
        if (st == SX_OK)
            st = sx_ss_profiles(t, r, frame_of, origin, &first_profile, out, sink, err);
        sx_ss_free(r);
        r = NULL;
        if (st == SX_OK && out->len >= sink->block_bytes)
            st = flush_to_writer(w, out, err);
        if (st != SX_OK)
            goto out;
    }
    sx_ss_tail(out);
out:
    sx_ss_free(r);
    free(seen);
    free(frames);
    free(frame_of);
    return st;
}

enum sx_status sx_trace_write_run(struct sx_run *run, struct sx_h5 *h5,
                                  const char *output, const struct sx_options *o,
                                  const struct sx_filter *filter,
                                  struct sx_out_file **fout, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_trace t;
    struct writer w;
    struct sx_buf out = {0};
    memset(&t, 0, sizeof t);
    memset(&w, 0, sizeof w);
    st = sx_trace_plan(&t, run, h5, filter, o, err);
    if (st != SX_OK)
        goto out;
    st = sx_out_open(output, fout, err);
    if (st != SX_OK)
        goto out;
    w.f = *fout;
    w.gz = ends_with_gz(output);
    w.level = o->gzip_level;
    w.eng = o->deflate;
    w.o = o;
    if (w.gz) {
        unsigned char gh[10];
        sx_gzip_header(gh, w.level);
        st = sx_out_write(w.f, gh, sizeof gh, err);
        if (st != SX_OK)
            goto out;
    }
    struct sx_trace_sink sink = {flush_to_writer, &w,
                                 o->block_bytes ? o->block_bytes : (size_t)4 << 20};
    if (o->format == SX_FORMAT_CHROME_TRACE)
        st = write_chrome(&t, &w, &sink, &out, err);
    else
        st = write_speedscope(&t, &w, &sink, &out, err);
    if (st == SX_OK)
        st = writer_put(&w, &out, true, err);
    if (st == SX_OK && w.gz) {
        unsigned char gt[8];
        sx_gzip_trailer(gt, w.crc, w.isize);
        st = sx_out_write(w.f, gt, sizeof gt, err);
    }
out:
    sx_buf_free(&out);
    sx_buf_free(&w.z);
    sx_trace_free(&t);
    return st;
}

/* Rank 0's part: read the run, plan, write the document to 'output'. */
static enum sx_status export_root(const char *input, const char *output,
                                  const struct sx_options *o,
                                  const struct sx_filter *filter,
                                  struct sx_out_file **fout, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_h5 *h5 = NULL;
    struct sx_run *run = NULL;

    if (is_hdf5(input)) {
        st = sx_h5_open(MPI_COMM_NULL, input, false, &h5, &run, err);
        if (st == SX_OK)
            st = sx_h5_read_extras(h5, run, err);
        for (size_t r = 0; st == SX_OK && run->layout == SX_LAYOUT_COLUMNAR &&
                           (run->file_cols & SX_COLBIT(SX_COL_GPU)) && r < run->nrows;
             r++) {
            struct sx_row *row = &run->rows[r];
            if (row->is_aggregate || !(row->cols & SX_COLBIT(SX_COL_GPU)))
                continue;
            bool present = false;
            st = sx_h5_gpu_present(h5, run, row, &present, err);
            if (st == SX_OK && !present)
                row->cols &= ~SX_COLBIT(SX_COL_GPU);
        }
    } else {
        st = sx_json_load(input, &run, err);
    }
    if (st != SX_OK)
        goto out;
    st = sx_trace_write_run(run, h5, output, o, filter, fout, err);
out:
    sx_run_free(run);
    sx_h5_close(h5);
    return st;
}

/* NOTE: collective over 'comm' (MPI_COMM_NULL: this process alone). */
enum sx_status sx_trace_export(MPI_Comm comm, const char *input, const char *output,
                               const struct sx_options *o, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_filter *filter = NULL;
    struct sx_out_file *f = NULL;
    int rank = 0;
    if (comm != MPI_COMM_NULL)
        MPI_Comm_rank(comm, &rank);

    if (o->summary)
        st = sx_error_set(err, SX_ERR_USAGE, "",
                          "--summary has no per-call events, which the %s document needs",
                          o->format == SX_FORMAT_SPEEDSCOPE ? "speedscope"
                                                            : "Chrome trace");
    if (st == SX_OK && (o->format < SX_FORMAT_JSON || o->format > SX_FORMAT_SPEEDSCOPE))
        st = sx_error_set(err, SX_ERR_USAGE, "", "unknown document format %d",
                          (int)o->format);
    if (st == SX_OK)
        st = sx_filter_new(o, &filter, err);
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    if (rank == 0)
        st = export_root(input, output, o, filter, &f, err);
    st = sx_all_ok(comm, st, err);
    if (st == SX_OK && rank == 0) {
        struct sx_out_file *g = f;
        f = NULL;
        st = sx_out_commit(g, err);
    }
    st = sx_all_ok(comm, st, err);
out:
    if (rank == 0)
        sx_out_abort(f);
    sx_filter_free(filter);
    return st;
}
