/* deflate_out.h - gzip as independently deflated segments, CRCs combined; zlib streams */
#ifndef SX_DEFLATE_OUT_H
#define SX_DEFLATE_OUT_H

#include "buf.h"

/* Compress 'n' bytes into a raw deflate segment ending on a byte boundary
 * ('final': the segment ends the stream). Appends to 'out'. */
enum sx_status sx_deflate_segment(const void *p, size_t n, int level, enum sx_deflate eng,
                                  bool final, struct sx_buf *out, struct sx_error *err);
uint32_t sx_crc32(uint32_t crc, const void *p, size_t n);
uint32_t sx_crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);
/* The 10-byte gzip header (mtime 0, no name) and the 8-byte trailer. */
void sx_gzip_header(unsigned char out[10], int level);
void sx_gzip_trailer(unsigned char out[8], uint32_t crc, uint64_t isize);
uint32_t sx_adler32(uint32_t adler, const void *p, size_t n);
/* 'n' bytes as one zlib stream (RFC 1950: header, deflate, Adler-32), appended to 'out':
 * with the zlib engine, libdeflate's where the build has it (sx_zlib_by_libdeflate). */
enum sx_status sx_zlib_compress(const void *p, size_t n, int level, enum sx_deflate eng,
                                struct sx_buf *out, struct sx_error *err);
/* Whether zlib streams are libdeflate's: built with it, and SCOPE_EXPORT_LIBDEFLATE is
 * not 0. */
bool sx_zlib_by_libdeflate(void);

#endif /* SX_DEFLATE_OUT_H */
