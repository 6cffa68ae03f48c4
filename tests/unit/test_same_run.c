/* test_same_run.c - generated runs: load(h5) == load(json) == load(import(json)) */
#include "buf.h"
#include "doc.h"
#include "filter.h"
#include "h5_read.h"
#include "json_load.h"
#include "run.h"
#include "run_compare.h"
#include "sx_test.h"
#include "sx_test_doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/sx_same_run_XXXXXX";

/* Export a file through the library's document writer, from the file or a loaded run. */
static void write_doc(const struct sx_run *run, struct sx_h5 *h5, const char *path) {
    struct sx_filter *f = NULL;
    struct sx_doc doc;
    struct sx_error e;
    struct sx_buf b = {0};
    sx_error_clear(&e);
    ASSERT(sx_filter_new(NULL, &f, &e) == SX_OK);
    ASSERT(sx_doc_plan(&doc, run, f, -1, 1024, &e) == SX_OK);
    struct sx_event_source src = sx_h5_event_source(h5);
    ASSERT(sx_doc_header(&doc, &b, &e) == SX_OK);
    for (size_t i = 0; i < doc.nblocks; i++)
        ASSERT(sx_doc_block(&doc, &src, NULL, NULL, i, &b, &e) == SX_OK);
    ASSERT(sx_doc_trailer(&doc, &b, &e) == SX_OK);
    FILE *out = fopen(path, "wb");
    ASSERT(out != NULL);
    ASSERT(fwrite(b.data, 1, b.len, out) == b.len);
    fclose(out);
    sx_buf_free(&b);
    sx_doc_free(&doc);
    sx_filter_free(f);
}

static char *slurp(const char *path) {
    size_t n = 0;
    char *s = sx_test_slurp(path, &n, false);
    ASSERT(s != NULL);
    return s;
}

static void same_run(const char *name, const char *h5path) {
    char json[512], imported[512], json2[512], why[512] = "";
    struct sx_error e;
    struct sx_run *a = NULL, *b = NULL, *c = NULL;
    snprintf(json, sizeof json, "%s/%s.json", tmpdir, name);
    snprintf(imported, sizeof imported, "%s/%s.imported.h5", tmpdir, name);
    snprintf(json2, sizeof json2, "%s/%s.2.json", tmpdir, name);
    sx_error_clear(&e);
    ASSERT(sx_h5_load(h5path, false, &a, &e) == SX_OK);
    write_doc(a, NULL, json); /* from the loaded columns */
    sx_error_clear(&e);
    if (sx_json_load(json, &b, &e) != SX_OK) {
        fprintf(stderr, "%s: %s\n", name, e.text);
        ASSERT(0);
    }
    if (!sx_run_equal(a, b, why, sizeof why)) {
        fprintf(stderr, "%s: load(h5) != load(json): %s\n", name, why);
        CHECK(0);
    }
    sx_error_clear(&e);
    ASSERT(sx_import(json, imported, &e) == SX_OK);
    ASSERT(sx_h5_load(imported, false, &c, &e) == SX_OK);
    if (!sx_run_equal(b, c, why, sizeof why)) {
        fprintf(stderr, "%s: load(json) != load(import(json)): %s\n", name, why);
        CHECK(0);
    }
    write_doc(c, NULL, json2);
    char *t1 = slurp(json), *t2 = slurp(json2);
    if (strcmp(t1, t2) != 0) {
        fprintf(stderr, "%s: export(import(export(h5))) != export(h5)\n", name);
        CHECK(0);
    }
    free(t1);
    free(t2);
    sx_run_free(a);
    sx_run_free(b);
    sx_run_free(c);
}

static void synth(const char *name, const char *opts) {
    char cmd[1024], path[512];
    snprintf(path, sizeof path, "%s/%s.h5", tmpdir, name);
    snprintf(cmd, sizeof cmd, "%s/scope-export-synth %s %s", SX_BUILD_DIR, opts, path);
    ASSERT(system(cmd) == 0);
    same_run(name, path);
}

/* A document written by hand: a row with no calls, NaN/inf LIKWID values as null. */
static const char hand_doc[] =
    "{\"format\": \"scope-profiler-profile\", \"format_version\": 1, \"exporter\": "
    "\"x\", "
    "\"time_unit\": \"nanoseconds\", \"num_ranks\": 2, \"event_data_available\": true, "
    "\"metadata\": {\"label\": \"h\\u00e9\", \"mpi_size\": 2}, \"regions\": ["
    "{\"name\": \"empty\", \"rank\": 0, \"start_times_ns\": [], \"end_times_ns\": [], "
    "\"call_ids\": [], \"parent_ids\": []}, "
    "{\"name\": \"r\\u00e9gion \\ud83d\\ude00\", \"rank\": 1, \"tags\": [\"a\"], "
    "\"start_times_ns\": [5, 9], \"end_times_ns\": [7, 12], \"call_ids\": [0, 1], "
    "\"parent_ids\": [-1, 0], \"exclusive_total_ns\": 5}], "
    "\"likwid\": {\"1\": {\"t\": {\"tag\": \"t\", \"group_id\": 2, \"group_name\": "
    "\"FLOPS\", "
    "\"cpus\": [0, 1], \"times\": [0.5, null], \"call_counts\": [1, 1], "
    "\"event_names\": [\"E\"], \"counter_names\": [\"C\"], \"events\": [[1.0, null]], "
    "\"metric_names\": [\"M\"], \"metrics\": [[null, 2.5]], \"source\": \"full_api\"}}}}";

int main(void) {
    ASSERT(mkdtemp(tmpdir) != NULL);
    synth("all", "--ranks 4 --regions 6 --events 20000 --columns all --lanes --likwid "
                 "--lineprof --unicode --seed 21");
    synth("fixed", "--ranks 3 --regions 5 --events 4000 --columns all --strings fixed "
                   "--empty-ranks --seed 22");
    synth("aggregate", "--ranks 5 --regions 4 --aggregate --seed 23");
    synth("skewed", "--ranks 2 --regions 3 --events 30000 --skew 0.95 --columns gpu,meta "
                    "--seed 24");

    char path[512];
    snprintf(path, sizeof path, "%s/hand.json", tmpdir);
    FILE *f = fopen(path, "wb");
    ASSERT(f != NULL);
    fputs(hand_doc, f);
    fclose(f);
    char imported[512], why[512] = "";
    snprintf(imported, sizeof imported, "%s/hand.h5", tmpdir);
    struct sx_error e;
    struct sx_run *b = NULL, *c = NULL;
    sx_error_clear(&e);
    ASSERT(sx_json_load(path, &b, &e) == SX_OK);
    ASSERT(sx_import(path, imported, &e) == SX_OK);
    ASSERT(sx_h5_load(imported, false, &c, &e) == SX_OK);
    if (!sx_run_equal(b, c, why, sizeof why)) {
        fprintf(stderr, "hand: load(json) != load(import(json)): %s\n", why);
        CHECK(0);
    }
    same_run("hand", imported);
    sx_run_free(b);
    sx_run_free(c);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    CHECK(system(cmd) == 0);
    TEST_DONE();
}
