/* h5_schema.c - a run's schema version, storage layout and /metadata attributes */
#include "buf.h"
#include "h5_reader.h"
#include "h5_util.h"
#include "json_value.h"
#include "json_write.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct meta_ctx {
    struct sx_h5 *h5;
    struct sx_value *obj;
    enum sx_status st;
    struct sx_error *err;
};

static herr_t meta_cb(hid_t loc, const char *name, const H5A_info_t *info, void *op) {
    (void)info;
    struct meta_ctx *c = op;
    char src[1200];
    snprintf(src, sizeof src, "%s:/metadata@%s", c->h5->path, name);
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) {
        c->st = sx_error_set(c->err, SX_ERR_IO, src, "%s cannot be read", src);
        return -1;
    }
    struct sx_value v = {0};
    c->st = sx_h5_read_attr_value_in(&c->h5->facts, a, &v, src, c->err);
    H5Aclose(a);
    if (c->st != SX_OK)
        return -1;
    char *key = sx_utf8_sanitize(name, strlen(name));
    /* sx_value_set takes 'v' on failure too: only a value never passed is freed here */
    bool ok = key != NULL && sx_value_set(c->obj, key, strlen(key), v);
    if (key == NULL)
        sx_value_free(&v);
    free(key);
    if (!ok) {
        c->st = sx_error_set(c->err, SX_ERR_NOMEM, src, "out of memory");
        return -1;
    }
    return 0;
}

enum sx_status sx_h5_read_metadata(struct sx_h5 *h5, struct sx_run *run,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t g = -1;
    if (!sx_h5_has_link(h5, h5->file, "metadata"))
        goto out;
    char src[1100];
    sx_h5_src_name(src, sizeof src, h5->path, "/metadata");
    g = H5Gopen2(h5->file, "metadata", H5P_DEFAULT);
    SX_CHECK(g >= 0, SX_ERR_FORMAT, err, src, "%s is not a group", src);
    struct meta_ctx c = {h5, &run->metadata, SX_OK, err};
    hsize_t idx = 0;
    /* h5py iterates attributes by name (strcmp order), not by creation order. */
    herr_t rc = H5Aiterate2(g, H5_INDEX_NAME, H5_ITER_INC, &idx, meta_cb, &c);
    if (c.st != SX_OK) {
        st = c.st;
        goto out;
    }
    SX_CHECK(rc >= 0, SX_ERR_IO, err, src, "%s: attributes cannot be read", src);
out:
    sx_h5_close_id(g);
    return st;
}

enum sx_status sx_h5_read_schema(struct sx_h5 *h5, struct sx_run *run,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t a = -1, t = -1;
    struct sx_value v = {0};
    char src[1100];
    sx_h5_src_name(src, sizeof src, h5->path, "/@scope_profiler_schema");
    run->schema = 1;
    if (H5Aexists(h5->file, "scope_profiler_schema") <= 0)
        goto layout;
    a = H5Aopen(h5->file, "scope_profiler_schema", H5P_DEFAULT);
    SX_CHECK(a >= 0, SX_ERR_IO, err, src, "%s cannot be read", src);
    st = sx_h5_read_attr_value_in(&h5->facts, a, &v, src, err);
    if (st != SX_OK)
        goto out;
    if (v.kind != SX_V_INT && v.kind != SX_V_UINT) {
        struct sx_buf b = {0};
        sx_write_value(&b, &v, -1, 0);
        sx_buf_putc(&b, '\0');
        st = sx_error_set(
            err, SX_ERR_FORMAT, src,
            "HDF5 schema version attribute 'scope_profiler_schema' must be an "
            "integer, got %s (in %s)",
            b.data && !b.failed ? b.data : "?", h5->path);
        sx_buf_free(&b);
        goto out;
    }
    if (v.kind == SX_V_UINT) {
        st = sx_error_set(err, SX_ERR_UNSUPPORTED, src,
                          "Unsupported scope-profiler HDF5 schema version %" PRIu64
                          "; this package supports versions through %d. Upgrade "
                          "scope-profiler to read this file. (%s)",
                          v.u.u, CURRENT_SCHEMA, h5->path);
        goto out;
    }
    SX_CHECK(v.u.i >= 1, SX_ERR_UNSUPPORTED, err, src,
             "Unsupported scope-profiler HDF5 schema version %" PRId64
             "; versions must be positive (%s)",
             v.u.i, h5->path);
    SX_CHECK(
        v.u.i <= CURRENT_SCHEMA, SX_ERR_UNSUPPORTED, err, src,
        "Unsupported scope-profiler HDF5 schema version %" PRId64
        "; this package supports versions through %d. Upgrade scope-profiler to read "
        "this file. (%s)",
        v.u.i, CURRENT_SCHEMA, h5->path);
    run->schema = (int)v.u.i;
layout:
    run->layout = run->schema >= 2 ? SX_LAYOUT_COLUMNAR : SX_LAYOUT_SCHEMA1;
    if (run->schema >= 2 && H5Aexists(h5->file, "storage_layout") > 0) {
        sx_h5_close_id(a);
        a = H5Aopen(h5->file, "storage_layout", H5P_DEFAULT);
        t = a >= 0 ? H5Aget_type(a) : -1;
        /* Only a str compares equal in Python: a fixed-length (bytes) value reads as
         * columnar. */
        if (t >= 0 && H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) > 0) {
            sx_value_free(&v);
            st = sx_h5_read_attr_value_in(&h5->facts, a, &v, src, err);
            if (st != SX_OK)
                goto out;
            if (v.kind == SX_V_STR && strcmp(v.u.str.s, "aggregate") == 0)
                run->layout = SX_LAYOUT_AGGREGATE;
        }
    }
out:
    sx_value_free(&v);
    sx_h5_close_id(t);
    sx_h5_close_id(a);
    return st;
}
