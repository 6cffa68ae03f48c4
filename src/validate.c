/* validate.c - check a JSON profile or HDF5 run; import JSON into HDF5 */
#include "h5_read.h"
#include "h5_write.h"
#include "json_load.h"
#include "run.h"

#include <stdio.h>
#include <string.h>

static const unsigned char hdf5_magic[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

/* Whether 'path' starts with the HDF5 signature (a missing file is not HDF5). */
static bool is_hdf5(const char *path) {
    unsigned char head[8] = {0};
    FILE *f = fopen(path, "rb");
    bool yes = false;

    if (f == NULL)
        return false;
    yes = fread(head, 1, sizeof head, f) == sizeof head &&
          memcmp(head, hdf5_magic, sizeof head) == 0;
    fclose(f);
    return yes;
}

enum sx_status sx_validate(const char *path, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_run *run = NULL;

    sx_error_clear(err);
    SX_CHECK(path != NULL, SX_ERR_USAGE, err, "", "no input file given");
    if (is_hdf5(path))
        st = sx_h5_load(path, false, &run, err);
    else
        st = sx_json_load(path, &run, err);
out:
    sx_run_free(run);
    return st;
}

enum sx_status sx_import(const char *input, const char *output, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_run *run = NULL;

    sx_error_clear(err);
    SX_CHECK(input != NULL && output != NULL, SX_ERR_USAGE, err, "",
             "import needs an input and an output file");
    st = sx_json_load(input, &run, err);
    if (st != SX_OK)
        goto out;
    st = sx_h5_write(run, output, err);
out:
    sx_run_free(run);
    return st;
}
