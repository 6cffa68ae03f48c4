/* same_run.c - test helper: does a JSON profile hold the run of an HDF5 file?
 *
 *   same_run [--summary] PROFILE.json[.gz] RUN.h5
 *                  exit 0 when they are the same run, 1 (and the first difference) when
 *                  not, 2 on a read error; --summary: the run's summary-only read
 *
 * The run is read in full by the non-streaming reader (sx_h5_load), the document by the
 * JSON loader: a check of an export that shares no code with the export's reading.
 */
#include "h5_read.h"
#include "json_load.h"
#include "run.h"
#include "run_compare.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    struct sx_run *doc = NULL, *run = NULL;
    struct sx_error e;
    char why[512] = "";
    int rc = 2;
    const bool summary = argc == 4 && strcmp(argv[1], "--summary") == 0;
    if (argc != 3 + summary) {
        fprintf(stderr, "usage: same_run [--summary] PROFILE.json RUN.h5\n");
        return 2;
    }
    argv += summary;
    sx_error_clear(&e);
    if (sx_json_load(argv[1], &doc, &e) != SX_OK ||
        sx_h5_load(argv[2], summary, &run, &e) != SX_OK) {
        fprintf(stderr, "same_run: %s\n", e.text);
        goto out;
    }
    rc = sx_run_equal(run, doc, why, sizeof why) ? 0 : 1;
    if (rc != 0)
        fprintf(stderr, "same_run: %s is not the run of %s: %s\n", argv[1], argv[2], why);
out:
    sx_run_free(doc);
    sx_run_free(run);
    return rc;
}
