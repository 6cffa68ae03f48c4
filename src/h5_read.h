/* h5_read.h - HDF5 runs into the run model: the readers' face (h5_index.c,
 * h5_rank_tables.c, h5_events.c, h5_load.c) */
#ifndef SX_H5_READ_H
#define SX_H5_READ_H

#include "buf.h"
#include "run.h"

#include <mpi.h>

/* An open run (h5_reader.h). */
struct sx_h5;

/*
 * Open 'path' and read the run's index: root attributes, metadata, region
 * table, rank-region index (or the schema-1 groups), validated (spec 2.11).
 * Every rank reads the file through HDF5's POSIX driver on its own (nothing
 * is written beside it); 'comm' (MPI_COMM_NULL: this process alone) agrees
 * on errors and shares a lazily read index. Collective over 'comm' when it is
 * not MPI_COMM_NULL: every rank must call it even after an error elsewhere.
 * The returned run holds rows without event data.
 */
enum sx_status sx_h5_open(MPI_Comm comm, const char *path, bool summary,
                          struct sx_h5 **h5, struct sx_run **run, struct sx_error *err);
/*
 * The same, but a columnar run (not aggregate) is read lazily: 'run' gets the
 * index (run->index) and no rows; the rest of a row is read by sx_h5_fill_rows
 * when a block writes it, a summary's aggregates too (run->summary_index).
 * Other layouts are read as by sx_h5_open. Collective like sx_h5_open.
 */
enum sx_status sx_h5_open_index(MPI_Comm comm, const char *path, bool summary,
                                struct sx_h5 **h5, struct sx_run **run,
                                struct sx_error *err);
/*
 * The rows 'ix[0..n)' of a lazily read run in full (strings, tags, source
 * line, exclusive total; no event data), each row in one read per column.
 * 'out' has room for n rows; the caller clears them (sx_row_clear). Local.
 */
enum sx_status sx_h5_fill_rows(struct sx_h5 *h5, const struct sx_run *run,
                               const struct sx_index_row *const *ix, size_t n,
                               struct sx_row *out, struct sx_error *err);
/*
 * The rows of a lazily read run this process fills, want[file row] != 0: a
 * summary holds the statistics of those alone (else all, at the first fill).
 * Nothing for other runs. Local.
 */
enum sx_status sx_h5_hold_rows(struct sx_h5 *h5, const struct sx_run *run,
                               const uint8_t *want, struct sx_error *err);
/* Local. Accepts NULL. */
void sx_h5_close(struct sx_h5 *h5);

/* Read lane tables, LIKWID and line-profile groups into 'run'. Local. */
enum sx_status sx_h5_read_extras(struct sx_h5 *h5, struct sx_run *run,
                                 struct sx_error *err);

struct sx_direct_later;
/*
 * What reading the start and end events of 'run' again without HDF5, after
 * 'h5' is closed, needs (h5_direct.h); 'out->ok' false when HDF5 must read
 * them (no direct reads, columns not eligible, starts stored as deltas).
 */
void sx_h5_events_later(const struct sx_h5 *h5, const struct sx_run *run,
                        struct sx_direct_later *out);

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

/*
 * The same for 'n' rows in one read: row k's text is out->data[off[k] ..
 * off[k + 1]) (empty when it has none; 'off' has n + 1 entries) and any[k]
 * tells whether some dict of it is non-empty. With 'stored', each row's text
 * as stored, for sx_h5_canon_meta, and any[k] whether it has one. Local.
 */
enum sx_status sx_h5_read_metas(struct sx_h5 *h5, const struct sx_run *run,
                                const struct sx_row *const *rows, size_t n, bool stored,
                                struct sx_buf *out, size_t *off, bool *any,
                                struct sx_error *err);
/*
 * Row 'row''s stored event_metadata 'text' (as sx_h5_read_metas gives it with 'stored')
 * canonical, appended to 'out', and '*any' as sx_h5_read_metas says it. No HDF5 call and
 * nothing of 'h5' that its reads change: it may run beside them in another thread.
 */
enum sx_status sx_h5_canon_meta(const struct sx_h5 *h5, const struct sx_row *row,
                                const char *text, size_t len, struct sx_buf *out,
                                bool *any, struct sx_error *err);

/* Whether 'row''s GPU slice has a value >= 0 (else the row writes no GPU column). */
enum sx_status sx_h5_gpu_present(struct sx_h5 *h5, const struct sx_run *run,
                                 const struct sx_row *row, bool *present,
                                 struct sx_error *err);

/* Load everything, events included, into a run (for compare and import). */
enum sx_status sx_h5_load(const char *path, bool summary, struct sx_run **run,
                          struct sx_error *err);

/* Whether 'path' starts with the HDF5 signature (a missing file is not HDF5). */
bool sx_is_hdf5(const char *path);

/* The open run as a source of rows and events for the documents (sx_doc_block); for
 * NULL, the source of a run in memory. */
struct sx_event_source sx_h5_event_source(struct sx_h5 *h5);

/* Number of HDF5 ids this library has open (0 after every call). */
long sx_h5_open_ids(void);

/*
 * Read many slices at once: one hyperslab selection per column, nearby
 * ranges merged, so a block of many small rows costs a few reads. The
 * caller points each slice's col[c] at room for n values. Local.
 */
enum sx_status sx_h5_read_slices(struct sx_h5 *h5, const struct sx_run *run,
                                 struct sx_slice *s, size_t ns, struct sx_error *err);

#endif /* SX_H5_READ_H */
