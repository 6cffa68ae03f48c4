/* trace_export.c - the Chrome trace and speedscope documents: plans and producers */
#include "h5_read.h"
#include "json_write.h"
#include "mpi_util.h"
#include "out_file.h"
#include "pipeline.h"
#include "regex.h"
#include "run.h"
#include "stream.h"
#include "trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MPI counts are int: reduce long arrays in pieces. */
#define MAX_MSG (1u << 28)

/* A block of the document: calls [from, to) of selected rank k. */
struct tblock {
    size_t k;
    uint64_t from, to;
};

/* Both documents as stream producers. */
struct trace_doc {
    struct sx_trace *t;
    enum sx_format format;
    struct tblock *blocks;
    size_t nblocks;
    /* Chrome */
    struct sx_chrome_cache *cc;
    struct sx_pf_cache *pc; /* Perfetto */
    /* speedscope */
    uint32_t *frames, *frame_of;
    size_t nframes;
    double origin;
    size_t first_k;           /* the selected rank whose first profile opens the list */
    struct sx_ss_rank *built; /* the rank this process built last */
    size_t built_k;
};

static enum sx_status doc_head(void *ctx, struct sx_buf *out, struct sx_error *err) {
    struct trace_doc *d = ctx;
    (void)err;
    if (d->format == SX_FORMAT_CHROME_TRACE)
        sx_chrome_head(d->t, out);
    else if (d->format == SX_FORMAT_PERFETTO)
        ; /* a Perfetto trace is its packets alone */
    else
        sx_ss_head(d->t, d->frames, d->nframes, out);
    return SX_OK;
}

static enum sx_status doc_tail(void *ctx, struct sx_buf *out, struct sx_error *err) {
    struct trace_doc *d = ctx;
    (void)err;
    if (d->format == SX_FORMAT_CHROME_TRACE)
        sx_chrome_tail(out);
    else if (d->format == SX_FORMAT_PERFETTO)
        ; /* a Perfetto trace is its packets alone */
    else
        sx_ss_tail(out);
    return SX_OK;
}

/* speedscope's columns: the times and the lanes. */
#define SS_COLS                                                                          \
    (SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END) | SX_COLBIT(SX_COL_THREAD) |        \
     SX_COLBIT(SX_COL_TASK))

/* Selected rank k's sorted, nested calls: read and built once per process. */
static enum sx_status ss_rank(struct trace_doc *d, size_t k, struct sx_error *err) {
    enum sx_status st = SX_OK;
    if (d->built != NULL && d->built_k == k)
        return SX_OK;
    sx_ss_free(d->built);
    d->built = NULL;
    st = sx_trace_load_rank(d->t, d->t->ranks[k], SS_COLS, err);
    if (st == SX_OK)
        st = sx_ss_build(d->t, k, &d->built, err);
    sx_trace_unload_rank(d->t, d->t->ranks[k]);
    d->built_k = k;
    return st;
}

static enum sx_status doc_block(void *ctx, size_t b, struct sx_buf *out,
                                struct sx_error *err) {
    struct trace_doc *d = ctx;
    const struct tblock *tb = &d->blocks[b];
    if (d->format == SX_FORMAT_CHROME_TRACE)
        return sx_chrome_block(d->t, d->cc, tb->k, tb->from, tb->to, out, err);
    if (d->format == SX_FORMAT_PERFETTO)
        return sx_pf_block(d->pc, tb->k, tb->from, tb->to, out, err);
    enum sx_status st = ss_rank(d, tb->k, err);
    if (st == SX_OK)
        st = sx_ss_block(d->t, d->built, d->frame_of, d->origin, tb->k == d->first_k,
                         (size_t)tb->from, (size_t)tb->to, out, err);
    return st;
}

/* Cut every selected rank's calls into blocks of about 'block_bytes' of text. */
/* Progress counts calls, and one for each block (a rank without calls has one). */
static uint64_t doc_units(void *ctx, size_t b) {
    const struct tblock *tb = &((const struct trace_doc *)ctx)->blocks[b];
    return tb->to - tb->from + 1;
}

static enum sx_status plan_blocks(struct trace_doc *d, size_t block_bytes,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    const bool chrome = d->format == SX_FORMAT_CHROME_TRACE;
    /* bytes per call: one "X" item, or an open and a close event */
    const uint64_t per = chrome ? 230 : d->format == SX_FORMAT_PERFETTO ? 80 : 110;
    uint64_t calls = block_bytes / per > 0 ? block_bytes / per : 1;
    size_t cap = 16, n = 0;
    d->blocks = sx_malloc(cap * sizeof *d->blocks);
    SX_CHECK(d->blocks != NULL, SX_ERR_NOMEM, err, d->t->run->path, "out of memory");
    for (size_t k = 0; k < d->t->nranks; k++) {
        uint64_t nk = sx_trace_rank_calls(d->t, d->t->ranks[k]);
        if (d->format == SX_FORMAT_SPEEDSCOPE && nk == 0)
            continue; /* no profile */
        uint64_t at = 0;
        do {
            uint64_t to = nk - at > calls ? at + calls : nk;
            if (n == cap) {
                cap *= 2;
                struct tblock *nb = sx_realloc(d->blocks, cap * sizeof *nb);
                SX_CHECK(nb != NULL, SX_ERR_NOMEM, err, d->t->run->path, "out of memory");
                d->blocks = nb;
            }
            d->blocks[n++] = (struct tblock){k, at, to};
            at = to;
        } while (at < nk);
    }
    d->nblocks = n;
out:
    return st;
}

/*
 * speedscope's first pass over this process's share of the selected ranks
 * (k % size == rank): the nesting checks, and per rank its calls, first
 * start and the frames its profiles open, as int64 records
 * [k, ncalls, first_start, nframes, frames...] appended to 'rec'.
 */
static enum sx_status ss_survey(struct trace_doc *d, int rank, int size, int64_t **rec,
                                size_t *nrec, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_trace *t = d->t;
    bool *seen = sx_calloc(t->nregions + 1, sizeof *seen);
    uint32_t *order = sx_calloc(t->nregions + 1, sizeof *order);
    size_t cap = 64, n = 0;
    int64_t *v = sx_malloc(cap * sizeof *v);
    SX_CHECK(seen != NULL && order != NULL && v != NULL, SX_ERR_NOMEM, err, t->run->path,
             "out of memory");
    for (size_t k = (size_t)rank; k < t->nranks; k += (size_t)size) {
        st = ss_rank(d, k, err);
        if (st != SX_OK)
            goto out;
        memset(seen, 0, (t->nregions + 1) * sizeof *seen);
        size_t nf = sx_ss_frames(d->built, seen, order, 0);
        size_t nc = sx_ss_ncalls(d->built);
        if (n + 4 + nf > cap) {
            cap = (n + 4 + nf) * 2;
            int64_t *nv = sx_realloc(v, cap * sizeof *nv);
            SX_CHECK(nv != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
            v = nv;
        }
        v[n++] = (int64_t)k;
        v[n++] = (int64_t)nc;
        v[n++] = nc > 0 ? sx_ss_first_start(d->built) : INT64_MAX;
        v[n++] = (int64_t)nf;
        for (size_t i = 0; i < nf; i++)
            v[n++] = order[i];
    }
out:
    free(seen);
    free(order);
    if (st != SX_OK) {
        free(v);
        v = NULL;
        n = 0;
    }
    *rec = v;
    *nrec = n;
    return st;
}

/* NOTE: collective. Every process gets every process's survey records. */
static enum sx_status gather_records(MPI_Comm comm, int size, const int64_t *mine,
                                     size_t n, int64_t **all, size_t *nall,
                                     struct sx_error *err) {
    enum sx_status st = SX_OK;
    int *counts = NULL, *displs = NULL;
    int64_t *v = NULL;
    *all = NULL;
    *nall = 0;
    if (comm == MPI_COMM_NULL) {
        v = sx_malloc((n + 1) * sizeof *v);
        SX_CHECK(v != NULL, SX_ERR_NOMEM, err, "", "out of memory");
        memcpy(v, mine, n * sizeof *v);
        *all = v;
        *nall = n;
        return SX_OK;
    }
    /* NOTE: collective: a local failure is agreed before each collective, so that no
     * rank leaves the others waiting in it */
    counts = sx_calloc((size_t)size, sizeof *counts);
    displs = sx_calloc((size_t)size, sizeof *displs);
    if (counts == NULL || displs == NULL || n >= MAX_MSG)
        st = sx_error_set(err, SX_ERR_NOMEM, "", "out of memory");
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    int c = (int)n;
    SX_CHECK(MPI_Allgather(&c, 1, MPI_INT, counts, 1, MPI_INT, comm) == MPI_SUCCESS,
             SX_ERR_MPI, err, "", "MPI_Allgather failed");
    size_t total = 0;
    for (int r = 0; r < size; r++) {
        displs[r] = (int)total;
        total += (size_t)counts[r];
    }
    SX_CHECK(total < MAX_MSG, SX_ERR_NOMEM, err, "", "too many ranks to survey");
    v = sx_malloc((total + 1) * sizeof *v);
    if (v == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, "", "out of memory");
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(MPI_Allgatherv(mine, c, MPI_INT64_T, v, counts, displs, MPI_INT64_T, comm) ==
                 MPI_SUCCESS,
             SX_ERR_MPI, err, "", "MPI_Allgatherv failed");
    *all = v;
    v = NULL;
    *nall = total;
out:
    free(v);
    free(counts);
    free(displs);
    return st;
}

/* The shared frame table, the origin and the first profile, from every record. */
static enum sx_status ss_frames(struct trace_doc *d, const int64_t *rec, size_t n,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_trace *t = d->t;
    const int64_t **by_k = sx_calloc(t->nranks + 1, sizeof *by_k);
    bool *seen = sx_calloc(t->nregions + 1, sizeof *seen);
    d->frames = sx_calloc(t->nregions + 1, sizeof *d->frames);
    d->frame_of = sx_calloc(t->nregions + 1, sizeof *d->frame_of);
    SX_CHECK(by_k != NULL && seen != NULL && d->frames != NULL && d->frame_of != NULL,
             SX_ERR_NOMEM, err, t->run->path, "out of memory");
    for (size_t i = 0; i + 4 <= n; i += 4 + (size_t)rec[i + 3])
        if (rec[i] >= 0 && (size_t)rec[i] < t->nranks)
            by_k[rec[i]] = rec + i;
    int64_t first = INT64_MAX;
    uint64_t ncalls = 0;
    d->first_k = t->nranks;
    for (size_t k = 0; k < t->nranks; k++) {
        const int64_t *r = by_k[k];
        SX_CHECK(r != NULL, SX_ERR_INTERNAL, err, t->run->path,
                 "%s: no survey of selected rank %zu", t->run->path, k);
        if (r[1] == 0)
            continue;
        if (d->first_k == t->nranks)
            d->first_k = k;
        ncalls += (uint64_t)r[1];
        if (r[2] < first)
            first = r[2];
        for (int64_t i = 0; i < r[3]; i++) {
            uint32_t g = (uint32_t)r[4 + i];
            if (g < t->nregions && !seen[g]) {
                seen[g] = true;
                d->frame_of[g] = (uint32_t)d->nframes;
                d->frames[d->nframes++] = g;
            }
        }
    }
    if (ncalls == 0) {
        st = sx_trace_value_error(t, SX_ERR_VALUE,
                                  "No calls recorded for the requested ranks.", err);
        goto out;
    }
    d->origin = (double)first / 1e9;
out:
    free(by_k);
    free(seen);
    return st;
}

/* The reference's checks of the selection, before any event is read. */
static enum sx_status check_selection(const struct sx_trace *t, enum sx_format f,
                                      struct sx_error *err) {
    if (f == SX_FORMAT_SPEEDSCOPE && t->nregions == 0)
        return sx_trace_value_error(t, SX_ERR_VALUE,
                                    "No regions matched the selected filters.", err);
    for (size_t k = 0; k < t->nranks; k++)
        if (t->ranks[k] < 0 || t->ranks[k] >= t->run->num_ranks) {
            char msg[64];
            snprintf(msg, sizeof msg, "Invalid rank requested: %" PRId64, t->ranks[k]);
            return sx_trace_value_error(t, SX_ERR_VALUE, msg, err);
        }
    return SX_OK;
}

/* A trace document's state: the plan and the producer's. */
struct trace_state {
    struct sx_trace t;
    struct trace_doc d;
};

static void trace_free(void *ctx) {
    struct trace_state *s = ctx;
    if (s == NULL)
        return;
    sx_ss_free(s->d.built);
    sx_chrome_cache_free(s->d.cc);
    sx_pf_cache_free(s->d.pc); /* (before the plan: it unloads a rank's columns) */
    free(s->d.blocks);
    free(s->d.frames);
    free(s->d.frame_of);
    sx_trace_free(&s->t);
    free(s);
}

/*
 * NOTE: collective over 'p->comm'. The stages after the run is open, with
 * the ranks' agreement between them: the region order, the plan,
 * (speedscope: the survey); the producer in 'ds->prod'.
 */
static enum sx_status trace_plan(const struct sx_pipe *p, struct sx_doc_state *ds,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    MPI_Comm comm = p->comm;
    const struct sx_options *o = p->o;
    struct sx_run *run = p->run;
    int64_t *rec = NULL, *all = NULL;
    size_t nrec = 0, nall = 0;
    struct trace_state *s = sx_calloc(1, sizeof *s);
    ds->ctx = s;
    ds->free = trace_free;
    if (s == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, run->path, "out of memory");
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    struct sx_trace *t = &s->t;
    struct trace_doc *d = &s->d;

    /* Stages: the region order (NOTE: collective). */
    st = sx_pipe_trace_plan(p, t, err);
    t->perf = p->perf;
    t->nperf = p->nperf; /* borrowed */
    d->t = t;
    d->format = o->format;
    if (st == SX_OK)
        st = check_selection(t, o->format, err);
    if (st == SX_OK)
        st = plan_blocks(d, o->block_bytes ? o->block_bytes : (size_t)4 << 20, err);
    if (st == SX_OK && o->format == SX_FORMAT_CHROME_TRACE) {
        d->cc = sx_chrome_cache_new(t);
        if (d->cc == NULL)
            st = sx_error_set(err, SX_ERR_NOMEM, run->path, "out of memory");
    }
    if (st == SX_OK && o->format == SX_FORMAT_PERFETTO) {
        d->pc = sx_pf_cache_new(t);
        if (d->pc == NULL)
            st = sx_error_set(err, SX_ERR_NOMEM, run->path, "out of memory");
    }
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;

    if (o->format == SX_FORMAT_SPEEDSCOPE) {
        /* Stage: every rank sorts and checks its share of the selected ranks. */
        st = ss_survey(d, p->rank, p->size, &rec, &nrec, err);
        st = sx_all_ok(comm, st, err);
        if (st == SX_OK)
            st = gather_records(comm, p->size, rec, nrec, &all, &nall, err);
        st = sx_all_ok(comm, st, err);
        if (st == SX_OK)
            st = ss_frames(d, all, nall, err); /* the same on every rank */
        st = sx_all_ok(comm, st, err);
        if (st != SX_OK)
            goto out;
    }
    uint64_t units = 0;
    for (size_t b = 0; b < d->nblocks; b++)
        units += doc_units(d, b);
    ds->prod = (struct sx_producer){d,        d->nblocks, units,     doc_head,
                                    doc_tail, doc_block,  doc_units, NULL};
out:
    free(rec);
    free(all);
    return st;
}

/* The trace documents need the lanes' names; Chrome's the perf counter totals too. */
const struct sx_doc_type sx_doc_chrome = {
    .format = SX_FORMAT_CHROME_TRACE,
    .events_for = "Chrome trace document needs",
    .needs = SX_NEED_LANES | SX_NEED_PERF | SX_NEED_GPU | SX_NEED_JSON_INPUT,
    .plan = trace_plan,
};

/* Perfetto's trace: the Chrome trace's lanes and counters, its calls sorted per track. */
const struct sx_doc_type sx_doc_perfetto = {
    .format = SX_FORMAT_PERFETTO,
    .events_for = "Perfetto trace document needs",
    .needs = SX_NEED_LANES | SX_NEED_PERF | SX_NEED_GPU | SX_NEED_JSON_INPUT,
    .plan = trace_plan,
};

const struct sx_doc_type sx_doc_speedscope = {
    .format = SX_FORMAT_SPEEDSCOPE,
    .events_for = "speedscope document needs",
    .needs = SX_NEED_LANES | SX_NEED_GPU | SX_NEED_JSON_INPUT,
    .plan = trace_plan,
};
