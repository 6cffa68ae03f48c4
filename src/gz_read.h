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

#endif /* SX_GZ_READ_H */
