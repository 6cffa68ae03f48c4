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

/* A lane as one sortable number: the kind in the top two bits, then the index. */
static uint64_t lane_key(int kind, int64_t index) {
    return (uint64_t)kind << 62 | ((uint64_t)index & (((uint64_t)1 << 62) - 1));
}

/*
 * A call, 24 bytes, so that a rank's million calls sort by copying words: its
 * lane (a number of the rank's lanes, in their order) while they are sorted by
 * lane, then its track (a lane's tracks follow each other). Its region is the
 * one whose calls' seqs hold its seq; its parent is in pf_cache's 'aux'.
 */
struct pcall {
    int64_t start, end;
    uint32_t seq;  /* position in region order: the stable tie-break; the call's index
                      in its row is seq - first[region] */
    uint32_t lane; /* the lane, then the track */
};

struct ptrack {
    uint32_t lane; /* the lane's position: the Chrome trace's tid */
    uint32_t sub;  /* 0: the lane's thread track; j > 0: its j-th overlap track */
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
    struct pcall *calls; /* in region order, as read */
    uint32_t *ord;       /* the calls in track order (by track, start, -end, seq) */
    uint32_t *tmp;       /* as many: where 'ord' is merged and moved */
    size_t cap;          /* of 'calls', 'ord', 'tmp', 'aux', kept from rank to rank */
    uint32_t *aux;       /* per call: its overlap track while they are placed, then the
                            position of its parent on its track (UINT32_MAX: none) */
    /* the rooms of 'calls', and of 'ord', 'tmp' and 'aux' side by side (which of the
     * first two is which changes as they are sorted), in large frames: a rank of a
     * million calls takes tens of MB, first touched as it is read */
    struct sx_big calls_mem, idx_mem;
    size_t n;
    struct ptrack *tracks;
    size_t ntracks;
    const struct sx_row **rows; /* per region position: the rank's row */
    uint32_t *first;            /* per region position: the seq of its row's first call */
    uint64_t *lanes;            /* the rank's lanes (lane_key), by number */
    uint32_t *lane_slot;        /* a hash of lane keys to numbers + 1 (0: empty) */
    size_t nlanes, lanes_cap, slots;
    bool *unsorted;  /* per region position: the row's calls are not in time
                        order (their index says more than the slices' order) */
    int64_t max_end; /* the latest end of the rank's calls */
    int level;       /* compressed packets: zlib's level and engine */
    enum sx_deflate eng;
    struct sx_buf raw; /* packets not yet compressed */
};

static int cmp_by_lane(const void *a, const void *b) {
    const struct pcall *x = a, *y = b;
    if (x->lane != y->lane)
        return x->lane < y->lane ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
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
    free(pc->tracks);
    free(pc->lanes);
    free(pc->lane_slot);
    pc->lanes = NULL;
    pc->lane_slot = NULL;
    pc->nlanes = pc->lanes_cap = pc->slots = 0;
    pc->tracks = NULL;
    pc->n = pc->ntracks = 0;
}

/* Room for 'n' calls; kept for the next rank (a rank's worth allocated anew each time
 * may leave the freed room to the heap, which does not shrink). */
static bool reserve_calls(struct pf_cache *pc, size_t n) {
    if (n + 2 <= pc->cap)
        return true;
    const size_t cap = n + 2 + n / 8;
    /* (a room that fails is left as it was: 'cap' holds for both still) */
    if (!sx_big_reserve(&pc->calls_mem, cap * sizeof *pc->calls, 0))
        return false;
    pc->calls = pc->calls_mem.p;
    if (!sx_big_reserve(&pc->idx_mem, 3 * cap * sizeof *pc->ord, 0))
        return false;
    pc->ord = pc->idx_mem.p;
    pc->tmp = pc->ord + cap;
    pc->aux = pc->tmp + cap;
    pc->cap = cap;
    return true;
}

/* The call at position 'i' of the track order. */
#define CALL(pc, i) (&(pc)->calls[(pc)->ord[i]])

/*
 * Sort the calls by lane and time, stably, as positions in 'ord': a natural
 * merge sort, whose runs are a row's calls in time order, merged pairwise
 * through 'tmp' (a rank's rows take a few passes). 'aux' holds the runs'
 * starts.
 */
static void sort_calls(struct pf_cache *pc) {
    const size_t n = pc->n;
    size_t nruns = 0;
    for (size_t i = 0; i < n; i++) {
        pc->ord[i] = (uint32_t)i;
        if (i == 0 || cmp_by_lane(&pc->calls[i - 1], &pc->calls[i]) > 0)
            pc->aux[nruns++] = (uint32_t)i;
    }
    pc->aux[nruns] = (uint32_t)n;
    while (nruns > 1) {
        size_t w = 0;
        for (size_t r = 0; r < nruns; r += 2) {
            const size_t a = pc->aux[r], m = pc->aux[r + 1 < nruns ? r + 1 : nruns],
                         e = pc->aux[r + 2 < nruns ? r + 2 : nruns];
            size_t i = a, j = m, o = a;
            while (i < m && j < e)
                pc->tmp[o++] = cmp_by_lane(CALL(pc, j), CALL(pc, i)) < 0 ? pc->ord[j++]
                                                                         : pc->ord[i++];
            memcpy(pc->tmp + o, pc->ord + i, (m - i) * sizeof *pc->tmp);
            o += m - i;
            memcpy(pc->tmp + o, pc->ord + j, (e - j) * sizeof *pc->tmp);
            pc->aux[w++] = (uint32_t)a;
        }
        pc->aux[w] = (uint32_t)n;
        nruns = w;
        uint32_t *x = pc->ord;
        pc->ord = pc->tmp;
        pc->tmp = x;
    }
}

/*
 * The calls of one lane, positions [i0, i0 + n) of the order, sorted by
 * time: each goes on the first of the lane's tracks where it nests (the
 * thread track, or an overlap track made for calls that overlap without
 * nesting). Sets 'aux[i]' to its track's number on the lane.
 */
static enum sx_status assign_subs(struct pf_cache *pc, size_t i0, size_t n,
                                  struct stack **subs, size_t *nsubs, uint32_t *most,
                                  struct sx_error *err) {
    for (size_t s = 0; s < *nsubs; s++)
        (*subs)[s].n = 0;
    for (size_t i = i0; i < i0 + n; i++) {
        const struct pcall *c = CALL(pc, i);
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
            while (st->n > 0 && closed(CALL(pc, st->v[st->n - 1]), c))
                st->n--;
            if (st->n == 0 || CALL(pc, st->v[st->n - 1])->end >= c->end)
                break;
        }
        if (!push(&(*subs)[s], i))
            return sx_error_set(err, SX_ERR_NOMEM, pc->t->run->path, "out of memory");
        pc->aux[i] = (uint32_t)s;
        if (s > *most)
            *most = (uint32_t)s;
    }
    return SX_OK;
}

/* The columns a call's place takes, read in slices; those its annotations take,
 * loaded when its rows have them. */
#define PLACE_COLS                                                                       \
    (SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END) | SX_COLBIT(SX_COL_THREAD) |        \
     SX_COLBIT(SX_COL_TASK))
#define ANN_COLS                                                                         \
    (SX_COLBIT(SX_COL_CALL) | SX_COLBIT(SX_COL_PARENT) | SX_COLBIT(SX_COL_GPU) |         \
     SX_COLBIT(SX_COL_AWAIT))
enum { SLICE_EVENTS = 1 << 16 };

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

/* The region position of the call numbered 'seq': the last whose first seq is not past
 * it (a region without calls shares its first with the next). */
static uint32_t region_of(const struct pf_cache *pc, uint32_t seq) {
    size_t lo = 0, hi = pc->t->nregions;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (pc->first[mid] <= seq)
            lo = mid;
        else
            hi = mid;
    }
    return (uint32_t)lo;
}

/* The number of lane 'key' on the rank: its place in first-seen order. UINT32_MAX when
 * out of memory. */
static uint32_t lane_number(struct pf_cache *pc, uint64_t key) {
    if (2 * (pc->nlanes + 1) > pc->slots) {
        size_t ns = pc->slots ? 2 * pc->slots : 64;
        uint32_t *nv = sx_calloc(ns, sizeof *nv);
        uint64_t *nl = sx_realloc(pc->lanes, ns * sizeof *nl);
        if (nv == NULL || nl == NULL) {
            free(nv);
            if (nl != NULL)
                pc->lanes = nl;
            return UINT32_MAX;
        }
        pc->lanes = nl;
        for (size_t i = 0; i < pc->nlanes; i++) {
            size_t h = (size_t)((pc->lanes[i] * 0x9E3779B97F4A7C15u) >> 20) & (ns - 1);
            while (nv[h] != 0)
                h = (h + 1) & (ns - 1);
            nv[h] = (uint32_t)i + 1;
        }
        free(pc->lane_slot);
        pc->lane_slot = nv;
        pc->slots = ns;
    }
    size_t h = (size_t)((key * 0x9E3779B97F4A7C15u) >> 20) & (pc->slots - 1);
    while (pc->lane_slot[h] != 0) {
        if (pc->lanes[pc->lane_slot[h] - 1] == key)
            return pc->lane_slot[h] - 1;
        h = (h + 1) & (pc->slots - 1);
    }
    pc->lanes[pc->nlanes] = key;
    pc->lane_slot[h] = (uint32_t)++pc->nlanes;
    return (uint32_t)pc->nlanes - 1;
}

struct lane_id {
    uint64_t key;
    uint32_t id;
};

static int cmp_lane_id(const void *a, const void *b) {
    const struct lane_id *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

/* Renumber the calls' lanes in the lanes' order ("rank" < "task" < "thread", index);
 * 'pc->lanes' in that order. */
static enum sx_status order_lanes(struct pf_cache *pc, struct sx_error *err) {
    struct lane_id *v = sx_malloc((pc->nlanes + 1) * sizeof *v);
    uint32_t *to = sx_malloc((pc->nlanes + 1) * sizeof *to);
    if (v == NULL || to == NULL) {
        free(v);
        free(to);
        return sx_error_set(err, SX_ERR_NOMEM, pc->t->run->path, "out of memory");
    }
    for (size_t i = 0; i < pc->nlanes; i++)
        v[i] = (struct lane_id){pc->lanes[i], (uint32_t)i};
    if (pc->nlanes > 1)
        qsort(v, pc->nlanes, sizeof *v, cmp_lane_id);
    for (size_t r = 0; r < pc->nlanes; r++) {
        to[v[r].id] = (uint32_t)r;
        pc->lanes[r] = v[r].key;
    }
    for (size_t i = 0; i < pc->n; i++)
        pc->calls[i].lane = to[pc->calls[i].lane];
    free(v);
    free(to);
    return SX_OK;
}

/* The rank's calls from its rows, read slice by slice: place, lane, region order. */
static enum sx_status read_calls(struct pf_cache *pc, size_t n, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_trace *t = pc->t;
    int64_t *room[SX_NCOLS] = {0};
    for (int c = 0; c < SX_NCOLS; c++)
        if (PLACE_COLS & SX_COLBIT(c)) {
            room[c] = sx_malloc(SLICE_EVENTS * sizeof(int64_t));
            SX_CHECK(room[c] != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
        }
    size_t at = 0;
    for (size_t g = 0; g < t->nregions; g++) {
        const struct sx_row *row = pc->rows[g];
        pc->first[g] = (uint32_t)at;
        if (row == NULL)
            continue;
        pc->unsorted[g] = false;
        int64_t last = INT64_MIN;
        uint64_t last_key = UINT64_MAX;
        uint32_t last_lane = 0;
        for (uint64_t f = 0; f < row->count; f += SLICE_EVENTS) {
            const uint64_t m =
                row->count - f < SLICE_EVENTS ? row->count - f : SLICE_EVENTS;
            const int64_t *col[SX_NCOLS] = {0};
            st = sx_trace_slice(t, row, f, m, PLACE_COLS, room, col, err);
            if (st != SX_OK)
                goto out;
            const int64_t *th = col[SX_COL_THREAD], *tk = col[SX_COL_TASK];
            for (uint64_t i = 0; i < m; i++, at++) {
                struct pcall *c = &pc->calls[at];
                c->start = col[SX_COL_START][i];
                c->end = col[SX_COL_END][i];
                SX_CHECK(c->end >= c->start, SX_ERR_FORMAT, err, t->run->path,
                         "%s: a recorded call ends before it starts", t->run->path);
                pc->unsorted[g] |= c->start < last;
                last = c->start;
                if (c->end > pc->max_end)
                    pc->max_end = c->end;
                const uint64_t key = tk != NULL && tk[i] >= 0 ? lane_key(LANE_TASK, tk[i])
                                     : th != NULL && th[i] >= 0
                                         ? lane_key(LANE_THREAD, th[i])
                                         : lane_key(LANE_RANK, 0);
                c->lane = key == last_key ? last_lane : lane_number(pc, key);
                SX_CHECK(c->lane != UINT32_MAX, SX_ERR_NOMEM, err, t->run->path,
                         "out of memory");
                last_key = key;
                last_lane = c->lane;
                c->seq = (uint32_t)at;
            }
        }
    }
    SX_CHECK(at == n, SX_ERR_INTERNAL, err, t->run->path,
             "%s: the rows' counts changed while their calls were read", t->run->path);
out:
    for (int c = 0; c < SX_NCOLS; c++)
        free(room[c]);
    return st;
}

/* Read selected rank k's calls and sort them into tracks; they stay in memory. */
static enum sx_status build_rank(struct pf_cache *pc, size_t k, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_trace *t = pc->t;
    struct stack *subs = NULL, one = {0};
    size_t nsubs = 0, *count = NULL;
    if (pc->loaded == k)
        return SX_OK;
    unload(pc);
    const int64_t rank = t->ranks[k];
    pc->rank = rank;
    pc->loaded = k;
    pc->max_end = INT64_MIN;
    size_t n = 0;
    unsigned ann = 0;
    for (size_t g = 0; g < t->nregions; g++) {
        const struct sx_row *row = sx_trace_row(t, g, rank);
        pc->rows[g] = row != NULL && !row->is_aggregate ? row : NULL;
        if (pc->rows[g] != NULL) {
            n += row->count;
            ann |= row->cols & ANN_COLS;
        }
    }
    SX_CHECK(n < UINT32_MAX, SX_ERR_FORMAT, err, t->run->path,
             "%s: rank %" PRId64 " has more calls than a Perfetto trace of it can sort",
             t->run->path, rank);
    /* the annotations' columns stay loaded while the rank's blocks are made (with the
     * others: a loaded row is read from memory); without them, the calls are read in
     * slices */
    if (ann != 0)
        st = sx_trace_load_rank(t, rank, ANN_COLS | PLACE_COLS, err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(reserve_calls(pc, n), SX_ERR_NOMEM, err, t->run->path,
             "%s: out of memory sorting the %zu calls of rank %" PRId64, t->run->path, n,
             rank);
    st = read_calls(pc, n, err);
    pc->n = n;
    if (st == SX_OK)
        st = order_lanes(pc, err);
    if (st != SX_OK)
        goto out;
    sort_calls(pc);

    /* Lanes, then each lane's calls on the tracks where they nest. */
    size_t ntracks = 0;
    bool overlaps = false;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && CALL(pc, j)->lane == CALL(pc, i)->lane)
            j++;
        uint32_t most = 0;
        st = assign_subs(pc, i, j - i, &subs, &nsubs, &most, err);
        if (st != SX_OK)
            goto out;
        ntracks += most + 1;
        overlaps |= most > 0;
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
    pc->tracks = sx_calloc(ntracks + 1, sizeof *pc->tracks);
    count = sx_calloc(ntracks + 1, sizeof *count);
    SX_CHECK(pc->tracks != NULL && count != NULL, SX_ERR_NOMEM, err, t->run->path,
             "out of memory");
    /* number the tracks: lane by lane, the thread track and then the overlap tracks */
    uint32_t lane = 0, base = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && CALL(pc, j)->lane == CALL(pc, i)->lane)
            j++;
        uint32_t most = 0;
        for (size_t q = i; q < j; q++)
            if (pc->aux[q] > most)
                most = pc->aux[q];
        const uint64_t key = pc->lanes[CALL(pc, i)->lane];
        const int kind = (int)(key >> 62);
        const int64_t index = (int64_t)(key & (((uint64_t)1 << 62) - 1));
        for (uint32_t s = 0; s <= most; s++)
            pc->tracks[base + s] = (struct ptrack){lane, s, kind, index, 0, 0};
        for (size_t q = i; q < j; q++) {
            CALL(pc, q)->lane = base + pc->aux[q];
            count[base + pc->aux[q]]++;
        }
        base += most + 1;
        lane++;
        i = j;
    }
    pc->ntracks = ntracks;
    /* a lane's overlap tracks after its thread track: a stable count sort by track */
    size_t pos = 0;
    for (size_t r = 0; r < ntracks; r++) {
        pc->tracks[r].first = pos;
        pc->tracks[r].n = count[r];
        pos += count[r];
        count[r] = pc->tracks[r].first;
    }
    if (overlaps) {
        /* stably by track: each lane's overlap tracks after its thread track */
        for (size_t i = 0; i < n; i++)
            pc->tmp[count[CALL(pc, i)->lane]++] = pc->ord[i];
        uint32_t *x = pc->ord;
        pc->ord = pc->tmp;
        pc->tmp = x;
    }
    /* Each track's calls nest: their parents, from one stack. */
    for (size_t r = 0; r < ntracks; r++) {
        const size_t i = pc->tracks[r].first, j = i + pc->tracks[r].n;
        one.n = 0;
        for (size_t q = i; q < j; q++) {
            while (one.n > 0 && closed(CALL(pc, one.v[one.n - 1]), CALL(pc, q)))
                one.n--;
            pc->aux[q] = one.n > 0 ? (uint32_t)one.v[one.n - 1] : UINT32_MAX;
            SX_CHECK(push(&one, q), SX_ERR_NOMEM, err, t->run->path, "out of memory");
        }
    }
out:
    for (size_t s = 0; s < nsubs; s++)
        free(subs[s].v);
    free(subs);
    free(one.v);
    free(count);
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
    pc->first = sx_calloc(t->nregions + 1, sizeof *pc->first);
    bool ok = pc->names != NULL && pc->files != NULL && pc->used != NULL &&
              pc->rows != NULL && pc->unsorted != NULL && pc->first != NULL;
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
    free(pc->first);
    sx_big_free(&pc->calls_mem);
    sx_big_free(&pc->idx_mem);
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
           ((row->cols & SX_COLBIT(SX_COL_TASK)) && row->col[SX_COL_AWAIT] != NULL);
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
        pc->used[region_of(pc, CALL(pc, i)->seq)] = true;
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
    const uint32_t g = region_of(pc, c->seq);
    const struct sx_row *row = pc->rows[g];
    const uint64_t i = c->seq - pc->first[g]; /* its index in its row */
    uint8_t ev[EVENT_ROOM], *e = ev;
    e = put_uint(e, EV_TYPE, TYPE_SLICE_BEGIN);
    e = put_uint(e, EV_NAME_IID, (uint64_t)g + 1);
    if (pc->files[g] != NULL)
        e = put_uint(e, EV_SOURCE_LOCATION_IID, (uint64_t)g + 1);
    if (pc->unsorted[g])
        e = annotation_int(e, ANN_CALL_INDEX, (int64_t)i);
    if (row->col[SX_COL_CALL] != NULL && row->col[SX_COL_PARENT] != NULL) {
        e = annotation_int(e, ANN_CALL_ID, row->col[SX_COL_CALL][i]);
        e = annotation_int(e, ANN_PARENT_ID, row->col[SX_COL_PARENT][i]);
    }
    if (row->col[SX_COL_GPU] != NULL)
        e = annotation_double(e, ANN_GPU, (double)row->col[SX_COL_GPU][i] / 1e9);
    if ((row->cols & SX_COLBIT(SX_COL_TASK)) && row->col[SX_COL_AWAIT] != NULL)
        e = annotation_double(e, ANN_AWAIT, (double)row->col[SX_COL_AWAIT][i] / 1e9);
    p = event_packet(p, (uint64_t)(c->start - sg->now), sg->seq, ev, (size_t)(e - ev));
    sg->now = c->start;
    return p;
}

/* Close the calls still open that have ended by 'c''s start (all when 'c' is NULL). */
static bool close_ended(struct pf_cache *pc, struct seg *sg, const struct pcall *c,
                        struct sx_buf *out) {
    struct stack *s = &sg->open;
    while (s->n > 0 && (c == NULL || closed(CALL(pc, s->v[s->n - 1]), c))) {
        if (!sx_buf_reserve(out, EVENT_ROOM))
            return false;
        uint8_t *p = (uint8_t *)out->data + out->len;
        p = slice_end(p, CALL(pc, s->v[--s->n]), sg);
        out->len = (size_t)((char *)p - out->data);
    }
    return true;
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

/* Compress what 'pc->raw' holds (whole packets) onto 'out'; 'raw' starts again. */
static enum sx_status flush_raw(struct pf_cache *pc, struct sx_buf *out,
                                struct sx_error *err) {
    if (pc->raw.failed)
        return SX_OK; /* (the block's end reports it) */
    enum sx_status st = compress_packets(pc, &pc->raw, out, err);
    sx_buf_reset(&pc->raw);
    return st;
}

/* Raw packets compressed as they come, so that a block of a whole rank's calls takes
 * a few runs of memory before compression. */
enum { RAW_FLUSH = 4 * COMPRESS_RUN };

/*
 * The calls [i0, i1) of one track of selected rank 'k', the track's own
 * sequence: a head packet, then a packet per BEGIN and END in time order
 * (the calls still open from an earlier block end here too).
 */
static enum sx_status segment(struct pf_cache *pc, size_t k, size_t i0, size_t i1,
                              struct seg *sg, struct sx_buf *dst, struct sx_buf *a,
                              struct sx_buf *b, struct sx_buf *c, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_buf *out = &pc->raw;
    const struct sx_trace *t = pc->t;
    const uint32_t tr = CALL(pc, i0)->lane; /* (the track, once sorted) */
    const struct ptrack *track = &pc->tracks[tr];
    sg->seq = seq_of(t, k, (size_t)tr + 1);
    sg->open.n = 0;
    /* a segment that starts inside a track: the calls still open, outermost first */
    for (int64_t j = (int64_t)i0 - 1; i0 > track->first && j >= 0;
         j = pc->aux[j] == UINT32_MAX ? -1 : (int64_t)pc->aux[j])
        SX_CHECK(push(&sg->open, (size_t)j), SX_ERR_NOMEM, err, t->run->path,
                 "out of memory");
    for (size_t x = 0; x < sg->open.n / 2; x++) {
        size_t y = sg->open.v[x];
        sg->open.v[x] = sg->open.v[sg->open.n - 1 - x];
        sg->open.v[sg->open.n - 1 - x] = y;
    }
    /* the first event: an open call that ends before the first call starts, or it */
    const struct pcall *first = CALL(pc, i0);
    sg->now = first->start;
    if (sg->open.n > 0 && closed(CALL(pc, sg->open.v[sg->open.n - 1]), first))
        sg->now = CALL(pc, sg->open.v[sg->open.n - 1])->end;
    segment_head(pc, sg->seq, process_uuid(pc->rank) + 1 + tr, sg->now, i0, i1, out, a, b,
                 c);
    for (size_t i = i0; i < i1; i++) {
        const struct pcall *cl = CALL(pc, i);
        if (!close_ended(pc, sg, cl, out))
            break;
        if (!sx_buf_reserve(out, EVENT_ROOM))
            break;
        uint8_t *p = (uint8_t *)out->data + out->len;
        p = slice_begin(pc, p, cl, sg);
        out->len = (size_t)((char *)p - out->data);
        SX_CHECK(push(&sg->open, i), SX_ERR_NOMEM, err, t->run->path, "out of memory");
        if (out->len >= RAW_FLUSH && (st = flush_raw(pc, dst, err)) != SX_OK)
            goto out;
    }
    if (i1 == track->first + track->n && !close_ended(pc, sg, NULL, out))
        out->failed = true;
out:
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
        while (j < i1 && CALL(pc, j)->lane == CALL(pc, i)->lane)
            j++;
        st = segment(pc, k, i, j, &sg, out, &a, &b, &c, err);
        i = j;
    }
    if (st == SX_OK && (size_t)to >= pc->n)
        perf_counters(pc, rank_seq, raw, &a, &b, &c);
    if (st == SX_OK)
        st = flush_raw(pc, out, err);
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
    /* The packets compress well already at the fastest level. zlib's, unless --deflate
     * isal asks for ISA-L's (where the build has it): half the time for the same size,
     * but its bytes for the same input were seen to differ now and then between runs on
     * a loaded machine (3 runs in 80 at -n 2 against -n 1; zlib none in 60), where the
     * trace must be the same bytes at any rank count. */
    pc->level = 1;
    pc->eng = p->o->deflate == SX_DEFLATE_ISAL && sx_has_isal() ? SX_DEFLATE_ISAL
                                                                : SX_DEFLATE_ZLIB;
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
    .call_bytes = 10,    /* compressed */
    .rank_blocks = true, /* a rank's calls are sorted as a whole */
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
    .compact = true,
};
