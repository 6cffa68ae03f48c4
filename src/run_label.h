/* run_label.h - run labels and the output names made of them */
#ifndef SX_RUN_LABEL_H
#define SX_RUN_LABEL_H

#include "cli_support.h"

/* sx_run_label() and sx_output_path() are the command's (cli_support.h). */

/* Python's _filename_slug(label) (Unicode \w). New string, NULL when out of memory. */
char *sx_slug(const char *label);

#endif /* SX_RUN_LABEL_H */
