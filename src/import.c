/* import.c - a JSON profile into a schema-3 HDF5 run */
#include "h5_write.h"
#include "json_load.h"
#include "run.h"

#include <sys/stat.h>

enum sx_status sx_import(const char *input, const char *output, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_run *run = NULL;

    sx_error_clear(err);
    SX_CHECK(input != NULL && output != NULL, SX_ERR_USAGE, err, "",
             "import needs an input and an output file");
    /* As export refuses it: the output would replace the profile being read. */
    struct stat a, b;
    SX_CHECK(!(stat(input, &a) == 0 && stat(output, &b) == 0 && a.st_dev == b.st_dev &&
               a.st_ino == b.st_ino),
             SX_ERR_USAGE, err, output,
             "the output %s is the input file itself; refusing to overwrite the profile",
             output);
    st = sx_json_load(input, &run, err);
    if (st != SX_OK)
        goto out;
    st = sx_h5_write(run, output, err);
out:
    sx_run_free(run);
    return st;
}
