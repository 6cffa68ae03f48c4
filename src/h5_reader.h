/* h5_reader.h - what the HDF5 reader's files share: the open run (struct sx_h5) */
#ifndef SX_H5_READER_H
#define SX_H5_READER_H

#include "h5_read.h"
#include "h5_util.h"
#include "run.h"

#include <hdf5.h>

#include <sys/types.h>

/* The schema this reader knows best; newer files are read with a warning-free best
 * effort. */
#define CURRENT_SCHEMA 3

/* Event dataset names in the columnar layout, per column. */
extern const char *const sx_h5_col_names[SX_NCOLS];

/* The per-row columns of the index a lazy run reads for the blocks that write them. */
enum { RD_FILES, RD_TEXTS, RD_TAGS, RD_LINES, RD_EXCL, RD_N };
extern const char *const sx_h5_rd_names[RD_N];

struct sx_direct;     /* h5_direct.h */
struct sx_direct_col; /* h5_direct.h */
struct sx_vlen;       /* h5_direct_heap.h */
struct sx_h5_sum;     /* h5_summary.c */

/* An open run: the file, its event datasets and what the readers reuse between calls. */
struct sx_h5 {
    hid_t file;
    char *path;
    /* the file's facts for the guard of variable-length reads (h5_util.h) */
    struct sx_h5_facts facts;
    /* the paths of its links (sx_h5_has_link), or NULL: HDF5 looks them up */
    struct sx_h5_links *links;
    hid_t ev[SX_NCOLS]; /* columnar event datasets (START/END: deltas/durations when
                           encoded) */
    hid_t meta;         /* rank_region_index/event_metadata, or -1 */
    bool lazy;          /* sx_h5_open_index: rows are read by sx_h5_fill_rows */
    bool open_only;     /* a rank other than 0 of a shared index: opens, reads no rows */
    /* sx_h5_open_index: the caller keeps the run open while its rows live, so the rows
     * of a full read (--summary) borrow their strings from the pools as a lazy run's */
    bool borrow;
    hid_t rd[5]; /* lazily read index columns (RD_*), or -1 */
    /* a lazy summary (sx_h5_open_summary, run->summary_index): summary_statistics has
     * nsum rows, one an index row; the rows' statistics, lines and exclusive times, 104
     * bytes a row, held for the rows this process fills (sx_h5_hold_summary), which the
     * blocks' rows are made of (sx_h5_summary_rows): by file row, or where
     * sum_slot[file row] - 1 says when only some are held (0: not held) */
    struct sx_h5_sum *sum;
    uint32_t *sum_slot;
    uint64_t nsum;
    /* the strings of 'meta' read from the file's global heap, or NULL: HDF5 reads them */
    struct sx_vlen *meta_vlen;
    /* running sums of start_deltas at piece ends, so that a row read in
     * pieces does not re-sum from its first event for every piece */
    struct ckpt {
        uint64_t offset; /* the row's first event: rows come and go, offsets stay */
        uint64_t pos, sum;
    } ck[256];
    size_t ck_next;
    /* reused read buffer of batched slice reads through HDF5 */
    struct sx_big scratch;
    /* reused room of the start deltas that slices of ends alone are computed from (a
     * read-ahead's worth: fresh, its pages faulted in for every read) */
    struct sx_big end_deltas;
    /* reused rooms of a batch of slice reads (read_slices): its spans and their sort,
     * the twins of END-only slices, a column's direct spans; each a read-ahead's worth,
     * which malloc took fresh from the kernel and gave back at every read */
    struct sx_big spans_mem, twins_mem, dspans_mem;
    off_t file_size; /* of the file HDF5 opened */
    /* the reads around HDF5 (h5_direct.h), or NULL: HDF5 reads all */
    struct sx_direct *direct;
    /* per event column (SX_NCOLS) and per index column (RD_N), in one allocation:
     * by pointer, so that this header needs not the direct reads' own */
    struct sx_direct_col *raw, *rdraw;
    /* the string columns (RD_FILES..RD_TAGS) of a lazy run or one whose rows borrow,
     * read once at open: every distinct string once in a pool, and per row its id (0:
     * empty) */
    struct pool {
        char **s; /* s[id - 1] */
        size_t n, cap;
        uint32_t *slot; /* hash table of ids, 0 = free */
        size_t nslot;
        uint32_t *id; /* per file row */
        /* tags only: each string parsed once, when a row first needs it (ntags + 1;
         * 0: not yet) */
        char ***tags;
        size_t *ntags;
    } pool[3];
};

/* h5_schema.c */

enum sx_status sx_h5_read_metadata(struct sx_h5 *h5, struct sx_run *run,
                                   struct sx_error *err);

enum sx_status sx_h5_read_schema(struct sx_h5 *h5, struct sx_run *run,
                                 struct sx_error *err);

/* h5_pool.c */

void sx_h5_pool_free(struct pool *p);

/*
 * Read a string column of the index in pieces into a pool: a row's string
 * costs 4 bytes and each sx_h5_distinct string is kept once (a run's rows of one
 * region share their source file, text and tags). Strings are decoded as the
 * full read decodes them. Through the heap walker when 'dr' reads the file directly
 * and the column is eligible (h5_direct.h), else through HDF5: HDF5's read of a
 * variable-length string costs a conversion and a heap lookup each (a sixth of the
 * 1024 x 64 run's bare export), the walker a collection read once.
 */
enum sx_status sx_h5_read_pool(struct sx_direct *dr, hid_t d, uint64_t nrows,
                               struct pool *p, const char *src, struct sx_error *err);
/*
 * The pools of 'n' string columns d[k] (named src[k]) into *p[k], as sx_h5_read_pool
 * reads each: the last in a helper thread beside the others where one may run
 * (sx_helper_allowed) and the heap walker reads it (a run's setup reads its three
 * string columns of a row each: a sixth of the 1024 x 64 run's export). The error is
 * the first column's that failed; a collection the walker leaves to HDF5 is read here.
 */
enum sx_status sx_h5_read_pools(struct sx_direct *dr, const hid_t *d, int n,
                                uint64_t nrows, struct pool *const *p,
                                const char *const *src, struct sx_error *err);

/* h5_summary.c */

/* Every row of a run read in full made an aggregate row of its statistics. */
enum sx_status sx_h5_read_summary(struct sx_h5 *h5, struct sx_run *run,
                                  struct sx_error *err);

/* A lazy summary: summary_statistics opened and checked against the index on the ranks
 * that read it; its rows are held later (sx_h5_hold_summary). */
enum sx_status sx_h5_open_summary(struct sx_h5 *h5, const struct sx_run *run,
                                  struct sx_error *err);

/*
 * Hold the statistics, lines and exclusive times of the rows want[file row] != 0 (NULL:
 * all), read in file order a bounded piece at a time: a process holds 104 bytes for
 * each row it writes (against some 530 of rows read in full with their aggregates).
 * Read by row for the blocks instead, each block's rows (a region's, rank by rank) lie
 * all over the file, which was read again for every region.
 */
enum sx_status sx_h5_hold_summary(struct sx_h5 *h5, const uint8_t *want,
                                  struct sx_error *err);

void sx_h5_summary_free(struct sx_h5 *h5);

/* Rows filled from the index (their count and file row set) made the aggregate rows of
 * their statistics, their lines and exclusive times set; all rows are held first when
 * none are yet. */
enum sx_status sx_h5_summary_rows(struct sx_h5 *h5, struct sx_row *rows, size_t n,
                                  struct sx_error *err);

/* h5_schema1.c */

enum sx_status sx_h5_read_schema1(struct sx_h5 *h5, struct sx_run *run,
                                  struct sx_error *err);

/* h5_index_share.c */

/*
 * NOTE: collective over 'comm'. The index of a lazily read columnar run is
 * read by rank 0 alone and sent to every rank: at thousands of ranks, every
 * rank reading every index column would storm a parallel file system. The
 * others opened the file's datasets but read no row ('open_only'). Every rank
 * calls this whatever its 'st'; returns the agreed status.
 */
enum sx_status sx_h5_share_index(MPI_Comm comm, struct sx_h5 *h5, struct sx_run *run,
                                 enum sx_status st, struct sx_error *err);

#endif /* SX_H5_READER_H */
