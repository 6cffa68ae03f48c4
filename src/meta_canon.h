/* meta_canon.h - event metadata already in json.dumps form, copied after one scan */
#ifndef SX_META_CANON_H
#define SX_META_CANON_H

#include "buf.h"

/*
 * When 'text' ('n' bytes, not NUL-terminated) is a JSON list of objects
 * written exactly as sx_json_canon_meta would write it, append it to 'out',
 * set '*any' (some item is a non-empty object) and '*count' (the list's
 * length), each when not NULL, and return true. Otherwise return false and
 * touch nothing: the caller takes the jansson path, which decides.
 *
 * Accepted is a strict subset of the canonical form, the one Python's
 * json.dumps writes for scope-profiler's metadata: separators ", " and ": "
 * and no other whitespace; strings of printable ASCII and the escapes \" \\
 * \n \r \t \b \f; integers without a sign on 0 and of at most 64 digits;
 * true, false, null; objects without a repeated key and of at most 16 keys;
 * at most 64 levels of nesting. Floats, \u escapes, other bytes and all
 * else go the slow way. A check of the output buffer's 'failed' flag is the
 * caller's business, as after any sx_buf append.
 */
bool sx_meta_canon_fast(const char *text, size_t n, struct sx_buf *out, bool *any,
                        uint64_t *count);

/*
 * Tests only: false makes sx_meta_canon_fast refuse everything, so that
 * sx_json_canon_meta gives the jansson path's answer to compare with. On by
 * default; not thread-safe.
 */
void sx_meta_canon_fast_enable(bool on);

#endif /* SX_META_CANON_H */
