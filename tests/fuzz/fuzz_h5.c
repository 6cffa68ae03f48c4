/* fuzz_h5.c - libFuzzer harness: the HDF5 run reader (full and summary loads) */
#include "fuzz_common.h"
#include "h5_read.h"

/*
 * sx_h5_load opens with MPI_COMM_NULL (the POSIX driver) and makes no MPI
 * call, so there is no MPI_Init here.
 */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fz_init_paths("h5", ".h5");
    return 0;
}

static void load(bool summary, uint64_t h) {
    struct sx_run *run = NULL;
    struct sx_error err;
    char why[64];

    sx_error_clear(&err);
    const enum sx_status st = sx_h5_load(fz_in, summary, &run, &err);
    /* Every HDF5 id is closed on every path, failed ones included. */
    if (sx_h5_open_ids() != 0) {
        snprintf(why, sizeof why, "%ld ids open after sx_h5_load (status %d)",
                 sx_h5_open_ids(), (int)st);
        fz_fail("HDF5 id leak", why);
    }
    if (st == SX_OK && getenv("SX_FUZZ_NO_RELOAD") == NULL)
        fz_write_and_reload(run, h);
    sx_run_free(run);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint64_t h = fz_hash(data, size);

    fz_write_file(fz_in, data, size);
    load(false, h);
    load(true, h >> 8);
    return 0;
}
