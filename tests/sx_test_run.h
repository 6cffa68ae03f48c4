/* sx_test_run.h - two runs read from one document compared field by field */
#ifndef SX_TEST_RUN_H
#define SX_TEST_RUN_H

#include "json_value.h"
#include "run.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The first difference, written to 'why', and false. */
#define SX_TEST_DIFF(...)                                                                \
    do {                                                                                 \
        snprintf(why, nwhy, __VA_ARGS__);                                                \
        return false;                                                                    \
    } while (0)

static inline bool sx_test_str_same(const char *a, const char *b) {
    return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

static inline bool sx_test_mem_same(const void *a, size_t na, const void *b, size_t nb,
                                    size_t size) {
    if (na != nb)
        return false;
    if (na == 0)
        return true;
    return a != NULL && b != NULL && memcmp(a, b, na * size) == 0;
}

static inline bool sx_test_strs_same(char *const *a, size_t na, char *const *b,
                                     size_t nb) {
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (!sx_test_str_same(a[i], b[i]))
            return false;
    return true;
}

static inline bool sx_test_row_same(const struct sx_row *x, const struct sx_row *y,
                                    size_t r, char *why, size_t nwhy) {
    if (x->region != y->region || x->rank != y->rank || x->file_row != y->file_row)
        SX_TEST_DIFF(
            "row %zu: region %u rank %lld element %llu != region %u rank %lld element "
            "%llu",
            r, x->region, (long long)x->rank, (unsigned long long)x->file_row, y->region,
            (long long)y->rank, (unsigned long long)y->file_row);
    if (!sx_test_str_same(x->source_file, y->source_file) ||
        !sx_test_str_same(x->source_text, y->source_text))
        SX_TEST_DIFF("row %zu: source_file/source_text differ", r);
    if (x->has_lineno != y->has_lineno || x->source_lineno != y->source_lineno)
        SX_TEST_DIFF("row %zu: source_lineno %d/%lld != %d/%lld", r, x->has_lineno,
                     (long long)x->source_lineno, y->has_lineno,
                     (long long)y->source_lineno);
    if (!sx_test_strs_same(x->tags, x->ntags, y->tags, y->ntags))
        SX_TEST_DIFF("row %zu: tags differ (%zu vs %zu)", r, x->ntags, y->ntags);
    if (x->borrowed != y->borrowed || x->has_exclusive != y->has_exclusive ||
        x->exclusive_total != y->exclusive_total)
        SX_TEST_DIFF("row %zu: exclusive_total_ns %d/%lld != %d/%lld", r,
                     x->has_exclusive, (long long)x->exclusive_total, y->has_exclusive,
                     (long long)y->exclusive_total);
    if (x->is_aggregate != y->is_aggregate ||
        x->event_data_available != y->event_data_available || x->nagg != y->nagg)
        SX_TEST_DIFF("row %zu: aggregate %d/%d/%zu != %d/%d/%zu", r, x->is_aggregate,
                     x->event_data_available, x->nagg, y->is_aggregate,
                     y->event_data_available, y->nagg);
    for (size_t k = 0; k < x->nagg; k++) {
        const struct sx_agg_field *a = &x->agg[k], *b = &y->agg[k];
        if (a->key != b->key || a->is_float != b->is_float || a->i != b->i ||
            a->u != b->u || a->is_unsigned != b->is_unsigned ||
            memcmp(&a->f, &b->f, sizeof a->f) != 0)
            SX_TEST_DIFF("row %zu: aggregate field %zu differs", r, k);
    }
    if (x->count != y->count || x->cols != y->cols ||
        x->has_meta_col != y->has_meta_col || x->offset != y->offset ||
        !sx_test_str_same(x->group, y->group))
        SX_TEST_DIFF("row %zu: %llu calls, columns 0x%x != %llu calls, columns 0x%x", r,
                     (unsigned long long)x->count, x->cols, (unsigned long long)y->count,
                     y->cols);
    for (int c = 0; c < SX_NCOLS; c++) {
        if ((x->col[c] == NULL) != (y->col[c] == NULL))
            SX_TEST_DIFF("row %zu: column %d loaded on one side only", r, c);
        if (x->col[c] != NULL &&
            !sx_test_mem_same(x->col[c], x->count, y->col[c], y->count, sizeof(int64_t)))
            SX_TEST_DIFF("row %zu: column %d differs", r, c);
    }
    if (x->meta_any != y->meta_any || !sx_test_str_same(x->meta_text, y->meta_text))
        SX_TEST_DIFF("row %zu: event_metadata %d [%.200s] != %d [%.200s]", r, x->meta_any,
                     x->meta_text ? x->meta_text : "(none)", y->meta_any,
                     y->meta_text ? y->meta_text : "(none)");
    return true;
}

static inline bool sx_test_lanes_same(const struct sx_lane_rank *a, size_t na,
                                      const struct sx_lane_rank *b, size_t nb) {
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++) {
        const struct sx_lane_rank *x = &a[i], *y = &b[i];
        if (x->rank != y->rank || x->n != y->n ||
            (x->threads == NULL) != (y->threads == NULL))
            return false;
        for (size_t j = 0; j < x->n; j++) {
            if (x->threads != NULL) {
                const struct sx_thread *s = &x->threads[j], *t = &y->threads[j];
                if (s->index != t->index || !sx_test_str_same(s->name, t->name) ||
                    s->ident != t->ident || s->native_id != t->native_id ||
                    s->daemon != t->daemon || s->start_ns != t->start_ns ||
                    s->end_ns != t->end_ns || s->cpu_ns != t->cpu_ns)
                    return false;
            } else {
                const struct sx_task *s = &x->tasks[j], *t = &y->tasks[j];
                if (s->index != t->index || !sx_test_str_same(s->kind, t->kind) ||
                    !sx_test_str_same(s->name, t->name) ||
                    !sx_test_str_same(s->coro_name, t->coro_name) ||
                    s->thread_index != t->thread_index ||
                    s->created_ns != t->created_ns || s->done_ns != t->done_ns ||
                    s->steps != t->steps || s->running_ns != t->running_ns ||
                    s->suspended_ns != t->suspended_ns)
                    return false;
            }
        }
    }
    return true;
}

static inline bool sx_test_matrix_same(const struct sx_matrix *a,
                                       const struct sx_matrix *b) {
    return a->rows == b->rows && a->cols == b->cols &&
           sx_test_mem_same(a->v, a->rows * a->cols, b->v, b->rows * b->cols,
                            sizeof(double));
}

static inline bool sx_test_likwid_same(const struct sx_run *a, const struct sx_run *b) {
    if (a->nlikwid != b->nlikwid)
        return false;
    for (size_t i = 0; i < a->nlikwid; i++) {
        const struct sx_likwid_rank *x = &a->likwid[i], *y = &b->likwid[i];
        if (x->rank != y->rank || x->n != y->n)
            return false;
        for (size_t j = 0; j < x->n; j++) {
            const struct sx_likwid_entry *s = &x->entries[j], *t = &y->entries[j];
            if (!sx_test_str_same(s->tag, t->tag) || s->group_id != t->group_id ||
                !sx_test_str_same(s->group_name, t->group_name) ||
                !sx_test_mem_same(s->cpus, s->ncpus, t->cpus, t->ncpus,
                                  sizeof(int64_t)) ||
                !sx_test_mem_same(s->times, s->ntimes, t->times, t->ntimes,
                                  sizeof(double)) ||
                !sx_test_mem_same(s->call_counts, s->ncall_counts, t->call_counts,
                                  t->ncall_counts, sizeof(int64_t)) ||
                !sx_test_strs_same(s->event_names, s->nevent_names, t->event_names,
                                   t->nevent_names) ||
                !sx_test_strs_same(s->counter_names, s->ncounter_names, t->counter_names,
                                   t->ncounter_names) ||
                !sx_test_strs_same(s->metric_names, s->nmetric_names, t->metric_names,
                                   t->nmetric_names) ||
                !sx_test_matrix_same(&s->events, &t->events) ||
                !sx_test_matrix_same(&s->metrics, &t->metrics) ||
                !sx_test_str_same(s->source, t->source))
                return false;
        }
    }
    return true;
}

static inline bool sx_test_line_profile_same(const struct sx_run *a,
                                             const struct sx_run *b) {
    if (a->nline_profile != b->nline_profile)
        return false;
    for (size_t i = 0; i < a->nline_profile; i++) {
        const struct sx_lp_rank *x = &a->line_profile[i], *y = &b->line_profile[i];
        if (x->rank != y->rank || x->n != y->n)
            return false;
        for (size_t j = 0; j < x->n; j++) {
            const struct sx_lp_record *s = &x->records[j], *t = &y->records[j];
            if (!sx_test_str_same(s->region, t->region) ||
                !sx_test_str_same(s->filename, t->filename) ||
                !sx_test_str_same(s->function, t->function) ||
                s->first_lineno != t->first_lineno ||
                !sx_test_mem_same(s->line_numbers, s->nline_numbers, t->line_numbers,
                                  t->nline_numbers, sizeof(int64_t)) ||
                !sx_test_mem_same(s->hits, s->nhits, t->hits, t->nhits,
                                  sizeof(int64_t)) ||
                !sx_test_mem_same(s->times, s->ntimes, t->times, t->ntimes,
                                  sizeof(double)) ||
                memcmp(&s->unit, &t->unit, sizeof s->unit) != 0)
                return false;
        }
    }
    return true;
}

/*
 * Whether two runs read from one document (by two readers, or one reader two
 * ways) are the same in every field, in order; otherwise false, and the first
 * difference in 'why'. sx_run_equal (run_compare.h) compares "the same run"
 * across formats, loosely: rows by (name, rank) in any order, names some row
 * uses, metadata text only where a dict has keys, lane timestamps rounded.
 */
static inline bool sx_test_same_run(const struct sx_run *a, const struct sx_run *b,
                                    char *why, size_t nwhy) {
    if (!sx_test_str_same(a->path, b->path) || a->schema != b->schema ||
        a->layout != b->layout || a->summary != b->summary ||
        a->num_ranks != b->num_ranks ||
        a->event_data_available != b->event_data_available)
        SX_TEST_DIFF("the run's header differs");
    if (a->metadata.kind != b->metadata.kind ||
        !sx_value_equal(&a->metadata, &b->metadata))
        SX_TEST_DIFF("metadata differs");
    if (!sx_test_strs_same(a->names, a->nnames, b->names, b->nnames))
        SX_TEST_DIFF("region names differ (%zu vs %zu)", a->nnames, b->nnames);
    if (a->nrows != b->nrows)
        SX_TEST_DIFF("%zu rows != %zu rows", a->nrows, b->nrows);
    for (size_t r = 0; r < a->nrows; r++)
        if (!sx_test_row_same(&a->rows[r], &b->rows[r], r, why, nwhy))
            return false;
    if (a->nindex != b->nindex || a->file_cols != b->file_cols ||
        a->has_meta_col != b->has_meta_col || a->delta_encoded != b->delta_encoded ||
        a->nevents != b->nevents)
        SX_TEST_DIFF("the run's index differs");
    if (a->has_threads != b->has_threads || a->has_tasks != b->has_tasks ||
        !sx_test_lanes_same(a->threads, a->nthreads, b->threads, b->nthreads) ||
        !sx_test_lanes_same(a->tasks, a->ntasks, b->tasks, b->ntasks))
        SX_TEST_DIFF("threads or tasks differ");
    if (!sx_test_likwid_same(a, b))
        SX_TEST_DIFF("likwid differs");
    if (!sx_test_line_profile_same(a, b))
        SX_TEST_DIFF("line_profile differs");
    return true;
}

#undef SX_TEST_DIFF

#endif
