/* native_finalize.c - example: every rank hands its own profile file to one export */
/*
 * What a C or Fortran profiler's finalize can do after scope-profiler's
 * sp_finalize() has written this process's <prefix>_rank<NNNNN>.h5 (or
 * .spt): every rank passes just its own file, and one document of the whole
 * job comes out, written by rank 0. No rank reads another rank's file's
 * index, and no merged HDF5 file is written on the way.
 *
 * Usage: mpirun -n 4 example_native_finalize PREFIX OUTPUT.json[.gz]
 * reads PREFIX_rank<NNNNN>.h5 for this rank's number in MPI_COMM_WORLD
 * (PREFIX_rank<NNNNN>.spt when there is no .h5). The label is the output's
 * name without .json, .json.gz, ... (profile.json.gz: "profile"). Exit
 * status 0 on success, 1 on failure (rank 0 prints the error).
 */
#include <scope_export.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 3) {
        if (rank == 0)
            fprintf(stderr, "usage: %s PREFIX OUTPUT.json[.gz]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }

    /* the file this process's sp_finalize() left, as sp_init(prefix, rank) names it */
    size_t n = strlen(argv[1]) + 32;
    char *mine = malloc(n);
    if (mine == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    snprintf(mine, n, "%s_rank%05d.h5", argv[1], rank);
    if (access(mine, F_OK) != 0)
        snprintf(mine, n, "%s_rank%05d.spt", argv[1], rank);

    struct sx_options o;
    struct sx_error e;
    sx_options_init(&o);
    const char *inputs[1] = {mine};
    /* collective: every rank of the communicator calls it, each with its own list */
    enum sx_status st =
        sx_export_native(MPI_COMM_WORLD, inputs, 1, argv[2], NULL, &o, &e);
    if (st != SX_OK && rank == 0)
        fprintf(stderr, "error: %s (rank %d)\n", e.text, e.rank);
    else if (rank == 0)
        printf("wrote %s\n", argv[2]);
    free(mine);
    MPI_Finalize();
    return st == SX_OK ? 0 : 1;
}
