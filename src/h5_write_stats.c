/* h5_write_stats.c - the HDF5 writer's per-row statistics: accumulated as events come,
 * gathered to rank 0, written as summary_statistics */
#include "h5_write_prim.h"

#include "h5_util.h"
#include "mpi_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* summary_statistics as stored: 88 bytes, packed, little endian. */
struct stat_rec {
    int64_t total, minimum, maximum, first, last, start_minimum, end_maximum;
    uint64_t gpu_count;
    int64_t gpu_total;
    double mean, m2;
};

/* One row's result, sent from the process that wrote it to rank 0 by sx_h5w_finish(). */
struct row_out {
    uint64_t row, n;
    int64_t exclusive;
    struct stat_rec rec;
};

void sx_h5w_acc_add(struct row_acc *a, int64_t start, int64_t dur, bool has_gpu,
                    int64_t gpu) {
    int64_t end = (int64_t)((uint64_t)start + (uint64_t)dur);
    if (a->n == 0) {
        a->minimum = a->maximum = a->first = dur;
        a->start_minimum = start;
        a->end_maximum = end;
    }
    a->n++;
    a->total += (uint64_t)dur;
    a->minimum = dur < a->minimum ? dur : a->minimum;
    a->maximum = dur > a->maximum ? dur : a->maximum;
    a->last = dur;
    a->start_minimum = start < a->start_minimum ? start : a->start_minimum;
    a->end_maximum = end > a->end_maximum ? end : a->end_maximum;
    if (has_gpu && gpu >= 0) {
        a->gpu_count++;
        a->gpu_total += (uint64_t)gpu;
    }
    double d = (double)dur - a->mean;
    a->mean += d / (double)a->n;
    a->m2 += d * ((double)dur - a->mean);
}

static double sq_dev(const int64_t *s, const int64_t *e, size_t i, double mean) {
    double x = (double)(int64_t)((uint64_t)e[i] - (uint64_t)s[i]) - mean;
    return x * x;
}

/*
 * sum((d - mean) ** 2) over the durations e - s, added in numpy's pairwise
 * order (8 running sums per block of up to 128, halves split at a multiple
 * of 8), so m2 is bit-identical to what scope-profiler stores.
 */
double sx_h5w_pairwise_m2(const int64_t *s, const int64_t *e, size_t n, double mean) {
    if (n < 8) {
        double r = 0.0;
        for (size_t i = 0; i < n; i++)
            r += sq_dev(s, e, i, mean);
        return r;
    }
    if (n <= 128) {
        double r[8];
        size_t i;
        for (int k = 0; k < 8; k++)
            r[k] = sq_dev(s, e, (size_t)k, mean);
        for (i = 8; i < n - n % 8; i += 8)
            for (int k = 0; k < 8; k++)
                r[k] += sq_dev(s, e, i + (size_t)k, mean);
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += sq_dev(s, e, i, mean);
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return sx_h5w_pairwise_m2(s, e, n2, mean) +
           sx_h5w_pairwise_m2(s + n2, e + n2, n - n2, mean);
}

/* The local part of sx_h5w_events(): checks and scratch space. */
static hid_t stat_type(bool file) {
    static const char *const names[] = {
        "total",       "minimum",   "maximum",   "first", "last", "start_minimum",
        "end_maximum", "gpu_count", "gpu_total", "mean",  "m2"};
    hid_t t = H5Tcreate(H5T_COMPOUND, file ? 88 : sizeof(struct stat_rec));
    if (t < 0)
        return t;
    for (size_t i = 0; i < 11; i++) {
        hid_t ft = i == 7 ? H5T_STD_U64LE : i >= 9 ? H5T_IEEE_F64LE : H5T_STD_I64LE;
        hid_t mt = i == 7   ? H5T_NATIVE_UINT64
                   : i >= 9 ? H5T_NATIVE_DOUBLE
                            : H5T_NATIVE_INT64;
        if (H5Tinsert(t, names[i], i * 8, file ? ft : mt) < 0) {
            H5Tclose(t);
            return H5I_INVALID_HID;
        }
    }
    return t;
}

static struct stat_rec make_rec(const struct row_acc *a) {
    return (struct stat_rec){
        .total = (int64_t)a->total,
        .minimum = a->minimum,
        .maximum = a->maximum,
        .first = a->first,
        .last = a->last,
        .start_minimum = a->start_minimum,
        .end_maximum = a->end_maximum,
        .gpu_count = a->gpu_count,
        .gpu_total = (int64_t)a->gpu_total,
        .mean = a->n ? (double)(int64_t)a->total / (double)a->n : 0.0,
        .m2 = a->exact ? a->m2_exact : a->m2,
    };
}

/*
 * NOTE: collective. Rank 0 receives the statistics, event count and exclusive
 * total of every row from the process that wrote it, into 'rec', 'got' and
 * w->exclusive; a row claimed by two processes is an error. Memory is taken
 * and agreed on before each collective; a failed process sends nothing.
 */
static enum sx_status gather_rows(struct sx_h5w *w, struct stat_rec *rec, uint64_t *got,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct row_out *mine = NULL, *all = NULL;
    int *counts = NULL, *displs = NULL, size = 1, nmine = 0, total = 0;
    bool *seen = NULL;
    MPI_Datatype t_row = MPI_DATATYPE_NULL;
    const char *obj = "/rank_region_index";

    if ((st = sx_mpi_check(MPI_Comm_size(w->comm, &size), "MPI_Comm_size", err)) != SX_OK)
        goto out;
    for (size_t r = 0; r < w->nrows; r++)
        nmine += w->mine[r];
    mine = sx_calloc((size_t)nmine, sizeof *mine);
    if (w->rank == 0) {
        counts = sx_calloc((size_t)size, sizeof *counts);
        displs = sx_calloc((size_t)size, sizeof *displs);
        seen = sx_calloc(w->nrows, sizeof *seen);
    }
    if (mine == NULL || (w->rank == 0 && !(counts && displs && seen)))
        st = sx_error_set(err, SX_ERR_NOMEM, sx_h5w_src(w, obj), "out of memory");
    if ((st = sx_all_ok(w->comm, st, err)) != SX_OK)
        goto out;
    for (size_t r = 0, k = 0; r < w->nrows; r++)
        if (w->mine[r])
            mine[k++] = (struct row_out){.row = r,
                                         .n = w->acc[r].n,
                                         .exclusive = w->exclusive[r],
                                         .rec = make_rec(&w->acc[r])};
    st = sx_mpi_check(MPI_Gather(&nmine, 1, MPI_INT, counts, 1, MPI_INT, 0, w->comm),
                      "MPI_Gather", err);
    if (w->rank == 0 && st == SX_OK) {
        /* Each process claims distinct rows, so the sum is at most nrows <= INT_MAX. */
        for (int i = 0; i < size && st == SX_OK; i++) {
            displs[i] = total;
            if (counts[i] > (int)w->nrows - total)
                st = sx_error_set(err, SX_ERR_USAGE, sx_h5w_src(w, obj),
                                  "processes claim more rows than the index holds");
            else
                total += counts[i];
        }
        if (st == SX_OK && (all = sx_calloc((size_t)total, sizeof *all)) == NULL)
            st = sx_error_set(err, SX_ERR_NOMEM, sx_h5w_src(w, obj), "out of memory");
    }
    if ((st = sx_all_ok(w->comm, st, err)) != SX_OK)
        goto out;
    st = sx_mpi_check(MPI_Type_contiguous((int)sizeof(struct row_out), MPI_BYTE, &t_row),
                      "MPI_Type_contiguous", err);
    if (st == SX_OK)
        st = sx_mpi_check(MPI_Type_commit(&t_row), "MPI_Type_commit", err);
    if ((st = sx_all_ok(w->comm, st, err)) != SX_OK)
        goto out;
    st = sx_mpi_check(
        MPI_Gatherv(mine, nmine, t_row, all, counts, displs, t_row, 0, w->comm),
        "MPI_Gatherv", err);
    if (st != SX_OK)
        goto out;
    for (int i = 0; i < total; i++) {
        size_t r = (size_t)all[i].row;
        SX_CHECK(r < w->nrows && !seen[r], SX_ERR_USAGE, err, sx_h5w_src(w, "/events"),
                 "row %zu written by two processes", r);
        seen[r] = true;
        got[r] = all[i].n;
        rec[r] = all[i].rec;
        w->exclusive[r] = all[i].exclusive;
    }
out:
    if (t_row != MPI_DATATYPE_NULL)
        MPI_Type_free(&t_row);
    free(seen);
    free(all);
    free(displs);
    free(counts);
    free(mine);
    return st;
}

/* exclusive_totals and summary_statistics, known only once every event is in. */
enum sx_status sx_h5w_write_stats(struct sx_h5w *w, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = H5I_INVALID_HID, ft = H5I_INVALID_HID, mt = H5I_INVALID_HID;
    struct stat_rec *rec = NULL;
    uint64_t *got = NULL;
    size_t n = w->spec.aggregate ? 0 : w->nrows;
    const char *obj = "/rank_region_index";

    _Static_assert(sizeof(struct stat_rec) == 88, "summary_statistics record is packed");
    rec = sx_calloc(n ? n : 1, sizeof *rec);
    got = sx_calloc(n ? n : 1, sizeof *got);
    if (rec == NULL || got == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, sx_h5w_src(w, obj), "out of memory");
    if ((st = sx_h5w_agree(w, st, err)) != SX_OK)
        goto out;
    if (w->collective) {
        st = gather_rows(w, rec, got, err);
    } else {
        for (size_t r = 0; r < n; r++) {
            got[r] = w->acc[r].n;
            rec[r] = make_rec(&w->acc[r]);
        }
    }
    for (size_t r = 0; r < n && st == SX_OK && w->rank == 0; r++)
        if (got[r] != w->count[r]) /* no goto: the agreement below is due */
            st =
                sx_error_set(err, SX_ERR_USAGE, sx_h5w_src(w, "/events"),
                             "row %zu: %llu of %llu events written", r,
                             (unsigned long long)got[r], (unsigned long long)w->count[r]);
    if ((st = sx_h5w_agree(w, st, err)) != SX_OK)
        goto out;
    /* NOTE: collective from here in the MPI-IO phase; rank 0 holds the values. */
    g = H5Gopen2(w->file, "rank_region_index", H5P_DEFAULT);
    H5OK(g, obj, "open the group");
    if (!w->spec.aggregate) {
        st = sx_h5w_put_1d(w, g, obj, "exclusive_totals", H5T_STD_I64LE, H5T_NATIVE_INT64,
                           n, w->exclusive, err);
        if (st != SX_OK)
            goto out;
    }
    ft = stat_type(true);
    mt = stat_type(false);
    H5OK(ft, obj, "create the summary type");
    H5OK(mt, obj, "create the summary type");
    st = sx_h5w_put_1d(w, g, obj, "summary_statistics", ft, mt, n, rec, err);
out:
    sx_h5w_close_id(&mt);
    sx_h5w_close_id(&ft);
    sx_h5w_close_id(&g);
    free(got);
    free(rec);
    return sx_h5w_agree(w, st, err);
}

/* After the MPI-IO phase, rank 0 alone: reopen the file serially for the vlen strings. */
