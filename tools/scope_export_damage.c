/* scope_export_damage.c - write deliberately damaged scope-profiler runs for tests */
#include "h5_reader.h"
#include "h5_util.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Every mode but not-profile copies a valid schema-3 run (BASE, e.g. from
 * scope-export-synth with its defaults: contiguous, unfiltered, vlen strings,
 * superblock 0) to OUT byte for byte, then damages one thing in the copy
 * with the HDF5 C API. The damage is chosen so that a reader meets exactly
 * one fault, and the fault tests can name the object it must report.
 */

static const char usage_text[] =
    "usage: scope-export-damage MODE BASE.h5 OUT.h5\n"
    "       scope-export-damage not-profile OUT.h5\n"
    "Write a copy of the schema-3 run BASE.h5 with one deliberate fault, for tests.\n"
    "Modes (the object a reader must name in brackets):\n"
    "  offsets-beyond   the last row's events end 3 past the event columns\n"
    "                   [rank_region_index]\n"
    "  overlap          the second row by offset starts inside the first\n"
    "                   [rank_region_index]\n"
    "  index-lengths    event_counts has one row fewer than region_ids\n"
    "                   [rank_region_index/event_counts]\n"
    "  region-id        row 0 names a region id beyond region_table/names\n"
    "                   [rank_region_index]\n"
    "  huge-claim       events/durations has an extent of 2^40 and no storage\n"
    "                   [events/durations]\n"
    "  wrong-dtype      events/durations is float64 [events/durations]\n"
    "  string-ints      rank_region_index/ranks holds strings\n"
    "                   [rank_region_index/ranks]\n"
    "  bad-utf8         invalid UTF-8 in region names and metadata strings (valid:\n"
    "                   the export must replace them with U+FFFD, as Python does)\n"
    "  unknown-filter   events/durations is chunked and its filter pipeline names\n"
    "                   filter 32000 (LZF) [events/durations]\n"
    "  schema-4         scope_profiler_schema = 4 [scope_profiler_schema]\n"
    "  schema-float     scope_profiler_schema is the float 3.0 [scope_profiler_schema]\n"
    "  vlen-name        region_table/names[0] claims a string of 4 GiB\n"
    "                   [region_table/names]\n"
    "  vlen-overrun     region_table/names[0] claims 1000 bytes, more than its heap\n"
    "                   object holds [region_table/names]\n"
    "  vlen-meta        the /metadata attribute sx_hostile claims a string of 4 GiB\n"
    "                   [metadata]\n"
    "  external-storage rank_region_index/event_counts is stored in OUT.ext (written\n"
    "                   too, the same values) [rank_region_index/event_counts]\n"
    "  external-link    region_table is an external link to OUT.link.h5 (a copy of\n"
    "                   BASE) [region_table]\n"
    "  virtual          events/durations is a virtual dataset over OUT.vds.h5 (a copy\n"
    "                   of BASE) [events/durations]\n"
    "  virtual-meta     the same, of rank_region_index/event_metadata (BASE made\n"
    "                   with event metadata: scope-export-synth --columns ...,meta)\n"
    "  virtual-perf     the same, of rank0/perf_events/main/values (BASE made with\n"
    "                   scope-export-synth --perf)\n"
    "  rank-huge        rank_region_index/ranks row 0 is 4294967295 (valid: the file\n"
    "                   claims that many ranks)\n"
    "  summary-short    rank_region_index/summary_statistics has one row fewer than\n"
    "                   the index [rank_region_index/summary_statistics]\n"
    "  count-negative   rank_region_index/event_counts is int64, row 0 is -1\n"
    "                   [rank_region_index/event_counts]\n"
    "  bad-tags         rank_region_index/tags row 0 is not JSON\n"
    "                   [rank_region_index/tags]\n"
    "  bad-meta         rank_region_index/event_metadata row 0 is not JSON (BASE made\n"
    "                   with event metadata) [rank_region_index/event_metadata]\n"
    "  meta-count       rank_region_index/event_metadata row 0 is a list of one\n"
    "                   entry (its row has more calls) "
    "[rank_region_index/event_metadata]\n"
    "  soft-index       rank_region_index is a soft link to the group, renamed\n"
    "                   z_index (valid: the same run)\n"
    "  linked-twice     the events group is also linked as a_events, a name walked\n"
    "                   before its own (valid: the same run)\n"
    "  not-profile      an HDF5 file of unrelated content (no BASE)\n"
    "Exit status: 0 written, 1 failure, 2 usage error.\n";

/* bad-utf8: what the names get appended, and the metadata strings written */
static const char *const bad_suffixes[] = {
    "\xff", "\xc3(", "\xed\xa0\x80", "\xe2\x82", "\xf4\x90\x80\x80", "\xc0\xaf"};
#define BAD_NAME0 "bad\xc0\xafname\xf4\x90\x80\x80"
#define BAD_META                                                                         \
    "a\xed\xa0\x80"                                                                      \
    "b\xc3(\xe2\x82"
#define BAD_LIST0 "caf\xe9"
#define BAD_LIST1 "x\xff"

/* The one checking macro: an HDF5 call that returns < 0 fails the tool. */
#define H5TRY(expr, what)                                                                \
    do {                                                                                 \
        if ((expr) < 0) {                                                                \
            fprintf(stderr, "scope-export-damage: %s: %s failed\n", out_path, what);     \
            goto out;                                                                    \
        }                                                                                \
    } while (0)

static const char *out_path = "";

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = NULL;
    char buf[65536];
    size_t n;
    int rc = -1;
    if (in == NULL) {
        perror(from);
        return -1;
    }
    out = fopen(to, "wb");
    if (out == NULL) {
        perror(to);
        goto done;
    }
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            break;
    if (!ferror(in) && !ferror(out))
        rc = 0;
done:
    if (out != NULL && fclose(out) != 0)
        rc = -1;
    fclose(in);
    if (rc != 0)
        fprintf(stderr, "scope-export-damage: cannot copy %s to %s\n", from, to);
    return rc;
}

/* Length of a 1-D dataset, or -1. */
static int64_t dset_len(hid_t f, const char *path) {
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT), sp = -1;
    hsize_t dims[1] = {0};
    int64_t n = -1;
    if (d >= 0)
        sp = H5Dget_space(d);
    if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
        H5Sget_simple_extent_dims(sp, dims, NULL) == 1)
        n = (int64_t)dims[0];
    sx_h5_close_id(sp);
    sx_h5_close_id(d);
    return n;
}

/* Read or write a whole 1-D dataset as 'mem' values; '*n' gets the length. */
static int io_column(hid_t f, const char *path, hid_t mem, size_t elem, void **buf,
                     int64_t *n, bool write) {
    int rc = -1;
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    if (d < 0)
        goto out;
    if (!write) {
        *n = dset_len(f, path);
        *buf = calloc((size_t)(*n > 0 ? *n : 0) + 1, elem);
        if (*n < 0 || *buf == NULL)
            goto out;
        H5TRY(H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, *buf), path);
    } else {
        H5TRY(H5Dwrite(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, *buf), path);
    }
    rc = 0;
out:
    sx_h5_close_id(d);
    if (rc != 0)
        fprintf(stderr, "scope-export-damage: %s: cannot %s %s\n", out_path,
                write ? "write" : "read", path);
    return rc;
}

/* Replace the dataset at 'path' by a new 1-D one of 'n' values of 'ftype'. */
static int replace_dataset(hid_t f, const char *path, hid_t ftype, hsize_t n, hid_t dcpl,
                           hid_t mem, const void *buf) {
    int rc = -1;
    hid_t sp = -1, d = -1;
    H5TRY(H5Ldelete(f, path, H5P_DEFAULT), "unlink the old dataset");
    sp = H5Screate_simple(1, &n, NULL);
    H5TRY(sp, "create a dataspace");
    d = H5Dcreate2(f, path, ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5TRY(d, path);
    if (buf != NULL && n > 0)
        H5TRY(H5Dwrite(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), path);
    rc = 0;
out:
    sx_h5_close_id(d);
    sx_h5_close_id(sp);
    return rc;
}

static hid_t utf8_vlen(void) {
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t >= 0 &&
        (H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0)) {
        H5Tclose(t);
        t = -1;
    }
    return t;
}

/* Indexes of the rows with the smallest and second smallest offset. */
static void first_rows(const uint64_t *off, int64_t n, int64_t *a, int64_t *b) {
    *a = *b = -1;
    for (int64_t r = 0; r < n; r++) {
        if (*a < 0 || off[r] < off[*a]) {
            *b = *a;
            *a = r;
        } else if (*b < 0 || off[r] < off[*b]) {
            *b = r;
        }
    }
}

static int damage_offsets(hid_t f, bool overlap) {
    int rc = -1;
    void *off = NULL, *cnt = NULL;
    int64_t n = 0, m = 0;
    if (io_column(f, "rank_region_index/event_offsets", H5T_NATIVE_UINT64, 8, &off, &n,
                  false) != 0 ||
        io_column(f, "rank_region_index/event_counts", H5T_NATIVE_UINT64, 8, &cnt, &m,
                  false) != 0)
        goto out;
    uint64_t *o = off;
    const uint64_t *c = cnt;
    if (n < 2 || m != n) {
        fprintf(stderr, "scope-export-damage: the base run needs two rows or more\n");
        goto out;
    }
    if (overlap) {
        int64_t a, b;
        first_rows(o, n, &a, &b);
        if (c[a] == 0 || o[b] == 0) {
            fprintf(stderr, "scope-export-damage: the base run's first row is empty\n");
            goto out;
        }
        o[b] -= 1; /* starts on the last event of the row before it */
    } else {
        int64_t last = 0;
        for (int64_t r = 1; r < n; r++)
            if (o[r] > o[last])
                last = r;
        o[last] += 3;
    }
    rc = io_column(f, "rank_region_index/event_offsets", H5T_NATIVE_UINT64, 8, &off, &n,
                   true);
out:
    free(off);
    free(cnt);
    return rc;
}

static int damage_index_lengths(hid_t f) {
    int rc = -1;
    void *cnt = NULL;
    int64_t n = 0;
    if (io_column(f, "rank_region_index/event_counts", H5T_NATIVE_UINT64, 8, &cnt, &n,
                  false) != 0)
        goto out;
    if (n < 2) {
        fprintf(stderr, "scope-export-damage: the base run needs two rows or more\n");
        goto out;
    }
    rc = replace_dataset(f, "rank_region_index/event_counts", H5T_STD_U64LE,
                         (hsize_t)(n - 1), H5P_DEFAULT, H5T_NATIVE_UINT64, cnt);
out:
    free(cnt);
    return rc;
}

/* summary-short: summary_statistics one row shorter than the index. */
static int damage_summary_short(hid_t f) {
    int rc = -1;
    const char *path = "rank_region_index/summary_statistics";
    void *rec = NULL;
    int64_t n = 0;
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    hid_t t = d >= 0 ? H5Dget_type(d) : -1;
    sx_h5_close_id(d);
    H5TRY(t, path);
    if (io_column(f, path, t, H5Tget_size(t), &rec, &n, false) != 0)
        goto out;
    if (n < 2) {
        fprintf(stderr, "scope-export-damage: the base run needs two rows or more\n");
        goto out;
    }
    rc = replace_dataset(f, path, t, (hsize_t)(n - 1), H5P_DEFAULT, t, rec);
out:
    free(rec);
    sx_h5_close_id(t);
    return rc;
}

static int damage_region_id(hid_t f) {
    int rc = -1;
    void *ids = NULL;
    int64_t n = 0, names = dset_len(f, "region_table/names");
    if (names < 0 ||
        io_column(f, "rank_region_index/region_ids", H5T_NATIVE_UINT32, 4, &ids, &n,
                  false) != 0 ||
        n < 1)
        goto out;
    ((uint32_t *)ids)[0] = (uint32_t)names + 7;
    rc = io_column(f, "rank_region_index/region_ids", H5T_NATIVE_UINT32, 4, &ids, &n,
                   true);
out:
    free(ids);
    return rc;
}

static int damage_huge_claim(hid_t f) {
    int rc = -1;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t chunk = 4096;
    H5TRY(dcpl, "create a property list");
    H5TRY(H5Pset_chunk(dcpl, 1, &chunk), "set the chunk size");
    /* no fill and no write: the file holds not one byte of the 8 TiB claimed */
    H5TRY(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_INCR), "set the allocation time");
    H5TRY(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "set the fill time");
    rc = replace_dataset(f, "events/durations", H5T_STD_I64LE, (hsize_t)1 << 40, dcpl,
                         H5T_NATIVE_INT64, NULL);
out:
    sx_h5_close_id(dcpl);
    return rc;
}

static int damage_wrong_dtype(hid_t f) {
    int rc = -1;
    void *v = NULL;
    int64_t n = 0;
    if (io_column(f, "events/durations", H5T_NATIVE_DOUBLE, 8, &v, &n, false) == 0)
        rc = replace_dataset(f, "events/durations", H5T_IEEE_F64LE, (hsize_t)n,
                             H5P_DEFAULT, H5T_NATIVE_DOUBLE, v);
    free(v);
    return rc;
}

static int damage_string_ints(hid_t f) {
    int rc = -1;
    void *v = NULL;
    char **s = NULL;
    int64_t n = 0;
    hid_t t = utf8_vlen();
    H5TRY(t, "make a string type");
    if (io_column(f, "rank_region_index/ranks", H5T_NATIVE_INT64, 8, &v, &n, false) != 0)
        goto out;
    s = calloc((size_t)n + 1, sizeof *s);
    if (s == NULL)
        goto out;
    for (int64_t i = 0; i < n; i++) {
        s[i] = malloc(24);
        if (s[i] == NULL)
            goto out;
        snprintf(s[i], 24, "%lld", (long long)((int64_t *)v)[i]);
    }
    rc = replace_dataset(f, "rank_region_index/ranks", t, (hsize_t)n, H5P_DEFAULT, t, s);
out:
    for (int64_t i = 0; s != NULL && i < n; i++)
        free(s[i]);
    free(s);
    free(v);
    sx_h5_close_id(t);
    return rc;
}

static int write_string_attr(hid_t loc, const char *name, const char *const *v, hsize_t n,
                             bool scalar) {
    int rc = -1;
    hid_t t = utf8_vlen(), sp = -1, a = -1;
    H5TRY(t, "make a string type");
    sp = scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, NULL);
    H5TRY(sp, "create a dataspace");
    if (H5Aexists(loc, name) > 0)
        H5TRY(H5Adelete(loc, name), name);
    a = H5Acreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5TRY(a, name);
    H5TRY(H5Awrite(a, t, v), name);
    rc = 0;
out:
    sx_h5_close_id(a);
    sx_h5_close_id(sp);
    sx_h5_close_id(t);
    return rc;
}

static int damage_bad_utf8(hid_t f) {
    int rc = -1;
    hid_t t = utf8_vlen(), d = -1, g = -1;
    char **names = NULL;
    char **bad = NULL;
    int64_t n = dset_len(f, "region_table/names");
    H5TRY(t, "make a string type");
    if (n < 1)
        goto out;
    names = calloc((size_t)n, sizeof *names);
    bad = calloc((size_t)n, sizeof *bad);
    if (names == NULL || bad == NULL)
        goto out;
    d = H5Dopen2(f, "region_table/names", H5P_DEFAULT);
    H5TRY(d, "open region_table/names");
    H5TRY(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, names), "read region_table/names");
    /* Name 0 is replaced outright (the tests know its expected text); the others keep
     * their text, so they stay distinct, and gain one invalid sequence each. */
    for (int64_t i = 0; i < n; i++) {
        const char *suffix =
            bad_suffixes[(size_t)i % (sizeof bad_suffixes / sizeof bad_suffixes[0])];
        size_t len = strlen(names[i]) + strlen(suffix) + sizeof BAD_NAME0 + 1;
        bad[i] = malloc(len);
        if (bad[i] == NULL)
            goto out;
        if (i == 0)
            snprintf(bad[i], len, "%s", BAD_NAME0);
        else
            snprintf(bad[i], len, "%s%s", names[i], suffix);
    }
    H5TRY(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, bad), "write region_table/names");
    g = H5Gopen2(f, "metadata", H5P_DEFAULT);
    H5TRY(g, "open /metadata");
    const char *meta[1] = {BAD_META};
    const char *list[2] = {BAD_LIST0, BAD_LIST1};
    if (write_string_attr(g, "bad_utf8", meta, 1, true) != 0 ||
        write_string_attr(g, "bad_utf8_list", list, 2, false) != 0)
        goto out;
    rc = 0;
out:
    if (names != NULL && d >= 0) {
        hid_t sp = H5Dget_space(d);
        H5Dvlen_reclaim(t, sp, H5P_DEFAULT, names);
        sx_h5_close_id(sp);
    }
    for (int64_t i = 0; bad != NULL && i < n; i++)
        free(bad[i]);
    free(bad);
    free(names);
    sx_h5_close_id(g);
    sx_h5_close_id(d);
    sx_h5_close_id(t);
    return rc;
}

/* unknown-filter, step 1: events/durations becomes chunked and deflated. */
static int damage_deflate(hid_t f) {
    int rc = -1;
    void *v = NULL;
    int64_t n = 0;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5TRY(dcpl, "create a property list");
    if (io_column(f, "events/durations", H5T_NATIVE_INT64, 8, &v, &n, false) != 0)
        goto out;
    if (n < 1) {
        fprintf(stderr, "scope-export-damage: the base run has no events\n");
        goto out;
    }
    hsize_t chunk = n < 1024 ? (hsize_t)n : 1024;
    H5TRY(H5Pset_chunk(dcpl, 1, &chunk), "set the chunk size");
    H5TRY(H5Pset_deflate(dcpl, 4), "set deflate");
    rc = replace_dataset(f, "events/durations", H5T_STD_I64LE, (hsize_t)n, dcpl,
                         H5T_NATIVE_INT64, v);
out:
    free(v);
    sx_h5_close_id(dcpl);
    return rc;
}

/*
 * unknown-filter, step 2, on the closed file: in a version-1 filter pipeline
 * message (superblock 0, no checksums) a filter is id (2 bytes), name length
 * (2), flags (2), number of values (2), then the name padded to 8: "deflate\0"
 * preceded by 01 00 08 00. The id becomes 32000 (LZF), a mandatory filter
 * libhdf5 does not have built in, exactly as h5py's compression="lzf" leaves it.
 */
static int patch_filter_id(const char *path) {
    FILE *fp = fopen(path, "r+b");
    unsigned char *buf = NULL;
    long size = -1, at = -1;
    int found = 0, rc = -1;
    if (fp == NULL || fseek(fp, 0, SEEK_END) != 0 || (size = ftell(fp)) < 0 ||
        fseek(fp, 0, SEEK_SET) != 0)
        goto out;
    buf = malloc((size_t)size + 1);
    if (buf == NULL || fread(buf, 1, (size_t)size, fp) != (size_t)size)
        goto out;
    static const unsigned char pat[] = {0x01, 0x00, 0x08, 0x00};
    for (long i = 8; i + 8 <= size; i++) {
        if (memcmp(buf + i, "deflate", 8) == 0 && memcmp(buf + i - 8, pat, 4) == 0) {
            at = i - 8;
            found++;
        }
    }
    if (found != 1) {
        fprintf(stderr,
                "scope-export-damage: %s: %d deflate filter messages found, 1 expected "
                "(is the base a superblock-0 file?)\n",
                path, found);
        goto out;
    }
    static const unsigned char lzf[2] = {32000 & 0xff, 32000 >> 8};
    if (fseek(fp, at, SEEK_SET) != 0 || fwrite(lzf, 1, 2, fp) != 2)
        goto out;
    rc = 0;
out:
    if (fp != NULL && fclose(fp) != 0)
        rc = -1;
    free(buf);
    if (rc != 0)
        fprintf(stderr, "scope-export-damage: %s: cannot patch the filter id\n", path);
    return rc;
}

static int damage_schema(hid_t f, bool as_float) {
    int rc = -1;
    hid_t sp = H5Screate(H5S_SCALAR), a = -1;
    H5TRY(sp, "create a dataspace");
    H5TRY(H5Adelete(f, "scope_profiler_schema"), "delete /@scope_profiler_schema");
    if (as_float) {
        double v = 3.0;
        a = H5Acreate2(f, "scope_profiler_schema", H5T_IEEE_F64LE, sp, H5P_DEFAULT,
                       H5P_DEFAULT);
        H5TRY(a, "create /@scope_profiler_schema");
        H5TRY(H5Awrite(a, H5T_NATIVE_DOUBLE, &v), "write /@scope_profiler_schema");
    } else {
        int64_t v = 4;
        a = H5Acreate2(f, "scope_profiler_schema", H5T_STD_I64LE, sp, H5P_DEFAULT,
                       H5P_DEFAULT);
        H5TRY(a, "create /@scope_profiler_schema");
        H5TRY(H5Awrite(a, H5T_NATIVE_INT64, &v), "write /@scope_profiler_schema");
    }
    rc = 0;
out:
    sx_h5_close_id(a);
    sx_h5_close_id(sp);
    return rc;
}

/* The tail of 'out_path' with 'suffix': "OUT.h5" -> "OUT.h5.ext". */
static const char *side_path(const char *suffix) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s%s", out_path, suffix);
    return buf;
}

/* vlen-name, step 1: where region_table/names[0]'s length lies in the file. */
static long long names_offset = -1;

static int find_names(hid_t f) {
    hid_t d = H5Dopen2(f, "region_table/names", H5P_DEFAULT);
    int rc = -1;
    H5TRY(d, "open region_table/names");
    haddr_t a = H5Dget_offset(d);
    if (a == HADDR_UNDEF) {
        fprintf(stderr, "scope-export-damage: region_table/names is not contiguous\n");
        goto out;
    }
    names_offset = (long long)a;
    rc = 0;
out:
    sx_h5_close_id(d);
    return rc;
}

#define HOSTILE_META "sx-hostile-metadata-value"

/* vlen-meta, step 1: a string attribute whose heap object step 2 finds. */
static int add_hostile_meta(hid_t f) {
    int rc = -1;
    hid_t g = H5Gopen2(f, "metadata", H5P_DEFAULT);
    const char *v[1] = {HOSTILE_META};
    H5TRY(g, "open /metadata");
    rc = write_string_attr(g, "sx_hostile", v, 1, true);
out:
    sx_h5_close_id(g);
    return rc;
}

static uint64_t le_get(const unsigned char *p, int n) {
    uint64_t u = 0;
    for (int b = 0; b < n; b++)
        u |= (uint64_t)p[b] << (8 * b);
    return u;
}

/*
 * Step 2 of vlen-name and vlen-meta, on the closed file: the length of a
 * variable-length element (4 bytes, little-endian) becomes 0xffffffff. For
 * vlen-meta the element is found from its string: the global heap object
 * holding HOSTILE_META (its header: index, refcount, reserved, 8-byte size),
 * the collection before it, then the one element (length, collection address,
 * index) that names them (superblock 0: 8-byte addresses and lengths).
 */
static int patch_vlen_length(const char *path, long long at, uint32_t len) {
    FILE *fp = fopen(path, "r+b");
    unsigned char *buf = NULL;
    long size = -1;
    int rc = -1;
    if (fp == NULL || fseek(fp, 0, SEEK_END) != 0 || (size = ftell(fp)) < 0 ||
        fseek(fp, 0, SEEK_SET) != 0)
        goto out;
    buf = malloc((size_t)size + 1);
    if (buf == NULL || fread(buf, 1, (size_t)size, fp) != (size_t)size)
        goto out;
    if (at < 0) {
        const size_t sl = strlen(HOSTILE_META);
        long obj = -1, col = -1;
        for (long i = 16; i + (long)sl <= size && obj < 0; i++)
            if (memcmp(buf + i, HOSTILE_META, sl) == 0 && le_get(buf + i - 8, 8) == sl)
                obj = i - 16;
        for (long i = obj; i >= 0 && col < 0; i--)
            if (memcmp(buf + i, "GCOL", 4) == 0)
                col = i;
        if (obj < 0 || col < 0)
            goto out;
        unsigned char pat[16];
        memcpy(pat, buf + obj + 8, 4); /* the size's low 4 bytes: the length */
        for (int b = 0; b < 8; b++)
            pat[4 + b] = (unsigned char)((uint64_t)col >> (8 * b));
        pat[12] = buf[obj];
        pat[13] = buf[obj + 1];
        pat[14] = pat[15] = 0;
        int found = 0;
        for (long i = 0; i + 16 <= size; i++)
            if (memcmp(buf + i, pat, 16) == 0) {
                at = i;
                found++;
            }
        if (found != 1)
            goto out;
    }
    const unsigned char le[4] = {(unsigned char)len, (unsigned char)(len >> 8),
                                 (unsigned char)(len >> 16), (unsigned char)(len >> 24)};
    if (fseek(fp, at, SEEK_SET) != 0 || fwrite(le, 1, 4, fp) != 4)
        goto out;
    rc = 0;
out:
    if (fp != NULL && fclose(fp) != 0)
        rc = -1;
    free(buf);
    if (rc != 0)
        fprintf(stderr, "scope-export-damage: %s: cannot find the string to damage\n",
                path);
    return rc;
}

/* external-storage: event_counts' bytes in a file of their own beside OUT. */
static int damage_external_storage(hid_t f) {
    int rc = -1;
    void *v = NULL;
    int64_t n = 0;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5TRY(dcpl, "create a property list");
    if (io_column(f, "rank_region_index/event_counts", H5T_NATIVE_UINT64, 8, &v, &n,
                  false) != 0)
        goto out;
    FILE *ext = fopen(side_path(".ext"), "wb");
    if (ext == NULL)
        goto out;
    fclose(ext);
    H5TRY(H5Pset_external(dcpl, side_path(".ext"), 0, (hsize_t)n * 8),
          "set external storage");
    rc = replace_dataset(f, "rank_region_index/event_counts", H5T_NATIVE_UINT64,
                         (hsize_t)n, dcpl, H5T_NATIVE_UINT64, v);
out:
    free(v);
    sx_h5_close_id(dcpl);
    return rc;
}

/* external-link: region_table lives in a copy of BASE beside OUT. */
static int damage_external_link(hid_t f, const char *base) {
    int rc = -1;
    if (copy_file(base, side_path(".link.h5")) != 0)
        goto out;
    H5TRY(H5Ldelete(f, "region_table", H5P_DEFAULT), "unlink region_table");
    H5TRY(H5Lcreate_external(side_path(".link.h5"), "/region_table", f, "region_table",
                             H5P_DEFAULT, H5P_DEFAULT),
          "create an external link");
    rc = 0;
out:
    return rc;
}

/* soft-index, linked-twice: the same run through other links to its groups. */
static int relink(hid_t f, bool soft) {
    int rc = -1;
    if (soft) {
        H5TRY(H5Lmove(f, "rank_region_index", f, "z_index", H5P_DEFAULT, H5P_DEFAULT),
              "rename rank_region_index");
        H5TRY(
            H5Lcreate_soft("/z_index", f, "rank_region_index", H5P_DEFAULT, H5P_DEFAULT),
            "create a soft link");
    } else {
        H5TRY(H5Lcreate_hard(f, "events", f, "a_events", H5P_DEFAULT, H5P_DEFAULT),
              "create a second hard link");
    }
    rc = 0;
out:
    return rc;
}

/* virtual, virtual-meta, virtual-perf: dataset 'path' maps the same dataset of a copy
 * of BASE beside OUT. */
static int damage_virtual(hid_t f, const char *base, const char *path) {
    int rc = -1;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), sp = -1;
    H5TRY(dcpl, "create a property list");
    int64_t n = dset_len(f, path);
    if (n < 1 || copy_file(base, side_path(".vds.h5")) != 0)
        goto out;
    hsize_t dim = (hsize_t)n;
    sp = H5Screate_simple(1, &dim, NULL);
    H5TRY(sp, "create a dataspace");
    char abs[256];
    snprintf(abs, sizeof abs, "/%s", path);
    H5TRY(H5Pset_virtual(dcpl, sp, side_path(".vds.h5"), abs, sp),
          "map a virtual dataset");
    hid_t ft = -1;
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    if (d >= 0) {
        ft = H5Dget_type(d);
        H5Dclose(d);
    }
    H5TRY(ft, path);
    rc = replace_dataset(f, path, ft, dim, dcpl, ft, NULL);
    H5Tclose(ft);
out:
    sx_h5_close_id(sp);
    sx_h5_close_id(dcpl);
    return rc;
}

static int damage_rank_huge(hid_t f) {
    int rc = -1;
    void *v = NULL;
    int64_t n = 0;
    if (io_column(f, "rank_region_index/ranks", H5T_NATIVE_INT64, 8, &v, &n, false) !=
            0 ||
        n < 1)
        goto out;
    ((int64_t *)v)[0] = 4294967295LL;
    rc = io_column(f, "rank_region_index/ranks", H5T_NATIVE_INT64, 8, &v, &n, true);
out:
    free(v);
    return rc;
}

static int damage_count_negative(hid_t f) {
    int rc = -1;
    void *v = NULL;
    int64_t n = 0;
    if (io_column(f, "rank_region_index/event_counts", H5T_NATIVE_INT64, 8, &v, &n,
                  false) != 0 ||
        n < 1)
        goto out;
    ((int64_t *)v)[0] = -1;
    rc = replace_dataset(f, "rank_region_index/event_counts", H5T_STD_I64LE, (hsize_t)n,
                         H5P_DEFAULT, H5T_NATIVE_INT64, v);
out:
    free(v);
    return rc;
}

/* Row 0 of the string dataset 'name' made 'value'. */
static int damage_row0_string(hid_t f, const char *name, const char *value) {
    int rc = -1;
    hid_t t = utf8_vlen(), d = -1, fs = -1, ms = -1;
    hsize_t one = 1, zero = 0;
    const char *v[1] = {value};
    H5TRY(t, "make a string type");
    d = H5Dopen2(f, name, H5P_DEFAULT);
    H5TRY(d, name);
    fs = H5Dget_space(d);
    ms = H5Screate_simple(1, &one, NULL);
    H5TRY(fs, "get a dataspace");
    H5TRY(ms, "create a dataspace");
    H5TRY(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &zero, NULL, &one, NULL),
          "select row 0");
    H5TRY(H5Dwrite(d, t, ms, fs, H5P_DEFAULT, v), name);
    rc = 0;
out:
    sx_h5_close_id(ms);
    sx_h5_close_id(fs);
    sx_h5_close_id(d);
    sx_h5_close_id(t);
    return rc;
}

/* An HDF5 file of some other program: a group, a dataset, an attribute. */
static int write_not_profile(const char *path) {
    int rc = -1;
    hid_t f = -1, g = -1, sp = -1, d = -1;
    double temps[16];
    hsize_t n = 16;
    const char *title[1] = {"lab notebook"};
    for (int i = 0; i < 16; i++)
        temps[i] = 20.0 + 0.25 * i;
    f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5TRY(f, "create the file");
    g = H5Gcreate2(f, "experiment", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5TRY(g, "create /experiment");
    sp = H5Screate_simple(1, &n, NULL);
    H5TRY(sp, "create a dataspace");
    d = H5Dcreate2(g, "temperatures", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT,
                   H5P_DEFAULT);
    H5TRY(d, "create /experiment/temperatures");
    H5TRY(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, temps),
          "write /experiment/temperatures");
    if (write_string_attr(f, "title", title, 1, true) != 0)
        goto out;
    rc = 0;
out:
    sx_h5_close_id(d);
    sx_h5_close_id(sp);
    sx_h5_close_id(g);
    if (f >= 0 && H5Fclose(f) < 0)
        rc = -1;
    return rc;
}

static const char *const modes[] = {
    "offsets-beyond", "overlap",      "index-lengths",    "region-id",
    "huge-claim",     "wrong-dtype",  "string-ints",      "bad-utf8",
    "unknown-filter", "schema-4",     "schema-float",     "not-profile",
    "vlen-name",      "vlen-meta",    "external-storage", "external-link",
    "virtual",        "rank-huge",    "count-negative",   "bad-tags",
    "vlen-overrun",   "virtual-meta", "virtual-perf",     "soft-index",
    "linked-twice",   "bad-meta",     "meta-count",       "summary-short"};

int main(int argc, char **argv) {
    int rc = 1;
    hid_t f = -1;
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        fputs(usage_text, stdout);
        return 0;
    }
    const char *mode = argc > 1 ? argv[1] : "";
    bool known = false;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        known = known || strcmp(mode, modes[i]) == 0;
    bool no_base = strcmp(mode, "not-profile") == 0;
    if (!known || argc != (no_base ? 3 : 4)) {
        if (known)
            fprintf(stderr, "scope-export-damage: wrong number of arguments for %s\n",
                    mode);
        else
            fprintf(stderr, "scope-export-damage: unknown mode: %s\n", mode);
        fputs(usage_text, stderr);
        return 2;
    }
    out_path = argv[argc - 1];
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (no_base)
        return write_not_profile(out_path) == 0 ? 0 : 1;

    if (copy_file(argv[2], out_path) != 0)
        return 1;
    f = H5Fopen(out_path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5TRY(f, "open the copy");
    int r = -1;
    if (!strcmp(mode, "offsets-beyond"))
        r = damage_offsets(f, false);
    else if (!strcmp(mode, "overlap"))
        r = damage_offsets(f, true);
    else if (!strcmp(mode, "index-lengths"))
        r = damage_index_lengths(f);
    else if (!strcmp(mode, "summary-short"))
        r = damage_summary_short(f);
    else if (!strcmp(mode, "region-id"))
        r = damage_region_id(f);
    else if (!strcmp(mode, "huge-claim"))
        r = damage_huge_claim(f);
    else if (!strcmp(mode, "wrong-dtype"))
        r = damage_wrong_dtype(f);
    else if (!strcmp(mode, "string-ints"))
        r = damage_string_ints(f);
    else if (!strcmp(mode, "bad-utf8"))
        r = damage_bad_utf8(f);
    else if (!strcmp(mode, "unknown-filter"))
        r = damage_deflate(f);
    else if (!strcmp(mode, "schema-4"))
        r = damage_schema(f, false);
    else if (!strcmp(mode, "schema-float"))
        r = damage_schema(f, true);
    else if (!strcmp(mode, "vlen-name") || !strcmp(mode, "vlen-overrun"))
        r = find_names(f);
    else if (!strcmp(mode, "vlen-meta"))
        r = add_hostile_meta(f);
    else if (!strcmp(mode, "external-storage"))
        r = damage_external_storage(f);
    else if (!strcmp(mode, "external-link"))
        r = damage_external_link(f, argv[2]);
    else if (!strcmp(mode, "virtual"))
        r = damage_virtual(f, argv[2], "events/durations");
    else if (!strcmp(mode, "virtual-meta"))
        r = damage_virtual(f, argv[2], "rank_region_index/event_metadata");
    else if (!strcmp(mode, "virtual-perf"))
        r = damage_virtual(f, argv[2], "rank0/perf_events/main/values");
    else if (!strcmp(mode, "rank-huge"))
        r = damage_rank_huge(f);
    else if (!strcmp(mode, "count-negative"))
        r = damage_count_negative(f);
    else if (!strcmp(mode, "bad-tags"))
        r = damage_row0_string(f, "rank_region_index/tags", "[\"unclosed");
    else if (!strcmp(mode, "bad-meta"))
        r = damage_row0_string(f, "rank_region_index/event_metadata", "[{\"unclosed");
    else if (!strcmp(mode, "meta-count"))
        r = damage_row0_string(f, "rank_region_index/event_metadata", "[{\"k\": 1}]");
    else if (!strcmp(mode, "soft-index") || !strcmp(mode, "linked-twice"))
        r = relink(f, !strcmp(mode, "soft-index"));
    if (r != 0)
        goto out;
    H5TRY(H5Fclose(f), "close the copy");
    f = -1;
    if (!strcmp(mode, "unknown-filter") && patch_filter_id(out_path) != 0)
        goto out;
    if ((!strcmp(mode, "vlen-name") || !strcmp(mode, "vlen-meta")) &&
        patch_vlen_length(out_path, names_offset, 0xffffffffu) != 0)
        goto out;
    if (!strcmp(mode, "vlen-overrun") &&
        patch_vlen_length(out_path, names_offset, 1000) != 0)
        goto out;
    rc = 0;
out:
    sx_h5_close_id(f);
    if (rc != 0)
        remove(out_path);
    return rc;
}
