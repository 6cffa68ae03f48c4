/* doc.c - the JSON document's text from its plan: header, blocks of rows, trailer */
#include "doc.h"

#include "doc_ahead.h"
#include "filter.h"
#include "json_convert.h"
#include "json_value.h"
#include "json_write.h"
#include "run.h"
#include "stop.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Document keys of the event segments, SX_SEG_START .. SX_SEG_AWAIT. */
static const char *const seg_keys[SX_NSEGS] = {
    NULL,       "start_times_ns", "end_times_ns", "event_metadata", "gpu_durations_ns",
    "call_ids", "parent_ids",     "thread_ids",   "task_ids",       "await_ns",
    NULL,
};

/* ------------------------------------------------------------------ */
/* Header and trailer                                                 */

/* '"k": ', in one reservation (a summary row writes fourteen keys) */
static void key(struct sx_buf *b, const char *k) {
    const size_t n = strlen(k);
    if (!sx_buf_reserve(b, n + 4))
        return;
    char *p = b->data + b->len;
    *p++ = '"';
    memcpy(p, k, n);
    memcpy(p + n, "\": ", 3);
    b->len += n + 4;
    b->data[b->len] = '\0';
}

enum sx_status sx_doc_header(const struct sx_doc *doc, struct sx_buf *out,
                             struct sx_error *err) {
    const struct sx_run *run = doc->run;
    const int ind = doc->indent;
    sx_buf_putc(out, '{');
    sx_write_newline(out, ind, 1);
    key(out, "format");
    sx_buf_puts(out, "\"scope-profiler-profile\"");
    sx_write_sep(out, ind, 1);
    key(out, "format_version");
    sx_buf_puts(out, "1");
    sx_write_sep(out, ind, 1);
    key(out, "exporter");
    sx_buf_puts(out, "\"scope-export@" SX_VERSION_STRING "\"");
    sx_write_sep(out, ind, 1);
    key(out, "time_unit");
    sx_buf_puts(out, "\"nanoseconds\"");
    sx_write_sep(out, ind, 1);
    key(out, "num_ranks");
    sx_buf_i64(out, run->num_ranks);
    sx_write_sep(out, ind, 1);
    key(out, "event_data_available");
    sx_buf_puts(out, run->event_data_available ? "true" : "false");
    sx_write_sep(out, ind, 1);
    key(out, "metadata");
    sx_write_value(out, &run->metadata, ind, 1);
    sx_write_sep(out, ind, 1);
    key(out, "regions");
    sx_buf_putc(out, '[');
    if (out->failed)
        return sx_error_set(err, SX_ERR_NOMEM, run->path, "out of memory");
    return SX_OK;
}

/* Value builders that note allocation failure in '*ok'. */
static void put(struct sx_value *obj, const char *k, struct sx_value v, bool *ok) {
    if (!sx_value_set(obj, k, strlen(k), v))
        *ok = false;
}

static struct sx_value vstr(const char *s, bool *ok) {
    struct sx_value v;
    if (!sx_value_str(&v, s ? s : "", s ? strlen(s) : 0))
        *ok = false;
    return v;
}

static struct sx_value vints(const int64_t *x, size_t n, bool *ok) {
    struct sx_value v;
    sx_value_array(&v);
    for (size_t i = 0; i < n; i++)
        if (!sx_value_push(&v, sx_value_int(x[i])))
            *ok = false;
    return v;
}

static struct sx_value vfloats(const double *x, size_t n, bool *ok) {
    struct sx_value v;
    sx_value_array(&v);
    for (size_t i = 0; i < n; i++)
        if (!sx_value_push(&v, sx_value_float(x[i])))
            *ok = false;
    return v;
}

static struct sx_value vstrs(char *const *x, size_t n, bool *ok) {
    struct sx_value v;
    sx_value_array(&v);
    for (size_t i = 0; i < n; i++)
        if (!sx_value_push(&v, vstr(x[i], ok)))
            *ok = false;
    return v;
}

static struct sx_value vmatrix(const struct sx_matrix *m, bool *ok) {
    struct sx_value v;
    sx_value_array(&v);
    for (size_t r = 0; r < m->rows; r++)
        if (!sx_value_push(&v, vfloats(m->v + r * m->cols, m->cols, ok)))
            *ok = false;
    return v;
}

static void rank_key(char *buf, size_t n, int64_t rank) {
    snprintf(buf, n, "%" PRId64, rank);
}

/* ThreadInfo/TaskInfo: -1 end/done means "unknown" and stays -1. */
static int64_t lane_end(int64_t v) { return v == -1 ? -1 : sx_lane_ns(v); }

static struct sx_value lanes_value(const struct sx_doc *doc,
                                   const struct sx_lane_rank *lanes, size_t n, bool tasks,
                                   bool *ok) {
    struct sx_value top;
    sx_value_object(&top);
    for (size_t i = 0; i < n; i++) {
        const struct sx_lane_rank *L = &lanes[i];
        if (!sx_filter_rank(doc->filter, L->rank))
            continue;
        struct sx_value rows;
        sx_value_array(&rows);
        for (size_t j = 0; j < L->n; j++) {
            struct sx_value o;
            sx_value_object(&o);
            if (tasks) {
                const struct sx_task *t = &L->tasks[j];
                put(&o, "index", sx_value_int(t->index), ok);
                put(&o, "kind", vstr(t->kind, ok), ok);
                put(&o, "name", vstr(t->name, ok), ok);
                put(&o, "coro_name", vstr(t->coro_name, ok), ok);
                put(&o, "thread_index", sx_value_int(t->thread_index), ok);
                put(&o, "created_ns", sx_value_int(sx_lane_ns(t->created_ns)), ok);
                put(&o, "done_ns", sx_value_int(lane_end(t->done_ns)), ok);
                put(&o, "steps", sx_value_int(t->steps), ok);
                put(&o, "running_ns", sx_value_int(sx_lane_ns(t->running_ns)), ok);
                put(&o, "suspended_ns", sx_value_int(sx_lane_ns(t->suspended_ns)), ok);
            } else {
                const struct sx_thread *t = &L->threads[j];
                put(&o, "index", sx_value_int(t->index), ok);
                put(&o, "name", vstr(t->name, ok), ok);
                put(&o, "ident", sx_value_int(t->ident), ok);
                put(&o, "native_id", sx_value_int(t->native_id), ok);
                put(&o, "daemon", sx_value_bool(t->daemon), ok);
                put(&o, "start_ns", sx_value_int(sx_lane_ns(t->start_ns)), ok);
                put(&o, "end_ns", sx_value_int(lane_end(t->end_ns)), ok);
                put(&o, "cpu_ns", sx_value_int(sx_lane_ns(t->cpu_ns)), ok);
            }
            if (!sx_value_push(&rows, o))
                *ok = false;
        }
        char k[32];
        rank_key(k, sizeof k, L->rank);
        put(&top, k, rows, ok);
    }
    return top;
}

static struct sx_value likwid_value(const struct sx_doc *doc, bool *ok) {
    const struct sx_run *run = doc->run;
    struct sx_value top;
    sx_value_object(&top);
    for (size_t i = 0; i < run->nlikwid; i++) {
        const struct sx_likwid_rank *L = &run->likwid[i];
        if (!sx_filter_rank(doc->filter, L->rank))
            continue;
        struct sx_value tags;
        sx_value_object(&tags);
        for (size_t j = 0; j < L->n; j++) {
            const struct sx_likwid_entry *e = &L->entries[j];
            struct sx_value o;
            sx_value_object(&o);
            put(&o, "tag", vstr(e->tag, ok), ok);
            put(&o, "group_id", sx_value_int(e->group_id), ok);
            put(&o, "group_name", vstr(e->group_name, ok), ok);
            put(&o, "cpus", vints(e->cpus, e->ncpus, ok), ok);
            put(&o, "times", vfloats(e->times, e->ntimes, ok), ok);
            put(&o, "call_counts", vints(e->call_counts, e->ncall_counts, ok), ok);
            put(&o, "event_names", vstrs(e->event_names, e->nevent_names, ok), ok);
            put(&o, "counter_names", vstrs(e->counter_names, e->ncounter_names, ok), ok);
            put(&o, "events", vmatrix(&e->events, ok), ok);
            put(&o, "metric_names", vstrs(e->metric_names, e->nmetric_names, ok), ok);
            put(&o, "metrics", vmatrix(&e->metrics, ok), ok);
            put(&o, "source", vstr(e->source, ok), ok);
            put(&tags, e->tag, o, ok);
        }
        char k[32];
        rank_key(k, sizeof k, L->rank);
        put(&top, k, tags, ok);
    }
    return top;
}

static struct sx_value line_profile_value(const struct sx_doc *doc, bool *any, bool *ok) {
    const struct sx_run *run = doc->run;
    struct sx_value top;
    sx_value_object(&top);
    *any = false;
    for (size_t i = 0; i < run->nline_profile; i++) {
        const struct sx_lp_rank *L = &run->line_profile[i];
        if (!sx_filter_rank(doc->filter, L->rank))
            continue;
        struct sx_value recs;
        sx_value_array(&recs);
        for (size_t j = 0; j < L->n; j++) {
            const struct sx_lp_record *r = &L->records[j];
            struct sx_value o;
            sx_value_object(&o);
            put(&o, "region", vstr(r->region, ok), ok);
            put(&o, "filename", vstr(r->filename, ok), ok);
            put(&o, "function", vstr(r->function, ok), ok);
            put(&o, "first_lineno", sx_value_int(r->first_lineno), ok);
            put(&o, "line_numbers", vints(r->line_numbers, r->nline_numbers, ok), ok);
            put(&o, "hits", vints(r->hits, r->nhits, ok), ok);
            put(&o, "times", vfloats(r->times, r->ntimes, ok), ok);
            put(&o, "unit", sx_value_float(r->unit), ok);
            if (!sx_value_push(&recs, o))
                *ok = false;
        }
        if (L->n > 0)
            *any = true;
        char k[32];
        rank_key(k, sizeof k, L->rank);
        put(&top, k, recs, ok);
    }
    return top;
}

enum sx_status sx_doc_trailer(const struct sx_doc *doc, struct sx_buf *out,
                              struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_run *run = doc->run;
    const int ind = doc->indent;
    bool ok = true, any_lp = false;
    struct sx_value parts[4];
    const char *names[4] = {"threads", "tasks", "likwid", "line_profile"};
    parts[0] = lanes_value(doc, run->threads, run->nthreads, false, &ok);
    parts[1] = lanes_value(doc, run->tasks, run->ntasks, true, &ok);
    parts[2] = likwid_value(doc, &ok);
    parts[3] = line_profile_value(doc, &any_lp, &ok);
    if (doc->nrows > 0)
        sx_write_newline(out, ind, 1);
    sx_buf_putc(out, ']');
    for (int i = 0; i < 4; i++) {
        bool show = i == 3 ? any_lp : parts[i].u.obj.n > 0;
        if (!show)
            continue;
        sx_write_sep(out, ind, 1);
        key(out, names[i]);
        sx_write_value(out, &parts[i], ind, 1);
    }
    sx_write_newline(out, ind, 0);
    sx_buf_putc(out, '}');
    for (int i = 0; i < 4; i++)
        sx_value_free(&parts[i]);
    SX_CHECK(ok && !out->failed, SX_ERR_NOMEM, err, run->path, "out of memory");
out:
    return st;
}

/* ------------------------------------------------------------------ */
/* Rows                                                               */

/* aggregate values: int(v) if float(v).is_integer() else float(v) */
static enum sx_status write_agg_value(struct sx_buf *b, const struct sx_agg_field *f,
                                      const struct sx_run *run, const struct sx_row *row,
                                      struct sx_error *err) {
    if (!f->is_float) {
        if (f->is_unsigned)
            sx_buf_u64(b, f->u);
        else
            sx_buf_i64(b, f->i);
        return SX_OK;
    }
    double v = f->f;
    if (!isfinite(v))
        return sx_error_set(err, SX_ERR_VALUE, run->path,
                            "%s: region '%s' rank %" PRId64
                            " aggregate '%s' is %s: Out of "
                            "range float values are not JSON compliant",
                            run->path, run->names[row->region], row->rank,
                            sx_agg_keys[f->key], isnan(v) ? "NaN" : "infinite");
    if (v != floor(v)) {
        sx_buf_double(b, v);
    } else if (fabs(v) < 0x1p63) {
        sx_buf_i64(b, (int64_t)v); /* exact: int(-0.0) is 0 */
    } else {
        char tmp[400];
        snprintf(tmp, sizeof tmp, "%.0f", v);
        sx_buf_puts(b, tmp);
    }
    return SX_OK;
}

/* A row's head up to its rank's digits: '{', its name and the rank's key. */
static void head_pre(const struct sx_doc *doc, const struct sx_row *row,
                     struct sx_buf *b) {
    const int ind = doc->indent;
    sx_buf_putc(b, '{');
    sx_write_newline(b, ind, 3);
    key(b, "name");
    sx_buf_cstr(b, doc->run->names[row->region]);
    sx_write_sep(b, ind, 3);
    key(b, "rank");
}

/* A row's head after its rank: its source and tags (the same for every rank's row of a
 * region, so made once a run of them: write_head). */
static void head_post(const struct sx_doc *doc, const struct sx_row *row,
                      struct sx_buf *b) {
    const int ind = doc->indent;
    if (row->source_file != NULL) {
        sx_write_sep(b, ind, 3);
        key(b, "source_file");
        sx_buf_cstr(b, row->source_file);
    }
    if (row->has_lineno) {
        sx_write_sep(b, ind, 3);
        key(b, "source_lineno");
        sx_buf_i64(b, row->source_lineno);
    }
    if (row->source_text != NULL) {
        sx_write_sep(b, ind, 3);
        key(b, "source_text");
        sx_buf_cstr(b, row->source_text);
    }
    if (row->ntags > 0) {
        sx_write_sep(b, ind, 3);
        key(b, "tags");
        sx_buf_putc(b, '[');
        for (size_t t = 0; t < row->ntags; t++) {
            if (t > 0)
                sx_write_sep(b, ind, 4);
            else
                sx_write_newline(b, ind, 4);
            sx_buf_cstr(b, row->tags[t]);
        }
        sx_write_newline(b, ind, 3);
        sx_buf_putc(b, ']');
    }
}

/* A summary row's head after its source and tags: its aggregates. */
static enum sx_status head_agg(const struct sx_doc *doc, const struct sx_row *row,
                               struct sx_buf *b, struct sx_error *err) {
    const int ind = doc->indent;
    sx_write_sep(b, ind, 3);
    key(b, "aggregate");
    sx_buf_putc(b, '{');
    for (size_t k = 0; k < row->nagg; k++) {
        if (k > 0)
            sx_write_sep(b, ind, 4);
        else
            sx_write_newline(b, ind, 4);
        key(b, sx_agg_keys[row->agg[k].key]);
        enum sx_status st = write_agg_value(b, &row->agg[k], doc->run, row, err);
        if (st != SX_OK)
            return st;
    }
    if (row->nagg > 0)
        sx_write_newline(b, ind, 3);
    sx_buf_putc(b, '}');
    if (!row->event_data_available) {
        sx_write_sep(b, ind, 3);
        key(b, "event_data_available");
        sx_buf_puts(b, "false");
    }
    return SX_OK;
}

/*
 * The head of the last row a block wrote, but for its rank and a summary row's
 * aggregates (written after it): a region's rows follow one another rank by
 * rank, and their heads differ in those alone; escaping the same strings again
 * was most of a many-row block's head, summary rows' included.
 */
struct head_memo {
    bool ok;
    uint32_t region;
    const char *file, *text;
    char **tags;
    size_t ntags;
    bool has_lineno;
    int64_t lineno;
    struct sx_buf pre, post;
};

static bool same_str(const char *a, const char *b) {
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool memo_fits(const struct head_memo *m, const struct sx_row *row) {
    if (!m->ok || m->region != row->region || m->has_lineno != row->has_lineno ||
        (row->has_lineno && m->lineno != row->source_lineno) || m->ntags != row->ntags ||
        !same_str(m->file, row->source_file) || !same_str(m->text, row->source_text))
        return false;
    for (size_t t = 0; t < row->ntags && m->tags != row->tags; t++)
        if (strcmp(m->tags[t], row->tags[t]) != 0)
            return false;
    return true;
}

static enum sx_status write_head(const struct sx_doc *doc, uint64_t i,
                                 const struct sx_row *row, struct head_memo *m,
                                 struct sx_buf *b, struct sx_error *err) {
    if (i > 0)
        sx_write_sep(b, doc->indent, 2);
    else
        sx_write_newline(b, doc->indent, 2);
    if (!memo_fits(m, row)) {
        /* the strings are the reader's, alive while the block is written */
        sx_buf_reset(&m->pre);
        sx_buf_reset(&m->post);
        head_pre(doc, row, &m->pre);
        head_post(doc, row, &m->post);
        m->ok = !m->pre.failed && !m->post.failed;
        m->region = row->region;
        m->file = row->source_file;
        m->text = row->source_text;
        m->tags = row->tags;
        m->ntags = row->ntags;
        m->has_lineno = row->has_lineno;
        m->lineno = row->source_lineno;
        if (!m->ok) {
            b->failed = true;
            return SX_OK;
        }
    }
    if (!sx_buf_reserve(b, m->pre.len + m->post.len + 24))
        return SX_OK;
    memcpy(b->data + b->len, m->pre.data, m->pre.len); /* never empty: '{', a name */
    b->len += m->pre.len;
    b->len += sx_fmt_i64(b->data + b->len, row->rank);
    if (m->post.len > 0) /* a row without source or tags: nothing after its rank */
        memcpy(b->data + b->len, m->post.data, m->post.len);
    b->len += m->post.len;
    b->data[b->len] = '\0';
    return row->is_aggregate ? head_agg(doc, row, b, err) : SX_OK;
}

static void write_tail(const struct sx_doc *doc, const struct sx_row *row,
                       struct sx_buf *b) {
    if (row->has_exclusive && !row->is_aggregate) {
        sx_write_sep(b, doc->indent, 3);
        key(b, "exclusive_total_ns");
        sx_buf_i64(b, row->exclusive_total);
    }
    sx_write_newline(b, doc->indent, 2);
    sx_buf_putc(b, '}');
}

/* Integers of one column piece; 'first' tells whether the column starts here. */
static void write_ints(struct sx_buf *b, const int64_t *v, uint64_t n, uint64_t first,
                       int indent) {
    if (indent < 0) {
        /* hot path: one reserve per piece, then raw formatting */
        if (n == 0 || !sx_buf_reserve(b, (size_t)n * 24 + 32))
            return;
        char *end = sx_fmt_i64_list(b->data + b->len, v, (size_t)n, first == 0);
        b->len = (size_t)(end - b->data);
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (first + i > 0)
            sx_write_sep(b, indent, 4);
        else
            sx_write_newline(b, indent, 4);
        sx_buf_i64(b, v[i]);
    }
}

/* The event_metadata list (canonical one-line text) at depth 3. */
static enum sx_status write_meta(const struct sx_doc *doc, const struct sx_row *row,
                                 const char *text, size_t len, struct sx_buf *b,
                                 struct sx_error *err);

/* ------------------------------------------------------------------ */
/* Blocks                                                             */

void sx_doc_room_free(struct sx_doc_room *room) {
    free(room->arena);
    free(room->slices);
    memset(room, 0, sizeof *room);
}

/*
 * Rows held whole (an aggregate layout's, a loaded or native run's) are written in
 * document order, region by region, and lie in the file's, rank by rank: each row, and
 * the aggregates it points to, a miss of every cache (a 1.6M-row summary, when it was
 * read whole, spent 80% of its block writing's own time in two loads). The row of the
 * piece ROW_AHEAD on is asked of the cache, and the aggregates of the one half as far,
 * whose row came meanwhile.
 */
enum { ROW_AHEAD = 24 };
/* A macro: GCC 12 drops a prefetch inlined from a function into the loop (doc_plan.h). */
#define PREFETCH_ROWS(run, order, pieces, k, q)                                          \
    do {                                                                                 \
        if ((k) + ROW_AHEAD < (q))                                                       \
            SX_PREFETCH_ROW(&(run)->rows[(order)[(pieces)[(k) + ROW_AHEAD].i]]);         \
        if ((k) + ROW_AHEAD / 2 < (q)) {                                                 \
            const struct sx_row *h_ =                                                    \
                &(run)->rows[(order)[(pieces)[(k) + ROW_AHEAD / 2].i]];                  \
            if (h_->agg != NULL)                                                         \
                __builtin_prefetch(h_->agg);                                             \
        }                                                                                \
    } while (0)

enum sx_status sx_doc_block(const struct sx_doc *doc, const struct sx_event_source *src,
                            const struct sx_doc_ahead *ah, struct sx_doc_room *room,
                            size_t bi, struct sx_buf *out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_run *run = doc->run;
    const struct sx_block *blk = &doc->blocks[bi];
    struct sx_piece *pieces = NULL;
    size_t np = 0, capp = 0;
    struct sx_doc_room own = {0};
    if (room == NULL)
        room = &own;
    struct sx_slice *slices = room->slices;
    size_t slices_cap = room->slices_cap;
    int64_t *arena = room->arena;
    uint64_t arena_cap = room->arena_cap;
    struct sx_buf mb = {0};
    const struct sx_row **mrows = NULL;
    size_t *moff = NULL, nmeta = 0, mi = 0;
    bool *many = NULL;
    struct sx_row *brows = NULL;
    const struct sx_index_row **bix = NULL;
    size_t nbr = 0;
    const uint64_t r0 = blk->from.row;
    const long kb = sx_doc_ahead_find(ah, bi);
    struct head_memo memo = {0};

    /* 1. The block's pieces, in text order. */
    st = sx_doc_block_pieces(doc, bi, &pieces, &capp, &np, err);
    if (st != SX_OK)
        goto out;

    /* A lazy run's rows of this block, read in full (one read per index column), or
     * read ahead with its events. */
    const struct sx_row *arows = sx_doc_ahead_rows(ah, kb);
    if (sx_run_is_lazy(run) && np > 0 && arows == NULL) {
        nbr = (size_t)(pieces[np - 1].i - r0 + 1);
        brows = sx_calloc(nbr, sizeof *brows);
        bix = sx_malloc(nbr * sizeof *bix);
        SX_CHECK(brows != NULL && bix != NULL && src->ops != NULL, SX_ERR_NOMEM, err,
                 run->path, "out of memory");
        for (size_t k = 0; k < nbr; k++)
            bix[k] = &run->index[doc->order[r0 + k]];
        st = src->ops->fill_rows(src->ctx, run, bix, nbr, brows, err);
        if (st != SX_OK)
            goto out;
    }
#define BLOCK_ROW(i)                                                                     \
    (arows != NULL   ? &arows[(i)-r0]                                                    \
     : brows != NULL ? &brows[(i)-r0]                                                    \
                     : &run->rows[doc->order[i]])

    /* 2. The event_metadata of every row of the block, in one read (or read ahead). */
    for (size_t k = 0; src->ops != NULL && k < np; k++)
        nmeta += pieces[k].seg == SX_SEG_META;
    const char *mtext = NULL; /* piece m's text: mtext[mo[m] .. mo[m + 1]) */
    const size_t *mo = NULL;
    const bool *ma = NULL;
    bool stored = false; /* the texts as stored (read ahead): made canonical as written */
    if (nmeta > 0 && kb >= 0 && ah->pl.metas) {
        SX_CHECK(ah->pl.mfirst[kb + 1] - ah->pl.mfirst[kb] == nmeta, SX_ERR_INTERNAL, err,
                 run->path, "%s: the event metadata read ahead is not that of block %zu",
                 run->path, bi);
        mtext = ah->mtext.data;
        mo = ah->moff + ah->pl.mfirst[kb];
        ma = ah->many + ah->pl.mfirst[kb];
        stored = true;
    } else if (nmeta > 0) {
        mrows = sx_malloc(nmeta * sizeof *mrows);
        moff = sx_malloc((nmeta + 1) * sizeof *moff);
        many = sx_malloc(nmeta * sizeof *many);
        SX_CHECK(mrows != NULL && moff != NULL && many != NULL, SX_ERR_NOMEM, err,
                 run->path, "out of memory");
        size_t m = 0;
        for (size_t k = 0; k < np; k++)
            if (pieces[k].seg == SX_SEG_META)
                mrows[m++] = BLOCK_ROW(pieces[k].i);
        st = src->ops->read_metas(src->ctx, run, mrows, nmeta, false, &mb, moff, many,
                                  err);
        if (st != SX_OK)
            goto out;
        mtext = mb.data;
        mo = moff;
        ma = many;
    }

    /*
     * 3. Format, reading events in bounded batches of pieces; a block read
     * ahead has its events already, and is one batch.
     */
    size_t p = 0, ei = kb >= 0 ? ah->pl.first[kb] : 0;
    while (p < np) {
        SX_CHECK(!sx_stop_requested(), SX_ERR_INTERRUPTED, err, run->path,
                 "%s: export interrupted by a signal; no output was written", run->path);
        /* gather pieces until SX_PIECE_EVENTS events of event data */
        size_t q = kb >= 0 ? np : p;
        uint64_t evs = 0;
        while (q < np) {
            const struct sx_piece *pc = &pieces[q];
            if (sx_seg_col(pc->seg) >= 0) {
                uint64_t n = pc->z - pc->a;
                if (evs > 0 && evs + n > SX_PIECE_EVENTS)
                    break;
                if (n > SX_PIECE_EVENTS && evs == 0) {
                    /* a long piece alone: cut it */
                    evs = SX_PIECE_EVENTS;
                    q++;
                    break;
                }
                evs += n;
            }
            q++;
        }
        /* slices: one per event piece, clipped to SX_PIECE_EVENTS for a long one */
        size_t ns = 0;
        /* room reused across batches: fresh large blocks would fault every page in */
        if (kb < 0 && q - p + 1 > slices_cap) {
            free(slices);
            slices_cap = q - p + 1;
            slices = sx_malloc(slices_cap * sizeof *slices);
            slices_cap = slices != NULL ? slices_cap : 0;
        }
        if (kb < 0 && slices != NULL)
            memset(slices, 0, (q - p + 1) * sizeof *slices);
        if (kb < 0 && evs + 1 > arena_cap) {
            free(arena);
            arena_cap = evs + 1 > SX_PIECE_EVENTS + 1 ? evs + 1 : SX_PIECE_EVENTS + 1;
            arena = sx_malloc(arena_cap * sizeof *arena);
            arena_cap = arena != NULL ? arena_cap : 0;
        }
        SX_CHECK(kb >= 0 || (slices != NULL && arena != NULL), SX_ERR_NOMEM, err,
                 run->path, "out of memory");
        uint64_t used = 0;
        for (size_t k = p; kb < 0 && k < q; k++) {
            const struct sx_piece *pc = &pieces[k];
            int c = sx_seg_col(pc->seg);
            if (c < 0)
                continue;
            uint64_t n = pc->z - pc->a;
            if (n > evs - used)
                n = evs - used;
            struct sx_slice *sl = &slices[ns++];
            sl->row = BLOCK_ROW(pc->i);
            sl->first = pc->a;
            sl->n = n;
            sl->cols = SX_COLBIT(c);
            sl->col[c] = arena + used;
            used += n;
        }
        if (src->ops != NULL && ns > 0) {
            st = src->ops->read_slices(src->ctx, run, slices, ns, err);
            if (st != SX_OK)
                goto out;
        }
        size_t si = 0;
        for (size_t k = p; k < q; k++) {
            struct sx_piece *pc = &pieces[k];
            const struct sx_row *row = BLOCK_ROW(pc->i);
            int c = sx_seg_col(pc->seg);
            if (arows == NULL && brows == NULL)
                PREFETCH_ROWS(run, doc->order, pieces, k, q);
            if (pc->seg == SX_SEG_HEAD) {
                st = write_head(doc, pc->i, row, &memo, out, err);
                if (st != SX_OK)
                    goto out;
            } else if (pc->seg == SX_SEG_TAIL) {
                write_tail(doc, row, out);
            } else if (pc->seg == SX_SEG_META) {
                if (src->ops != NULL) {
                    size_t m = mi++;
                    const char *text = mtext + mo[m];
                    size_t len = mo[m + 1] - mo[m];
                    bool any = ma[m];
                    if (any && stored) {
                        sx_buf_reset(&mb);
                        st = src->ops->canon_meta(src->ctx, row, text, len, &mb, &any,
                                                  err);
                        if (st != SX_OK)
                            goto out;
                        text = mb.data;
                        len = mb.len;
                    }
                    if (any) {
                        st = write_meta(doc, row, text, len, out, err);
                        if (st != SX_OK)
                            goto out;
                    }
                } else if (row->meta_any && row->meta_text != NULL) {
                    st = write_meta(doc, row, row->meta_text, strlen(row->meta_text), out,
                                    err);
                    if (st != SX_OK)
                        goto out;
                }
            } else {
                const int64_t *v;
                uint64_t n, first = pc->a;
                if (kb >= 0) {
                    const struct sx_doc_ahead_ent *en = &ah->pl.ent[ei++];
                    SX_CHECK(ei <= ah->pl.first[kb + 1] &&
                                 en->row - ah->pl.rfirst[kb] == pc->i - r0 &&
                                 en->seg == pc->seg && en->a == pc->a &&
                                 en->n == pc->z - pc->a,
                             SX_ERR_INTERNAL, err, run->path,
                             "%s: the events read ahead are not those of block %zu",
                             run->path, bi);
                    v = ah->arena + en->at;
                    n = en->n;
                } else {
                    const struct sx_slice *sl = &slices[si++];
                    v = src->ops != NULL ? sl->col[c] : row->col[c] + sl->first;
                    n = sl->n;
                }
                if (pc->a == 0) {
                    sx_write_sep(out, doc->indent, 3);
                    key(out, seg_keys[pc->seg]);
                    sx_buf_putc(out, '[');
                }
                write_ints(out, v, n, first, doc->indent);
                pc->a += n;
                if (pc->a == row->count && pc->z == row->count) {
                    if (row->count > 0)
                        sx_write_newline(out, doc->indent, 3);
                    sx_buf_putc(out, ']');
                }
                if (pc->a < pc->z) {
                    /* the rest of a long piece goes in the next batch */
                    q = k;
                    break;
                }
            }
            if (out->failed)
                break;
        }
        SX_CHECK(!out->failed, SX_ERR_NOMEM, err, run->path,
                 "out of memory formatting the document");
        p = q;
    }
#undef BLOCK_ROW
out:
    for (size_t k = 0; brows != NULL && k < nbr; k++)
        sx_row_clear(&brows[k]);
    free(brows);
    free(bix);
    free(many);
    free(moff);
    free(mrows);
    sx_buf_free(&mb);
    sx_buf_free(&memo.pre);
    sx_buf_free(&memo.post);
    room->arena = arena;
    room->arena_cap = arena_cap;
    room->slices = slices;
    room->slices_cap = slices_cap;
    sx_doc_room_free(&own);
    free(pieces);
    return st;
}

static enum sx_status write_meta(const struct sx_doc *doc, const struct sx_row *row,
                                 const char *text, size_t len, struct sx_buf *b,
                                 struct sx_error *err) {
    (void)row;
    sx_write_sep(b, doc->indent, 3);
    key(b, "event_metadata");
    if (doc->indent < 0) {
        sx_buf_append(b, text, len);
        return SX_OK;
    }
    /* indent mode re-lays the dicts out; they are small */
    struct sx_value v = {0};
    enum sx_status st = sx_json_to_value(text, len, &v, err);
    if (st != SX_OK) {
        sx_error_where(err, doc->run->path);
        return st;
    }
    sx_write_value(b, &v, doc->indent, 3);
    sx_value_free(&v);
    return SX_OK;
}
