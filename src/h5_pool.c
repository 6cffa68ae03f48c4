/* h5_pool.c - the string pool of a lazy run's index: each distinct string once, an id
 * per row */
#include "buf.h"
#include "h5_direct.h"
#include "h5_direct_heap.h"
#include "h5_reader.h"
#include "h5_util.h"
#include "json_write.h"
#include "worker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a */
static uint64_t str_hash(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The id of 's' in 'p' (added when new); 0 for "" and on allocation failure ('*ok'). */
static uint32_t pool_add(struct pool *p, const char *s, bool *ok) {
    if (s[0] == '\0')
        return 0;
    if (2 * (p->n + 1) > p->nslot) { /* grow the table, rehash */
        size_t ns = p->nslot ? 2 * p->nslot : 64;
        uint32_t *t = sx_calloc(ns, sizeof *t);
        if (t == NULL) {
            *ok = false;
            return 0;
        }
        for (size_t i = 0; i < p->nslot; i++) {
            if (p->slot[i] == 0)
                continue;
            size_t j = (size_t)(str_hash(p->s[p->slot[i] - 1]) & (ns - 1));
            while (t[j] != 0)
                j = (j + 1) & (ns - 1);
            t[j] = p->slot[i];
        }
        free(p->slot);
        p->slot = t;
        p->nslot = ns;
    }
    size_t j = (size_t)(str_hash(s) & (p->nslot - 1));
    while (p->slot[j] != 0) {
        if (strcmp(p->s[p->slot[j] - 1], s) == 0)
            return p->slot[j];
        j = (j + 1) & (p->nslot - 1);
    }
    if (p->n == p->cap) {
        size_t nc = p->cap ? 2 * p->cap : 16;
        char **v = sx_realloc(p->s, nc * sizeof *v);
        if (v == NULL) {
            *ok = false;
            return 0;
        }
        p->s = v;
        p->cap = nc;
    }
    p->s[p->n] = sx_strdup(s);
    if (p->s[p->n] == NULL) {
        *ok = false;
        return 0;
    }
    p->slot[j] = (uint32_t)++p->n;
    return p->slot[j];
}

void sx_h5_pool_free(struct pool *p) {
    for (size_t i = 0; i < p->n; i++) {
        free(p->s[i]);
        if (p->tags != NULL && p->ntags != NULL && p->ntags[i] > 0)
            sx_h5_free_strv(p->tags[i], p->ntags[i] - 1);
    }
    free(p->tags);
    free(p->ntags);
    free(p->s);
    free(p->slot);
    free(p->id);
    memset(p, 0, sizeof *p);
}

/*
 * Read a string column of the index in pieces into a pool: a row's string
 * costs 4 bytes and each sx_h5_distinct string is kept once (a run's rows of one
 * region share their source file, text and tags). Strings are decoded as the
 * full read decodes them. Through the heap walker '*v' when 'dr' reads the file
 * directly (h5_reader.h), else HDF5; 'walker_only': through '*v' alone, and
 * SX_ERR_UNSUPPORTED where the walker leaves a collection to HDF5 (no HDF5 call is
 * made: another thread's read).
 */
static enum sx_status fill_pool(struct sx_direct *dr, struct sx_vlen **v,
                                bool walker_only, hid_t d, uint64_t nrows, struct pool *p,
                                const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    /* rows a read: each read's requests and their sort's room are freed and taken
     * again, and 4096 rows' worth stays in malloc's heap where 64k rows' (2.6 MB)
     * were fresh mappings, each page a fault, for every string column */
    enum { PIECE = 1 << 12 };
    struct sx_buf text = {0};
    size_t *off = NULL;
    p->id = sx_malloc((nrows + 1) * sizeof *p->id);
    off = sx_malloc((PIECE + 1) * sizeof *off);
    SX_CHECK(p->id != NULL && off != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (uint64_t at = 0; at < nrows; at += PIECE) {
        size_t n = nrows - at < PIECE ? (size_t)(nrows - at) : PIECE;
        st = walker_only
                 ? sx_vlen_read(*v, NULL, at, n, &text, off, src, err)
                 : sx_direct_read_strings(dr, v, d, NULL, at, n, &text, off, src, err);
        if (st != SX_OK)
            goto out;
        bool ok = true;
        for (size_t k = 0; k < n && ok; k++) {
            char *str = sx_h5_text_string(&text, off, k);
            SX_CHECK(str != NULL, SX_ERR_NOMEM, err, src, "out of memory");
            p->id[at + k] = pool_add(p, str, &ok);
            free(str);
        }
        SX_CHECK(ok, SX_ERR_NOMEM, err, src, "out of memory");
    }
out:
    free(off);
    sx_buf_free(&text);
    return st;
}

enum sx_status sx_h5_read_pool(struct sx_direct *dr, hid_t d, uint64_t nrows,
                               struct pool *p, const char *src, struct sx_error *err) {
    struct sx_vlen *v = NULL;
    enum sx_status st = sx_direct_strings_open(dr, d, src, &v, err);
    if (st == SX_OK)
        st = fill_pool(dr, &v, false, d, nrows, p, src, err);
    sx_vlen_close(v);
    return st;
}

/* One column's pool read in the helper thread. */
struct pool_job {
    struct sx_worker t;
    struct sx_vlen *v;
    uint64_t nrows;
    struct pool *p;
    const char *src;
    enum sx_status st;
    struct sx_error err;
};

static void *pool_main(void *arg) {
    struct pool_job *j = arg;
    sx_error_clear(&j->err);
    j->st = fill_pool(NULL, &j->v, true, -1, j->nrows, j->p, j->src, &j->err);
    return NULL;
}

enum sx_status sx_h5_read_pools(struct sx_direct *dr, const hid_t *d, int n,
                                uint64_t nrows, struct pool *const *p,
                                const char *const *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct pool_job job = {.nrows = nrows};
    int helped = -1; /* the column the helper reads */
    /* the last column to the helper, when the walker reads it (it is opened here: HDF5
     * calls stay in this thread); one that does not open is read in its turn, which
     * meets the same error after the others' */
    if (n >= 2 && dr != NULL && sx_helper_allowed()) {
        if (sx_direct_strings_open(dr, d[n - 1], src[n - 1], &job.v, err) != SX_OK) {
            job.v = NULL;
            if (err != NULL)
                sx_error_clear(err);
        }
        job.p = p[n - 1];
        job.src = src[n - 1];
        if (job.v != NULL && sx_worker_start(&job.t, pool_main, &job))
            helped = n - 1;
    }
    for (int k = 0; k < n && st == SX_OK; k++)
        if (k != helped)
            st = sx_h5_read_pool(dr, d[k], nrows, p[k], src[k], err);
    if (helped >= 0) {
        sx_worker_stop(&job.t); /* it returns by itself: joined */
        if (st == SX_OK && job.st == SX_ERR_UNSUPPORTED) { /* HDF5's, here */
            sx_h5_pool_free(p[helped]);
            st = sx_h5_read_pool(dr, d[helped], nrows, p[helped], src[helped], err);
        } else if (st == SX_OK && job.st != SX_OK) {
            st = job.st;
            if (err != NULL)
                *err = job.err;
        }
    }
    sx_vlen_close(job.v);
    return st;
}
