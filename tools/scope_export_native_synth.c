/* scope_export_native_synth.c - synthetic native runs: per-rank .h5 and .spt files */
/*
 * Writes the files scope-profiler's C and Fortran APIs leave at finalize,
 * one per rank: <prefix>_rank<NNNNN>.h5 in the C API's HDF5 layout (schema 2,
 * absolute start and end columns) or <prefix>_rank<NNNNN>.spt binary traces
 * (version 1 or 2, little- or big-endian). Any number of ranks and events;
 * the same options and seed give the same bytes (the .h5 files' HDF5 object
 * headers aside, which carry no time either).
 *
 *   scope-export-native-synth --prefix DIR/run --ranks 256 --events 10000000
 *       [--regions 8] [--format h5|spt|mixed] [--version 1|2]
 *       [--endian little|big|mixed] [--empty-ranks K] [--seed S]
 *
 * --format mixed: even ranks .h5, odd ranks .spt; --endian mixed: odd ranks
 * big-endian; --empty-ranks K: the last K ranks record no call (a zero-row
 * .h5, a trace without regions).
 */
#include <errno.h>
#include <hdf5.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct opts {
    const char *prefix;
    long ranks, regions, version, empty, seed;
    long long events;
    const char *format, *endian;
};

static uint64_t mix(uint64_t x) { /* splitmix64 */
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* One rank's plan: the regions it records, in registration order. */
struct region {
    char name[32];
    char file[32]; /* "" = none */
    int32_t line;  /* -1 = none */
    uint64_t count;
    int64_t base; /* first start */
    int64_t stride;
};

static const struct opts *O;

/* Call k of region 'g' on rank 'r': start and end, non-decreasing in k. */
static void call(long r, long j, const struct region *g, uint64_t k, int64_t *s,
                 int64_t *e) {
    uint64_t h = mix((uint64_t)O->seed ^ (uint64_t)r << 40 ^ (uint64_t)j << 24 ^ k);
    *s = g->base + (int64_t)k * g->stride + (int64_t)(h % 7);
    *e = *s + 5 + (int64_t)(h >> 8) % (g->stride - 12 > 1 ? g->stride - 12 : 1);
}

static size_t plan(long r, struct region *g) {
    size_t n = 0;
    long long nonempty = O->ranks - O->empty;
    if (r >= nonempty)
        return 0;
    uint64_t mine = (uint64_t)(O->events / nonempty) + (r < O->events % nonempty);
    const int64_t t0 =
        1000000000000 + (int64_t)(mix((uint64_t)O->seed) % 1000000) + (int64_t)r * 977;
    size_t first = 0;
    for (long j = 0; j < O->regions; j++) {
        /* every third region only on even ranks, so ranks differ in their regions */
        if (j % 3 == 2 && r % 2 == 1)
            continue;
        struct region *x = &g[n++];
        memset(x, 0, sizeof *x);
        if (j == 0)
            snprintf(x->name, sizeof x->name, "main");
        else
            snprintf(x->name, sizeof x->name, "region_%03ld", j);
        if (j % 2 == 0)
            snprintf(x->file, sizeof x->file, "src/r%03ld.c", j);
        x->line = j % 4 == 2 ? -1 : (int32_t)(10 * j + (long)(r % 2));
        /* regions start in an order of their own, not their registration order */
        x->base = t0 + 1000 + (int64_t)((j * 37) % 101) * 3;
        x->stride = 64 + (int64_t)(j % 5) * 16;
        if (j == 0)
            first = n - 1;
    }
    if (n == 0 || mine == 0)
        return 0;
    /* main: one call around everything; the rest share the events */
    g[first].count = 1;
    g[first].base = t0;
    uint64_t left = mine - 1, others = n - 1;
    for (size_t i = 0; i < n; i++) {
        if (i == first)
            continue;
        g[i].count = others ? left / others + (i <= left % others) : 0;
    }
    uint64_t span = 2000;
    for (size_t i = 0; i < n; i++)
        if (i != first && (uint64_t)g[i].stride * g[i].count + 2000 > span)
            span = (uint64_t)g[i].stride * g[i].count + 2000;
    g[first].stride = (int64_t)span + 20;
    /* drop regions without calls, as the C API does */
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (g[i].count > 0)
            g[k++] = g[i];
    return k;
}

/* The region number (for 'call') of plan entry 'i'. */
static long region_no(const struct region *g) {
    return strcmp(g->name, "main") == 0 ? 0 : strtol(g->name + 7, NULL, 10);
}

#define CHUNK 65536

/* ------------------------------------------------------------------ */
/* .spt                                                                */

static bool put(FILE *f, const void *p, size_t n, bool be) {
    unsigned char b[8];
    memcpy(b, p, n);
    if (be)
        for (size_t i = 0; i < n / 2; i++) {
            unsigned char t = b[i];
            b[i] = b[n - 1 - i];
            b[n - 1 - i] = t;
        }
    return fwrite(b, 1, n, f) == n;
}

static int write_spt(const char *path, long r, const struct region *g, size_t n,
                     bool be) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        fprintf(stderr, "scope-export-native-synth: %s: %s\n", path, strerror(errno));
        return 1;
    }
    int32_t version = (int32_t)O->version, rank = (int32_t)r;
    int64_t nreg = (int64_t)n;
    bool ok = fwrite("SCOPEPRF", 1, 8, f) == 8 && put(f, &version, 4, be) &&
              put(f, &rank, 4, be) && put(f, &nreg, 8, be);
    for (size_t i = 0; ok && i < n; i++) {
        int32_t len = (int32_t)strlen(g[i].name);
        ok = put(f, &len, 4, be) && fwrite(g[i].name, 1, (size_t)len, f) == (size_t)len;
        if (ok && version >= 2) {
            int32_t slen = (int32_t)strlen(g[i].file);
            int32_t line = slen > 0 ? g[i].line : -1;
            ok = put(f, &slen, 4, be) &&
                 fwrite(g[i].file, 1, (size_t)slen, f) == (size_t)slen &&
                 put(f, &line, 4, be);
        }
        int64_t cnt = (int64_t)g[i].count;
        ok = ok && put(f, &cnt, 8, be);
        for (int col = 0; ok && col < 2; col++)
            for (uint64_t k = 0; ok && k < g[i].count; k++) {
                int64_t s, e;
                call(r, region_no(&g[i]), &g[i], k, &s, &e);
                ok = put(f, col == 0 ? &s : &e, 8, be);
            }
    }
    if (fclose(f) != 0)
        ok = false;
    if (!ok)
        fprintf(stderr, "scope-export-native-synth: writing %s failed\n", path);
    return ok ? 0 : 1;
}

/* ------------------------------------------------------------------ */
/* .h5 in the C API's layout                                           */

static hid_t str_type(void) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

static bool attr_str(hid_t obj, const char *name, const char *v) {
    hid_t t = str_type(), s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    bool ok = a >= 0 && H5Awrite(a, t, &v) >= 0;
    H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
    return ok;
}

static bool attr_i64(hid_t obj, const char *name, int64_t v) {
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT);
    bool ok = a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0;
    H5Aclose(a);
    H5Sclose(s);
    return ok;
}

/* Objects without modification times: the same options give the same bytes. */
static hid_t dset(hid_t g, const char *name, hid_t type, hsize_t n) {
    hid_t s = H5Screate_simple(1, &n, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(dcpl, 0);
    hid_t d = H5Dcreate2(g, name, type, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    H5Sclose(s);
    return d;
}

static hid_t group(hid_t f, const char *name) {
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    H5Pset_obj_track_times(gcpl, 0);
    hid_t g = H5Gcreate2(f, name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
    H5Pclose(gcpl);
    return g;
}

static bool write_all(hid_t g, const char *name, hid_t ftype, hid_t mtype, hsize_t n,
                      const void *v) {
    hid_t d = dset(g, name, ftype, n);
    bool ok =
        d >= 0 && (n == 0 || H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(d);
    return ok;
}

struct stats {
    int64_t total, minimum, maximum, first, last, start_minimum, end_maximum;
    uint64_t gpu_count;
    int64_t gpu_total;
    double mean, m2;
};

static int write_h5(const char *path, long r, const struct region *g, size_t n) {
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t md = -1, rt = -1, ix = -1, ev = -1, ds = -1, de = -1, st = -1;
    uint32_t *u32 = calloc(n + 1, 4), *ranks = calloc(n + 1, 4);
    uint64_t *off = calloc(n + 1, 8), *cnt = calloc(n + 1, 8);
    int64_t *lines = calloc(n + 1, 8), *excl = calloc(n + 1, 8);
    const char **files = calloc(n + 1, sizeof *files),
               **texts = calloc(n + 1, sizeof *texts);
    const char **tags = calloc(n + 1, sizeof *tags),
               **names = calloc(n + 1, sizeof *names);
    struct stats *sum = calloc(n + 1, sizeof *sum);
    int64_t *bs = malloc(CHUNK * 8), *be = malloc(CHUNK * 8);
    bool ok = f >= 0 && u32 && ranks && off && cnt && lines && excl && files && texts &&
              tags && names && sum && bs && be;
    uint64_t total = 0;
    int64_t t_first = 0;
    for (size_t i = 0; ok && i < n; i++) {
        u32[i] = (uint32_t)i;
        ranks[i] = (uint32_t)r;
        off[i] = total;
        cnt[i] = g[i].count;
        total += g[i].count;
        lines[i] = g[i].file[0] ? g[i].line : -1;
        excl[i] = -1;
        files[i] = g[i].file;
        texts[i] = "";
        tags[i] = "[]";
        names[i] = g[i].name;
        int64_t s, e;
        call(r, region_no(&g[i]), &g[i], 0, &s, &e);
        if (i == 0 || s < t_first)
            t_first = s;
    }
    ok = ok && attr_i64(f, "scope_profiler_schema", 2) &&
         attr_str(f, "storage_layout", "columnar");
    if (ok) {
        md = group(f, "metadata");
        const char *slash = strrchr(O->prefix, '/');
        const char *label = slash ? slash + 1 : O->prefix;
        ok = md >= 0 && attr_str(md, "source", "native") &&
             attr_str(md, "source_language", "c") &&
             attr_i64(md, "trace_format_version", 2) && attr_i64(md, "mpi_rank", r) &&
             attr_str(md, "hostname", "synth") &&
             attr_str(md, "timestamp", "2026-01-01T00:00:00+00:00") &&
             (label[0] == '\0' || attr_str(md, "label", label)) &&
             (n == 0 || attr_i64(md, "start_time_ns", t_first));
    }
    hid_t vs = str_type();
    if (ok) {
        rt = group(f, "region_table");
        ok = rt >= 0 && write_all(rt, "names", vs, vs, n, names);
    }
    if (ok) {
        ix = group(f, "rank_region_index");
        ok =
            ix >= 0 &&
            write_all(ix, "region_ids", H5T_STD_U32LE, H5T_NATIVE_UINT32, n, u32) &&
            write_all(ix, "ranks", H5T_STD_U32LE, H5T_NATIVE_UINT32, n, ranks) &&
            write_all(ix, "event_offsets", H5T_STD_U64LE, H5T_NATIVE_UINT64, n, off) &&
            write_all(ix, "event_counts", H5T_STD_U64LE, H5T_NATIVE_UINT64, n, cnt) &&
            write_all(ix, "source_lines", H5T_STD_I64LE, H5T_NATIVE_INT64, n, lines) &&
            write_all(ix, "exclusive_totals", H5T_STD_I64LE, H5T_NATIVE_INT64, n, excl) &&
            write_all(ix, "source_files", vs, vs, n, files) &&
            write_all(ix, "source_texts", vs, vs, n, texts) &&
            write_all(ix, "tags", vs, vs, n, tags);
    }
    if (ok) {
        ev = group(f, "events");
        ds = dset(ev, "start_times", H5T_STD_I64LE, total);
        de = dset(ev, "end_times", H5T_STD_I64LE, total);
        ok = ev >= 0 && ds >= 0 && de >= 0;
    }
    for (size_t i = 0; ok && i < n; i++) {
        struct stats *x = &sum[i];
        for (uint64_t k = 0; ok && k < g[i].count;) {
            size_t m = g[i].count - k < CHUNK ? (size_t)(g[i].count - k) : CHUNK;
            for (size_t q = 0; q < m; q++) {
                call(r, region_no(&g[i]), &g[i], k + q, &bs[q], &be[q]);
                int64_t d = be[q] - bs[q];
                uint64_t c = k + q + 1;
                if (c == 1) {
                    x->minimum = x->maximum = x->first = d;
                    x->start_minimum = bs[q];
                    x->end_maximum = be[q];
                }
                x->total += d;
                x->minimum = d < x->minimum ? d : x->minimum;
                x->maximum = d > x->maximum ? d : x->maximum;
                x->last = d;
                x->start_minimum = bs[q] < x->start_minimum ? bs[q] : x->start_minimum;
                x->end_maximum = be[q] > x->end_maximum ? be[q] : x->end_maximum;
                double delta = (double)d - x->mean;
                x->mean += delta / (double)c;
                x->m2 += delta * ((double)d - x->mean);
            }
            hsize_t start = off[i] + k, count = m;
            hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(1, &count, NULL);
            H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL);
            ok = H5Dwrite(ds, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, bs) >= 0 &&
                 H5Dwrite(de, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, be) >= 0;
            H5Sclose(fs);
            H5Sclose(ms);
            k += m;
        }
    }
    if (ok) {
        st = H5Tcreate(H5T_COMPOUND, sizeof(struct stats));
        H5Tinsert(st, "total", HOFFSET(struct stats, total), H5T_NATIVE_INT64);
        H5Tinsert(st, "minimum", HOFFSET(struct stats, minimum), H5T_NATIVE_INT64);
        H5Tinsert(st, "maximum", HOFFSET(struct stats, maximum), H5T_NATIVE_INT64);
        H5Tinsert(st, "first", HOFFSET(struct stats, first), H5T_NATIVE_INT64);
        H5Tinsert(st, "last", HOFFSET(struct stats, last), H5T_NATIVE_INT64);
        H5Tinsert(st, "start_minimum", HOFFSET(struct stats, start_minimum),
                  H5T_NATIVE_INT64);
        H5Tinsert(st, "end_maximum", HOFFSET(struct stats, end_maximum),
                  H5T_NATIVE_INT64);
        H5Tinsert(st, "gpu_count", HOFFSET(struct stats, gpu_count), H5T_NATIVE_UINT64);
        H5Tinsert(st, "gpu_total", HOFFSET(struct stats, gpu_total), H5T_NATIVE_INT64);
        H5Tinsert(st, "mean", HOFFSET(struct stats, mean), H5T_NATIVE_DOUBLE);
        H5Tinsert(st, "m2", HOFFSET(struct stats, m2), H5T_NATIVE_DOUBLE);
        ok = write_all(ix, "summary_statistics", st, st, n, sum);
        H5Tclose(st);
    }
    H5Tclose(vs);
    H5Dclose(ds);
    H5Dclose(de);
    H5Gclose(ev);
    H5Gclose(ix);
    H5Gclose(rt);
    H5Gclose(md);
    if (f >= 0 && H5Fclose(f) < 0)
        ok = false;
    free(u32);
    free(ranks);
    free(off);
    free(cnt);
    free(lines);
    free(excl);
    free(files);
    free(texts);
    free(tags);
    free(names);
    free(sum);
    free(bs);
    free(be);
    if (!ok)
        fprintf(stderr, "scope-export-native-synth: writing %s failed\n", path);
    return ok ? 0 : 1;
}

static int usage_to(FILE *f, int status) {
    fprintf(f, "usage: scope-export-native-synth --prefix P [--ranks N] [--events E] "
               "[--regions R] [--format h5|spt|mixed] [--version 1|2] "
               "[--endian little|big|mixed] [--empty-ranks K] [--seed S]\n"
               "Write a synthetic native run (per-process P_rank<N>.h5 or .spt files).\n"
               "A generator of test and benchmark input for scope-export, deterministic\n"
               "from --seed. Not needed to export real runs.\n");
    return status;
}

static int usage(void) { return usage_to(stderr, 2); }

int main(int argc, char **argv) {
    struct opts o = {NULL, 4, 8, 2, 0, 1, 1000, "h5", "little"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return usage_to(stdout, 0);
        if (v == NULL)
            return usage();
        i++;
        if (strcmp(a, "--prefix") == 0)
            o.prefix = v;
        else if (strcmp(a, "--ranks") == 0)
            o.ranks = strtol(v, NULL, 10);
        else if (strcmp(a, "--events") == 0)
            o.events = strtoll(v, NULL, 10);
        else if (strcmp(a, "--regions") == 0)
            o.regions = strtol(v, NULL, 10);
        else if (strcmp(a, "--version") == 0)
            o.version = strtol(v, NULL, 10);
        else if (strcmp(a, "--empty-ranks") == 0)
            o.empty = strtol(v, NULL, 10);
        else if (strcmp(a, "--seed") == 0)
            o.seed = strtol(v, NULL, 10);
        else if (strcmp(a, "--format") == 0)
            o.format = v;
        else if (strcmp(a, "--endian") == 0)
            o.endian = v;
        else
            return usage();
    }
    if (o.prefix == NULL || o.ranks < 1 || o.ranks > 1000000 || o.events < 0 ||
        o.regions < 1 || o.regions > 999 || (o.version != 1 && o.version != 2) ||
        o.empty < 0 || o.empty > o.ranks ||
        (strcmp(o.format, "h5") && strcmp(o.format, "spt") &&
         strcmp(o.format, "mixed")) ||
        (strcmp(o.endian, "little") && strcmp(o.endian, "big") &&
         strcmp(o.endian, "mixed")))
        return usage();
    if (o.events < o.ranks - o.empty)
        o.events = o.ranks - o.empty; /* one call (main) per recording rank at least */
    O = &o;
    struct region *g = calloc((size_t)o.regions + 1, sizeof *g);
    size_t plen = strlen(o.prefix) + 32;
    char *path = malloc(plen);
    if (g == NULL || path == NULL)
        return 1;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    int rc = 0;
    for (long r = 0; rc == 0 && r < o.ranks; r++) {
        size_t n = plan(r, g);
        bool h5 =
            strcmp(o.format, "h5") == 0 || (strcmp(o.format, "mixed") == 0 && r % 2 == 0);
        bool be =
            strcmp(o.endian, "big") == 0 || (strcmp(o.endian, "mixed") == 0 && r % 2);
        snprintf(path, plen, "%s_rank%05ld.%s", o.prefix, r, h5 ? "h5" : "spt");
        rc = h5 ? write_h5(path, r, g, n) : write_spt(path, r, g, n, be);
    }
    free(g);
    free(path);
    return rc;
}
