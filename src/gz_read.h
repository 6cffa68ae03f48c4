/* gz_read.h - a whole regular file read into memory, gunzipped when it is gzip */
#ifndef SX_GZ_READ_H
#define SX_GZ_READ_H

#include "internal.h"

/*
 * The whole (decompressed) content of 'path', NUL-terminated. gzip is
 * detected by content. Only a regular file: a FIFO or a device (/dev/zero)
 * would block or never end.
 * New buffer in '*data' (the caller frees it). Messages name it a JSON profile.
 */
enum sx_status sx_gz_read_all(const char *path, char **data, size_t *len,
                              struct sx_error *err);

/*
 * A JSON profile read in order, in pieces: a plain file as it is, gzip
 * (detected by content; members may follow each other) inflated as it is
 * read, so that no more of the text is in memory than the reader keeps.
 */
struct sx_gz_in;

/* Open 'path' (a regular file). '*in' is new; sx_gz_in_close() releases it. */
enum sx_status sx_gz_in_open(const char *path, struct sx_gz_in **in,
                             struct sx_error *err);
/* Up to 'cap' more bytes of text into 'dst'; '*n' is 0 only at the end. */
enum sx_status sx_gz_in_read(struct sx_gz_in *in, char *dst, size_t cap, size_t *n,
                             struct sx_error *err);
/* Whether the file is gzip; the file's size on disk. */
bool sx_gz_in_is_gz(const struct sx_gz_in *in);
uint64_t sx_gz_in_size(const struct sx_gz_in *in);
/* A plain file only: go on reading at text offset 'off'. */
enum sx_status sx_gz_in_seek(struct sx_gz_in *in, uint64_t off, struct sx_error *err);
/* NULL is accepted. */
void sx_gz_in_close(struct sx_gz_in *in);

/*
 * The line and column of text offset 'off' of 'path', counted as jansson
 * counts them (lines from 1; columns in characters, from 1 at a line's first),
 * by reading the text again up to it: for error messages only.
 */
enum sx_status sx_gz_locate(const char *path, uint64_t off, int *line, int *column,
                            struct sx_error *err);

#endif /* SX_GZ_READ_H */
