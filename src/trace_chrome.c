/* trace_chrome.c - the Chrome Trace Event document (Perfetto, chrome://tracing) */
#include "trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A lane key ("rank" < "task" < "thread", then by number) packed for sorting. */
enum { LANE_RANK = 0, LANE_TASK = 1, LANE_THREAD = 2 };

struct lane {
    int kind;
    int64_t index;
};

static int cmp_lane(const void *a, const void *b) {
    const struct lane *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static struct lane lane_of(const struct sx_row *row, uint64_t i) {
    if ((row->cols & SX_COLBIT(SX_COL_TASK)) && row->col[SX_COL_TASK][i] >= 0)
        return (struct lane){LANE_TASK, row->col[SX_COL_TASK][i]};
    if ((row->cols & SX_COLBIT(SX_COL_THREAD)) && row->col[SX_COL_THREAD][i] >= 0)
        return (struct lane){LANE_THREAD, row->col[SX_COL_THREAD][i]};
    return (struct lane){LANE_RANK, 0};
}

/* The sorted set of lanes 'rank' has calls on. New array in '*out'. */
static enum sx_status rank_lanes(const struct sx_trace *t, int64_t rank,
                                 struct lane **out, size_t *nout, struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t n = 0, cap = 8;
    struct lane *v = sx_malloc(cap * sizeof *v);
    SX_CHECK(v != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
    for (size_t g = 0; g < t->nregions; g++) {
        const struct sx_row *row = sx_trace_row(t, g, rank);
        if (row == NULL || row->is_aggregate || row->count == 0)
            continue;
        struct lane prev = {-1, 0};
        for (uint64_t i = 0; i < row->count; i++) {
            struct lane l = lane_of(row, i);
            if (l.kind == prev.kind && l.index == prev.index)
                continue;
            prev = l;
            bool seen = false;
            for (size_t j = 0; j < n && !seen; j++)
                seen = v[j].kind == l.kind && v[j].index == l.index;
            if (seen)
                continue;
            if (n == cap) {
                cap *= 2;
                struct lane *nv = sx_realloc(v, cap * sizeof *nv);
                SX_CHECK(nv != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
                v = nv;
            }
            v[n++] = l;
        }
    }
    qsort(v, n, sizeof *v, cmp_lane);
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

static size_t lane_tid(const struct lane *v, size_t n, struct lane l) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cmp_lane(&v[mid], &l) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void sx_chrome_head(const struct sx_trace *t, struct sx_buf *out) {
    sx_buf_puts(out, "{\"displayTimeUnit\":\"ms\",\"metadata\":{\"name\":");
    sx_buf_cstr(out, t->label);
    sx_buf_puts(out, ",\"exporter\":\"scope-export@" SX_VERSION_STRING
                     "\"},\"traceEvents\":[");
}

void sx_chrome_tail(struct sx_buf *out) { sx_buf_puts(out, "]}"); }

static void put_i64(struct sx_buf *b, int64_t v) { sx_buf_i64(b, v); }

static void thread_name_item(const struct sx_trace *t, int64_t rank, size_t tid,
                             struct lane l, struct sx_buf *out, struct sx_buf *tmp) {
    sx_buf_puts(out, ",{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":");
    put_i64(out, rank);
    sx_buf_puts(out, ",\"tid\":");
    sx_buf_u64(out, tid);
    sx_buf_puts(out, ",\"args\":{\"name\":");
    sx_buf_reset(tmp);
    if (l.kind == LANE_TASK) {
        sx_trace_lane_label(t->run, l.index, rank, tmp);
        sx_buf_str(out, tmp->data ? tmp->data : "", tmp->len);
        sx_buf_puts(out, ",\"lane\":\"async task\",\"task_index\":");
        put_i64(out, l.index);
    } else if (l.kind == LANE_THREAD) {
        sx_trace_lane_label(t->run, -2 - l.index, rank, tmp);
        sx_buf_str(out, tmp->data ? tmp->data : "", tmp->len);
        sx_buf_puts(out, ",\"lane\":\"thread\",\"thread_index\":");
        put_i64(out, l.index);
        const struct sx_lane_rank *L = NULL;
        for (size_t i = 0; i < t->run->nthreads && L == NULL; i++)
            if (t->run->threads[i].rank == rank)
                L = &t->run->threads[i];
        for (size_t i = 0; L != NULL && i < L->n; i++) {
            const struct sx_thread *th = &L->threads[i];
            if (th->index != l.index)
                continue;
            sx_buf_puts(out, ",\"native_id\":");
            put_i64(out, th->native_id);
            sx_buf_puts(out, ",\"ident\":");
            put_i64(out, th->ident);
            sx_buf_puts(out, ",\"cpu_time_s\":");
            sx_buf_double(out, (double)th->cpu_ns / 1e9);
            break;
        }
    } else {
        sx_buf_puts(out, "\"rank ");
        put_i64(out, rank);
        sx_buf_puts(out, "\",\"lane\":\"rank\"");
    }
    sx_buf_puts(out, "}}");
}

/* Append "text" of n bytes to p. */
#define PUT(p, lit)                                                                      \
    do {                                                                                 \
        memcpy((p), (lit), sizeof(lit) - 1);                                             \
        (p) += sizeof(lit) - 1;                                                          \
    } while (0)

enum sx_status sx_chrome_rank(const struct sx_trace *t, size_t k, struct sx_buf *out,
                              const struct sx_trace_sink *sink, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const int64_t rank = t->ranks[k];
    struct lane *lanes = NULL;
    size_t nl = 0;
    struct sx_buf tmp = {0}, pre = {0}, post = {0};

    if (k > 0)
        sx_buf_putc(out, ',');
    sx_buf_puts(out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
    put_i64(out, rank);
    sx_buf_puts(out, ",\"tid\":0,\"args\":{\"name\":\"rank ");
    put_i64(out, rank);
    sx_buf_puts(out, "\"}}");

    st = rank_lanes(t, rank, &lanes, &nl, err);
    if (st != SX_OK)
        goto out;
    for (size_t i = 0; i < nl; i++)
        thread_name_item(t, rank, i, lanes[i], out, &tmp);

    const double origin = t->chrome_origin;
    double max_end = 0.0;
    bool any = false;
    char rank_text[24];
    size_t rank_len = sx_fmt_i64(rank_text, rank);
    for (size_t g = 0; g < t->nregions; g++) {
        const struct sx_row *row = sx_trace_row(t, g, rank);
        if (row == NULL || row->is_aggregate || row->count == 0)
            continue;
        /* The fixed text around the varying numbers of this row's calls. */
        sx_buf_reset(&pre);
        sx_buf_puts(&pre, ",{\"name\":");
        sx_buf_append(&pre, t->jname[g], t->jname_len[g]);
        sx_buf_puts(&pre, ",\"cat\":\"scope-profiler\",\"ph\":\"X\",\"ts\":");
        sx_buf_reset(&post);
        if (t->src_file[g] != NULL) {
            sx_buf_puts(&post, ",\"source_file\":");
            sx_buf_cstr(&post, t->src_file[g]);
            if (t->src_line[g] != NULL) {
                sx_buf_puts(&post, ",\"source_line\":");
                put_i64(&post, *t->src_line[g]);
            }
        }
        sx_buf_puts(&post, "}}");
        SX_CHECK(!pre.failed && !post.failed, SX_ERR_NOMEM, err, t->run->path,
                 "out of memory");
        const bool ids = (row->cols & SX_COLBIT(SX_COL_CALL)) &&
                         (row->cols & SX_COLBIT(SX_COL_PARENT));
        const bool gpu = row->cols & SX_COLBIT(SX_COL_GPU);
        const bool task = row->cols & SX_COLBIT(SX_COL_TASK);
        const bool awt = task && (row->cols & SX_COLBIT(SX_COL_AWAIT));
        const int64_t *s = row->col[SX_COL_START], *e = row->col[SX_COL_END];
        struct lane cur = {-1, 0};
        size_t tid = 0;
        const size_t per = pre.len + post.len + 320;
        for (uint64_t i = 0; i < row->count; i++) {
            if ((i & 4095) == 0) {
                if (sink != NULL && out->len >= sink->block_bytes) {
                    st = sink->flush(sink->ctx, out, err);
                    if (st != SX_OK)
                        goto out;
                }
                if (!sx_buf_reserve(out, per * 4096))
                    break;
            }
            const double start = (double)s[i] / 1e9 - origin;
            const double end = (double)e[i] / 1e9 - origin;
            const double dur = end - start;
            if (!any || end > max_end)
                max_end = end;
            any = true;
            struct lane l = lane_of(row, i);
            if (l.kind != cur.kind || l.index != cur.index) {
                cur = l;
                tid = lane_tid(lanes, nl, l);
            }
            char *p = out->data + out->len;
            memcpy(p, pre.data, pre.len);
            p += pre.len;
            p += sx_fmt_double(p, start * 1000000);
            PUT(p, ",\"dur\":");
            p += sx_fmt_double(p, dur * 1000000);
            PUT(p, ",\"pid\":");
            memcpy(p, rank_text, rank_len);
            p += rank_len;
            PUT(p, ",\"tid\":");
            p += sx_fmt_u64(p, tid);
            PUT(p, ",\"args\":{\"rank\":");
            memcpy(p, rank_text, rank_len);
            p += rank_len;
            PUT(p, ",\"call_index\":");
            p += sx_fmt_u64(p, i);
            PUT(p, ",\"duration_s\":");
            p += sx_fmt_double(p, dur);
            if (ids) {
                PUT(p, ",\"call_id\":");
                p += sx_fmt_i64(p, row->col[SX_COL_CALL][i]);
                PUT(p, ",\"parent_id\":");
                p += sx_fmt_i64(p, row->col[SX_COL_PARENT][i]);
            }
            if (gpu) {
                PUT(p, ",\"gpu_duration\":");
                p += sx_fmt_double(p, (double)row->col[SX_COL_GPU][i] / 1e9);
            }
            if (awt) {
                PUT(p, ",\"await_duration\":");
                p += sx_fmt_double(p, (double)row->col[SX_COL_AWAIT][i] / 1e9);
            }
            memcpy(p, post.data, post.len);
            p += post.len;
            out->len = (size_t)(p - out->data);
        }
        if (out->data != NULL)
            out->data[out->len] = '\0';
    }
    (void)max_end; /* the end of the rank's timeline, for its counter events */
out:
    SX_CHECK(st != SX_OK || !out->failed, SX_ERR_NOMEM, err, t->run->path,
             "%s: out of memory formatting the trace of rank %" PRId64, t->run->path,
             rank);
    free(lanes);
    sx_buf_free(&tmp);
    sx_buf_free(&pre);
    sx_buf_free(&post);
    return st;
}
