/* pipeline.h - one export: a source (the run) and a document (its text), in stages */
#ifndef SX_PIPELINE_H
#define SX_PIPELINE_H

#include "internal.h"
#include "run.h"
#include "stream.h"

#include <mpi.h>

/*
 * Every export is the same sequence of stages, owned by pipeline.c: the
 * prologue (communicator, fault state), the options (checked once), the
 * filter (built once), the source opened, the document planned, rank 0's
 * output opened under a temporary name every rank knows, the block stream,
 * the commit and the cleanup, with the ranks' agreement (sx_all_ok) between
 * each two. A document only plans and formats; a source only opens a run.
 */

struct sx_h5;
struct sx_run;
struct sx_native;
struct sx_filter;
struct sx_perf_rank;
struct sx_trace;

/* What the document is made from, as its stages see it. Owned by the pipeline. */
struct sx_pipe {
    MPI_Comm comm;     /* the export's own copy of the caller's */
    int rank, size;    /* in 'comm' */
    const char *input; /* for messages: the input, or a native run's first file */
    const char *output;
    const struct sx_options *o;
    const struct sx_filter *filter;
    struct sx_run *run;
    struct sx_h5 *h5; /* an HDF5 run: events are read from it */
    /* another source whose events are read in slices (a native run), or NULL;
     * both NULL: the run's columns are in memory (a JSON profile) */
    const struct sx_event_source *events;
    struct sx_perf_rank *perf; /* HDF5 perf counter totals (SX_NEED_PERF), or NULL */
    size_t nperf;
    struct sx_native *nr;                 /* a native run (for plan_native), else NULL */
    struct sx_event_source native_events; /* what 'events' points to for a native run */
};

/* What a document asks of its source. */
enum sx_need {
    SX_NEED_INDEX = 1u << 0, /* the HDF5 index alone, events read lazily; --summary */
    SX_NEED_LANES = 1u << 1, /* lane tables and the other extras, on every rank */
    SX_NEED_LANES_ROOT = 1u << 2, /* ... on rank 0 only, just before the output opens */
    SX_NEED_PERF = 1u << 3,       /* perf counter totals */
    SX_NEED_GPU = 1u << 4,        /* which rows write a GPU column */
    SX_NEED_JSON_INPUT = 1u << 5  /* a JSON profile may be the input */
};

/* A planned document: its state and, for one output written by the stream, its
 * producer. */
struct sx_doc_state {
    void *ctx;
    void (*free)(void *ctx); /* frees 'ctx' (set with it; NULL accepted) */
    struct sx_producer prod;
};

/*
 * A document: its format, what it needs of the source, and its stages. A new
 * format is a file that defines one of these and an entry in pipeline.c's
 * table. The callbacks that say NOTE: collective are called on every rank of
 * 'p->comm' and agree inside themselves; the pipeline agrees after each.
 */
struct sx_doc_type {
    enum sx_format format;
    /* NULL: --summary is allowed. Else the refusal's end: "--summary has no
     * per-call events, which the <events_for>". */
    const char *events_for;
    unsigned needs; /* enum sx_need */
    /*
     * NOTE: collective over 'p->comm'. Plan the document into the empty 'd'
     * (the pipeline frees 'd->ctx' with 'd->free' whatever the result).
     */
    enum sx_status (*plan)(const struct sx_pipe *p, struct sx_doc_state *d,
                           struct sx_error *err);
    /* The same for a native run when the document has a plan of its own for it (the
     * JSON profile moves events between ranks); NULL: 'plan', through 'p->events'. */
    enum sx_status (*plan_native)(const struct sx_pipe *p, struct sx_doc_state *d,
                                  struct sx_error *err);
    /* Documents of several files (NULL for a stream document): NOTE: collective
     * over 'p->comm'; write and commit them all. */
    enum sx_status (*write)(const struct sx_pipe *p, void *ctx, struct sx_error *err);
    /* Its text is small next to the work of making it (a compressed trace): rank 0
     * formats a full share of the blocks though it writes them all (the stream's
     * 'compact'). */
    bool compact;
    /* Each block repeats a setup of its part of the document (the stream's
     * 'root_writes_only'): rank 0 formats no block of plain text. */
    bool root_writes_only;
    /* Each block repeats a setup of its part of the document, which the producer
     * names ('part'): the blocks go out by parts, in turns (the stream's 'turns'). */
    bool turns;
};

/* The documents (pipeline.c's table holds them). */
extern const struct sx_doc_type sx_doc_json;       /* json_doc.c */
extern const struct sx_doc_type sx_doc_chrome;     /* trace_chrome.c */
extern const struct sx_doc_type sx_doc_speedscope; /* trace_speedscope.c */
extern const struct sx_doc_type sx_doc_stats;      /* stats_regions.c */
extern const struct sx_doc_type sx_doc_prof;       /* prof_write.c */
extern const struct sx_doc_type sx_doc_flamegraph; /* prof_write.c */
extern const struct sx_doc_type sx_doc_perfetto;   /* trace_perfetto.c */
extern const struct sx_doc_type sx_doc_otf2;       /* trace_otf2.c */

/* native_export.c: the JSON profile of a native run, its events moved between ranks
 * to the blocks' owners before the stream (plan_native). */
enum sx_status sx_native_json_plan(const struct sx_pipe *p, struct sx_doc_state *d,
                                   struct sx_error *err);

/*
 * NOTE: collective over 'p->comm', agreed inside. The trace plan 't' of the
 * run (sx_trace_plan): every row's first start, each rank reading its share
 * and all of them min-reduced, then the region order and the selection.
 */
enum sx_status sx_pipe_trace_plan(const struct sx_pipe *p, struct sx_trace *t,
                                  struct sx_error *err);

/*
 * NOTE: collective over 'p->comm', agreed inside. A document's new zeroed
 * state of 'size' bytes, whose first member is its struct sx_trace, in
 * 'ds->ctx' ('free_ctx' frees it, set with it), and that trace planned
 * (sx_pipe_trace_plan).
 */
enum sx_status sx_pipe_trace_state(const struct sx_pipe *p, struct sx_doc_state *ds,
                                   size_t size, void (*free_ctx)(void *ctx),
                                   struct sx_error *err);

/* The input of an export: one file, or the files of a native run. */
struct sx_pipe_input {
    const char *path;         /* an HDF5 run or a JSON profile (not native) */
    bool native;              /* the native run in 'files' */
    const char *const *files; /* borrowed */
    size_t nfiles;
    const char *label; /* the native run's label, or NULL */
};

/*
 * NOTE: collective over 'comm' (MPI_COMM_NULL: this process alone). The
 * export of 'in' to 'output' as 'opts->format' says (NULL: the defaults):
 * sx_export and sx_export_native.
 */
enum sx_status sx_pipeline_run(MPI_Comm comm, const struct sx_pipe_input *in,
                               const char *output, const struct sx_options *opts,
                               struct sx_error *err);

#endif /* SX_PIPELINE_H */
