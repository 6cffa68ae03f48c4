/* json_parse.h - JSON text through jansson: parse (integers beyond 64 bits kept),
 * re-print as json.dumps does */
#ifndef SX_JSON_PARSE_H
#define SX_JSON_PARSE_H

#include "buf.h"

/*
 * Parse 'n' bytes of stored event-metadata JSON text (a list of objects) and
 * write it canonically (json.dumps) into 'out'. 'any' tells whether some
 * object is non-empty; '*count' the list length.
 */
enum sx_status sx_json_canon_meta(const char *text, size_t n, struct sx_buf *out,
                                  bool *any, uint64_t *count, struct sx_error *err);
/*
 * Parse a JSON list of strings (a row's stored tags). New array in '*tags'.
 * 'where' names the stored text in errors (its file, dataset and row).
 */
enum sx_status sx_json_parse_tags(const char *text, size_t n, const char *where,
                                  char ***tags, size_t *ntags, struct sx_error *err);

#endif /* SX_JSON_PARSE_H */
