/* filter.c - region name and rank filters, matched as Python's re.match */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "filter.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sx_filter {
    pcre2_code **include;
    size_t n_include;
    pcre2_code **exclude;
    size_t n_exclude;
    pcre2_match_data *md;
    int64_t *ranks; /* sorted */
    size_t n_ranks;
    bool all_ranks;
};

static enum sx_status compile_all(const char *const *pat, size_t n, pcre2_code ***out,
                                  const char *what, struct sx_error *err) {
    enum sx_status st = SX_OK;
    pcre2_code **codes = NULL;
    if (n == 0)
        goto out;
    codes = sx_calloc(n, sizeof *codes);
    SX_CHECK(codes != NULL, SX_ERR_NOMEM, err, what, "out of memory");
    for (size_t i = 0; i < n; i++) {
        int code = 0;
        PCRE2_SIZE off = 0;
        /* re.match anchors at the start only; PCRE2_UTF for names like Python str. */
        codes[i] = pcre2_compile((PCRE2_SPTR)pat[i], PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_ANCHORED | PCRE2_MATCH_INVALID_UTF,
                                 &code, &off, NULL);
        if (codes[i] == NULL) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(code, msg, sizeof msg);
            st = sx_error_set(err, SX_ERR_USAGE, what,
                              "invalid %s pattern '%s' at offset %zu: %s", what, pat[i],
                              (size_t)off, (const char *)msg);
            goto out;
        }
    }
out:
    *out = codes;
    return st;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

enum sx_status sx_filter_new(const struct sx_options *opts, struct sx_filter **f,
                             struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_filter *flt = sx_calloc(1, sizeof *flt);
    SX_CHECK(flt != NULL, SX_ERR_NOMEM, err, "filter", "out of memory");
    flt->all_ranks = true;
    if (opts != NULL) {
        st = compile_all(opts->include, opts->n_include, &flt->include, "include", err);
        flt->n_include = opts->n_include;
        if (st != SX_OK)
            goto out;
        st = compile_all(opts->exclude, opts->n_exclude, &flt->exclude, "exclude", err);
        flt->n_exclude = opts->n_exclude;
        if (st != SX_OK)
            goto out;
        if (opts->ranks != NULL) {
            flt->all_ranks = false;
            flt->n_ranks = opts->n_ranks;
            flt->ranks = sx_malloc((opts->n_ranks + 1) * sizeof *flt->ranks);
            SX_CHECK(flt->ranks != NULL, SX_ERR_NOMEM, err, "filter", "out of memory");
            if (opts->n_ranks)
                memcpy(flt->ranks, opts->ranks, opts->n_ranks * sizeof *flt->ranks);
            qsort(flt->ranks, flt->n_ranks, sizeof *flt->ranks, cmp_i64);
        }
    }
    flt->md = pcre2_match_data_create(1, NULL);
    SX_CHECK(flt->md != NULL, SX_ERR_NOMEM, err, "filter", "out of memory");
out:
    if (st != SX_OK) {
        sx_filter_free(flt);
        flt = NULL;
    }
    *f = flt;
    return st;
}

void sx_filter_free(struct sx_filter *f) {
    if (f == NULL)
        return;
    for (size_t i = 0; f->include != NULL && i < f->n_include; i++)
        pcre2_code_free(f->include[i]);
    for (size_t i = 0; f->exclude != NULL && i < f->n_exclude; i++)
        pcre2_code_free(f->exclude[i]);
    free(f->include);
    free(f->exclude);
    pcre2_match_data_free(f->md);
    free(f->ranks);
    free(f);
}

static bool any_match(pcre2_code *const *codes, size_t n, const char *name,
                      pcre2_match_data *md) {
    for (size_t i = 0; i < n; i++) {
        if (codes[i] != NULL &&
            pcre2_match(codes[i], (PCRE2_SPTR)name, strlen(name), 0, 0, md, NULL) >= 0)
            return true;
    }
    return false;
}

bool sx_filter_name(const struct sx_filter *f, const char *name) {
    if (f == NULL)
        return true;
    if (f->n_include > 0 && !any_match(f->include, f->n_include, name, f->md))
        return false;
    return !any_match(f->exclude, f->n_exclude, name, f->md);
}

bool sx_filter_rank(const struct sx_filter *f, int64_t rank) {
    if (f == NULL || f->all_ranks)
        return true;
    return bsearch(&rank, f->ranks, f->n_ranks, sizeof rank, cmp_i64) != NULL;
}
