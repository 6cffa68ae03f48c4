/* run.c - the in-memory run model: construction, destruction, lane timestamps */
#include "run.h"

#include "json_value.h"

#include <math.h>
#include <stdlib.h>

const char *const sx_agg_keys[SX_AGG_NKEYS] = {
    "count",         "total",       "minimum",   "maximum",   "first", "last",
    "start_minimum", "end_maximum", "gpu_count", "gpu_total", "mean",  "m2",
    "exclusive"};

struct sx_run *sx_run_new(void) {
    struct sx_run *run = sx_calloc(1, sizeof *run);
    if (run == NULL)
        return NULL;
    sx_value_object(&run->metadata);
    run->event_data_available = true;
    return run;
}

static void free_strings(char **s, size_t n) {
    if (s == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free(s[i]);
    free(s);
}

void sx_row_clear(struct sx_row *row) {
    if (!row->borrowed) {
        free(row->source_file);
        free(row->source_text);
        free_strings(row->tags, row->ntags);
    }
    free(row->group);
    for (int c = 0; c < SX_NCOLS; c++)
        if (!(row->lent & SX_COLBIT(c)))
            free(row->col[c]);
    free(row->meta_text);
    free(row->agg);
    *row = (struct sx_row){0};
}

bool sx_row_agg(struct sx_row *row) {
    if (row->agg == NULL)
        row->agg = sx_calloc(SX_AGG_MAX, sizeof *row->agg);
    return row->agg != NULL;
}

static void free_lanes(struct sx_lane_rank *lanes, size_t n) {
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < lanes[i].n; j++) {
            if (lanes[i].threads != NULL)
                free(lanes[i].threads[j].name);
            if (lanes[i].tasks != NULL) {
                free(lanes[i].tasks[j].kind);
                free(lanes[i].tasks[j].name);
                free(lanes[i].tasks[j].coro_name);
            }
        }
        free(lanes[i].threads);
        free(lanes[i].tasks);
    }
    free(lanes);
}

void sx_likwid_entry_clear(struct sx_likwid_entry *e) {
    free(e->tag);
    free(e->group_name);
    free(e->cpus);
    free(e->times);
    free(e->call_counts);
    free_strings(e->event_names, e->nevent_names);
    free_strings(e->counter_names, e->ncounter_names);
    free(e->events.v);
    free_strings(e->metric_names, e->nmetric_names);
    free(e->metrics.v);
    free(e->source);
    *e = (struct sx_likwid_entry){0};
}

static void free_likwid(struct sx_likwid_rank *lk, size_t n) {
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < lk[i].n; j++)
            sx_likwid_entry_clear(&lk[i].entries[j]);
        free(lk[i].entries);
    }
    free(lk);
}

static void free_line_profile(struct sx_lp_rank *lp, size_t n) {
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < lp[i].n; j++) {
            struct sx_lp_record *r = &lp[i].records[j];
            free(r->region);
            free(r->filename);
            free(r->function);
            free(r->line_numbers);
            free(r->hits);
            free(r->times);
        }
        free(lp[i].records);
    }
    free(lp);
}

void sx_run_free(struct sx_run *run) {
    if (run == NULL)
        return;
    free(run->path);
    sx_value_free(&run->metadata);
    free_strings(run->names, run->nnames);
    for (size_t i = 0; i < run->nrows; i++)
        sx_row_clear(&run->rows[i]);
    if (run->rows_mem.p != NULL)
        sx_big_free(&run->rows_mem);
    else
        free(run->rows);
    free(run->index);
    free_lanes(run->threads, run->nthreads);
    free_lanes(run->tasks, run->ntasks);
    free_likwid(run->likwid, run->nlikwid);
    free_line_profile(run->line_profile, run->nline_profile);
    free(run);
}

/*
 * ThreadInfo/TaskInfo keep seconds as floats; the exporter turns them back
 * with round(seconds * 1e9). Identity below 2^51, off by one above at times.
 */
int64_t sx_lane_ns(int64_t v) {
    double x = nearbyint(((double)v / 1e9) * 1e9);
    /* Out of int64 range only for |v| near 2^63; saturate rather than overflow. */
    if (x >= 9223372036854775807.0)
        return INT64_MAX;
    if (x < -9223372036854775807.0)
        return INT64_MIN;
    return (int64_t)x;
}
