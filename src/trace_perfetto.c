/* trace_perfetto.c - Perfetto's protobuf trace: a slice per call on its lane's track */
#include "deflate_out.h"
#include "json_write.h"
#include "pipeline.h"
#include "run.h"
#include "trace.h"
#include "trace_doc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Field numbers of Perfetto's schema (protos/perfetto/trace/: trace.proto,
 * trace_packet.proto, interned_data/, track_event/), the messages we write.
 */
enum {
    TRACE_PACKET = 1, /* Trace */

    PKT_CLOCK_SNAPSHOT = 6, /* TracePacket */
    PKT_TIMESTAMP = 8,
    PKT_SEQUENCE_ID = 10,
    PKT_TRACK_EVENT = 11,
    PKT_INTERNED_DATA = 12,
    PKT_SEQUENCE_FLAGS = 13,
    PKT_TRACE_PACKET_DEFAULTS = 59,
    PKT_TRACK_DESCRIPTOR = 60,
    SEQ_INCREMENTAL_STATE_CLEARED = 1,

    DEF_TRACK_EVENT_DEFAULTS = 11, /* TracePacketDefaults */
    DEF_TIMESTAMP_CLOCK_ID = 58,
    DEF_TRACK_UUID = 11, /* TrackEventDefaults */

    SNAP_CLOCKS = 1, /* ClockSnapshot */
    CLK_ID = 1,      /* ClockSnapshot.Clock */
    CLK_TIMESTAMP = 2,
    CLK_IS_INCREMENTAL = 3,

    EV_DEBUG_ANNOTATIONS = 4, /* TrackEvent */
    EV_TYPE = 9,
    EV_NAME_IID = 10,
    EV_TRACK_UUID = 11,
    EV_COUNTER_VALUE = 30,
    EV_SOURCE_LOCATION_IID = 34,
    TYPE_SLICE_BEGIN = 1,
    TYPE_SLICE_END = 2,
    TYPE_COUNTER = 4,

    ANN_NAME_IID = 1, /* DebugAnnotation */
    ANN_INT_VALUE = 4,
    ANN_DOUBLE_VALUE = 5,

    INT_EVENT_NAMES = 2, /* InternedData */
    INT_ANNOTATION_NAMES = 3,
    INT_SOURCE_LOCATIONS = 4,
    NAME_IID = 1, /* EventName, DebugAnnotationName */
    NAME_NAME = 2,
    LOC_IID = 1, /* SourceLocation */
    LOC_FILE_NAME = 2,
    LOC_LINE_NUMBER = 4,

    TRACK_UUID = 1, /* TrackDescriptor */
    TRACK_NAME = 2,
    TRACK_PROCESS = 3,
    TRACK_THREAD = 4,
    TRACK_PARENT_UUID = 5,
    TRACK_COUNTER = 8,
    PROCESS_PID = 1, /* ProcessDescriptor */
    PROCESS_NAME = 6,
    THREAD_PID = 1, /* ThreadDescriptor */
    THREAD_TID = 2,
    THREAD_NAME = 5,

    WT_VARINT = 0,
    WT_FIXED64 = 1,
    WT_LEN = 2
};

/* The debug annotations of a slice: the Chrome trace's args that its times do not give.
 */
enum { ANN_CALL_INDEX = 1, ANN_CALL_ID, ANN_PARENT_ID, ANN_GPU, ANN_AWAIT, ANN_N };
static const char *const ann_names[ANN_N] = {
    NULL, "call_index", "call_id", "parent_id", "gpu_duration", "await_duration"};

/* A track's uuid: (rank + 1) << TRACK_BITS is the process track, then its tracks. */
enum { TRACK_BITS = 20 };

/* ------------------------------------------------------------------ */
/* The wire format                                                      */

/* The longest varint, and the most an event's fixed fields take. */
enum { VARINT_MAX = 10 };

static uint8_t *put_varint(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static uint8_t *put_key(uint8_t *p, unsigned field, unsigned wt) {
    return put_varint(p, (uint64_t)field << 3 | wt);
}

static uint8_t *put_uint(uint8_t *p, unsigned field, uint64_t v) {
    return put_varint(put_key(p, field, WT_VARINT), v);
}

static uint8_t *put_double(uint8_t *p, unsigned field, double d) {
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    p = put_key(p, field, WT_FIXED64);
    for (int i = 0; i < 8; i++)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

static size_t varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* The cold path (descriptors, interned data): messages built in buffers. */
static void pb_uint(struct sx_buf *b, unsigned field, uint64_t v) {
    if (!sx_buf_reserve(b, 2 * VARINT_MAX))
        return;
    uint8_t *p = (uint8_t *)b->data + b->len;
    b->len = (size_t)((char *)put_uint(p, field, v) - b->data);
}

static void pb_bytes(struct sx_buf *b, unsigned field, const void *s, size_t n) {
    if (!sx_buf_reserve(b, 2 * VARINT_MAX + n))
        return;
    uint8_t *p = (uint8_t *)b->data + b->len;
    p = put_varint(put_key(p, field, WT_LEN), n);
    if (n > 0)
        memcpy(p, s, n);
    b->len = (size_t)((char *)p - b->data) + n;
}

static void pb_str(struct sx_buf *b, unsigned field, const char *s) {
    pb_bytes(b, field, s, strlen(s));
}

static void pb_msg(struct sx_buf *b, unsigned field, const struct sx_buf *m) {
    b->failed |= m->failed;
    pb_bytes(b, field, m->data, m->len);
}

/* ------------------------------------------------------------------ */
/* A rank's calls, sorted into tracks that nest                         */

/* A lane as the Chrome trace numbers them: kind ("rank" < "task" < "thread"), index. */
enum { LANE_RANK = 0, LANE_TASK = 1, LANE_THREAD = 2 };

struct pcall {
    int64_t start, end;
    int64_t lane_index; /* task or thread index */
    uint64_t index;     /* the call's number in its row */
    uint64_t seq;       /* position in region order: the stable tie-break */
    int64_t parent;     /* the enclosing call's position on its track, or -1 */
    uint32_t region;    /* region position */
    uint32_t track;     /* before the tracks are known: the lane's kind, then sub-track */
    uint32_t sub;       /* 0: the lane's thread track; j > 0: its j-th overlap track */
};

struct ptrack {
    uint32_t lane; /* the lane's position: the Chrome trace's tid */
    uint32_t sub;
    int kind;
    int64_t lane_index;
    size_t first, n; /* its calls */
};

struct pf_cache {
    struct sx_trace *t;
    char **names;  /* per region position: the name, valid UTF-8 */
    char **files;  /* per region position: the source file, valid UTF-8, or NULL */
    bool *used;    /* per region position, for a block's interned names */
    size_t loaded; /* the selected rank whose calls are built, or t->nranks */
    int64_t rank;
    struct pcall *calls; /* sorted by track, start, -end, seq */
    size_t n;
    struct ptrack *tracks;
    size_t ntracks;
    const struct sx_row **rows; /* per region position: the rank's row */
    bool *unsorted;             /* per region position: the row's calls are not in time
                                   order (their index says more than the slices' order) */
    int64_t max_end;            /* the latest end of the rank's calls */
    int level;                  /* compressed packets: zlib's level and engine */
    enum sx_deflate eng;
    struct sx_buf raw; /* a block's packets before they are compressed */
};

static int cmp_lane_order(const struct pcall *x, const struct pcall *y) {
    if (x->track != y->track) /* (the lane's kind, while sorting by lane) */
        return x->track < y->track ? -1 : 1;
    if (x->lane_index != y->lane_index)
        return x->lane_index < y->lane_index ? -1 : 1;
    return 0;
}

static int cmp_time(const struct pcall *x, const struct pcall *y) {
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_by_lane(const void *a, const void *b) {
    int c = cmp_lane_order(a, b);
    return c != 0 ? c : cmp_time(a, b);
}

static int cmp_by_track(const void *a, const void *b) {
    const struct pcall *x = a, *y = b;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    return cmp_time(x, y);
}

/* Call 'j' has ended when 'c' starts (a zero-length call only after its instant). */
static bool closed(const struct pcall *j, const struct pcall *c) {
    return 2 * j->end + (j->end == j->start ? 1 : 0) <= 2 * c->start;
}

struct stack {
    size_t *v;
    size_t n, cap;
};

static bool push(struct stack *s, size_t i) {
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 64;
        size_t *nv = sx_realloc(s->v, nc * sizeof *nv);
        if (nv == NULL)
            return false;
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n++] = i;
    return true;
}

static void unload(struct pf_cache *pc) {
    if (pc->loaded < pc->t->nranks)
        sx_trace_unload_rank(pc->t, pc->rank);
    pc->loaded = pc->t->nranks;
    free(pc->calls);
    free(pc->tracks);
    pc->calls = NULL;
    pc->tracks = NULL;
    pc->n = pc->ntracks = 0;
}

/*
 * The calls of one lane, [c, c + n), sorted by time: each goes on the first
 * of the lane's tracks where it nests (the thread track, or an overlap
 * track made for calls that overlap without nesting). Sets 'sub'.
 */
static enum sx_status assign_subs(struct pf_cache *pc, struct pcall *c, size_t n,
                                  struct stack **subs, size_t *nsubs, uint32_t *most,
                                  struct sx_error *err) {
    for (size_t s = 0; s < *nsubs; s++)
        (*subs)[s].n = 0;
    for (size_t i = 0; i < n; i++) {
        size_t s = 0;
        for (;; s++) {
            if (s == *nsubs) {
                struct stack *ns = sx_realloc(*subs, (s + 1) * sizeof *ns);
                if (ns == NULL)
                    return sx_error_set(err, SX_ERR_NOMEM, pc->t->run->path,
                                        "out of memory");
                *subs = ns;
                memset(&ns[s], 0, sizeof ns[s]);
                (*nsubs)++;
            }
            struct stack *st = &(*subs)[s];
            while (st->n > 0 && closed(&c[st->v[st->n - 1]], &c[i]))
                st->n--;
            if (st->n == 0 || c[st->v[st->n - 1]].end >= c[i].end)
                break;
        }
        if (!push(&(*subs)[s], i))
            return sx_error_set(err, SX_ERR_NOMEM, pc->t->run->path, "out of memory");
        c[i].sub = (uint32_t)s;
        if (s > *most)
            *most = (uint32_t)s;
    }
    return SX_OK;
}

/* The columns a slice and its annotations use. */
#define PF_COLS                                                                          \
    (SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END) | SX_COLBIT(SX_COL_THREAD) |        \
     SX_COLBIT(SX_COL_TASK) | SX_COLBIT(SX_COL_CALL) | SX_COLBIT(SX_COL_PARENT) |        \
     SX_COLBIT(SX_COL_GPU) | SX_COLBIT(SX_COL_AWAIT))

/* The rank's perf counter totals (rank<N>/perf_events), or NULL. */
static const struct sx_perf_rank *perf_of(const struct sx_trace *t, int64_t rank) {
    for (size_t i = 0; i < t->nperf; i++)
        if (t->perf[i].rank == rank && t->perf[i].n > 0)
            return &t->perf[i];
    return NULL;
}

/*
 * Packet sequences: selected rank k's descriptors and counters are on
 * sequence 1 + k, its track j's slices on 1 + k + nranks (j + 1), so that
 * the few tracks of a few ranks take one byte. Never 0 (an invalid id).
 */
static uint64_t seq_of(const struct sx_trace *t, size_t k, size_t track_plus_one) {
    return 1 + (uint64_t)k + (uint64_t)t->nranks * track_plus_one;
}

/* Read selected rank k's calls and sort them into tracks; they stay loaded. */
static enum sx_status build_rank(struct pf_cache *pc, size_t k, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_trace *t = pc->t;
    struct stack *subs = NULL, one = {0};
    size_t nsubs = 0;
    if (pc->loaded == k)
        return SX_OK;
    unload(pc);
    const int64_t rank = t->ranks[k];
    pc->rank = rank;
    pc->loaded = k;
    pc->max_end = INT64_MIN;
    st = sx_trace_load_rank(t, rank, PF_COLS, err);
    if (st != SX_OK)
        goto out;
    size_t n = 0;
    for (size_t g = 0; g < t->nregions; g++) {
        const struct sx_row *row = sx_trace_row(t, g, rank);
        pc->rows[g] = row != NULL && !row->is_aggregate ? row : NULL;
        if (pc->rows[g] != NULL)
            n += row->count;
    }
    pc->calls = sx_malloc((n + 1) * sizeof *pc->calls);
    SX_CHECK(pc->calls != NULL, SX_ERR_NOMEM, err, t->run->path,
             "%s: out of memory sorting the %zu calls of rank %" PRId64, t->run->path, n,
             rank);
    size_t at = 0;
    for (size_t g = 0; g < t->nregions; g++) {
        const struct sx_row *row = pc->rows[g];
        if (row == NULL)
            continue;
        const int64_t *th = row->col[SX_COL_THREAD], *tk = row->col[SX_COL_TASK];
        pc->unsorted[g] = false;
        for (uint64_t i = 1; i < row->count && !pc->unsorted[g]; i++)
            pc->unsorted[g] = row->col[SX_COL_START][i] < row->col[SX_COL_START][i - 1];
        for (uint64_t i = 0; i < row->count; i++) {
            struct pcall *c = &pc->calls[at];
            c->start = row->col[SX_COL_START][i];
            c->end = row->col[SX_COL_END][i];
            SX_CHECK(c->end >= c->start, SX_ERR_FORMAT, err, t->run->path,
                     "%s: a recorded call ends before it starts", t->run->path);
            if (c->end > pc->max_end)
                pc->max_end = c->end;
            if (tk != NULL && tk[i] >= 0) {
                c->track = LANE_TASK;
                c->lane_index = tk[i];
            } else if (th != NULL && th[i] >= 0) {
                c->track = LANE_THREAD;
                c->lane_index = th[i];
            } else {
                c->track = LANE_RANK;
                c->lane_index = 0;
            }
            c->index = i;
            c->seq = at;
            c->region = (uint32_t)g;
            c->sub = 0;
            c->parent = -1;
            at++;
        }
    }
    pc->n = n;
    qsort(pc->calls, n, sizeof *pc->calls, cmp_by_lane);

    /* Lanes, then each lane's calls on the tracks where they nest. */
    size_t ntracks = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && cmp_lane_order(&pc->calls[i], &pc->calls[j]) == 0)
            j++;
        uint32_t most = 0;
        st = assign_subs(pc, pc->calls + i, j - i, &subs, &nsubs, &most, err);
        if (st != SX_OK)
            goto out;
        ntracks += most + 1;
        i = j;
    }
    const struct sx_perf_rank *perf = perf_of(t, rank);
    size_t counters = 0;
    for (size_t j = 0; perf != NULL && j < perf->n; j++)
        counters += perf->regions[j].nevents + 1;
    SX_CHECK(ntracks + counters < ((size_t)1 << TRACK_BITS) - 1 &&
                 counters < ((size_t)1 << TRACK_BITS) &&
                 seq_of(t, k, ntracks) <= UINT32_MAX,
             SX_ERR_FORMAT, err, t->run->path,
             "%s: rank %" PRId64 " has too many overlapping calls for the trace's tracks",
             t->run->path, rank);
    pc->tracks = sx_malloc((ntracks + 1) * sizeof *pc->tracks);
    SX_CHECK(pc->tracks != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
    /* number the tracks: lane by lane, the thread track and then the overlap tracks */
    uint32_t lane = 0, base = 0;
    bool resort = false;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && cmp_lane_order(&pc->calls[i], &pc->calls[j]) == 0)
            j++;
        uint32_t most = 0;
        for (size_t q = i; q < j; q++)
            if (pc->calls[q].sub > most)
                most = pc->calls[q].sub;
        for (uint32_t s = 0; s <= most; s++)
            pc->tracks[base + s] = (struct ptrack){
                lane, s, (int)pc->calls[i].track, pc->calls[i].lane_index, 0, 0};
        for (size_t q = i; q < j; q++) {
            resort |= pc->calls[q].sub != 0;
            pc->calls[q].track = base + pc->calls[q].sub;
        }
        base += most + 1;
        lane++;
        i = j;
    }
    pc->ntracks = ntracks;
    if (resort)
        qsort(pc->calls, n, sizeof *pc->calls, cmp_by_track);
    /* Each track's calls nest: their parents, from one stack. */
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && pc->calls[j].track == pc->calls[i].track)
            j++;
        struct ptrack *tr = &pc->tracks[pc->calls[i].track];
        tr->first = i;
        tr->n = j - i;
        one.n = 0;
        for (size_t q = i; q < j; q++) {
            while (one.n > 0 && closed(&pc->calls[one.v[one.n - 1]], &pc->calls[q]))
                one.n--;
            pc->calls[q].parent = one.n > 0 ? (int64_t)one.v[one.n - 1] : -1;
            SX_CHECK(push(&one, q), SX_ERR_NOMEM, err, t->run->path, "out of memory");
        }
        i = j;
    }
out:
    for (size_t s = 0; s < nsubs; s++)
        free(subs[s].v);
    free(subs);
    free(one.v);
    if (st != SX_OK)
        unload(pc);
    return st;
}

static void pf_cache_free(void *fmt);

static struct pf_cache *pf_cache_new(struct sx_trace *t) {
    struct pf_cache *pc = sx_calloc(1, sizeof *pc);
    if (pc == NULL)
        return NULL;
    pc->t = t;
    pc->loaded = t->nranks;
    pc->names = sx_calloc(t->nregions + 1, sizeof *pc->names);
    pc->files = sx_calloc(t->nregions + 1, sizeof *pc->files);
    pc->used = sx_calloc(t->nregions + 1, sizeof *pc->used);
    pc->rows = sx_calloc(t->nregions + 1, sizeof *pc->rows);
    pc->unsorted = sx_calloc(t->nregions + 1, sizeof *pc->unsorted);
    bool ok = pc->names != NULL && pc->files != NULL && pc->used != NULL &&
              pc->rows != NULL && pc->unsorted != NULL;
    for (size_t g = 0; ok && g < t->nregions; g++) {
        const char *name = t->run->names[t->regions[g]];
        pc->names[g] = sx_utf8_sanitize(name, strlen(name));
        ok = pc->names[g] != NULL;
        if (ok && t->src_file[g] != NULL) {
            pc->files[g] = sx_utf8_sanitize(t->src_file[g], strlen(t->src_file[g]));
            ok = pc->files[g] != NULL;
        }
    }
    if (!ok) {
        pf_cache_free(pc);
        return NULL;
    }
    return pc;
}

static void pf_cache_free(void *fmt) {
    struct pf_cache *pc = fmt;
    if (pc == NULL)
        return;
    unload(pc);
    for (size_t g = 0; pc->names != NULL && g < pc->t->nregions; g++)
        free(pc->names[g]);
    for (size_t g = 0; pc->files != NULL && g < pc->t->nregions; g++)
        free(pc->files[g]);
    free(pc->names);
    free(pc->files);
    free(pc->used);
    free(pc->rows);
    free(pc->unsorted);
    sx_buf_free(&pc->raw);
    free(pc);
}

/* ------------------------------------------------------------------ */
/* Packets                                                              */

/*
 * A slice's times are exact nanoseconds on a clock of its track's sequence
 * that counts in steps (ClockSnapshot's is_incremental): each packet's
 * timestamp is the time since the sequence's previous packet, a varint of
 * two or three bytes where an absolute time takes eight. The clock starts
 * at each segment's first time, BOOTTIME's value in the same snapshot.
 */
enum { CLOCK_BOOTTIME = 6, CLOCK_SEQ = 64 };

static uint64_t process_uuid(int64_t rank) { return ((uint64_t)rank + 1) << TRACK_BITS; }

/* A packet of sequence 'seq' around 'body' (a TracePacket's data field). */
static void packet(struct sx_buf *out, uint64_t seq, bool has_ts, int64_t ts,
                   unsigned field, const struct sx_buf *body, struct sx_buf *tmp) {
    sx_buf_reset(tmp);
    if (has_ts)
        pb_uint(tmp, PKT_TIMESTAMP, (uint64_t)ts);
    pb_uint(tmp, PKT_SEQUENCE_ID, seq);
    pb_msg(tmp, field, body);
    pb_msg(out, TRACE_PACKET, tmp);
}

/* The lane's name, as the Chrome trace's thread_name item gives it. */
static void lane_name(const struct sx_trace *t, int64_t rank, const struct ptrack *tr,
                      struct sx_buf *name) {
    sx_buf_reset(name);
    if (tr->kind == LANE_TASK) {
        sx_trace_lane_label(t->run, tr->lane_index, rank, name);
    } else if (tr->kind == LANE_THREAD) {
        sx_trace_lane_label(t->run, -2 - tr->lane_index, rank, name);
    } else {
        sx_buf_puts(name, "rank ");
        sx_buf_i64(name, rank);
    }
    if (name->data != NULL) {
        char *clean = sx_utf8_sanitize(name->data, name->len);
        sx_buf_reset(name);
        if (clean == NULL)
            name->failed = true;
        else
            sx_buf_puts(name, clean);
        free(clean);
    }
    if (tr->sub > 0) {
        char tmp[48];
        snprintf(tmp, sizeof tmp, " (overlap %" PRIu32 ")", tr->sub);
        sx_buf_puts(name, tmp);
    }
}

/* The process track and the rank's tracks, each a packet of the rank's sequence. */
static void descriptors(struct pf_cache *pc, uint64_t seq, struct sx_buf *out,
                        struct sx_buf *a, struct sx_buf *b, struct sx_buf *c) {
    const struct sx_trace *t = pc->t;
    const int64_t rank = pc->rank;
    char text[48];
    snprintf(text, sizeof text, "rank %" PRId64, rank);
    sx_buf_reset(b);
    pb_uint(b, PROCESS_PID, (uint64_t)rank);
    pb_str(b, PROCESS_NAME, text);
    sx_buf_reset(a);
    pb_uint(a, TRACK_UUID, process_uuid(rank));
    pb_msg(a, TRACK_PROCESS, b);
    packet(out, seq, false, 0, PKT_TRACK_DESCRIPTOR, a, c);
    for (size_t i = 0; i < pc->ntracks; i++) {
        const struct ptrack *tr = &pc->tracks[i];
        sx_buf_reset(a);
        pb_uint(a, TRACK_UUID, process_uuid(rank) + 1 + i);
        lane_name(t, rank, tr, c);
        if (tr->sub == 0) {
            /* a thread of the process; tid 0 is the kernel's idle task to Perfetto */
            sx_buf_reset(b);
            pb_uint(b, THREAD_PID, (uint64_t)rank);
            pb_uint(b, THREAD_TID, (uint64_t)tr->lane + 1);
            pb_bytes(b, THREAD_NAME, c->data, c->len);
            out->failed |= c->failed;
            pb_msg(a, TRACK_THREAD, b);
        } else {
            /* calls that overlap on the lane without nesting: a track of the process */
            pb_uint(a, TRACK_PARENT_UUID, process_uuid(rank));
            pb_bytes(a, TRACK_NAME, c->data, c->len);
            out->failed |= c->failed;
        }
        packet(out, seq, false, 0, PKT_TRACK_DESCRIPTOR, a, c);
    }
}

/*
 * After the rank's last call: its perf counter totals, as the Chrome trace's
 * counter events give them (a repeated name keeps its last value, "calls" is
 * the region's count), each a counter track of the process with one value at
 * the end of the rank's timeline (an absolute time: the rank's sequence has
 * no clock of its own).
 */
static void perf_counters(struct pf_cache *pc, uint64_t seq, struct sx_buf *out,
                          struct sx_buf *a, struct sx_buf *b, struct sx_buf *c) {
    const struct sx_perf_rank *perf = perf_of(pc->t, pc->rank);
    const int64_t at = pc->max_end == INT64_MIN ? 0 : pc->max_end;
    uint64_t uuid = process_uuid(pc->rank) + 1 + pc->ntracks;
    for (size_t j = 0; perf != NULL && j < perf->n; j++) {
        const struct sx_perf_region *pr = &perf->regions[j];
        bool calls_seen = false;
        for (size_t e = 0; e <= pr->nevents; e++) {
            const char *name = e < pr->nevents ? pr->event_names[e] : "calls";
            bool dup = false;
            for (size_t f = 0; f < e && !dup; f++)
                dup = strcmp(pr->event_names[f], name) == 0;
            if (dup || (e == pr->nevents && calls_seen))
                continue;
            uint64_t val = e < pr->nevents ? pr->values[e] : pr->calls;
            for (size_t f = e + 1; f < pr->nevents; f++)
                if (strcmp(pr->event_names[f], name) == 0)
                    val = pr->values[f];
            if (strcmp(name, "calls") == 0) {
                val = pr->calls;
                calls_seen = true;
            }
            sx_buf_reset(b);
            sx_buf_puts(b, "perf events: ");
            sx_buf_puts(b, pr->name);
            sx_buf_putc(b, ' ');
            sx_buf_puts(b, name);
            char *label = b->data != NULL ? sx_utf8_sanitize(b->data, b->len) : NULL;
            out->failed |= label == NULL;
            sx_buf_reset(a);
            pb_uint(a, TRACK_UUID, uuid);
            pb_uint(a, TRACK_PARENT_UUID, process_uuid(pc->rank));
            pb_str(a, TRACK_NAME, label != NULL ? label : "");
            pb_bytes(a, TRACK_COUNTER, "", 0);
            free(label);
            packet(out, seq, false, 0, PKT_TRACK_DESCRIPTOR, a, c);
            sx_buf_reset(a);
            pb_uint(a, EV_TYPE, TYPE_COUNTER);
            pb_uint(a, EV_TRACK_UUID, uuid);
            pb_uint(a, EV_COUNTER_VALUE, val);
            packet(out, seq, true, at, PKT_TRACK_EVENT, a, c);
            uuid++;
        }
    }
}

/* Which debug annotations a call of region position 'g' carries: the Chrome trace's
 * args that its slice does not already say. */
static bool has_annotations(const struct pf_cache *pc, size_t g) {
    const struct sx_row *row = pc->rows[g];
    return pc->unsorted[g] ||
           (row->col[SX_COL_CALL] != NULL && row->col[SX_COL_PARENT] != NULL) ||
           row->col[SX_COL_GPU] != NULL ||
           (row->col[SX_COL_TASK] != NULL && row->col[SX_COL_AWAIT] != NULL);
}

/*
 * The first packet of a segment (the calls [i0, i1) of one track): its
 * sequence's incremental state cleared, the defaults (the clock, the track),
 * the names its events use, and the clock's start 'ts0'.
 */
static void segment_head(struct pf_cache *pc, uint64_t seq, uint64_t uuid, int64_t ts0,
                         size_t i0, size_t i1, struct sx_buf *out, struct sx_buf *a,
                         struct sx_buf *b, struct sx_buf *c) {
    const struct sx_trace *t = pc->t;
    bool any_ann = false;
    memset(pc->used, 0, t->nregions * sizeof *pc->used);
    for (size_t i = i0; i < i1; i++)
        pc->used[pc->calls[i].region] = true;
    sx_buf_reset(c);
    pb_uint(c, PKT_SEQUENCE_ID, seq);
    pb_uint(c, PKT_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    /* the defaults: the sequence's clock, the track */
    sx_buf_reset(a);
    sx_buf_reset(b);
    pb_uint(b, DEF_TRACK_UUID, uuid);
    pb_uint(a, DEF_TIMESTAMP_CLOCK_ID, CLOCK_SEQ);
    pb_msg(a, DEF_TRACK_EVENT_DEFAULTS, b);
    pb_msg(c, PKT_TRACE_PACKET_DEFAULTS, a);
    /* the names */
    sx_buf_reset(a);
    for (size_t g = 0; g < t->nregions; g++) {
        if (!pc->used[g])
            continue;
        any_ann |= has_annotations(pc, g);
        sx_buf_reset(b);
        pb_uint(b, NAME_IID, g + 1);
        pb_str(b, NAME_NAME, pc->names[g]);
        pb_msg(a, INT_EVENT_NAMES, b);
    }
    for (unsigned k = 1; any_ann && k < ANN_N; k++) {
        sx_buf_reset(b);
        pb_uint(b, NAME_IID, k);
        pb_str(b, NAME_NAME, ann_names[k]);
        pb_msg(a, INT_ANNOTATION_NAMES, b);
    }
    for (size_t g = 0; g < t->nregions; g++) {
        if (!pc->used[g] || pc->files[g] == NULL)
            continue;
        sx_buf_reset(b);
        pb_uint(b, LOC_IID, g + 1);
        pb_str(b, LOC_FILE_NAME, pc->files[g]);
        if (t->src_line[g] != NULL && *t->src_line[g] >= 0 &&
            *t->src_line[g] <= UINT32_MAX)
            pb_uint(b, LOC_LINE_NUMBER, (uint64_t)*t->src_line[g]); /* a uint32 field */
        pb_msg(a, INT_SOURCE_LOCATIONS, b);
    }
    pb_msg(c, PKT_INTERNED_DATA, a);
    /* the clock: BOOTTIME and the sequence's stepping clock read 'ts0' together */
    sx_buf_reset(a);
    sx_buf_reset(b);
    pb_uint(b, CLK_ID, CLOCK_BOOTTIME);
    pb_uint(b, CLK_TIMESTAMP, (uint64_t)ts0);
    pb_msg(a, SNAP_CLOCKS, b);
    sx_buf_reset(b);
    pb_uint(b, CLK_ID, CLOCK_SEQ);
    pb_uint(b, CLK_TIMESTAMP, (uint64_t)ts0);
    pb_uint(b, CLK_IS_INCREMENTAL, 1);
    pb_msg(a, SNAP_CLOCKS, b);
    pb_msg(c, PKT_CLOCK_SNAPSHOT, a);
    pb_msg(out, TRACE_PACKET, c);
}

/* Room an event packet may take: its fields' varints, five annotations. */
enum { EVENT_ROOM = 64 + 5 * 16 + 8 * VARINT_MAX };

/*
 * One event as a packet, straight into 'out' (room reserved): the track
 * event 'ev' of 'nev' bytes is built first, then the packet around it, its
 * timestamp the step 'dt' since the sequence's previous packet.
 */
static uint8_t *event_packet(uint8_t *p, uint64_t dt, uint64_t seq, const uint8_t *ev,
                             size_t nev) {
    const size_t body =
        1 + varint_len(dt) + 1 + varint_len(seq) + 1 + varint_len(nev) + nev;
    p = put_key(p, TRACE_PACKET, WT_LEN);
    p = put_varint(p, body);
    p = put_uint(p, PKT_TIMESTAMP, dt);
    p = put_uint(p, PKT_SEQUENCE_ID, seq);
    p = put_varint(put_key(p, PKT_TRACK_EVENT, WT_LEN), nev);
    memcpy(p, ev, nev);
    return p + nev;
}

/* A segment's events: its sequence, the clock's last reading, the calls still open. */
struct seg {
    uint64_t seq;
    int64_t now;
    struct stack open;
};

static uint8_t *slice_end(uint8_t *p, const struct pcall *c, struct seg *sg) {
    uint8_t ev[8], *e = ev;
    e = put_uint(e, EV_TYPE, TYPE_SLICE_END);
    p = event_packet(p, (uint64_t)(c->end - sg->now), sg->seq, ev, (size_t)(e - ev));
    sg->now = c->end;
    return p;
}

static uint8_t *annotation_int(uint8_t *e, unsigned name, int64_t v) {
    uint8_t *len = put_key(e, EV_DEBUG_ANNOTATIONS, WT_LEN);
    e = put_uint(len + 1, ANN_NAME_IID, name);
    e = put_uint(e, ANN_INT_VALUE, (uint64_t)v);
    *len = (uint8_t)(e - len - 1); /* under 128: one byte */
    return e;
}

static uint8_t *annotation_double(uint8_t *e, unsigned name, double v) {
    uint8_t *len = put_key(e, EV_DEBUG_ANNOTATIONS, WT_LEN);
    e = put_uint(len + 1, ANN_NAME_IID, name);
    e = put_double(e, ANN_DOUBLE_VALUE, v);
    *len = (uint8_t)(e - len - 1);
    return e;
}

static uint8_t *slice_begin(const struct pf_cache *pc, uint8_t *p, const struct pcall *c,
                            struct seg *sg) {
    const struct sx_row *row = pc->rows[c->region];
    const uint64_t i = c->index;
    uint8_t ev[EVENT_ROOM], *e = ev;
    e = put_uint(e, EV_TYPE, TYPE_SLICE_BEGIN);
    e = put_uint(e, EV_NAME_IID, (uint64_t)c->region + 1);
    if (pc->files[c->region] != NULL)
        e = put_uint(e, EV_SOURCE_LOCATION_IID, (uint64_t)c->region + 1);
    if (pc->unsorted[c->region])
        e = annotation_int(e, ANN_CALL_INDEX, (int64_t)i);
    if (row->col[SX_COL_CALL] != NULL && row->col[SX_COL_PARENT] != NULL) {
        e = annotation_int(e, ANN_CALL_ID, row->col[SX_COL_CALL][i]);
        e = annotation_int(e, ANN_PARENT_ID, row->col[SX_COL_PARENT][i]);
    }
    if (row->col[SX_COL_GPU] != NULL)
        e = annotation_double(e, ANN_GPU, (double)row->col[SX_COL_GPU][i] / 1e9);
    if (row->col[SX_COL_TASK] != NULL && row->col[SX_COL_AWAIT] != NULL)
        e = annotation_double(e, ANN_AWAIT, (double)row->col[SX_COL_AWAIT][i] / 1e9);
    p = event_packet(p, (uint64_t)(c->start - sg->now), sg->seq, ev, (size_t)(e - ev));
    sg->now = c->start;
    return p;
}

/* Close the calls still open that have ended by 'c''s start (all when 'c' is NULL). */
static bool close_ended(struct pf_cache *pc, struct seg *sg, const struct pcall *c,
                        struct sx_buf *out) {
    struct stack *s = &sg->open;
    while (s->n > 0 && (c == NULL || closed(&pc->calls[s->v[s->n - 1]], c))) {
        if (!sx_buf_reserve(out, EVENT_ROOM))
            return false;
        uint8_t *p = (uint8_t *)out->data + out->len;
        p = slice_end(p, &pc->calls[s->v[--s->n]], sg);
        out->len = (size_t)((char *)p - out->data);
    }
    return true;
}

/*
 * The calls [i0, i1) of one track of selected rank 'k', the track's own
 * sequence: a head packet, then a packet per BEGIN and END in time order
 * (the calls still open from an earlier block end here too).
 */
static enum sx_status segment(struct pf_cache *pc, size_t k, size_t i0, size_t i1,
                              struct seg *sg, struct sx_buf *out, struct sx_buf *a,
                              struct sx_buf *b, struct sx_buf *c, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_trace *t = pc->t;
    const uint32_t tr = pc->calls[i0].track;
    const struct ptrack *track = &pc->tracks[tr];
    sg->seq = seq_of(t, k, (size_t)tr + 1);
    sg->open.n = 0;
    /* a segment that starts inside a track: the calls still open, outermost first */
    for (int64_t j = (int64_t)i0 - 1;
         i0 > track->first && j >= 0 && pc->calls[j].track == tr; j = pc->calls[j].parent)
        SX_CHECK(push(&sg->open, (size_t)j), SX_ERR_NOMEM, err, t->run->path,
                 "out of memory");
    for (size_t x = 0; x < sg->open.n / 2; x++) {
        size_t y = sg->open.v[x];
        sg->open.v[x] = sg->open.v[sg->open.n - 1 - x];
        sg->open.v[sg->open.n - 1 - x] = y;
    }
    /* the first event: an open call that ends before the first call starts, or it */
    const struct pcall *first = &pc->calls[i0];
    sg->now = first->start;
    if (sg->open.n > 0 && closed(&pc->calls[sg->open.v[sg->open.n - 1]], first))
        sg->now = pc->calls[sg->open.v[sg->open.n - 1]].end;
    segment_head(pc, sg->seq, process_uuid(pc->rank) + 1 + tr, sg->now, i0, i1, out, a, b,
                 c);
    for (size_t i = i0; i < i1; i++) {
        const struct pcall *cl = &pc->calls[i];
        if (!close_ended(pc, sg, cl, out))
            break;
        if (!sx_buf_reserve(out, EVENT_ROOM))
            break;
        uint8_t *p = (uint8_t *)out->data + out->len;
        p = slice_begin(pc, p, cl, sg);
        out->len = (size_t)((char *)p - out->data);
        SX_CHECK(push(&sg->open, i), SX_ERR_NOMEM, err, t->run->path, "out of memory");
    }
    if (i1 == track->first + track->n && !close_ended(pc, sg, NULL, out))
        out->failed = true;
out:
    return st;
}

/*
 * The block's packets as Perfetto's tracing service compresses them: runs of
 * whole packets of at most COMPRESS_RUN bytes, each a zlib stream in a
 * packet's compressed_packets (the reader expands it in its place; each such
 * packet should stay under 512 KB). A lone larger packet stays as it is.
 */
enum { PKT_COMPRESSED_PACKETS = 50, COMPRESS_RUN = 256 * 1024 };

static enum sx_status compress_packets(struct pf_cache *pc, const struct sx_buf *raw,
                                       struct sx_buf *out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const uint8_t *d = (const uint8_t *)raw->data;
    size_t at = 0;
    while (st == SX_OK && at < raw->len) {
        size_t end = at;
        while (end < raw->len) {
            /* a packet: its key (one byte), its length, its body */
            uint64_t len = 0;
            size_t q = end + 1;
            for (unsigned sh = 0; q < raw->len; sh += 7) {
                len |= (uint64_t)(d[q] & 0x7f) << sh;
                if (!(d[q++] & 0x80))
                    break;
            }
            if (end > at && q + len - at > COMPRESS_RUN)
                break;
            end = q + (size_t)len;
        }
        if (end - at > COMPRESS_RUN) { /* one packet alone */
            sx_buf_append(out, d + at, end - at);
            at = end;
            continue;
        }
        const size_t mark = out->len;
        /* room for the packet's head, then the stream after it, moved in place */
        if (!sx_buf_reserve(out, 4 * VARINT_MAX))
            break;
        out->len += 4 * VARINT_MAX;
        st = sx_zlib_compress(d + at, end - at, pc->level, pc->eng, out, err);
        if (st != SX_OK)
            break;
        const size_t zn = out->len - mark - 4 * VARINT_MAX;
        uint8_t head[4 * VARINT_MAX], *p = head;
        p = put_key(p, TRACE_PACKET, WT_LEN);
        p = put_varint(p, 2 + varint_len(zn) + zn);
        p = put_varint(put_key(p, PKT_COMPRESSED_PACKETS, WT_LEN), zn);
        const size_t hn = (size_t)(p - head);
        memmove(out->data + mark + hn, out->data + mark + 4 * VARINT_MAX, zn);
        memcpy(out->data + mark, head, hn);
        out->len = mark + hn + zn;
        at = end;
    }
    return st;
}

/*
 * The packets of selected rank 'k''s sorted calls [from, to): its descriptors
 * first at 0, a segment per track the block touches, its counters at the end.
 */
static enum sx_status pf_block(void *fmt, size_t k, uint64_t from, uint64_t to,
                               struct sx_buf *out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct pf_cache *pc = fmt;
    struct sx_buf a = {0}, b = {0}, c = {0};
    struct seg sg = {0};
    const struct sx_trace *t = pc->t;
    st = build_rank(pc, k, err);
    if (st != SX_OK)
        goto out;
    const uint64_t rank_seq = seq_of(t, k, 0);
    const size_t i0 = (size_t)from, i1 = (size_t)to < pc->n ? (size_t)to : pc->n;
    struct sx_buf *raw = &pc->raw;
    sx_buf_reset(raw);
    if (from == 0)
        descriptors(pc, rank_seq, raw, &a, &b, &c);
    for (size_t i = i0; i < i1 && st == SX_OK;) {
        size_t j = i + 1;
        while (j < i1 && pc->calls[j].track == pc->calls[i].track)
            j++;
        st = segment(pc, k, i, j, &sg, raw, &a, &b, &c, err);
        i = j;
    }
    if (st == SX_OK && (size_t)to >= pc->n)
        perf_counters(pc, rank_seq, raw, &a, &b, &c);
    if (st == SX_OK && !raw->failed)
        st = compress_packets(pc, raw, out, err);
    if (out->data != NULL)
        out->data[out->len] = '\0';
out:
    if (st == SX_OK &&
        (out->failed || pc->raw.failed || a.failed || b.failed || c.failed))
        st = sx_error_set(err, SX_ERR_NOMEM, t->run->path,
                          "%s: out of memory formatting the trace of rank %" PRId64,
                          t->run->path, t->ranks[k]);
    sx_buf_free(&a);
    sx_buf_free(&b);
    sx_buf_free(&c);
    free(sg.open.v);
    return st;
}

/* NOTE: collective (nothing to agree on: each rank's calls are sorted by its first
 * block). */
static enum sx_status pf_prepare(const struct sx_pipe *p, struct sx_trace *t, void **fmt,
                                 struct sx_error *err) {
    struct pf_cache *pc = pf_cache_new(t);
    *fmt = pc;
    if (pc == NULL)
        return sx_error_set(err, SX_ERR_NOMEM, p->run->path, "out of memory");
    pc->level = 1; /* the packets compress well already at zlib's fastest level */
    pc->eng = p->o->deflate;
    return SX_OK;
}

/*
 * No head or tail (a trace is its packets); a packet sequence per selected
 * rank, whose every block clears the incremental state first, so that blocks
 * concatenate. Every rank by default: its trace stays small.
 */
static const struct sx_trace_format pf_format = {
    .name = "Perfetto trace",
    .every_rank = true,
    .call_bytes = 24, /* before compression: blocks of a few MB in memory */
    .prepare = pf_prepare,
    .block = pf_block,
    .free = pf_cache_free,
};

static enum sx_status pf_plan(const struct sx_pipe *p, struct sx_doc_state *ds,
                              struct sx_error *err) {
    return sx_trace_doc_plan(p, ds, &pf_format, err);
}

/* Perfetto's trace: the Chrome trace's lanes and counters, its calls sorted per track. */
const struct sx_doc_type sx_doc_perfetto = {
    .format = SX_FORMAT_PERFETTO,
    .events_for = "Perfetto trace document needs",
    .needs = SX_NEED_LANES | SX_NEED_PERF | SX_NEED_GPU | SX_NEED_JSON_INPUT,
    .plan = pf_plan,
};
