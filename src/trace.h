/* trace.h - the trace-viewer documents (Chrome Trace Event, speedscope): shared plan */
#ifndef SX_TRACE_H
#define SX_TRACE_H

#include "internal.h"

/*
 * What both documents are made from: the selected ranks in the order asked
 * for, the regions after the filters in the reference's region order, and
 * for each (region, rank) the row that holds its calls. Event columns are
 * read per file rank (sx_trace_load_rank), so one rank's events are in
 * memory at a time.
 */
struct sx_trace {
    struct sx_run *run;
    struct sx_h5 *h5; /* NULL: the run's columns are loaded (a JSON profile) */
    const struct sx_filter *filter;
    char *label;    /* the document's name (UTF-8) */
    int64_t *ranks; /* selected ranks, in the order given (may repeat) */
    size_t nranks;
    uint32_t *regions; /* names index of each region, filtered, in region order */
    size_t nregions;
    int64_t *row_of;       /* [region pos * num_ranks + rank]: row index, or -1 */
    const char **src_file; /* per region pos: first non-null over its ranks */
    const int64_t **src_line;
    char **jname; /* per region pos: the name as JSON string text */
    size_t *jname_len;
    double chrome_origin; /* seconds */
    int64_t *row_min;     /* per row: min start_ns (rows with calls) */
};

/*
 * Plan the trace of 'run' (rows' GPU columns already resolved): region order,
 * selection, labels, origin. Reads every row's start column (through 'h5'
 * when not NULL) for the region order. 'label' overrides the run's label
 * (NULL: the run's own). Local.
 */
enum sx_status sx_trace_plan(struct sx_trace *t, struct sx_run *run, struct sx_h5 *h5,
                             const struct sx_filter *filter, const struct sx_options *o,
                             struct sx_error *err);
void sx_trace_free(struct sx_trace *t);

/* The row of region position 'g' on 'rank', or NULL. */
const struct sx_row *sx_trace_row(const struct sx_trace *t, size_t g, int64_t rank);

/* Load (read) the event columns of the selected regions' rows of 'rank'. Local. */
enum sx_status sx_trace_load_rank(struct sx_trace *t, int64_t rank, struct sx_error *err);
/* Free what sx_trace_load_rank read (nothing for a loaded run). */
void sx_trace_unload_rank(struct sx_trace *t, int64_t rank);

/* lane_label(lane, rank) of the reference, appended to 'out' as raw UTF-8. */
void sx_trace_lane_label(const struct sx_run *run, int64_t lane, int64_t rank,
                         struct sx_buf *out);

/* The error text of the reference's ValueError 'msg' for the run's input. */
enum sx_status sx_trace_value_error(const struct sx_trace *t, enum sx_status code,
                                    const char *msg, struct sx_error *err);

/* Where a long text goes when its buffer has grown past a block: may empty 'out'. */
struct sx_trace_sink {
    enum sx_status (*flush)(void *ctx, struct sx_buf *out, struct sx_error *err);
    void *ctx;
    size_t block_bytes;
};

/* Chrome Trace Event document: head, one selected rank's items, tail. */
void sx_chrome_head(const struct sx_trace *t, struct sx_buf *out);
/* Selected rank 'k''s items (its events loaded), each after a ','
 * unless it is the document's first. */
enum sx_status sx_chrome_rank(const struct sx_trace *t, size_t k, struct sx_buf *out,
                              const struct sx_trace_sink *sink, struct sx_error *err);
void sx_chrome_tail(struct sx_buf *out);

/*
 * speedscope: the calls of one selected rank, sorted and nested, split into
 * lanes (profiles).
 */
struct sx_ss_rank;
/* Build selected rank 'k''s profiles (its events loaded). New in '*out'. */
enum sx_status sx_ss_build(const struct sx_trace *t, size_t k, struct sx_ss_rank **out,
                           struct sx_error *err);
void sx_ss_free(struct sx_ss_rank *r);
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
 * The rank's profiles, each preceded by ", " unless it is the document's
 * first ('*first' tracks that). 'frame_of[g]' is region position g's frame.
 */
enum sx_status sx_ss_profiles(const struct sx_trace *t, const struct sx_ss_rank *r,
                              const uint32_t *frame_of, double origin, bool *first,
                              struct sx_buf *out, const struct sx_trace_sink *sink,
                              struct sx_error *err);
void sx_ss_tail(struct sx_buf *out);

/*
 * Plan and write the trace document of 'run' (read through 'h5', or its
 * loaded columns when NULL) to 'output', opened here into '*fout' (not
 * committed). Local: rank 0's part of an export.
 */
enum sx_status sx_trace_write_run(struct sx_run *run, struct sx_h5 *h5,
                                  const char *output, const struct sx_options *o,
                                  const struct sx_filter *filter,
                                  struct sx_out_file **fout, struct sx_error *err);

/* The whole export of a trace document (sx_export with a trace format). */
enum sx_status sx_trace_export(MPI_Comm comm, const char *input, const char *output,
                               const struct sx_options *o, struct sx_error *err);

#endif /* SX_TRACE_H */
