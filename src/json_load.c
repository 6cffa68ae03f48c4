/* json_load.c - a JSON profile (.json, .json.gz) into the run model */
#include "json_load.h"

#include "buf.h"
#include "json_convert.h"
#include "json_stream.h"
#include "json_tree.h"
#include "json_value.h"
#include "run.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SX_FORMAT_NAME "scope-profiler-profile"
#define SX_FORMAT_VERSION 1

/* ------------------------------------------------------------------ */
/* Document -> run model                                              */

/* What a read keeps of the rows (sx_json_load_ex). */
struct loader {
    const char *path;
    struct sx_error *err;
    struct sx_run *run;
    enum sx_json_keep keep;
    size_t *name_slot; /* open addressing: name index + 1, 0 = empty */
    size_t *row_slot;  /* row index + 1 */
    size_t cap;        /* slots in each table (power of two) */
    size_t names_cap;
    json_t *top;           /* the top-level values read so far, but a streamed regions */
    bool streamed;         /* regions came as a list, an element at a time */
    size_t nelements;      /* elements of the (last) regions list */
    bool part;             /* a part of the document after its first element */
    bool format_checked;   /* the format was checked (before the rows, or at the end) */
    sx_json_row_fn on_row; /* SX_JSON_KEEP_NONE: each row, then it is cleared */
    void *on_row_ctx;
    char where[160]; /* "regions[3] ('solve', rank 0)" for messages */
};

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static uint64_t hash_row(uint32_t region, int64_t rank) {
    uint64_t h = ((uint64_t)region << 32) ^ (uint64_t)rank;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* The integer at 'key' of 'obj' ('*present' = false when absent or null). */
static enum sx_status get_int(struct loader *ld, const json_t *obj, const char *key,
                              bool *present, int64_t *out) {
    enum sx_status st = SX_OK;
    const json_t *v = json_object_get(obj, key);
    struct sx_error *err = ld->err;

    *present = v != NULL && !json_is_null(v);
    if (!*present)
        goto out;
    SX_CHECK(json_is_integer(v), SX_ERR_FORMAT, err, ld->path,
             "%s: %s: '%s' must be an integer, got %s", ld->path, ld->where, key,
             sx_json_kind(v));
    *out = (int64_t)json_integer_value(v);
out:
    return st;
}

/* A new copy of the string at 'key' (NULL when absent or null, or 'dflt' copied). */
static enum sx_status get_str(struct loader *ld, const json_t *obj, const char *key,
                              const char *dflt, char **out) {
    enum sx_status st = SX_OK;
    const json_t *v = json_object_get(obj, key);
    struct sx_error *err = ld->err;

    *out = NULL;
    if (v == NULL || json_is_null(v)) {
        if (dflt != NULL) {
            *out = sx_strdup(dflt);
            SX_CHECK(*out != NULL, SX_ERR_NOMEM, err, ld->path, "out of memory");
        }
        goto out;
    }
    SX_CHECK(sx_json_is_str(v), SX_ERR_FORMAT, err, ld->path,
             "%s: %s: '%s' must be a string, got %s", ld->path, ld->where, key,
             sx_json_kind(v));
    *out = sx_strndup(json_string_value(v), json_string_length(v));
    SX_CHECK(*out != NULL, SX_ERR_NOMEM, err, ld->path, "out of memory");
out:
    return st;
}

/* An int64 array from the list at 'key'; '*present' false when absent or null. */
static enum sx_status get_i64s(struct loader *ld, const json_t *obj, const char *key,
                               bool *present, int64_t **out, size_t *n) {
    enum sx_status st = SX_OK;
    const json_t *v = json_object_get(obj, key);
    struct sx_error *err = ld->err;
    int64_t *a = NULL;

    *out = NULL;
    *n = 0;
    *present = v != NULL && !json_is_null(v);
    if (!*present)
        goto out;
    SX_CHECK(json_is_array(v), SX_ERR_FORMAT, err, ld->path,
             "%s: %s: '%s' must be a list of integers, got %s", ld->path, ld->where, key,
             sx_json_kind(v));
    a = sx_malloc((json_array_size(v) + 1) * sizeof *a);
    SX_CHECK(a != NULL, SX_ERR_NOMEM, err, ld->path, "out of memory");
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *x = json_array_get(v, i);
        SX_CHECK(json_is_integer(x), SX_ERR_FORMAT, err, ld->path,
                 "%s: %s: '%s'[%zu] must be an integer, got %s", ld->path, ld->where, key,
                 i, sx_json_kind(x));
        a[i] = (int64_t)json_integer_value(x);
    }
    *n = json_array_size(v);
    *out = a;
    a = NULL;
out:
    free(a);
    return st;
}

/* A double array from a list of numbers/null at 'key' (default []). */
static enum sx_status get_f64s(struct loader *ld, const json_t *obj, const char *key,
                               double **out, size_t *n) {
    enum sx_status st = SX_OK;
    const json_t *v = json_object_get(obj, key);
    struct sx_error *err = ld->err;
    double *a = NULL;

    *out = NULL;
    *n = 0;
    if (v == NULL)
        goto out;
    SX_CHECK(json_is_array(v), SX_ERR_FORMAT, err, ld->path,
             "%s: %s: '%s' must be a list of numbers, got %s", ld->path, ld->where, key,
             sx_json_kind(v));
    a = sx_malloc((json_array_size(v) + 1) * sizeof *a);
    SX_CHECK(a != NULL, SX_ERR_NOMEM, err, ld->path, "out of memory");
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *x = json_array_get(v, i);
        SX_CHECK(sx_json_num_or_null(x, &a[i]), SX_ERR_FORMAT, err, ld->path,
                 "%s: %s: '%s'[%zu] must be a number or null, got %s", ld->path,
                 ld->where, key, i, sx_json_kind(x));
    }
    *n = json_array_size(v);
    *out = a;
    a = NULL;
out:
    free(a);
    return st;
}

/* String list at 'key', default []. */
static enum sx_status get_strs(struct loader *ld, const json_t *obj, const char *key,
                               char ***out, size_t *n) {
    const json_t *v = json_object_get(obj, key);
    char what[240];

    *out = NULL;
    *n = 0;
    if (v == NULL)
        return SX_OK;
    snprintf(what, sizeof what, "%s: %s: '%s'", ld->path, ld->where, key);
    return sx_json_string_list(v, out, n, ld->path, what, ld->err);
}

/* Empty tables for rows and names. */
static enum sx_status tables_init(struct loader *ld) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    struct sx_run *run = ld->run;

    for (size_t r = 0; r < run->nrows; r++)
        sx_row_clear(&run->rows[r]);
    for (size_t k = 0; k < run->nnames; k++)
        free(run->names[k]);
    run->nrows = run->nnames = 0;
    free(ld->name_slot);
    free(ld->row_slot);
    ld->cap = 64;
    ld->name_slot = sx_calloc(ld->cap, sizeof *ld->name_slot);
    ld->row_slot = sx_calloc(ld->cap, sizeof *ld->row_slot);
    SX_CHECK(ld->name_slot != NULL && ld->row_slot != NULL, SX_ERR_NOMEM, err, ld->path,
             "out of memory");
    if (run->rows == NULL) {
        ld->names_cap = 16;
        if (sx_big_reserve(&run->rows_mem, 16 * sizeof *run->rows, 0))
            run->rows = run->rows_mem.p;
        run->names = sx_calloc(ld->names_cap + 1, sizeof *run->names);
        SX_CHECK(run->names != NULL && run->rows != NULL, SX_ERR_NOMEM, err, ld->path,
                 "out of memory");
    }
out:
    return st;
}

/* Room for one more row and name; the hash tables at most half full. */
static enum sx_status tables_room(struct loader *ld) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    struct sx_run *run = ld->run;
    size_t *ns = NULL, *rs = NULL;

    /* (grown by half again when full: nothing moves while there is room) */
    SX_CHECK(sx_big_reserve(&run->rows_mem, (run->nrows + 1) * sizeof *run->rows,
                            run->nrows * sizeof *run->rows),
             SX_ERR_NOMEM, err, ld->path, "out of memory");
    run->rows = run->rows_mem.p;
    if (run->nnames == ld->names_cap) {
        char **p = sx_realloc(run->names, (2 * ld->names_cap + 1) * sizeof *p);
        SX_CHECK(p != NULL, SX_ERR_NOMEM, err, ld->path, "out of memory");
        run->names = p;
        ld->names_cap *= 2;
    }
    if (2 * (run->nrows + 1) < ld->cap && 2 * (run->nnames + 1) < ld->cap)
        goto out;
    const size_t cap = 2 * ld->cap;
    ns = sx_calloc(cap, sizeof *ns);
    rs = sx_calloc(cap, sizeof *rs);
    SX_CHECK(ns != NULL && rs != NULL, SX_ERR_NOMEM, err, ld->path, "out of memory");
    for (size_t k = 0; k < run->nnames; k++) {
        size_t h = (size_t)hash_bytes(run->names[k], strlen(run->names[k])) & (cap - 1);
        while (ns[h] != 0)
            h = (h + 1) & (cap - 1);
        ns[h] = k + 1;
    }
    for (size_t r = 0; r < run->nrows; r++) {
        size_t h = (size_t)hash_row(run->rows[r].region, run->rows[r].rank) & (cap - 1);
        while (rs[h] != 0)
            h = (h + 1) & (cap - 1);
        rs[h] = r + 1;
    }
    free(ld->name_slot);
    free(ld->row_slot);
    ld->name_slot = ns;
    ld->row_slot = rs;
    ns = rs = NULL;
    ld->cap = cap;
out:
    free(ns);
    free(rs);
    return st;
}

/* The region index of 'name', added to run->names when new. */
static enum sx_status name_index(struct loader *ld, const char *name, size_t len,
                                 uint32_t *index) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    struct sx_run *run = ld->run;
    size_t h = (size_t)hash_bytes(name, len) & (ld->cap - 1);

    while (ld->name_slot[h] != 0) {
        const char *s = run->names[ld->name_slot[h] - 1];
        if (strlen(s) == len && memcmp(s, name, len) == 0) {
            *index = (uint32_t)(ld->name_slot[h] - 1);
            goto out;
        }
        h = (h + 1) & (ld->cap - 1);
    }
    run->names[run->nnames] = sx_strndup(name, len);
    SX_CHECK(run->names[run->nnames] != NULL, SX_ERR_NOMEM, err, ld->path,
             "out of memory");
    ld->name_slot[h] = ++run->nnames;
    *index = (uint32_t)(run->nnames - 1);
out:
    return st;
}

/* The slot of (region, rank) in run->rows: an existing row or a new one at the end. */
static size_t row_index(struct loader *ld, uint32_t region, int64_t rank,
                        bool *existing) {
    struct sx_run *run = ld->run;
    size_t h = (size_t)hash_row(region, rank) & (ld->cap - 1);

    while (ld->row_slot[h] != 0) {
        const struct sx_row *r = &run->rows[ld->row_slot[h] - 1];
        if (r->region == region && r->rank == rank) {
            *existing = true;
            return ld->row_slot[h] - 1;
        }
        h = (h + 1) & (ld->cap - 1);
    }
    *existing = false;
    ld->row_slot[h] = run->nrows + 1;
    return run->nrows;
}

/*
 * Row 'row' (element 'i', named 'name') read: kept in the run (a repeated
 * (name, rank) overwrites the row, in its first place), or handed to the
 * caller's function. Takes what 'row' holds in every case.
 */
static enum sx_status commit_row(struct loader *ld, size_t i, struct sx_row *row,
                                 const char *name, size_t nlen) {
    enum sx_status st = SX_OK;
    struct sx_run *run = ld->run;
    bool existing = false;

    if (ld->keep == SX_JSON_KEEP_NONE || ld->keep == SX_JSON_KEEP_EVENTS) {
        if (ld->on_row != NULL)
            st = ld->on_row(ld->on_row_ctx, i, row, ld->err);
        goto out;
    }
    if ((st = tables_room(ld)) != SX_OK ||
        (st = name_index(ld, name, nlen, &row->region)) != SX_OK)
        goto out;
    row->file_row = i;
    if (ld->keep == SX_JSON_KEEP_INDEX)
        for (int c = 0; c < SX_NCOLS; c++) {
            free(row->col[c]);
            row->col[c] = NULL;
        }
    const size_t at = row_index(ld, row->region, row->rank, &existing);
    if (existing)
        sx_row_clear(&run->rows[at]);
    else
        run->nrows++;
    run->rows[at] = *row;
    *row = (struct sx_row){0};
out:
    sx_row_clear(row);
    return st;
}

static enum sx_status load_aggregate(struct loader *ld, const json_t *agg,
                                     struct sx_row *row) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;

    SX_CHECK(json_is_object(agg), SX_ERR_FORMAT, err, ld->path,
             "%s: %s: 'aggregate' must be an object, got %s", ld->path, ld->where,
             sx_json_kind(agg));
    SX_CHECK(sx_row_agg(row), SX_ERR_NOMEM, err, ld->path, "out of memory");
    for (void *it = json_object_iter((json_t *)agg); it != NULL;
         it = json_object_iter_next((json_t *)agg, it)) {
        const char *key = json_object_iter_key(it);
        const json_t *v = json_object_iter_value(it);
        int skey = -1;
        for (int k = 0; k < SX_AGG_NKEYS; k++)
            if (strcmp(key, sx_agg_keys[k]) == 0)
                skey = k;
        SX_CHECK(skey >= 0, SX_ERR_FORMAT, err, ld->path,
                 "%s: %s: unknown aggregate key '%s'", ld->path, ld->where, key);
        SX_CHECK(row->nagg < SX_AGG_MAX, SX_ERR_FORMAT, err, ld->path,
                 "%s: %s: too many aggregate keys", ld->path, ld->where);
        const char *digits = NULL;
        size_t ndigits = 0;
        uint64_t u = 0;
        const bool big = sx_json_big_int(v, &digits, &ndigits);
        double huge = 0.0;
        const bool is_u64 = big && sx_json_parse_u64(digits, ndigits, &u);
        SX_CHECK(json_is_number(v) || is_u64 ||
                     (big && sx_json_exact_double(digits, ndigits, &huge)),
                 SX_ERR_FORMAT, err, ld->path,
                 "%s: %s: aggregate '%s' must be a number, got %s", ld->path, ld->where,
                 key, sx_json_kind(v));
        struct sx_agg_field *f = &row->agg[row->nagg++];
        *f = (struct sx_agg_field){.key = (uint8_t)skey};
        if (big && !is_u64) {
            /* beyond 64 bits: an integral float the writer printed as int(v) (an m2
             * of long calls); it prints the same digits again */
            f->is_float = true;
            f->f = huge;
        } else if (big) {
            f->is_unsigned = true; /* gpu_count is a uint64 */
            f->u = u;
        } else if (json_is_integer(v)) {
            f->i = (int64_t)json_integer_value(v);
        } else {
            /* The writer prints int(v) when float(v).is_integer(); keep such values ints.
             */
            const double d = json_real_value(v);
            if (isfinite(d) && d == floor(d) && d >= -9223372036854775808.0 &&
                d < 9223372036854775808.0) {
                f->i = (int64_t)d;
            } else {
                f->is_float = true;
                f->f = d;
            }
        }
        if (skey == SX_AGG_COUNT && !f->is_float && f->i >= 0)
            row->count = (uint64_t)f->i;
    }
out:
    return st;
}

/* Optional event columns: document key -> model column. */
static const struct {
    const char *key;
    enum sx_col col;
} opt_cols[] = {{"gpu_durations_ns", SX_COL_GPU}, {"call_ids", SX_COL_CALL},
                {"parent_ids", SX_COL_PARENT},    {"thread_ids", SX_COL_THREAD},
                {"task_ids", SX_COL_TASK},        {"await_ns", SX_COL_AWAIT}};

static enum sx_status load_events(struct loader *ld, const json_t *obj,
                                  struct sx_row *row) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    struct sx_buf meta = {0};
    bool present = false;
    size_t n = 0, m = 0;

    st = get_i64s(ld, obj, "start_times_ns", &present, &row->col[SX_COL_START], &n);
    if (st != SX_OK)
        goto out;
    st = get_i64s(ld, obj, "end_times_ns", &present, &row->col[SX_COL_END], &m);
    if (st != SX_OK)
        goto out;
    SX_CHECK(m == n, SX_ERR_FORMAT, err, ld->path,
             "%s: %s: 'end_times_ns' has %zu values but 'start_times_ns' has %zu",
             ld->path, ld->where, m, n);
    row->count = n;
    row->cols = SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END);
    if (row->col[SX_COL_START] == NULL) {
        row->col[SX_COL_START] = sx_malloc(sizeof(int64_t));
        row->col[SX_COL_END] = sx_malloc(sizeof(int64_t));
        SX_CHECK(row->col[SX_COL_START] != NULL && row->col[SX_COL_END] != NULL,
                 SX_ERR_NOMEM, err, ld->path, "out of memory");
    }
    for (size_t k = 0; k < sizeof opt_cols / sizeof opt_cols[0]; k++) {
        st = get_i64s(ld, obj, opt_cols[k].key, &present, &row->col[opt_cols[k].col], &m);
        if (st != SX_OK)
            goto out;
        if (!present)
            continue;
        SX_CHECK(m == n, SX_ERR_FORMAT, err, ld->path,
                 "%s: %s: '%s' has %zu values but the row has %zu calls", ld->path,
                 ld->where, opt_cols[k].key, m, n);
        row->cols |= SX_COLBIT(opt_cols[k].col);
    }

    const json_t *em = json_object_get(obj, "event_metadata");
    if (em != NULL && !json_is_null(em)) {
        char what[240];
        snprintf(what, sizeof what, "%s: %s: 'event_metadata'", ld->path, ld->where);
        SX_CHECK(json_is_array(em), SX_ERR_FORMAT, err, ld->path,
                 "%s must be a list of objects, got %s", what, sx_json_kind(em));
        if (json_array_size(em) > 0) {
            SX_CHECK(json_array_size(em) == n, SX_ERR_FORMAT, err, ld->path,
                     "%s: %s: event metadata must match the call count (%zu entries, %zu "
                     "calls)",
                     ld->path, ld->where, json_array_size(em), n);
            st = sx_json_canon_list(em, &meta, &row->meta_any, ld->path, what, err);
            if (st != SX_OK)
                goto out;
            row->meta_text = meta.data;
            meta = (struct sx_buf){0};
        }
    }

    st = get_int(ld, obj, "exclusive_total_ns", &row->has_exclusive,
                 &row->exclusive_total);
out:
    sx_buf_free(&meta);
    return st;
}

static enum sx_status load_row(struct loader *ld, size_t i, const json_t *obj) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    struct sx_row row = {0};
    const json_t *name = NULL, *rank = NULL, *v = NULL;

    snprintf(ld->where, sizeof ld->where, "regions[%zu]", i);
    SX_CHECK(json_is_object(obj), SX_ERR_FORMAT, err, ld->path,
             "%s: %s must be an object, got %s", ld->path, ld->where, sx_json_kind(obj));
    name = json_object_get(obj, "name");
    rank = json_object_get(obj, "rank");
    SX_CHECK(name != NULL, SX_ERR_FORMAT, err, ld->path, "%s: %s has no 'name'", ld->path,
             ld->where);
    SX_CHECK(sx_json_is_str(name), SX_ERR_FORMAT, err, ld->path,
             "%s: %s: 'name' must be a string, got %s", ld->path, ld->where,
             sx_json_kind(name));
    SX_CHECK(rank != NULL, SX_ERR_FORMAT, err, ld->path, "%s: %s ('%.60s') has no 'rank'",
             ld->path, ld->where, json_string_value(name));
    SX_CHECK(sx_json_py_int(rank, &row.rank), SX_ERR_FORMAT, err, ld->path,
             "%s: %s ('%.60s'): 'rank' must be an integer, got %s", ld->path, ld->where,
             json_string_value(name), sx_json_kind(rank));
    snprintf(ld->where, sizeof ld->where, "regions[%zu] ('%.60s', rank %lld)", i,
             json_string_value(name), (long long)row.rank);

    SX_CHECK(memchr(json_string_value(name), '\0', json_string_length(name)) == NULL,
             SX_ERR_FORMAT, err, ld->path,
             "%s: %s: the name holds a NUL character (\\u0000), which the run cannot "
             "store",
             ld->path, ld->where);
    st = get_str(ld, obj, "source_file", NULL, &row.source_file);
    if (st != SX_OK)
        goto out;
    st = get_int(ld, obj, "source_lineno", &row.has_lineno, &row.source_lineno);
    if (st != SX_OK)
        goto out;
    st = get_str(ld, obj, "source_text", NULL, &row.source_text);
    if (st != SX_OK)
        goto out;
    st = get_strs(ld, obj, "tags", &row.tags, &row.ntags);
    if (st != SX_OK)
        goto out;

    row.event_data_available = true;
    v = json_object_get(obj, "aggregate");
    if (v != NULL && !json_is_null(v)) {
        row.is_aggregate = true;
        st = load_aggregate(ld, v, &row);
        if (st != SX_OK)
            goto out;
        v = json_object_get(obj, "event_data_available");
        if (v != NULL) {
            SX_CHECK(json_is_boolean(v), SX_ERR_FORMAT, err, ld->path,
                     "%s: %s: 'event_data_available' must be true or false, got %s",
                     ld->path, ld->where, sx_json_kind(v));
            row.event_data_available = json_is_true(v);
        }
    } else {
        st = load_events(ld, obj, &row);
        if (st != SX_OK)
            goto out;
    }

    st = commit_row(ld, i, &row, json_string_value(name), json_string_length(name));
out:
    sx_row_clear(&row);
    return st;
}

static enum sx_status load_regions(struct loader *ld, const json_t *regions) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    size_t n;

    SX_CHECK(regions == NULL || json_is_array(regions), SX_ERR_FORMAT, err, ld->path,
             "%s: 'regions' must be a list, got %s", ld->path, sx_json_kind(regions));
    n = regions != NULL ? json_array_size(regions) : 0;
    st = tables_init(ld);
    if (st != SX_OK)
        goto out;
    for (size_t i = 0; i < n; i++) {
        st = load_row(ld, i, json_array_get(regions, i));
        if (st != SX_OK)
            goto out;
    }
out:
    return st;
}

/* A rank key of threads/tasks/likwid/line_profile: Python's int(key). */
static enum sx_status rank_key(struct loader *ld, const char *section, const char *key,
                               int64_t *rank) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    json_t *s = json_string(key);

    SX_CHECK(s != NULL, SX_ERR_FORMAT, err, ld->path, "%s: %s: bad rank key", ld->path,
             section);
    SX_CHECK(sx_json_py_int(s, rank), SX_ERR_FORMAT, err, ld->path,
             "%s: %s: key '%.60s' is not a rank number", ld->path, section, key);
out:
    json_decref(s);
    return st;
}

/* A required int() field of a lane row. */
static enum sx_status lane_int(struct loader *ld, const json_t *obj, const char *key,
                               int64_t *out) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    const json_t *v = json_object_get(obj, key);

    SX_CHECK(v != NULL, SX_ERR_FORMAT, err, ld->path, "%s: %s has no '%s'", ld->path,
             ld->where, key);
    SX_CHECK(sx_json_py_int(v, out), SX_ERR_FORMAT, err, ld->path,
             "%s: %s: '%s' must be an integer, got %s", ld->path, ld->where, key,
             sx_json_kind(v));
out:
    return st;
}

static enum sx_status lane_str(struct loader *ld, const json_t *obj, const char *key,
                               char **out) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    const json_t *v = json_object_get(obj, key);

    SX_CHECK(v != NULL && !json_is_null(v), SX_ERR_FORMAT, err, ld->path,
             "%s: %s has no '%s'", ld->path, ld->where, key);
    st = get_str(ld, obj, key, NULL, out);
out:
    return st;
}

static enum sx_status load_thread(struct loader *ld, const json_t *o,
                                  struct sx_thread *t) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    const json_t *d = NULL;

    SX_CHECK(json_is_object(o), SX_ERR_FORMAT, err, ld->path,
             "%s: %s must be an object, got %s", ld->path, ld->where, sx_json_kind(o));
    if ((st = lane_int(ld, o, "index", &t->index)) != SX_OK ||
        (st = lane_str(ld, o, "name", &t->name)) != SX_OK ||
        (st = lane_int(ld, o, "ident", &t->ident)) != SX_OK ||
        (st = lane_int(ld, o, "native_id", &t->native_id)) != SX_OK ||
        (st = lane_int(ld, o, "start_ns", &t->start_ns)) != SX_OK ||
        (st = lane_int(ld, o, "end_ns", &t->end_ns)) != SX_OK ||
        (st = lane_int(ld, o, "cpu_ns", &t->cpu_ns)) != SX_OK)
        goto out;
    d = json_object_get(o, "daemon");
    SX_CHECK(d != NULL, SX_ERR_FORMAT, err, ld->path, "%s: %s has no 'daemon'", ld->path,
             ld->where);
    if (json_is_boolean(d)) {
        t->daemon = json_is_true(d);
    } else {
        int64_t x = 0;
        SX_CHECK(sx_json_py_int(d, &x), SX_ERR_FORMAT, err, ld->path,
                 "%s: %s: 'daemon' must be true or false, got %s", ld->path, ld->where,
                 sx_json_kind(d));
        t->daemon = x != 0;
    }
out:
    return st;
}

static enum sx_status load_task(struct loader *ld, const json_t *o, struct sx_task *t) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;

    SX_CHECK(json_is_object(o), SX_ERR_FORMAT, err, ld->path,
             "%s: %s must be an object, got %s", ld->path, ld->where, sx_json_kind(o));
    if ((st = lane_int(ld, o, "index", &t->index)) != SX_OK ||
        (st = lane_str(ld, o, "kind", &t->kind)) != SX_OK ||
        (st = lane_str(ld, o, "name", &t->name)) != SX_OK ||
        (st = lane_str(ld, o, "coro_name", &t->coro_name)) != SX_OK ||
        (st = lane_int(ld, o, "thread_index", &t->thread_index)) != SX_OK ||
        (st = lane_int(ld, o, "created_ns", &t->created_ns)) != SX_OK ||
        (st = lane_int(ld, o, "done_ns", &t->done_ns)) != SX_OK ||
        (st = lane_int(ld, o, "steps", &t->steps)) != SX_OK ||
        (st = lane_int(ld, o, "running_ns", &t->running_ns)) != SX_OK ||
        (st = lane_int(ld, o, "suspended_ns", &t->suspended_ns)) != SX_OK)
        goto out;
out:
    return st;
}

/* threads / tasks: {"<rank>": [row, ...], ...} */
static enum sx_status load_lanes(struct loader *ld, const json_t *sec,
                                 const char *section, bool tasks,
                                 struct sx_lane_rank **out, size_t *nout) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    struct sx_lane_rank *lanes = NULL;
    size_t n = 0;

    SX_CHECK(json_is_object(sec), SX_ERR_FORMAT, err, ld->path,
             "%s: '%s' must be an object, got %s", ld->path, section, sx_json_kind(sec));
    lanes = sx_calloc(json_object_size(sec) + 1, sizeof *lanes);
    SX_CHECK(lanes != NULL, SX_ERR_NOMEM, err, ld->path, "out of memory");
    for (void *it = json_object_iter((json_t *)sec); it != NULL;
         it = json_object_iter_next((json_t *)sec, it)) {
        const json_t *rows = json_object_iter_value(it);
        struct sx_lane_rank *lr = &lanes[n++];
        st = rank_key(ld, section, json_object_iter_key(it), &lr->rank);
        if (st != SX_OK)
            goto out;
        SX_CHECK(json_is_array(rows), SX_ERR_FORMAT, err, ld->path,
                 "%s: %s[\"%lld\"] must be a list, got %s", ld->path, section,
                 (long long)lr->rank, sx_json_kind(rows));
        const size_t m = json_array_size(rows);
        if (tasks)
            lr->tasks = sx_calloc(m + 1, sizeof *lr->tasks);
        else
            lr->threads = sx_calloc(m + 1, sizeof *lr->threads);
        SX_CHECK(lr->tasks != NULL || lr->threads != NULL, SX_ERR_NOMEM, err, ld->path,
                 "out of memory");
        for (size_t j = 0; j < m; j++) {
            snprintf(ld->where, sizeof ld->where, "%s[\"%lld\"][%zu]", section,
                     (long long)lr->rank, j);
            lr->n = j + 1; /* so a partly filled row is freed */
            st = tasks ? load_task(ld, json_array_get(rows, j), &lr->tasks[j])
                       : load_thread(ld, json_array_get(rows, j), &lr->threads[j]);
            if (st != SX_OK)
                goto out;
        }
    }
out:
    *out = lanes;
    *nout = n;
    return st;
}

/* events/metrics: a list of rows (or a flat list) reshaped to (rows, cols). */
static enum sx_status load_matrix(struct loader *ld, const json_t *obj, const char *key,
                                  size_t rows, size_t cols, struct sx_matrix *m) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    const json_t *v = json_object_get(obj, key);
    size_t total = 0, k = 0;

    bool rect = true;

    if (v != NULL) {
        SX_CHECK(json_is_array(v), SX_ERR_FORMAT, err, ld->path,
                 "%s: %s: '%s' must be a list, got %s", ld->path, ld->where, key,
                 sx_json_kind(v));
        for (size_t i = 0; i < json_array_size(v); i++) {
            const json_t *r = json_array_get(v, i);
            total += json_is_array(r) ? json_array_size(r) : 1;
            rect = rect && json_is_array(r) &&
                   json_array_size(r) == json_array_size(json_array_get(v, 0));
        }
        /*
         * Python reshapes to (names, len(cpus)), so it cannot read back a
         * marker_api entry (no cpus, one thread) nor a matrix stored with another
         * shape, though the exporter wrote both. A rectangular list of lists keeps
         * its own shape here, so nothing the exporter writes is refused; other
         * nestings are reshaped as Python does.
         */
        if (json_array_size(v) == 0) {
            rows = cols = 0;
        } else if (rect) {
            rows = json_array_size(v);
            cols = json_array_size(json_array_get(v, 0));
        }
    }
    m->rows = rows;
    m->cols = cols;
    SX_CHECK(total == rows * cols, SX_ERR_FORMAT, err, ld->path,
             "%s: %s: '%s' holds %zu values, cannot reshape to (%zu, %zu)", ld->path,
             ld->where, key, total, rows, cols);
    m->v = sx_malloc((total + 1) * sizeof *m->v);
    SX_CHECK(m->v != NULL, SX_ERR_NOMEM, err, ld->path, "out of memory");
    for (size_t i = 0; v != NULL && i < json_array_size(v); i++) {
        const json_t *r = json_array_get(v, i);
        const size_t nr = json_is_array(r) ? json_array_size(r) : 1;
        for (size_t j = 0; j < nr; j++) {
            const json_t *x = json_is_array(r) ? json_array_get(r, j) : r;
            SX_CHECK(sx_json_num_or_null(x, &m->v[k]), SX_ERR_FORMAT, err, ld->path,
                     "%s: %s: '%s' values must be numbers or null, got %s", ld->path,
                     ld->where, key, sx_json_kind(x));
            k++;
        }
    }
out:
    return st;
}

static enum sx_status load_likwid_entry(struct loader *ld, const char *key,
                                        const json_t *o, struct sx_likwid_entry *e) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    bool present = false, has_gid = false;

    SX_CHECK(json_is_object(o), SX_ERR_FORMAT, err, ld->path,
             "%s: %s must be an object, got %s", ld->path, ld->where, sx_json_kind(o));
    e->group_id = -1;
    if ((st = get_str(ld, o, "tag", key, &e->tag)) != SX_OK ||
        (st = get_int(ld, o, "group_id", &has_gid, &e->group_id)) != SX_OK ||
        (st = get_str(ld, o, "group_name", "", &e->group_name)) != SX_OK ||
        (st = get_i64s(ld, o, "cpus", &present, &e->cpus, &e->ncpus)) != SX_OK ||
        (st = get_f64s(ld, o, "times", &e->times, &e->ntimes)) != SX_OK ||
        (st = get_i64s(ld, o, "call_counts", &present, &e->call_counts,
                       &e->ncall_counts)) != SX_OK ||
        (st = get_strs(ld, o, "event_names", &e->event_names, &e->nevent_names)) !=
            SX_OK ||
        (st = get_strs(ld, o, "counter_names", &e->counter_names, &e->ncounter_names)) !=
            SX_OK ||
        (st = get_strs(ld, o, "metric_names", &e->metric_names, &e->nmetric_names)) !=
            SX_OK ||
        (st = load_matrix(ld, o, "events", e->nevent_names, e->ncpus, &e->events)) !=
            SX_OK ||
        (st = load_matrix(ld, o, "metrics", e->nmetric_names, e->ncpus, &e->metrics)) !=
            SX_OK ||
        (st = get_str(ld, o, "source", "", &e->source)) != SX_OK)
        goto out;
    if (!has_gid)
        e->group_id = -1;
out:
    return st;
}

static int cmp_likwid_tag(const void *a, const void *b) {
    const struct sx_likwid_entry *x = a, *y = b;
    return strcmp(x->tag, y->tag);
}

/* likwid: {"<rank>": {"<tag>": entry, ...}, ...} */
static enum sx_status load_likwid(struct loader *ld, const json_t *sec) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    struct sx_run *run = ld->run;

    SX_CHECK(json_is_object(sec), SX_ERR_FORMAT, err, ld->path,
             "%s: 'likwid' must be an object, got %s", ld->path, sx_json_kind(sec));
    run->likwid = sx_calloc(json_object_size(sec) + 1, sizeof *run->likwid);
    SX_CHECK(run->likwid != NULL, SX_ERR_NOMEM, err, ld->path, "out of memory");
    for (void *it = json_object_iter((json_t *)sec); it != NULL;
         it = json_object_iter_next((json_t *)sec, it)) {
        const json_t *tags = json_object_iter_value(it);
        struct sx_likwid_rank *lr = &run->likwid[run->nlikwid++];
        st = rank_key(ld, "likwid", json_object_iter_key(it), &lr->rank);
        if (st != SX_OK)
            goto out;
        SX_CHECK(json_is_object(tags), SX_ERR_FORMAT, err, ld->path,
                 "%s: likwid[\"%lld\"] must be an object, got %s", ld->path,
                 (long long)lr->rank, sx_json_kind(tags));
        lr->entries = sx_calloc(json_object_size(tags) + 1, sizeof *lr->entries);
        SX_CHECK(lr->entries != NULL, SX_ERR_NOMEM, err, ld->path, "out of memory");
        for (void *jt = json_object_iter((json_t *)tags); jt != NULL;
             jt = json_object_iter_next((json_t *)tags, jt)) {
            snprintf(ld->where, sizeof ld->where, "likwid[\"%lld\"][\"%.60s\"]",
                     (long long)lr->rank, json_object_iter_key(jt));
            st = load_likwid_entry(ld, json_object_iter_key(jt),
                                   json_object_iter_value(jt), &lr->entries[lr->n++]);
            if (st != SX_OK)
                goto out;
        }
        qsort(lr->entries, lr->n, sizeof *lr->entries, cmp_likwid_tag);
    }
out:
    return st;
}

static enum sx_status load_lp_record(struct loader *ld, const json_t *o,
                                     struct sx_lp_record *r) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    bool present = false;
    const json_t *u = NULL;

    SX_CHECK(json_is_object(o), SX_ERR_FORMAT, err, ld->path,
             "%s: %s must be an object, got %s", ld->path, ld->where, sx_json_kind(o));
    if ((st = get_str(ld, o, "region", "", &r->region)) != SX_OK ||
        (st = get_str(ld, o, "filename", "", &r->filename)) != SX_OK ||
        (st = get_str(ld, o, "function", "", &r->function)) != SX_OK ||
        (st = get_int(ld, o, "first_lineno", &present, &r->first_lineno)) != SX_OK ||
        (st = get_i64s(ld, o, "line_numbers", &present, &r->line_numbers,
                       &r->nline_numbers)) != SX_OK ||
        (st = get_i64s(ld, o, "hits", &present, &r->hits, &r->nhits)) != SX_OK ||
        (st = get_f64s(ld, o, "times", &r->times, &r->ntimes)) != SX_OK)
        goto out;
    r->unit = 1.0;
    u = json_object_get(o, "unit");
    if (u != NULL) {
        SX_CHECK(json_is_number(u), SX_ERR_FORMAT, err, ld->path,
                 "%s: %s: 'unit' must be a number, got %s", ld->path, ld->where,
                 sx_json_kind(u));
        r->unit = json_number_value(u);
    }
out:
    return st;
}

/* line_profile: {"<rank>": [record, ...], ...} */
static enum sx_status load_line_profile(struct loader *ld, const json_t *sec) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    struct sx_run *run = ld->run;

    SX_CHECK(json_is_object(sec), SX_ERR_FORMAT, err, ld->path,
             "%s: 'line_profile' must be an object, got %s", ld->path, sx_json_kind(sec));
    run->line_profile = sx_calloc(json_object_size(sec) + 1, sizeof *run->line_profile);
    SX_CHECK(run->line_profile != NULL, SX_ERR_NOMEM, err, ld->path, "out of memory");
    for (void *it = json_object_iter((json_t *)sec); it != NULL;
         it = json_object_iter_next((json_t *)sec, it)) {
        const json_t *recs = json_object_iter_value(it);
        struct sx_lp_rank *lr = &run->line_profile[run->nline_profile++];
        st = rank_key(ld, "line_profile", json_object_iter_key(it), &lr->rank);
        if (st != SX_OK)
            goto out;
        SX_CHECK(json_is_array(recs), SX_ERR_FORMAT, err, ld->path,
                 "%s: line_profile[\"%lld\"] must be a list, got %s", ld->path,
                 (long long)lr->rank, sx_json_kind(recs));
        lr->records = sx_calloc(json_array_size(recs) + 1, sizeof *lr->records);
        SX_CHECK(lr->records != NULL, SX_ERR_NOMEM, err, ld->path, "out of memory");
        for (size_t j = 0; j < json_array_size(recs); j++) {
            snprintf(ld->where, sizeof ld->where, "line_profile[\"%lld\"][%zu]",
                     (long long)lr->rank, j);
            st = load_lp_record(ld, json_array_get(recs, j), &lr->records[lr->n++]);
            if (st != SX_OK)
                goto out;
        }
    }
out:
    return st;
}

/* The format and version keys: whether this is a profile this reader reads. */
static enum sx_status check_format(struct loader *ld, const json_t *doc) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    const json_t *v = NULL;
    int64_t version = 0;

    v = json_object_get(doc, "format");
    SX_CHECK(json_is_object(doc) && sx_json_is_str(v) &&
                 strcmp(json_string_value(v), SX_FORMAT_NAME) == 0 &&
                 json_string_length(v) == strlen(SX_FORMAT_NAME),
             SX_ERR_FORMAT, err, ld->path,
             "%s is not a scope-profiler JSON profile (written by `scope-profiler export "
             "json` or `-o <name>.json`).",
             ld->path);
    v = json_object_get(doc, "format_version");
    SX_CHECK(v == NULL || sx_json_py_int(v, &version), SX_ERR_FORMAT, err, ld->path,
             "%s: 'format_version' must be an integer, got %s", ld->path,
             v != NULL ? sx_json_kind(v) : "nothing");
    SX_CHECK(version <= SX_FORMAT_VERSION, SX_ERR_UNSUPPORTED, err, ld->path,
             "%s uses JSON profile format version %lld; this package supports versions "
             "through %d. Upgrade scope-profiler to read this file.",
             ld->path, (long long)version, SX_FORMAT_VERSION);
out:
    return st;
}

static enum sx_status load_document(struct loader *ld, const json_t *doc) {
    enum sx_status st = SX_OK;
    struct sx_error *err = ld->err;
    struct sx_run *run = ld->run;
    const json_t *v = NULL;
    bool present = false;

    if (!ld->part) {
        st = check_format(ld, doc);
        if (st != SX_OK)
            goto out;
        ld->format_checked = true;
    }
    if (!ld->streamed) {
        st = load_regions(ld, json_object_get(doc, "regions"));
        if (st != SX_OK)
            goto out;
    }

    v = json_object_get(doc, "metadata");
    if (v != NULL) {
        SX_CHECK(json_is_object(v), SX_ERR_FORMAT, err, ld->path,
                 "%s: 'metadata' must be an object, got %s", ld->path, sx_json_kind(v));
        sx_value_free(&run->metadata);
        st = sx_json_value_of(v, &run->metadata, ld->path, ld->err);
        if (st != SX_OK)
            goto out;
    }
    snprintf(ld->where, sizeof ld->where, "the document");
    st = get_int(ld, doc, "num_ranks", &present, &run->num_ranks);
    if (st != SX_OK)
        goto out;
    if (!present)
        run->num_ranks = 0;
    run->event_data_available = true;
    v = json_object_get(doc, "event_data_available");
    if (v != NULL) {
        SX_CHECK(json_is_boolean(v), SX_ERR_FORMAT, err, ld->path,
                 "%s: 'event_data_available' must be true or false, got %s", ld->path,
                 sx_json_kind(v));
        run->event_data_available = json_is_true(v);
    }

    if ((v = json_object_get(doc, "threads")) != NULL) {
        st = load_lanes(ld, v, "threads", false, &run->threads, &run->nthreads);
        if (st != SX_OK)
            goto out;
        run->has_threads = run->nthreads > 0;
    }
    if ((v = json_object_get(doc, "tasks")) != NULL) {
        st = load_lanes(ld, v, "tasks", true, &run->tasks, &run->ntasks);
        if (st != SX_OK)
            goto out;
        run->has_tasks = run->ntasks > 0;
    }
    if ((v = json_object_get(doc, "likwid")) != NULL) {
        st = load_likwid(ld, v);
        if (st != SX_OK)
            goto out;
    }
    if ((v = json_object_get(doc, "line_profile")) != NULL) {
        st = load_line_profile(ld, v);
        if (st != SX_OK)
            goto out;
    }
out:
    return st;
}

/* ------------------------------------------------------------------ */
/* The document read in one pass (json_stream.h)                      */

static enum sx_status on_value(void *ctx, const char *key, size_t klen, const char *text,
                               size_t n, uint64_t off, struct sx_error *err) {
    struct loader *ld = ctx;
    enum sx_status st = SX_OK;
    json_t *v = NULL;
    const struct sx_json_at at = {ld->path, off};

    st = sx_json_parse_at(text, n, &v, ld->path, ld->path, true, &at, err);
    if (st != SX_OK)
        goto out;
    if (key == NULL) { /* not an object: what the whole document is */
        st = load_document(ld, v);
        goto out;
    }
    SX_CHECK(json_object_setn_new(ld->top, key, klen, v) == 0, SX_ERR_NOMEM, err,
             ld->path, "out of memory");
    v = NULL;
out:
    json_decref(v);
    return st;
}

static enum sx_status on_regions(void *ctx, struct sx_error *err) {
    struct loader *ld = ctx;
    enum sx_status st = SX_OK;

    (void)err;
    /* a document that says what it is before its rows: refuse another early */
    if (json_object_get(ld->top, "format") != NULL && !ld->part) {
        if ((st = check_format(ld, ld->top)) != SX_OK)
            goto out;
        ld->format_checked = true;
    }
    json_object_del(ld->top, "regions"); /* a repeated key: the last value counts */
    ld->streamed = true;
    ld->nelements = 0;
    st = tables_init(ld);
out:
    return st;
}

static enum sx_status on_element(void *ctx, size_t i, struct sx_row *row,
                                 const char *name, size_t nlen, const char *text,
                                 size_t n, uint64_t off, struct sx_error *err) {
    struct loader *ld = ctx;
    enum sx_status st = SX_OK;
    json_t *obj = NULL;
    const struct sx_json_at at = {ld->path, off};

    ld->nelements = i + 1;
    if (row != NULL) {
        st = commit_row(ld, i, row, name, nlen);
        goto out;
    }
    st = sx_json_parse_at(text, n, &obj, ld->path, ld->path, true, &at, err);
    if (st != SX_OK)
        goto out;
    st = load_row(ld, i, obj);
out:
    json_decref(obj);
    return st;
}

static enum sx_status on_end(void *ctx, struct sx_error *err) {
    struct loader *ld = ctx;
    (void)err;
    return load_document(ld, ld->top);
}

static const struct sx_jstream_ops load_ops = {
    .value = on_value, .regions = on_regions, .element = on_element, .end = on_end};
/* the index of a two-pass read (SX_JSON_KEEP_INDEX): the rows without their events */
static const struct sx_jstream_ops index_ops = {.value = on_value,
                                                .regions = on_regions,
                                                .element = on_element,
                                                .end = on_end,
                                                .no_events = true};
/* the rows' events alone (SX_JSON_KEEP_EVENTS): their event metadata not gathered, their
 * columns the reader's (on_row sees each row before the reader reads on; commit_row
 * clears it after) */
static const struct sx_jstream_ops events_ops = {.value = on_value,
                                                 .regions = on_regions,
                                                 .element = on_element,
                                                 .end = on_end,
                                                 .no_meta = true,
                                                 .lend_events = true};
/* a check that keeps no row: the fast path need not copy columns out */
static const struct sx_jstream_ops check_ops = {.value = on_value,
                                                .regions = on_regions,
                                                .element = on_element,
                                                .end = on_end,
                                                .no_columns = true};

enum sx_status sx_json_load_ex(const char *path, enum sx_json_keep keep,
                               sx_json_row_fn on_row, void *on_row_ctx,
                               struct sx_run **run_out, size_t *nelements,
                               struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_run *run = NULL;
    struct loader ld = {.path = path, .err = err, .keep = keep};

    *run_out = NULL;
    run = sx_run_new();
    SX_CHECK(run != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    run->path = sx_strdup(path);
    SX_CHECK(run->path != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    run->schema = 0;
    run->layout = SX_LAYOUT_JSON;
    ld.run = run;
    ld.on_row = on_row;
    ld.on_row_ctx = on_row_ctx;
    ld.top = json_object();
    SX_CHECK(ld.top != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    st = sx_jstream_read(path,
                         keep == SX_JSON_KEEP_NONE && on_row == NULL ? &check_ops
                         : keep == SX_JSON_KEEP_INDEX                ? &index_ops
                         : keep == SX_JSON_KEEP_EVENTS               ? &events_ops
                                                                     : &load_ops,
                         &ld, err);
    if (st != SX_OK)
        goto out;
    if (nelements != NULL)
        *nelements = ld.nelements;
    *run_out = run;
    run = NULL;
out:
    sx_run_free(run);
    free(ld.row_slot);
    free(ld.name_slot);
    json_decref(ld.top);
    return st;
}

enum sx_status sx_json_check_part(const char *path, uint64_t from, uint64_t to,
                                  size_t first_index, uint64_t *next, size_t *count,
                                  bool *format_checked, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_run *run = NULL;
    struct loader ld = {.path = path, .err = err, .keep = SX_JSON_KEEP_NONE};

    *format_checked = false;
    run = sx_run_new();
    SX_CHECK(run != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    ld.run = run;
    ld.part = ld.streamed = from > 0;
    ld.top = json_object();
    SX_CHECK(ld.top != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    st = sx_jstream_read_part(path, from, to, first_index, &check_ops, &ld, next, count,
                              err);
    *format_checked = ld.format_checked;
out:
    sx_run_free(run);
    free(ld.row_slot);
    free(ld.name_slot);
    json_decref(ld.top);
    return st;
}

enum sx_status sx_json_load(const char *path, struct sx_run **run_out,
                            struct sx_error *err) {
    return sx_json_load_ex(path, SX_JSON_KEEP_ALL, NULL, NULL, run_out, NULL, err);
}

/* ------------------------------------------------------------------ */
/* A profile checked, as its text with its event columns apart (sx_load) */

struct sx_loaded {
    struct sx_buf text;
    struct sx_buf values, ends; /* int64 each */
    struct sx_buf metas;
    struct sx_buf slots; /* int64 pairs */
};

enum sx_status sx_load(const char *path, struct sx_loaded **out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_run *run = NULL;
    struct sx_loaded *l = NULL;
    struct loader ld = {.path = path, .err = err, .keep = SX_JSON_KEEP_NONE};

    sx_error_clear(err);
    SX_CHECK(out != NULL && path != NULL, SX_ERR_USAGE, err, "", "no input file given");
    *out = NULL;
    l = sx_calloc(1, sizeof *l);
    run = sx_run_new();
    ld.top = json_object();
    SX_CHECK(l != NULL && run != NULL && ld.top != NULL, SX_ERR_NOMEM, err, path,
             "out of memory");
    ld.run = run;
    st = sx_jstream_copy(path, &check_ops, &ld, &l->text, &l->values, &l->ends, &l->metas,
                         &l->slots, err);
    if (st != SX_OK)
        goto out;
    sx_buf_putc(&l->text, '\0');
    sx_buf_putc(&l->metas, '\0');
    SX_CHECK(!l->text.failed && !l->metas.failed, SX_ERR_NOMEM, err, path,
             "out of memory");
    l->text.len--;
    l->metas.len--;
    *out = l;
    l = NULL;
out:
    sx_loaded_free(l);
    sx_run_free(run);
    free(ld.row_slot);
    free(ld.name_slot);
    json_decref(ld.top);
    return st;
}

const char *sx_loaded_text(const struct sx_loaded *l, size_t *len) {
    *len = l->text.len;
    return l->text.data;
}

const char *sx_loaded_metadata(const struct sx_loaded *l, size_t *len) {
    *len = l->metas.len;
    return l->metas.data;
}

const int64_t *sx_loaded_values(const struct sx_loaded *l, size_t *n) {
    *n = l->values.len / sizeof(int64_t);
    return (const int64_t *)(const void *)l->values.data;
}

const int64_t *sx_loaded_slots(const struct sx_loaded *l, size_t *n) {
    *n = l->slots.len / (2 * sizeof(int64_t));
    return (const int64_t *)(const void *)l->slots.data;
}

const int64_t *sx_loaded_ends(const struct sx_loaded *l, size_t *ncolumns) {
    *ncolumns = l->ends.len / sizeof(int64_t) - 1;
    return (const int64_t *)(const void *)l->ends.data;
}

void sx_loaded_free(struct sx_loaded *l) {
    if (l == NULL)
        return;
    sx_buf_free(&l->text);
    sx_buf_free(&l->values);
    sx_buf_free(&l->ends);
    sx_buf_free(&l->metas);
    sx_buf_free(&l->slots);
    free(l);
}
