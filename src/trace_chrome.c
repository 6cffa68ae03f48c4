/* trace_chrome.c - the Chrome Trace Event document (Perfetto UI, Chromium DevTools) */
#include "json_write.h"
#include "run.h"
#include "trace.h"
#include "trace_doc.h"

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

static struct lane lane_of(const int64_t *task, const int64_t *thread, uint64_t i) {
    if (task != NULL && task[i] >= 0)
        return (struct lane){LANE_TASK, task[i]};
    if (thread != NULL && thread[i] >= 0)
        return (struct lane){LANE_THREAD, thread[i]};
    return (struct lane){LANE_RANK, 0};
}

enum { LANE_CHUNK = 1 << 16 };

static enum sx_status add_lane(const struct sx_trace *t, struct lane **v, size_t *n,
                               size_t *cap, struct lane l, struct sx_error *err) {
    for (size_t j = 0; j < *n; j++)
        if ((*v)[j].kind == l.kind && (*v)[j].index == l.index)
            return SX_OK;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        struct lane *nv = sx_realloc(*v, nc * sizeof *nv);
        if (nv == NULL)
            return sx_error_set(err, SX_ERR_NOMEM, t->run->path, "out of memory");
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = l;
    return SX_OK;
}

/* The sorted set of lanes 'rank' has calls on: one pass over its lane columns. */
static enum sx_status rank_lanes(const struct sx_trace *t, int64_t rank, bool ends,
                                 struct lane **out, size_t *nout, int64_t *max_end,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t n = 0, cap = 0;
    struct lane *v = NULL;
    int64_t *room[SX_NCOLS] = {0};
    /* (an end is read with its start: a delta-encoded run stores durations) */
    const unsigned want = SX_COLBIT(SX_COL_TASK) | SX_COLBIT(SX_COL_THREAD) |
                          (ends ? SX_COLBIT(SX_COL_END) | SX_COLBIT(SX_COL_START) : 0);
    *max_end = INT64_MIN;
    for (size_t g = 0; g < t->nregions; g++) {
        const struct sx_row *row = sx_trace_row(t, g, rank);
        if (row == NULL || row->is_aggregate || row->count == 0)
            continue;
        if (!ends && !(row->cols & want)) {
            st = add_lane(t, &v, &n, &cap, (struct lane){LANE_RANK, 0}, err);
            if (st != SX_OK)
                goto out;
            continue;
        }
        if (room[SX_COL_TASK] == NULL) {
            room[SX_COL_TASK] = sx_malloc(LANE_CHUNK * sizeof(int64_t));
            room[SX_COL_THREAD] = sx_malloc(LANE_CHUNK * sizeof(int64_t));
            room[SX_COL_END] = sx_malloc(LANE_CHUNK * sizeof(int64_t));
            room[SX_COL_START] = sx_malloc(LANE_CHUNK * sizeof(int64_t));
            SX_CHECK(room[SX_COL_TASK] != NULL && room[SX_COL_THREAD] != NULL &&
                         room[SX_COL_END] != NULL && room[SX_COL_START] != NULL,
                     SX_ERR_NOMEM, err, t->run->path, "out of memory");
        }
        for (uint64_t at = 0; at < row->count; at += LANE_CHUNK) {
            const uint64_t m =
                row->count - at < LANE_CHUNK ? row->count - at : LANE_CHUNK;
            const int64_t *col[SX_NCOLS];
            st = sx_trace_slice(t, row, at, m, want, room, col, err);
            if (st != SX_OK)
                goto out;
            for (uint64_t i = 0; ends && i < m; i++)
                if (col[SX_COL_END][i] > *max_end)
                    *max_end = col[SX_COL_END][i];
            struct lane prev = {-1, 0};
            for (uint64_t i = 0; i < m; i++) {
                struct lane l = lane_of(col[SX_COL_TASK], col[SX_COL_THREAD], i);
                if (l.kind == prev.kind && l.index == prev.index)
                    continue;
                prev = l;
                st = add_lane(t, &v, &n, &cap, l, err);
                if (st != SX_OK)
                    goto out;
            }
        }
    }
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_lane);
out:
    free(room[SX_COL_TASK]);
    free(room[SX_COL_THREAD]);
    free(room[SX_COL_END]);
    free(room[SX_COL_START]);
    if (st != SX_OK) {
        free(v);
        v = NULL;
        n = 0;
    }
    *out = v;
    *nout = n;
    return st;
}

/* Per selected rank: its lanes, once worked out on this process. */
struct rank_lanes {
    bool ready;
    struct lane *lanes;
    size_t n;
    int64_t max_end; /* the latest end_ns of the rank's calls, INT64_MIN for none */
};

/* What a process keeps between blocks: each selected rank's lanes. */
struct sx_chrome_cache {
    const struct sx_trace *t;
    struct rank_lanes *r; /* per selected rank */
    size_t n;
    /* reused room for the columns of a block's slices */
    int64_t *room[SX_NCOLS];
    size_t room_n;
};

static void chrome_free(void *fmt) {
    struct sx_chrome_cache *cc = fmt;
    if (cc == NULL)
        return;
    for (size_t k = 0; k < cc->n; k++)
        free(cc->r[k].lanes);
    for (int c = 0; c < SX_NCOLS; c++)
        free(cc->room[c]);
    free(cc->r);
    free(cc);
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

static void chrome_head(void *fmt, struct sx_buf *out) {
    const struct sx_trace *t = ((const struct sx_chrome_cache *)fmt)->t;
    sx_buf_puts(out, "{\"displayTimeUnit\":\"ms\",\"metadata\":{\"name\":");
    sx_buf_cstr(out, t->label);
    sx_buf_puts(out, ",\"exporter\":\"scope-export@" SX_VERSION_STRING
                     "\"},\"traceEvents\":[");
}

static void chrome_tail(void *fmt, struct sx_buf *out) {
    (void)fmt;
    sx_buf_puts(out, "]}");
}

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
        out->failed |= tmp->failed; /* the scratch text's failure is the document's */
        sx_buf_puts(out, ",\"lane\":\"async task\",\"task_index\":");
        put_i64(out, l.index);
    } else if (l.kind == LANE_THREAD) {
        sx_trace_lane_label(t->run, -2 - l.index, rank, tmp);
        sx_buf_str(out, tmp->data ? tmp->data : "", tmp->len);
        out->failed |= tmp->failed; /* the scratch text's failure is the document's */
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

/*
 * The items of selected rank 'k' from its call 'from' to 'to' (calls in
 * region order): the process and lane names first when 'from' is 0, each
 * item after a ',' unless it is the document's first.
 */
static enum sx_status chrome_block(void *fmt, size_t k, uint64_t from, uint64_t to,
                                   struct sx_buf *out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_chrome_cache *cc = fmt;
    const struct sx_trace *t = cc->t;
    const int64_t rank = t->ranks[k];
    struct sx_buf tmp = {0}, pre = {0}, post = {0};
    struct rank_lanes *rl = &cc->r[k];

    const struct sx_perf_rank *perf = NULL;
    for (size_t i = 0; i < t->nperf && perf == NULL; i++)
        if (t->perf[i].rank == rank && t->perf[i].n > 0)
            perf = &t->perf[i];
    if (!rl->ready) {
        st = rank_lanes(t, rank, perf != NULL, &rl->lanes, &rl->n, &rl->max_end, err);
        if (st != SX_OK)
            goto out;
        rl->ready = true;
    }
    const struct lane *lanes = rl->lanes;
    const size_t nl = rl->n;
    if (from == 0) {
        if (k > 0)
            sx_buf_putc(out, ',');
        sx_buf_puts(out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
        put_i64(out, rank);
        sx_buf_puts(out, ",\"tid\":0,\"args\":{\"name\":\"rank ");
        put_i64(out, rank);
        sx_buf_puts(out, "\"}}");
        for (size_t i = 0; i < nl; i++)
            thread_name_item(t, rank, i, lanes[i], out, &tmp);
    }

    const double origin = t->chrome_origin;
    char rank_text[24];
    size_t rank_len = sx_fmt_i64(rank_text, rank);
    uint64_t at = 0; /* the rank's calls before this row */
    for (size_t g = 0; g < t->nregions && at < to; g++) {
        const struct sx_row *row = sx_trace_row(t, g, rank);
        if (row == NULL || row->is_aggregate || row->count == 0)
            continue;
        const uint64_t row_at = at;
        at += row->count;
        if (at <= from)
            continue;
        const uint64_t a = from > row_at ? from - row_at : 0;
        const uint64_t z = (to < at ? to : at) - row_at;
        /* room for the slice's columns */
        if (z - a > cc->room_n) {
            for (int c = 0; c < SX_NCOLS; c++) {
                free(cc->room[c]);
                cc->room[c] = sx_malloc((z - a) * sizeof(int64_t));
                SX_CHECK(cc->room[c] != NULL, SX_ERR_NOMEM, err, t->run->path,
                         "out of memory");
            }
            cc->room_n = z - a;
        }
        const int64_t *col[SX_NCOLS];
        st = sx_trace_slice(t, row, a, z - a, row->cols, cc->room, col, err);
        if (st != SX_OK)
            goto out;
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
        const bool ids = col[SX_COL_CALL] != NULL && col[SX_COL_PARENT] != NULL;
        const int64_t *gpu = col[SX_COL_GPU];
        const int64_t *awt = col[SX_COL_TASK] != NULL ? col[SX_COL_AWAIT] : NULL;
        const int64_t *s = col[SX_COL_START], *e = col[SX_COL_END];
        struct lane cur = {-1, 0};
        size_t tid = 0;
        /* an event's room: its longest fields (five doubles of 25 bytes, four
         * integers of 20), and the 32 bytes sx_fmt_double may use past the last */
        const size_t per = pre.len + post.len + 512;
        const uint64_t n = z - a;
        for (uint64_t i = 0; i < n; i++) {
            if ((i & 1023) == 0 && !sx_buf_reserve(out, per * 1024))
                break;
            const double start = (double)s[i] / 1e9 - origin;
            const double end = (double)e[i] / 1e9 - origin;
            const double dur = end - start;
            struct lane l = lane_of(col[SX_COL_TASK], col[SX_COL_THREAD], i);
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
            p += sx_fmt_u64(p, a + i);
            PUT(p, ",\"duration_s\":");
            p += sx_fmt_double(p, dur);
            if (ids) {
                PUT(p, ",\"call_id\":");
                p += sx_fmt_i64(p, col[SX_COL_CALL][i]);
                PUT(p, ",\"parent_id\":");
                p += sx_fmt_i64(p, col[SX_COL_PARENT][i]);
            }
            if (gpu != NULL) {
                PUT(p, ",\"gpu_duration\":");
                p += sx_fmt_double(p, (double)gpu[i] / 1e9);
            }
            if (awt != NULL) {
                PUT(p, ",\"await_duration\":");
                p += sx_fmt_double(p, (double)awt[i] / 1e9);
            }
            memcpy(p, post.data, post.len);
            p += post.len;
            out->len = (size_t)(p - out->data);
        }
        if (out->data != NULL)
            out->data[out->len] = '\0';
    }
    /* After the rank's last call: its perf counter totals, at the end of its timeline. */
    if (perf != NULL && to >= sx_trace_rank_calls(t, rank)) {
        const double end = rl->max_end == INT64_MIN
                               ? 0.0
                               : ((double)rl->max_end / 1e9 - origin) * 1000000;
        for (size_t j = 0; j < perf->n; j++) {
            const struct sx_perf_region *pr = &perf->regions[j];
            sx_buf_reset(&tmp);
            sx_buf_puts(&tmp, "perf events: ");
            sx_buf_puts(&tmp, pr->name);
            sx_buf_puts(out, ",{\"name\":");
            sx_buf_str(out, tmp.data ? tmp.data : "", tmp.len);
            out->failed |= tmp.failed;
            sx_buf_puts(out, ",\"cat\":\"perf_events\",\"ph\":\"C\",\"ts\":");
            sx_buf_double(out, end);
            sx_buf_puts(out, ",\"pid\":");
            put_i64(out, rank);
            sx_buf_puts(out, ",\"tid\":0,\"args\":{");
            /* a dict: a repeated name keeps its first place and its last value */
            bool calls_seen = false;
            for (size_t e = 0; e < pr->nevents; e++) {
                bool dup = false;
                for (size_t f = 0; f < e && !dup; f++)
                    dup = strcmp(pr->event_names[f], pr->event_names[e]) == 0;
                if (dup)
                    continue;
                uint64_t val = pr->values[e];
                for (size_t f = e + 1; f < pr->nevents; f++)
                    if (strcmp(pr->event_names[f], pr->event_names[e]) == 0)
                        val = pr->values[f];
                if (e > 0)
                    sx_buf_putc(out, ',');
                sx_buf_cstr(out, pr->event_names[e]);
                sx_buf_putc(out, ':');
                if (strcmp(pr->event_names[e], "calls") == 0) {
                    val = pr->calls;
                    calls_seen = true;
                }
                sx_buf_u64(out, val);
            }
            if (!calls_seen) {
                sx_buf_puts(out, pr->nevents > 0 ? ",\"calls\":" : "\"calls\":");
                sx_buf_u64(out, pr->calls);
            }
            sx_buf_puts(out, "}}");
        }
    }
out:
    if (st == SX_OK && out->failed)
        st = sx_error_set(err, SX_ERR_NOMEM, t->run->path,
                          "%s: out of memory formatting the trace of rank %" PRId64,
                          t->run->path, rank);
    sx_buf_free(&tmp);
    sx_buf_free(&pre);
    sx_buf_free(&post);
    return st;
}

/* NOTE: collective (nothing to agree on: each rank's lanes are found by its first block).
 */
static enum sx_status chrome_prepare(const struct sx_pipe *p, struct sx_trace *t,
                                     void **fmt, struct sx_error *err) {
    struct sx_chrome_cache *cc = sx_calloc(1, sizeof *cc);
    *fmt = cc;
    if (cc == NULL)
        return sx_error_set(err, SX_ERR_NOMEM, p->run->path, "out of memory");
    cc->t = t;
    cc->r = sx_calloc(t->nranks + 1, sizeof *cc->r);
    if (cc->r == NULL)
        return sx_error_set(err, SX_ERR_NOMEM, p->run->path, "out of memory");
    cc->n = t->nranks;
    return SX_OK;
}

/* An "X" item a call (about 230 bytes); rank 0's alone unless --ranks says otherwise. */
static const struct sx_trace_format chrome_format = {
    .name = "Chrome trace",
    .call_bytes = 230,
    .prepare = chrome_prepare,
    .head = chrome_head,
    .tail = chrome_tail,
    .block = chrome_block,
    .free = chrome_free,
};

static enum sx_status chrome_plan(const struct sx_pipe *p, struct sx_doc_state *ds,
                                  struct sx_error *err) {
    return sx_trace_doc_plan(p, ds, &chrome_format, err);
}

/* The trace documents need the lanes' names; Chrome's the perf counter totals too. */
const struct sx_doc_type sx_doc_chrome = {
    .format = SX_FORMAT_CHROME_TRACE,
    .events_for = "Chrome trace document needs",
    .needs = SX_NEED_LANES | SX_NEED_PERF | SX_NEED_GPU | SX_NEED_JSON_INPUT,
    .plan = chrome_plan,
    /* a rank's lanes are read by the process that makes its blocks (a native run's
     * file is opened there): whole ranks go out in turns */
    .turns = true,
};
