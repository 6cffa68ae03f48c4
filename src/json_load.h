/* json_load.h - a JSON profile into the run model */
#ifndef SX_JSON_LOAD_H
#define SX_JSON_LOAD_H

#include "json_value.h"
#include "run.h"

/* Load a JSON profile (.json or .json.gz, or by content) into a run. */
enum sx_status sx_json_load(const char *path, struct sx_run **run, struct sx_error *err);

/* What sx_json_load_ex keeps of the rows it reads. */
enum sx_json_keep {
    SX_JSON_KEEP_ALL,   /* the whole run (sx_json_load) */
    SX_JSON_KEEP_INDEX, /* rows without their event columns; row->file_row is the
                           regions element a row came from */
    SX_JSON_KEEP_NONE,  /* no rows: each goes to the caller's function, then away */
    SX_JSON_KEEP_EVENTS /* as NONE, each row with its event columns alone (no event
                           metadata: an import's second pass), lent by the reader
                           (row->lent): read during the call, never taken */
};

/* A row read from element 'i' of regions (its region not numbered: row->region 0);
 * 'row' is cleared after the call unless the callee takes what it holds. */
typedef enum sx_status (*sx_json_row_fn)(void *ctx, size_t i, struct sx_row *row,
                                         struct sx_error *err);

/*
 * sx_json_load() read in one pass with memory bounded by the largest row (json_stream.h),
 * keeping 'keep' of the rows; 'on_row' (may be NULL) sees every row read under
 * SX_JSON_KEEP_NONE or SX_JSON_KEEP_EVENTS. '*nelements' (may be NULL): the elements of
 * regions.
 */
enum sx_status sx_json_load_ex(const char *path, enum sx_json_keep keep,
                               sx_json_row_fn on_row, void *on_row_ctx,
                               struct sx_run **run, size_t *nelements,
                               struct sx_error *err);

/*
 * Check a part of a plain document as sx_jstream_read_part() reads it (its
 * rows, and the rest of the document when regions end in it), keeping
 * nothing. A part from 0 checks the format when the document gives it before
 * its rows ('*format_checked'); a later part leaves the format to the first.
 */
enum sx_status sx_json_check_part(const char *path, uint64_t from, uint64_t to,
                                  size_t first_index, uint64_t *next, size_t *count,
                                  bool *format_checked, struct sx_error *err);

#endif /* SX_JSON_LOAD_H */
