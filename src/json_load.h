/* json_load.h - a JSON profile into the run model */
#ifndef SX_JSON_LOAD_H
#define SX_JSON_LOAD_H

#include "json_value.h"
#include "run.h"

/* Load a JSON profile (.json or .json.gz, or by content) into a run. */
enum sx_status sx_json_load(const char *path, struct sx_run **run, struct sx_error *err);

#endif /* SX_JSON_LOAD_H */
