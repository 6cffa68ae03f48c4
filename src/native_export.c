/* native_export.c - sx_export_native(), sx_import_native(): native runs, no merged file
 */
#define _GNU_SOURCE /* qsort_r: the sort context per call, not in a global */
#include "buf.h"
#include "doc.h"
#include "doc_plan.h"
#include "fault.h"
#include "filter.h"
#include "h5_write.h"
#include "mpi_util.h"
#include "native.h"
#include "out_file.h"
#include "pipeline.h"
#include "run.h"
#include "stop.h"
#include "stream.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Events per piece when import-native copies a row. */
#define COPY_EVENTS (1u << 20)

/* Whether 'output' is one of the run's files (it would be destroyed). */
enum sx_status sx_native_check_output(const struct sx_native *nr, const char *output,
                                      struct sx_error *err) {
    struct stat a, b;
    if (stat(output, &b) != 0)
        return SX_OK;
    for (size_t i = 0; i < nr->nfiles; i++)
        if (stat(nr->files[i].path, &a) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino)
            return sx_error_set(err, SX_ERR_USAGE, output,
                                "the output %s is the input file %s itself; refusing to "
                                "overwrite the run",
                                output, nr->files[i].path);
    return SX_OK;
}

/* ------------------------------------------------------------------ */
/* A native run as an event source: any document reads it in slices    */

struct native_events {
    const struct sx_native *nr;
    struct sx_nreader rd; /* keeps the last file open between slices */
};

static enum sx_status native_read_slices(void *ctx, const struct sx_run *run,
                                         struct sx_slice *s, size_t ns,
                                         struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct native_events *ne = ctx;
    for (size_t i = 0; i < ns && st == SX_OK; i++) {
        const size_t ri = (size_t)(s[i].row - run->rows);
        const struct sx_nloc *l = &ne->nr->loc[ri];
        const unsigned cols = s[i].cols & s[i].row->cols;
        if (s[i].n > 0)
            st = sx_native_read_events(
                &ne->rd, ne->nr, l, s[i].first, s[i].n,
                (cols & SX_COLBIT(SX_COL_START)) ? s[i].col[SX_COL_START] : NULL,
                (cols & SX_COLBIT(SX_COL_END)) ? s[i].col[SX_COL_END] : NULL, err);
    }
    return st;
}

static const struct sx_event_ops native_event_ops = {.read_slices = native_read_slices};

enum sx_status sx_native_events_new(const struct sx_native *nr,
                                    struct sx_event_source *src, struct sx_error *err) {
    struct native_events *ne = sx_calloc(1, sizeof *ne);
    src->ops = NULL;
    src->ctx = ne;
    if (ne == NULL)
        return sx_error_set(err, SX_ERR_NOMEM, nr->run->path, "out of memory");
    ne->nr = nr;
    ne->rd.fd = -1;
    src->ops = &native_event_ops;
    return SX_OK;
}

void sx_native_events_free(struct sx_event_source *src) {
    struct native_events *ne = src->ctx;
    if (ne != NULL)
        sx_nreader_close(&ne->rd);
    free(ne);
    src->ops = NULL;
    src->ctx = NULL;
}

/* ------------------------------------------------------------------ */
/* The document: the JSON profile's blocks, events read for each block */

struct native_doc {
    struct sx_native *nr;
    struct sx_doc *doc;
    struct sx_nreader rd;
    int rank;
    int64_t **remote[2]; /* per run row: events other ranks sent for this rank's blocks */
    /* the columns of a block's rows up to ARENA_ROW events, kept from block to block:
     * memory that came fresh from the heap for each block faulted in every page again
     * (256 files, 10M events: a tenth of the export in the kernel's page faults) */
    int64_t *arena;
    uint64_t arena_cap;
};

/* A row longer than this has its own columns for each block that writes it: room for
 * the whole row is reserved and only its slices touched, so that one huge row does not
 * keep its whole size in the arena. The arena holds at most a block's events and two
 * rows more. */
#define ARENA_ROW ((uint64_t)1 << 16)

static enum sx_status nd_head(void *ctx, struct sx_buf *out, struct sx_error *err) {
    return sx_doc_header(((struct native_doc *)ctx)->doc, out, err);
}

static enum sx_status nd_tail(void *ctx, struct sx_buf *out, struct sx_error *err) {
    return sx_doc_trailer(((struct native_doc *)ctx)->doc, out, err);
}

/* The events of segment 'seg' (SX_SEG_START or SX_SEG_END) of row 'i' in [from, to). */
static void seg_range(const struct sx_block *bl, uint64_t i, unsigned seg, uint64_t count,
                      uint64_t *a, uint64_t *z) {
    *a = 0;
    *z = count;
    if (i == bl->from.row)
        *a = bl->from.seg < seg ? 0 : bl->from.seg == seg ? bl->from.ev : count;
    if (i == bl->to.row)
        *z = bl->to.seg < seg ? 0 : bl->to.seg == seg ? bl->to.ev : count;
}

/* A slice of a row this rank reads for a block. */
struct read_job {
    uint64_t i; /* doc row */
    uint32_t file, row;
};

static int cmp_job(const void *a, const void *b) {
    const struct read_job *x = a, *y = b;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* Read the slices of doc row 'i' that block 'bl' writes into the row's columns. */
/* Progress: the plan's rows and events, as the JSON profile's. */
static uint64_t nd_units(void *ctx, size_t b) {
    return ((const struct native_doc *)ctx)->doc->blocks[b].units;
}

static enum sx_status read_row(struct native_doc *nd, const struct sx_block *bl,
                               uint64_t i, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const uint64_t ri = nd->doc->order[i];
    struct sx_row *row = &nd->nr->run->rows[ri];
    const struct sx_nloc *l = &nd->nr->loc[ri];
    uint64_t a[2], z[2];
    int64_t *col[2];
    for (int c = 0; c < 2; c++) {
        seg_range(bl, i, c == 0 ? SX_SEG_START : SX_SEG_END, row->count, &a[c], &z[c]);
        col[c] = a[c] < z[c] ? row->col[c] : NULL;
    }
    /* one read when the slices are the same, two otherwise */
    if (col[0] != NULL && col[1] != NULL && a[0] == a[1] && z[0] == z[1])
        return sx_native_read_events(&nd->rd, nd->nr, l, a[0], z[0] - a[0], col[0] + a[0],
                                     col[1] + a[0], err);
    for (int c = 0; st == SX_OK && c < 2; c++)
        if (col[c] != NULL)
            st = sx_native_read_events(&nd->rd, nd->nr, l, a[c], z[c] - a[c],
                                       c == 0 ? col[0] + a[0] : NULL,
                                       c == 1 ? col[1] + a[1] : NULL, err);
    return st;
}

/*
 * Block 'b': load the slices of the event columns it writes into the run's
 * rows (room for a whole row is reserved, only the slices are touched), let
 * the document code format them, and free them again. Rows of this rank's
 * files are read file by file; the others came in the exchange.
 */
static enum sx_status nd_block(void *ctx, size_t b, struct sx_buf *out,
                               struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct native_doc *nd = ctx;
    const struct sx_doc *doc = nd->doc;
    const struct sx_block *bl = &doc->blocks[b];
    struct sx_run *run = nd->nr->run;
    struct read_job *jobs = NULL;
    size_t njobs = 0;
    uint64_t last = bl->to.row;
    if (last >= doc->nrows)
        last = doc->nrows - 1;
    if (doc->nrows > 0) {
        jobs = sx_malloc((last - bl->from.row + 1) * sizeof *jobs);
        SX_CHECK(jobs != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
    }
    /* room: the arena for the short rows, grown (never shrunk) to the largest block */
    uint64_t need = 0, used = 0;
    for (uint64_t i = bl->from.row; doc->nrows > 0 && i <= last; i++) {
        const uint64_t ri = doc->order[i];
        const uint64_t count = run->rows[ri].count;
        const bool mine = nd->nr->owner[nd->nr->loc[ri].file] == nd->rank;
        for (int c = 0; c < 2; c++)
            if ((mine || nd->remote[c][ri] == NULL) && count < ARENA_ROW)
                need += count + 1;
    }
    if (need > nd->arena_cap) {
        free(nd->arena);
        nd->arena = sx_malloc(need * sizeof *nd->arena);
        nd->arena_cap = nd->arena != NULL ? need : 0;
        SX_CHECK(nd->arena != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
    }
    for (uint64_t i = bl->from.row; doc->nrows > 0 && i <= last; i++) {
        const uint64_t ri = doc->order[i];
        struct sx_row *row = &run->rows[ri];
        const struct sx_nloc *l = &nd->nr->loc[ri];
        const bool mine = nd->nr->owner[l->file] == nd->rank;
        for (int c = 0; c < 2; c++) {
            if (!mine && nd->remote[c][ri] != NULL) {
                row->col[c] = nd->remote[c][ri]; /* received; freed after the stream */
                continue;
            }
            if (row->count < ARENA_ROW) {
                row->col[c] = nd->arena + used;
                used += row->count + 1;
                continue;
            }
            row->col[c] = sx_malloc((row->count + 1) * sizeof *row->col[c]);
            SX_CHECK(row->col[c] != NULL, SX_ERR_NOMEM, err, nd->nr->files[l->file].path,
                     "out of memory");
        }
        if (mine)
            jobs[njobs++] = (struct read_job){i, l->file, l->row};
    }
    if (njobs > 1) /* qsort wants a valid array even for none */
        qsort(jobs, njobs, sizeof *jobs, cmp_job);
    for (size_t k = 0; k < njobs && st == SX_OK; k++)
        st = read_row(nd, bl, jobs[k].i, err);
    if (st == SX_OK)
        st = sx_doc_block(doc, &(struct sx_event_source){NULL, NULL}, NULL, NULL, b, out,
                          err);
out:
    for (uint64_t i = bl->from.row; doc->nrows > 0 && i <= last; i++) {
        struct sx_row *row = &run->rows[doc->order[i]];
        for (int c = 0; c < 2; c++) {
            if (row->col[c] != nd->remote[c][doc->order[i]] && row->count >= ARENA_ROW)
                free(row->col[c]);
            row->col[c] = NULL;
        }
    }
    free(jobs);
    return st;
}

/* ------------------------------------------------------------------ */
/* Before the stream: the events of each block that other ranks read   */

/* Events per message of the exchange (and per read for it). */
#define XFER_EVENTS (1u << 20)

struct xfer {
    uint64_t row; /* run row */
    uint64_t a, z;
    int col; /* 0 start, 1 end */
    int src, dst;
};

static int cmp_xfer(const void *a, const void *b, void *ctx) {
    const struct sx_nloc *sort_loc = ctx;
    const struct xfer *x = a, *y = b;
    const struct sx_nloc *p = &sort_loc[x->row], *q = &sort_loc[y->row];
    if (p->file != q->file)
        return p->file < q->file ? -1 : 1;
    if (p->row != q->row)
        return p->row < q->row ? -1 : 1;
    if (x->col != y->col)
        return x->col - y->col;
    return x->a < y->a ? -1 : x->a > y->a;
}

/*
 * Every piece of an event column that a block's owner formats but another
 * rank reads (the one its file was given to), in file order. The same list
 * on every rank.
 */
static enum sx_status plan_xfers(const struct native_doc *nd, int size, bool gz,
                                 struct xfer **out, size_t *nout, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_doc *doc = nd->doc;
    const struct sx_run *run = nd->nr->run;
    struct xfer *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t b = 0; b < doc->nblocks && doc->nrows > 0; b++) {
        const struct sx_block *bl = &doc->blocks[b];
        const int dst = sx_stream_owner(b, size, gz);
        uint64_t last = bl->to.row < doc->nrows ? bl->to.row : doc->nrows - 1;
        for (uint64_t i = bl->from.row; i <= last; i++) {
            const uint64_t ri = doc->order[i];
            const int src = nd->nr->owner[nd->nr->loc[ri].file];
            if (src == dst)
                continue;
            for (int c = 0; c < 2; c++) {
                uint64_t a, z;
                seg_range(bl, i, c == 0 ? SX_SEG_START : SX_SEG_END, run->rows[ri].count,
                          &a, &z);
                for (; a < z; a += XFER_EVENTS) {
                    if (n == cap) {
                        size_t nc = cap ? cap * 2 : 256;
                        struct xfer *nv = sx_realloc(v, nc * sizeof *nv);
                        SX_CHECK(nv != NULL, SX_ERR_NOMEM, err, run->path,
                                 "out of memory");
                        v = nv;
                        cap = nc;
                    }
                    uint64_t e = z - a < XFER_EVENTS ? z : a + XFER_EVENTS;
                    v[n++] = (struct xfer){ri, a, e, c, src, dst};
                }
            }
        }
    }
    /* read file by file: the same order on every rank, so sends meet their receives */
    if (n > 1)
        qsort_r(v, n, sizeof *v, cmp_xfer, (void *)nd->nr->loc);
out:
    if (st != SX_OK) {
        free(v);
        v = NULL;
        n = 0;
    }
    *out = v;
    *nout = n;
    return st;
}

/* Room for the events this rank receives: whole rows reserved, pieces touched. */
static enum sx_status alloc_remote(struct native_doc *nd, const struct xfer *x, size_t n,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_run *run = nd->nr->run;
    for (int c = 0; c < 2; c++) {
        nd->remote[c] = sx_calloc(run->nrows + 1, sizeof *nd->remote[c]);
        SX_CHECK(nd->remote[c] != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        int64_t **p = &nd->remote[x[i].col][x[i].row];
        if (x[i].dst != nd->rank || *p != NULL)
            continue;
        *p = sx_malloc((run->rows[x[i].row].count + 1) * sizeof **p);
        SX_CHECK(*p != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
    }
out:
    return st;
}

static void free_remote(struct native_doc *nd) {
    for (int c = 0; c < 2; c++) {
        for (size_t r = 0; nd->remote[c] != NULL && r < nd->nr->run->nrows; r++)
            free(nd->remote[c][r]);
        free(nd->remote[c]);
        nd->remote[c] = NULL;
    }
}

/*
 * NOTE: collective (point to point between every pair that has pieces).
 * Every receive is posted first, into the rows' final places; then each
 * rank reads its pieces in list order and sends them, so no send waits on
 * a receive that is not posted. A rank whose read fails still sends (the
 * bytes are then meaningless) and reports the failure afterwards.
 */
static enum sx_status exchange(MPI_Comm c, struct native_doc *nd, const struct xfer *x,
                               size_t n, struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t nrecv = 0, k = 0;
    MPI_Request *req = NULL;
    int64_t *buf = NULL;
    for (size_t i = 0; i < n; i++)
        nrecv += x[i].dst == nd->rank;
    req = sx_malloc((nrecv + 1) * sizeof *req);
    buf = sx_malloc(XFER_EVENTS * sizeof *buf);
    int ok = req != NULL && buf != NULL, all = 0;
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c) != MPI_SUCCESS || !all) {
        st = sx_error_set(err, SX_ERR_NOMEM, nd->nr->run->path,
                          "out of memory for the exchange of events");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (x[i].dst != nd->rank)
            continue;
        if (MPI_Irecv(nd->remote[x[i].col][x[i].row] + x[i].a, (int)(x[i].z - x[i].a),
                      MPI_INT64_T, x[i].src, 21, c, &req[k]) != MPI_SUCCESS) {
            req[k] = MPI_REQUEST_NULL;
            st = sx_error_set(err, SX_ERR_MPI, nd->nr->run->path,
                              "MPI_Irecv failed in the exchange of events");
        }
        k++;
    }
    for (size_t i = 0; i < n; i++) {
        if (x[i].src != nd->rank)
            continue;
        const struct sx_nloc *l = &nd->nr->loc[x[i].row];
        if (st == SX_OK)
            st = sx_native_read_events(&nd->rd, nd->nr, l, x[i].a, x[i].z - x[i].a,
                                       x[i].col == 0 ? buf : NULL,
                                       x[i].col == 1 ? buf : NULL, err);
        if (MPI_Send(buf, (int)(x[i].z - x[i].a), MPI_INT64_T, x[i].dst, 21, c) !=
                MPI_SUCCESS &&
            st == SX_OK)
            st = sx_error_set(err, SX_ERR_MPI, nd->nr->run->path,
                              "MPI_Send failed in the exchange of events");
    }
    if (MPI_Waitall((int)k, req, MPI_STATUSES_IGNORE) != MPI_SUCCESS && st == SX_OK)
        st = sx_error_set(err, SX_ERR_MPI, nd->nr->run->path,
                          "receiving events from another rank failed");
out:
    free(req);
    free(buf);
    return st;
}

/* The JSON profile of a native run as a stream producer, with the exchange's state. */
struct native_json {
    struct sx_doc doc;
    struct native_doc nd;
    struct xfer *xf;
};

static void native_json_free(void *ctx) {
    struct native_json *j = ctx;
    if (j == NULL)
        return;
    sx_nreader_close(&j->nd.rd);
    if (j->nd.nr != NULL)
        free_remote(&j->nd);
    free(j->nd.arena);
    free(j->xf);
    sx_doc_free(&j->doc);
    free(j);
}

/*
 * NOTE: collective over 'p->comm'. The plan, the same on every rank; then
 * the pieces of the blocks other ranks read, sent to the blocks' owners.
 */
enum sx_status sx_native_json_plan(const struct sx_pipe *p, struct sx_doc_state *d,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t nxf = 0;
    struct native_json *j = sx_calloc(1, sizeof *j);
    d->ctx = j;
    d->free = native_json_free;
    if (j == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, p->input, "out of memory");
    if (st == SX_OK) {
        j->nd.rd.fd = -1;
        st =
            sx_doc_plan(&j->doc, p->run, p->filter, p->o->indent, p->o->block_bytes, err);
    }
    st = sx_all_ok(p->comm, st, err);
    if (st != SX_OK)
        return st;

    /* Stages: the pieces other ranks read, then the exchange. */
    j->nd.nr = p->nr;
    j->nd.doc = &j->doc;
    j->nd.rank = p->rank;
    st = plan_xfers(&j->nd, p->size, sx_out_is_gz(p->output), &j->xf, &nxf, err);
    if (st == SX_OK)
        st = alloc_remote(&j->nd, j->xf, nxf, err);
    st = sx_all_ok(p->comm, st, err);
    if (st == SX_OK && p->comm != MPI_COMM_NULL && nxf > 0) {
        st = exchange(p->comm, &j->nd, j->xf, nxf, err);
        st = sx_all_ok(p->comm, st, err);
    }
    d->prod = (struct sx_producer){.ctx = &j->nd,
                                   .nblocks = j->doc.nblocks,
                                   .total_bytes = j->doc.total_units,
                                   .head = nd_head,
                                   .tail = nd_tail,
                                   .block = nd_block,
                                   .block_units = nd_units};
    return st;
}

/* ------------------------------------------------------------------ */
/* import-native: the merged run as a schema-3 file                    */

enum sx_status sx_import_native(MPI_Comm comm, const char *const *inputs, size_t n_inputs,
                                const char *output, const char *label,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    MPI_Comm c = MPI_COMM_NULL;
    struct sx_native *nr = NULL;
    struct sx_h5w *w = NULL;
    struct sx_h5w_spec spec;
    const struct sx_row **rows = NULL;
    int64_t *buf[2] = {NULL, NULL};
    struct sx_nreader rd = {.fd = -1};
    struct sx_error local;
    int rank = 0;

    sx_error_clear(&local);
    if (err == NULL)
        err = &local;
    sx_error_clear(err);
    st = sx_comm_dup(comm, &c, err);
    if (st != SX_OK)
        return st;
    if (c != MPI_COMM_NULL)
        MPI_Comm_rank(c, &rank);
    if (output == NULL || (n_inputs > 0 && inputs == NULL))
        st = sx_error_set(err, SX_ERR_USAGE, "", "inputs and an output needed");
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;
    st = sx_native_open(c, inputs, n_inputs, label, output, &nr, err);
    if (st != SX_OK)
        goto out;

    /* Stage: memory for the copy, the index rows; the output is not an input */
    const struct sx_run *run = nr->run;
    rows = sx_calloc(run->nrows + 1, sizeof *rows);
    for (int k = 0; k < 2; k++)
        buf[k] = sx_malloc(COPY_EVENTS * sizeof *buf[k]);
    if (rows == NULL || buf[0] == NULL || buf[1] == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, output, "out of memory");
    for (size_t r = 0; st == SX_OK && r < run->nrows; r++)
        rows[r] = &run->rows[r];
    if (st == SX_OK && rank == 0)
        st = sx_native_check_output(nr, output, err);
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;

    /* NOTE: collective writer: every call on every rank, each row's events by the
     * rank that reads its file */
    sx_h5w_spec_init(&spec);
    spec.meta = true;
    spec.in_memory = true; /* when serial: see h5_write.h */
    st = sx_h5w_create_mpi(c, output, &spec, &w, err);
    if (st != SX_OK)
        goto out;
    if ((st = sx_h5w_metadata(w, &run->metadata, err)) != SX_OK ||
        (st = sx_h5w_names(w, run->names, run->nnames, err)) != SX_OK ||
        (st = sx_h5w_index(w, rows, run->nrows, err)) != SX_OK)
        goto out;
    for (size_t r = 0; r < run->nrows; r++) {
        const struct sx_nloc *l = &nr->loc[r];
        const bool mine = nr->owner[l->file] == rank;
        const uint64_t count = run->rows[r].count;
        uint64_t at = 0;
        do {
            uint64_t n = count - at < COPY_EVENTS ? count - at : COPY_EVENTS;
            if (mine)
                st = sx_native_read_events(&rd, nr, l, at, n, buf[0], buf[1], err);
            st = sx_all_ok(c, st, err);
            if (st != SX_OK)
                goto out;
            const int64_t *col[SX_NCOLS] = {buf[0], buf[1]};
            st = sx_h5w_events(w, r, at, mine ? n : 0, col, err);
            if (st != SX_OK)
                goto out;
            at += n;
        } while (at < count);
    }
    sx_nreader_close(&rd);
    st = sx_h5w_finish(w, err);
    w = NULL;
out:
    sx_nreader_close(&rd);
    sx_h5w_abort(w); /* NOTE: collective, after the same failure on every rank */
    free(buf[0]);
    free(buf[1]);
    free(rows);
    sx_native_free(nr);
    sx_comm_free(&c);
    return st;
}
