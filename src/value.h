/* value.h - forwards to json_value.h, for the files that still include it by this name */
#ifndef SX_VALUE_H
#define SX_VALUE_H

#include "json_value.h"

#endif /* SX_VALUE_H */
