/* validate.c - check a JSON profile (read in one pass) or an HDF5 run by reading it whole
 */
#include "h5_read.h"
#include "json_load.h"
#include "run.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

enum sx_status sx_validate(const char *path, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_run *run = NULL;

    sx_error_clear(err);
    SX_CHECK(path != NULL, SX_ERR_USAGE, err, "", "no input file given");
    /* a FIFO would block the first open, a device (/dev/zero) never end */
    struct stat sb;
    SX_CHECK(stat(path, &sb) != 0 || S_ISREG(sb.st_mode), SX_ERR_OPEN, err, path,
             "%s is not a regular file", path);
    if (sx_is_hdf5(path))
        st = sx_h5_load(path, false, &run, err);
    else
        st = sx_json_load_ex(path, SX_JSON_KEEP_NONE, NULL, NULL, &run, NULL, err);
out:
    sx_run_free(run);
    return st;
}
