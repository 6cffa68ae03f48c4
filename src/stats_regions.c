/* stats_regions.c - region_statistics.json, as scope-profiler's plot-data export writes
 * it */
#define _XOPEN_SOURCE 700 /* realpath */
#include "stats_regions.h"

#include "filter.h"
#include "h5_read.h"
#include "json_load.h"
#include "json_write.h"
#include "mpi_util.h"
#include "np_sum.h"
#include "out_file.h"
#include "pipeline.h"
#include "run.h"
#include "stream.h"
#include "trace.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stats_doc {
    struct sx_trace *t;
    const struct sx_options *o;
    const char *input;
};

/* One (region, rank) row's calls: durations in seconds, in stored order. */
struct rank_calls {
    int64_t rank;
    int64_t row; /* index into run->rows */
    size_t n;
    double *d;
    double first_start, last_end; /* seconds, when n > 0 */
};

static int cmp_rank_calls(const void *a, const void *b) {
    const struct rank_calls *x = *(const struct rank_calls *const *)a,
                            *y = *(const struct rank_calls *const *)b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

static void indent(struct sx_buf *out, int n) {
    sx_buf_putc(out, '\n');
    for (int i = 0; i < n; i++)
        sx_buf_putc(out, ' ');
}

static void key(struct sx_buf *out, int ind, const char *k, bool first) {
    if (!first)
        sx_buf_putc(out, ',');
    indent(out, ind);
    sx_buf_cstr(out, k);
    sx_buf_puts(out, ": ");
}

static void put_double_or_null(struct sx_buf *out, bool has, double v) {
    if (has)
        sx_buf_double(out, v);
    else
        sx_buf_puts(out, "null");
}

/* _stats_from_values: the eight keys at indent 'ind', without the braces. */
static void put_stats(struct sx_buf *out, int ind, const double *v, size_t n,
                      double first, double last, double *tmp) {
    const char *const names[] = {"average_duration_seconds", "min_duration_seconds",
                                 "max_duration_seconds",     "first_duration_seconds",
                                 "last_duration_seconds",    "std_duration_seconds",
                                 "total_duration_seconds"};
    double val[7] = {0};
    if (n > 0) {
        double lo = v[0], hi = v[0];
        for (size_t i = 1; i < n; i++) {
            if (v[i] < lo)
                lo = v[i];
            if (v[i] > hi)
                hi = v[i];
        }
        const double sum = sx_np_sum(v, n);
        val[0] = sum / (double)n;
        val[1] = lo;
        val[2] = hi;
        val[3] = first;
        val[4] = last;
        val[5] = sx_np_std(v, n, tmp);
        val[6] = sum;
    }
    key(out, ind, "count", true);
    sx_buf_u64(out, n);
    for (int k = 0; k < 7; k++) {
        key(out, ind, names[k], false);
        put_double_or_null(out, n > 0, val[k]);
    }
}

/* Read the durations of 'rc''s row (local). */
static enum sx_status load_calls(const struct sx_trace *t, struct rank_calls *rc,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    int64_t *room_s = NULL, *room_e = NULL;
    const struct sx_row *row = &t->run->rows[rc->row];
    rc->n = 0;
    if (row->is_aggregate || row->count == 0)
        return SX_OK;
    const size_t n = (size_t)row->count;
    room_s = sx_malloc(n * sizeof *room_s);
    room_e = sx_malloc(n * sizeof *room_e);
    rc->d = sx_malloc(n * sizeof *rc->d);
    SX_CHECK(room_s != NULL && room_e != NULL && rc->d != NULL, SX_ERR_NOMEM, err,
             t->run->path, "%s: out of memory reading the events of a region",
             t->run->path);
    int64_t *room[SX_NCOLS] = {0};
    const int64_t *col[SX_NCOLS] = {0};
    room[SX_COL_START] = room_s;
    room[SX_COL_END] = room_e;
    st = sx_trace_slice(t, row, 0, row->count,
                        SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END), room, col, err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(col[SX_COL_START] != NULL && col[SX_COL_END] != NULL, SX_ERR_FORMAT, err,
             t->run->path, "%s: a row with calls has no start or end times",
             t->run->path);
    int64_t lo = col[SX_COL_START][0], hi = col[SX_COL_END][0];
    for (size_t i = 0; i < n; i++) {
        const int64_t s = col[SX_COL_START][i], e = col[SX_COL_END][i];
        rc->d[i] = (double)(e - s) / 1e9;
        if (s < lo)
            lo = s;
        if (e > hi)
            hi = e;
    }
    rc->first_start = (double)lo / 1e9;
    rc->last_end = (double)hi / 1e9;
    rc->n = n;
out:
    free(room_s);
    free(room_e);
    return st;
}

static bool rank_selected(const struct sx_options *o, int64_t rank) {
    if (o->ranks == NULL)
        return true;
    for (size_t i = 0; i < o->n_ranks; i++)
        if (o->ranks[i] == rank)
            return true;
    return false;
}

/* Block b: region position b, with its pooled and per-rank statistics. */
static enum sx_status region_block(void *ctx, size_t b, struct sx_buf *out,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct stats_doc *sd = ctx;
    const struct sx_trace *t = sd->t;
    const struct sx_options *o = sd->o;
    /* the region's rows, by rank (a list: num_ranks may be far larger than its rows) */
    const size_t lo = t->row_start[b], nrows = t->row_start[b + 1] - lo;
    struct rank_calls *rc = NULL;
    const struct rank_calls **pool = NULL, **byrank = NULL;
    double *values = NULL, *tmp = NULL;
    size_t nrc = 0, npool = 0, nvalues = 0, most = 0;

    rc = sx_calloc(nrows + 1, sizeof *rc);
    pool = sx_calloc((o->ranks ? o->n_ranks : nrows) + 1, sizeof *pool);
    SX_CHECK(rc != NULL && pool != NULL, SX_ERR_NOMEM, err, t->run->path,
             "out of memory");
    /* The region's ranks in the order the reader met their rows (its dict's order). */
    for (size_t i = 0; i < nrows; i++) {
        const int64_t k = t->row_of[lo + i].rank, r = t->row_of[lo + i].row;
        size_t at = nrc++;
        while (at > 0 && rc[at - 1].row > r) {
            rc[at] = rc[at - 1];
            at--;
        }
        rc[at] = (struct rank_calls){k, r, 0, NULL, 0.0, 0.0};
    }
    for (size_t i = 0; i < nrc; i++) {
        if (!rank_selected(o, rc[i].rank))
            continue;
        st = load_calls(t, &rc[i], err);
        if (st != SX_OK)
            goto out;
        if (rc[i].n > most)
            most = rc[i].n;
    }
    /* The pooled calls: the region's ranks, or the selected ones in the order given. */
    if (o->ranks == NULL) {
        for (size_t i = 0; i < nrc; i++)
            pool[npool++] = &rc[i];
    } else {
        for (size_t j = 0; j < o->n_ranks; j++)
            for (size_t i = 0; i < nrc; i++)
                if (rc[i].rank == o->ranks[j]) {
                    pool[npool++] = &rc[i];
                    break;
                }
    }
    const struct rank_calls *first = NULL, *last = NULL;
    for (size_t i = 0; i < npool; i++) {
        nvalues += pool[i]->n;
        if (pool[i]->n == 0)
            continue;
        if (first == NULL || pool[i]->first_start < first->first_start)
            first = pool[i];
        if (last == NULL || pool[i]->last_end > last->last_end)
            last = pool[i];
    }
    if (nvalues > most)
        most = nvalues;
    values = sx_malloc((nvalues + 1) * sizeof *values);
    tmp = sx_malloc((most + 1) * sizeof *tmp);
    SX_CHECK(values != NULL && tmp != NULL, SX_ERR_NOMEM, err, t->run->path,
             "%s: out of memory for the durations of a region", t->run->path);
    size_t at = 0;
    for (size_t i = 0; i < npool; i++) {
        if (pool[i]->n > 0)
            memcpy(values + at, pool[i]->d, pool[i]->n * sizeof *values);
        at += pool[i]->n;
    }

    if (b > 0)
        sx_buf_putc(out, ',');
    indent(out, 8);
    sx_buf_append(out, t->jname[b], t->jname_len[b]);
    sx_buf_puts(out, ": {");
    put_stats(out, 10, values, nvalues, first ? first->d[0] : 0.0,
              last ? last->d[last->n - 1] : 0.0, tmp);
    key(out, 10, "per_rank", false);
    sx_buf_putc(out, '{');
    bool any = false;
    /* ranks ascending; a rank's first row in reading order where it has two */
    byrank = sx_malloc((nrc + 1) * sizeof *byrank);
    SX_CHECK(byrank != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
    for (size_t i = 0; i < nrc; i++)
        byrank[i] = &rc[i];
    qsort(byrank, nrc, sizeof *byrank, cmp_rank_calls);
    for (size_t i = 0; i < nrc; i++) {
        const struct rank_calls *c = byrank[i];
        const int64_t k = c->rank;
        if ((i > 0 && byrank[i - 1]->rank == k) || !rank_selected(o, k))
            continue;
        char name[32];
        snprintf(name, sizeof name, "%lld", (long long)k);
        key(out, 12, name, !any);
        sx_buf_putc(out, '{');
        put_stats(out, 14, c->d, c->n, c->n ? c->d[0] : 0.0, c->n ? c->d[c->n - 1] : 0.0,
                  tmp);
        indent(out, 12);
        sx_buf_putc(out, '}');
        any = true;
    }
    if (any)
        indent(out, 10);
    sx_buf_putc(out, '}');
    indent(out, 8);
    sx_buf_putc(out, '}');
    SX_CHECK(!out->failed, SX_ERR_NOMEM, err, t->run->path, "out of memory");
out:
    for (size_t i = 0; rc != NULL && i < nrc; i++)
        free(rc[i].d);
    free(rc);
    free(byrank);
    free(pool);
    free(values);
    free(tmp);
    return st;
}

static void put_str_list(struct sx_buf *out, int ind, const char *const *s, size_t n) {
    if (s == NULL) {
        sx_buf_puts(out, "null");
        return;
    }
    sx_buf_putc(out, '[');
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sx_buf_putc(out, ',');
        indent(out, ind + 2);
        sx_buf_cstr(out, s[i]);
    }
    if (n > 0)
        indent(out, ind);
    sx_buf_putc(out, ']');
}

static enum sx_status doc_head(void *ctx, struct sx_buf *out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct stats_doc *sd = ctx;
    const struct sx_trace *t = sd->t;
    const struct sx_options *o = sd->o;
    char *abs = realpath(sd->input, NULL); /* str(Path(input).resolve()) */
    sx_buf_puts(out, "{");
    key(out, 2, "format", true);
    sx_buf_cstr(out, "scope-profiler-plot-data");
    key(out, 2, "format_version", false);
    sx_buf_puts(out, "1");
    key(out, 2, "plot", false);
    sx_buf_cstr(out, "region_statistics");
    key(out, 2, "units", false);
    sx_buf_puts(out, "{\n    \"durations\": \"seconds\"\n  }");
    key(out, 2, "filters", false);
    sx_buf_putc(out, '{');
    key(out, 4, "include", true);
    put_str_list(out, 4, o->include, o->n_include);
    key(out, 4, "exclude", false);
    put_str_list(out, 4, o->exclude, o->n_exclude);
    key(out, 4, "ranks", false);
    if (o->ranks == NULL) {
        sx_buf_puts(out, "null");
    } else {
        sx_buf_putc(out, '[');
        for (size_t i = 0; i < o->n_ranks; i++) {
            if (i > 0)
                sx_buf_putc(out, ',');
            indent(out, 6);
            sx_buf_i64(out, o->ranks[i]);
        }
        if (o->n_ranks > 0)
            indent(out, 4);
        sx_buf_putc(out, ']');
    }
    indent(out, 2);
    sx_buf_putc(out, '}');
    key(out, 2, "common_regions", false);
    sx_buf_putc(out, '[');
    for (size_t p = 0; p < t->nregions; p++) {
        if (p > 0)
            sx_buf_putc(out, ',');
        indent(out, 4);
        sx_buf_append(out, t->jname[p], t->jname_len[p]);
    }
    if (t->nregions > 0)
        indent(out, 2);
    sx_buf_putc(out, ']');
    key(out, 2, "files", false);
    sx_buf_putc(out, '[');
    indent(out, 4);
    sx_buf_putc(out, '{');
    key(out, 6, "label", true);
    sx_buf_cstr(out, t->label);
    key(out, 6, "file_path", false);
    sx_buf_cstr(out, abs != NULL ? abs : sd->input);
    key(out, 6, "num_ranks", false);
    sx_buf_i64(out, t->run->num_ranks);
    key(out, 6, "total_time_seconds", false);
    double start = 0.0, fin = 0.0;
    const bool has_total = sx_trace_meta_double(t->run, "start_time_ns", &start) &&
                           sx_trace_meta_double(t->run, "finalize_time_ns", &fin);
    put_double_or_null(out, has_total, fin / 1e9 - start / 1e9);
    key(out, 6, "region_statistics", false);
    sx_buf_putc(out, '{');
    if (t->nregions == 0)
        sx_buf_putc(out, '}');
    free(abs);
    SX_CHECK(!out->failed, SX_ERR_NOMEM, err, t->run->path, "out of memory");
out:
    return st;
}

static enum sx_status doc_tail(void *ctx, struct sx_buf *out, struct sx_error *err) {
    const struct stats_doc *sd = ctx;
    enum sx_status st = SX_OK;
    if (sd->t->nregions > 0) {
        indent(out, 6);
        sx_buf_putc(out, '}');
    }
    sx_buf_puts(out, "\n    }\n  ]\n}\n");
    SX_CHECK(!out->failed, SX_ERR_NOMEM, err, sd->t->run->path, "out of memory");
out:
    return st;
}

/* Progress counts calls, and one for each region. */
static uint64_t doc_units(void *ctx, size_t b) {
    const struct sx_trace *t = ((const struct stats_doc *)ctx)->t;
    uint64_t n = 1;
    for (size_t i = t->row_start[b]; i < t->row_start[b + 1]; i++) {
        const struct sx_row *row = &t->run->rows[t->row_of[i].row];
        if (!row->is_aggregate)
            n += row->count;
    }
    return n;
}

/* The document's state: the plan and the producer's. */
struct stats_state {
    struct sx_trace t; /* first: sx_pipe_trace_state */
    struct stats_doc sd;
};

static void stats_free(void *ctx) {
    struct stats_state *s = ctx;
    if (s == NULL)
        return;
    sx_trace_free(&s->t);
    free(s);
}

/*
 * NOTE: collective over 'p->comm'. The region order, with the ranks'
 * agreement between its stages; the producer in 'ds->prod', a block per region.
 */
static enum sx_status stats_plan(const struct sx_pipe *p, struct sx_doc_state *ds,
                                 struct sx_error *err) {
    /* Stages: the state, the region order (NOTE: collective). */
    enum sx_status st =
        sx_pipe_trace_state(p, ds, sizeof(struct stats_state), stats_free, err);
    if (st != SX_OK)
        return st;
    struct stats_state *s = ds->ctx;
    s->sd = (struct stats_doc){&s->t, p->o, p->input};
    uint64_t units = 0;
    for (size_t b = 0; b < s->t.nregions; b++)
        units += doc_units(&s->sd, b);
    ds->prod = (struct sx_producer){.ctx = &s->sd,
                                    .nblocks = s->t.nregions,
                                    .total_bytes = units,
                                    .head = doc_head,
                                    .tail = doc_tail,
                                    .block = region_block,
                                    .block_units = doc_units};
    return SX_OK;
}

const struct sx_doc_type sx_doc_stats = {
    .format = SX_FORMAT_REGION_STATISTICS,
    .events_for = "region statistics need",
    .needs = SX_NEED_JSON_INPUT,
    .plan = stats_plan,
};
