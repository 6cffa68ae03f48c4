/* h5_rank_tables.c - a run's per-rank tables beside its events: thread and task lanes,
 * LIKWID groups, line profiles */
#include "h5_read.h"
#include "h5_reader.h"
#include "h5_util.h"
#include "json_value.h"
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Lanes, LIKWID, line profile                                        */

static enum sx_status read_lanes(struct sx_h5 *h5, struct sx_run *run, bool tasks,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    const char *grp = tasks ? "task_table" : "thread_table";
    static const char *const tcols[] = {"index",    "ident",  "native_id", "daemon",
                                        "start_ns", "end_ns", "cpu_ns"};
    static const char *const kcols[] = {"index", "thread_index", "created_ns",  "done_ns",
                                        "steps", "running_ns",   "suspended_ns"};
    const char *const *icols = tasks ? kcols : tcols;
    int64_t *ic[7] = {0}, *ranks = NULL, *uniq = NULL;
    char **sc[3] = {0};
    uint64_t n = 0, m = 0, nsc = tasks ? 3 : 1;
    static const char *const tsc[] = {"name"};
    static const char *const ksc[] = {"kind", "name", "coro_name"};
    const char *const *scn = tasks ? ksc : tsc;
    char p[128], src[1100];
    if (!sx_h5_has_link(h5, h5->file, grp))
        goto out;
    if (tasks)
        run->has_tasks = true;
    else
        run->has_threads = true;
    snprintf(p, sizeof p, "%s/ranks", grp);
    st = sx_h5_read_ints(h5, h5->file, p, false, &ranks, &n, err);
    if (st != SX_OK)
        goto out;
    for (int k = 0; k < 7; k++) {
        snprintf(p, sizeof p, "%s/%s", grp, icols[k]);
        st = sx_h5_read_ints(h5, h5->file, p, false, &ic[k], &m, err);
        if (st == SX_OK)
            st = sx_h5_req_len(h5, p, m, n, err);
        if (st != SX_OK)
            goto out;
    }
    for (uint64_t k = 0; k < nsc; k++) {
        snprintf(p, sizeof p, "%s/%s", grp, scn[k]);
        st = sx_h5_read_strings(h5, h5->file, p, &sc[k], &m, err);
        if (st == SX_OK)
            st = sx_h5_req_len(h5, p, m, n, err);
        if (st != SX_OK) {
            /* 'out' frees n strings per column: this one holds m */
            sx_h5_free_strv(sc[k], m);
            sc[k] = NULL;
            goto out;
        }
    }
    sx_h5_src_name(src, sizeof src, h5->path, grp);
    uniq = sx_malloc((n + 1) * sizeof *uniq);
    SX_CHECK(uniq != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    size_t nr = sx_h5_distinct(ranks, n, uniq);
    struct sx_lane_rank *lanes = sx_calloc(nr + 1, sizeof *lanes);
    SX_CHECK(lanes != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    if (tasks) {
        run->tasks = lanes;
        run->ntasks = nr;
    } else {
        run->threads = lanes;
        run->nthreads = nr;
    }
    for (size_t k = 0; k < nr; k++) {
        struct sx_lane_rank *L = &lanes[k];
        L->rank = uniq[k];
        size_t cnt = 0;
        for (uint64_t i = 0; i < n; i++)
            cnt += ranks[i] == uniq[k];
        if (tasks)
            L->tasks = sx_calloc(cnt + 1, sizeof *L->tasks);
        else
            L->threads = sx_calloc(cnt + 1, sizeof *L->threads);
        SX_CHECK(tasks ? L->tasks != NULL : L->threads != NULL, SX_ERR_NOMEM, err, src,
                 "out of memory");
        for (uint64_t i = 0; i < n; i++) {
            if (ranks[i] != uniq[k])
                continue;
            if (tasks) {
                struct sx_task *x = &L->tasks[L->n++];
                x->index = ic[0][i];
                x->thread_index = ic[1][i];
                x->created_ns = ic[2][i];
                x->done_ns = ic[3][i];
                x->steps = ic[4][i];
                x->running_ns = ic[5][i];
                x->suspended_ns = ic[6][i];
                x->kind = sc[0][i];
                x->name = sc[1][i];
                x->coro_name = sc[2][i];
                sc[0][i] = sc[1][i] = sc[2][i] = NULL;
            } else {
                struct sx_thread *x = &L->threads[L->n++];
                x->index = ic[0][i];
                x->ident = ic[1][i];
                x->native_id = ic[2][i];
                x->daemon = ic[3][i] != 0;
                x->start_ns = ic[4][i];
                x->end_ns = ic[5][i];
                x->cpu_ns = ic[6][i];
                x->name = sc[0][i];
                sc[0][i] = NULL;
            }
        }
    }
out:
    for (int k = 0; k < 7; k++)
        free(ic[k]);
    for (uint64_t k = 0; k < 3; k++)
        sx_h5_free_strv(sc[k], n);
    free(ranks);
    free(uniq);
    return st;
}

static enum sx_status read_likwid(struct sx_h5 *h5, struct sx_run *run, hid_t rgrp,
                                  int64_t rank, const char *rname, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = -1, e = -1;
    struct h5_name_list l = {0};
    char src[1400];
    struct sx_likwid_rank *lr = NULL;
    struct sx_likwid_rank *nv =
        sx_realloc(run->likwid, (run->nlikwid + 1) * sizeof *run->likwid);
    sx_h5_src_name(src, sizeof src, h5->path, rname);
    SX_CHECK(nv != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    run->likwid = nv;
    lr = &run->likwid[run->nlikwid++];
    *lr = (struct sx_likwid_rank){.rank = rank};
    if (!sx_h5_link_exists(rgrp, "likwid/regions"))
        goto out;
    g = H5Gopen2(rgrp, "likwid/regions", H5P_DEFAULT);
    SX_CHECK(g >= 0, SX_ERR_FORMAT, err, src, "%s/likwid/regions is not a group", src);
    st = sx_h5_list_links(g, &l, src, err);
    if (st != SX_OK)
        goto out;
    lr->entries = sx_calloc(l.n + 1, sizeof *lr->entries);
    SX_CHECK(lr->entries != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t i = 0; i < l.n; i++) {
        char obj[1200];
        snprintf(obj, sizeof obj, "/%s/likwid/regions/%s", rname, l.v[i]);
        sx_h5_src_name(src, sizeof src, h5->path, obj);
        e = H5Gopen2(g, l.v[i], H5P_DEFAULT);
        SX_CHECK(e >= 0, SX_ERR_FORMAT, err, src, "%s is not a group", src);
        struct sx_likwid_entry x = {0};
        bool found = false;
        struct sx_value nvv = {0};
        st = sx_h5_attr_string(h5, e, obj, "tag", &x.tag, &found, err);
        if (st == SX_OK && !found)
            x.tag = sx_strdup("");
        if (st == SX_OK)
            st = sx_h5_attr_number(h5, e, obj, "group_id", &nvv, &found, err);
        x.group_id = found ? sx_h5_value_as_int(&nvv) : -1;
        if (st == SX_OK)
            st = sx_h5_attr_string(h5, e, obj, "group_name", &x.group_name, &found, err);
        if (st == SX_OK && !found)
            x.group_name = sx_strdup("");
        if (st == SX_OK)
            st = sx_h5_attr_string(h5, e, obj, "source", &x.source, &found, err);
        if (st == SX_OK && !found)
            x.source = sx_strdup("");
        if (st == SX_OK)
            st = sx_h5_attr_strings(h5, e, obj, "event_names", &x.event_names,
                                    &x.nevent_names, err);
        if (st == SX_OK)
            st = sx_h5_attr_strings(h5, e, obj, "counter_names", &x.counter_names,
                                    &x.ncounter_names, err);
        if (st == SX_OK)
            st = sx_h5_attr_strings(h5, e, obj, "metric_names", &x.metric_names,
                                    &x.nmetric_names, err);
        if (st == SX_OK)
            st = sx_h5_read_ints_opt(h5, e, "cpus", &x.cpus, &x.ncpus, err);
        if (st == SX_OK)
            st = sx_h5_read_doubles_opt(h5, e, "times", &x.times, &x.ntimes, err);
        if (st == SX_OK)
            st = sx_h5_read_ints_opt(h5, e, "call_counts", &x.call_counts,
                                     &x.ncall_counts, err);
        if (st == SX_OK)
            st = sx_h5_read_matrix(h5, e, "events", &x.events, src, err);
        if (st == SX_OK)
            st = sx_h5_read_matrix(h5, e, "metrics", &x.metrics, src, err);
        sx_h5_close_id(e);
        e = -1;
        /* the entry is owned by lr from here, freed with the run */
        if (x.tag == NULL || x.group_name == NULL || x.source == NULL) {
            if (st == SX_OK)
                st = sx_error_set(err, SX_ERR_NOMEM, src, "out of memory");
        }
        /* a duplicate tag replaces the earlier entry in place (dict semantics) */
        size_t at = lr->n;
        for (size_t j = 0; x.tag != NULL && j < lr->n; j++)
            if (strcmp(lr->entries[j].tag, x.tag) == 0)
                at = j;
        if (at < lr->n) {
            sx_likwid_entry_clear(&lr->entries[at]);
            lr->entries[at] = x;
        } else {
            lr->entries[lr->n++] = x;
        }
        if (st != SX_OK)
            goto out;
    }
out:
    sx_h5_free_names(&l);
    sx_h5_close_id(e);
    sx_h5_close_id(g);
    return st;
}

static int cmp_likwid_tag(const void *a, const void *b) {
    const struct sx_likwid_entry *x = a, *y = b;
    return strcmp(x->tag, y->tag); /* UTF-8 byte order == code point order */
}

static enum sx_status read_line_profile(struct sx_h5 *h5, struct sx_run *run, hid_t rgrp,
                                        int64_t rank, const char *rname,
                                        struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = -1, e = -1;
    struct h5_name_list l = {0};
    char src[1400];
    struct sx_lp_rank *nv = sx_realloc(run->line_profile, (run->nline_profile + 1) *
                                                              sizeof *run->line_profile);
    sx_h5_src_name(src, sizeof src, h5->path, rname);
    SX_CHECK(nv != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    run->line_profile = nv;
    struct sx_lp_rank *lr = &run->line_profile[run->nline_profile++];
    *lr = (struct sx_lp_rank){.rank = rank};
    g = H5Gopen2(rgrp, "line_profile", H5P_DEFAULT);
    SX_CHECK(g >= 0, SX_ERR_FORMAT, err, src, "%s/line_profile is not a group", src);
    st = sx_h5_list_links(g, &l, src, err); /* name order: "0", "1", "10", "2" */
    if (st != SX_OK)
        goto out;
    lr->records = sx_calloc(l.n + 1, sizeof *lr->records);
    SX_CHECK(lr->records != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t i = 0; i < l.n; i++) {
        char obj[1200];
        snprintf(obj, sizeof obj, "/%s/line_profile/%s", rname, l.v[i]);
        sx_h5_src_name(src, sizeof src, h5->path, obj);
        e = H5Gopen2(g, l.v[i], H5P_DEFAULT);
        SX_CHECK(e >= 0, SX_ERR_FORMAT, err, src, "%s is not a group", src);
        struct sx_lp_record *x = &lr->records[lr->n++];
        bool found = false;
        struct sx_value v = {0};
        st = sx_h5_attr_string(h5, e, obj, "region", &x->region, &found, err);
        if (st == SX_OK && !found)
            x->region = sx_strdup("");
        if (st == SX_OK)
            st = sx_h5_attr_string(h5, e, obj, "filename", &x->filename, &found, err);
        if (st == SX_OK && !found)
            x->filename = sx_strdup("");
        if (st == SX_OK)
            st = sx_h5_attr_string(h5, e, obj, "function", &x->function, &found, err);
        if (st == SX_OK && !found)
            x->function = sx_strdup("");
        if (st == SX_OK)
            st = sx_h5_attr_number(h5, e, obj, "first_lineno", &v, &found, err);
        x->first_lineno = found ? sx_h5_value_as_int(&v) : 0;
        if (st == SX_OK)
            st = sx_h5_attr_number(h5, e, obj, "unit", &v, &found, err);
        x->unit = !found                 ? 1.0
                  : v.kind == SX_V_FLOAT ? v.u.f
                                         : (double)sx_h5_value_as_int(&v);
        if (st == SX_OK)
            st = sx_h5_read_ints_opt(h5, e, "line_numbers", &x->line_numbers,
                                     &x->nline_numbers, err);
        if (st == SX_OK)
            st = sx_h5_read_ints_opt(h5, e, "hits", &x->hits, &x->nhits, err);
        if (st == SX_OK)
            st = sx_h5_read_doubles_opt(h5, e, "times", &x->times, &x->ntimes, err);
        sx_h5_close_id(e);
        e = -1;
        if (st == SX_OK && (!x->region || !x->filename || !x->function))
            st = sx_error_set(err, SX_ERR_NOMEM, src, "out of memory");
        if (st != SX_OK)
            goto out;
    }
out:
    sx_h5_free_names(&l);
    sx_h5_close_id(e);
    sx_h5_close_id(g);
    return st;
}

static enum sx_status read_rank_tables(struct sx_h5 *h5, struct sx_run *run,
                                       struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct h5_quiet q;
    struct h5_rank_group *rg = NULL;
    size_t nrg = 0;
    hid_t g = -1;
    sx_h5_quiet_begin(&q);
    if (run->layout != SX_LAYOUT_SCHEMA1) {
        st = read_lanes(h5, run, false, err);
        if (st == SX_OK)
            st = read_lanes(h5, run, true, err);
        if (st != SX_OK)
            goto out;
    }
    st = sx_h5_rank_groups(h5, &rg, &nrg, err);
    if (st != SX_OK)
        goto out;
    for (size_t k = 0; k < nrg; k++) {
        g = H5Gopen2(h5->file, rg[k].name, H5P_DEFAULT);
        if (g < 0)
            continue;
        if (sx_h5_link_exists(g, "likwid")) {
            st = read_likwid(h5, run, g, rg[k].rank, rg[k].name, err);
            if (st != SX_OK)
                goto out;
            struct sx_likwid_rank *lr = &run->likwid[run->nlikwid - 1];
            if (lr->n > 1)
                qsort(lr->entries, lr->n, sizeof *lr->entries, cmp_likwid_tag);
        }
        if (sx_h5_link_exists(g, "line_profile")) {
            st = read_line_profile(h5, run, g, rg[k].rank, rg[k].name, err);
            if (st != SX_OK)
                goto out;
        }
        sx_h5_close_id(g);
        g = -1;
    }
out:
    sx_h5_close_id(g);
    sx_h5_free_rank_groups(rg, nrg);
    sx_h5_quiet_end(&q);
    return st;
}

enum sx_status sx_h5_read_extras(struct sx_h5 *h5, struct sx_run *run,
                                 struct sx_error *err) {
    sx_h5_enter(h5->path);
    enum sx_status st = read_rank_tables(h5, run, err);
    sx_h5_leave();
    return st;
}
