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
struct sx_vlen; /* the heap walker (h5_direct_heap.c, below) */

/* An integer dataset as read at its file address; ok false: HDF5 reads it. */
struct sx_direct_col {
    bool ok;
    bool is_signed;
    bool big_endian; /* the file's byte order */
    size_t size;     /* 1, 2, 4 or 8 bytes */
    uint64_t addr;
    uint64_t nelem;
};

/* Elements [start, start + n) of a column, to 'dst' (n int64). */
struct sx_direct_span {
    uint64_t start, n;
    int64_t *dst;
};

/*
 * The raw views of 'file' (borrowed: an open HDF5 file, read by HDF5's POSIX
 * driver) opened by 'path': a descriptor and two mappings, one for the index
 * and its strings, one for the event columns. '*out' is NULL, and every read
 * goes through HDF5, when SCOPE_EXPORT_DIRECT_READS is "0", when 'path' now
 * names another file than the one HDF5 opened (device and inode differ), or
 * when any of it cannot be had. Never fails: a read through HDF5 is the
 * fall-back, not an error.
 */
void sx_direct_open(hid_t file, const char *path, struct sx_direct **out);
/* Accepts NULL. */
void sx_direct_close(struct sx_direct *dr);

/* Whether the environment leaves the direct reads on (SCOPE_EXPORT_DIRECT_READS). */
bool sx_direct_enabled(void);

/* Whether descriptors 'a' and 'b' are open on the same file (device and inode). */
bool sx_direct_same_file(int a, int b);

/*
 * The descriptor HDF5's POSIX driver reads 'file' with (borrowed: not to be
 * closed), or -1 under another driver.
 */
int sx_direct_hdf5_fd(hid_t file);

/*
 * Whether integer dataset 'd' (of file type 't') can be read at its file
 * address: contiguous, unfiltered, allocated, 1-D, wholly in the file, of 1,
 * 2, 4 or 8 bytes and not uint64 (whose int64 reads clip in HDF5's
 * conversion: HDF5 reads those). Either byte order on either host: the file's
 * order and the host's are compared at each read, which copies in place only
 * when they agree and decodes otherwise (sx_direct_decode). 'dr' NULL: never.
 */
void sx_direct_int_col(const struct sx_direct *dr, hid_t d, hid_t t,
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
 * The elements of column 'c' at rows 'pts[0..n)' (any order) to 'out',
 * through kept windows: a block's rows of one region lie thinly over the
 * index.
 */
enum sx_status sx_direct_read_points(struct sx_direct *dr, const struct sx_direct_col *c,
                                     const hsize_t *pts, size_t n, int64_t *out,
                                     const char *src, struct sx_error *err);

/*
 * A heap reader of string dataset 'd' (borrowed, open while the reader
 * lives), or NULL (SX_OK) when HDF5 is to read it: 'dr' NULL, or the dataset
 * is not eligible (sx_vlen_open). Errors are allocation failures.
 */
enum sx_status sx_direct_strings_open(struct sx_direct *dr, hid_t d, const char *src,
                                      struct sx_vlen **out, struct sx_error *err);

/*
 * The strings of dataset 'd' at rows 'pts[0..n)' as sx_h5_read_point_strings
 * gives them, through '*v' when there is one. A heap collection of a
 * version the reader does not know closes '*v' (NULL from then on) and the
 * rows are read with HDF5.
 */
enum sx_status sx_direct_read_strings(struct sx_direct *dr, struct sx_vlen **v, hid_t d,
                                      const hsize_t *pts, size_t n, struct sx_buf *text,
                                      size_t *off, const char *src, struct sx_error *err);

/* How many reads of this open went around HDF5 (tests: the switch takes effect). */
unsigned long sx_direct_reads(const struct sx_direct *dr);

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

/* ------------------------------------------------------------------ */
/* The family's parts, each in its own file                           */

/* h5_direct_map.c - the run's file mapped read-only, for reads scattered over all of it
 */

/*
 * The document is region-major and the file rank-major: a block's rows lie
 * a rank's share of the file apart, and each of them is a few hundred bytes
 * of every column. Read with pread, that is one system call and one kernel
 * copy per row and column; through a mapping it is a copy from the page
 * cache, and a page fault per 64 KiB the first time.
 *
 * What stays mapped in the process is bounded: once the 64 KiB frames read
 * since the last drop exceed 'budget' bytes, the whole mapping is dropped
 * (MADV_DONTNEED: the page cache keeps the pages, the process no longer
 * holds them) and faults them in again as it reads on.
 *
 * A file that shrinks while mapped would make the reads fault (SIGBUS): a
 * read that faults fails with SX_ERR_IO instead, naming its source.
 */
struct sx_file_map;

/*
 * A mapping of the first 'size' bytes of 'fd' (borrowed), holding at most
 * 'budget' bytes (at least 64 KiB) at once; NULL when the file cannot be
 * mapped, or no memory: the caller then reads with pread.
 */
struct sx_file_map *sx_file_map_open(int fd, uint64_t size, size_t budget);
void sx_file_map_close(struct sx_file_map *m);

/*
 * 'n' bytes at file offset 'at' into 'dst'. Bytes past the mapped size, or a
 * read of a file cut short under it, are SX_ERR_IO naming 'src' ("truncated or
 * damaged"); the first read of every frame may fail on purpose in the fault
 * tests (SX_FAULT_READ).
 */
enum sx_status sx_file_map_read(struct sx_file_map *m, uint64_t at, size_t n, void *dst,
                                const char *src, struct sx_error *err);

/* How many times 'm' dropped what it held (tests). */
unsigned long sx_file_map_drops(const struct sx_file_map *m);

/* h5_direct_win.c - windows of a file kept between reads, for rows picked thinly */

/*
 * A few aligned windows of a file, least recently used one replaced. A
 * block's rows of one region lie a rank's share of the index apart: a few
 * bytes each, many to a window, and the next block's rows in the same
 * windows again. Reading them through kept windows reads each window once
 * while it is in use, instead of once per block.
 */
struct sx_file_win;

/*
 * 'nwin' windows of 'win' bytes (a power of two) over 'fd' (borrowed); NULL:
 * no memory. With 'map' (borrowed, may be NULL) the reads copy from it and
 * keep no windows.
 */
struct sx_file_win *sx_file_win_new(int fd, struct sx_file_map *map, size_t win,
                                    size_t nwin);
void sx_file_win_free(struct sx_file_win *w);

/*
 * 'n' bytes at file offset 'at' into 'dst'. Bytes past the end of the file
 * are SX_ERR_IO naming 'src' ("truncated or damaged"); every window read may
 * fail on purpose in the fault tests (SX_FAULT_READ).
 */
enum sx_status sx_file_win_read(struct sx_file_win *w, uint64_t at, size_t n, void *dst,
                                const char *src, struct sx_error *err);

/* h5_direct_heap.c - variable-length strings read from the file's global heap */

/*
 * A reader of one contiguous, unfiltered, one-dimensional dataset of
 * variable-length strings that reads the file with pread instead of
 * H5Dread. HDF5 keeps such strings in global heap collections and reads a
 * whole collection (~64 KiB) through its metadata cache for each string, so
 * that rows picked all over a big file make it read every collection again
 * and again; this reader reads each collection whole once, keeps of it only
 * where each object lies (4 bytes per object), and later reads just the
 * strings asked for, each with its object's header, which checks it.
 */
struct sx_vlen;

/*
 * Open a reader of dataset 'dset' (borrowed, kept open by the caller while
 * the reader lives) on 'fd', a read-only descriptor of the same file
 * (borrowed), mapped as 'map' (borrowed; NULL: read with pread). '*out' is the new
 * reader, or NULL (and SX_OK) when the dataset is not a contiguous, unfiltered, allocated
 * 1-D dataset of variable-length strings in a file of this kind: the caller reads it with
 * HDF5 then. 'src' names the dataset in errors (allocation failures only:
 * nothing is read here).
 */
enum sx_status sx_vlen_open(hid_t dset, int fd, struct sx_file_map *map, const char *src,
                            struct sx_vlen **out, struct sx_error *err);

/*
 * The strings of file rows 'rows[0..n)' (any order, repeats allowed), as
 * H5Dread into C strings gives them: string k is text->data[off[k] ..
 * off[k + 1]) ('off' has n + 1 entries), a NULL string is empty, and a
 * string ends at its first NUL byte. 'text' is reset first. A row out of
 * range or a damaged heap is SX_ERR_FORMAT naming 'src', the row and the
 * heap object; a failed read is SX_ERR_IO. A heap collection of a version
 * other than 1 is SX_ERR_UNSUPPORTED with 'err' left as it was: not damage,
 * only not this reader's to read (HDF5 reads it; h5_direct.h falls back).
 */
enum sx_status sx_vlen_read(struct sx_vlen *v, const hsize_t *rows, size_t n,
                            struct sx_buf *text, size_t *off, const char *src,
                            struct sx_error *err);

/*
 * Check 'n' stored variable-length elements 'elems' (each a 4-byte length,
 * a heap ID: the collection's address of 'sa' bytes and a 4-byte index) of
 * a file read on 'fd' (borrowed; 'file_size' bytes, heap addresses relative
 * to 'base', lengths of 'sl' bytes): each must name an object of its heap
 * that holds its length times 'unit' bytes, or it is SX_ERR_FORMAT naming
 * 'src' and the element's row ('rows[k]', or k when 'rows' is NULL). The
 * check stops, passed, at a collection of a version other than 1: HDF5,
 * which reads the values, judges those.
 */
enum sx_status sx_vlen_check_heap(int fd, uint64_t file_size, uint64_t base, unsigned sa,
                                  unsigned sl, const unsigned char *elems, size_t n,
                                  uint64_t unit, const uint64_t *rows, const char *src,
                                  struct sx_error *err);

/* Free 'v' (NULL is fine). */
void sx_vlen_close(struct sx_vlen *v);

#endif /* SX_H5_DIRECT_H */
