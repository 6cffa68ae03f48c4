/* filter.h - region and rank filters: region names as Python's re.match (PCRE2), ranks
 * by list */
#ifndef SX_FILTER_H
#define SX_FILTER_H

#include "internal.h"

#include <stdint.h>

struct sx_filter;
enum sx_status sx_filter_new(const struct sx_options *opts, struct sx_filter **f,
                             struct sx_error *err);
void sx_filter_free(struct sx_filter *f);
bool sx_filter_name(const struct sx_filter *f, const char *name);
bool sx_filter_rank(const struct sx_filter *f, int64_t rank);

#endif /* SX_FILTER_H */
