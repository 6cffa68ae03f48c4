/* args.h - export options by name */
#ifndef SX_ARGS_H
#define SX_ARGS_H

#include "internal.h"

/* 'o' filled from 'a' (NULL: the defaults); 'o' borrows the strings and ranks of 'a'. */
void sx_args_options(const struct sx_args *a, struct sx_options *o);

#endif /* SX_ARGS_H */
