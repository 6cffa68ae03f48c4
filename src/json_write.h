/* json_write.h - byte-exact JSON text as Python's json.dumps writes it: numbers and
 * strings appended to a buffer (buf.h) */
#ifndef SX_JSON_WRITE_H
#define SX_JSON_WRITE_H

#include "buf.h"

/* Decimal integers, as Python's int.__repr__. */
void sx_buf_i64(struct sx_buf *b, int64_t v);
void sx_buf_u64(struct sx_buf *b, uint64_t v);
/*
 * A finite double as Python's float.__repr__ (shortest round trip: "1.0",
 * "1e-05", "1e+16", "-0.0"). Non-finite values are the caller's business.
 */
void sx_buf_double(struct sx_buf *b, double v);
/*
 * 'n' bytes of UTF-8 as a JSON string with json.dumps(ensure_ascii=True)
 * escaping, quotes included. Invalid UTF-8 is decoded as Python's
 * bytes.decode(errors="replace") does (U+FFFD per maximal invalid subpart).
 */
void sx_buf_str(struct sx_buf *b, const char *s, size_t n);
void sx_buf_cstr(struct sx_buf *b, const char *s); /* NUL-terminated */

/* Bytes written by sx_buf_i64 etc. into 'out' (at least 24 bytes); returns length. */
size_t sx_fmt_i64(char *out, int64_t v);
size_t sx_fmt_u64(char *out, uint64_t v);
size_t sx_fmt_double(char *out, double v); /* room for 32 bytes: it stores whole words */
/* The 16 digits of 'r' < 10^16, zero-padded, in 'out[0..16)' (no NUL): sx_fmt_double's
 * digit step, for its test. */
void sx_fmt_digits16(char *out, uint64_t r);
/*
 * 'n' integers separated by ", " (and one before the first unless 'first'),
 * as the one-line document writes event columns. 'out' has room for 24
 * bytes per value. Returns the end of the text.
 */
char *sx_fmt_i64_list(char *out, const int64_t *v, size_t n, bool first);

/*
 * A copy of 'n' bytes of possibly invalid UTF-8 with every invalid
 * sequence replaced as bytes.decode(errors="replace") does. New string.
 */
char *sx_utf8_sanitize(const char *s, size_t n);

#endif /* SX_JSON_WRITE_H */
