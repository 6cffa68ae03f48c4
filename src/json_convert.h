/* json_convert.h - jansson's values as C values, and JSON text as an sx_value tree */
#ifndef SX_JSON_CONVERT_H
#define SX_JSON_CONVERT_H

#include "json_value.h"

#include <jansson.h>

/* Parse 'n' bytes of JSON text into a new value tree in '*out'. */
enum sx_status sx_json_to_value(const char *text, size_t n, struct sx_value *out,
                                struct sx_error *err);

/* 'v' as a new value tree in '*out'; 'path' names the document in errors (may be NULL).
 */
enum sx_status sx_json_value_of(const json_t *v, struct sx_value *out, const char *path,
                                struct sx_error *err);

/* Python's int(v) for the values a document can hold there: integers, booleans,
 * finite floats in range, decimal strings; false for anything else. */
bool sx_json_py_int(const json_t *v, int64_t *out);

/* A number, or null as NaN; false for anything else. */
bool sx_json_num_or_null(const json_t *x, double *d);

/* Decimal digits (no sign) 'd[0..n)' as uint64; false when they do not fit. */
bool sx_json_parse_u64(const char *d, size_t n, uint64_t *out);

/* The double whose integral value has exactly the decimal digits 'd[0..n)' (an optional
 * '-' first), as "%.0f" prints it back; false when there is none. */
bool sx_json_exact_double(const char *d, size_t n, double *out);

#endif /* SX_JSON_CONVERT_H */
