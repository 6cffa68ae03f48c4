/* h5_perf.c - rank<N>/perf_events/<region>/ groups: Linux perf counter totals */
#include "h5_reader.h"
#include "h5_util.h"
#include "json_write.h"
#include "perf_events.h"
#include "stop.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sx_perf_free(struct sx_perf_rank *p, size_t n) {
    for (size_t i = 0; p != NULL && i < n; i++) {
        for (size_t j = 0; j < p[i].n; j++) {
            struct sx_perf_region *r = &p[i].regions[j];
            for (size_t k = 0; k < r->nevents; k++)
                free(r->event_names[k]);
            free(r->event_names);
            free(r->values);
            free(r->name);
        }
        free(p[i].regions);
    }
    free(p);
}

struct names {
    char **v;
    size_t n, cap;
    bool failed;
};

static herr_t collect(hid_t g, const char *name, const H5L_info_t *info, void *op) {
    (void)g;
    (void)info;
    struct names *l = op;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **nv = sx_realloc(l->v, cap * sizeof *nv);
        if (nv == NULL) {
            l->failed = true;
            return -1;
        }
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n] = sx_strdup(name);
    if (l->v[l->n] == NULL) {
        l->failed = true;
        return -1;
    }
    l->n++;
    return 0;
}

/* A 1-D string attribute (variable or fixed length) as new strings. */
static enum sx_status read_names(hid_t loc, const char *src, char ***out, size_t *nout,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t a = -1, sp = -1, ft = -1, mt = -1;
    char **v = NULL;
    char *fixed = NULL;
    *out = NULL;
    *nout = 0;
    a = H5Aopen(loc, "event_names", H5P_DEFAULT);
    SX_CHECK(a >= 0, SX_ERR_FORMAT, err, src, "%s@event_names cannot be read", src);
    sp = H5Aget_space(a);
    ft = H5Aget_type(a);
    SX_CHECK(sp >= 0 && ft >= 0 && H5Tget_class(ft) == H5T_STRING, SX_ERR_FORMAT, err,
             src, "%s@event_names is not a list of strings", src);
    hssize_t n = H5Sget_simple_extent_npoints(sp);
    SX_CHECK(n >= 0 && n < (1 << 20), SX_ERR_FORMAT, err, src,
             "%s@event_names has a bad shape", src);
    v = sx_calloc((size_t)n + 1, sizeof *v);
    SX_CHECK(v != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    mt = H5Tcopy(H5T_C_S1);
    if (H5Tis_variable_str(ft) > 0) {
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5T_CSET_UTF8);
        char where[1200];
        snprintf(where, sizeof where, "%.1100s@event_names", src);
        st = sx_h5_vlen_guard(a, H5S_ALL, H5S_ALL, where, err);
        if (st != SX_OK)
            goto out;
        SX_CHECK(H5Aread(a, mt, v) >= 0, SX_ERR_IO, err, src,
                 "%s@event_names cannot be read", src);
        for (hssize_t i = 0; i < n; i++) { /* own copies, sanitized */
            char *h = v[i];
            v[i] = sx_utf8_sanitize(h ? h : "", h ? strlen(h) : 0);
            H5free_memory(h);
            SX_CHECK(v[i] != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        }
    } else {
        size_t w = H5Tget_size(ft);
        H5Tset_size(mt, w);
        fixed = sx_calloc((size_t)n * w + 1, 1);
        SX_CHECK(fixed != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        SX_CHECK(H5Aread(a, mt, fixed) >= 0, SX_ERR_IO, err, src,
                 "%s@event_names cannot be read", src);
        for (hssize_t i = 0; i < n; i++) {
            const char *s = fixed + (size_t)i * w;
            size_t len = strnlen(s, w);
            v[i] = sx_utf8_sanitize(s, len);
            SX_CHECK(v[i] != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        }
    }
    *out = v;
    *nout = (size_t)n;
    v = NULL;
out:
    if (v != NULL) {
        for (hssize_t i = 0; i < (hssize_t)(*nout); i++)
            free(v[i]);
        free(v);
    }
    free(fixed);
    sx_h5_close_id(mt);
    sx_h5_close_id(ft);
    sx_h5_close_id(sp);
    sx_h5_close_id(a);
    return st;
}

static enum sx_status read_region(hid_t pe, const char *path, int64_t rank,
                                  const char *name, struct sx_perf_region *r,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = -1, a = -1, d = -1, sp = -1;
    char src[1200];
    snprintf(src, sizeof src, "%s:/rank%" PRId64 "/perf_events/%s", path, rank, name);
    memset(r, 0, sizeof *r);
    r->name = sx_utf8_sanitize(name, strlen(name));
    SX_CHECK(r->name != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    g = H5Gopen2(pe, name, H5P_DEFAULT);
    SX_CHECK(g >= 0, SX_ERR_FORMAT, err, src, "%s is not a group", src);
    a = H5Aopen(g, "calls", H5P_DEFAULT);
    int64_t calls = 0;
    SX_CHECK(a >= 0 && H5Aread(a, H5T_NATIVE_INT64, &calls) >= 0, SX_ERR_FORMAT, err, src,
             "%s@calls cannot be read", src);
    r->calls = (uint64_t)calls;
    st = read_names(g, src, &r->event_names, &r->nevents, err);
    if (st != SX_OK)
        goto out;
    d = H5Dopen2(g, "values", H5P_DEFAULT);
    SX_CHECK(d >= 0, SX_ERR_FORMAT, err, src, "%s/values cannot be read", src);
    char vs[1100];
    snprintf(vs, sizeof vs, "%.1000s/values", src);
    st = sx_h5_local_data(d, vs, err);
    if (st != SX_OK)
        goto out;
    sp = H5Dget_space(d);
    hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    SX_CHECK(n >= 0 && (size_t)n == r->nevents, SX_ERR_FORMAT, err, src,
             "%s/values has %lld values for %zu event names", src, (long long)n,
             r->nevents);
    r->values = sx_calloc((size_t)n + 1, sizeof *r->values);
    SX_CHECK(r->values != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    SX_CHECK(n == 0 || H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                               r->values) >= 0,
             SX_ERR_IO, err, src, "%s/values cannot be read", src);
out:
    sx_h5_close_id(sp);
    sx_h5_close_id(d);
    sx_h5_close_id(a);
    sx_h5_close_id(g);
    return st;
}

enum sx_status sx_h5_perf_read(const char *path, int64_t num_ranks,
                               struct sx_perf_rank **out, size_t *nout,
                               struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t f = -1, pe = -1;
    struct sx_perf_rank *p = NULL;
    size_t n = 0;
    struct names l = {0};
    H5E_auto2_t func;
    void *data;
    char gname[64];
    struct h5_rank_group *rg = NULL;
    size_t nrg = 0;
    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *out = NULL;
    *nout = 0;
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    SX_CHECK(f >= 0, SX_ERR_OPEN, err, path, "%s cannot be opened for its perf events",
             path);
    st = sx_h5_refuse_foreign(f, path, err);
    if (st != SX_OK)
        goto out;
    /* the rank groups the file has: a loop up to 'num_ranks', a number the file
     * gives, would cost minutes for one damaged index row */
    struct sx_h5 root = {.file = f, .path = (char *)path};
    st = sx_h5_rank_groups(&root, &rg, &nrg, err);
    if (st != SX_OK)
        goto out;
    for (size_t k = 0; k < nrg; k++) {
        int64_t r = rg[k].rank;
        SX_CHECK(!sx_stop_requested(), SX_ERR_INTERRUPTED, err, path,
                 "%s: interrupted while reading its perf events", path);
        snprintf(gname, sizeof gname, "rank%" PRId64, r);
        if (r >= num_ranks || strcmp(gname, rg[k].name) != 0)
            continue; /* scope-profiler reads /rank<N> for N below num_ranks only */
        snprintf(gname, sizeof gname, "/rank%" PRId64 "/perf_events", r);
        if (H5Lexists(f, gname, H5P_DEFAULT) <= 0)
            continue;
        pe = H5Gopen2(f, gname, H5P_DEFAULT);
        SX_CHECK(pe >= 0, SX_ERR_FORMAT, err, path, "%s:%s is not a group", path, gname);
        hsize_t idx = 0;
        l.n = 0;
        herr_t rc = H5Literate(pe, H5_INDEX_NAME, H5_ITER_INC, &idx, collect, &l);
        SX_CHECK(rc >= 0 && !l.failed, l.failed ? SX_ERR_NOMEM : SX_ERR_FORMAT, err, path,
                 "%s:%s cannot be listed", path, gname);
        struct sx_perf_rank *np = sx_realloc(p, (n + 1) * sizeof *np);
        SX_CHECK(np != NULL, SX_ERR_NOMEM, err, path, "out of memory");
        p = np;
        memset(&p[n], 0, sizeof p[n]);
        p[n].rank = r;
        p[n].regions = sx_calloc(l.n + 1, sizeof *p[n].regions);
        n++;
        SX_CHECK(p[n - 1].regions != NULL, SX_ERR_NOMEM, err, path, "out of memory");
        for (size_t i = 0; i < l.n; i++) {
            st = read_region(pe, path, r, l.v[i], &p[n - 1].regions[i], err);
            p[n - 1].n = i + 1;
            if (st != SX_OK)
                goto out;
        }
        for (size_t i = 0; i < l.n; i++)
            free(l.v[i]);
        l.n = 0;
        sx_h5_close_id(pe);
        pe = -1;
    }
out:
    for (size_t i = 0; i < l.n; i++)
        free(l.v[i]);
    free(l.v);
    sx_h5_free_rank_groups(rg, nrg);
    sx_h5_close_id(pe);
    sx_h5_close_id(f);
    H5Eset_auto2(H5E_DEFAULT, func, data);
    if (st != SX_OK) {
        sx_perf_free(p, n);
        p = NULL;
        n = 0;
    }
    *out = p;
    *nout = n;
    return st;
}

enum sx_status sx_h5_perf_write(const char *path, const struct sx_perf_rank *p, size_t n,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t f = -1, g = -1, pe = -1, rg = -1, sp = -1, a = -1, d = -1, st_t = -1, one = -1;
    char gname[64];
    H5E_auto2_t func;
    void *data;
    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    SX_CHECK(f >= 0, SX_ERR_OPEN, err, path, "%s cannot be opened to add perf events",
             path);
    st_t = H5Tcopy(H5T_C_S1);
    H5Tset_size(st_t, H5T_VARIABLE);
    H5Tset_cset(st_t, H5T_CSET_UTF8);
    one = H5Screate(H5S_SCALAR);
    for (size_t i = 0; i < n; i++) {
        snprintf(gname, sizeof gname, "/rank%" PRId64, p[i].rank);
        g = H5Lexists(f, gname, H5P_DEFAULT) > 0
                ? H5Gopen2(f, gname, H5P_DEFAULT)
                : H5Gcreate2(f, gname, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        SX_CHECK(g >= 0, SX_ERR_IO, err, path, "%s:%s cannot be made", path, gname);
        pe = H5Gcreate2(g, "perf_events", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        SX_CHECK(pe >= 0, SX_ERR_IO, err, path, "%s:%s/perf_events cannot be made", path,
                 gname);
        for (size_t j = 0; j < p[i].n; j++) {
            const struct sx_perf_region *r = &p[i].regions[j];
            rg = H5Gcreate2(pe, r->name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            SX_CHECK(rg >= 0, SX_ERR_IO, err, path, "%s: perf group %s cannot be made",
                     path, r->name);
            int64_t calls = (int64_t)r->calls;
            a = H5Acreate2(rg, "calls", H5T_STD_I64LE, one, H5P_DEFAULT, H5P_DEFAULT);
            SX_CHECK(a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &calls) >= 0, SX_ERR_IO, err,
                     path, "%s: perf calls of %s cannot be written", path, r->name);
            sx_h5_close_id(a);
            hsize_t dim = r->nevents;
            sp = H5Screate_simple(1, &dim, NULL);
            a = H5Acreate2(rg, "event_names", st_t, sp, H5P_DEFAULT, H5P_DEFAULT);
            SX_CHECK(a >= 0 && H5Awrite(a, st_t, r->event_names) >= 0, SX_ERR_IO, err,
                     path, "%s: perf event names of %s cannot be written", path, r->name);
            sx_h5_close_id(a);
            a = -1;
            d = H5Dcreate2(rg, "values", H5T_STD_U64LE, sp, H5P_DEFAULT, H5P_DEFAULT,
                           H5P_DEFAULT);
            SX_CHECK(d >= 0 &&
                         (dim == 0 || H5Dwrite(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL,
                                               H5P_DEFAULT, r->values) >= 0),
                     SX_ERR_IO, err, path, "%s: perf values of %s cannot be written",
                     path, r->name);
            sx_h5_close_id(d);
            d = -1;
            sx_h5_close_id(sp);
            sp = -1;
            sx_h5_close_id(rg);
            rg = -1;
        }
        sx_h5_close_id(pe);
        pe = -1;
        sx_h5_close_id(g);
        g = -1;
    }
out:
    sx_h5_close_id(d);
    sx_h5_close_id(a);
    sx_h5_close_id(sp);
    sx_h5_close_id(rg);
    sx_h5_close_id(pe);
    sx_h5_close_id(g);
    sx_h5_close_id(one);
    sx_h5_close_id(st_t);
    if (f >= 0 && H5Fclose(f) < 0 && st == SX_OK)
        st = sx_error_set(err, SX_ERR_IO, path, "%s cannot be closed", path);
    H5Eset_auto2(H5E_DEFAULT, func, data);
    return st;
}
