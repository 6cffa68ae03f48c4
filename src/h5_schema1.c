/* h5_schema1.c - schema-1 runs: rank groups of per-region datasets -> the run model */
#include "h5_reader.h"
#include "h5_util.h"
#include "json_value.h"
#include "json_write.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t name_index(struct sx_run *run, const char *name) {
    for (size_t i = 0; i < run->nnames; i++)
        if (strcmp(run->names[i], name) == 0)
            return (int64_t)i;
    return -1;
}

enum sx_status sx_h5_read_schema1(struct sx_h5 *h5, struct sx_run *run,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct h5_rank_group *rg = NULL;
    size_t nrg = 0;
    struct h5_name_list regs = {0};
    hid_t g = -1, d = -1, t = -1;
    char src[1400];
    size_t cap_rows = 0, cap_names = 0;
    st = sx_h5_rank_groups(h5, &rg, &nrg, err);
    if (st != SX_OK)
        goto out;
    run->num_ranks = (int64_t)nrg;
    /* no schema attribute, no metadata, no rank group: some other HDF5 file */
    if (nrg == 0 && !sx_h5_has_link(h5, h5->file, "metadata")) {
        sx_h5_src_name(src, sizeof src, h5->path, "/");
        st = sx_error_set(
            err, SX_ERR_FORMAT, src,
            "%s is an HDF5 file but not a scope-profiler run: it has no "
            "scope_profiler_schema attribute, no /metadata and no rank groups",
            h5->path);
        goto out;
    }
    for (size_t k = 0; k < nrg; k++) {
        char gp[300];
        snprintf(gp, sizeof gp, "%s/regions", rg[k].name);
        if (!sx_h5_has_link(h5, h5->file, gp))
            continue;
        sx_h5_src_name(src, sizeof src, h5->path, gp);
        g = H5Gopen2(h5->file, gp, H5P_DEFAULT);
        SX_CHECK(g >= 0, SX_ERR_FORMAT, err, src, "%s is not a group", src);
        sx_h5_free_names(&regs);
        st = sx_h5_list_links(g, &regs, src, err);
        if (st != SX_OK)
            goto out;
        for (size_t i = 0; i < regs.n; i++) {
            char rp[1100];
            snprintf(rp, sizeof rp, "/%s/regions/%s", rg[k].name, regs.v[i]);
            sx_h5_src_name(src, sizeof src, h5->path, rp);
            char *name = sx_utf8_sanitize(regs.v[i], strlen(regs.v[i]));
            SX_CHECK(name != NULL, SX_ERR_NOMEM, err, src, "out of memory");
            int64_t id = name_index(run, name);
            if (id < 0) {
                if (run->nnames == cap_names) {
                    cap_names = cap_names ? cap_names * 2 : 16;
                    char **nv = sx_realloc(run->names, cap_names * sizeof *nv);
                    if (nv == NULL)
                        free(name);
                    SX_CHECK(nv != NULL, SX_ERR_NOMEM, err, src, "out of memory");
                    run->names = nv;
                }
                id = (int64_t)run->nnames;
                run->names[run->nnames++] = name;
            } else {
                free(name);
            }
            if (run->nrows == cap_rows) {
                cap_rows = cap_rows ? cap_rows * 2 : 16;
                struct sx_row *nr = sx_realloc(run->rows, cap_rows * sizeof *nr);
                SX_CHECK(nr != NULL, SX_ERR_NOMEM, err, src, "out of memory");
                run->rows = nr;
            }
            struct sx_row *row = &run->rows[run->nrows++];
            *row = (struct sx_row){0};
            row->region = (uint32_t)id;
            row->rank = rg[k].rank;
            row->group = sx_strdup(rp);
            SX_CHECK(row->group != NULL, SX_ERR_NOMEM, err, src, "out of memory");
            hid_t rgp = H5Gopen2(g, regs.v[i], H5P_DEFAULT);
            SX_CHECK(rgp >= 0, SX_ERR_FORMAT, err, src, "%s is not a region group", src);
            sx_h5_close_id(d);
            d = rgp; /* closed below or at out */
            SX_CHECK(sx_h5_link_exists(rgp, "start_times") &&
                         sx_h5_link_exists(rgp, "end_times"),
                     SX_ERR_FORMAT, err, src,
                     "%s has no start_times/end_times datasets; the file is damaged",
                     src);
            row->cols = SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END);
            uint64_t count = 0;
            for (int c = 0; c < 5; c++) {
                static const int cc[5] = {SX_COL_START, SX_COL_END, SX_COL_GPU,
                                          SX_COL_CALL, SX_COL_PARENT};
                if (!sx_h5_link_exists(rgp, sx_h5_col_names[cc[c]]))
                    continue;
                hid_t ds = H5Dopen2(rgp, sx_h5_col_names[cc[c]], H5P_DEFAULT);
                char cs[1500];
                snprintf(cs, sizeof cs, "%s/%s", src, sx_h5_col_names[cc[c]]);
                SX_CHECK(ds >= 0, SX_ERR_FORMAT, err, cs, "%s cannot be opened", cs);
                t = H5Dget_type(ds);
                bool isint = t >= 0 && H5Tget_class(t) == H5T_INTEGER;
                int64_t n = sx_h5_dset_len(ds);
                if (isint && n >= 0)
                    st = sx_h5_check_claim(h5, ds, (uint64_t)n, H5Tget_size(t), cs, err);
                sx_h5_close_id(t);
                t = -1;
                H5Dclose(ds);
                if (st != SX_OK)
                    goto out;
                SX_CHECK(isint, SX_ERR_FORMAT, err, cs,
                         "%s has the wrong datatype: integers expected", cs);
                SX_CHECK(n >= 0, SX_ERR_FORMAT, err, cs, "%s is not one-dimensional", cs);
                if (c == 0)
                    count = (uint64_t)n;
                else
                    SX_CHECK((uint64_t)n == count, SX_ERR_FORMAT, err, cs,
                             "%s has %" PRId64 " values but start_times has %" PRIu64, cs,
                             n, count);
                row->cols |= SX_COLBIT(cc[c]);
            }
            row->count = count;
            bool found = false;
            st = sx_h5_attr_string(h5, rgp, rp, "source_file", &row->source_file, &found,
                                   err);
            if (st == SX_OK)
                st = sx_h5_attr_string(h5, rgp, rp, "source_text", &row->source_text,
                                       &found, err);
            if (st != SX_OK)
                goto out;
            struct sx_value lv = {0};
            st = sx_h5_attr_number(h5, rgp, rp, "source_lineno", &lv, &found, err);
            if (st != SX_OK)
                goto out;
            if (found) {
                row->has_lineno = true;
                row->source_lineno = sx_h5_value_as_int(&lv);
            }
            st = sx_h5_attr_strings(h5, rgp, rp, "tags", &row->tags, &row->ntags, err);
            if (st != SX_OK)
                goto out;
        }
        sx_h5_close_id(g);
        g = -1;
    }
out:
    sx_h5_free_names(&regs);
    sx_h5_free_rank_groups(rg, nrg);
    sx_h5_close_id(t);
    sx_h5_close_id(d);
    sx_h5_close_id(g);
    return st;
}
