/* h5_direct_map.h - a file read around libhdf5: mapped in a bounded budget, or through
 * kept windows (h5_direct_map.c, h5_direct_win.c) */
#ifndef SX_H5_DIRECT_MAP_H
#define SX_H5_DIRECT_MAP_H

#include "internal.h"

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

#endif /* SX_H5_DIRECT_MAP_H */
