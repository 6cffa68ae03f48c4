/* h5_direct_heap.h - variable-length strings read from the file's global heap, and
 * stored elements checked against it: the direct reads' walker and the vlen guard's */
#ifndef SX_H5_DIRECT_HEAP_H
#define SX_H5_DIRECT_HEAP_H

#include "buf.h"
#include "internal.h"
#include "read_batch.h"

#include <hdf5.h>

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
 * (borrowed), read with pread. '*out' is the new reader, or NULL (and SX_OK) when the
 * dataset is not a contiguous, unfiltered, allocated 1-D dataset of variable-length
 * strings in a file of this kind: the caller reads it with HDF5 then. 'src' names the
 * dataset in errors (allocation failures only: nothing is read here).
 */
/* The superblock's sizes of the file 'fd' is: looked up at the first dataset opened,
 * and reused for the next ones of the same file. Zero-initialised. */
struct sx_vlen_file {
    bool known, ok; /* looked up; usable sizes */
    unsigned sa, sl;
    uint64_t userblock;
    const struct sx_read_map *map; /* the file mapped (read_batch.h), or NULL */
};
/* 'vf': the file's sizes, kept by the caller for all the file's datasets (NULL: looked
 * up for this one). */
enum sx_status sx_vlen_open(hid_t dset, int fd, struct sx_vlen_file *vf, const char *src,
                            struct sx_vlen **out, struct sx_error *err);

/*
 * The strings of file rows 'rows[0..n)' (any order, repeats allowed; 'rows'
 * NULL: the rows first .. first + n), as
 * H5Dread into C strings gives them: string k is text->data[off[k] ..
 * off[k + 1]) ('off' has n + 1 entries), a NULL string is empty, and a
 * string ends at its first NUL byte. 'text' is reset first. A row out of
 * range or a damaged heap is SX_ERR_FORMAT naming 'src', the row and the
 * heap object; a failed read is SX_ERR_IO. A heap collection of a version
 * other than 1 is SX_ERR_UNSUPPORTED with 'err' left as it was: not damage,
 * only not this reader's to read (HDF5 reads it; h5_direct.h falls back).
 */
enum sx_status sx_vlen_read(struct sx_vlen *v, const hsize_t *rows, hsize_t first,
                            size_t n, struct sx_buf *text, size_t *off, const char *src,
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

/*
 * Hold one variable-length value's claimed size 'need' (bytes) of row 'row' to
 * the size of its file, 'file_size' bytes, before any room is taken for it: it
 * must fit the file, and so must '*total', the claims summed so far, to which
 * 'need' is added when 'count' (a row asked again is not counted twice). Past
 * either, SX_ERR_FORMAT naming 'src' and the row. The vlen guard and the direct
 * reads both hold values to it, with the same messages.
 */
enum sx_status sx_vlen_claim(uint64_t need, bool count, uint64_t *total,
                             uint64_t file_size, const char *src, uint64_t row,
                             struct sx_error *err);

/* Free 'v' (NULL is fine). */
void sx_vlen_close(struct sx_vlen *v);

#endif /* SX_H5_DIRECT_HEAP_H */
