/* run_compare.c - are two run models "the same run" (read_h5 vs read_json)? */
#include "run_compare.h"

#include "json_value.h"
#include "run.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Record the first difference in 'why' and return false. */
static bool differ(char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool differ(char *why, size_t why_len, const char *fmt, ...) {
    if (why != NULL && why_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return false;
}

static bool str_eq(const char *a, const char *b) {
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

static const char *show(const char *s) { return s != NULL ? s : "(none)"; }

/* Doubles as the export sees them: every non-finite value becomes null (NaN). */
static bool f64_eq(double a, double b) {
    if (!isfinite(a) || !isfinite(b))
        return !isfinite(a) && !isfinite(b) && (isnan(a) || isnan(b) || a == b);
    return a == b;
}

static bool f64s_eq(const double *a, size_t na, const double *b, size_t nb, size_t *at) {
    if (na != nb) {
        *at = SIZE_MAX;
        return false;
    }
    for (size_t i = 0; i < na; i++)
        if (!f64_eq(a[i], b[i])) {
            *at = i;
            return false;
        }
    return true;
}

static bool i64s_eq(const int64_t *a, size_t na, const int64_t *b, size_t nb,
                    size_t *at) {
    if (na != nb) {
        *at = SIZE_MAX;
        return false;
    }
    for (size_t i = 0; i < na; i++)
        if (a[i] != b[i]) {
            *at = i;
            return false;
        }
    return true;
}

static bool strs_eq(char *const *a, size_t na, char *const *b, size_t nb) {
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (!str_eq(a[i], b[i]))
            return false;
    return true;
}

/* Metadata equality: a non-finite float is written as null, so it equals null. */
static bool meta_eq(const struct sx_value *a, const struct sx_value *b) {
    const bool a_null =
        a->kind == SX_V_NULL || (a->kind == SX_V_FLOAT && !isfinite(a->u.f));
    const bool b_null =
        b->kind == SX_V_NULL || (b->kind == SX_V_FLOAT && !isfinite(b->u.f));

    if (a_null || b_null)
        return a_null && b_null;
    if (a->kind != b->kind)
        return false;
    if (a->kind == SX_V_ARRAY) {
        if (a->u.arr.n != b->u.arr.n)
            return false;
        for (size_t i = 0; i < a->u.arr.n; i++)
            if (!meta_eq(&a->u.arr.items[i], &b->u.arr.items[i]))
                return false;
        return true;
    }
    if (a->kind == SX_V_OBJECT) {
        if (a->u.obj.n != b->u.obj.n)
            return false;
        for (size_t i = 0; i < a->u.obj.n; i++) {
            const struct sx_member *x = &a->u.obj.items[i], *y = &b->u.obj.items[i];
            if (x->key_len != y->key_len || memcmp(x->key, y->key, x->key_len) != 0 ||
                !meta_eq(&x->value, &y->value))
                return false;
        }
        return true;
    }
    return sx_value_equal(a, b);
}

/* Where metadata first differs: the key at the top level. */
static const char *meta_diff_key(const struct sx_value *a, const struct sx_value *b) {
    if (a->kind != SX_V_OBJECT || b->kind != SX_V_OBJECT)
        return "(top level)";
    for (size_t i = 0; i < a->u.obj.n && i < b->u.obj.n; i++) {
        const struct sx_member *x = &a->u.obj.items[i], *y = &b->u.obj.items[i];
        if (strcmp(x->key, y->key) != 0 || !meta_eq(&x->value, &y->value))
            return x->key;
    }
    return "(number of keys)";
}

/* The value of an aggregate field as the writer prints it: int when integral. */
static bool agg_eq(const struct sx_agg_field *x, const struct sx_agg_field *y) {
    const double fx = x->is_float ? x->f : x->is_unsigned ? (double)x->u : (double)x->i;
    const double fy = y->is_float ? y->f : y->is_unsigned ? (double)y->u : (double)y->i;

    if (!x->is_float && !y->is_float) {
        /* uint64 (HDF5 counts) and int64 (document) hold the same integer or not */
        if (x->is_unsigned && y->is_unsigned)
            return x->u == y->u;
        if (x->is_unsigned)
            return y->i >= 0 && (uint64_t)y->i == x->u;
        if (y->is_unsigned)
            return x->i >= 0 && (uint64_t)x->i == y->u;
        return x->i == y->i;
    }
    return f64_eq(fx, fy);
}

static void agg_show(char *out, size_t n, const struct sx_agg_field *f) {
    if (f->is_float)
        snprintf(out, n, "%.17g", f->f);
    else if (f->is_unsigned)
        snprintf(out, n, "%" PRIu64, f->u);
    else
        snprintf(out, n, "%" PRId64, f->i);
}

static const char *const col_names[SX_NCOLS] = {
    "start_times_ns", "end_times_ns", "gpu_durations_ns", "call_ids",
    "parent_ids",     "thread_ids",   "task_ids",         "await_ns"};

static bool rows_eq(const struct sx_run *a, const struct sx_row *x,
                    const struct sx_row *y, char *why, size_t why_len) {
    const char *name = a->names[x->region];
    const long long rank = (long long)x->rank;
    char va[48], vb[48];
    size_t at = 0;

    if (!str_eq(x->source_file, y->source_file))
        return differ(why, why_len, "row ('%s', rank %lld): source_file '%s' != '%s'",
                      name, rank, show(x->source_file), show(y->source_file));
    if (x->has_lineno != y->has_lineno ||
        (x->has_lineno && x->source_lineno != y->source_lineno))
        return differ(why, why_len, "row ('%s', rank %lld): source_lineno %lld != %lld",
                      name, rank, x->has_lineno ? (long long)x->source_lineno : -1LL,
                      y->has_lineno ? (long long)y->source_lineno : -1LL);
    if (!str_eq(x->source_text, y->source_text))
        return differ(why, why_len, "row ('%s', rank %lld): source_text differs", name,
                      rank);
    if (!strs_eq(x->tags, x->ntags, y->tags, y->ntags))
        return differ(why, why_len,
                      "row ('%s', rank %lld): tags differ (%zu vs %zu tags)", name, rank,
                      x->ntags, y->ntags);
    if (x->is_aggregate != y->is_aggregate)
        return differ(why, why_len,
                      "row ('%s', rank %lld): aggregate row on one side only", name,
                      rank);
    if (x->is_aggregate) {
        if (x->event_data_available != y->event_data_available)
            return differ(why, why_len,
                          "row ('%s', rank %lld): event_data_available %d != %d", name,
                          rank, x->event_data_available, y->event_data_available);
        if (x->nagg != y->nagg)
            return differ(why, why_len,
                          "row ('%s', rank %lld): %zu aggregate keys != %zu", name, rank,
                          x->nagg, y->nagg);
        for (size_t k = 0; k < x->nagg; k++) {
            const struct sx_agg_field *fx = &x->agg[k], *fy = &y->agg[k];
            if (fx->key != fy->key)
                return differ(why, why_len,
                              "row ('%s', rank %lld): aggregate key %zu '%s' != '%s'",
                              name, rank, k, sx_agg_keys[fx->key], sx_agg_keys[fy->key]);
            if (!agg_eq(fx, fy)) {
                agg_show(va, sizeof va, fx);
                agg_show(vb, sizeof vb, fy);
                return differ(why, why_len,
                              "row ('%s', rank %lld): aggregate '%s' %s != %s", name,
                              rank, sx_agg_keys[fx->key], va, vb);
            }
        }
        return true;
    }
    if (x->count != y->count)
        return differ(why, why_len, "row ('%s', rank %lld): %llu calls != %llu", name,
                      rank, (unsigned long long)x->count, (unsigned long long)y->count);
    if (x->cols != y->cols)
        return differ(why, why_len, "row ('%s', rank %lld): event columns 0x%x != 0x%x",
                      name, rank, x->cols, y->cols);
    for (int c = 0; c < SX_NCOLS; c++) {
        if (!(x->cols & SX_COLBIT(c)) || x->count == 0)
            continue;
        if (x->col[c] == NULL || y->col[c] == NULL)
            return differ(why, why_len, "row ('%s', rank %lld): '%s' not loaded", name,
                          rank, col_names[c]);
        if (!i64s_eq(x->col[c], x->count, y->col[c], y->count, &at))
            return differ(why, why_len,
                          "row ('%s', rank %lld): '%s'[%zu] %" PRId64 " != %" PRId64,
                          name, rank, col_names[c], at, x->col[c][at], y->col[c][at]);
    }
    /* All-empty metadata dicts are not exported: only rows with content compare. */
    if (x->meta_any != y->meta_any)
        return differ(why, why_len,
                      "row ('%s', rank %lld): event_metadata on one side only", name,
                      rank);
    if (x->meta_any && !str_eq(x->meta_text, y->meta_text))
        return differ(why, why_len, "row ('%s', rank %lld): event_metadata differs", name,
                      rank);
    if (x->has_exclusive != y->has_exclusive ||
        (x->has_exclusive && x->exclusive_total != y->exclusive_total))
        return differ(why, why_len,
                      "row ('%s', rank %lld): exclusive_total_ns %lld != %lld", name,
                      rank, x->has_exclusive ? (long long)x->exclusive_total : -1LL,
                      y->has_exclusive ? (long long)y->exclusive_total : -1LL);
    return true;
}

/* Rows keyed by (name, rank); a repeated key keeps the later row, as the readers do. */
struct row_key {
    const char *name;
    int64_t rank;
    size_t idx;
};

static int cmp_row_key(const void *p, const void *q) {
    const struct row_key *x = p, *y = q;
    const int c = strcmp(x->name, y->name);
    if (c != 0)
        return c;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Sorted, de-duplicated keys of 'run''s rows (new array, NULL on allocation failure). */
static struct row_key *row_keys(const struct sx_run *run, size_t *n) {
    struct row_key *k = sx_malloc((run->nrows + 1) * sizeof *k);
    size_t m = 0;

    if (k == NULL)
        return NULL;
    for (size_t i = 0; i < run->nrows; i++)
        k[i] = (struct row_key){run->names[run->rows[i].region], run->rows[i].rank, i};
    qsort(k, run->nrows, sizeof *k, cmp_row_key);
    for (size_t i = 0; i < run->nrows; i++) {
        if (i + 1 < run->nrows && strcmp(k[i].name, k[i + 1].name) == 0 &&
            k[i].rank == k[i + 1].rank)
            continue; /* a later row with the same key follows */
        k[m++] = k[i];
    }
    *n = m;
    return k;
}

static bool all_rows_eq(const struct sx_run *a, const struct sx_run *b, char *why,
                        size_t why_len) {
    size_t na = 0, nb = 0, i = 0, j = 0;
    struct row_key *ka = row_keys(a, &na), *kb = row_keys(b, &nb);
    bool ok = true;

    if (ka == NULL || kb == NULL) {
        ok = differ(why, why_len, "out of memory comparing rows");
        goto out;
    }
    while (ok && (i < na || j < nb)) {
        const int c = i == na ? 1
                      : j == nb
                          ? -1
                          : (strcmp(ka[i].name, kb[j].name) != 0
                                 ? strcmp(ka[i].name, kb[j].name)
                                 : (ka[i].rank > kb[j].rank) - (ka[i].rank < kb[j].rank));
        if (c < 0)
            ok = differ(why, why_len, "row ('%s', rank %lld) is missing on the right",
                        ka[i].name, (long long)ka[i].rank);
        else if (c > 0)
            ok = differ(why, why_len, "row ('%s', rank %lld) is missing on the left",
                        kb[j].name, (long long)kb[j].rank);
        else
            ok = rows_eq(a, &a->rows[ka[i].idx], &b->rows[kb[j].idx], why, why_len);
        i += c <= 0;
        j += c >= 0;
    }
out:
    free(ka);
    free(kb);
    return ok;
}

/* Region names in order, keeping only names that some row uses. */
static bool names_eq(const struct sx_run *a, const struct sx_run *b, char *why,
                     size_t why_len) {
    bool *ua = sx_calloc(a->nnames + 1, sizeof *ua),
         *ub = sx_calloc(b->nnames + 1, sizeof *ub);
    size_t i = 0, j = 0, k = 0;
    bool ok = true;

    if (ua == NULL || ub == NULL) {
        ok = differ(why, why_len, "out of memory comparing names");
        goto out;
    }
    for (size_t r = 0; r < a->nrows; r++)
        if (a->rows[r].region < a->nnames)
            ua[a->rows[r].region] = true;
    for (size_t r = 0; r < b->nrows; r++)
        if (b->rows[r].region < b->nnames)
            ub[b->rows[r].region] = true;
    for (;;) {
        while (i < a->nnames && !ua[i])
            i++;
        while (j < b->nnames && !ub[j])
            j++;
        if (i == a->nnames || j == b->nnames)
            break;
        if (strcmp(a->names[i], b->names[j]) != 0) {
            ok = differ(why, why_len, "region %zu: name '%s' != '%s'", k, a->names[i],
                        b->names[j]);
            goto out;
        }
        i++, j++, k++;
    }
    if (i != a->nnames || j != b->nnames)
        ok = differ(why, why_len, "region %zu: '%s' != '%s'", k,
                    i < a->nnames ? a->names[i] : "(none)",
                    j < b->nnames ? b->names[j] : "(none)");
out:
    free(ua);
    free(ub);
    return ok;
}

/* Lane rank lists, ignoring ranks without rows (the document cannot show them). */
static const struct sx_lane_rank *find_lane(const struct sx_lane_rank *l, size_t n,
                                            int64_t rank) {
    for (size_t i = 0; i < n; i++)
        if (l[i].rank == rank && l[i].n > 0)
            return &l[i];
    return NULL;
}

static size_t count_lanes(const struct sx_lane_rank *l, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += l[i].n > 0;
    return k;
}

static bool thread_eq(const struct sx_thread *x, const struct sx_thread *y) {
    return x->index == y->index && str_eq(x->name, y->name) && x->ident == y->ident &&
           x->native_id == y->native_id && x->daemon == y->daemon &&
           sx_lane_ns(x->start_ns) == sx_lane_ns(y->start_ns) &&
           sx_lane_ns(x->end_ns) == sx_lane_ns(y->end_ns) &&
           sx_lane_ns(x->cpu_ns) == sx_lane_ns(y->cpu_ns);
}

static bool task_eq(const struct sx_task *x, const struct sx_task *y) {
    return x->index == y->index && str_eq(x->kind, y->kind) && str_eq(x->name, y->name) &&
           str_eq(x->coro_name, y->coro_name) && x->thread_index == y->thread_index &&
           sx_lane_ns(x->created_ns) == sx_lane_ns(y->created_ns) &&
           sx_lane_ns(x->done_ns) == sx_lane_ns(y->done_ns) && x->steps == y->steps &&
           sx_lane_ns(x->running_ns) == sx_lane_ns(y->running_ns) &&
           sx_lane_ns(x->suspended_ns) == sx_lane_ns(y->suspended_ns);
}

static bool lanes_eq(const char *what, const struct sx_lane_rank *a, size_t na,
                     const struct sx_lane_rank *b, size_t nb, char *why, size_t why_len) {
    if (count_lanes(a, na) != count_lanes(b, nb))
        return differ(why, why_len, "%s: %zu ranks != %zu ranks", what,
                      count_lanes(a, na), count_lanes(b, nb));
    for (size_t i = 0; i < na; i++) {
        const struct sx_lane_rank *x = &a[i];
        if (x->n == 0)
            continue;
        const struct sx_lane_rank *y = find_lane(b, nb, x->rank);
        if (y == NULL)
            return differ(why, why_len, "%s: rank %lld missing on the right", what,
                          (long long)x->rank);
        if (x->n != y->n)
            return differ(why, why_len, "%s[%lld]: %zu rows != %zu", what,
                          (long long)x->rank, x->n, y->n);
        if ((x->threads == NULL) != (y->threads == NULL))
            return differ(why, why_len, "%s[%lld]: table kinds differ", what,
                          (long long)x->rank);
        for (size_t j = 0; j < x->n; j++) {
            const bool same = x->threads != NULL
                                  ? thread_eq(&x->threads[j], &y->threads[j])
                                  : task_eq(&x->tasks[j], &y->tasks[j]);
            if (!same)
                return differ(why, why_len, "%s[%lld][%zu] differs", what,
                              (long long)x->rank, j);
        }
    }
    return true;
}

/*
 * Matrices as the document writes them: 'rows' inner lists of 'cols' values.
 * An empty matrix (an HDF5 placeholder of shape (0,) or (0, n)) is [] either way.
 */
static bool matrix_eq(const struct sx_matrix *a, const struct sx_matrix *b) {
    size_t at = 0;
    if (a->rows * a->cols == 0 || b->rows * b->cols == 0)
        return a->rows * a->cols == b->rows * b->cols && a->rows == b->rows;
    if (a->rows != b->rows || a->cols != b->cols)
        return false;
    return f64s_eq(a->v, a->rows * a->cols, b->v, b->rows * b->cols, &at);
}

static bool likwid_entry_eq(const struct sx_likwid_entry *x,
                            const struct sx_likwid_entry *y, const char **field) {
    size_t at = 0;
    *field = "tag";
    if (!str_eq(x->tag, y->tag))
        return false;
    *field = "group_id";
    if (x->group_id != y->group_id)
        return false;
    *field = "group_name";
    if (!str_eq(x->group_name, y->group_name))
        return false;
    *field = "cpus";
    if (!i64s_eq(x->cpus, x->ncpus, y->cpus, y->ncpus, &at))
        return false;
    *field = "times";
    if (!f64s_eq(x->times, x->ntimes, y->times, y->ntimes, &at))
        return false;
    *field = "call_counts";
    if (!i64s_eq(x->call_counts, x->ncall_counts, y->call_counts, y->ncall_counts, &at))
        return false;
    *field = "event_names";
    if (!strs_eq(x->event_names, x->nevent_names, y->event_names, y->nevent_names))
        return false;
    *field = "counter_names";
    if (!strs_eq(x->counter_names, x->ncounter_names, y->counter_names,
                 y->ncounter_names))
        return false;
    *field = "events";
    if (!matrix_eq(&x->events, &y->events))
        return false;
    *field = "metric_names";
    if (!strs_eq(x->metric_names, x->nmetric_names, y->metric_names, y->nmetric_names))
        return false;
    *field = "metrics";
    if (!matrix_eq(&x->metrics, &y->metrics))
        return false;
    *field = "source";
    return str_eq(x->source, y->source);
}

static bool likwid_eq(const struct sx_run *a, const struct sx_run *b, char *why,
                      size_t why_len) {
    const char *field = NULL;

    if (a->nlikwid != b->nlikwid)
        return differ(why, why_len, "likwid: %zu ranks != %zu ranks", a->nlikwid,
                      b->nlikwid);
    for (size_t i = 0; i < a->nlikwid; i++) {
        const struct sx_likwid_rank *x = &a->likwid[i], *y = NULL;
        for (size_t j = 0; j < b->nlikwid; j++)
            if (b->likwid[j].rank == x->rank)
                y = &b->likwid[j];
        if (y == NULL)
            return differ(why, why_len, "likwid: rank %lld missing on the right",
                          (long long)x->rank);
        if (x->n != y->n)
            return differ(why, why_len, "likwid[%lld]: %zu entries != %zu",
                          (long long)x->rank, x->n, y->n);
        for (size_t k = 0; k < x->n; k++)
            if (!likwid_entry_eq(&x->entries[k], &y->entries[k], &field))
                return differ(why, why_len, "likwid[%lld]['%s']: '%s' differs",
                              (long long)x->rank, show(x->entries[k].tag), field);
    }
    return true;
}

static bool lp_record_eq(const struct sx_lp_record *x, const struct sx_lp_record *y,
                         const char **field) {
    size_t at = 0;
    *field = "region";
    if (!str_eq(x->region, y->region))
        return false;
    *field = "filename";
    if (!str_eq(x->filename, y->filename))
        return false;
    *field = "function";
    if (!str_eq(x->function, y->function))
        return false;
    *field = "first_lineno";
    if (x->first_lineno != y->first_lineno)
        return false;
    *field = "line_numbers";
    if (!i64s_eq(x->line_numbers, x->nline_numbers, y->line_numbers, y->nline_numbers,
                 &at))
        return false;
    *field = "hits";
    if (!i64s_eq(x->hits, x->nhits, y->hits, y->nhits, &at))
        return false;
    *field = "times";
    if (!f64s_eq(x->times, x->ntimes, y->times, y->ntimes, &at))
        return false;
    *field = "unit";
    return f64_eq(x->unit, y->unit);
}

static size_t count_lp(const struct sx_lp_rank *l, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += l[i].n > 0;
    return k;
}

/* Ranks with no records are compared as absent: the document may list them or not. */
static bool line_profile_eq(const struct sx_run *a, const struct sx_run *b, char *why,
                            size_t why_len) {
    const char *field = NULL;

    if (count_lp(a->line_profile, a->nline_profile) !=
        count_lp(b->line_profile, b->nline_profile))
        return differ(why, why_len, "line_profile: %zu ranks with records != %zu",
                      count_lp(a->line_profile, a->nline_profile),
                      count_lp(b->line_profile, b->nline_profile));
    for (size_t i = 0; i < a->nline_profile; i++) {
        const struct sx_lp_rank *x = &a->line_profile[i], *y = NULL;
        if (x->n == 0)
            continue;
        for (size_t j = 0; j < b->nline_profile; j++)
            if (b->line_profile[j].rank == x->rank)
                y = &b->line_profile[j];
        if (y == NULL || y->n != x->n)
            return differ(why, why_len, "line_profile[%lld]: %zu records != %zu",
                          (long long)x->rank, x->n, y != NULL ? y->n : 0);
        for (size_t k = 0; k < x->n; k++)
            if (!lp_record_eq(&x->records[k], &y->records[k], &field))
                return differ(why, why_len, "line_profile[%lld][%zu]: '%s' differs",
                              (long long)x->rank, k, field);
    }
    return true;
}

bool sx_run_equal(const struct sx_run *a, const struct sx_run *b, char *why,
                  size_t why_len) {
    if (why != NULL && why_len > 0)
        why[0] = '\0';
    if (a == NULL || b == NULL)
        return a == b ? true : differ(why, why_len, "one run is missing");
    if (a->num_ranks != b->num_ranks)
        return differ(why, why_len, "num_ranks %lld != %lld", (long long)a->num_ranks,
                      (long long)b->num_ranks);
    if (a->event_data_available != b->event_data_available)
        return differ(why, why_len, "event_data_available %d != %d",
                      a->event_data_available, b->event_data_available);
    if (!meta_eq(&a->metadata, &b->metadata))
        return differ(why, why_len, "metadata differs at key '%s'",
                      meta_diff_key(&a->metadata, &b->metadata));
    if (!names_eq(a, b, why, why_len))
        return false;
    if (!all_rows_eq(a, b, why, why_len))
        return false;
    if (!lanes_eq("threads", a->threads, a->nthreads, b->threads, b->nthreads, why,
                  why_len))
        return false;
    if (!lanes_eq("tasks", a->tasks, a->ntasks, b->tasks, b->ntasks, why, why_len))
        return false;
    if (!likwid_eq(a, b, why, why_len))
        return false;
    return line_profile_eq(a, b, why, why_len);
}
