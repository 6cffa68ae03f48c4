/* h5_direct_win.h - a file read around libhdf5 through kept windows (h5_direct_win.c) */
#ifndef SX_H5_DIRECT_WIN_H
#define SX_H5_DIRECT_WIN_H

#include "internal.h"

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
 * no memory.
 */
struct sx_file_win *sx_file_win_new(int fd, size_t win, size_t nwin);
void sx_file_win_free(struct sx_file_win *w);

/*
 * 'n' bytes at file offset 'at' into 'dst'. Bytes past the end of the file
 * are SX_ERR_IO naming 'src' ("truncated or damaged"); every window read may
 * fail on purpose in the fault tests (SX_FAULT_READ).
 */
enum sx_status sx_file_win_read(struct sx_file_win *w, uint64_t at, size_t n, void *dst,
                                const char *src, struct sx_error *err);

#endif /* SX_H5_DIRECT_WIN_H */
