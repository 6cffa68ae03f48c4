/* h5_write_direct.h - (h5_write) the event columns written at their file address, around
 * HDF5's sieve, by a stage written in file order */
#ifndef SX_H5_WRITE_DIRECT_H
#define SX_H5_WRITE_DIRECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Why around libhdf5: the serial writer's event columns are contiguous datasets
 * of the run's length, laid out rank by rank, and a document lists its rows
 * region by region: an import writes a piece of a few hundred bytes per row and
 * column, each far from the last. HDF5 1.10 writes such a piece through its
 * 64 KiB sieve: it reads the sieve's span, copies the piece in and writes the
 * span out again (half of the import of a 53k-row document). Here the pieces
 * are copied to a stage that is written, when full, in the order of the file,
 * neighbours in one write.
 *
 * Only where nothing else reads or writes those bytes meanwhile: the serial
 * writer over its own driver (h5_write_vfd.h), a little-endian host, a
 * contiguous column whose space HDF5 allocated when it created it; the writer
 * writes the stage before HDF5 flushes or reads the file. Elsewhere, or with
 * SCOPE_EXPORT_DIRECT_EVENT_WRITES=0 (read when a writer makes its event
 * columns), the events go through H5Dwrite. A failed write is kept in the
 * driver's 'werr' and reported by the writer as HDF5's own failed writes are.
 */
struct sx_wstage;

/* A little-endian host (the columns' bytes are the file's), and
 * SCOPE_EXPORT_DIRECT_EVENT_WRITES is not "0". */
bool sx_wstage_wanted(void);

/* A stage of at most 'bytes' bytes in at most 'pieces' pieces (0, 0: the defaults,
 * 16 MiB and 64Ki pieces) for 'fd', filled to 1 MiB at first and to twice as much
 * after each flush of small writes; the first failure's errno goes to '*werr' (and
 * nothing is written once it is set). NULL: out of memory. */
struct sx_wstage *sx_wstage_new(int fd, int *werr, size_t bytes, size_t pieces);

/* Bytes p[0..n) for file offset 'at' (pieces never overlap): copied, the stage written
 * first when it has no room; a piece of more than a quarter of the stage's fill is
 * written at once. */
void sx_wstage_put(struct sx_wstage *s, uint64_t at, const void *p, size_t n);

/* Write what is staged. */
void sx_wstage_flush(struct sx_wstage *s);

/* How many write calls the stage made, failed ones included (tests). */
unsigned long sx_wstage_writes(const struct sx_wstage *s);

/* The stage, not written. NULL: nothing. */
void sx_wstage_free(struct sx_wstage *s);

#endif /* SX_H5_WRITE_DIRECT_H */
