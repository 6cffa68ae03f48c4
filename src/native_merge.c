/* native_merge.c - every rank's per-process files -> one run, agreed by collectives */
#include "buf.h"
#include "json_value.h"
#include "mpi_util.h"
#include "native.h"
#include "run.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sx_native_free(struct sx_native *nr) {
    if (nr == NULL)
        return;
    for (size_t i = 0; i < nr->nfiles; i++)
        sx_nfile_clear(&nr->files[i]);
    free(nr->files);
    free(nr->owner);
    sx_run_free(nr->run);
    free(nr->loc);
    free(nr);
}

/* ------------------------------------------------------------------ */
/* A byte packer for what the ranks tell each other                    */

struct pk {
    struct sx_buf b;
    const char *p, *end; /* unpacking */
    bool bad;
};

static void put_u64(struct pk *k, uint64_t v) { sx_buf_append(&k->b, &v, sizeof v); }
static void put_str(struct pk *k, const char *s) {
    put_u64(k, s == NULL ? UINT64_MAX : strlen(s));
    if (s != NULL)
        sx_buf_append(&k->b, s, strlen(s));
}

static uint64_t get_u64(struct pk *k) {
    uint64_t v = 0;
    if (k->end - k->p < (ptrdiff_t)sizeof v) {
        k->bad = true;
        return 0;
    }
    memcpy(&v, k->p, sizeof v);
    k->p += sizeof v;
    return v;
}

static char *get_str(struct pk *k) {
    uint64_t n = get_u64(k);
    if (n == UINT64_MAX || k->bad)
        return NULL;
    if ((uint64_t)(k->end - k->p) < n) {
        k->bad = true;
        return NULL;
    }
    char *s = sx_strndup(k->p, (size_t)n);
    if (s == NULL)
        k->bad = true;
    k->p += n;
    return s;
}

static void put_value(struct pk *k, const struct sx_value *v) {
    put_u64(k, (uint64_t)v->kind);
    switch (v->kind) {
    case SX_V_NULL:
        break;
    case SX_V_BOOL:
        put_u64(k, v->u.b);
        break;
    case SX_V_INT:
        put_u64(k, (uint64_t)v->u.i);
        break;
    case SX_V_UINT:
        put_u64(k, v->u.u);
        break;
    case SX_V_FLOAT: {
        uint64_t bits;
        memcpy(&bits, &v->u.f, sizeof bits);
        put_u64(k, bits);
        break;
    }
    case SX_V_STR:
    case SX_V_RAW:
        put_u64(k, v->u.str.len);
        sx_buf_append(&k->b, v->u.str.s, v->u.str.len);
        break;
    case SX_V_ARRAY:
        put_u64(k, v->u.arr.n);
        for (size_t i = 0; i < v->u.arr.n; i++)
            put_value(k, &v->u.arr.items[i]);
        break;
    case SX_V_OBJECT:
        put_u64(k, v->u.obj.n);
        for (size_t i = 0; i < v->u.obj.n; i++) {
            put_u64(k, v->u.obj.items[i].key_len);
            sx_buf_append(&k->b, v->u.obj.items[i].key, v->u.obj.items[i].key_len);
            put_value(k, &v->u.obj.items[i].value);
        }
        break;
    }
}

static struct sx_value get_value(struct pk *k, int depth) {
    struct sx_value v = sx_value_null();
    uint64_t kind = get_u64(k);
    if (k->bad || depth > 64)
        goto bad;
    switch ((enum sx_vkind)kind) {
    case SX_V_NULL:
        return v;
    case SX_V_BOOL:
        return sx_value_bool(get_u64(k) != 0);
    case SX_V_INT:
        return sx_value_int((int64_t)get_u64(k));
    case SX_V_UINT:
        v.kind = SX_V_UINT;
        v.u.u = get_u64(k);
        return v;
    case SX_V_FLOAT: {
        uint64_t bits = get_u64(k);
        double f;
        memcpy(&f, &bits, sizeof f);
        return sx_value_float(f);
    }
    case SX_V_STR:
    case SX_V_RAW: {
        uint64_t n = get_u64(k);
        if (k->bad || (uint64_t)(k->end - k->p) < n)
            goto bad;
        bool ok = kind == SX_V_STR ? sx_value_str(&v, k->p, (size_t)n)
                                   : sx_value_raw(&v, k->p, (size_t)n);
        k->p += n;
        if (!ok)
            goto bad;
        return v;
    }
    case SX_V_ARRAY: {
        uint64_t n = get_u64(k);
        sx_value_array(&v);
        for (uint64_t i = 0; i < n && !k->bad; i++)
            if (!sx_value_push(&v, get_value(k, depth + 1)))
                k->bad = true;
        return v;
    }
    case SX_V_OBJECT: {
        uint64_t n = get_u64(k);
        sx_value_object(&v);
        for (uint64_t i = 0; i < n && !k->bad; i++) {
            uint64_t kl = get_u64(k);
            if (k->bad || (uint64_t)(k->end - k->p) < kl) {
                k->bad = true;
                break;
            }
            const char *key = k->p;
            k->p += kl;
            if (!sx_value_set(&v, key, (size_t)kl, get_value(k, depth + 1)))
                k->bad = true;
        }
        return v;
    }
    }
bad:
    k->bad = true;
    return v;
}

static void put_file(struct pk *k, uint64_t index, const struct sx_nfile *f) {
    put_u64(k, index);
    put_u64(k, f->big_endian);
    put_u64(k, f->nranks);
    for (size_t i = 0; i < f->nranks; i++)
        put_u64(k, (uint64_t)f->ranks[i]);
    put_u64(k, f->nrows);
    for (size_t i = 0; i < f->nrows; i++) {
        const struct sx_nrow *r = &f->rows[i];
        put_str(k, r->name);
        put_u64(k, (uint64_t)r->rank);
        put_str(k, r->source_file);
        put_str(k, r->source_text);
        put_u64(k, r->has_lineno);
        put_u64(k, (uint64_t)r->lineno);
        put_u64(k, r->count);
        put_u64(k, (uint64_t)r->min_start);
        put_u64(k, (uint64_t)r->first_start);
        put_u64(k, r->loc);
        put_u64(k, r->offset);
    }
    put_u64(k, f->later.ok);
    if (f->later.ok) {
        put_u64(k, f->later.dev);
        put_u64(k, f->later.ino);
        put_u64(k, f->later.size);
        for (int c = 0; c < 2; c++) {
            const struct sx_direct_col *col = &f->later.col[c];
            put_u64(k, col->ok | (uint64_t)col->is_signed << 1 |
                           (uint64_t)col->big_endian << 2);
            put_u64(k, col->size);
            put_u64(k, col->addr);
            put_u64(k, col->nelem);
        }
    }
    put_value(k, &f->metadata);
}

/* Unpack one file's index into 'files' (at the index it carries). */
static void get_file(struct pk *k, struct sx_nfile *files, size_t nfiles) {
    uint64_t index = get_u64(k);
    if (k->bad || index >= nfiles) {
        k->bad = true;
        return;
    }
    struct sx_nfile *f = &files[index];
    f->big_endian = get_u64(k) != 0;
    uint64_t nr = get_u64(k);
    if (k->bad || nr > (uint64_t)(k->end - k->p) / 8) {
        k->bad = true;
        return;
    }
    f->ranks = sx_malloc((size_t)(nr + 1) * sizeof *f->ranks);
    if (f->ranks == NULL) {
        k->bad = true;
        return;
    }
    for (uint64_t i = 0; i < nr; i++)
        f->ranks[f->nranks++] = (int64_t)get_u64(k);
    uint64_t nrows = get_u64(k);
    if (k->bad || nrows > (uint64_t)(k->end - k->p) / 64) {
        k->bad = true;
        return;
    }
    f->rows = sx_calloc((size_t)nrows + 1, sizeof *f->rows);
    if (f->rows == NULL) {
        k->bad = true;
        return;
    }
    for (uint64_t i = 0; i < nrows && !k->bad; i++) {
        struct sx_nrow *r = &f->rows[f->nrows++];
        r->name = get_str(k);
        r->rank = (int64_t)get_u64(k);
        r->source_file = get_str(k);
        r->source_text = get_str(k);
        r->has_lineno = get_u64(k) != 0;
        r->lineno = (int64_t)get_u64(k);
        r->count = get_u64(k);
        r->min_start = (int64_t)get_u64(k);
        r->first_start = (int64_t)get_u64(k);
        r->loc = get_u64(k);
        r->offset = get_u64(k);
        if (r->name == NULL)
            k->bad = true;
    }
    f->later.ok = get_u64(k) != 0;
    if (f->later.ok) {
        f->later.dev = get_u64(k);
        f->later.ino = get_u64(k);
        f->later.size = get_u64(k);
        for (int c = 0; c < 2; c++) {
            struct sx_direct_col *col = &f->later.col[c];
            const uint64_t bits = get_u64(k);
            col->ok = bits & 1;
            col->is_signed = (bits >> 1) & 1;
            col->big_endian = (bits >> 2) & 1;
            col->size = (size_t)get_u64(k);
            col->addr = get_u64(k);
            col->nelem = get_u64(k);
            if (!(col->size == 1 || col->size == 2 || col->size == 4 || col->size == 8))
                k->bad = true;
        }
    }
    if (!k->bad)
        f->metadata = get_value(k, 0);
}

/*
 * NOTE: collective. Every rank's 'mine' (k->b) to every rank: '*all' holds
 * the concatenation in rank order, 'at[r]' where rank r's part starts.
 */
static enum sx_status allgather(MPI_Comm c, int size, const struct sx_buf *mine,
                                struct sx_buf *all, uint64_t *at, struct sx_error *err) {
    enum sx_status st = SX_OK;
    int *counts = sx_calloc((size_t)size + 1, sizeof *counts);
    int *displs = sx_calloc((size_t)size + 1, sizeof *displs);
    int n = mine->len > INT_MAX ? -1 : (int)mine->len;
    int ok = counts != NULL && displs != NULL && n >= 0, all_ok = 0;
    st = sx_mpi_check(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, c),
                      "MPI_Allreduce", err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(all_ok, SX_ERR_NOMEM, err, "native run",
             "out of memory, or a rank's file index over 2 GiB");
    st = sx_mpi_check(MPI_Allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, c),
                      "MPI_Allgather", err);
    if (st != SX_OK)
        goto out;
    uint64_t total = 0;
    for (int r = 0; r < size; r++) {
        at[r] = total;
        displs[r] = (int)total;
        total += (uint64_t)counts[r];
    }
    at[size] = total;
    ok = total <= INT_MAX && sx_buf_reserve(all, (size_t)total + 1);
    st = sx_mpi_check(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, c),
                      "MPI_Allreduce", err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(all_ok, SX_ERR_NOMEM, err, "native run",
             "out of memory, or the run's file index over 2 GiB");
    st = sx_mpi_check(
        MPI_Allgatherv(mine->data, n, MPI_BYTE, all->data, counts, displs, MPI_BYTE, c),
        "MPI_Allgatherv", err);
    if (st != SX_OK)
        goto out;
    all->len = (size_t)total;
out:
    free(counts);
    free(displs);
    return st;
}

/* ------------------------------------------------------------------ */
/* The merge (load_traces + write_results + read_h5), on every rank    */

struct mrow {
    int64_t rank;
    size_t gpos; /* the region's place in G */
    size_t region;
    uint32_t file, row;
};

static int cmp_mrow(const void *a, const void *b) {
    const struct mrow *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->gpos < y->gpos ? -1 : x->gpos > y->gpos;
}

static int cmp_member(const void *a, const void *b) {
    const struct sx_member *x = a, *y = b;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, n);
    if (c != 0)
        return c;
    return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

struct rank_seen {
    int64_t rank;
    size_t file;
};

static int cmp_seen(const void *a, const void *b) {
    const struct rank_seen *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->file < y->file ? -1 : x->file > y->file;
}

/*
 * The default label of a native run written to 'p': its name without a document
 * suffix (.json, .trace.json, .speedscope.json, .pftrace, each also with .gz), so that
 * profile.json.gz is "profile"; any other name loses its last suffix, as Path(p).stem
 * (merged.h5 is "merged", as scope-profiler's import-native labels it).
 */
static char *path_stem(const char *p) {
    static const char *const doc_suffixes[] = {
        ".trace.json.gz", ".speedscope.json.gz", ".json.gz", ".pftrace.gz",
        ".trace.json",    ".speedscope.json",    ".json",    ".pftrace",
    };
    char *norm = sx_native_path_norm(p);
    if (norm == NULL)
        return NULL;
    const char *slash = strrchr(norm, '/');
    const char *name = slash ? slash + 1 : norm;
    size_t n = strlen(name);
    const char *dot = strrchr(name, '.');
    size_t stem = dot != NULL && dot > name && (size_t)(dot - name) < n - 1
                      ? (size_t)(dot - name)
                      : n;
    for (size_t i = 0; i < sizeof doc_suffixes / sizeof doc_suffixes[0]; i++) {
        size_t k = strlen(doc_suffixes[i]);
        if (n > k && strcmp(name + n - k, doc_suffixes[i]) == 0) {
            stem = n - k;
            break;
        }
    }
    char *out = sx_strndup(name, stem);
    free(norm);
    return out;
}

/*
 * Fold files [0, nfiles) (all read) into nr->run. 'dup' receives the index
 * of the first file claiming a rank an earlier file claimed (nfiles: none);
 * then nothing else is done and 'err' holds the message.
 */
static enum sx_status merge(struct sx_native *nr, const char *label, const char *stem_of,
                            size_t *dup, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_names t = {0};
    struct mrow *mr = NULL;
    double *key = NULL;
    size_t *gorder = NULL, *gpos = NULL, *newid = NULL;
    struct rank_seen *seen = NULL;
    size_t nseen = 0, nmr = 0, capmr = 0;
    struct sx_run *run = NULL;
    const char *what = nr->nfiles > 0 ? nr->files[0].path : "native run";

    *dup = nr->nfiles;
    /* the metadata's file: the lowest rank's among files with metadata */
    size_t meta_file = SIZE_MAX;
    int64_t meta_rank = 0;
    for (size_t i = 0; i < nr->nfiles; i++) {
        const struct sx_nfile *f = &nr->files[i];
        for (size_t j = 0; j < f->nranks; j++) {
            SX_CHECK(nseen < SIZE_MAX / 2, SX_ERR_NOMEM, err, what, "out of memory");
            nseen++;
            if (f->metadata.kind == SX_V_OBJECT && f->metadata.u.obj.n > 0 &&
                (meta_file == SIZE_MAX || f->ranks[j] < meta_rank)) {
                meta_file = i;
                meta_rank = f->ranks[j];
            }
        }
    }
    /* duplicates: of the files read in order, the first to claim a rank claimed before
     * (the lowest such rank within that file) */
    seen = sx_malloc((nseen + 1) * sizeof *seen);
    SX_CHECK(seen != NULL, SX_ERR_NOMEM, err, what, "out of memory");
    nseen = 0;
    for (size_t i = 0; i < nr->nfiles; i++)
        for (size_t j = 0; j < nr->files[i].nranks; j++)
            seen[nseen++] = (struct rank_seen){nr->files[i].ranks[j], i};
    if (nseen > 1) /* qsort wants a valid array even for none */
        qsort(seen, nseen, sizeof *seen, cmp_seen);
    size_t dup_at = SIZE_MAX, dup_first = 0;
    int64_t dup_rank = 0;
    for (size_t k = 1; k < nseen; k++) {
        if (seen[k].rank != seen[k - 1].rank || seen[k - 1].file == seen[k].file)
            continue;
        size_t first = k - 1;
        while (first > 0 && seen[first - 1].rank == seen[k].rank)
            first--;
        if (dup_at == SIZE_MAX || seen[k].file < dup_at ||
            (seen[k].file == dup_at && seen[k].rank < dup_rank)) {
            dup_at = seen[k].file;
            dup_rank = seen[k].rank;
            dup_first = seen[first].file;
        }
    }
    if (dup_at != SIZE_MAX) {
        *dup = dup_at;
        st = sx_error_set(err, SX_ERR_FORMAT, nr->files[dup_at].path,
                          "%s and %s both claim rank %" PRId64
                          "; pass the MPI rank to sp_init() so each rank writes its own",
                          nr->files[dup_at].path, nr->files[dup_first].path, dup_rank);
        goto out;
    }
    /* per_region in first-appearance order, each region's key, the earliest start */
    bool any_call = false;
    int64_t earliest = 0;
    size_t capkey = 0;
    for (size_t i = 0; i < nr->nfiles; i++) {
        const struct sx_nfile *f = &nr->files[i];
        for (size_t j = 0; j < f->nrows; j++) {
            const struct sx_nrow *r = &f->rows[j];
            const size_t before = t.n;
            size_t g = sx_names_add(&t, r->name);
            SX_CHECK(g != SIZE_MAX, SX_ERR_NOMEM, err, what, "out of memory");
            if (g >= capkey) {
                size_t nc = capkey ? capkey * 2 : 64;
                double *nk = sx_realloc(key, nc * sizeof *nk);
                SX_CHECK(nk != NULL, SX_ERR_NOMEM, err, what, "out of memory");
                key = nk;
                capkey = nc;
            }
            /* float(min(start_ns)) / 1e9, 0.0 for a row without calls */
            double k = r->count > 0 ? (double)r->min_start / 1e9 : 0.0;
            if (t.n > before)
                key[g] = k; /* a new region */
            else if (k < key[g])
                key[g] = k;
            if (r->count > 0 && (!any_call || r->first_start < earliest)) {
                earliest = r->first_start;
                any_call = true;
            }
            if (nmr == capmr) {
                size_t nc = capmr ? capmr * 2 : 64;
                struct mrow *nv = sx_realloc(mr, nc * sizeof *nv);
                SX_CHECK(nv != NULL, SX_ERR_NOMEM, err, what, "out of memory");
                mr = nv;
                capmr = nc;
            }
            mr[nmr++] = (struct mrow){r->rank, 0, g, (uint32_t)i, (uint32_t)j};
        }
    }
    /* G: regions stable-sorted by key */
    gorder = sx_malloc((t.n + 1) * sizeof *gorder);
    gpos = sx_malloc((t.n + 1) * sizeof *gpos);
    newid = sx_malloc((t.n + 1) * sizeof *newid);
    SX_CHECK(gorder != NULL && gpos != NULL && newid != NULL, SX_ERR_NOMEM, err, what,
             "out of memory");
    for (size_t i = 0; i < t.n; i++)
        gorder[i] = i;
    SX_CHECK(sx_native_sort_keys(gorder, t.n, key) == SX_OK, SX_ERR_NOMEM, err, what,
             "out of memory");
    for (size_t i = 0; i < t.n; i++) {
        gpos[gorder[i]] = i;
        newid[i] = SIZE_MAX;
    }
    for (size_t i = 0; i < nmr; i++)
        mr[i].gpos = gpos[mr[i].region];
    /* write_results: rank by rank, each rank's regions in G order */
    if (nmr > 1)
        qsort(mr, nmr, sizeof *mr, cmp_mrow);

    run = sx_run_new();
    SX_CHECK(run != NULL, SX_ERR_NOMEM, err, what, "out of memory");
    run->path = sx_strdup(what);
    run->schema = 3;
    run->layout = SX_LAYOUT_COLUMNAR;
    run->has_meta_col = true;
    run->delta_encoded = true;
    run->names = sx_calloc(t.n + 1, sizeof *run->names);
    run->rows = sx_calloc(nmr + 1, sizeof *run->rows);
    nr->loc = sx_calloc(nmr + 1, sizeof *nr->loc);
    SX_CHECK(run->path != NULL && run->names != NULL && run->rows != NULL &&
                 nr->loc != NULL,
             SX_ERR_NOMEM, err, what, "out of memory");
    int64_t max_rank = -1;
    for (size_t i = 0; i < nmr; i++) {
        const struct sx_nrow *r = &nr->files[mr[i].file].rows[mr[i].row];
        struct sx_row *row = &run->rows[run->nrows++];
        if (newid[mr[i].region] == SIZE_MAX) {
            newid[mr[i].region] = run->nnames;
            run->names[run->nnames] = sx_strdup(r->name);
            SX_CHECK(run->names[run->nnames] != NULL, SX_ERR_NOMEM, err, what,
                     "out of memory");
            run->nnames++;
        }
        row->region = (uint32_t)newid[mr[i].region];
        row->rank = r->rank;
        row->count = r->count;
        row->offset = run->nevents;
        row->file_row = i;
        row->cols = SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END);
        row->has_meta_col = true;
        run->nevents += r->count;
        /* a source survives only with its file; a line without a file is lost */
        if (r->source_file != NULL) {
            row->source_file = sx_strdup(r->source_file);
            SX_CHECK(row->source_file != NULL, SX_ERR_NOMEM, err, what, "out of memory");
            if (r->has_lineno && r->lineno >= 0) {
                row->has_lineno = true;
                row->source_lineno = r->lineno;
            }
            if (r->source_text != NULL && r->source_text[0] != '\0') {
                row->source_text = sx_strdup(r->source_text);
                SX_CHECK(row->source_text != NULL, SX_ERR_NOMEM, err, what,
                         "out of memory");
            }
        }
        nr->loc[i] = (struct sx_nloc){mr[i].file, mr[i].row};
        if (r->rank > max_rank)
            max_rank = r->rank;
    }
    /* metadata: one file's dict, then what import-native derives, in name order */
    struct sx_value *md = &run->metadata;
    if (meta_file != SIZE_MAX) {
        sx_value_free(md);
        *md = nr->files[meta_file].metadata;
        nr->files[meta_file].metadata = (struct sx_value){0};
    }
    struct sx_value v;
    bool ok = sx_value_str(&v, "native", 6) && sx_value_set(md, "source", 6, v) &&
              sx_value_set(md, "trace_format_version", 20, sx_value_int(2));
    if (ok && any_call)
        ok = sx_value_set(md, "start_time_ns", 13, sx_value_int(earliest));
    char *lab = label != NULL && label[0] != '\0' ? sx_strdup(label) : path_stem(stem_of);
    ok = ok && lab != NULL && sx_value_str(&v, lab, strlen(lab)) &&
         sx_value_set(md, "label", 5, v);
    free(lab);
    SX_CHECK(ok, SX_ERR_NOMEM, err, what, "out of memory");
    if (md->u.obj.n > 1) /* qsort wants a valid array even for none */
        qsort(md->u.obj.items, md->u.obj.n, sizeof *md->u.obj.items, cmp_member);
    /* num_ranks as read_h5 gives it for the merged file */
    if (run->nrows == 0) {
        run->num_ranks = 0;
    } else {
        int64_t mpi_size = 1;
        for (size_t i = 0; i < md->u.obj.n; i++)
            if (strcmp(md->u.obj.items[i].key, "mpi_size") == 0 &&
                md->u.obj.items[i].value.kind == SX_V_INT)
                mpi_size = md->u.obj.items[i].value.u.i;
        run->num_ranks = mpi_size > max_rank + 1 ? mpi_size : max_rank + 1;
    }
    nr->run = run;
    run = NULL;
out:
    sx_run_free(run);
    sx_names_free(&t);
    free(mr);
    free(key);
    free(gorder);
    free(gpos);
    free(newid);
    free(seen);
    return st;
}

/* ------------------------------------------------------------------ */
/* Collective open                                                     */

struct claim {
    const char *path;
    int rank;
    size_t i;
};

static int cmp_claim(const void *a, const void *b) {
    const struct claim *x = a, *y = b;
    int c = sx_native_path_cmp(x->path, y->path);
    if (c != 0)
        return c;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Spread the files over the ranks that named them, fewest files first. */
static enum sx_status assign(struct sx_native *nr, char **claim_path, int *claim_rank,
                             size_t nclaim, int size, struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t *load = sx_calloc((size_t)size + 1, sizeof *load);
    size_t *idx = sx_malloc((nclaim + 1) * sizeof *idx);
    SX_CHECK(load != NULL && idx != NULL, SX_ERR_NOMEM, err, "native run",
             "out of memory");
    /* sort the claims by path (then rank) */
    struct claim *cl = sx_malloc((nclaim + 1) * sizeof *cl);
    SX_CHECK(cl != NULL, SX_ERR_NOMEM, err, "native run", "out of memory");
    for (size_t i = 0; i < nclaim; i++)
        cl[i] = (struct claim){claim_path[i], claim_rank[i], i};
    if (nclaim > 1) /* qsort wants a valid array even for none */
        qsort(cl, nclaim, sizeof *cl, cmp_claim);
    for (size_t i = 0; i < nclaim; i++)
        idx[i] = cl[i].i;
    free(cl);
    nr->files = sx_calloc(nclaim + 1, sizeof *nr->files);
    nr->owner = sx_calloc(nclaim + 1, sizeof *nr->owner);
    SX_CHECK(nr->files != NULL && nr->owner != NULL, SX_ERR_NOMEM, err, "native run",
             "out of memory");
    for (size_t i = 0; i < nclaim;) {
        size_t j = i;
        int best = claim_rank[idx[i]];
        while (j < nclaim && strcmp(claim_path[idx[j]], claim_path[idx[i]]) == 0) {
            int r = claim_rank[idx[j]];
            if (load[r] < load[best])
                best = r;
            j++;
        }
        struct sx_nfile *f = &nr->files[nr->nfiles];
        f->path = claim_path[idx[i]];
        claim_path[idx[i]] = NULL;
        size_t n = strlen(f->path);
        /* Path(p).suffix == ".h5" */
        const char *slash = strrchr(f->path, '/');
        const char *name = slash ? slash + 1 : f->path;
        f->h5 = n >= 3 && strcmp(f->path + n - 3, ".h5") == 0 && strlen(name) > 3;
        nr->owner[nr->nfiles++] = best;
        load[best]++;
        i = j;
    }
out:
    free(load);
    free(idx);
    return st;
}

enum sx_status sx_native_open(MPI_Comm comm, const char *const *inputs, size_t n,
                              const char *label, const char *stem_of,
                              struct sx_native **out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    int rank = 0, size = 1;
    char **mine = NULL, **claim_path = NULL;
    int *claim_rank = NULL;
    size_t nmine = 0, nclaim = 0;
    struct pk k = {0};
    struct sx_buf all = {0};
    uint64_t *at = NULL;
    struct sx_native *nr = sx_calloc(1, sizeof *nr);

    *out = NULL;
    if (comm != MPI_COMM_NULL &&
        (sx_mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", err) != SX_OK ||
         sx_mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size", err) != SX_OK)) {
        free(nr);
        return SX_ERR_MPI;
    }
    at = sx_calloc((size_t)size + 1, sizeof *at);
    /* Stage 1: this rank's inputs */
    if (nr == NULL || at == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, "native run", "out of memory");
    if (st == SX_OK)
        st = sx_native_find(inputs, n, &mine, &nmine, err);
    for (size_t i = 0; st == SX_OK && i < nmine; i++) {
        put_str(&k, mine[i]);
        if (k.b.failed)
            st = sx_error_set(err, SX_ERR_NOMEM, "native run", "out of memory");
    }
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;

    /* Stage 2: the union of every rank's files, each read by one rank */
    if (comm != MPI_COMM_NULL) {
        st = allgather(comm, size, &k.b, &all, at, err);
        if (st != SX_OK)
            goto out;
    } else {
        all = k.b;
        k.b = (struct sx_buf){0};
        at[0] = 0;
        at[1] = all.len;
    }
    size_t capc = 0;
    for (int r = 0; st == SX_OK && r < size; r++) {
        struct pk u = {.p = all.data + at[r], .end = all.data + at[r + 1]};
        while (u.p < u.end && !u.bad) {
            char *p = get_str(&u);
            if (nclaim == capc) {
                size_t nc = capc ? capc * 2 : 64;
                char **np = sx_realloc(claim_path, nc * sizeof *np);
                int *nrk = np ? sx_realloc(claim_rank, nc * sizeof *nrk) : NULL;
                if (np != NULL)
                    claim_path = np;
                if (nrk != NULL)
                    claim_rank = nrk;
                if (np == NULL || nrk == NULL) {
                    free(p);
                    u.bad = true;
                    break;
                }
                capc = nc;
            }
            claim_path[nclaim] = p;
            claim_rank[nclaim++] = r;
            u.bad = u.bad || p == NULL;
        }
        if (u.bad)
            st = sx_error_set(err, SX_ERR_NOMEM, "native run", "out of memory");
    }
    if (st == SX_OK)
        st = assign(nr, claim_path, claim_rank, nclaim, size, err);
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;

    /* Stage 3: read this rank's files, in order, up to the first failure */
    size_t fail = nr->nfiles;
    enum sx_status read_st = SX_OK;
    struct sx_error read_err;
    sx_error_clear(&read_err);
    for (size_t i = 0; i < nr->nfiles; i++) {
        if (nr->owner[i] != rank)
            continue;
        read_st = sx_native_read_index(&nr->files[i], &read_err);
        if (read_st != SX_OK) {
            fail = i;
            break;
        }
    }
    /* NOTE: collective: the first failing file in path order decides, as the
     * reference reads files one by one */
    uint64_t my_fail = fail, first_fail = fail;
    if (comm != MPI_COMM_NULL && MPI_Allreduce(&my_fail, &first_fail, 1, MPI_UINT64_T,
                                               MPI_MIN, comm) != MPI_SUCCESS)
        st = sx_mpi_check(MPI_ERR_OTHER, "MPI_Allreduce", err);

    /* Stage 4: every rank's indexes (of the files before the failure) to every rank */
    sx_buf_reset(&k.b);
    for (size_t i = 0; i < first_fail && i < nr->nfiles; i++)
        if (nr->owner[i] == rank)
            put_file(&k, i, &nr->files[i]);
    if (k.b.failed)
        st = sx_error_set(err, SX_ERR_NOMEM, "native run", "out of memory");
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    if (comm != MPI_COMM_NULL) {
        sx_buf_reset(&all);
        st = allgather(comm, size, &k.b, &all, at, err);
        if (st != SX_OK)
            goto out;
        for (int r = 0; r < size; r++) {
            if (r == rank)
                continue;
            struct pk u = {.p = all.data + at[r], .end = all.data + at[r + 1]};
            while (u.p < u.end && !u.bad)
                get_file(&u, nr->files, nr->nfiles);
            if (u.bad && st == SX_OK)
                st = sx_error_set(err, SX_ERR_NOMEM, "native run", "out of memory");
        }
    }
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;

    /* Stage 5: the merge, the same on every rank; then the first error in file order */
    size_t saved = nr->nfiles, dup = nr->nfiles;
    struct sx_error merge_err;
    sx_error_clear(&merge_err);
    nr->nfiles = first_fail < saved ? (size_t)first_fail : saved;
    enum sx_status merge_st = merge(nr, label, stem_of, &dup, &merge_err);
    nr->nfiles = saved;
    if (dup < first_fail) { /* the later file of the pair is the failing one */
        st = rank == nr->owner[dup] ? merge_st : SX_OK;
        if (st != SX_OK)
            *err = merge_err;
    } else if (first_fail < nr->nfiles) {
        st = fail == first_fail ? read_st : SX_OK;
        if (st != SX_OK)
            *err = read_err;
    } else {
        st = merge_st;
        if (st != SX_OK)
            *err = merge_err;
    }
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    *out = nr;
    nr = NULL;
out:
    for (size_t i = 0; i < nmine; i++)
        free(mine[i]);
    free(mine);
    for (size_t i = 0; i < nclaim; i++)
        free(claim_path[i]);
    free(claim_path);
    free(claim_rank);
    sx_buf_free(&k.b);
    sx_buf_free(&all);
    free(at);
    sx_native_free(nr);
    return st;
}

enum sx_status sx_native_load(struct sx_native *nr, int rank, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_nreader rd = {.fd = -1};
    struct sx_run *run = nr->run;
    for (size_t i = 0; i < run->nrows; i++) {
        struct sx_row *row = &run->rows[i];
        const struct sx_nloc *l = &nr->loc[i];
        if (rank >= 0 && nr->owner[l->file] != rank)
            continue;
        for (int c = SX_COL_START; c <= SX_COL_END; c++) {
            free(row->col[c]);
            row->col[c] = sx_malloc((row->count + 1) * sizeof *row->col[c]);
            SX_CHECK(row->col[c] != NULL, SX_ERR_NOMEM, err, nr->files[l->file].path,
                     "out of memory");
        }
        st = sx_native_read_events(&rd, nr, l, 0, row->count, row->col[SX_COL_START],
                                   row->col[SX_COL_END], err);
        if (st != SX_OK)
            goto out;
    }
out:
    sx_nreader_close(&rd);
    return st;
}
