/* run.h - the in-memory run model (no I/O, no MPI) */
#ifndef SX_RUN_H
#define SX_RUN_H

#include "buf.h"
#include "json_value.h"

/* Event columns, in the order the document writes them (after the times). */
enum sx_col {
    SX_COL_START = 0,
    SX_COL_END,
    SX_COL_GPU,
    SX_COL_CALL,
    SX_COL_PARENT,
    SX_COL_THREAD,
    SX_COL_TASK,
    SX_COL_AWAIT,
    SX_NCOLS
};
#define SX_COLBIT(c) (1u << (c))
_Static_assert(SX_NCOLS <= 8, "a row's lent columns are a byte (struct sx_row)");

enum sx_layout {
    SX_LAYOUT_SCHEMA1 = 1,   /* one group per rank */
    SX_LAYOUT_COLUMNAR = 2,  /* schema >= 2 columnar */
    SX_LAYOUT_AGGREGATE = 3, /* schema >= 2, storage_layout = "aggregate" */
    SX_LAYOUT_JSON = 4       /* loaded from a JSON document */
};

/* The keys of an aggregate row, in the order of a summary's; their names sx_agg_keys. */
enum sx_agg_key {
    SX_AGG_COUNT,
    SX_AGG_TOTAL,
    SX_AGG_MINIMUM,
    SX_AGG_MAXIMUM,
    SX_AGG_FIRST,
    SX_AGG_LAST,
    SX_AGG_START_MINIMUM,
    SX_AGG_END_MAXIMUM,
    SX_AGG_GPU_COUNT,
    SX_AGG_GPU_TOTAL,
    SX_AGG_MEAN,
    SX_AGG_M2,
    SX_AGG_EXCLUSIVE,
    SX_AGG_NKEYS
};
extern const char *const sx_agg_keys[SX_AGG_NKEYS];

/* Aggregate values of one row (each key once), written as int when integral. 16 bytes,
 * not 24 with the key's name; held apart from the row (sx_row_agg): rows of events,
 * by far the most (a many-row document's import keeps 210k, a read-ahead tens of
 * thousands), have none. */
#define SX_AGG_MAX SX_AGG_NKEYS
struct sx_agg_field {
    union {
        int64_t i;
        uint64_t u; /* when 'is_unsigned' */
        double f;   /* when 'is_float' */
    };
    uint8_t key; /* enum sx_agg_key */
    bool is_float;
    bool is_unsigned;
};

struct sx_row {
    uint32_t region; /* index into run->names */
    bool has_lineno;
    /* source_file, source_text and tags belong to the reader that filled the row
     * (sx_h5_fill_rows: its pools, alive while the run is open): not freed with it */
    bool borrowed;
    bool has_exclusive;
    bool is_aggregate;         /* the aggregate branch below, not the event branch */
    bool event_data_available; /* aggregate rows: false = summary-only */
    bool has_meta_col;         /* the file has rank_region_index/event_metadata */
    bool meta_any;             /* some call's metadata dict is non-empty */
    /* SX_COLBIT set of col[] lent by the reader that filled the row (its own vectors,
     * valid until it reads on: sx_jstream_ops.lend_events): not freed with it */
    uint8_t lent;
    unsigned cols; /* SX_COLBIT set of columns this row writes */
    int64_t rank;
    char *source_file; /* NULL = None */
    char *source_text; /* NULL = None */
    int64_t source_lineno;
    char **tags;
    size_t ntags;
    int64_t exclusive_total;
    /* aggregate branch */
    struct sx_agg_field *agg; /* room for SX_AGG_MAX, the row's own (sx_row_agg) */
    size_t nagg;
    /* event branch */
    uint64_t count; /* calls */
    /* where the events live */
    uint64_t offset;   /* columnar: first event of the row in the event columns */
    uint64_t file_row; /* columnar: index row; schema 1: unused */
    char *group;       /* schema 1: path of the region group */
    /* loaded data (full loads only; NULL otherwise) */
    int64_t *col[SX_NCOLS];
    char *meta_text; /* canonical JSON text of the event_metadata list, or NULL;
                        'meta_any' above tells whether it has a non-empty dict */
};

struct sx_thread {
    int64_t index;
    char *name;
    int64_t ident, native_id;
    bool daemon;
    int64_t start_ns, end_ns, cpu_ns; /* as stored; written through sx_lane_ns() */
};

struct sx_task {
    int64_t index;
    char *kind, *name, *coro_name;
    int64_t thread_index, created_ns, done_ns, steps, running_ns, suspended_ns;
};

struct sx_lane_rank {
    int64_t rank;
    size_t n;
    struct sx_thread *threads; /* one of the two */
    struct sx_task *tasks;
};

struct sx_matrix {
    double *v; /* rows * cols, row-major */
    size_t rows, cols;
};

struct sx_likwid_entry {
    char *tag;
    int64_t group_id;
    char *group_name;
    int64_t *cpus;
    size_t ncpus;
    double *times;
    size_t ntimes;
    int64_t *call_counts;
    size_t ncall_counts;
    char **event_names;
    size_t nevent_names;
    char **counter_names;
    size_t ncounter_names;
    struct sx_matrix events;
    char **metric_names;
    size_t nmetric_names;
    struct sx_matrix metrics;
    char *source;
};

struct sx_likwid_rank {
    int64_t rank;
    struct sx_likwid_entry *entries; /* sorted by tag (code point order) */
    size_t n;
};

struct sx_lp_record {
    char *region, *filename, *function;
    int64_t first_lineno;
    int64_t *line_numbers;
    size_t nline_numbers;
    int64_t *hits;
    size_t nhits;
    double *times;
    size_t ntimes;
    double unit;
};

struct sx_lp_rank {
    int64_t rank;
    struct sx_lp_record *records;
    size_t n;
};

/*
 * What the plan keeps of a row of a run read lazily (sx_h5_open_index): its
 * place in the document and in the event columns, 32 bytes (every rank holds
 * one a row of the run). Row r of rank_region_index is index[r]
 * (sx_index_file_row). The rest of the row is read for the blocks that write
 * it (sx_h5_fill_rows).
 */
struct sx_index_row {
    uint64_t offset; /* first event of the row in the event columns */
    uint64_t count;
    int64_t rank;
    uint32_t region; /* index into run->names */
    uint32_t flags;  /* SX_IR_* */
};
#define SX_IR_NO_GPU 1u /* the GPU slice has no value >= 0: no GPU column */

struct sx_run {
    char *path; /* the file it came from */
    int schema; /* 1, 2, 3; 0 for JSON */
    enum sx_layout layout;
    bool summary; /* read as summary-only */
    int64_t num_ranks;
    bool event_data_available;
    struct sx_value metadata; /* SX_V_OBJECT, keys in HDF5 name order */
    char **names;             /* region names (UTF-8, sanitized), region id order */
    size_t nnames;
    struct sx_row *rows; /* file order (columnar) or group order (schema 1) */
    size_t nrows;
    struct sx_big rows_mem; /* the storage of 'rows' when grown by a loader (a JSON
                               load); else 'rows' is malloc's */
    /* a run read lazily has no 'rows' (nrows 0) but this index, in file order */
    struct sx_index_row *index;
    size_t nindex;
    /* a lazy summary: every row of the index is an aggregate row (sx_h5_summary_rows) */
    bool summary_index;
    unsigned file_cols; /* optional event columns the file has (SX_COLBIT) */
    bool has_meta_col;
    bool delta_encoded; /* events/start_deltas exists */
    uint64_t nevents;   /* length of the event columns (columnar) */
    struct sx_lane_rank *threads;
    size_t nthreads;
    struct sx_lane_rank *tasks;
    size_t ntasks;
    bool has_threads, has_tasks;
    struct sx_likwid_rank *likwid;
    size_t nlikwid;
    struct sx_lp_rank *line_profile;
    size_t nline_profile;
};

/* The row of rank_region_index that index row 'x' (of run->index) is. */
static inline uint64_t sx_index_file_row(const struct sx_run *run,
                                         const struct sx_index_row *x) {
    return (uint64_t)(x - run->index);
}

/* Events [first, first + n) of one row, for the columns in 'cols'. */
struct sx_slice {
    const struct sx_row *row;
    uint64_t first, n;
    unsigned cols;
    int64_t *col[SX_NCOLS]; /* filled by the reader */
};

/*
 * Where a document's rows and events come from: an open HDF5 run
 * (sx_h5_event_source), or, with 'ops' NULL, the run's rows and columns in
 * memory. The document's text knows no more of its source than these calls.
 */
struct sx_event_ops {
    /* Rows ix[0..n) of a lazily read run, in full but for events (sx_h5_fill_rows). */
    enum sx_status (*fill_rows)(void *ctx, const struct sx_run *run,
                                const struct sx_index_row *const *ix, size_t n,
                                struct sx_row *out, struct sx_error *err);
    /* Optional: the rows of a lazily read run this process fills, want[file row] != 0,
     * told once before the first fill: a source may hold what those need alone
     * (sx_h5_hold_rows). */
    enum sx_status (*hold_rows)(void *ctx, const struct sx_run *run, const uint8_t *want,
                                struct sx_error *err);
    /* The canonical event_metadata text of n rows, or with 'stored' the texts as stored
     * (sx_h5_read_metas). */
    enum sx_status (*read_metas)(void *ctx, const struct sx_run *run,
                                 const struct sx_row *const *rows, size_t n, bool stored,
                                 struct sx_buf *out, size_t *off, bool *any,
                                 struct sx_error *err);
    /* A stored text made canonical (sx_h5_canon_meta): may run beside the reads. */
    enum sx_status (*canon_meta)(const void *ctx, const struct sx_row *row,
                                 const char *text, size_t len, struct sx_buf *out,
                                 bool *any, struct sx_error *err);
    /* Many slices of events at once (sx_h5_read_slices). */
    enum sx_status (*read_slices)(void *ctx, const struct sx_run *run, struct sx_slice *s,
                                  size_t ns, struct sx_error *err);
};

struct sx_event_source {
    const struct sx_event_ops *ops; /* NULL: the run's loaded rows and columns */
    void *ctx;
};

struct sx_run *sx_run_new(void);
void sx_run_free(struct sx_run *run);
void sx_row_clear(struct sx_row *row);
/* Room for the aggregate fields of 'row' (none set yet, when new); false: no memory. */
bool sx_row_agg(struct sx_row *row);
/* Free the contents of one LIKWID entry; it becomes all zero. */
void sx_likwid_entry_clear(struct sx_likwid_entry *e);

/* Python's round(float(v) / 1e9 * 1e9): the lane timestamp round trip. */
int64_t sx_lane_ns(int64_t v);

#endif /* SX_RUN_H */
