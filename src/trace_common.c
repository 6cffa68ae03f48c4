/* trace_common.c - what the trace documents share: region order, selection, lanes */
#define _GNU_SOURCE /* qsort_r: the sort context per call, not in a global */
#include "filter.h"
#include "h5_read.h"
#include "json_value.h"
#include "json_write.h"
#include "run.h"
#include "trace.h"

#include <ctype.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CHUNK_EVENTS = 1 << 20 };

static double s_of(int64_t ns) { return (double)ns / 1e9; }

/* Region.first_start_time of one row, in seconds. */
static double row_first(const struct sx_trace *t, size_t r) {
    const struct sx_row *row = &t->run->rows[r];
    if (row->is_aggregate) {
        for (size_t k = 0; k < row->nagg; k++)
            if (row->agg[k].key == SX_AGG_START_MINIMUM)
                return row->agg[k].is_float ? row->agg[k].f / 1e9 : s_of(row->agg[k].i);
        return 0.0;
    }
    return row->count > 0 ? s_of(t->row_min[r]) : 0.0;
}

/*
 * Events [first, first + n) of 'row' into 'out[c]' for the columns in 'cols':
 * from the HDF5 run 'h5', else in one slice from 'events'. Local.
 */
static enum sx_status read_events(const struct sx_run *run, struct sx_h5 *h5,
                                  const struct sx_event_source *events,
                                  const struct sx_row *row, uint64_t first, uint64_t n,
                                  unsigned cols, int64_t *const out[SX_NCOLS],
                                  struct sx_error *err) {
    if (h5 != NULL)
        return sx_h5_read_events(h5, run, row, first, n, cols, out, err);
    if (events == NULL || events->ops == NULL || events->ops->read_slices == NULL)
        return sx_error_set(err, SX_ERR_INTERNAL, run->path,
                            "%s: events of a row are neither loaded nor readable",
                            run->path);
    struct sx_slice s = {row, first, n, cols, {0}};
    for (int c = 0; c < SX_NCOLS; c++)
        s.col[c] = (cols & SX_COLBIT(c)) ? out[c] : NULL;
    return events->ops->read_slices(events->ctx, run, &s, 1, err);
}

enum sx_status sx_trace_row_mins(const struct sx_run *run, struct sx_h5 *h5,
                                 const struct sx_event_source *events, int rank, int size,
                                 int64_t **mins, struct sx_error *err) {
    enum sx_status st = SX_OK;
    int64_t *buf = NULL;
    int64_t *m = sx_malloc((run->nrows + 1) * sizeof *m);
    *mins = NULL;
    SX_CHECK(m != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
    for (size_t r = 0; r < run->nrows; r++)
        m[r] = INT64_MAX;
    for (size_t r = (size_t)rank; r < run->nrows; r += (size_t)size) {
        const struct sx_row *row = &run->rows[r];
        if (row->is_aggregate || row->count == 0)
            continue;
        if (row->col[SX_COL_START] != NULL) {
            for (uint64_t i = 0; i < row->count; i++)
                if (row->col[SX_COL_START][i] < m[r])
                    m[r] = row->col[SX_COL_START][i];
            continue;
        }
        if (buf == NULL) {
            buf = sx_malloc(CHUNK_EVENTS * sizeof *buf);
            SX_CHECK(buf != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
        }
        for (uint64_t at = 0; at < row->count; at += CHUNK_EVENTS) {
            uint64_t n = row->count - at < CHUNK_EVENTS ? row->count - at : CHUNK_EVENTS;
            int64_t *out[SX_NCOLS] = {0};
            out[SX_COL_START] = buf;
            st = read_events(run, h5, events, row, at, n, SX_COLBIT(SX_COL_START), out,
                             err);
            if (st != SX_OK)
                goto out;
            for (uint64_t i = 0; i < n; i++)
                if (buf[i] < m[r])
                    m[r] = buf[i];
        }
    }
out:
    free(buf);
    if (st != SX_OK) {
        free(m);
        m = NULL;
    }
    *mins = m;
    return st;
}

/* float(value) of a metadata value, as _metadata_time converts it; false if it cannot. */
static bool value_as_double(const struct sx_value *v, double *out) {
    switch (v->kind) {
    case SX_V_BOOL:
        *out = v->u.b ? 1.0 : 0.0;
        return true;
    case SX_V_INT:
        *out = (double)v->u.i;
        return true;
    case SX_V_UINT:
        *out = (double)v->u.u;
        return true;
    case SX_V_FLOAT:
        *out = v->u.f;
        return true;
    case SX_V_STR: {
        /* float(str): surrounding whitespace, '_' between digits */
        const char *s = v->u.str.s;
        size_t n = v->u.str.len;
        while (n > 0 && isspace((unsigned char)*s)) {
            s++;
            n--;
        }
        while (n > 0 && isspace((unsigned char)s[n - 1]))
            n--;
        if (n == 0 || n > 400)
            return false;
        char tmp[512];
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '_') {
                if (i == 0 || i + 1 == n || !isdigit((unsigned char)s[i - 1]) ||
                    !isdigit((unsigned char)s[i + 1]))
                    return false;
                continue;
            }
            if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '+' &&
                s[i] != '-')
                return false;
            tmp[k++] = s[i];
        }
        tmp[k] = '\0';
        if (tmp[0] == '0' && (tmp[1] == 'x' || tmp[1] == 'X'))
            return false; /* float() takes no hex */
        char *end = NULL;
        double d = strtod(tmp, &end);
        if (end == tmp || *end != '\0')
            return false;
        *out = d;
        return true;
    }
    default:
        return false;
    }
}

static const struct sx_value *meta_get(const struct sx_run *run, const char *key) {
    if (run->metadata.kind != SX_V_OBJECT)
        return NULL;
    for (size_t i = 0; i < run->metadata.u.obj.n; i++)
        if (strcmp(run->metadata.u.obj.items[i].key, key) == 0)
            return &run->metadata.u.obj.items[i].value;
    return NULL;
}

bool sx_trace_meta_double(const struct sx_run *run, const char *key, double *out) {
    const struct sx_value *v = meta_get(run, key);
    return v != NULL && value_as_double(v, out);
}

/* display_label: the metadata label when non-empty (str() of it), else the file stem. */
static char *run_label(const struct sx_run *run) {
    const struct sx_value *v = meta_get(run, "label");
    if (v != NULL && v->kind == SX_V_STR && v->u.str.len > 0)
        return sx_strdup(v->u.str.s);
    const char *path = run->path ? run->path : "";
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    const char *dot = strrchr(name, '.');
    return dot && dot != name ? sx_strndup(name, (size_t)(dot - name)) : sx_strdup(name);
}

/* Regions of one name index on 'rank': the later row wins, as in the reader's dict. */
static int cmp_region_key(const void *a, const void *b, const double *key) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (key[x] != key[y])
        return key[x] < key[y] ? -1 : 1;
    return (x > y) - (x < y); /* stable: region table order */
}

static int cmp_rank_row(const void *a, const void *b) {
    const struct sx_rank_row *x = a, *y = b;
    if (x->region != y->region)
        return x->region < y->region ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

static int cmp_regions(const void *a, const void *b, void *ctx) {
    return cmp_region_key(a, b, ctx);
}

enum sx_status sx_trace_plan(struct sx_trace *t, struct sx_run *run, struct sx_h5 *h5,
                             const struct sx_event_source *events,
                             const struct sx_filter *filter, const struct sx_options *o,
                             int64_t *row_min, struct sx_error *err) {
    enum sx_status st = SX_OK;
    double *key = NULL;
    bool *has = NULL;
    uint32_t *all = NULL;
    struct sx_rank_row *last = NULL;
    size_t *gstart = NULL;
    memset(t, 0, sizeof *t);
    t->run = run;
    t->h5 = h5;
    t->events = h5 == NULL ? events : NULL;
    t->filter = filter;
    t->row_min = row_min;
    const size_t nn = run->nnames;
    const int64_t nr = run->num_ranks > 0 ? run->num_ranks : 0;

    t->label = o->label != NULL ? sx_strdup(o->label) : run_label(run);
    SX_CHECK(t->label != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
    if (o->ranks != NULL) {
        t->ranks = sx_malloc((o->n_ranks + 1) * sizeof *t->ranks);
        SX_CHECK(t->ranks != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
        memcpy(t->ranks, o->ranks, o->n_ranks * sizeof *t->ranks);
        t->nranks = o->n_ranks;
    } else {
        t->ranks = sx_malloc(sizeof *t->ranks);
        SX_CHECK(t->ranks != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
        t->ranks[0] = 0;
        t->nranks = 1;
    }

    /* Each region's rows by rank (the later row wins), its sort key and origin. */
    key = sx_calloc(nn + 1, sizeof *key);
    has = sx_calloc(nn + 1, sizeof *has);
    /* as a list, not a table of regions x num_ranks: num_ranks comes from the
     * file, and one damaged rank would make the table take terabytes */
    last = sx_malloc((run->nrows + 1) * sizeof *last);
    gstart = sx_calloc(nn + 2, sizeof *gstart);
    SX_CHECK(key != NULL && has != NULL && last != NULL && gstart != NULL, SX_ERR_NOMEM,
             err, run->path, "out of memory");
    size_t nlast = 0;
    for (size_t r = 0; r < run->nrows; r++) {
        const struct sx_row *row = &run->rows[r];
        if (row->rank < 0 || row->rank >= nr || row->region >= nn)
            continue;
        last[nlast++] = (struct sx_rank_row){row->region, row->rank, (int64_t)r};
    }
    qsort(last, nlast, sizeof *last, cmp_rank_row);
    /* the later row of a region and rank wins */
    size_t w = 0;
    for (size_t i = 0; i < nlast; i++) {
        if (w > 0 && last[w - 1].region == last[i].region &&
            last[w - 1].rank == last[i].rank)
            w--;
        last[w++] = last[i];
    }
    nlast = w;
    for (size_t i = 0; i < nlast; i++)
        gstart[last[i].region + 1]++;
    for (size_t g = 0; g < nn; g++)
        gstart[g + 1] += gstart[g];
    bool any_calls = false;
    double first_call = 0.0;
    for (size_t g = 0; g < nn; g++) {
        for (size_t i = gstart[g]; i < gstart[g + 1]; i++) {
            int64_t r = last[i].row;
            double f = row_first(t, (size_t)r);
            if (!has[g] || f < key[g])
                key[g] = f;
            has[g] = true;
            const struct sx_row *row = &run->rows[r];
            if (!row->is_aggregate && row->count > 0) {
                double s = s_of(t->row_min[r]);
                if (!any_calls || s < first_call)
                    first_call = s;
                any_calls = true;
            }
        }
    }
    const struct sx_value *stv = meta_get(run, "start_time_ns");
    double origin_ns = 0.0;
    if (stv != NULL && value_as_double(stv, &origin_ns))
        t->chrome_origin = origin_ns / 1e9;
    else
        t->chrome_origin = any_calls ? first_call : 0.0;

    /* get_regions(include, exclude): the filtered regions, stably sorted by key. */
    all = sx_malloc((nn + 1) * sizeof *all);
    SX_CHECK(all != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
    size_t n = 0;
    for (size_t g = 0; g < nn; g++)
        if (has[g] && sx_filter_name(filter, run->names[g]))
            all[n++] = (uint32_t)g;
    qsort_r(all, n, sizeof *all, cmp_regions, key);
    t->regions = all;
    all = NULL;
    t->nregions = n;

    t->row_of = sx_malloc((nlast + 1) * sizeof *t->row_of);
    t->row_start = sx_calloc(n + 1, sizeof *t->row_start);
    t->src_file = sx_calloc(n + 1, sizeof *t->src_file);
    t->src_line = sx_calloc(n + 1, sizeof *t->src_line);
    t->jname = sx_calloc(n + 1, sizeof *t->jname);
    t->jname_len = sx_calloc(n + 1, sizeof *t->jname_len);
    SX_CHECK(t->row_of != NULL && t->row_start != NULL && t->src_file != NULL &&
                 t->src_line != NULL && t->jname != NULL && t->jname_len != NULL,
             SX_ERR_NOMEM, err, run->path, "out of memory");
    size_t nrow_of = 0;
    for (size_t p = 0; p < n; p++) {
        const uint32_t g = t->regions[p];
        for (size_t i = gstart[g]; i < gstart[g + 1]; i++) {
            int64_t r = last[i].row;
            t->row_of[nrow_of++] = last[i];
            const struct sx_row *row = &run->rows[r];
            if (t->src_file[p] == NULL && row->source_file != NULL)
                t->src_file[p] = row->source_file;
            if (t->src_line[p] == NULL && row->has_lineno)
                t->src_line[p] = &row->source_lineno;
        }
        struct sx_buf b = {0};
        sx_buf_cstr(&b, run->names[g]);
        SX_CHECK(!b.failed, SX_ERR_NOMEM, err, run->path, "out of memory");
        t->jname[p] = b.data;
        t->jname_len[p] = b.len;
        t->row_start[p + 1] = nrow_of;
    }
out:
    free(key);
    free(has);
    free(all);
    free(last);
    free(gstart);
    return st;
}

static void drop_spares(struct sx_trace *t);

void sx_trace_free(struct sx_trace *t) {
    if (t == NULL)
        return;
    for (size_t p = 0; t->jname != NULL && p < t->nregions; p++)
        free(t->jname[p]);
    free(t->jname);
    free(t->jname_len);
    free(t->label);
    free(t->ranks);
    free(t->regions);
    free(t->row_of);
    free(t->row_start);
    free(t->src_file);
    free(t->src_line);
    free(t->row_min);
    drop_spares(t);
    free(t->spare);
    memset(t, 0, sizeof *t);
}

enum sx_status sx_trace_select_every_rank(struct sx_trace *t, struct sx_error *err) {
    const int64_t nr = t->run->num_ranks > 0 ? t->run->num_ranks : 0;
    int64_t *v = sx_malloc(((size_t)nr + 1) * sizeof *v);
    if (v == NULL)
        return sx_error_set(err, SX_ERR_NOMEM, t->run->path, "out of memory");
    for (int64_t r = 0; r < nr; r++)
        v[r] = r;
    free(t->ranks);
    t->ranks = v;
    t->nranks = (size_t)nr;
    return SX_OK;
}

enum sx_status sx_trace_check_selection(const struct sx_trace *t, bool needs_regions,
                                        struct sx_error *err) {
    if (needs_regions && t->nregions == 0)
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

const struct sx_row *sx_trace_row(const struct sx_trace *t, size_t g, int64_t rank) {
    size_t lo = t->row_start[g], hi = t->row_start[g + 1];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->row_of[mid].rank < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == t->row_start[g + 1] || t->row_of[lo].rank != rank)
        return NULL;
    return &t->run->rows[t->row_of[lo].row];
}

uint64_t sx_trace_rank_calls(const struct sx_trace *t, int64_t rank) {
    uint64_t n = 0;
    for (size_t g = 0; g < t->nregions; g++) {
        const struct sx_row *row = sx_trace_row(t, g, rank);
        if (row != NULL && !row->is_aggregate)
            n += row->count;
    }
    return n;
}

enum sx_status sx_trace_slice(const struct sx_trace *t, const struct sx_row *row,
                              uint64_t first, uint64_t n, unsigned cols,
                              int64_t *const room[SX_NCOLS], const int64_t *out[SX_NCOLS],
                              struct sx_error *err) {
    cols &= row->cols;
    if (row->col[SX_COL_START] != NULL || (t->h5 == NULL && t->events == NULL)) {
        for (int c = 0; c < SX_NCOLS; c++)
            out[c] =
                (cols & SX_COLBIT(c)) && row->col[c] != NULL ? row->col[c] + first : NULL;
        if (row->col[SX_COL_START] == NULL && n > 0)
            return sx_error_set(err, SX_ERR_INTERNAL, t->run->path,
                                "%s: events of a row are neither loaded nor readable",
                                t->run->path);
        return SX_OK;
    }
    for (int c = 0; c < SX_NCOLS; c++)
        out[c] = (cols & SX_COLBIT(c)) ? room[c] : NULL;
    if (n == 0)
        return SX_OK;
    return read_events(t->run, t->h5, t->events, row, first, n, cols, room, err);
}

/*
 * A rank's columns are read into the buffers of the rank unloaded before it (the best fit
 * of each), not into fresh ones: freed, a rank's columns go back to the system (glibc
 * trims its heap), and the next rank's reads land in fresh pages, whose first touch cost
 * a tenth of a one-process speedscope export. Spares that fit no column are freed at the
 * end of the load, so at most one rank's columns wait.
 */
enum { SPARE = 256 };

static int64_t *take_spare(struct sx_trace *t, size_t n) {
    size_t best = t->nspare;
    for (size_t i = 0; i < t->nspare; i++)
        if (t->spare[i].cap >= n &&
            (best == t->nspare || t->spare[i].cap < t->spare[best].cap))
            best = i;
    if (best == t->nspare)
        return NULL;
    int64_t *p = t->spare[best].p;
    t->spare[best] = t->spare[--t->nspare];
    return p;
}

static void drop_spares(struct sx_trace *t) {
    for (size_t i = 0; i < t->nspare; i++)
        free(t->spare[i].p);
    t->nspare = 0;
}

enum sx_status sx_trace_load_rank(struct sx_trace *t, int64_t rank, unsigned cols,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    for (size_t g = 0; g < t->nregions; g++) {
        struct sx_row *row = (struct sx_row *)sx_trace_row(t, g, rank);
        if (row == NULL || row->is_aggregate || row->count == 0 ||
            row->col[SX_COL_START] != NULL)
            continue;
        SX_CHECK(t->h5 != NULL || t->events != NULL, SX_ERR_INTERNAL, err, t->run->path,
                 "%s: events of a row are neither loaded nor readable", t->run->path);
        const unsigned want = (cols | SX_COLBIT(SX_COL_START)) & row->cols;
        for (int c = 0; c < SX_NCOLS; c++) {
            if (!(want & SX_COLBIT(c)))
                continue;
            row->col[c] = take_spare(t, row->count + 1);
            if (row->col[c] == NULL)
                row->col[c] = sx_malloc((row->count + 1) * sizeof(int64_t));
            SX_CHECK(row->col[c] != NULL, SX_ERR_NOMEM, err, t->run->path,
                     "%s: out of memory reading the events of rank %" PRId64,
                     t->run->path, rank);
        }
        st = read_events(t->run, t->h5, t->events, row, 0, row->count, want, row->col,
                         err);
        if (st != SX_OK)
            goto out;
    }
out:
    drop_spares(t);
    return st;
}

void sx_trace_unload_rank(struct sx_trace *t, int64_t rank) {
    if (t->h5 == NULL && t->events == NULL)
        return;
    for (size_t g = 0; g < t->nregions; g++) {
        struct sx_row *row = (struct sx_row *)sx_trace_row(t, g, rank);
        if (row == NULL)
            continue;
        for (int c = 0; c < SX_NCOLS; c++) {
            if (row->col[c] == NULL)
                continue;
            if (t->spare == NULL)
                t->spare = sx_malloc(SPARE * sizeof *t->spare);
            if (t->spare != NULL && t->nspare < SPARE)
                t->spare[t->nspare++] = (struct sx_col_spare){
                    row->col[c], malloc_usable_size(row->col[c]) / sizeof(int64_t)};
            else
                free(row->col[c]);
            row->col[c] = NULL;
        }
    }
}

static const struct sx_lane_rank *lanes_of(const struct sx_lane_rank *l, size_t n,
                                           int64_t rank) {
    for (size_t i = 0; i < n; i++)
        if (l[i].rank == rank)
            return &l[i];
    return NULL;
}

static void lane_label_depth(const struct sx_run *run, int64_t lane, int64_t rank,
                             struct sx_buf *out, int depth) {
    char tmp[48];
    if (lane >= 0) {
        const struct sx_lane_rank *L = lanes_of(run->tasks, run->ntasks, rank);
        for (size_t i = 0; L != NULL && i < L->n && depth < 8; i++) {
            const struct sx_task *task = &L->tasks[i];
            if (task->index != lane)
                continue;
            const char *coro = task->coro_name ? task->coro_name : "";
            const char *dot = strrchr(coro, '.');
            sx_buf_puts(out, task->name ? task->name : "");
            sx_buf_puts(out, " (");
            sx_buf_puts(out, dot ? dot + 1 : coro);
            sx_buf_puts(out, ") on ");
            lane_label_depth(run, -2 - task->thread_index, rank, out, depth + 1);
            return;
        }
        snprintf(tmp, sizeof tmp, "task %" PRId64, lane);
        sx_buf_puts(out, tmp);
        return;
    }
    if (lane == -1) {
        sx_buf_puts(out, "unknown lane");
        return;
    }
    int64_t h = -2 - lane;
    const struct sx_lane_rank *L = lanes_of(run->threads, run->nthreads, rank);
    for (size_t i = 0; L != NULL && i < L->n; i++)
        if (L->threads[i].index == h) {
            sx_buf_puts(out, L->threads[i].name ? L->threads[i].name : "");
            return;
        }
    snprintf(tmp, sizeof tmp, "thread %" PRId64, h);
    sx_buf_puts(out, tmp);
}

void sx_trace_lane_label(const struct sx_run *run, int64_t lane, int64_t rank,
                         struct sx_buf *out) {
    lane_label_depth(run, lane, rank, out, 0);
}

enum sx_status sx_trace_value_error(const struct sx_trace *t, enum sx_status code,
                                    const char *msg, struct sx_error *err) {
    return sx_error_set(err, code, t->run->path, "%s: %s", t->run->path, msg);
}
