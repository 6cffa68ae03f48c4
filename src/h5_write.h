/* h5_write.h - stream a run into a schema-3 HDF5 file in scope-profiler's layout */
#ifndef SX_H5_WRITE_H
#define SX_H5_WRITE_H

#include "json_value.h"
#include "run.h"

/* A fully loaded run as a schema-3 HDF5 file (scope-profiler's layout). */
enum sx_status sx_h5_write(const struct sx_run *run, const char *path,
                           struct sx_error *err);

struct sx_h5w;
struct sx_h5w_spec;

/*
 * sx_h5_write() in parts, for a run whose events come later (import reads
 * them in a second pass): the writer's spec for 'run' and its rows in index
 * order ('*order' new, borrowed rows). 'index_only': the rows have no event
 * columns yet. Then sx_h5w_create, _metadata, _names, _index, the events,
 * and sx_h5w_run_rest() (lanes, LIKWID, line profiles) before sx_h5w_finish.
 */
enum sx_status sx_h5w_run_plan(const struct sx_run *run, const char *path,
                               bool index_only, struct sx_h5w_spec *spec,
                               const struct sx_row ***order, struct sx_error *err);
enum sx_status sx_h5w_run_rest(struct sx_h5w *w, const struct sx_run *run,
                               struct sx_error *err);

/*
 * sx_h5_write() writes a fully loaded run in one
 * call. The calls below are the same writer taken apart, for producers that
 * must not hold every event in memory (tools/scope_export_synth.c): the
 * index is written first, then the events row by row, in pieces of any size.
 *
 * Order of calls:
 *
 *   sx_h5w_spec_init(&spec); ...            choose columns, strings, storage
 *   sx_h5w_create(path, &spec, &w, err)
 *   sx_h5w_metadata(w, &meta, err)          optional
 *   sx_h5w_names(w, names, n, err)          region_table/names
 *   sx_h5w_index(w, rows, nrows, err)       the rank-region index; sizes the event
 * columns sx_h5w_events(w, r, first, n, col, err) any number of times, see below
 *   sx_h5w_set_exclusive(w, r, ns)          optional, any time before finish
 *   sx_h5w_threads / sx_h5w_tasks / sx_h5w_likwid / sx_h5w_line_profile
 *   sx_h5w_finish(w, err)                   or sx_h5w_abort(w)
 *
 * A writer from sx_h5w_create() is local (no MPI) and uses HDF5's POSIX
 * (sec2) driver. Each call silences HDF5's error printer while it runs and
 * turns failures into 'err' naming the final path and the HDF5 object.
 * After any failure the only valid call is sx_h5w_abort(), which removes the
 * temporary file.
 *
 * A writer from sx_h5w_create_mpi() is shared by the processes of a
 * communicator, which write one file through the MPI-IO driver in
 * scope-profiler's parallel layout (spec 5.1): every process creates every
 * object with its final size, rank 0 alone writes the small datasets (region
 * names, the index, lanes, LIKWID, line profiles, summary statistics), and
 * the event columns are written with collective I/O by whichever process
 * holds each row's events. Then:
 *
 *  - Every call except sx_h5w_set_exclusive() is collective, and all
 *    processes pass the same arguments, except to sx_h5w_events():
 *  - sx_h5w_events() is called the same number of times on every process;
 *    each call writes this process's piece, or nothing when 'n' is 0 (then
 *    'row' and 'first' are ignored). Each row's pieces come from one process.
 *  - sx_h5w_set_exclusive() is local: the process that writes a row's events
 *    sets its exclusive total; sx_h5w_finish() sends both to rank 0.
 *  - Every process returns the same status, with the first failing rank's
 *    error in 'err' (err->rank); a failure on one process fails all.
 *    sx_h5w_abort() after a failure is collective as well.
 *  - HDF5 1.10 cannot write variable-length data through MPI-IO, so vlen
 *    string datasets (names, index strings unless 'fixed_strings', the lane
 *    tables' names) are written by rank 0 in sx_h5w_finish(), after the
 *    parallel file is closed, by reopening it with the POSIX driver. Values
 *    and types are those of the serial writer; only the order in which the
 *    objects were created differs.
 *  - Local failures (allocations, checks) are agreed on before the next
 *    collective HDF5 call; an HDF5 metadata call (create, open, attribute) is
 *    assumed to fail alike on every process, as it does on the same file.
 */

struct sx_h5w;

struct sx_h5w_spec {
    bool aggregate; /* storage_layout "aggregate": aggregate_* columns, no events */
    unsigned cols;  /* optional event columns: SX_COLBIT(SX_COL_GPU .. SX_COL_AWAIT) */
    bool meta;      /* write rank_region_index/event_metadata */
    bool fixed_strings; /* region names and index strings as NULLPAD fixed-length
                           UTF-8, as the parallel (MPI-IO) writer stores them */
    uint64_t chunk; /* event columns: chunk length (resizable datasets); 0 = contiguous */
    int deflate;    /* event columns: 1..9 = shuffle + deflate at that level; 0 = none.
                       Implies chunking (16384 when 'chunk' is 0). */
    bool in_memory; /* serial writer: HDF5 writes through the writer's own driver
                       (h5_write_vfd.h) to the library's own output (out_file.h): a
                       write that fails (full disk, size limit) is the writer's
                       error, never HDF5's, so it cannot leave HDF5 a half-closed
                       file, and no named temporary file is needed. Memory does not
                       grow with the file. SCOPE_EXPORT_H5_IN_MEMORY=1 (or a driver
                       HDF5 refuses) builds the file in memory instead (HDF5's core
                       driver) and writes it out whole: the file's size in memory. */
};

/* Columnar, vlen strings, no optional columns, contiguous, unfiltered. */
void sx_h5w_spec_init(struct sx_h5w_spec *spec);

/*
 * Create a temporary file beside 'path' with the root attributes and the
 * top-level groups. '*w' is new; release it with sx_h5w_finish() or
 * sx_h5w_abort(). An existing 'path' is untouched until sx_h5w_finish().
 */
enum sx_status sx_h5w_create(const char *path, const struct sx_h5w_spec *spec,
                             struct sx_h5w **w, struct sx_error *err);

/*
 * sx_h5w_create() for a file that the processes of 'comm' write together
 * with the MPI-IO driver (see the top of this file); 'comm' is duplicated.
 * MPI_COMM_NULL gives the serial writer of sx_h5w_create(). Collective over
 * 'comm'; 'path' and 'spec' must be the same on every process. MPI must be
 * initialized.
 */
enum sx_status sx_h5w_create_mpi(MPI_Comm comm, const char *path,
                                 const struct sx_h5w_spec *spec, struct sx_h5w **w,
                                 struct sx_error *err);

/*
 * Write the members of 'meta' (an SX_V_OBJECT; borrowed) as attributes of
 * /metadata: int -> int64, uint -> uint64, float -> float64, bool -> h5py's
 * bool enum, string -> vlen UTF-8, null -> float64 NaN (read back as null,
 * so the key survives a round trip; skipping it would lose the key), arrays
 * -> 1-D int64 / uint64 / float64 / bool / vlen string. Nested objects and
 * mixed string/number arrays have no HDF5 attribute form: SX_ERR_UNSUPPORTED.
 */
enum sx_status sx_h5w_metadata(struct sx_h5w *w, const struct sx_value *meta,
                               struct sx_error *err);

/* region_table/names: 'n' UTF-8 names (NULL is written as ""), in region id order. */
enum sx_status sx_h5w_names(struct sx_h5w *w, char *const *names, size_t n,
                            struct sx_error *err);

/*
 * The rank-region index: 'rows' (borrowed; only the index fields are read:
 * region, rank, count, source_*, tags, exclusive, meta_text, agg) in file
 * order, i.e. ascending rank, contiguous per rank. Event offsets are assigned
 * here as running sums of 'count', and the event column datasets are created
 * with their final length. Aggregate layout: the aggregate_* columns, every
 * other index column and events/start_deltas, durations empty. Call once,
 * after sx_h5w_names().
 */
enum sx_status sx_h5w_index(struct sx_h5w *w, const struct sx_row *const *rows,
                            size_t nrows, struct sx_error *err);

/*
 * Events [first, first + n) of index row 'row': 'col[c]' holds n values of
 * column c (SX_COL_START and SX_COL_END absolute ns); a NULL optional column
 * is written as its fill value (-1, await 0). Within a row the pieces must
 * come in order (first = number already written); rows may come in any
 * order. Start deltas restart at the first event of each row; the summary
 * statistics are accumulated here and written by sx_h5w_finish().
 */
enum sx_status sx_h5w_events(struct sx_h5w *w, size_t row, uint64_t first, uint64_t n,
                             const int64_t *const col[SX_NCOLS], struct sx_error *err);

/* The exclusive total of index row 'row' (-1 = not computed, the default). */
enum sx_status sx_h5w_set_exclusive(struct sx_h5w *w, size_t row, int64_t ns,
                                    struct sx_error *err);

/* thread_table/ and task_table/ from 'n' per-rank lane lists (borrowed). */
enum sx_status sx_h5w_threads(struct sx_h5w *w, const struct sx_lane_rank *lanes,
                              size_t n, struct sx_error *err);
enum sx_status sx_h5w_tasks(struct sx_h5w *w, const struct sx_lane_rank *lanes, size_t n,
                            struct sx_error *err);

/* rank<N>/likwid/regions/<tag, "/" -> "|">/ groups (borrowed input). */
enum sx_status sx_h5w_likwid(struct sx_h5w *w, const struct sx_likwid_rank *lk, size_t n,
                             struct sx_error *err);

/*
 * rank<N>/line_profile/<i>/ groups. Readers list them in name order ("0",
 * "1", "10", "2", ...); records are given names so that this order is the
 * order of 'lp[k].records', and a read-back run equals the written one.
 */
enum sx_status sx_h5w_line_profile(struct sx_h5w *w, const struct sx_lp_rank *lp,
                                   size_t n, struct sx_error *err);

/*
 * Ownership, the library's one rule: a function that takes ownership of an argument
 * takes it in every case, on failure too (as jansson's json_array_append_new): the
 * caller neither frees nor uses what it passed, whatever the call returns.
 */
/*
 * Check that every event was written, write exclusive_totals and
 * summary_statistics, close and rename the file over 'path'. Frees 'w' in
 * every case; on failure the temporary file is removed.
 */
enum sx_status sx_h5w_finish(struct sx_h5w *w, struct sx_error *err);

/*
 * Close and remove the temporary file, free 'w'. Accepts NULL. Collective
 * for an MPI-IO writer (every process calls it after the same failure).
 */
void sx_h5w_abort(struct sx_h5w *w);

#endif /* SX_H5_WRITE_H */
