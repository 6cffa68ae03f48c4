/* regex.h - region name filters, as Python's re.match; file-name slugs */
#ifndef SX_REGEX_H
#define SX_REGEX_H

#include "internal.h"

#include <stdint.h>

struct sx_filter;
enum sx_status sx_filter_new(const struct sx_options *opts, struct sx_filter **f,
                             struct sx_error *err);
void sx_filter_free(struct sx_filter *f);
bool sx_filter_name(const struct sx_filter *f, const char *name);
bool sx_filter_rank(const struct sx_filter *f, int64_t rank);
/* Python's _filename_slug(label) (Unicode \w). New string, NULL when out of memory. */
char *sx_slug(const char *label);

#endif /* SX_REGEX_H */
