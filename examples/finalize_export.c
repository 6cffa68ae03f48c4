/* finalize_export.c - example: a profiler's finalize writes a run, then exports it */
/*
 * What a profiler does at MPI shutdown, in the order scope-profiler's
 * parallel HDF5 writer does it (spec section 5.1):
 *
 *   1. every rank shares the shape of what it recorded (calls per region);
 *   2. all ranks collectively create every dataset with its final size;
 *   3. rank 0 writes the region table and the rank-region index; every rank
 *      writes its own slice of the event columns with collective I/O;
 *   4. the file is closed and sx_export() turns it into JSON, collectively
 *      over the same communicator.
 *
 * Usage: mpirun -n 4 example_finalize_export [OUTPUT_DIR]
 * writes OUTPUT_DIR/run.h5 and OUTPUT_DIR/run.json.gz (default: a new
 * directory under $TMPDIR or /tmp). Only public HDF5, MPI and scope-export
 * calls are used. Errors in the HDF5 part abort the job, which is fine for
 * an example; the export itself reports errors and never aborts.
 */
#include <scope_export.h>

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The regions this program knows, in the order a rank enters them first. */
enum { MAIN, SETUP, SOLVE, HALO, CHECKPOINT, NREGIONS };
static const struct {
    const char *name, *file, *text, *tags; /* tags: JSON text of a list of str */
    int64_t line;
} regions[NREGIONS] = {
    {"main", "app.c", "", "[]", 10},
    {"setup", "app.c", "setup(&grid);", "[]", 14},
    {"solve", "solver.c", "", "[\"compute\"]", 42},
    {"halo_exchange", "comm.c", "", "[\"mpi\", \"comm\"]", 7},
    {"write_checkpoint", "io.c", "", "[\"io\"]", 88},
};

/* One completed call of a region, as a profiler records it. */
struct call {
    int region;
    int64_t start, end; /* ns */
    int64_t id, parent; /* parent: id of the enclosing call, -1 for none */
};

#define MAX_CALLS 64

/* Record one call of 'region'; call ids count up from 0 on every rank. */
static int64_t add(struct call *c, int *n, int region, int64_t start, int64_t end,
                   int64_t parent) {
    c[*n] = (struct call){region, start, end, *n, parent};
    return (*n)++;
}

/* A made-up timeline: each rank solves a few steps; odd ranks exchange halos. */
static int record(int rank, struct call *c) {
    int n = 0;
    int64_t t = 1000000000 + 1000 * (int64_t)rank;
    int64_t main_id = add(c, &n, MAIN, t, 0, -1); /* its end is known last */
    add(c, &n, SETUP, t + 10, t + 200 + 3 * rank, main_id);
    t += 300;
    for (int step = 0; step < 2 + rank % 3; step++, t += 1000) {
        int64_t solve = add(c, &n, SOLVE, t, t + 800 + 10 * step, main_id);
        if (rank % 2 == 1)
            add(c, &n, HALO, t + 100, t + 150 + rank, solve);
    }
    if (rank == 0)
        add(c, &n, CHECKPOINT, t, t + 5000, main_id);
    c[main_id].end = t + 6000;
    return n;
}

/* Abort on an HDF5 failure: a collective write cannot be resumed. */
#define TRY(expr)                                                                        \
    do {                                                                                 \
        if ((expr) < 0) {                                                                \
            fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #expr);            \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                \
        }                                                                                \
    } while (0)

/*
 * NOTE: collective. Create 'group/name' (n elements of 'ftype') and write
 * 'count' elements of 'buf' at 'offset'; a rank with count 0 takes part
 * without data.
 */
static void write_column(hid_t file, const char *path, hid_t ftype, hid_t mtype,
                         hsize_t n, hsize_t offset, hsize_t count, const void *buf) {
    hid_t space = H5Screate_simple(1, &n, NULL), mem = H5Screate_simple(1, &count, NULL);
    hid_t dset =
        H5Dcreate2(file, path, ftype, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t xfer = H5Pcreate(H5P_DATASET_XFER);
    TRY(space);
    TRY(mem);
    TRY(dset);
    TRY(H5Pset_dxpl_mpio(xfer, H5FD_MPIO_COLLECTIVE));
    if (count > 0) {
        TRY(H5Sselect_hyperslab(space, H5S_SELECT_SET, &offset, NULL, &count, NULL));
    } else {
        TRY(H5Sselect_none(space));
        TRY(H5Sselect_none(mem));
    }
    TRY(H5Dwrite(dset, mtype, mem, space, xfer, buf));
    H5Pclose(xfer);
    H5Dclose(dset);
    H5Sclose(mem);
    H5Sclose(space);
}

/* NOTE: collective. Fixed-length NULLPAD UTF-8 strings as wide as the longest (min 1). */
static void write_strings(hid_t file, const char *path, const char *const *s, hsize_t n,
                          int writer) {
    size_t width = 1;
    for (hsize_t i = 0; i < n; i++)
        width = strlen(s[i]) > width ? strlen(s[i]) : width;
    char *buf = calloc(n ? n : 1, width);
    for (hsize_t i = 0; i < n; i++)
        memcpy(buf + i * width, s[i], strlen(s[i]));
    hid_t t = H5Tcopy(H5T_C_S1);
    TRY(H5Tset_size(t, width));
    TRY(H5Tset_strpad(t, H5T_STR_NULLPAD));
    TRY(H5Tset_cset(t, H5T_CSET_UTF8));
    write_column(file, path, t, t, n, 0, writer ? n : 0, buf);
    H5Tclose(t);
    free(buf);
}

/* NOTE: collective. A scalar attribute on 'obj'; every rank passes the same value. */
static void write_attr(hid_t obj, const char *name, hid_t type, const void *value) {
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    TRY(a);
    TRY(H5Awrite(a, type, value));
    H5Aclose(a);
    H5Sclose(space);
}

/* NOTE: collective over 'comm'. Write the calls of every rank as one schema-3 run. */
static void write_run(MPI_Comm comm, const char *path, const struct call *c, int ncalls) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    /* 1. The shape: calls and exclusive ns per region, from every rank. */
    int64_t child[MAX_CALLS] = {0}; /* time spent in direct children, per call */
    for (int i = 0; i < ncalls; i++)
        if (c[i].parent >= 0)
            child[c[i].parent] += c[i].end - c[i].start;
    int64_t mine[2][NREGIONS] = {{0}}; /* [0]: calls, [1]: exclusive ns */
    for (int i = 0; i < ncalls; i++) {
        mine[0][c[i].region]++;
        mine[1][c[i].region] += c[i].end - c[i].start - child[c[i].id];
    }
    int64_t(*shape)[2][NREGIONS] = malloc(sizeof mine * (size_t)size);
    MPI_Allgather(mine, 2 * NREGIONS, MPI_INT64_T, shape, 2 * NREGIONS, MPI_INT64_T,
                  comm);

    /* Region ids in first-seen order; one index row per (rank, region) with calls. */
    int id_of[NREGIONS], nnames = 0;
    const char *names[NREGIONS];
    for (int r = 0; r < NREGIONS; r++)
        id_of[r] = -1;
    size_t cap = (size_t)size * NREGIONS;
    uint32_t *ids = malloc(cap * sizeof *ids), *ranks = malloc(cap * sizeof *ranks);
    uint64_t *offsets = malloc(cap * sizeof *offsets),
             *ncall = malloc(cap * sizeof *ncall);
    int64_t *lines = malloc(cap * sizeof *lines), *excl = malloc(cap * sizeof *excl);
    const char **files = malloc(cap * sizeof *files),
               **texts = malloc(cap * sizeof *texts);
    const char **tags = malloc(cap * sizeof *tags);
    hsize_t nrows = 0, nevents = 0, my_first = 0;
    for (int p = 0; p < size; p++) {
        if (p == rank)
            my_first = nevents;
        for (int r = 0; r < NREGIONS; r++) {
            int64_t k = shape[p][0][r];
            if (k == 0)
                continue;
            if (id_of[r] < 0) {
                id_of[r] = nnames;
                names[nnames++] = regions[r].name;
            }
            ids[nrows] = (uint32_t)id_of[r];
            ranks[nrows] = (uint32_t)p;
            offsets[nrows] = nevents;
            ncall[nrows] = (uint64_t)k;
            lines[nrows] = regions[r].line;
            excl[nrows] = shape[p][1][r];
            files[nrows] = regions[r].file;
            texts[nrows] = regions[r].text;
            tags[nrows] = regions[r].tags;
            nrows++;
            nevents += (hsize_t)k;
        }
    }

    /* 2. This rank's events, row by row: deltas from the previous start, durations. */
    int64_t *deltas = malloc(sizeof(int64_t) * (size_t)(ncalls + 1));
    int64_t *durs = malloc(sizeof(int64_t) * (size_t)(ncalls + 1));
    int64_t *cids = malloc(sizeof(int64_t) * (size_t)(ncalls + 1));
    int64_t *pids = malloc(sizeof(int64_t) * (size_t)(ncalls + 1));
    hsize_t e = 0;
    for (int r = 0; r < NREGIONS; r++) {
        int64_t prev = 0;
        for (int i = 0; i < ncalls; i++) {
            if (c[i].region != r)
                continue;
            deltas[e] = c[i].start - prev; /* the row's first value is absolute */
            prev = c[i].start;
            durs[e] = c[i].end - c[i].start;
            cids[e] = c[i].id;
            pids[e] = c[i].parent;
            e++;
        }
    }
    /* 3. The file: every dataset created by all ranks with its final size. */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    TRY(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL));
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    TRY(file);
    H5Pclose(fapl);
    int64_t schema = 3, mpi_size = size;
    hid_t vstr = H5Tcopy(H5T_C_S1);
    TRY(H5Tset_size(vstr, H5T_VARIABLE));
    TRY(H5Tset_cset(vstr, H5T_CSET_UTF8));
    const char *layout = "columnar", *label = "finalize example";
    /* HDF5 wants metadata changes from every rank: all pass rank 0's values. */
    write_attr(file, "scope_profiler_schema", H5T_STD_I64LE, &schema);
    write_attr(file, "storage_layout", vstr, &layout);
    const char *groups[] = {"metadata", "region_table", "rank_region_index", "events"};
    for (int g = 0; g < 4; g++) {
        hid_t gid = H5Gcreate2(file, groups[g], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        TRY(gid);
        if (g == 0) {
            write_attr(gid, "mpi_size", H5T_STD_I64LE, &mpi_size);
            write_attr(gid, "label", vstr, &label);
        }
        H5Gclose(gid);
    }
    H5Tclose(vstr);

    /* Rank 0 alone supplies the index; the others join each write with no data. */
    int w = rank == 0;
    hsize_t nr = w ? nrows : 0;
    write_strings(file, "region_table/names", names, (hsize_t)nnames, w);
    write_column(file, "rank_region_index/region_ids", H5T_STD_U32LE, H5T_NATIVE_UINT32,
                 nrows, 0, nr, ids);
    write_column(file, "rank_region_index/ranks", H5T_STD_U32LE, H5T_NATIVE_UINT32, nrows,
                 0, nr, ranks);
    write_column(file, "rank_region_index/event_offsets", H5T_STD_U64LE,
                 H5T_NATIVE_UINT64, nrows, 0, nr, offsets);
    write_column(file, "rank_region_index/event_counts", H5T_STD_U64LE, H5T_NATIVE_UINT64,
                 nrows, 0, nr, ncall);
    write_column(file, "rank_region_index/source_lines", H5T_STD_I64LE, H5T_NATIVE_INT64,
                 nrows, 0, nr, lines);
    write_column(file, "rank_region_index/exclusive_totals", H5T_STD_I64LE,
                 H5T_NATIVE_INT64, nrows, 0, nr, excl);
    write_strings(file, "rank_region_index/source_files", files, nrows, w);
    write_strings(file, "rank_region_index/source_texts", texts, nrows, w);
    write_strings(file, "rank_region_index/tags", tags, nrows, w);

    /* Every rank writes its own contiguous slice of each event column. */
    hsize_t n = (hsize_t)ncalls;
    write_column(file, "events/start_deltas", H5T_STD_I64LE, H5T_NATIVE_INT64, nevents,
                 my_first, n, deltas);
    write_column(file, "events/durations", H5T_STD_I64LE, H5T_NATIVE_INT64, nevents,
                 my_first, n, durs);
    write_column(file, "events/call_ids", H5T_STD_I64LE, H5T_NATIVE_INT64, nevents,
                 my_first, n, cids);
    write_column(file, "events/parent_ids", H5T_STD_I64LE, H5T_NATIVE_INT64, nevents,
                 my_first, n, pids);
    TRY(H5Fclose(file)); /* NOTE: collective; the export must see a closed file */

    void *bufs[] = {shape, ids,   ranks, offsets, ncall, lines, excl,
                    files, texts, tags,  deltas,  durs,  cids,  pids};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int world_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);

    /* A profiler works on its own communicator, never on MPI_COMM_WORLD itself. */
    MPI_Comm prof;
    MPI_Comm_split(MPI_COMM_WORLD, 0, world_rank, &prof);
    int rank;
    MPI_Comm_rank(prof, &rank);

    /* The output directory: the argument, or a new temporary one (rank 0 names it). */
    char dir[4096] = "";
    if (rank == 0) {
        if (argc > 1) {
            snprintf(dir, sizeof dir, "%s", argv[1]);
            if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
                perror(dir);
                dir[0] = '\0';
            }
        } else {
            const char *tmp = getenv("TMPDIR");
            snprintf(dir, sizeof dir, "%s/finalize_export.XXXXXX", tmp ? tmp : "/tmp");
            if (mkdtemp(dir) == NULL) {
                perror(dir);
                dir[0] = '\0';
            }
        }
    }
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, prof);
    if (dir[0] == '\0') {
        MPI_Comm_free(&prof);
        MPI_Finalize();
        return 1;
    }

    struct call calls[MAX_CALLS];
    int ncalls = record(rank, calls);

    char h5[4200], json[4200];
    snprintf(h5, sizeof h5, "%s/run.h5", dir);
    snprintf(json, sizeof json, "%s/run.json.gz", dir);
    write_run(prof, h5, calls, ncalls);

    /* NOTE: collective. Every rank gets the same status and error. */
    struct sx_options opts;
    struct sx_error err;
    sx_options_init(&opts);
    opts.gzip_level = 6;
    enum sx_status st = sx_export(prof, h5, json, &opts, &err);
    if (rank == 0) {
        if (st == SX_OK)
            printf("exported %s to %s\n", h5, json);
        else
            fprintf(stderr, "export failed: %s (%s, rank %d, %s)\n", err.text,
                    sx_strerror(st), err.rank, err.source);
    }

    MPI_Comm_free(&prof);
    MPI_Finalize();
    return st == SX_OK ? 0 : 1;
}
