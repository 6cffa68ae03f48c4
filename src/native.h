/* native.h - per-process files of scope-profiler's C and Fortran APIs (private) */
#ifndef SX_NATIVE_H
#define SX_NATIVE_H

#include "h5_direct.h"
#include "json_value.h"
#include "run.h"

/*
 * A native run is a set of per-process files, <prefix>_rank<NNNNN>.spt
 * (binary traces) or <prefix>_rank<NNNNN>.h5 (the C API's HDF5 output),
 * folded into one run as scope-profiler's import-native does. Reading a file
 * gives its index: the ranks it claims and its (rank, region) rows with
 * their sizes and first starts, but no events; events are read later, a
 * slice at a time, from where the index says they are.
 */

/* One (rank, region) row of a per-process file. */
struct sx_nrow {
    char *name; /* UTF-8 */
    int64_t rank;
    char *source_file; /* NULL = None */
    char *source_text; /* NULL or "" = none */
    bool has_lineno;
    int64_t lineno;
    uint64_t count;
    int64_t min_start;   /* of the starts; valid when count > 0 */
    int64_t first_start; /* starts[0]; valid when count > 0 */
    uint64_t loc;    /* .spt: byte offset of the starts; .h5: row of the file's index */
    uint64_t offset; /* .h5: its first event in the file's event columns */
};

/* One input file and what it contributes. */
struct sx_nfile {
    char *path; /* as scope-profiler prints it (Path(...)) */
    bool h5;    /* by suffix: ".h5" is HDF5, everything else a trace */
    bool big_endian;
    int64_t *ranks; /* ranks it claims, ascending */
    size_t nranks;
    struct sx_nrow *rows; /* ranks ascending; within a rank, the file's region order */
    size_t nrows;
    struct sx_value metadata; /* .h5: the file's metadata (SX_V_OBJECT); else NULL kind */
    /* .h5: its events read without HDF5 when 'ok' (h5_direct.h), else through HDF5 */
    struct sx_direct_later later;
};

void sx_nfile_clear(struct sx_nfile *f);

/*
 * Input discovery (find_traces): each of 'inputs' is a directory (its *.spt
 * and *_rank[0-9]*.h5 entries) or an existing path taken as is. Returns the
 * sorted, de-duplicated paths in '*paths' (new).
 */
enum sx_status sx_native_find(const char *const *inputs, size_t n, char ***paths,
                              size_t *npaths, struct sx_error *err);
/* PurePath order of two normalized paths (component-wise, code point order). */
int sx_native_path_cmp(const char *a, const char *b);
/* Path(s) as Python prints it. New string, NULL when out of memory. */
char *sx_native_path_norm(const char *s);

/* Names -> their index in the order first added (a hash table; names borrowed). */
struct sx_names {
    const char **name;
    size_t n, cap;
    size_t *slot; /* 2^k slots, SIZE_MAX empty */
    size_t nslot;
};
/* The index of 'name', added when new; SIZE_MAX when out of memory. */
size_t sx_names_add(struct sx_names *t, const char *name);
void sx_names_free(struct sx_names *t);

/* Stable sort of 'idx[0..n)' by 'key[idx[i]]' ascending (ties keep their order). */
enum sx_status sx_native_sort_keys(size_t *idx, size_t n, const double *key);

/* Read the index of 'f->path' (f->path and f->h5 set by the caller). Local. */
enum sx_status sx_native_read_index(struct sx_nfile *f, struct sx_error *err);

/* Keeps the last file open between slices, and the descriptors of up to 'keep_max'
 * files read without HDF5 between rows (a block visits every file once: reopening
 * each for each row cost three system calls a row). Zero-initialise with fd = -1;
 * sx_nreader_close(). */
struct sx_nreader {
    const struct sx_nfile *f;
    struct sx_h5 *h5;
    struct sx_run *run;
    int fd;
    bool fd_kept; /* 'fd' is one of 'kept', closed with them */
    int *kept;    /* per file of the run (by index): its kept descriptor, or -1 */
    size_t nfiles, nkeep, keep_max;
};

struct sx_native;
struct sx_nloc;
/*
 * Events [first, first + n) of the row at 'l' of the native run 'nr' into 'start' and
 * 'end' (either may be NULL: that column is not read), through 'rd' (which may keep
 * the file open for the next call). 'rd' serves one run. Local.
 */
enum sx_status sx_native_read_events(struct sx_nreader *rd, const struct sx_native *nr,
                                     const struct sx_nloc *l, uint64_t first, uint64_t n,
                                     int64_t *start, int64_t *end, struct sx_error *err);
void sx_nreader_close(struct sx_nreader *rd);

/* ------------------------------------------------------------------ */
/* native_merge.c: the files of all ranks -> one run                   */

/* Where the events of a merged row live. */
struct sx_nloc {
    uint32_t file; /* index into the run's files */
    uint32_t row;  /* index into that file's rows */
};

/* A native run: the merged run model (without events) and its files. */
struct sx_native {
    struct sx_nfile *files; /* sorted path order */
    size_t nfiles;
    int *owner; /* the rank of the communicator that reads each file */
    struct sx_run *run;
    struct sx_nloc *loc; /* per run row */
};

void sx_native_free(struct sx_native *nr);

/*
 * The native run 'nr' (borrowed) as a source of events (run.h): slices of
 * its rows' starts and ends, read from their files by the calling process,
 * whichever rank the files were given to. '*src' is set up here; free it
 * with sx_native_events_free (which accepts one never set up). Local.
 */
enum sx_status sx_native_events_new(const struct sx_native *nr,
                                    struct sx_event_source *src, struct sx_error *err);
void sx_native_events_free(struct sx_event_source *src);

/* native_export.c: SX_ERR_USAGE when 'output' is one of the run's files (it would be
 * destroyed). Local. */
enum sx_status sx_native_check_output(const struct sx_native *nr, const char *output,
                                      struct sx_error *err);

/*
 * NOTE: collective over 'comm' (MPI_COMM_NULL: this process alone). Find
 * every rank's 'inputs', spread the files over the ranks (a file named by
 * several ranks is read by one of them), read the indexes and merge them
 * into '*out' (new), the same on every rank. 'label' NULL or "" gives
 * 'stem_of' name without its document suffix (.json, .trace.json,
 * .speedscope.json, also with .gz) or else its last suffix. Every rank returns the same
 * status and error.
 */
enum sx_status sx_native_open(MPI_Comm comm, const char *const *inputs, size_t n,
                              const char *label, const char *stem_of,
                              struct sx_native **out, struct sx_error *err);

/* Load the events of every run row whose file is read by 'rank' (-1: all). Local. */
enum sx_status sx_native_load(struct sx_native *nr, int rank, struct sx_error *err);

#endif /* SX_NATIVE_H */
