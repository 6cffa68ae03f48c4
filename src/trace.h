/* trace.h - the trace documents (Chrome trace, speedscope, Perfetto): shared plan */
#ifndef SX_TRACE_H
#define SX_TRACE_H

#include "filter.h"
#include "json_write.h"
#include "out_file.h"
#include "perf_events.h"
#include "run.h"

/*
 * What both documents are made from: the selected ranks in the order asked
 * for, the regions after the filters in the reference's region order, and
 * for each (region, rank) the row that holds its calls. Event columns are
 * read per file rank (sx_trace_load_rank), so one rank's events are in
 * memory at a time.
 */
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
    /* columns of an unloaded rank kept for the next load (sx_trace_load_rank) */
    struct sx_col_spare {
        int64_t *p;
        size_t cap; /* values */
    } * spare;
    size_t nspare;
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

/* Select every rank of the run, in order (a format that shows them all by default). */
enum sx_status sx_trace_select_every_rank(struct sx_trace *t, struct sx_error *err);
/*
 * The reference's checks of the selection, before any event is read: a region
 * left by the filters when 'needs_regions', each selected rank in the run.
 */
enum sx_status sx_trace_check_selection(const struct sx_trace *t, bool needs_regions,
                                        struct sx_error *err);

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

/* speedscope's NestingError for call 'c' (region position, call index in its row, times)
 * that starts inside 'p' but ends after it. */
struct sx_ss_call {
    int64_t start, end;
    uint32_t region;
    uint64_t index;
};
enum sx_status sx_ss_nest_error(const struct sx_trace *t, const struct sx_ss_call *c,
                                const struct sx_ss_call *p, struct sx_error *err);
#endif /* SX_TRACE_H */
