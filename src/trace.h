/* trace.h - the trace documents (Chrome trace, speedscope, Perfetto): shared plan */
#ifndef SX_TRACE_H
#define SX_TRACE_H

#include "json_write.h"
#include "out_file.h"
#include "regex.h"
#include "run.h"

/*
 * What both documents are made from: the selected ranks in the order asked
 * for, the regions after the filters in the reference's region order, and
 * for each (region, rank) the row that holds its calls. Event columns are
 * read per file rank (sx_trace_load_rank), so one rank's events are in
 * memory at a time.
 */
/* rank<N>/perf_events/<region>/: Linux perf counter totals of one region. */
struct sx_perf_region {
    char *name;
    uint64_t calls;
    char **event_names;
    uint64_t *values;
    size_t nevents;
};

struct sx_perf_rank {
    int64_t rank;
    struct sx_perf_region *regions; /* HDF5 name order */
    size_t n;
};

/* h5_perf.c: every rank's perf_events groups of the HDF5 run 'path' (POSIX driver). */
enum sx_status sx_h5_perf_read(const char *path, int64_t num_ranks,
                               struct sx_perf_rank **out, size_t *nout,
                               struct sx_error *err);
/* Add perf_events groups to the closed HDF5 file 'path' (the generator's). */
enum sx_status sx_h5_perf_write(const char *path, const struct sx_perf_rank *p, size_t n,
                                struct sx_error *err);
void sx_perf_free(struct sx_perf_rank *p, size_t n);

struct sx_trace {
    struct sx_run *run;
    struct sx_h5 *h5; /* an HDF5 run's rows are read from it */
    /* other sources' rows are read in slices from here; both NULL: the run's columns
     * are loaded (a JSON profile) */
    const struct sx_event_source *events;
    const struct sx_filter *filter;
    char *label;    /* the document's name (UTF-8) */
    int64_t *ranks; /* selected ranks, in the order given (may repeat) */
    size_t nranks;
    uint32_t *regions; /* names index of each region, filtered, in region order */
    size_t nregions;
    /* rows of region pos p: row_of[row_start[p] .. row_start[p + 1]), by rank */
    struct sx_rank_row {
        size_t region;
        int64_t rank, row;
    } * row_of;
    size_t *row_start;
    const char **src_file; /* per region pos: first non-null over its ranks */
    const int64_t **src_line;
    char **jname; /* per region pos: the name as JSON string text */
    size_t *jname_len;
    double chrome_origin;      /* seconds */
    int64_t *row_min;          /* per row: min start_ns (rows with calls) */
    struct sx_perf_rank *perf; /* borrowed: perf counter totals, or NULL */
    size_t nperf;
};

/*
 * The smallest start_ns of the rows r with r % size == rank that have calls
 * (INT64_MAX elsewhere), for the region order: min-reduce them over the
 * ranks. New array of run->nrows in '*mins'. Local.
 */
enum sx_status sx_trace_row_mins(const struct sx_run *run, struct sx_h5 *h5,
                                 const struct sx_event_source *events, int rank, int size,
                                 int64_t **mins, struct sx_error *err);

/*
 * Ownership, the library's one rule: a function that takes ownership of an argument
 * takes it in every case, on failure too (as jansson's json_array_append_new): the
 * caller neither frees nor uses what it passed, whatever the call returns.
 */
/*
 * Plan the trace of 'run' (rows' GPU columns already resolved): region order,
 * selection, labels, origin. 'row_min' (every row's, from sx_trace_row_mins)
 * is taken over, on failure too (freed by sx_trace_free). 'o->label' overrides the run's
 * label. Local.
 */
enum sx_status sx_trace_plan(struct sx_trace *t, struct sx_run *run, struct sx_h5 *h5,
                             const struct sx_event_source *events,
                             const struct sx_filter *filter, const struct sx_options *o,
                             int64_t *row_min, struct sx_error *err);
void sx_trace_free(struct sx_trace *t);

/* float() of the run's metadata value 'key', as the reference converts it; false when
 * it is missing or float() would fail. */
bool sx_trace_meta_double(const struct sx_run *run, const char *key, double *out);

/* The row of region position 'g' on 'rank', or NULL. */
const struct sx_row *sx_trace_row(const struct sx_trace *t, size_t g, int64_t rank);
/* Calls of 'rank' in the selected regions. */
uint64_t sx_trace_rank_calls(const struct sx_trace *t, int64_t rank);

/*
 * Events [first, first + n) of 'row' for the columns in 'cols': 'out[c]'
 * points into the loaded columns, or into 'room[c]' (n values each, the
 * caller's) where they are read. Local.
 */
enum sx_status sx_trace_slice(const struct sx_trace *t, const struct sx_row *row,
                              uint64_t first, uint64_t n, unsigned cols,
                              int64_t *const room[SX_NCOLS], const int64_t *out[SX_NCOLS],
                              struct sx_error *err);

/* Load (read) columns 'cols' of the selected regions' rows of 'rank'. Local. */
enum sx_status sx_trace_load_rank(struct sx_trace *t, int64_t rank, unsigned cols,
                                  struct sx_error *err);
/* Free what sx_trace_load_rank read (nothing for a loaded run). */
void sx_trace_unload_rank(struct sx_trace *t, int64_t rank);

/* lane_label(lane, rank) of the reference, appended to 'out' as raw UTF-8. */
void sx_trace_lane_label(const struct sx_run *run, int64_t lane, int64_t rank,
                         struct sx_buf *out);

/* The error text of the reference's ValueError 'msg' for the run's input. */
enum sx_status sx_trace_value_error(const struct sx_trace *t, enum sx_status code,
                                    const char *msg, struct sx_error *err);

/* Chrome Trace Event document: head, blocks of one selected rank's items, tail. */
void sx_chrome_head(const struct sx_trace *t, struct sx_buf *out);
void sx_chrome_tail(struct sx_buf *out);
/* What a rank's blocks share (its lanes), worked out by the first of them. */
struct sx_chrome_cache;
struct sx_chrome_cache *sx_chrome_cache_new(const struct sx_trace *t);
void sx_chrome_cache_free(struct sx_chrome_cache *cc);
/*
 * The items of selected rank 'k' from its call 'from' to 'to' (calls in
 * region order): the process and lane names first when 'from' is 0, each
 * item after a ',' unless it is the document's first.
 */
enum sx_status sx_chrome_block(const struct sx_trace *t, struct sx_chrome_cache *cc,
                               size_t k, uint64_t from, uint64_t to, struct sx_buf *out,
                               struct sx_error *err);

/*
 * speedscope: the calls of one selected rank, sorted and nested, split into
 * lanes (profiles).
 */
struct sx_ss_rank;
/* Build selected rank 'k''s profiles (start, end, thread, task loaded). New in '*out'. */
enum sx_status sx_ss_build(const struct sx_trace *t, size_t k, struct sx_ss_rank **out,
                           struct sx_error *err);
void sx_ss_free(struct sx_ss_rank *r);
/* speedscope's NestingError for call 'c' (region position, call index in its row, times)
 * that starts inside 'p' but ends after it. */
struct sx_ss_call {
    int64_t start, end;
    uint32_t region;
    uint64_t index;
};
enum sx_status sx_ss_nest_error(const struct sx_trace *t, const struct sx_ss_call *c,
                                const struct sx_ss_call *p, struct sx_error *err);
size_t sx_ss_ncalls(const struct sx_ss_rank *r);
/* The earliest start_ns of the rank's calls (valid when it has calls). */
int64_t sx_ss_first_start(const struct sx_ss_rank *r);
/*
 * Region positions in the order the rank's profiles first open them:
 * appended to 'order' (room for t->nregions) unless 'seen[g]'; sets 'seen'.
 */
size_t sx_ss_frames(const struct sx_ss_rank *r, bool *seen, uint32_t *order, size_t n);

/* The document's text before the profiles; 'frames' are region positions. */
void sx_ss_head(const struct sx_trace *t, const uint32_t *frames, size_t nframes,
                struct sx_buf *out);
/*
 * The text of the rank's sorted calls [i0, i1): profile heads, open and
 * close events, profile tails. 'doc_first': the rank's first profile is the
 * document's first. 'frame_of[g]' is region position g's frame.
 */
enum sx_status sx_ss_block(const struct sx_trace *t, const struct sx_ss_rank *r,
                           const uint32_t *frame_of, double origin, bool doc_first,
                           size_t i0, size_t i1, struct sx_buf *out,
                           struct sx_error *err);
void sx_ss_tail(struct sx_buf *out);

/*
 * Perfetto's protobuf trace (trace_perfetto.c): no head or tail (a trace is
 * its packets); a packet sequence per selected rank, whose every block clears
 * the incremental state first, so that blocks concatenate. What a process
 * keeps between blocks: names, and the calls of the selected rank it formats,
 * sorted into tracks (its columns stay loaded until the next rank or the
 * free). 't' is borrowed; NULL when out of memory.
 */
struct sx_pf_cache;
struct sx_pf_cache *sx_pf_cache_new(struct sx_trace *t);
void sx_pf_cache_free(struct sx_pf_cache *pc);
/* The packets of selected rank 'k''s sorted calls [from, to); its tracks first at 0. */
enum sx_status sx_pf_block(struct sx_pf_cache *pc, size_t k, uint64_t from, uint64_t to,
                           struct sx_buf *out, struct sx_error *err);

#endif /* SX_TRACE_H */
