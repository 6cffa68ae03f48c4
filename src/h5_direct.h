/* h5_direct.h - reads of a run's file that go around libhdf5, and their fall-back to it
 */
#ifndef SX_H5_DIRECT_H
#define SX_H5_DIRECT_H

#include "buf.h"
#include "internal.h"

#include <hdf5.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Why around libhdf5 at all: HDF5 1.10 reads a many-range selection of an
 * event column through a 64 KiB sieve per range (0.5 s where a read per
 * row costs 0.05 s on a many-row run), and reads a whole global heap
 * collection for every variable-length string it is asked for. So the
 * integer columns of contiguous unfiltered datasets are read at their file
 * address, and the per-block event metadata from the global heap
 * (h5_direct_heap.c); everything else, strings read once at open included, goes
 * through HDF5.
 *
 * Every read here falls back to HDF5 rather than give a wrong value or a
 * false "damaged": a dataset that is not eligible (layout, filters, byte
 * order, size), a raw view that is not the file HDF5 opened, a heap
 * collection of a version this reader does not know. The environment
 * variable SCOPE_EXPORT_DIRECT_READS=0, read at each open, sends every read
 * of that open through HDF5.
 */
struct sx_direct;
struct sx_vlen; /* the heap walker (h5_direct_heap.h) */

/*
 * An integer dataset as read at its file address; ok false: HDF5 reads it.
 * Or, 'zip': a chunked column whose chunks are deflated (after a shuffle or
 * not), as the relay writer stores events: read chunk by chunk at the
 * addresses HDF5's chunk index gives, inflated and unshuffled here
 * (sx_direct_read_zspans); 'ok' is false for it.
 */
struct sx_direct_col {
    bool ok;
    bool is_signed;
    bool big_endian; /* the file's byte order */
    size_t size;     /* 1, 2, 4 or 8 bytes */
    uint64_t addr;
    uint64_t nelem;
    bool zip, shuffle;
    uint64_t chunk; /* elements per chunk (zip) */
    hid_t dset;     /* borrowed: the dataset, for its chunk index (zip) */
};

/* Elements [start, start + n) of a column, to 'dst' (n int64). */
struct sx_direct_span {
    uint64_t start, n;
    int64_t *dst;
};

/*
 * The raw views of the file HDF5 has open on descriptor 'hfd' (its POSIX
 * driver's: sx_h5_posix_fd; -1: none) opened by 'path': a descriptor of its
 * own, read with pread. '*out' is NULL, and every read
 * goes through HDF5, when SCOPE_EXPORT_DIRECT_READS is "0", when 'path' now
 * names another file than the one HDF5 opened (device and inode differ), or
 * when any of it cannot be had. Never fails: a read through HDF5 is the
 * fall-back, not an error.
 */
void sx_direct_open(int hfd, const char *path, struct sx_direct **out);
/* Accepts NULL. */
void sx_direct_close(struct sx_direct *dr);

/* Whether the environment leaves the direct reads on (SCOPE_EXPORT_DIRECT_READS). */
bool sx_direct_enabled(void);

/* Whether descriptors 'a' and 'b' are open on the same file (device and inode). */
bool sx_direct_same_file(int a, int b);

/*
 * Whether integer dataset 'd' (of file type 't') can be read at its file
 * address ('ok': contiguous, unfiltered, allocated, 1-D, wholly in the file)
 * or chunk by chunk ('zip': 1-D chunks, deflate after an optional shuffle and
 * no other filter); of 1, 2, 4 or 8 bytes and not uint64 (whose int64 reads
 * clip in HDF5's conversion: HDF5 reads those). Either byte order on either host: the
 * file's order and the host's are compared at each read, which copies in place only when
 * they agree and decodes otherwise (sx_direct_decode). 'dr' NULL: never.
 */
void sx_direct_int_col(const struct sx_direct *dr, hid_t d, hid_t t,
                       struct sx_direct_col *c);
/* The same, of creation properties 'dcpl' the caller has (borrowed; < 0: never). */
void sx_direct_int_col_dcpl(const struct sx_direct *dr, hid_t d, hid_t t, hid_t dcpl,
                            struct sx_direct_col *c);

/*
 * The spans 'sp[0..n)' of column 'c' (sorted by start), spans less than a
 * page apart read at once. A read past the end of the file is SX_ERR_IO
 * naming 'src'.
 */
enum sx_status sx_direct_read_spans(struct sx_direct *dr, const struct sx_direct_col *c,
                                    const struct sx_direct_span *sp, size_t n,
                                    const char *src, struct sx_error *err);

/*
 * The spans 'sp[0..n)' of a 'zip' column 'c' (sorted by start). HDF5's own
 * deflate filter is zlib's inflate behind a conversion buffer; here a chunk
 * is inflated by ISA-L, straight from the file's bytes, and each chunk once
 * for all spans in it. The chunks go in batches: their bytes read through
 * HDF5 one by one, then decoded, half by the reader's helper thread where
 * the process may run one (SCOPE_EXPORT_THREADS=0: never). Returns
 * SX_ERR_UNSUPPORTED, with nothing said, when HDF5 is to read these spans
 * after all: a chunk not allocated (fill values), a filter skipped for a
 * chunk, bytes that do not inflate to a whole chunk (HDF5 then says what is
 * wrong). A read past the end of the file is SX_ERR_IO naming 'src'.
 */
enum sx_status sx_direct_read_zspans(struct sx_direct *dr, const struct sx_direct_col *c,
                                     const struct sx_direct_span *sp, size_t n,
                                     const char *src, struct sx_error *err);

/*
 * The shuffle filter undone for 'n' little-endian 8-byte elements: byte b of
 * element i is at p[b * n + i]; to 'out' as integers of a little-endian host.
 * 'simd': 16 elements at a time in vector registers where the build has them
 * (false: one at a time, the reference the tests hold the other to).
 */
void sx_direct_unshuffle8(const unsigned char *p, uint64_t n, uint64_t *out, bool simd);

/*
 * The elements of column 'c' at rows 'pts[0..n)' (any order) to 'out',
 * through kept windows: a block's rows of one region lie thinly over the
 * index.
 */
enum sx_status sx_direct_read_points(struct sx_direct *dr, const struct sx_direct_col *c,
                                     const hsize_t *pts, size_t n, int64_t *out,
                                     const char *src, struct sx_error *err);

/*
 * The integers of dataset 'd' at rows 'pts[0..n)' as sx_h5_read_point_ints
 * gives them: through kept windows (sx_direct_read_points) when 'c' was found
 * eligible, else one HDF5 read.
 */
enum sx_status sx_direct_point_ints(struct sx_direct *dr, const struct sx_direct_col *c,
                                    hid_t d, const hsize_t *pts, size_t n, int64_t *out,
                                    const char *src, struct sx_error *err);

/*
 * A heap reader of string dataset 'd' (borrowed, open while the reader
 * lives), or NULL (SX_OK) when HDF5 is to read it: 'dr' NULL, or the dataset
 * is not eligible (sx_vlen_open). Errors are allocation failures.
 */
enum sx_status sx_direct_strings_open(struct sx_direct *dr, hid_t d, const char *src,
                                      struct sx_vlen **out, struct sx_error *err);

/*
 * The strings of dataset 'd' at rows 'pts[0..n)' ('pts' NULL: the rows first ..
 * first + n) as sx_h5_read_point_strings gives them, through '*v' when there is one. A
 * heap collection of a version the reader does not know closes '*v' (NULL from then on)
 * and the rows are read with HDF5.
 */
enum sx_status sx_direct_read_strings(struct sx_direct *dr, struct sx_vlen **v, hid_t d,
                                      const hsize_t *pts, hsize_t first, size_t n,
                                      struct sx_buf *text, size_t *off, const char *src,
                                      struct sx_error *err);

/*
 * A run's event columns read again after the run is closed, without HDF5: a
 * native run indexes its per-process files first and reads their rows while
 * it writes, file after file, where opening each file again through HDF5
 * (its strings, its index) cost more than the events. 'ok' false: the file
 * is read through HDF5 again (no direct reads at the index, or the columns
 * not eligible).
 */
struct sx_direct_later {
    bool ok;
    uint64_t dev, ino, size;     /* the file HDF5 opened at the index */
    struct sx_direct_col col[2]; /* the start and end columns */
};
/* What sx_direct_later_read needs of columns 'start' and 'end' of the open 'dr'. */
void sx_direct_later_init(const struct sx_direct *dr, const struct sx_direct_col *start,
                          const struct sx_direct_col *end, struct sx_direct_later *out);
/*
 * Open 'path' again into '*fd': SX_ERR_FORMAT when it is no longer the file
 * 'dl' describes (replaced or resized since its index was read).
 */
enum sx_status sx_direct_later_open(const struct sx_direct_later *dl, const char *path,
                                    int *fd, struct sx_error *err);
/* Elements [first, first + n) of column 'c' (dl->col[0] or [1]) from 'fd' to 'dst'. */
enum sx_status sx_direct_later_read(int fd, const struct sx_direct_col *c, uint64_t first,
                                    uint64_t n, int64_t *dst, const char *src,
                                    struct sx_error *err);
/*
 * The superblock's sizes of the reader's file, as its reader already looked them up
 * (sx_h5_facts): its string datasets use them instead of asking HDF5 again. Without
 * them, the first string dataset opened looks them up.
 */
void sx_direct_set_file_sizes(struct sx_direct *dr, unsigned sa, unsigned sl,
                              uint64_t userblock);
/* How many reads of this open went around HDF5 (tests: the switch takes effect). */
unsigned long sx_direct_reads(const struct sx_direct *dr);
/* How many deflated chunks the helper thread decoded (tests: it ran, or it did not). */
unsigned long sx_direct_helped(const struct sx_direct *dr);
/* How many span reads of this open a ring made in batches (read_batch.h; tests). */
unsigned long sx_direct_batched(const struct sx_direct *dr);
/* Whether this open reads from a mapping of the file (read_batch.h; tests). */
bool sx_direct_mapped(const struct sx_direct *dr);

/* Whether this host stores integers big-endian. */
bool sx_direct_host_big_endian(void);

/*
 * 'n' integers of 'size' bytes at 'p', stored in the file's byte order
 * ('file_be'), to int64 values in the byte order of a host that is big-endian
 * when 'host_be' (sign-extended when 'is_signed'). The host's order is a
 * parameter so that a test on a little-endian machine can run a big-endian
 * host's path; the library passes sx_direct_host_big_endian().
 */
void sx_direct_decode(const unsigned char *p, size_t size, bool is_signed, bool file_be,
                      bool host_be, uint64_t n, int64_t *out);

#endif /* SX_H5_DIRECT_H */
