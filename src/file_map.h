/* file_map.h - a run's file mapped read-only, for reads scattered over all of it
 */
#ifndef SX_FILE_MAP_H
#define SX_FILE_MAP_H

#include "internal.h"

#include <stddef.h>
#include <stdint.h>

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

#endif /* SX_FILE_MAP_H */
