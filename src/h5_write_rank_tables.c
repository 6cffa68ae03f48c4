/* h5_write_rank_tables.c - the HDF5 writer's per-rank tables: thread and task lanes,
 * LIKWID groups, line profiles */
#include "h5_write_prim.h"

#include "h5_util.h"
#include "json_value.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The checks of sx_h5w_threads() ('threads') and sx_h5w_tasks(); the row count. */
static enum sx_status lanes_check(struct sx_h5w *w, const struct sx_lane_rank *lanes,
                                  size_t n, bool threads, size_t *total,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    const char *obj = threads ? "/thread_table" : "/task_table";

    *total = 0;
    SX_CHECK(!w->failed && !(threads ? w->threads_done : w->tasks_done), SX_ERR_USAGE,
             err, sx_h5w_src(w, obj), "%s table written twice or after a failure",
             threads ? "thread" : "task");
    for (size_t i = 0; i < n; i++) {
        SX_CHECK(lanes[i].n == 0 ||
                     (threads ? lanes[i].threads != NULL : lanes[i].tasks != NULL),
                 SX_ERR_USAGE, err, sx_h5w_src(w, obj), "lane list %zu holds no %s", i,
                 threads ? "threads" : "tasks");
        SX_CHECK(lanes[i].rank >= 0 && lanes[i].rank <= (int64_t)UINT32_MAX, SX_ERR_VALUE,
                 err, sx_h5w_src(w, obj), "rank %lld is not a uint32",
                 (long long)lanes[i].rank);
        *total += lanes[i].n;
    }
out:
    return st;
}

enum sx_status sx_h5w_threads(struct sx_h5w *w, const struct sx_lane_rank *lanes,
                              size_t n, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = H5I_INVALID_HID;
    size_t total = 0, k = 0;
    uint32_t *ranks = NULL;
    int8_t *daemon = NULL;
    int64_t *v = NULL;
    const char **names = NULL;
    struct h5_quiet q;
    const char *obj = "/thread_table";
    static const char *const cols[] = {"index",    "ident",  "native_id",
                                       "start_ns", "end_ns", "cpu_ns"};

    sx_h5_quiet_begin(&q);
    st = lanes_check(w, lanes, n, true, &total, err);
    if (st == SX_OK) {
        ranks = sx_calloc(total ? total : 1, sizeof *ranks);
        daemon = sx_calloc(total ? total : 1, sizeof *daemon);
        v = sx_calloc(total ? total : 1, sizeof *v);
        names = sx_calloc(total ? total : 1, sizeof *names);
        if (!(ranks && daemon && v && names))
            st = sx_error_set(err, SX_ERR_NOMEM, sx_h5w_src(w, obj), "out of memory");
    }
    if ((st = sx_h5w_agree(w, st, err)) != SX_OK)
        goto out;
    /* NOTE: collective from here in the MPI-IO phase. */
    g = H5Gcreate2(w->file, "thread_table", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5OK(g, obj, "create the group");
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < lanes[i].n; j++, k++) {
            ranks[k] = (uint32_t)lanes[i].rank;
            daemon[k] = lanes[i].threads[j].daemon ? 1 : 0;
            names[k] = lanes[i].threads[j].name;
        }
    st = sx_h5w_put_1d(w, g, obj, "ranks", H5T_STD_U32LE, H5T_NATIVE_UINT32, total, ranks,
                       err);
    if (st == SX_OK)
        st = sx_h5w_put_1d(w, g, obj, "daemon", H5T_STD_I8LE, H5T_NATIVE_INT8, total,
                           daemon, err);
    if (st == SX_OK)
        st = sx_h5w_put_strs(w, g, obj, "name", names, total, false, err);
    for (size_t c = 0; c < sizeof cols / sizeof cols[0] && st == SX_OK; c++) {
        k = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < lanes[i].n; j++, k++) {
                const struct sx_thread *t = &lanes[i].threads[j];
                const int64_t f[] = {t->index,    t->ident,  t->native_id,
                                     t->start_ns, t->end_ns, t->cpu_ns};
                v[k] = f[c];
            }
        st = sx_h5w_put_1d(w, g, obj, cols[c], H5T_STD_I64LE, H5T_NATIVE_INT64, total, v,
                           err);
    }
out:
    sx_h5w_close_id(&g);
    st = sx_h5w_agree(w, st, err);
    w->threads_done = st == SX_OK;
    free(names);
    free(v);
    free(daemon);
    free(ranks);
    sx_h5_quiet_end(&q);
    if (st != SX_OK)
        w->failed = true;
    return st;
}

enum sx_status sx_h5w_tasks(struct sx_h5w *w, const struct sx_lane_rank *lanes, size_t n,
                            struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = H5I_INVALID_HID;
    size_t total = 0, k = 0;
    uint32_t *ranks = NULL;
    int64_t *v = NULL;
    const char **s = NULL;
    struct h5_quiet q;
    const char *obj = "/task_table";
    static const char *const cols[] = {"index", "thread_index", "created_ns",  "done_ns",
                                       "steps", "running_ns",   "suspended_ns"};
    static const char *const scols[] = {"kind", "name", "coro_name"};

    sx_h5_quiet_begin(&q);
    st = lanes_check(w, lanes, n, false, &total, err);
    if (st == SX_OK) {
        ranks = sx_calloc(total ? total : 1, sizeof *ranks);
        v = sx_calloc(total ? total : 1, sizeof *v);
        s = sx_calloc(total ? total : 1, sizeof *s);
        if (!(ranks && v && s))
            st = sx_error_set(err, SX_ERR_NOMEM, sx_h5w_src(w, obj), "out of memory");
    }
    if ((st = sx_h5w_agree(w, st, err)) != SX_OK)
        goto out;
    /* NOTE: collective from here in the MPI-IO phase. */
    g = H5Gcreate2(w->file, "task_table", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5OK(g, obj, "create the group");
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < lanes[i].n; j++, k++)
            ranks[k] = (uint32_t)lanes[i].rank;
    st = sx_h5w_put_1d(w, g, obj, "ranks", H5T_STD_U32LE, H5T_NATIVE_UINT32, total, ranks,
                       err);
    for (size_t c = 0; c < sizeof cols / sizeof cols[0] && st == SX_OK; c++) {
        k = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < lanes[i].n; j++, k++) {
                const struct sx_task *t = &lanes[i].tasks[j];
                const int64_t f[] = {t->index,       t->thread_index, t->created_ns,
                                     t->done_ns,     t->steps,        t->running_ns,
                                     t->suspended_ns};
                v[k] = f[c];
            }
        st = sx_h5w_put_1d(w, g, obj, cols[c], H5T_STD_I64LE, H5T_NATIVE_INT64, total, v,
                           err);
    }
    for (size_t c = 0; c < sizeof scols / sizeof scols[0] && st == SX_OK; c++) {
        k = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < lanes[i].n; j++, k++) {
                const struct sx_task *t = &lanes[i].tasks[j];
                s[k] = c == 0 ? t->kind : c == 1 ? t->name : t->coro_name;
            }
        st = sx_h5w_put_strs(w, g, obj, scols[c], s, total, false, err);
    }
out:
    sx_h5w_close_id(&g);
    st = sx_h5w_agree(w, st, err);
    w->tasks_done = st == SX_OK;
    free(s);
    free(v);
    free(ranks);
    sx_h5_quiet_end(&q);
    if (st != SX_OK)
        w->failed = true;
    return st;
}

/* ------------------------------------------------------------------ */
/* Per-rank groups: LIKWID, line profile                              */

/* A LIKWID matrix: 2-D [rows, cols], or h5py's 1-D (0,) placeholder when both are 0. */
static enum sx_status put_matrix(struct sx_h5w *w, hid_t g, const char *obj,
                                 const char *name, const struct sx_matrix *m,
                                 struct sx_error *err) {
    hsize_t dims[2] = {m->rows, m->cols};
    if (m->rows == 0 && m->cols == 0)
        return sx_h5w_put_dset(w, g, obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1,
                               dims, NULL, err);
    return sx_h5w_put_dset(w, g, obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, dims,
                           m->v, err);
}

/* Memory for sx_h5w_likwid(), taken before its collective part. */
struct likwid_buf {
    char *name;        /* a group name: the longest tag */
    const char **strs; /* the longest name list */
};

static enum sx_status likwid_entry(struct sx_h5w *w, hid_t regions, const char *robj,
                                   const struct sx_likwid_entry *e,
                                   const struct likwid_buf *lb, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = H5I_INVALID_HID;
    char *name = lb->name;
    char obj[SX_ERROR_SOURCE_LENGTH];
    const char *tag = e->tag ? e->tag : "";

    strcpy(name, tag);
    for (char *p = name; *p; p++)
        if (*p == '/')
            *p = '|';
    snprintf(obj, sizeof obj, "%s/%s", robj, name);
    SX_CHECK(name[0] != '\0' && strcmp(name, ".") != 0, SX_ERR_VALUE, err,
             sx_h5w_src(w, robj), "LIKWID tag '%s' cannot name an HDF5 group", tag);
    st = sx_h5w_make_group(w, regions, robj, name, &g, err);
    if (st != SX_OK)
        goto out;
    if ((st = sx_h5w_attr_str(w, g, obj, "tag", tag, err)) != SX_OK ||
        (st = sx_h5w_attr_i64(w, g, obj, "group_id", e->group_id, err)) != SX_OK ||
        (st = sx_h5w_attr_str(w, g, obj, "group_name", e->group_name, err)) != SX_OK ||
        (st = sx_h5w_attr_str(w, g, obj, "source", e->source, err)) != SX_OK ||
        (st = sx_h5w_attr_strs(w, g, obj, "event_names", e->event_names, e->nevent_names,
                               lb->strs, err)) != SX_OK ||
        (st = sx_h5w_attr_strs(w, g, obj, "counter_names", e->counter_names,
                               e->ncounter_names, lb->strs, err)) != SX_OK ||
        (st = sx_h5w_attr_strs(w, g, obj, "metric_names", e->metric_names,
                               e->nmetric_names, lb->strs, err)) != SX_OK)
        goto out;
    if ((st = sx_h5w_put_1d(w, g, obj, "cpus", H5T_STD_I64LE, H5T_NATIVE_INT64, e->ncpus,
                            e->cpus, err)) != SX_OK ||
        (st = sx_h5w_put_1d(w, g, obj, "times", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                            e->ntimes, e->times, err)) != SX_OK ||
        (st = sx_h5w_put_1d(w, g, obj, "call_counts", H5T_STD_I64LE, H5T_NATIVE_INT64,
                            e->ncall_counts, e->call_counts, err)) != SX_OK ||
        (st = put_matrix(w, g, obj, "events", &e->events, err)) != SX_OK ||
        (st = put_matrix(w, g, obj, "metrics", &e->metrics, err)) != SX_OK)
        goto out;
out:
    sx_h5w_close_id(&g);
    return st;
}

/* The local part of sx_h5w_likwid(): checks and memory. */
static enum sx_status likwid_prepare(struct sx_h5w *w, const struct sx_likwid_rank *lk,
                                     size_t n, struct likwid_buf *lb,
                                     struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t tag = 0, names = 1;

    SX_CHECK(!w->failed, SX_ERR_USAGE, err, sx_h5w_src(w, NULL),
             "writer used after a failure");
    for (size_t i = 0; i < n; i++) {
        SX_CHECK(lk[i].rank >= 0, SX_ERR_VALUE, err, sx_h5w_src(w, NULL),
                 "LIKWID rank %lld", (long long)lk[i].rank);
        for (size_t j = 0; j < lk[i].n; j++) {
            const struct sx_likwid_entry *e = &lk[i].entries[j];
            size_t len = e->tag ? strlen(e->tag) : 0;
            tag = len > tag ? len : tag;
            names = e->nevent_names > names ? e->nevent_names : names;
            names = e->ncounter_names > names ? e->ncounter_names : names;
            names = e->nmetric_names > names ? e->nmetric_names : names;
        }
    }
    lb->name = sx_malloc(tag + 1);
    lb->strs = sx_calloc(names, sizeof *lb->strs);
    SX_CHECK(lb->name && lb->strs, SX_ERR_NOMEM, err, sx_h5w_src(w, NULL),
             "out of memory");
out:
    return st;
}

enum sx_status sx_h5w_likwid(struct sx_h5w *w, const struct sx_likwid_rank *lk, size_t n,
                             struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t gr = H5I_INVALID_HID, gl = H5I_INVALID_HID, gg = H5I_INVALID_HID;
    char rname[32], obj[96];
    struct likwid_buf lb = {0};
    struct h5_quiet q;

    sx_h5_quiet_begin(&q);
    st = likwid_prepare(w, lk, n, &lb, err);
    if ((st = sx_h5w_agree(w, st, err)) != SX_OK)
        goto out;
    /* NOTE: collective from here in the MPI-IO phase: every process creates every
     * rank's groups; rank 0 writes the (small) values, as it does for the index. */
    for (size_t i = 0; i < n; i++) {
        snprintf(rname, sizeof rname, "rank%lld", (long long)lk[i].rank);
        snprintf(obj, sizeof obj, "/%s", rname);
        if ((st = sx_h5w_open_group(w, w->file, "/", rname, &gr, err)) != SX_OK)
            goto out;
        snprintf(obj, sizeof obj, "/%s/likwid", rname);
        if ((st = sx_h5w_make_group(w, gr, obj, "likwid", &gl, err)) != SX_OK)
            goto out;
        if ((st = sx_h5w_attr_i64(w, gl, obj, "num_regions", (int64_t)lk[i].n, err)) !=
            SX_OK)
            goto out;
        snprintf(obj, sizeof obj, "/%s/likwid/regions", rname);
        if ((st = sx_h5w_make_group(w, gl, obj, "regions", &gg, err)) != SX_OK)
            goto out;
        for (size_t j = 0; j < lk[i].n; j++)
            if ((st = likwid_entry(w, gg, obj, &lk[i].entries[j], &lb, err)) != SX_OK)
                goto out;
        sx_h5w_close_id(&gg);
        sx_h5w_close_id(&gl);
        sx_h5w_close_id(&gr);
    }
out:
    sx_h5w_close_id(&gg);
    sx_h5w_close_id(&gl);
    sx_h5w_close_id(&gr);
    free(lb.strs);
    free(lb.name);
    st = sx_h5w_agree(w, st, err);
    sx_h5_quiet_end(&q);
    if (st != SX_OK)
        w->failed = true;
    return st;
}

static int cmp_decimal(const void *a, const void *b) {
    char x[24], y[24];
    snprintf(x, sizeof x, "%zu", *(const size_t *)a);
    snprintf(y, sizeof y, "%zu", *(const size_t *)b);
    return strcmp(x, y);
}

static enum sx_status lp_record(struct sx_h5w *w, hid_t lp, const char *name,
                                const char *obj, const struct sx_lp_record *r,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = H5I_INVALID_HID;

    if ((st = sx_h5w_make_group(w, lp, obj, name, &g, err)) != SX_OK)
        goto out;
    if ((st = sx_h5w_attr_str(w, g, obj, "region", r->region, err)) != SX_OK ||
        (st = sx_h5w_attr_str(w, g, obj, "filename", r->filename, err)) != SX_OK ||
        (st = sx_h5w_attr_str(w, g, obj, "function", r->function, err)) != SX_OK ||
        (st = sx_h5w_attr_i64(w, g, obj, "first_lineno", r->first_lineno, err)) !=
            SX_OK ||
        (st = sx_h5w_attr_f64(w, g, obj, "unit", r->unit, err)) != SX_OK)
        goto out;
    if ((st = sx_h5w_put_1d(w, g, obj, "line_numbers", H5T_STD_I64LE, H5T_NATIVE_INT64,
                            r->nline_numbers, r->line_numbers, err)) != SX_OK ||
        (st = sx_h5w_put_1d(w, g, obj, "hits", H5T_STD_I64LE, H5T_NATIVE_INT64, r->nhits,
                            r->hits, err)) != SX_OK ||
        (st = sx_h5w_put_1d(w, g, obj, "times", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                            r->ntimes, r->times, err)) != SX_OK)
        goto out;
out:
    sx_h5w_close_id(&g);
    return st;
}

/* The local part of sx_h5w_line_profile(): checks, room for the longest record list. */
static enum sx_status lp_prepare(struct sx_h5w *w, const struct sx_lp_rank *lp, size_t n,
                                 size_t **order, struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t most = 1;

    SX_CHECK(!w->failed, SX_ERR_USAGE, err, sx_h5w_src(w, NULL),
             "writer used after a failure");
    for (size_t i = 0; i < n; i++) {
        SX_CHECK(lp[i].rank >= 0, SX_ERR_VALUE, err, sx_h5w_src(w, NULL),
                 "line-profile rank %lld", (long long)lp[i].rank);
        most = lp[i].n > most ? lp[i].n : most;
    }
    *order = sx_calloc(most, sizeof **order);
    SX_CHECK(*order != NULL, SX_ERR_NOMEM, err, sx_h5w_src(w, NULL), "out of memory");
out:
    return st;
}

enum sx_status sx_h5w_line_profile(struct sx_h5w *w, const struct sx_lp_rank *lp,
                                   size_t n, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t gr = H5I_INVALID_HID, gl = H5I_INVALID_HID;
    size_t *order = NULL;
    char rname[32], name[24], obj[128];
    struct h5_quiet q;

    sx_h5_quiet_begin(&q);
    st = lp_prepare(w, lp, n, &order, err);
    if ((st = sx_h5w_agree(w, st, err)) != SX_OK)
        goto out;
    /* NOTE: collective from here in the MPI-IO phase (see sx_h5w_likwid()). */
    for (size_t i = 0; i < n; i++) {
        snprintf(rname, sizeof rname, "rank%lld", (long long)lp[i].rank);
        if ((st = sx_h5w_open_group(w, w->file, "/", rname, &gr, err)) != SX_OK)
            goto out;
        snprintf(obj, sizeof obj, "/%s/line_profile", rname);
        if ((st = sx_h5w_make_group(w, gr, obj, "line_profile", &gl, err)) != SX_OK)
            goto out;
        /* Record k gets the k-th of "0".."n-1" in byte order: read order = our order. */
        for (size_t k = 0; k < lp[i].n; k++)
            order[k] = k;
        qsort(order, lp[i].n, sizeof *order, cmp_decimal);
        for (size_t k = 0; k < lp[i].n; k++) {
            snprintf(name, sizeof name, "%zu", order[k]);
            snprintf(obj, sizeof obj, "/%s/line_profile/%s", rname, name);
            if ((st = lp_record(w, gl, name, obj, &lp[i].records[k], err)) != SX_OK)
                goto out;
        }
        sx_h5w_close_id(&gl);
        sx_h5w_close_id(&gr);
    }
out:
    free(order);
    sx_h5w_close_id(&gl);
    sx_h5w_close_id(&gr);
    st = sx_h5w_agree(w, st, err);
    sx_h5_quiet_end(&q);
    if (st != SX_OK)
        w->failed = true;
    return st;
}
