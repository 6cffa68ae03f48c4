/* internal.h - private types and functions shared by the library's files */
#ifndef SX_INTERNAL_H
#define SX_INTERNAL_H

#include "scope_export.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ */
/* error.c                                                            */

/* Set 'err' unless it already holds an error (the first error wins). */
enum sx_status sx_error_set(struct sx_error *err, enum sx_status code, const char *source,
                            const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void sx_error_clear(struct sx_error *err);
/* Name 'source' as the error's source when the error has none yet. */
void sx_error_where(struct sx_error *err, const char *source);

/* The one checking macro: on a false 'cond', record the error and goto out. */
#define SX_CHECK(cond, code, err, source, ...)                                           \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            st = sx_error_set((err), (code), (source), __VA_ARGS__);                     \
            goto out;                                                                    \
        }                                                                                \
    } while (0)

/* Allocations: each may fail on purpose in the fault tests (SX_FAULT_ALLOC). */
void *sx_malloc(size_t n);
void *sx_calloc(size_t n, size_t size);
void *sx_realloc(void *p, size_t n);
char *sx_strdup(const char *s);
char *sx_strndup(const char *s, size_t n);

/*
 * Fault injection. The hook is NULL in the library and the command; only the
 * test programs set it (tests/support/sx_fault.c). The library asks before
 * every call that may fail: true means "fail this one".
 */
enum sx_fault_kind {
    SX_FAULT_ALLOC = 0, /* sx_malloc & co. */
    SX_FAULT_READ,      /* an HDF5 read (H5Dread, H5Aread) */
    SX_FAULT_WRITE,     /* a write, close or rename of an output */
    SX_FAULT_STAGE,     /* a stage of the export ('stage': fault.h) */
    SX_NFAULTS
};
extern bool (*sx_fault_hook)(enum sx_fault_kind kind, int stage);
static inline bool sx_fault(enum sx_fault_kind kind, int stage) {
    return sx_fault_hook != NULL && sx_fault_hook(kind, stage);
}
/* Tests only (tests/support/sx_fault.c): fail the Nth allocation from now; 0 = none. */
void sx_alloc_fail_after(long n);

/* ------------------------------------------------------------------ */
/* json_write.c: byte-exact JSON text as Python's json.dumps writes it */

/* A growable byte buffer. Zero-initialise, or sx_buf_init(). */
struct sx_buf {
    char *data;
    size_t len;
    size_t cap;
    bool failed; /* an allocation failed; further appends are dropped */
};

void sx_buf_init(struct sx_buf *b);
void sx_buf_free(struct sx_buf *b);
void sx_buf_reset(struct sx_buf *b);
/* Make room for 'extra' more bytes; false (and b->failed) on allocation failure. */
bool sx_buf_reserve(struct sx_buf *b, size_t extra);
void sx_buf_append(struct sx_buf *b, const void *p, size_t n);
void sx_buf_puts(struct sx_buf *b, const char *s);
void sx_buf_putc(struct sx_buf *b, char c);
/* Decimal integers, as Python's int.__repr__. */
void sx_buf_i64(struct sx_buf *b, int64_t v);
void sx_buf_u64(struct sx_buf *b, uint64_t v);
/*
 * A finite double as Python's float.__repr__ (shortest round trip: "1.0",
 * "1e-05", "1e+16", "-0.0"). Non-finite values are the caller's business.
 */
void sx_buf_double(struct sx_buf *b, double v);
/*
 * 'n' bytes of UTF-8 as a JSON string with json.dumps(ensure_ascii=True)
 * escaping, quotes included. Invalid UTF-8 is decoded as Python's
 * bytes.decode(errors="replace") does (U+FFFD per maximal invalid subpart).
 */
void sx_buf_str(struct sx_buf *b, const char *s, size_t n);
void sx_buf_cstr(struct sx_buf *b, const char *s); /* NUL-terminated */

/* Bytes written by sx_buf_i64 etc. into 'out' (at least 24 bytes); returns length. */
size_t sx_fmt_i64(char *out, int64_t v);
size_t sx_fmt_u64(char *out, uint64_t v);
size_t sx_fmt_double(char *out, double v); /* at least 32 bytes */
/*
 * 'n' integers separated by ", " (and one before the first unless 'first'),
 * as the one-line document writes event columns. 'out' has room for 24
 * bytes per value. Returns the end of the text.
 */
char *sx_fmt_i64_list(char *out, const int64_t *v, size_t n, bool first);

/*
 * A copy of 'n' bytes of possibly invalid UTF-8 with every invalid
 * sequence replaced as bytes.decode(errors="replace") does. New string.
 */
char *sx_utf8_sanitize(const char *s, size_t n);

/* ------------------------------------------------------------------ */
/* value.c: small JSON-like values (metadata, lanes, LIKWID, trailer) */

enum sx_vkind {
    SX_V_NULL,
    SX_V_BOOL,
    SX_V_INT,   /* int64 */
    SX_V_UINT,  /* uint64 beyond int64 */
    SX_V_FLOAT, /* double; non-finite written as null */
    SX_V_STR,   /* UTF-8 */
    SX_V_ARRAY,
    SX_V_OBJECT, /* keys in insertion order */
    SX_V_RAW     /* JSON text written verbatim (already canonical) */
};

struct sx_value;
struct sx_member;

struct sx_value {
    enum sx_vkind kind;
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double f;
        struct {
            char *s; /* NUL-terminated; 'len' bytes */
            size_t len;
        } str;
        struct {
            struct sx_value *items;
            size_t n, cap;
        } arr;
        struct {
            struct sx_member *items;
            size_t n, cap;
        } obj;
    } u;
};

struct sx_member {
    char *key;
    size_t key_len;
    struct sx_value value;
};

void sx_value_free(struct sx_value *v); /* frees contents; v becomes NULL kind */
struct sx_value sx_value_int(int64_t i);
struct sx_value sx_value_float(double f);
struct sx_value sx_value_bool(bool b);
struct sx_value sx_value_null(void);
/* Copies of the string; on allocation failure kind is SX_V_NULL and ok=false. */
bool sx_value_str(struct sx_value *out, const char *s, size_t n);
bool sx_value_raw(struct sx_value *out, const char *s, size_t n);
void sx_value_array(struct sx_value *out);
void sx_value_object(struct sx_value *out);
/* Append; the container takes ownership of 'item'. false on allocation failure. */
bool sx_value_push(struct sx_value *arr, struct sx_value item);
bool sx_value_set(struct sx_value *obj, const char *key, size_t key_len,
                  struct sx_value item);
/* Deep equality (floats bitwise except NaN == NaN). */
bool sx_value_equal(const struct sx_value *a, const struct sx_value *b);

/*
 * Write 'v' as json.dumps(indent=...) would at nesting 'depth' (the depth
 * of 'v' itself: the top-level document is depth 0). 'indent' < 0 is the
 * one-line form. A non-finite SX_V_FLOAT is written as null.
 */
void sx_write_value(struct sx_buf *b, const struct sx_value *v, int indent, int depth);
/* Newline and indentation for 'depth' in indent mode; nothing in one-line mode. */
void sx_write_newline(struct sx_buf *b, int indent, int depth);
/* The item separator: ", " one-line, "," + newline + indent otherwise. */
void sx_write_sep(struct sx_buf *b, int indent, int depth);

/* ------------------------------------------------------------------ */
/* run.c: the in-memory run model (no I/O, no MPI)                    */

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

enum sx_layout {
    SX_LAYOUT_SCHEMA1 = 1,   /* one group per rank */
    SX_LAYOUT_COLUMNAR = 2,  /* schema >= 2 columnar */
    SX_LAYOUT_AGGREGATE = 3, /* schema >= 2, storage_layout = "aggregate" */
    SX_LAYOUT_JSON = 4       /* loaded from a JSON document */
};

/* Aggregate values of one row, written as int when integral. */
#define SX_AGG_MAX 14
struct sx_agg_field {
    const char *key; /* static string */
    bool is_float;
    int64_t i;
    uint64_t u; /* used when 'is_unsigned' */
    bool is_unsigned;
    double f;
};

struct sx_row {
    uint32_t region; /* index into run->names */
    int64_t rank;
    char *source_file; /* NULL = None */
    char *source_text; /* NULL = None */
    bool has_lineno;
    int64_t source_lineno;
    char **tags;
    size_t ntags;
    bool has_exclusive;
    int64_t exclusive_total;
    /* aggregate branch */
    bool is_aggregate;
    bool event_data_available; /* aggregate rows: false = summary-only */
    struct sx_agg_field agg[SX_AGG_MAX];
    size_t nagg;
    /* event branch */
    uint64_t count;    /* calls */
    unsigned cols;     /* SX_COLBIT set of columns this row writes */
    bool has_meta_col; /* the file has rank_region_index/event_metadata */
    /* where the events live */
    uint64_t offset;   /* columnar: first event of the row in the event columns */
    uint64_t file_row; /* columnar: index row; schema 1: unused */
    char *group;       /* schema 1: path of the region group */
    /* loaded data (full loads only; NULL otherwise) */
    int64_t *col[SX_NCOLS];
    char *meta_text; /* canonical JSON text of the event_metadata list, or NULL */
    bool meta_any;   /* some call's metadata dict is non-empty */
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

struct sx_run *sx_run_new(void);
void sx_run_free(struct sx_run *run);
void sx_row_clear(struct sx_row *row);
/* Free the contents of one LIKWID entry; it becomes all zero. */
void sx_likwid_entry_clear(struct sx_likwid_entry *e);

/* Python's round(float(v) / 1e9 * 1e9): the lane timestamp round trip. */
int64_t sx_lane_ns(int64_t v);

/*
 * Compare two runs as "the same run" (what read_h5 and read_json would
 * give): returns true when equal; otherwise false and a description of the
 * first difference in 'why' (size 'why_len').
 */
bool sx_run_equal(const struct sx_run *a, const struct sx_run *b, char *why,
                  size_t why_len);

/* ------------------------------------------------------------------ */
/* h5_read.c: HDF5 -> run model; the only file that includes <hdf5.h>  */

struct sx_h5;

/*
 * Open 'path' and read the run's index: root attributes, metadata, region
 * table, rank-region index (or the schema-1 groups), validated (spec 2.11).
 * 'comm' selects the MPI-IO driver (MPI_COMM_NULL: the POSIX driver, for
 * tools and tests). Collective over 'comm' when it is not MPI_COMM_NULL:
 * every rank must call it (and sx_h5_close) even after an error elsewhere.
 * The returned run holds rows without event data.
 */
enum sx_status sx_h5_open(MPI_Comm comm, const char *path, bool summary,
                          struct sx_h5 **h5, struct sx_run **run, struct sx_error *err);
/* Collective like sx_h5_open. Accepts NULL. */
void sx_h5_close(struct sx_h5 *h5);

/* Read lane tables, LIKWID and line-profile groups into 'run'. Local. */
enum sx_status sx_h5_read_extras(struct sx_h5 *h5, struct sx_run *run,
                                 struct sx_error *err);

/*
 * Read events [first, first + n) of 'row' into 'out[c]' (arrays of n int64,
 * caller-allocated) for every column c in 'cols'; SX_COL_START and
 * SX_COL_END are absolute (decoded). Local.
 */
enum sx_status sx_h5_read_events(struct sx_h5 *h5, const struct sx_run *run,
                                 const struct sx_row *row, uint64_t first, uint64_t n,
                                 unsigned cols, int64_t *const out[SX_NCOLS],
                                 struct sx_error *err);
/*
 * The canonical JSON text of 'row''s event_metadata list into 'out' (empty
 * when the row has none) and whether any call's dict is non-empty. Local.
 */
enum sx_status sx_h5_read_meta(struct sx_h5 *h5, const struct sx_run *run,
                               const struct sx_row *row, struct sx_buf *out, bool *any,
                               struct sx_error *err);

/* Whether 'row''s GPU slice has a value >= 0 (else the row writes no GPU column). */
enum sx_status sx_h5_gpu_present(struct sx_h5 *h5, const struct sx_run *run,
                                 const struct sx_row *row, bool *present,
                                 struct sx_error *err);

/* Load everything, events included, into a run (for compare and import). */
enum sx_status sx_h5_load(const char *path, bool summary, struct sx_run **run,
                          struct sx_error *err);

/* Number of HDF5 ids this library has open (0 after every call). */
long sx_h5_open_ids(void);

/* h5_write.c: run model -> schema-3 HDF5 file (scope-profiler's layout). */
enum sx_status sx_h5_write(const struct sx_run *run, const char *path,
                           struct sx_error *err);

/* ------------------------------------------------------------------ */
/* json_read.c: JSON -> run model; the only file that includes <jansson.h> */

/*
 * Parse 'n' bytes of stored event-metadata JSON text (a list of objects) and
 * write it canonically (json.dumps) into 'out'. 'any' tells whether some
 * object is non-empty; '*count' the list length.
 */
enum sx_status sx_json_canon_meta(const char *text, size_t n, struct sx_buf *out,
                                  bool *any, uint64_t *count, struct sx_error *err);
/* Parse a JSON list of strings (a row's stored tags). New array in '*tags'. */
enum sx_status sx_json_parse_tags(const char *text, size_t n, char ***tags, size_t *ntags,
                                  struct sx_error *err);
/* Parse 'n' bytes of JSON text into a new value tree in '*out'. */
enum sx_status sx_json_to_value(const char *text, size_t n, struct sx_value *out,
                                struct sx_error *err);
/* Load a JSON profile (.json or .json.gz, or by content) into a run. */
enum sx_status sx_json_load(const char *path, struct sx_run **run, struct sx_error *err);

/* ------------------------------------------------------------------ */
/* regex.c: region name filters, as Python's re.match                 */

struct sx_filter;
enum sx_status sx_filter_new(const struct sx_options *opts, struct sx_filter **f,
                             struct sx_error *err);
void sx_filter_free(struct sx_filter *f);
bool sx_filter_name(const struct sx_filter *f, const char *name);
bool sx_filter_rank(const struct sx_filter *f, int64_t rank);
/* Python's _filename_slug(label) (Unicode \w). New string, NULL when out of memory. */
char *sx_slug(const char *label);

/* ------------------------------------------------------------------ */
/* doc.c: the document's text, piece by piece                         */

/*
 * A position in the document's row list: 'row' is an index into the
 * ordered rows, 'seg' a segment of that row, 'ev' an event in it.
 */
enum sx_seg {
    SX_SEG_HEAD = 0, /* "{name, rank, source..., tags" (and the aggregate branch) */
    SX_SEG_START,
    SX_SEG_END,
    SX_SEG_META,
    SX_SEG_GPU,
    SX_SEG_CALL,
    SX_SEG_PARENT,
    SX_SEG_THREAD,
    SX_SEG_TASK,
    SX_SEG_AWAIT,
    SX_SEG_TAIL, /* exclusive_total_ns and "}" */
    SX_NSEGS
};

struct sx_pos {
    uint64_t row;
    uint32_t seg;
    uint64_t ev;
};

/* One block of the document: a contiguous range of its region rows' text. */
struct sx_block {
    struct sx_pos from, to; /* [from, to) in (row, seg, ev) order */
    uint64_t weight;        /* estimated bytes */
};

/* The document: ordered rows (after filters) and their blocks. */
struct sx_doc {
    const struct sx_run *run;
    uint64_t *order; /* indexes into run->rows, in document order */
    uint64_t nrows;
    int indent;
    struct sx_block *blocks;
    size_t nblocks;
    uint64_t total_weight;
    const struct sx_filter *filter;
};

/* Order the rows and cut them into blocks of about 'block_bytes' each. */
enum sx_status sx_doc_plan(struct sx_doc *doc, const struct sx_run *run,
                           const struct sx_filter *filter, int indent, size_t block_bytes,
                           struct sx_error *err);
void sx_doc_free(struct sx_doc *doc);

/* The document's text up to and including "regions": [ . */
enum sx_status sx_doc_header(const struct sx_doc *doc, struct sx_buf *out,
                             struct sx_error *err);
/* "]" and the rest of the document after the region rows. */
enum sx_status sx_doc_trailer(const struct sx_doc *doc, struct sx_buf *out,
                              struct sx_error *err);

/* Where a block's events come from. */
struct sx_event_source {
    struct sx_h5 *h5; /* NULL: the run's loaded columns */
};

/* Events [first, first + n) of one row, for the columns in 'cols'. */
struct sx_slice {
    const struct sx_row *row;
    uint64_t first, n;
    unsigned cols;
    int64_t *col[SX_NCOLS]; /* filled by the reader */
};

/*
 * Read many slices at once: one hyperslab selection per column, nearby
 * ranges merged, so a block of many small rows costs a few reads. The
 * caller points each slice's col[c] at room for n values. Local.
 */
enum sx_status sx_h5_read_slices(struct sx_h5 *h5, const struct sx_run *run,
                                 struct sx_slice *s, size_t ns, struct sx_error *err);

/* Append the text of block 'b' (header and trailer excluded) to 'out'. */
enum sx_status sx_doc_block(const struct sx_doc *doc, const struct sx_event_source *src,
                            size_t b, struct sx_buf *out, struct sx_error *err);

/* ------------------------------------------------------------------ */
/* out_file.c: atomic output file; deflate_out.c: gzip segments         */

struct sx_out_file;
/* Create the parent directories and a temporary file beside 'path'. */
enum sx_status sx_out_open(const char *path, struct sx_out_file **f,
                           struct sx_error *err);
enum sx_status sx_out_write(struct sx_out_file *f, const void *p, size_t n,
                            struct sx_error *err);
/* Flush, close and rename over 'path'. */
enum sx_status sx_out_commit(struct sx_out_file *f, struct sx_error *err);
/* Remove the temporary file. Accepts NULL. */
void sx_out_abort(struct sx_out_file *f);
/* The temporary name 'f' is written under (shorter than SX_TMP_NAME bytes). */
#define SX_TMP_NAME 4096
const char *sx_out_tmp_path(const struct sx_out_file *f);

/*
 * The one temporary-file scheme: a new empty file ".NAME.XXXXXX" beside
 * 'path' (mode as open(2) with 0666 under the umask), tracked for
 * sx_tmp_remove_all. New name in '*tmp'; its descriptor in '*fd', or closed
 * when 'fd' is NULL. The caller renames or removes it, then sx_tmp_forget.
 */
enum sx_status sx_tmp_create(const char *path, char **tmp, int *fd, struct sx_error *err);
/* Track a temporary file another rank writes, so that a signal here removes it. */
void sx_tmp_track(const char *tmp);
/* 'tmp' was renamed or removed: no longer tracked. */
void sx_tmp_forget(const char *tmp);
/* Unlink every tracked temporary file (async-signal-safe: signal handlers). */
void sx_tmp_remove_all(void);

/* Compress 'n' bytes into a raw deflate segment ending on a byte boundary
 * ('final': the segment ends the stream). Appends to 'out'. */
enum sx_status sx_deflate_segment(const void *p, size_t n, int level, enum sx_deflate eng,
                                  bool final, struct sx_buf *out, struct sx_error *err);
uint32_t sx_crc32(uint32_t crc, const void *p, size_t n);
uint32_t sx_crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);
/* The 10-byte gzip header (mtime 0, no name) and the 8-byte trailer. */
void sx_gzip_header(unsigned char out[10], int level);
void sx_gzip_trailer(unsigned char out[8], uint32_t crc, uint64_t isize);

/* ------------------------------------------------------------------ */
/* mpi_util.c                                                         */

/* SX_OK for MPI_SUCCESS; otherwise an SX_ERR_MPI error naming 'call'. */
enum sx_status sx_mpi_check(int rc, const char *call, struct sx_error *err);
/*
 * NOTE: collective. The library's own copy of 'comm' in '*out', whose MPI
 * errors are returned (MPI_ERRORS_RETURN) instead of ending the process.
 * MPI_COMM_NULL gives MPI_COMM_NULL (one process, no MPI call).
 */
enum sx_status sx_comm_dup(MPI_Comm comm, MPI_Comm *out, struct sx_error *err);
/* NOTE: collective. Free a copy made by sx_comm_dup; accepts MPI_COMM_NULL. */
void sx_comm_free(MPI_Comm *comm);
/*
 * NOTE: collective. All ranks agree on the outcome of a local step: returns
 * SX_OK when every rank passed 'st' == SX_OK; otherwise the status of the
 * lowest failing rank, and 'err' holds that rank's error on every rank.
 */
enum sx_status sx_all_ok(MPI_Comm comm, enum sx_status st, struct sx_error *err);

/* stop.c: whether sx_request_stop() was called since the last sx_stop_clear(). */
bool sx_stop_requested(void);
/* The end of an export: a stop asked for during it does not outlive it. */
void sx_stop_clear(void);

/* ------------------------------------------------------------------ */
/* args.c: options by name                                            */

/* 'o' filled from 'a' (NULL: the defaults); 'o' borrows the strings and ranks of 'a'. */
void sx_args_options(const struct sx_args *a, struct sx_options *o);

#endif /* SX_INTERNAL_H */
