/* test_json_read.c - JSON profiles and stored JSON snippets read back into the run model
 */
#include "buf.h"
#include "doc.h"
#include "fault.h"
#include "h5_read.h"
#include "json_convert.h"
#include "json_load.h"
#include "json_parse.h"
#include "json_value.h"
#include "run.h"
#include "run_compare.h"
#include "sx_fault.h"
#include "sx_test.h"
#include "sx_test_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define GOLDEN SX_SHARED_DIR "/golden/"

/* ------------------------------------------------------------------ */
/* sx_json_canon_meta: expected strings are python3's json.dumps(json.loads(text)) */

static void check_canon(const char *text, const char *want, bool want_any,
                        uint64_t want_count) {
    struct sx_buf b = {0};
    struct sx_error err;
    bool any = !want_any;
    uint64_t count = 12345;

    sx_error_clear(&err);
    const enum sx_status st =
        sx_json_canon_meta(text, strlen(text), &b, &any, &count, &err);
    CHECK(st == SX_OK);
    if (st != SX_OK) {
        fprintf(stderr, "  canon(%s): %s\n", text, err.text);
    } else {
        CHECK_STR(b.data, want);
        CHECK(any == want_any);
        CHECK(count == want_count);
    }
    sx_buf_free(&b);
}

static void check_canon_fails(const char *text, size_t n, enum sx_status want,
                              const char *want_text) {
    struct sx_buf b = {0};
    struct sx_error err;

    sx_error_clear(&err);
    const enum sx_status st = sx_json_canon_meta(text, n, &b, NULL, NULL, &err);
    CHECK(st == want);
    CHECK(err.code == want);
    if (strstr(err.text, want_text) == NULL) {
        fprintf(stderr, "  canon(%.40s) error [%s] lacks [%s]\n", text, err.text,
                want_text);
        CHECK(!"error text");
    }
    sx_buf_free(&b);
}

static void test_canon_meta(void) {
    check_canon("[{\"a\": 1, \"b\": 2.50, \"a\": 3}, {}]", "[{\"a\": 3, \"b\": 2.5}, {}]",
                true, 2);
    check_canon(
        "[{\"x\":1e5,\"y\":[1,true,null,{\"z\":\"\\u00e9\\ud83d\\ude00\"}]}]",
        "[{\"x\": 100000.0, \"y\": [1, true, null, {\"z\": \"\\u00e9\\ud83d\\ude00\"}]}]",
        true, 1);
    check_canon(
        "[{\"n\": -0.0, \"s\": 1e-7, \"t\": 1e16, \"u\": 9223372036854775807, \"v\": "
        "-9223372036854775808}]",
        "[{\"n\": -0.0, \"s\": 1e-07, \"t\": 1e+16, \"u\": 9223372036854775807, \"v\": "
        "-9223372036854775808}]",
        true, 1);
    /* Raw UTF-8 in the stored text, odd spacing, escapes. */
    check_canon(
        "  [ {\"k\" :\"tab\\there/\\\"q\\\"\", \"caf\xc3\xa9\": "
        "\"\xe6\x97\xa5\xe6\x9c\xac\"} "
        ", {\"f\": 0.1, \"g\": 1.0, \"h\": 123456789.125e3} ]  ",
        "[{\"k\": \"tab\\there/\\\"q\\\"\", \"caf\\u00e9\": \"\\u65e5\\u672c\"}, {\"f\": "
        "0.1, \"g\": 1.0, \"h\": 123456789125.0}]",
        true, 2);
    check_canon("[{}, {}, {}]", "[{}, {}, {}]", false, 3);
    check_canon("[]", "[]", false, 0);
    check_canon("", "[]", false, 0); /* json.loads(text or "[]") */
    check_canon("[{\"deep\": {\"b\": {\"c\": [[], {}, [1, [2, [3.5]]]]}}, \"z\": false}]",
                "[{\"deep\": {\"b\": {\"c\": [[], {}, [1, [2, [3.5]]]]}}, \"z\": false}]",
                true, 1);
    check_canon(
        "[{\"big\": 12345678901234567890e-3, \"tiny\": 5e-324, \"e\": 1E+2, \"m\": "
        "-1.5E-10}]",
        "[{\"big\": 1.2345678901234568e+16, \"tiny\": 5e-324, \"e\": 100.0, \"m\": "
        "-1.5e-10}]",
        true, 1);

    check_canon_fails("[{\"a\": NaN}]", 12, SX_ERR_VALUE,
                      "Out of range float values are not JSON compliant");
    check_canon_fails("[{\"a\": [Infinity]}]", 19, SX_ERR_VALUE,
                      "Out of range float values are not JSON compliant");
    check_canon_fails("[{\"a\": -Infinity}]", 18, SX_ERR_VALUE,
                      "Out of range float values are not JSON compliant");
    check_canon_fails("[{\"a\": 1e400}]", 14, SX_ERR_VALUE,
                      "Out of range float values are not JSON compliant");
    check_canon_fails("{\"a\": 1}", 8, SX_ERR_FORMAT, "must be a list of objects");
    check_canon_fails("[{}, 1]", 7, SX_ERR_FORMAT, "item 1 must be an object");
    check_canon_fails("[{}, [", 6, SX_ERR_FORMAT, "not valid JSON");
    check_canon_fails("[{\"NaN\": \"NaN\"}] x", 18, SX_ERR_FORMAT, "not valid JSON");
    /* Python ints have no limit: big ones are printed exactly. */
    check_canon("[{\"a\": 99999999999999999999, \"b\": [-9223372036854775809, "
                "18446744073709551616, 9223372036854775807]}]",
                "[{\"a\": 99999999999999999999, \"b\": [-9223372036854775809, "
                "18446744073709551616, 9223372036854775807]}]",
                true, 1);
    /* Any valid string is a string, whatever it reads like: the big integers'
     * marker must not take one, with or without big integers beside it. */
    check_canon("[{\"a\": \"\\u0000sxbig:12\"}]", "[{\"a\": \"\\u0000sxbig:12\"}]", true,
                1);
    check_canon("[{\"a\": \"\\u0000sxbig:\"}]", "[{\"a\": \"\\u0000sxbig:\"}]", true, 1);
    check_canon("[{\"a\": \"\\u0000sx\\u0062ig0:5\", \"b\": 99999999999999999999, \"c\": "
                "\"\\u0000sxbig1:\"}]",
                "[{\"a\": \"\\u0000sxbig0:5\", \"b\": 99999999999999999999, \"c\": "
                "\"\\u0000sxbig1:\"}]",
                true, 1);
    check_canon("[{\"a\": \"\\u0000sxbig0:1\", \"b\": \"\\u0000sxbig1:2\", \"c\": "
                "-99999999999999999999}]",
                "[{\"a\": \"\\u0000sxbig0:1\", \"b\": \"\\u0000sxbig1:2\", \"c\": "
                "-99999999999999999999}]",
                true, 1);
}

static void test_tags(void) {
    char **tags = NULL;
    size_t n = 99;
    struct sx_error err;

    sx_error_clear(&err);
    CHECK(sx_json_parse_tags("[\"golden\", \"hot\"]", 17, "tags", &tags, &n, &err) ==
          SX_OK);
    CHECK(n == 2);
    if (n == 2) {
        CHECK_STR(tags[0], "golden");
        CHECK_STR(tags[1], "hot");
    }
    for (size_t i = 0; i < n; i++)
        free(tags[i]);
    free(tags);

    CHECK(sx_json_parse_tags("", 0, "tags", &tags, &n, &err) == SX_OK);
    CHECK(n == 0);
    free(tags);
    CHECK(sx_json_parse_tags("[]", 2, "tags", &tags, &n, &err) == SX_OK);
    CHECK(n == 0);
    free(tags);
    CHECK(sx_json_parse_tags("[\"\\u00e9\"]", 10, "tags", &tags, &n, &err) == SX_OK);
    CHECK(n == 1 && strcmp(tags[0], "\xc3\xa9") == 0);
    free(tags[0]);
    free(tags);

    CHECK(sx_json_parse_tags("[\"a\", 1]", 8, "tags", &tags, &n, &err) == SX_ERR_FORMAT);
    CHECK(tags == NULL && n == 0);
    sx_error_clear(&err);
    CHECK(sx_json_parse_tags("\"abc\"", 5, "tags", &tags, &n, &err) == SX_ERR_FORMAT);
    CHECK(strstr(err.text, "list of strings") != NULL);
    sx_error_clear(&err);
    CHECK(sx_json_parse_tags("[\"a\"", 4, "tags", &tags, &n, &err) == SX_ERR_FORMAT);
}

/* ------------------------------------------------------------------ */
/* Golden documents                                                   */

struct golden {
    const char *name;
    size_t rows, names;
    uint64_t events;
    int64_t num_ranks;
};

/* Counted with python3 from each run.json. */
static const struct golden goldens[] = {
    {"aggregation", 4, 4, 0, 1},
    {"asyncio_tasks", 4, 4, 38, 1},
    {"basic_nested", 4, 4, 321, 1},
    {"gen_aggregate", 30, 7, 0, 5},
    {"gen_filtered_chunked", 12, 5, 50000, 3},
    {"gen_likwid_lineprof", 9, 4, 2000, 3},
    {"gen_schema1", 13, 5, 3000, 3},
    {"gen_schema2_cwriter", 6, 6, 2500, 6},
    {"gen_schema2_early", 7, 4, 1500, 2},
    {"gen_schema3_allcols", 17, 6, 6000, 4},
    {"line_profiler", 2, 2, 6, 1},
    {"mpi4_direct", 15, 8, 205, 4},
    {"mpi4_parallel", 15, 8, 305, 4},
    {"self_recursion", 3, 3, 200, 1},
    {"threads", 3, 3, 161, 1},
    {"unicode_metadata", 3, 3, 13, 1},
};

static struct sx_run *load_ok(const char *path) {
    struct sx_run *run = NULL;
    struct sx_error err;

    sx_error_clear(&err);
    const enum sx_status st = sx_json_load(path, &run, &err);
    CHECK(st == SX_OK);
    if (st != SX_OK)
        fprintf(stderr, "  load %s: %s\n", path, err.text);
    return run;
}

static void check_same(const struct sx_run *a, const struct sx_run *b, const char *what) {
    char why[512];
    const bool same = sx_run_equal(a, b, why, sizeof why);
    CHECK(same);
    if (!same)
        fprintf(stderr, "  %s: %s\n", what, why);
}

static void test_goldens(void) {
    char path[1024];

    for (size_t g = 0; g < sizeof goldens / sizeof goldens[0]; g++) {
        const struct golden *gd = &goldens[g];
        snprintf(path, sizeof path, GOLDEN "%s/run.json", gd->name);
        struct sx_run *js = load_ok(path);
        snprintf(path, sizeof path, GOLDEN "%s/run.json.gz", gd->name);
        struct sx_run *gz = load_ok(path);
        struct sx_run *h5 = NULL;
        struct sx_error err;
        if (js == NULL || gz == NULL)
            goto next;
        CHECK(js->layout == SX_LAYOUT_JSON);
        CHECK(js->nrows == gd->rows);
        CHECK(js->nnames == gd->names);
        CHECK(js->num_ranks == gd->num_ranks);
        uint64_t events = 0;
        for (size_t r = 0; r < js->nrows; r++) {
            const struct sx_row *row = &js->rows[r];
            CHECK(row->region < js->nnames);
            if (!row->is_aggregate) {
                events += row->count;
                CHECK((row->cols & 3u) == 3u);
                for (int c = 0; c < SX_NCOLS; c++)
                    CHECK(((row->cols & SX_COLBIT(c)) != 0) == (row->col[c] != NULL));
                CHECK(row->meta_any == (row->meta_text != NULL));
            } else {
                CHECK(row->nagg > 0);
            }
        }
        CHECK(events == gd->events);
        if (events != gd->events)
            fprintf(stderr, "  %s: %llu events\n", gd->name, (unsigned long long)events);
        check_same(js, gz, gd->name);
        check_same(gz, js, gd->name);

        /* The HDF5 run the document was exported from is the same run. */
        snprintf(path, sizeof path, GOLDEN "%s/run.h5", gd->name);
        sx_error_clear(&err);
        CHECK(sx_h5_load(path, false, &h5, &err) == SX_OK);
        if (h5 == NULL) {
            fprintf(stderr, "  h5 load %s: %s\n", path, err.text);
        } else {
            snprintf(path, sizeof path, "%s: h5 vs json", gd->name);
            check_same(h5, js, path);
            check_same(js, h5, path);
        }
        sx_run_free(h5);
    next:
        sx_run_free(js);
        sx_run_free(gz);
    }

    /* Indented and summary documents load; the indented one is the same run. */
    struct sx_run *a = load_ok(GOLDEN "basic_nested/run.json");
    struct sx_run *b = load_ok(GOLDEN "basic_nested/run.indent2.json");
    if (a != NULL && b != NULL)
        check_same(a, b, "indent2");
    sx_run_free(b);
    b = load_ok(GOLDEN "basic_nested/run.summary.json");
    if (a != NULL && b != NULL) {
        char why[256];
        CHECK(!b->event_data_available);
        CHECK(b->nrows == 4 && b->rows[0].is_aggregate &&
              !b->rows[0].event_data_available);
        CHECK(!sx_run_equal(a, b, why, sizeof why));
        CHECK(strstr(why, "event_data_available") != NULL);
    }
    sx_run_free(a);
    sx_run_free(b);
    b = load_ok(GOLDEN "aggregation/run.summary.json");
    sx_run_free(b);
}

/* ------------------------------------------------------------------ */
/* Document -> run -> document: the loaded run writes the same text     */

static char *slurp(const char *path, size_t *n);

static void check_rewrite(const char *path, int indent) {
    struct sx_error err;
    struct sx_run *run = NULL;
    struct sx_doc doc;
    struct sx_buf out = {0};
    const struct sx_event_source src = {0};
    size_t n = 0;
    char *orig = NULL;

    memset(&doc, 0, sizeof doc);
    sx_error_clear(&err);
    run = load_ok(path);
    if (run == NULL)
        return;
    CHECK(sx_doc_plan(&doc, run, NULL, indent, 4096, &err) == SX_OK);
    CHECK(sx_doc_header(&doc, &out, &err) == SX_OK);
    /* blocks of 4 KiB: the room of one block's events is that of the next */
    struct sx_doc_room room = {0};
    for (size_t b = 0; b < doc.nblocks; b++)
        CHECK(sx_doc_block(&doc, &src, NULL, &room, b, &out, &err) == SX_OK);
    sx_doc_room_free(&room);
    CHECK(sx_doc_trailer(&doc, &out, &err) == SX_OK);
    orig = slurp(path, &n);
    /* Only the exporter value may differ. */
    const char *e1 = strstr(orig, "\"exporter\": \""),
               *t1 = strstr(orig, "\"time_unit\"");
    const char *e2 = out.data ? strstr(out.data, "\"exporter\": \"") : NULL;
    const char *t2 = out.data ? strstr(out.data, "\"time_unit\"") : NULL;
    const bool same = e1 != NULL && e2 != NULL && t1 != NULL && t2 != NULL &&
                      e1 - orig == e2 - out.data &&
                      memcmp(orig, out.data, (size_t)(e1 - orig)) == 0 &&
                      strcmp(t1, t2) == 0;
    CHECK(same);
    if (!same)
        fprintf(stderr,
                "  rewrite of %s (indent %d) differs: %s [%zu vs %zu bytes] %d%d%d%d\n",
                path, indent, err.text, n, out.len, e1 != NULL, e2 != NULL, t1 != NULL,
                t2 != NULL);
    free(orig);
    sx_buf_free(&out);
    sx_doc_free(&doc);
    sx_run_free(run);
}

static void test_rewrite(void) {
    char path[1024];
    for (size_t g = 0; g < sizeof goldens / sizeof goldens[0]; g++) {
        snprintf(path, sizeof path, GOLDEN "%s/run.json", goldens[g].name);
        check_rewrite(path, -1);
    }
    check_rewrite(GOLDEN "basic_nested/run.summary.json", -1);
    check_rewrite(GOLDEN "aggregation/run.summary.json", -1);
    check_rewrite(GOLDEN "basic_nested/run.indent2.json", 2);
}

/* sx_json_to_value: the tree the indent writer lays out again. */
static void test_to_value(void) {
    struct sx_value v;
    struct sx_buf b = {0};
    struct sx_error err;
    const char *text =
        "[{\"a\": 1, \"a\": 18446744073709551615, \"b\": [2.5, null, true]}, "
        "{\"c\": -99999999999999999999, \"d\": \"\\u00e9\"}]";

    sx_error_clear(&err);
    CHECK(sx_json_to_value(text, strlen(text), &v, &err) == SX_OK);
    CHECK(v.kind == SX_V_ARRAY && v.u.arr.n == 2);
    if (v.kind == SX_V_ARRAY && v.u.arr.n == 2) {
        const struct sx_value *o = &v.u.arr.items[0];
        CHECK(o->kind == SX_V_OBJECT && o->u.obj.n == 2);
        CHECK(o->u.obj.items[0].value.kind == SX_V_UINT);
        CHECK(o->u.obj.items[0].value.u.u == UINT64_MAX);
        CHECK(v.u.arr.items[1].u.obj.items[0].value.kind == SX_V_RAW);
    }
    sx_write_value(&b, &v, -1, 0);
    CHECK(b.data != NULL);
    if (b.data != NULL)
        CHECK_STR(b.data, "[{\"a\": 18446744073709551615, \"b\": [2.5, null, true]}, "
                          "{\"c\": -99999999999999999999, \"d\": \"\\u00e9\"}]");
    sx_buf_free(&b);
    sx_value_free(&v);
    sx_error_clear(&err);
    CHECK(sx_json_to_value("[1,", 3, &v, &err) == SX_ERR_FORMAT);
    CHECK(v.kind == SX_V_NULL);
}

static void test_unicode_and_lanes(void) {
    struct sx_run *run = load_ok(GOLDEN "unicode_metadata/run.json");
    size_t with_meta = 0;

    if (run == NULL)
        return;
    for (size_t r = 0; r < run->nrows; r++) {
        const struct sx_row *row = &run->rows[r];
        if (row->meta_text == NULL)
            continue;
        with_meta++;
        /* The stored canonical text canonicalizes to itself. */
        struct sx_buf b = {0};
        bool any = false;
        uint64_t count = 0;
        struct sx_error err;
        sx_error_clear(&err);
        CHECK(sx_json_canon_meta(row->meta_text, strlen(row->meta_text), &b, &any, &count,
                                 &err) == SX_OK);
        CHECK(b.data != NULL && strcmp(b.data, row->meta_text) == 0);
        CHECK(any && count == row->count);
        sx_buf_free(&b);
    }
    CHECK(with_meta == 1);
    sx_run_free(run);

    run = load_ok(GOLDEN "asyncio_tasks/run.json");
    if (run != NULL) {
        CHECK(run->has_threads && run->has_tasks);
        CHECK(run->nthreads == 1 && run->ntasks == 1);
        CHECK(run->ntasks == 1 && run->tasks[0].n > 0 && run->tasks[0].tasks != NULL);
    }
    sx_run_free(run);

    run = load_ok(GOLDEN "gen_likwid_lineprof/run.json");
    if (run != NULL) {
        CHECK(run->nlikwid > 0 && run->nline_profile > 0);
        for (size_t i = 0; i < run->nlikwid; i++)
            for (size_t j = 0; j < run->likwid[i].n; j++) {
                const struct sx_likwid_entry *e = &run->likwid[i].entries[j];
                /* marker_api entries have no cpus: the matrix keeps its (names, threads)
                 * shape */
                CHECK(e->events.rows == e->nevent_names);
                CHECK(e->events.cols == e->ncpus ||
                      (e->ncpus == 0 && e->events.cols == e->ntimes));
                /* an empty list keeps no shape: [] is (0, 0) */
                CHECK(e->metrics.rows == e->nmetric_names &&
                      (e->metrics.cols == e->ncpus || e->metrics.rows == 0));
                if (j > 0)
                    CHECK(strcmp(run->likwid[i].entries[j - 1].tag, e->tag) <= 0);
            }
    }
    sx_run_free(run);
}

static void test_compat(void) {
    struct sx_run *run = load_ok(SX_SHARED_DIR "/fixtures/compat/json-v1.json");
    static const int64_t starts[] = {10, 20, 40}, ends[] = {15, 33, 55};

    if (run == NULL)
        return;
    CHECK(run->num_ranks == 1);
    CHECK(run->event_data_available);
    CHECK(run->metadata.kind == SX_V_OBJECT && run->metadata.u.obj.n == 1);
    if (run->metadata.u.obj.n == 1) {
        CHECK_STR(run->metadata.u.obj.items[0].key, "mpi_size");
        CHECK(run->metadata.u.obj.items[0].value.kind == SX_V_INT);
        CHECK(run->metadata.u.obj.items[0].value.u.i == 1);
    }
    CHECK(run->nnames == 1 && strcmp(run->names[0], "solve") == 0);
    CHECK(run->nrows == 1);
    if (run->nrows == 1) {
        const struct sx_row *row = &run->rows[0];
        CHECK(row->rank == 0 && row->region == 0);
        CHECK(row->source_file != NULL && strcmp(row->source_file, "solver.py") == 0);
        CHECK(row->has_lineno && row->source_lineno == 7);
        CHECK(row->source_text == NULL);
        CHECK(row->ntags == 1 && strcmp(row->tags[0], "golden") == 0);
        CHECK(!row->is_aggregate && row->count == 3);
        CHECK(row->cols == (SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END)));
        CHECK(memcmp(row->col[SX_COL_START], starts, sizeof starts) == 0);
        CHECK(memcmp(row->col[SX_COL_END], ends, sizeof ends) == 0);
        CHECK(!row->has_exclusive && row->meta_text == NULL);
    }
    CHECK(run->nthreads == 0 && run->ntasks == 0 && run->nlikwid == 0);
    sx_run_free(run);
}

/* ------------------------------------------------------------------ */
/* Bad documents                                                      */

static char tmp_path[512];

static void write_file(const char *data, size_t n) {
    FILE *f = fopen(tmp_path, "wb");
    ASSERT(f != NULL);
    ASSERT(fwrite(data, 1, n, f) == n);
    ASSERT(fclose(f) == 0);
}

static void expect_load_error(const char *label, enum sx_status want,
                              const char *want_text) {
    struct sx_run *run = NULL;
    struct sx_error err;

    sx_error_clear(&err);
    const enum sx_status st = sx_json_load(tmp_path, &run, &err);
    CHECK(run == NULL);
    CHECK(err.code == st);
    if (st != want || strstr(err.text, want_text) == NULL) {
        fprintf(stderr, "  bad doc '%s': status %d (want %d), error [%s] (want [%s])\n",
                label, st, want, err.text, want_text);
        CHECK(!"bad document error");
    }
    sx_run_free(run);
}

static void bad_doc(const char *label, const char *doc, enum sx_status want,
                    const char *want_text) {
    write_file(doc, strlen(doc));
    expect_load_error(label, want, want_text);
}

#define HEAD                                                                             \
    "{\"format\": \"scope-profiler-profile\", \"format_version\": 1, \"num_ranks\": 1, "
#define ROW0                                                                             \
    "\"name\": \"solve\", \"rank\": 0, \"start_times_ns\": [1, 2], \"end_times_ns\": "   \
    "[3, 4]"

/* A document with one row: ROW0 plus 'extra' members. */
static void bad_row(const char *key, const char *extra, const char *want_text) {
    char doc[1024];
    snprintf(doc, sizeof doc, HEAD "\"regions\": [{" ROW0 ", %s}]}", extra);
    write_file(doc, strlen(doc));
    expect_load_error(key, SX_ERR_FORMAT, want_text);
}

/* The raw bytes of 'path' (a .gz is not gunzipped). */
static char *slurp(const char *path, size_t *n) {
    char *buf = sx_test_slurp(path, n, false);
    ASSERT(buf != NULL && *n > 0);
    return buf;
}

static void test_bad_documents(void) {
    size_t n = 0;
    char *buf = NULL;
    char msg[700];

    /* Missing file. */
    {
        struct sx_run *run = NULL;
        struct sx_error err;
        sx_error_clear(&err);
        CHECK(sx_json_load("/nonexistent/x.json", &run, &err) == SX_ERR_NOT_FOUND);
        CHECK_STR(err.text, "JSON profile not found: /nonexistent/x.json");
    }

    /* Truncated gzip. */
    buf = slurp(GOLDEN "basic_nested/run.json.gz", &n);
    write_file(buf, n / 2);
    expect_load_error("truncated gzip", SX_ERR_FORMAT,
                      "gzip data is damaged or truncated");
    buf[n - 6] ^= 0x55; /* CRC */
    write_file(buf, n);
    expect_load_error("gzip crc", SX_ERR_FORMAT, "gzip data is damaged or truncated");
    free(buf);

    /* Truncated JSON: line and column are reported. */
    buf = slurp(GOLDEN "basic_nested/run.json", &n);
    write_file(buf, n - 10);
    expect_load_error("truncated json", SX_ERR_FORMAT, "is not valid JSON");
    expect_load_error("truncated json", SX_ERR_FORMAT, "line 1, column");
    free(buf);

    bad_doc("empty file", "", SX_ERR_FORMAT, "is not valid JSON");
    bad_doc("whitespace", "  \n ", SX_ERR_FORMAT, "is not valid JSON");
    snprintf(msg, sizeof msg,
             "%s is not a scope-profiler JSON profile (written by `scope-profiler export "
             "json` "
             "or `-o <name>.json`).",
             tmp_path);
    bad_doc("not an object", "[1, 2]", SX_ERR_FORMAT, msg);
    bad_doc("string", "\"scope-profiler-profile\"", SX_ERR_FORMAT, msg);
    bad_doc("format missing", "{\"format_version\": 1, \"regions\": []}", SX_ERR_FORMAT,
            msg);
    bad_doc("format differs", "{\"format\": \"speedscope\", \"regions\": []}",
            SX_ERR_FORMAT, msg);
    bad_doc("format not a string", "{\"format\": 1}", SX_ERR_FORMAT, msg);
    bad_doc("duplicate key, last wins",
            "{\"format\": \"scope-profiler-profile\", \"format\": \"other\"}",
            SX_ERR_FORMAT, msg);
    snprintf(msg, sizeof msg,
             "%s uses JSON profile format version 2; this package supports versions "
             "through 1. "
             "Upgrade scope-profiler to read this file.",
             tmp_path);
    bad_doc("version 2",
            "{\"format\": \"scope-profiler-profile\", \"format_version\": 2}",
            SX_ERR_UNSUPPORTED, msg);
    bad_doc("version \"2\"",
            "{\"format\": \"scope-profiler-profile\", \"format_version\": \"2\"}",
            SX_ERR_UNSUPPORTED, msg);
    bad_doc("version text",
            "{\"format\": \"scope-profiler-profile\", \"format_version\": \"one\"}",
            SX_ERR_FORMAT, "'format_version' must be an integer");
    bad_doc("metadata mismatch",
            HEAD "\"regions\": [{" ROW0 ", \"event_metadata\": [{\"a\": 1}]}]}",
            SX_ERR_FORMAT, "event metadata must match the call count");
    bad_doc("row without name", HEAD "\"regions\": [{\"rank\": 0}]}", SX_ERR_FORMAT,
            "regions[0] has no 'name'");
    bad_doc("row without rank", HEAD "\"regions\": [{\"name\": \"solve\"}]}",
            SX_ERR_FORMAT, "regions[0] ('solve') has no 'rank'");
    bad_doc("rank text", HEAD "\"regions\": [{\"name\": \"solve\", \"rank\": \"zero\"}]}",
            SX_ERR_FORMAT, "'rank' must be an integer, got string");
    bad_doc("name number", HEAD "\"regions\": [{\"name\": 5, \"rank\": 0}]}",
            SX_ERR_FORMAT, "'name' must be a string, got integer");
    bad_doc("row not an object", HEAD "\"regions\": [[]]}", SX_ERR_FORMAT,
            "regions[0] must be an object, got array");
    bad_doc("regions not a list", HEAD "\"regions\": {}}", SX_ERR_FORMAT,
            "'regions' must be a list, got object");
    bad_doc("metadata not an object", HEAD "\"regions\": [], \"metadata\": []}",
            SX_ERR_FORMAT, "'metadata' must be an object");
    bad_doc("num_ranks text", HEAD "\"regions\": [], \"num_ranks\": \"1\"}",
            SX_ERR_FORMAT, "'num_ranks' must be an integer");
    bad_doc("huge number", HEAD "\"regions\": [], \"x\": 1e999}", SX_ERR_UNSUPPORTED,
            "out-of-range float");
    bad_doc("NaN token", HEAD "\"regions\": [], \"metadata\": {\"x\": NaN}}",
            SX_ERR_UNSUPPORTED, "NaN");
    bad_doc(
        "beyond int64",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, \"start_times_ns\": "
             "[9223372036854775808], \"end_times_ns\": [1]}]}",
        SX_ERR_FORMAT,
        "'start_times_ns'[0] must be an integer, got an integer beyond the int64 range");
    bad_doc("invalid utf-8",
            HEAD "\"regions\": [{\"name\": \"a\xff\xfe\", \"rank\": 0}]}", SX_ERR_FORMAT,
            "is not valid JSON");
    bad_doc("start/end lengths",
            HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, "
                 "\"start_times_ns\": [1, 2], \"end_times_ns\": [3]}]}",
            SX_ERR_FORMAT, "'end_times_ns' has 1 values but 'start_times_ns' has 2");
    bad_doc("likwid reshape",
            HEAD "\"regions\": [], \"likwid\": {\"0\": {\"t\": {\"cpus\": [0, 1], "
                 "\"event_names\": [\"E\"], \"events\": [[1.0], [2.0, 3.0]]}}}}",
            SX_ERR_FORMAT, "cannot reshape to (1, 2)");
    bad_doc(
        "thread field missing",
        HEAD
        "\"regions\": [], \"threads\": {\"0\": [{\"index\": 0, \"name\": \"main\"}]}}",
        SX_ERR_FORMAT, "threads[\"0\"][0] has no 'ident'");
    bad_doc("lane rank key", HEAD "\"regions\": [], \"tasks\": {\"zero\": []}}",
            SX_ERR_FORMAT, "key 'zero' is not a rank number");

    /* Wrong types in every row column, each named with its row. */
    static const char *const int_cols[] = {"gpu_durations_ns", "call_ids", "parent_ids",
                                           "thread_ids",       "task_ids", "await_ns"};
    for (size_t i = 0; i < sizeof int_cols / sizeof int_cols[0]; i++) {
        char extra[128], want[160];
        snprintf(extra, sizeof extra, "\"%s\": [1, \"x\"]", int_cols[i]);
        snprintf(want, sizeof want,
                 "regions[0] ('solve', rank 0): '%s'[1] must be an integer", int_cols[i]);
        bad_row(int_cols[i], extra, want);
        snprintf(extra, sizeof extra, "\"%s\": 7", int_cols[i]);
        snprintf(want, sizeof want, "'%s' must be a list of integers, got integer",
                 int_cols[i]);
        bad_row(int_cols[i], extra, want);
        snprintf(extra, sizeof extra, "\"%s\": [1]", int_cols[i]);
        snprintf(want, sizeof want, "'%s' has 1 values but the row has 2 calls",
                 int_cols[i]);
        bad_row(int_cols[i], extra, want);
    }
    bad_doc("start_times_ns",
            HEAD
            "\"regions\": [{\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [1.5]}]}",
            SX_ERR_FORMAT, "'start_times_ns'[0] must be an integer, got real");
    bad_doc("end_times_ns",
            HEAD
            "\"regions\": [{\"name\": \"a\", \"rank\": 0, \"end_times_ns\": \"x\"}]}",
            SX_ERR_FORMAT, "'end_times_ns' must be a list of integers, got string");
    bad_row("exclusive_total_ns", "\"exclusive_total_ns\": 1.5",
            "'exclusive_total_ns' must be an integer, got real");
    bad_row("source_file", "\"source_file\": 3",
            "'source_file' must be a string, got integer");
    bad_row("source_text", "\"source_text\": []",
            "'source_text' must be a string, got array");
    bad_row("source_lineno", "\"source_lineno\": \"7\"",
            "'source_lineno' must be an integer, got string");
    bad_row("tags", "\"tags\": [\"a\", 1]",
            "'tags': item 1 must be a string, got integer");
    bad_row("tags", "\"tags\": \"a\"", "'tags' must be a list of strings, got string");
    bad_row("event_metadata", "\"event_metadata\": {}",
            "'event_metadata' must be a list of objects, got object");
    bad_row("event_metadata", "\"event_metadata\": [{}, 1]", "item 1 must be an object");
    bad_row("aggregate", "\"aggregate\": [1]",
            "'aggregate' must be an object, got array");
    bad_row("aggregate", "\"aggregate\": {\"count\": \"1\"}",
            "aggregate 'count' must be a number, got string");
    bad_row("aggregate", "\"aggregate\": {\"bogus\": 1}",
            "unknown aggregate key 'bogus'");
    bad_row("event_data_available",
            "\"aggregate\": {\"count\": 1}, \"event_data_available\": 0",
            "'event_data_available' must be true or false, got integer");

    /* Deep nesting: 100000 '[' is refused, not a stack overflow. */
    {
        const size_t depth = 100000;
        char *deep = malloc(depth + 256);
        ASSERT(deep != NULL);
        size_t k = (size_t)sprintf(deep, HEAD "\"x\": ");
        memset(deep + k, '[', depth);
        write_file(deep, k + depth);
        expect_load_error("deep nesting", SX_ERR_FORMAT, "is not valid JSON");
        free(deep);
    }

    /* A 100 MB string: read and refused cleanly (it is where "format" belongs). */
    {
        const size_t big = (size_t)100 << 20;
        char *doc = malloc(big + 64);
        ASSERT(doc != NULL);
        size_t k = (size_t)sprintf(doc, "{\"format\": \"");
        memset(doc + k, 'a', big);
        k += big;
        k += (size_t)sprintf(doc + k, "\"}");
        write_file(doc, k);
        snprintf(msg, sizeof msg, "%s is not a scope-profiler JSON profile", tmp_path);
        expect_load_error("100 MB string", SX_ERR_FORMAT, msg);
        free(doc);
    }
}

/* Documents the reader accepts with Python's defaults and conversions. */
static void test_defaults(void) {
    struct sx_run *run = NULL;
    struct sx_error err;
    const char *doc =
        "{\"format\": \"scope-profiler-profile\", \"regions\": [{\"name\": \"b\", "
        "\"rank\": "
        "\"1\"}, {\"name\": \"a\", \"rank\": 0, \"aggregate\": {\"count\": 2, \"total\": "
        "7, "
        "\"mean\": 3.5, \"m2\": 4.0}, \"event_data_available\": false}, {\"name\": "
        "\"b\", "
        "\"rank\": 1, \"start_times_ns\": [5], \"end_times_ns\": [6], "
        "\"event_metadata\": "
        "[{\"k\": 1.50, \"k\": 2}], \"await_ns\": [0]}], \"metadata\": {\"n\": null, "
        "\"f\": "
        "2.0, \"l\": [1, \"x\"]}, \"likwid\": {\"0\": {\"t\": {\"cpus\": [0], \"times\": "
        "[null], \"event_names\": [\"E\"], \"events\": [[null]]}}}, \"line_profile\": "
        "{\"0\": "
        "[{\"times\": [null, 1]}]}}";

    write_file(doc, strlen(doc));
    sx_error_clear(&err);
    CHECK(sx_json_load(tmp_path, &run, &err) == SX_OK);
    if (run == NULL) {
        fprintf(stderr, "  defaults: %s\n", err.text);
        return;
    }
    CHECK(run->num_ranks == 0 && run->event_data_available);
    CHECK(run->nnames == 2 && strcmp(run->names[0], "b") == 0);
    CHECK(run->nrows == 2); /* ("b", 1) twice: the later row overwrites */
    const struct sx_row *b = &run->rows[0], *a = &run->rows[1];
    CHECK(b->region == 0 && b->rank == 1 && b->count == 1);
    CHECK(b->cols ==
          (SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END) | SX_COLBIT(SX_COL_AWAIT)));
    CHECK(b->meta_any && b->meta_text != NULL &&
          strcmp(b->meta_text, "[{\"k\": 2}]") == 0);
    CHECK(a->is_aggregate && !a->event_data_available && a->nagg == 4);
    if (a->nagg == 4) {
        CHECK_STR(sx_agg_keys[a->agg[2].key], "mean");
        CHECK(a->agg[2].is_float && a->agg[2].f == 3.5);
        CHECK_STR(sx_agg_keys[a->agg[3].key], "m2");
        CHECK(!a->agg[3].is_float && a->agg[3].i == 4);
    }
    CHECK(run->metadata.kind == SX_V_OBJECT && run->metadata.u.obj.n == 3);
    if (run->metadata.u.obj.n == 3) {
        CHECK(run->metadata.u.obj.items[0].value.kind == SX_V_NULL);
        CHECK(run->metadata.u.obj.items[1].value.kind == SX_V_FLOAT);
        CHECK(run->metadata.u.obj.items[2].value.kind == SX_V_ARRAY);
    }
    CHECK(run->nlikwid == 1 && run->likwid[0].n == 1);
    if (run->nlikwid == 1 && run->likwid[0].n == 1) {
        const struct sx_likwid_entry *e = &run->likwid[0].entries[0];
        CHECK_STR(e->tag, "t");
        CHECK(e->group_id == -1 && strcmp(e->group_name, "") == 0);
        CHECK(e->ntimes == 1 && isnan(e->times[0]));
        CHECK(e->events.rows == 1 && e->events.cols == 1 && isnan(e->events.v[0]));
        CHECK(e->metrics.rows == 0 && e->metrics.cols == 1);
    }
    CHECK(run->nline_profile == 1 && run->line_profile[0].n == 1);
    if (run->nline_profile == 1 && run->line_profile[0].n == 1) {
        const struct sx_lp_record *r = &run->line_profile[0].records[0];
        CHECK(r->unit == 1.0 && r->first_lineno == 0 && strcmp(r->function, "") == 0);
        CHECK(r->ntimes == 2 && isnan(r->times[0]) && r->times[1] == 1.0);
    }

    /* sx_run_equal sees a changed value and names it. */
    struct sx_run *other = NULL;
    char why[512];
    sx_error_clear(&err);
    CHECK(sx_json_load(tmp_path, &other, &err) == SX_OK);
    if (other != NULL) {
        CHECK(sx_run_equal(run, other, why, sizeof why));
        other->rows[0].col[SX_COL_END][0] = 99;
        CHECK(!sx_run_equal(run, other, why, sizeof why));
        CHECK_STR(why, "row ('b', rank 1): 'end_times_ns'[0] 6 != 99");
        other->rows[0].col[SX_COL_END][0] = 6;
        other->metadata.u.obj.items[0].value = sx_value_float(NAN); /* written as null */
        CHECK(sx_run_equal(run, other, why, sizeof why));
        other->likwid[0].entries[0].events.v[0] = 1.0;
        CHECK(!sx_run_equal(run, other, why, sizeof why));
        CHECK_STR(why, "likwid[0]['t']: 'events' differs");
    }
    sx_run_free(other);
    sx_run_free(run);

    /* A plain document with a .gz name is read by content, and sx_validate agrees. */
    snprintf(tmp_path + strlen(tmp_path), 8, ".gz");
    write_file(doc, strlen(doc));
    sx_error_clear(&err);
    CHECK(sx_validate(tmp_path, &err) == SX_OK);
    unlink(tmp_path);
    tmp_path[strlen(tmp_path) - 3] = '\0';
}

/* Fail the Nth allocation, for every N: a clean SX_ERR_NOMEM each time, then success. */
static void test_alloc_failures(const char *path) {
    long fails = 0;
    for (long nth = 1; nth < 200000; nth++) {
        struct sx_run *run = NULL;
        struct sx_error err;
        sx_error_clear(&err);
        sx_alloc_fail_after(nth);
        const enum sx_status st = sx_json_load(path, &run, &err);
        sx_alloc_fail_after(0);
        if (st == SX_OK) {
            CHECK(run != NULL);
            sx_run_free(run);
            break;
        }
        fails++;
        CHECK(run == NULL);
        if (st != SX_ERR_NOMEM) {
            fprintf(stderr, "  alloc %ld of %s: status %d [%s]\n", nth, path, st,
                    err.text);
            CHECK(st == SX_ERR_NOMEM);
            break;
        }
    }
    CHECK(fails > 10);
}

/* sx_import: document -> schema-3 HDF5 -> the same run again. */
static void test_import(void) {
    char in[1024], out[600], why[512];

    snprintf(out, sizeof out, "%s/test_json_read_%ld.h5", SX_BUILD_DIR, (long)getpid());
    for (size_t g = 0; g < sizeof goldens / sizeof goldens[0]; g++) {
        struct sx_error err;
        struct sx_run *js = NULL, *h5 = NULL;
        snprintf(in, sizeof in, GOLDEN "%s/run.json.gz", goldens[g].name);
        sx_error_clear(&err);
        const enum sx_status st = sx_import(in, out, &err);
        CHECK(st == SX_OK);
        if (st != SX_OK) {
            fprintf(stderr, "  import %s: %s\n", in, err.text);
            continue;
        }
        js = load_ok(in);
        /*
         * A columnar read keeps gpu_durations only when some value is >= 0
         * (spec 2.3 step 4); schema-1 runs keep all -1 columns. Expect that loss.
         */
        for (size_t r = 0; js != NULL && r < js->nrows; r++) {
            struct sx_row *row = &js->rows[r];
            bool any = false;
            for (uint64_t e = 0; (row->cols & SX_COLBIT(SX_COL_GPU)) && e < row->count;
                 e++)
                any = any || row->col[SX_COL_GPU][e] >= 0;
            if ((row->cols & SX_COLBIT(SX_COL_GPU)) && !any) {
                row->cols &= ~SX_COLBIT(SX_COL_GPU);
                free(row->col[SX_COL_GPU]);
                row->col[SX_COL_GPU] = NULL;
            }
        }
        /* ... and a column some row has is back-filled for the others (-1, await 0). */
        unsigned file_cols = 0;
        for (size_t r = 0; js != NULL && r < js->nrows; r++)
            if (!js->rows[r].is_aggregate)
                file_cols |= js->rows[r].cols;
        for (size_t r = 0; js != NULL && r < js->nrows; r++) {
            struct sx_row *row = &js->rows[r];
            for (int c = SX_COL_CALL; c < SX_NCOLS && !row->is_aggregate; c++) {
                if (!(file_cols & SX_COLBIT(c)) || (row->cols & SX_COLBIT(c)))
                    continue;
                row->col[c] = malloc((row->count + 1) * sizeof(int64_t));
                ASSERT(row->col[c] != NULL);
                for (uint64_t e = 0; e < row->count; e++)
                    row->col[c][e] = c == SX_COL_AWAIT ? 0 : -1;
                row->cols |= SX_COLBIT(c);
            }
        }
        /* ... and "" in source_files/source_texts reads back as None. */
        for (size_t r = 0; js != NULL && r < js->nrows; r++) {
            struct sx_row *row = &js->rows[r];
            if (row->source_file != NULL && row->source_file[0] == '\0') {
                free(row->source_file);
                row->source_file = NULL;
            }
            if (row->source_text != NULL && row->source_text[0] == '\0') {
                free(row->source_text);
                row->source_text = NULL;
            }
        }
        sx_error_clear(&err);
        CHECK(sx_validate(out, &err) == SX_OK);
        CHECK(sx_h5_load(out, false, &h5, &err) == SX_OK);
        if (js != NULL && h5 != NULL) {
            const bool same = sx_run_equal(js, h5, why, sizeof why);
            CHECK(same);
            if (!same)
                fprintf(stderr, "  import %s: %s\n", goldens[g].name, why);
        } else if (h5 == NULL) {
            fprintf(stderr, "  load imported %s: %s\n", goldens[g].name, err.text);
        }
        sx_run_free(js);
        sx_run_free(h5);
        unlink(out);
    }
    /* A failed import leaves no file behind. */
    struct sx_error err;
    sx_error_clear(&err);
    CHECK(sx_import("/nonexistent.json", out, &err) == SX_ERR_NOT_FOUND);
    CHECK(access(out, F_OK) != 0);
}

int main(void) {
    snprintf(tmp_path, sizeof tmp_path, "%s/test_json_read_%ld.json", SX_BUILD_DIR,
             (long)getpid());
    test_canon_meta();
    test_tags();
    test_goldens();
    test_unicode_and_lanes();
    test_rewrite();
    test_to_value();
    test_compat();
    test_defaults();
    test_bad_documents();
    test_import();
    test_alloc_failures(GOLDEN "gen_likwid_lineprof/run.json.gz");
    test_alloc_failures(GOLDEN "asyncio_tasks/run.json");
    test_alloc_failures(GOLDEN "unicode_metadata/run.json");
    {
        struct sx_error err;
        sx_error_clear(&err);
        CHECK(sx_validate(SX_SHARED_DIR "/fixtures/compat/json-v1.json", &err) == SX_OK);
        sx_error_clear(&err);
        CHECK(sx_validate(GOLDEN "basic_nested/run.json.gz", &err) == SX_OK);
        sx_error_clear(&err);
        CHECK(sx_validate("/nonexistent.json", &err) == SX_ERR_NOT_FOUND);
    }
    unlink(tmp_path);
    TEST_DONE();
}
