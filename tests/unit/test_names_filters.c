/* test_names_filters.c - output names as export_json picks them; region and rank filters
 */
#include "cli_support.h"
#include "doc.h"
#include "filter.h"
#include "h5_read.h"
#include "json_write.h"
#include "run.h"
#include "run_label.h"
#include "sx_test.h"

#include <stdlib.h>

static void check_path(const char *base, const char *label, size_t n, const char *want) {
    char *got = sx_output_path(base, label, n);
    ASSERT(got != NULL);
    CHECK_STR(got, want);
    free(got);
}

static void check_slug(const char *label, const char *want) {
    char *got = sx_slug(label);
    ASSERT(got != NULL);
    CHECK_STR(got, want);
    free(got);
}

/* Names of the document rows (in order) as "name@rank,"; the run's rows reversed first
 * when 'reverse' (ranks come down within each region: the plan sorts them back) */
static char *rows_of_run(const char *h5, const struct sx_options *o, bool reverse) {
    struct sx_run *run = NULL;
    struct sx_filter *f = NULL;
    struct sx_doc doc;
    struct sx_error e;
    sx_error_clear(&e);
    ASSERT(sx_h5_load(h5, false, &run, &e) == SX_OK);
    for (size_t i = 0; reverse && i < run->nrows / 2; i++) {
        struct sx_row t = run->rows[i];
        run->rows[i] = run->rows[run->nrows - 1 - i];
        run->rows[run->nrows - 1 - i] = t;
    }
    ASSERT(sx_filter_new(o, &f, &e) == SX_OK);
    ASSERT(sx_doc_plan(&doc, run, f, -1, 0, &e) == SX_OK);
    struct sx_buf b = {0};
    for (uint64_t i = 0; i < doc.nrows; i++) {
        const struct sx_row *r = &run->rows[doc.order[i]];
        sx_buf_puts(&b, run->names[r->region]);
        sx_buf_putc(&b, '@');
        sx_buf_i64(&b, r->rank);
        sx_buf_putc(&b, ',');
    }
    sx_buf_putc(&b, '\0');
    sx_doc_free(&doc);
    sx_filter_free(f);
    sx_run_free(run);
    return b.data;
}

static char *rows_of(const char *h5, const struct sx_options *o) {
    return rows_of_run(h5, o, false);
}

int main(void) {
    /* stem, dot, extension = name.partition("."): the first dot splits */
    check_path("figures/profile.json", "run", 1, "figures/profile.json");
    check_path("profile.json.gz", "run", 1, "profile.json.gz");
    check_path("a.b.json", "x", 1, "a.b.json");
    check_path("out/profile", "x", 1, "out/profile.json");
    check_path("out/profile.json.gz", "run (2)", 2, "out/profile_run_2.json.gz");
    check_path("p.json", "128 ranks", 3, "p_128_ranks.json");
    check_path("p.json", "__", 2, "p___.json"); /* an empty slug keeps the label */
    check_slug("run (2)", "run_2");
    check_slug("128 ranks", "128_ranks");
    check_slug("a.b+c-d", "a.b+c-d");
    check_slug("  x  ", "x");
    check_slug("Löwe straße", "Löwe_straße"); /* \w is Unicode-aware */
    check_slug("日本 語", "日本_語");
    check_slug("**", "**");

    /* filters: re.match anchors at the start only; include any, exclude any */
    const char *h5 = SX_SHARED_DIR "/golden/gen_likwid_lineprof/run.h5";
    struct sx_options o;
    sx_options_init(&o);
    char *all = rows_of(h5, &o);
    /* document order whatever the rows' order: region by region, rank by rank */
    char *back = rows_of_run(h5, &o, true);
    CHECK_STR(back, all);
    CHECK(strstr(all,
                 "io.write_checkpoint@0,io.write_checkpoint@1,io.write_checkpoint@2,") !=
          NULL);
    free(back);
    const char *inc[] = {"solve", "MPI_"};
    o.include = inc;
    o.n_include = 2;
    char *some = rows_of(h5, &o);
    CHECK_STR(some, "MPI_Allreduce@0,MPI_Allreduce@1,MPI_Allreduce@2,solve@1,solve@2,");
    CHECK(strstr(some, "assemble") == NULL);
    CHECK(strlen(some) < strlen(all));
    free(some);
    const char *mid[] = {"olve"}; /* not at the start: no match */
    o.include = mid;
    o.n_include = 1;
    some = rows_of(h5, &o);
    CHECK_STR(some, "");
    free(some);
    o.include = NULL;
    o.n_include = 0;
    const char *exc[] = {"s"};
    o.exclude = exc;
    o.n_exclude = 1;
    some = rows_of(h5, &o);
    CHECK(strstr(some, "solve@") == NULL);
    CHECK(strstr(some, "assemble_matrix@") != NULL);
    free(some);
    o.exclude = NULL;
    o.n_exclude = 0;
    const int64_t ranks[] = {2, 0};
    o.ranks = ranks;
    o.n_ranks = 2;
    some = rows_of(h5, &o);
    CHECK(strstr(some, "@1,") == NULL);
    CHECK(strstr(some, "@2,") != NULL);
    free(some);
    /* rows are region-major, ranks ascending within a region */
    /* rows are region-major (region table order), ranks ascending: as run.json has them
     */
    CHECK_STR(all,
              "assemble_matrix@0,io.write_checkpoint@0,io.write_checkpoint@1,"
              "io.write_checkpoint@2,MPI_Allreduce@0,MPI_Allreduce@1,MPI_Allreduce@2,"
              "solve@1,solve@2,");
    free(all);

    /* a bad pattern is a usage error naming it */
    const char *badp[] = {"("};
    o.include = badp;
    o.n_include = 1;
    struct sx_filter *f = NULL;
    struct sx_error e;
    sx_error_clear(&e);
    CHECK(sx_filter_new(&o, &f, &e) == SX_ERR_USAGE);
    CHECK(strstr(e.text, "'('") != NULL);
    TEST_DONE();
}
