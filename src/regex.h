/* regex.h - forwards to filter.h, for the files that still include it by this name */
#ifndef SX_REGEX_H
#define SX_REGEX_H

#include "filter.h"

#endif /* SX_REGEX_H */
