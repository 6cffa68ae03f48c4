/* test_native.c - native runs: paths as pathlib has them, the merged run model, and every
 * allocation failing in turn */
#include "fault.h"
#include "h5_read.h"
#include "native.h"
#include "run.h"
#include "run_compare.h"
#include "sx_fault.h"
#include "sx_test.h"

#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

#define GN SX_SHARED_DIR "/golden-native"

static void check_norm(const char *in, const char *want) {
    char *got = sx_native_path_norm(in);
    ASSERT(got != NULL);
    CHECK_STR(got, want);
    free(got);
}

static void test_paths(void) {
    check_norm("./ranks/", "ranks");
    check_norm("", ".");
    check_norm(".", ".");
    check_norm("ranks//a.spt", "ranks/a.spt");
    check_norm("//a//b/", "//a/b");
    check_norm("///a", "/a");
    check_norm("/", "/");
    check_norm("a/./b/../c", "a/b/../c");
    /* component-wise: "a/b" < "a-c" although '/' > '-' */
    CHECK(sx_native_path_cmp("a/b", "a-c") < 0);
    CHECK(sx_native_path_cmp("a", "a/b") < 0);
    CHECK(sx_native_path_cmp("aux_rank00011.spt", "sim_rank00000.h5") < 0);
    CHECK(sx_native_path_cmp("/x", "a") < 0);
    CHECK(sx_native_path_cmp("r/a", "r/a") == 0);
}

/* The merged model with its events is the run read_h5 gives of the reference's merged.h5.
 */
static void test_model(const char *c) {
    char dir[512], ref[512], why[512];
    snprintf(dir, sizeof dir, GN "/%s/ranks", c);
    snprintf(ref, sizeof ref, GN "/%s/merged.h5", c);
    const char *in[] = {dir};
    struct sx_native *nr = NULL;
    struct sx_run *want = NULL;
    struct sx_error err;
    sx_error_clear(&err);
    ASSERT(sx_native_open(MPI_COMM_NULL, in, 1, "merged", "x.json", &nr, &err) == SX_OK);
    ASSERT(sx_native_load(nr, -1, &err) == SX_OK);
    ASSERT(sx_h5_load(ref, false, &want, &err) == SX_OK);
    if (!sx_run_equal(nr->run, want, why, sizeof why)) {
        fprintf(stderr, "  %s: %s\n", c, why);
        CHECK(!"the merged model differs from merged.h5");
    }
    sx_run_free(want);
    sx_native_free(nr);
}

/* Every allocation of an export and an import fails in turn: a clean error, no output. */
static void test_alloc_failures(void) {
    char out[256], cmd[1024];
    snprintf(out, sizeof out, "%s/sx_native_%ld.json.gz", "/tmp", (long)getpid());
    const char *in[] = {GN "/mixed_3ranks/ranks",
                        GN "/crafted/odd_spt/ranks/odd_rank00000.spt"};
    /* rank 0 claimed twice: a merge error at the end; the first input alone exports */
    long fails = 0;
    for (long nth = 1; nth < 100000; nth++) {
        struct sx_error err;
        sx_error_clear(&err);
        sx_alloc_fail_after(nth);
        enum sx_status st =
            sx_export_native(MPI_COMM_NULL, in, 1, out, "merged", NULL, &err);
        sx_alloc_fail_after(0);
        if (st == SX_OK)
            break;
        fails++;
        if (st != SX_ERR_NOMEM) {
            fprintf(stderr, "  export: alloc %ld: status %d [%s]\n", nth, st, err.text);
            CHECK(st == SX_ERR_NOMEM);
            break;
        }
        CHECK(access(out, F_OK) != 0);
    }
    CHECK(fails > 20);
    snprintf(cmd, sizeof cmd, "%s/tests/golden_cmp %s %s/mixed_3ranks/run.json",
             SX_BUILD_DIR, out, GN);
    CHECK(system(cmd) == 0);
    unlink(out);

    struct sx_error err;
    sx_error_clear(&err);
    CHECK(sx_export_native(MPI_COMM_NULL, in, 2, out, NULL, NULL, &err) == SX_ERR_FORMAT);
    CHECK(strstr(err.text, "both claim rank 0") != NULL);
    CHECK(access(out, F_OK) != 0);

    snprintf(out, sizeof out, "%s/sx_native_%ld.h5", "/tmp", (long)getpid());
    fails = 0;
    for (long nth = 1; nth < 100000; nth++) {
        sx_error_clear(&err);
        sx_alloc_fail_after(nth);
        enum sx_status st = sx_import_native(MPI_COMM_NULL, in, 1, out, NULL, &err);
        sx_alloc_fail_after(0);
        if (st == SX_OK)
            break;
        fails++;
        if (st != SX_ERR_NOMEM) {
            fprintf(stderr, "  import: alloc %ld: status %d [%s]\n", nth, st, err.text);
            CHECK(st == SX_ERR_NOMEM);
            break;
        }
        CHECK(access(out, F_OK) != 0);
    }
    CHECK(fails > 20);
    CHECK(access(out, F_OK) == 0);
    unlink(out);
    CHECK(sx_h5_open_ids() == 0);
}

/* A stage failure in a native export names its own input, not the previous export's
 * (whose name is gone by then). */
static void test_stage_names_input(void) {
    char out[256];
    struct sx_error err;
    snprintf(out, sizeof out, "%s/sx_native_%ld.json", "/tmp", (long)getpid());
    const char *in[] = {GN "/mixed_3ranks/ranks"};
    char *prev = strdup("/nonexistent/previous-export.h5");
    ASSERT(prev != NULL);
    sx_error_clear(&err);
    CHECK(sx_export(MPI_COMM_NULL, prev, out, NULL, &err) != SX_OK);
    free(prev);
    sx_error_clear(&err);
    sx_fault_arm_stage(SX_FAIL_READ);
    enum sx_status st = sx_export_native(MPI_COMM_NULL, in, 1, out, "merged", NULL, &err);
    sx_fault_off();
    CHECK(st == SX_ERR_INTERNAL);
    CHECK(strstr(err.text, "failure injected") != NULL);
    CHECK(strstr(err.text, in[0]) != NULL);
    CHECK(access(out, F_OK) != 0);
}

/* Open file descriptors of this process. */
static int open_fds(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

int main(void) {
    const int fds = open_fds();
    test_paths();
    static const char *const cases[] = {
        "h5_2ranks_basic", "h5_13ranks_unicode", "h5_4ranks_empty_ranks", "mixed_3ranks",
        "spt_4ranks",      "crafted/odd_spt",    "crafted/all_empty"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        test_model(cases[i]);
    test_alloc_failures();
    test_stage_names_input();
    CHECK(open_fds() == fds); /* every file read is closed again, on every path */
    TEST_DONE();
}
