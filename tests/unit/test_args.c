/*
 * test_args.c - options by name (sx_args_*): every key, every bad value, copies kept,
 * allocation failures, and exports through sx_export_args and sx_export_args_f
 * without MPI that equal scope-profiler's text
 */
#include "args.h"
#include "fault.h"
#include "sx_test.h"
#include "sx_test_doc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set key=value and return the status; a failure must name the key. */
static enum sx_status set(struct sx_args *a, const char *key, const char *value) {
    struct sx_error e;
    enum sx_status st = sx_args_set(a, key, value, &e);
    if (st == SX_OK) {
        CHECK(e.code == SX_OK);
    } else {
        CHECK(e.code == st);
        CHECK(strstr(e.text, key) != NULL);
    }
    return st;
}

static void test_defaults(void) {
    struct sx_options want, got;
    sx_options_init(&want);
    struct sx_args *a = sx_args_new();
    ASSERT(a != NULL);
    sx_args_options(a, &got);
    CHECK(got.indent == want.indent && got.summary == want.summary);
    CHECK(got.gzip_level == want.gzip_level && got.deflate == want.deflate);
    CHECK(got.block_bytes == want.block_bytes);
    CHECK(got.include == NULL && got.n_include == 0);
    CHECK(got.exclude == NULL && got.n_exclude == 0);
    CHECK(got.ranks == NULL && got.n_ranks == 0);
    sx_args_options(NULL, &got);
    CHECK(got.indent == -1 && got.gzip_level == 6);
    sx_args_free(a);
    sx_args_free(NULL);
}

static void test_keys(void) {
    struct sx_args *a = sx_args_new();
    struct sx_options o;
    ASSERT(a != NULL);
    CHECK(set(a, "indent", "2") == SX_OK);
    CHECK(set(a, "summary", NULL) == SX_OK);
    CHECK(set(a, "gzip-level", "0") == SX_OK);
    CHECK(set(a, "deflate", "isal") == SX_OK);
    CHECK(set(a, "block-size", "4096") == SX_OK);
    CHECK(set(a, "ranks", "0,2,5-7") == SX_OK);
    char pattern[] = "solve";
    CHECK(set(a, "include", pattern) == SX_OK);
    pattern[0] = 'X'; /* the library keeps its own copy */
    CHECK(set(a, "include", "halo_.*") == SX_OK);
    CHECK(set(a, "exclude", "main") == SX_OK);
    sx_args_options(a, &o);
    CHECK(o.indent == 2 && o.summary == 1 && o.gzip_level == 0);
    CHECK(o.deflate == SX_DEFLATE_ISAL && o.block_bytes == 4096);
    ASSERT(o.n_ranks == 5);
    static const int64_t want[] = {0, 2, 5, 6, 7};
    for (size_t i = 0; i < 5; i++)
        CHECK(o.ranks[i] == want[i]);
    ASSERT(o.n_include == 2 && o.n_exclude == 1);
    CHECK_STR(o.include[0], "solve");
    CHECK_STR(o.include[1], "halo_.*");
    CHECK_STR(o.exclude[0], "main");

    /* switches and replacements */
    CHECK(set(a, "summary", "false") == SX_OK);
    CHECK(set(a, "ranks", "3") == SX_OK);
    CHECK(set(a, "deflate", "zlib") == SX_OK);
    sx_args_options(a, &o);
    CHECK(o.summary == 0 && o.n_ranks == 1 && o.ranks[0] == 3);
    CHECK(o.deflate == SX_DEFLATE_ZLIB);
    CHECK(set(a, "summary", "yes") == SX_OK);
    sx_args_options(a, &o);
    CHECK(o.summary == 1);
    /* the document's format by the command's names, and prof's switch */
    CHECK(o.format == SX_FORMAT_JSON && o.no_call_paths == 0);
    CHECK(set(a, "format", "prof") == SX_OK && set(a, "no-call-paths", NULL) == SX_OK);
    sx_args_options(a, &o);
    CHECK(o.format == SX_FORMAT_PROF && o.no_call_paths == 1);
    CHECK(set(a, "format", "region-statistics") == SX_OK);
    sx_args_options(a, &o);
    CHECK(o.format == SX_FORMAT_REGION_STATISTICS);
    CHECK(set(a, "format", "chrome-trace") == SX_OK);
    sx_args_options(a, &o);
    CHECK(o.format == SX_FORMAT_CHROME_TRACE);
    CHECK(set(a, "format", "speedscope") == SX_OK);
    sx_args_options(a, &o);
    CHECK(o.format == SX_FORMAT_SPEEDSCOPE);
    CHECK(set(a, "format", "flamegraph") == SX_OK);
    sx_args_options(a, &o);
    CHECK(o.format == SX_FORMAT_FLAMEGRAPH);
    CHECK(set(a, "format", "perfetto") == SX_OK);
    sx_args_options(a, &o);
    CHECK(o.format == SX_FORMAT_PERFETTO);
    CHECK(set(a, "format", "otf2") == SX_OK);
    sx_args_options(a, &o);
    CHECK(o.format == SX_FORMAT_OTF2);
    sx_args_free(a);
}

static void test_bad(void) {
    struct sx_args *a = sx_args_new();
    ASSERT(a != NULL);
    CHECK(set(a, "ranks", "1,4") == SX_OK);
    static const struct {
        const char *key, *value;
    } bad[] = {
        {"indent", "-1"},        {"indent", "1001"},    {"indent", "2x"},
        {"indent", ""},          {"indent", NULL},      {"summary", "maybe"},
        {"gzip-level", "10"},    {"gzip-level", "-1"},  {"deflate", "gzip"},
        {"block-size", "1023"},  {"block-size", "1e6"}, {"ranks", ""},
        {"ranks", "1,"},         {"ranks", "-1"},       {"ranks", "3-1"},
        {"ranks", "a"},          {"ranks", " 1"},       {"ranks", "1--2"},
        {"ranks", "0-20000000"}, {"include", NULL},     {"gzip_level", "6"},
        {"--indent", "2"},       {"output", "x.json"},  {"fail-rank", "0"},
        {"format", "pstats"},    {"format", ""},        {"format", NULL},
        {"no-call-paths", "2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        enum sx_status st = set(a, bad[i].key, bad[i].value);
        if (st != SX_ERR_USAGE)
            fprintf(stderr, "%s=%s: status %d\n", bad[i].key,
                    bad[i].value ? bad[i].value : "(null)", (int)st);
        CHECK(st == SX_ERR_USAGE);
    }
    struct sx_options o;
    sx_args_options(a, &o); /* nothing changed */
    CHECK(o.indent == -1 && o.gzip_level == 6 && o.block_bytes == 0);
    CHECK(o.n_ranks == 2 && o.ranks[0] == 1 && o.ranks[1] == 4);
    CHECK(o.n_include == 0);
    struct sx_error e;
    CHECK(sx_args_set(NULL, "indent", "2", &e) == SX_ERR_USAGE && e.code == SX_ERR_USAGE);
    CHECK(sx_args_set(a, NULL, "2", &e) == SX_ERR_USAGE);
    CHECK(sx_args_set(a, "indent", "x", NULL) == SX_ERR_USAGE); /* err may be NULL */
    sx_args_free(a);
}

/* Fail each allocation in turn: an error, never a crash, and the set stays usable. */
static void test_nomem(void) {
    for (long n = 1; n <= 4; n++) {
        sx_alloc_fail_after(n);
        struct sx_args *a = sx_args_new();
        enum sx_status st = SX_OK;
        if (a != NULL) {
            st = sx_args_set(a, "include", "solve", NULL);
            if (st == SX_OK)
                st = sx_args_set(a, "ranks", "0-100", NULL);
            CHECK(st == SX_OK || st == SX_ERR_NOMEM);
        }
        sx_alloc_fail_after(0);
        if (a != NULL)
            CHECK(sx_args_set(a, "exclude", "main", NULL) == SX_OK);
        sx_args_free(a);
    }
}

/* Exports without MPI: the options given by name reach the document. */
static void test_export(const char *dir) {
    char in[1024], want[1024], out[1024];
    snprintf(in, sizeof in, "%s/golden/basic_nested/run.h5", SX_SHARED_DIR);
    ASSERT(access(in, R_OK) == 0);
    struct sx_args *a = sx_args_new();
    struct sx_error e;
    ASSERT(a != NULL);
    CHECK(set(a, "indent", "2") == SX_OK);
    CHECK(set(a, "block-size", "2048") == SX_OK);
    snprintf(out, sizeof out, "%s/i2.json.gz", dir);
    snprintf(want, sizeof want, "%s/golden/basic_nested/run.indent2.json", SX_SHARED_DIR);
    enum sx_status st = sx_export_args(MPI_COMM_NULL, in, out, a, &e);
    if (st != SX_OK)
        fprintf(stderr, "indent 2: %s\n", e.text);
    CHECK(st == SX_OK && sx_test_same_text(out, want, "scope-export@"));
    sx_args_free(a);

    a = sx_args_new();
    ASSERT(a != NULL);
    CHECK(set(a, "summary", "1") == SX_OK);
    snprintf(out, sizeof out, "%s/s.json", dir);
    snprintf(want, sizeof want, "%s/golden/basic_nested/run.summary.json", SX_SHARED_DIR);
    st = sx_export_args_f(NULL, in, out, a, &e);
    if (st != SX_OK)
        fprintf(stderr, "summary: %s\n", e.text);
    CHECK(st == SX_OK && sx_test_same_text(out, want, "scope-export@"));

    /* NULL options: the defaults */
    snprintf(out, sizeof out, "%s/d.json", dir);
    snprintf(want, sizeof want, "%s/golden/basic_nested/run.json", SX_SHARED_DIR);
    CHECK(sx_export_args(MPI_COMM_NULL, in, out, NULL, &e) == SX_OK &&
          sx_test_same_text(out, want, "scope-export@"));

    /* an error names the file, and no output is written */
    snprintf(out, sizeof out, "%s/missing.json", dir);
    st = sx_export_args_f(NULL, "no-such-run.h5", out, a, &e);
    CHECK(st == SX_ERR_NOT_FOUND && e.code == st);
    CHECK(strstr(e.text, "no-such-run.h5") != NULL || strstr(e.source, "no-such-run.h5"));
    CHECK(access(out, F_OK) != 0);
    sx_args_free(a);
}

int main(void) {
    char dir[] = "/tmp/sx-args-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    test_defaults();
    test_keys();
    test_bad();
    test_nomem();
    test_export(dir);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    TEST_DONE();
}
