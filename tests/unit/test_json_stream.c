/* test_json_stream.c - the JSON reader's fast path reads every region row exactly as
 * jansson does: each document loaded with it on and off gives the same run or the same
 * error */
#include "buf.h"
#include "json_load.h"
#include "json_stream.h"
#include "run.h"
#include "sx_test.h"
#include "sx_test_doc.h"

#include <fcntl.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define GOLDEN SX_SHARED_DIR "/golden/"
#define FAST_ENV "SCOPE_EXPORT_FAST_JSON"

/* The reader's first window (json_stream.c): text beyond it is read in later refills. */
#define WINDOW ((size_t)4 << 20)

static char tmp_json[512], tmp_gz[512];
static size_t ndocs, nelements, nfast; /* what the comparisons covered */
static bool counting = true; /* whether check_path counts the fast path's elements */

/* ------------------------------------------------------------------ */
/* Files                                                              */

static void put_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    ASSERT(f != NULL);
    ASSERT(n == 0 || fwrite(data, 1, n, f) == n);
    ASSERT(fclose(f) == 0);
}

/*
 * 'data' gzipped as members of 'chunk' bytes each (0: one member), appended to
 * 'out'. The reader gets one member's text per read, so the text it holds ends
 * after every chunk: a cheap way to put the end of its window at any byte.
 */
static void gz_members(struct sx_buf *out, const char *data, size_t n, size_t chunk) {
    z_stream z;
    unsigned char buf[1 << 14];
    size_t at = 0;

    memset(&z, 0, sizeof z);
    ASSERT(deflateInit2(&z, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    do {
        const size_t len = chunk == 0 || n - at < chunk ? n - at : chunk;
        z.next_in = (unsigned char *)(uintptr_t)(data + at);
        z.avail_in = (uInt)len;
        int rc;
        do {
            z.next_out = buf;
            z.avail_out = sizeof buf;
            rc = deflate(&z, Z_FINISH);
            ASSERT(rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR);
            sx_buf_append(out, buf, sizeof buf - z.avail_out);
        } while (rc != Z_STREAM_END);
        ASSERT(deflateReset(&z) == Z_OK);
        at += len;
    } while (at < n);
    deflateEnd(&z);
    ASSERT(!out->failed);
}

static void put_gz(const char *path, const char *data, size_t n, size_t chunk) {
    struct sx_buf out = {0};
    gz_members(&out, data, n, chunk);
    put_file(path, out.data, out.len);
    sx_buf_free(&out);
}

/* Two members: the text up to 'k', then the rest. */
static void put_gz_split(const char *path, const char *data, size_t n, size_t k) {
    struct sx_buf out = {0};
    gz_members(&out, data, k, 0);
    gz_members(&out, data + k, n - k, 0);
    put_file(path, out.data, out.len);
    sx_buf_free(&out);
}

/*
 * A gzip stream of 'data' flushed but never finished: inflating it gives all
 * the text, then "unexpected end of file".
 */
static void put_gz_unfinished(const char *path, const char *data, size_t n) {
    z_stream z;
    unsigned char *buf = malloc(n + 1024);
    ASSERT(buf != NULL);
    memset(&z, 0, sizeof z);
    ASSERT(deflateInit2(&z, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    z.next_in = (unsigned char *)(uintptr_t)data;
    z.avail_in = (uInt)n;
    z.next_out = buf;
    z.avail_out = (uInt)(n + 1024);
    ASSERT(deflate(&z, Z_SYNC_FLUSH) == Z_OK && z.avail_in == 0);
    put_file(path, buf, n + 1024 - z.avail_out);
    deflateEnd(&z);
    free(buf);
}

/* ------------------------------------------------------------------ */
/* Two runs compared field by field                                   */

/*
 * sx_run_equal (run_compare.h) compares "the same run" across formats: rows by
 * (name, rank) in any order, names some row uses, metadata text only where a
 * dict has keys, lane timestamps rounded. Both loads here read one document,
 * so everything must be identical, in order.
 */
#define DIFF(...)                                                                        \
    do {                                                                                 \
        snprintf(why, nwhy, __VA_ARGS__);                                                \
        return false;                                                                    \
    } while (0)

static bool str_same(const char *a, const char *b) {
    return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

static bool mem_same(const void *a, size_t na, const void *b, size_t nb, size_t size) {
    if (na != nb)
        return false;
    if (na == 0)
        return true;
    return a != NULL && b != NULL && memcmp(a, b, na * size) == 0;
}

static bool strs_same(char *const *a, size_t na, char *const *b, size_t nb) {
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (!str_same(a[i], b[i]))
            return false;
    return true;
}

static bool row_same(const struct sx_row *x, const struct sx_row *y, size_t r, char *why,
                     size_t nwhy) {
    if (x->region != y->region || x->rank != y->rank || x->file_row != y->file_row)
        DIFF("row %zu: region %u rank %lld element %llu != region %u rank %lld element "
             "%llu",
             r, x->region, (long long)x->rank, (unsigned long long)x->file_row, y->region,
             (long long)y->rank, (unsigned long long)y->file_row);
    if (!str_same(x->source_file, y->source_file) ||
        !str_same(x->source_text, y->source_text))
        DIFF("row %zu: source_file/source_text differ", r);
    if (x->has_lineno != y->has_lineno || x->source_lineno != y->source_lineno)
        DIFF("row %zu: source_lineno %d/%lld != %d/%lld", r, x->has_lineno,
             (long long)x->source_lineno, y->has_lineno, (long long)y->source_lineno);
    if (!strs_same(x->tags, x->ntags, y->tags, y->ntags))
        DIFF("row %zu: tags differ (%zu vs %zu)", r, x->ntags, y->ntags);
    if (x->borrowed != y->borrowed || x->has_exclusive != y->has_exclusive ||
        x->exclusive_total != y->exclusive_total)
        DIFF("row %zu: exclusive_total_ns %d/%lld != %d/%lld", r, x->has_exclusive,
             (long long)x->exclusive_total, y->has_exclusive,
             (long long)y->exclusive_total);
    if (x->is_aggregate != y->is_aggregate ||
        x->event_data_available != y->event_data_available || x->nagg != y->nagg)
        DIFF("row %zu: aggregate %d/%d/%zu != %d/%d/%zu", r, x->is_aggregate,
             x->event_data_available, x->nagg, y->is_aggregate, y->event_data_available,
             y->nagg);
    for (size_t k = 0; k < x->nagg; k++) {
        const struct sx_agg_field *a = &x->agg[k], *b = &y->agg[k];
        if (!str_same(a->key, b->key) || a->is_float != b->is_float || a->i != b->i ||
            a->u != b->u || a->is_unsigned != b->is_unsigned ||
            memcmp(&a->f, &b->f, sizeof a->f) != 0)
            DIFF("row %zu: aggregate field %zu differs", r, k);
    }
    if (x->count != y->count || x->cols != y->cols ||
        x->has_meta_col != y->has_meta_col || x->offset != y->offset ||
        !str_same(x->group, y->group))
        DIFF("row %zu: %llu calls, columns 0x%x != %llu calls, columns 0x%x", r,
             (unsigned long long)x->count, x->cols, (unsigned long long)y->count,
             y->cols);
    for (int c = 0; c < SX_NCOLS; c++) {
        if ((x->col[c] == NULL) != (y->col[c] == NULL))
            DIFF("row %zu: column %d loaded on one side only", r, c);
        if (x->col[c] != NULL &&
            !mem_same(x->col[c], x->count, y->col[c], y->count, sizeof(int64_t)))
            DIFF("row %zu: column %d differs", r, c);
    }
    if (x->meta_any != y->meta_any || !str_same(x->meta_text, y->meta_text))
        DIFF("row %zu: event_metadata %d [%.200s] != %d [%.200s]", r, x->meta_any,
             x->meta_text ? x->meta_text : "(none)", y->meta_any,
             y->meta_text ? y->meta_text : "(none)");
    return true;
}

static bool lanes_same(const struct sx_lane_rank *a, size_t na,
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
                if (s->index != t->index || !str_same(s->name, t->name) ||
                    s->ident != t->ident || s->native_id != t->native_id ||
                    s->daemon != t->daemon || s->start_ns != t->start_ns ||
                    s->end_ns != t->end_ns || s->cpu_ns != t->cpu_ns)
                    return false;
            } else {
                const struct sx_task *s = &x->tasks[j], *t = &y->tasks[j];
                if (s->index != t->index || !str_same(s->kind, t->kind) ||
                    !str_same(s->name, t->name) ||
                    !str_same(s->coro_name, t->coro_name) ||
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

static bool matrix_same(const struct sx_matrix *a, const struct sx_matrix *b) {
    return a->rows == b->rows && a->cols == b->cols &&
           mem_same(a->v, a->rows * a->cols, b->v, b->rows * b->cols, sizeof(double));
}

static bool likwid_same(const struct sx_run *a, const struct sx_run *b) {
    if (a->nlikwid != b->nlikwid)
        return false;
    for (size_t i = 0; i < a->nlikwid; i++) {
        const struct sx_likwid_rank *x = &a->likwid[i], *y = &b->likwid[i];
        if (x->rank != y->rank || x->n != y->n)
            return false;
        for (size_t j = 0; j < x->n; j++) {
            const struct sx_likwid_entry *s = &x->entries[j], *t = &y->entries[j];
            if (!str_same(s->tag, t->tag) || s->group_id != t->group_id ||
                !str_same(s->group_name, t->group_name) ||
                !mem_same(s->cpus, s->ncpus, t->cpus, t->ncpus, sizeof(int64_t)) ||
                !mem_same(s->times, s->ntimes, t->times, t->ntimes, sizeof(double)) ||
                !mem_same(s->call_counts, s->ncall_counts, t->call_counts,
                          t->ncall_counts, sizeof(int64_t)) ||
                !strs_same(s->event_names, s->nevent_names, t->event_names,
                           t->nevent_names) ||
                !strs_same(s->counter_names, s->ncounter_names, t->counter_names,
                           t->ncounter_names) ||
                !strs_same(s->metric_names, s->nmetric_names, t->metric_names,
                           t->nmetric_names) ||
                !matrix_same(&s->events, &t->events) ||
                !matrix_same(&s->metrics, &t->metrics) || !str_same(s->source, t->source))
                return false;
        }
    }
    return true;
}

static bool line_profile_same(const struct sx_run *a, const struct sx_run *b) {
    if (a->nline_profile != b->nline_profile)
        return false;
    for (size_t i = 0; i < a->nline_profile; i++) {
        const struct sx_lp_rank *x = &a->line_profile[i], *y = &b->line_profile[i];
        if (x->rank != y->rank || x->n != y->n)
            return false;
        for (size_t j = 0; j < x->n; j++) {
            const struct sx_lp_record *s = &x->records[j], *t = &y->records[j];
            if (!str_same(s->region, t->region) || !str_same(s->filename, t->filename) ||
                !str_same(s->function, t->function) ||
                s->first_lineno != t->first_lineno ||
                !mem_same(s->line_numbers, s->nline_numbers, t->line_numbers,
                          t->nline_numbers, sizeof(int64_t)) ||
                !mem_same(s->hits, s->nhits, t->hits, t->nhits, sizeof(int64_t)) ||
                !mem_same(s->times, s->ntimes, t->times, t->ntimes, sizeof(double)) ||
                memcmp(&s->unit, &t->unit, sizeof s->unit) != 0)
                return false;
        }
    }
    return true;
}

static bool runs_same(const struct sx_run *a, const struct sx_run *b, char *why,
                      size_t nwhy) {
    if (!str_same(a->path, b->path) || a->schema != b->schema || a->layout != b->layout ||
        a->summary != b->summary || a->num_ranks != b->num_ranks ||
        a->event_data_available != b->event_data_available)
        DIFF("the run's header differs");
    if (a->metadata.kind != b->metadata.kind ||
        !sx_value_equal(&a->metadata, &b->metadata))
        DIFF("metadata differs");
    if (!strs_same(a->names, a->nnames, b->names, b->nnames))
        DIFF("region names differ (%zu vs %zu)", a->nnames, b->nnames);
    if (a->nrows != b->nrows)
        DIFF("%zu rows != %zu rows", a->nrows, b->nrows);
    for (size_t r = 0; r < a->nrows; r++)
        if (!row_same(&a->rows[r], &b->rows[r], r, why, nwhy))
            return false;
    if (a->nindex != b->nindex || a->file_cols != b->file_cols ||
        a->has_meta_col != b->has_meta_col || a->delta_encoded != b->delta_encoded ||
        a->nevents != b->nevents)
        DIFF("the run's index differs");
    if (a->has_threads != b->has_threads || a->has_tasks != b->has_tasks ||
        !lanes_same(a->threads, a->nthreads, b->threads, b->nthreads) ||
        !lanes_same(a->tasks, a->ntasks, b->tasks, b->ntasks))
        DIFF("threads or tasks differ");
    if (!likwid_same(a, b))
        DIFF("likwid differs");
    if (!line_profile_same(a, b))
        DIFF("line_profile differs");
    return true;
}

/* ------------------------------------------------------------------ */
/* One document, read both ways                                       */

struct counts {
    size_t elements, fast;
};

static enum sx_status count_value(void *ctx, const char *key, size_t klen,
                                  const char *text, size_t n, uint64_t off,
                                  struct sx_error *err) {
    (void)ctx, (void)key, (void)klen, (void)text, (void)n, (void)off, (void)err;
    return SX_OK;
}

static enum sx_status count_regions(void *ctx, struct sx_error *err) {
    (void)ctx, (void)err;
    return SX_OK;
}

static enum sx_status count_element(void *ctx, size_t i, struct sx_row *row,
                                    const char *name, size_t nlen, const char *text,
                                    size_t n, uint64_t off, struct sx_error *err) {
    struct counts *c = ctx;
    (void)i, (void)name, (void)nlen, (void)text, (void)n, (void)off, (void)err;
    c->elements++;
    c->fast += row != NULL;
    return SX_OK;
}

static enum sx_status count_end(void *ctx, struct sx_error *err) {
    (void)ctx, (void)err;
    return SX_OK;
}

static const struct sx_jstream_ops count_ops = {count_value, count_regions, count_element,
                                                count_end};

/* How many elements of regions the fast path reads in the document at 'path'. */
static struct counts count_fast(const char *path) {
    struct counts c = {0, 0};
    struct sx_error err;
    sx_error_clear(&err);
    unsetenv(FAST_ENV);
    (void)sx_jstream_read(path, &count_ops, &c, &err);
    return c;
}

static enum sx_status load(const char *path, bool fast, struct sx_run **run,
                           struct sx_error *err) {
    if (fast)
        unsetenv(FAST_ENV); /* the default */
    else
        ASSERT(setenv(FAST_ENV, "0", 1) == 0);
    sx_error_clear(err);
    *run = NULL;
    const enum sx_status st = sx_json_load(path, run, err);
    unsetenv(FAST_ENV);
    return st;
}

/* Which way a document must go, besides the same answer both ways. */
enum want_fast { ANY_PATH = -1, NO_FAST = 0, ALL_FAST = 1 };
enum want_ok { ANY_END = -1, FAILS = 0, LOADS = 1 };

/*
 * Load 'path' with the fast path on and off: the same run, or the same status
 * and error. 'wf': ALL_FAST when every element must go through the fast path
 * (and there is one), NO_FAST when none may; 'wo': whether it must load.
 * Returns what the fast path read (not counted when 'counting' is off).
 */
static struct counts check_path(const char *label, const char *path, int wf, int wo) {
    struct sx_run *a = NULL, *b = NULL;
    struct sx_error ea, eb;
    char why[600];
    struct counts c = {0, 0};

    const enum sx_status sa = load(path, true, &a, &ea);
    const enum sx_status sb = load(path, false, &b, &eb);
    ndocs++;
    if (sa != sb || ea.code != eb.code || strcmp(ea.text, eb.text) != 0 ||
        strcmp(ea.source, eb.source) != 0 || ea.rank != eb.rank) {
        fprintf(stderr,
                "  %s: fast path: status %d [%s]\n  %*s  jansson:   status %d [%s]\n",
                label, sa, ea.text, (int)strlen(label), "", sb, eb.text);
        CHECK(!"the fast path and jansson disagree");
    } else if (sa == SX_OK && !runs_same(a, b, why, sizeof why)) {
        fprintf(stderr, "  %s: the fast path reads another run: %s\n", label, why);
        CHECK(!"the fast path and jansson read different runs");
    }
    CHECK(sa != SX_OK || (a != NULL && b != NULL));
    CHECK(sa == SX_OK || (a == NULL && b == NULL && ea.text[0] != '\0'));
    if (wo != ANY_END && (sa == SX_OK) != (wo == LOADS)) {
        fprintf(stderr, "  %s: status %d [%s], want %s\n", label, sa, ea.text,
                wo == LOADS ? "a run" : "an error");
        CHECK(!"outcome");
    }
    if (!counting && wf == ANY_PATH)
        goto out; /* a third read costs much under the sanitizers, and says little */
    c = count_fast(path);
    nelements += c.elements;
    nfast += c.fast;
    if ((wf == ALL_FAST && (c.elements == 0 || c.fast != c.elements)) ||
        (wf == NO_FAST && c.fast != 0)) {
        fprintf(stderr, "  %s: the fast path read %zu of %zu elements, want %s\n", label,
                c.fast, c.elements, wf == ALL_FAST ? "all" : "none");
        CHECK(!"fast path coverage");
    }
out:
    sx_run_free(a);
    sx_run_free(b);
    return c;
}

/* 'text' as a plain document and gzipped in small members (the window's end all along).
 */
static void check_text(const char *label, const char *text, size_t n, int wf, int wo) {
    char l[300];
    put_file(tmp_json, text, n);
    check_path(label, tmp_json, wf, wo);
    put_gz(tmp_gz, text, n, 7);
    snprintf(l, sizeof l, "%s (gzip, 7-byte members)", label);
    check_path(l, tmp_gz, wf, wo);
}

#define HEAD                                                                             \
    "{\"format\": \"scope-profiler-profile\", \"format_version\": 1, \"num_ranks\": 2, "
#define EV "\"start_times_ns\": [1, 2], \"end_times_ns\": [3, 4]"
#define EV1 "\"start_times_ns\": [1], \"end_times_ns\": [3]"

/* A document with one row: the members 'a' 'b' 'c' (concatenated). */
static void check_row3(const char *label, const char *a, const char *b, const char *c,
                       int wf, int wo) {
    struct sx_buf d = {0};
    sx_buf_puts(&d, HEAD "\"regions\": [{");
    sx_buf_puts(&d, a);
    sx_buf_puts(&d, b);
    sx_buf_puts(&d, c);
    sx_buf_puts(&d, "}]}");
    ASSERT(!d.failed);
    check_text(label, d.data, d.len, wf, wo);
    sx_buf_free(&d);
}

static void check_row(const char *label, const char *members, int wf, int wo) {
    check_row3(label, members, "", "", wf, wo);
}

/* ------------------------------------------------------------------ */
/* The fast path's look-ahead                                         */

/*
 * A list of integers that starts k bytes before the end of the text, for every
 * k around the 64 bytes the fast path wants to see ahead of a value: at the end
 * of the text it reads what there is, and never gives the row up for it.
 */
static void test_lookahead(void) {
    char doc[400], label[64];
    for (int pad = 0; pad < 100; pad++) {
        const int n =
            snprintf(doc, sizeof doc,
                     HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, "
                          "\"end_times_ns\": [3], \"start_times_ns\": [1]%*s}]}",
                     pad, "");
        ASSERT(n > 0 && (size_t)n < sizeof doc);
        snprintf(label, sizeof label, "a list, %d spaces, the end of the row", pad);
        check_text(label, doc, (size_t)n, ALL_FAST, LOADS);
    }
}

/* ------------------------------------------------------------------ */
/* Strings                                                            */

/* JSON string tokens: whether jansson takes them, and whether they hold a NUL. */
static const struct {
    const char *tok;
    bool valid, nul;
} strings[] = {
    {"\"plain\"", true, false},
    {"\"\"", true, false},
    {"\"q\\\"b\\\\s\\/f\\bb\\ff\\nn\\rr\\tt\"", true, false},
    {"\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", true, false},
    {"\"\\u00e9\\u00E9\\u65e5\\u0041\\u007f\\u0080\\u07ff\\u0800\\uffff\"", true, false},
    {"\"\\ud83d\\ude00\\uD83D\\uDE00\\udbff\\udfff\\ud800\\udc00\"", true, false},
    {"\"\\u0000\"", true, true},
    {"\"a\\u0000b\"", true, true},
    {"\"\\u0000sxbig0:12\"", true, true},
    {"\"raw DEL \x7f\"", true, false},
    {"\"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf \xc2\x80 "
     "\xe0\xa0\x80 \xf0\x90\x80\x80 \xed\x9f\xbf \xee\x80\x80\"",
     true, false},
    {"\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\ud83d\\ude00bbbbbbbbbbbbbb\\nccccccccccccc\"",
     true, false},
    /* escapes jansson refuses */
    {"\"\\ud83d\"", false, false},
    {"\"\\ud83dx\"", false, false},
    {"\"\\ud83d\\u0041\"", false, false},
    {"\"\\ud83d\\ud83d\"", false, false},
    {"\"\\ude00\"", false, false},
    {"\"\\ude00\\ud83d\"", false, false},
    {"\"\\ud83d\\n\"", false, false},
    {"\"\\x41\"", false, false},
    {"\"\\u12\"", false, false},
    {"\"\\u12G4\"", false, false},
    {"\"\\U00e9\"", false, false},
    {"\"\\'\"", false, false},
    {"\"\\\"", false, false},
    /* raw bytes jansson refuses */
    {"\"ctl \x01\"", false, false},
    {"\"ctl \x1f\"", false, false},
    {"\"tab \t\"", false, false},
    {"\"nl \n\"", false, false},
    {"\"overlong \xc0\x80\"", false, false},
    {"\"overlong \xc1\xbf\"", false, false},
    {"\"overlong \xe0\x80\x80\"", false, false},
    {"\"overlong \xe0\x9f\xbf\"", false, false},
    {"\"overlong \xf0\x80\x80\x80\"", false, false},
    {"\"overlong \xf0\x8f\xbf\xbf\"", false, false},
    {"\"cut \xc3\"", false, false},
    {"\"cut \xc3x\"", false, false},
    {"\"cut \xe6\x97\"", false, false},
    {"\"cut \xf0\x9f\x98\"", false, false},
    {"\"surrogate \xed\xa0\x80\"", false, false},
    {"\"surrogate \xed\xbf\xbf\"", false, false},
    {"\"beyond \xf4\x90\x80\x80\"", false, false},
    {"\"beyond \xf5\x80\x80\x80\"", false, false},
    {"\"beyond \xf8\x88\x80\x80\x80\"", false, false},
    {"\"byte \xfe\"", false, false},
    {"\"byte \xff\"", false, false},
    {"\"continuation \x80\"", false, false},
    {"\"continuation \xbf\"", false, false},
    {"\"unterminated", false, false},
};

/* Where a string goes in a row. */
enum place {
    P_NAME,
    P_TAG,
    P_SFILE,
    P_STEXT,
    P_META_VALUE,
    P_META_KEY,
    P_ROW_KEY,
    P_NPLACES
};

static void test_strings(void) {
    static const char *const place_names[P_NPLACES] = {
        "name",           "tag",          "source_file", "source_text",
        "metadata value", "metadata key", "row key"};
    char label[200];

    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        const char *s = strings[i].tok;
        for (int p = 0; p < P_NPLACES; p++) {
            int wf = strings[i].valid && !strings[i].nul ? ALL_FAST : NO_FAST;
            int wo = strings[i].valid && !strings[i].nul ? LOADS : FAILS;
            /* a NUL is kept where the run keeps text with its length (the C string
             * ends there alike); a name and a key cannot hold one */
            if (strings[i].valid && strings[i].nul && p != P_NAME && p != P_META_KEY &&
                p != P_ROW_KEY)
                wf = ALL_FAST, wo = LOADS;
            if (p == P_ROW_KEY)
                wf = NO_FAST; /* an unknown key */
            snprintf(label, sizeof label, "string %zu as the %s", i, place_names[p]);
            switch (p) {
            case P_NAME:
                check_row3(label, "\"name\": ", s, ", \"rank\": 0, " EV, wf, wo);
                break;
            case P_TAG:
                check_row3(label, "\"name\": \"a\", \"rank\": 0, \"tags\": [\"t\", ", s,
                           "], " EV, wf, wo);
                break;
            case P_SFILE:
                check_row3(label, "\"name\": \"a\", \"rank\": 0, \"source_file\": ", s,
                           ", " EV, wf, wo);
                break;
            case P_STEXT:
                check_row3(label,
                           "\"name\": \"a\", \"rank\": 0, " EV ", \"source_text\": ", s,
                           "", wf, wo);
                break;
            case P_META_VALUE:
                check_row3(label,
                           "\"name\": \"a\", \"rank\": 0, " EV
                           ", \"event_metadata\": [{}, {\"k\": ",
                           s, "}]", wf, wo);
                break;
            case P_META_KEY:
                check_row3(label,
                           "\"name\": \"a\", \"rank\": 0, " EV
                           ", \"event_metadata\": [{\"a\": 1, ",
                           s, ": 2}, {}]", wf, wo);
                break;
            default:
                check_row3(label, "\"name\": \"a\", \"rank\": 0, " EV ", ", s, ": 1", wf,
                           wo);
                break;
            }
        }
    }
    /* keys spelled with escapes are the same keys */
    check_row("escaped keys",
              "\"n\\u0061me\": \"a\", \"\\u0072ank\": 0, \"start_times_ns\": [1], "
              "\"end\\u005ftimes_ns\": [2], \"event_metad\\u0061ta\": [{\"\\u006b\": 1}]",
              ALL_FAST, LOADS);
    check_row("a key that only looks like one", "\"Name\": \"a\", \"rank\": 0, " EV,
              NO_FAST, FAILS);
    check_row("a key with a NUL",
              "\"name\\u0000\": \"a\", \"name\": \"a\", \"rank\": 0, " EV, NO_FAST,
              FAILS);
    /* strings long enough to leave the reader's look-ahead on every side of an escape */
    for (size_t k = 0; k < 40; k++) {
        char row[400];
        snprintf(
            row, sizeof row,
            "\"name\": \"%.*s\\ud83d\\ude00\\t%.*s\xf0\x9f\x98\x80\", \"rank\": 0, " EV,
            (int)k, "0123456789012345678901234567890123456789", (int)(39 - k),
            "0123456789012345678901234567890123456789");
        snprintf(label, sizeof label, "escape after %zu bytes", k);
        check_row(label, row, ALL_FAST, LOADS);
    }
}

/* ------------------------------------------------------------------ */
/* Cuts, window ends and long rows                                    */

/* A document with a row of every feature the fast path reads, and one it leaves. */
static const char rich_doc[] =
    "{\"format\": \"scope-profiler-profile\", \"format_version\": 1, \"exporter\": "
    "\"scope-profiler@0.7.3\", \"num_ranks\": 2, \"metadata\": {\"label\": "
    "\"caf\\u00e9\"}, \"regions\": [{\"name\": \"l\\u00f6sen/\xe6\xb1\x82\xe8\xa7\xa3 "
    "\\\"q\\\" \\\\ \\/ \\b\\f\\n\\r\\t \\ud83d\\ude00 \xf0\x9f\x98\x80 end\", \"rank\": "
    "1, \"source_file\": \"a/very/long/path/to/the/source/file/of/this/region.py\", "
    "\"source_lineno\": null, \"source_text\": \"with scope(\\\"x\\\"):\\n    pass\\t# "
    "\\u2603\", \"tags\": [\"\\u6570\\u5024\", \"caf\xc3\xa9\", \"\", \"\\u0000\"], "
    "\"start_times_ns\": [0, 1, -1, 9223372036854775807, -9223372036854775808, "
    "1234567890123456789, 22,333,4444 , 55555,\n 666666], \"end_times_ns\": [1,2,3,4,5,6,"
    "7,8,9,10,11], \"gpu_durations_ns\": [-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1], "
    "\"call_ids\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], \"parent_ids\": [-1, 0, 1, 2, 3, "
    "4, 5, 6, 7, 8, 9], \"event_metadata\": [{}, {\"i\": 1, \"f\": 2.5, \"e\": 1e-05, "
    "\"E\": 1E+300, \"z\": -0.0, \"s\": \"\\u00e9\\n\", \"t\": true, \"F\": false, "
    "\"n\": "
    "null, \"k\": -9223372036854775808}, {}, {\"a\": 0.1}, {}, {\"b\": 12345678.875}, "
    "{}, "
    "{}, {\"c\": \"x\"}, {}, {\"\\u00e9\": 7}], \"exclusive_total_ns\": 42}, {\"name\": "
    "\"nested\", \"rank\": 0, \"start_times_ns\": [5], \"end_times_ns\": [6], "
    "\"event_metadata\": [{\"p\": {\"dt\": 0.5, \"lst\": [1, \"z\\u00e9\", "
    "\"]\\\"}\"]}}], "
    "\"unknown\": \"}\\\\\"}, {\"name\": \"agg\", \"rank\": 0, \"aggregate\": "
    "{\"count\": "
    "2, \"total\": 7.5}, \"event_data_available\": false}], \"threads\": {\"0\": "
    "[{\"index\": 0, \"name\": \"Main\", \"ident\": 1, \"native_id\": 2, \"daemon\": "
    "false, "
    "\"start_ns\": 0, \"end_ns\": 9, \"cpu_ns\": 5}]}}\n";

static void test_rich(void) {
    const size_t n = sizeof rich_doc - 1;
    char label[160];

    check_text("rich document", rich_doc, n, ANY_PATH, LOADS);
    struct counts c = count_fast(tmp_gz);
    CHECK(c.elements == 3 && c.fast == 1);
    /*
     * The text the reader holds ends after every byte in turn: gzip members of 1 to
     * 130 bytes, and two members split at every byte.
     */
    for (size_t chunk = 1; chunk <= 130; chunk += chunk < 20 ? 1 : 11) {
        put_gz(tmp_gz, rich_doc, n, chunk);
        snprintf(label, sizeof label, "rich document in %zu-byte members", chunk);
        c = check_path(label, tmp_gz, ANY_PATH, LOADS);
        CHECK(c.elements == 3 &&
              c.fast == 1); /* the end of the text in no way stops it */
    }
    counting = false;
    for (size_t k = 1; k < n; k++) {
        put_gz_split(tmp_gz, rich_doc, n, k);
        snprintf(label, sizeof label, "rich document split at %zu", k);
        check_path(label, tmp_gz, ANY_PATH, LOADS);
    }
    counting = true;
}

/* A gzip file that ends early, just after rows that jansson refuses. */
static void test_damaged_gzip(void) {
    static const char *const docs[] = {
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [1, 2], "
             "\"end_times_ns\": [3]}",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [1, 2], "
             "\"end_times_ns\": [3]}, ",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, \"source_file\": 1, " EV "}",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV ", \"tags\": [1]}",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV ", \"event_metadata\": "
             "[{\"a\": \"b\"}]}",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV "}, {\"name\": \"a\"}",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV "}]",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV "}",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [1",
    };
    char label[64];
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        put_gz_unfinished(tmp_gz, docs[i], strlen(docs[i]));
        snprintf(label, sizeof label, "unfinished gzip %zu", i);
        check_path(label, tmp_gz, ANY_PATH, FAILS);
    }
}

int main(void) {
    const clock_t t0 = clock();
    snprintf(tmp_json, sizeof tmp_json, "%s/test_json_stream_%ld.json", SX_BUILD_DIR,
             (long)getpid());
    snprintf(tmp_gz, sizeof tmp_gz, "%s/test_json_stream_%ld.json.gz", SX_BUILD_DIR,
             (long)getpid());
    unsetenv(FAST_ENV);

    test_lookahead();
    test_strings();
    test_rich();
    test_damaged_gzip();

    printf("%zu documents read both ways; the fast path read %zu of their %zu region "
           "elements (%.1f s)\n",
           ndocs, nfast, nelements, (double)(clock() - t0) / CLOCKS_PER_SEC);
    unlink(tmp_json);
    unlink(tmp_gz);
    TEST_DONE();
}
