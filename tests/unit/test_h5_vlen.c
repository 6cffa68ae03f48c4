/* test_h5_vlen.c - sx_vlen_read against H5Dread on variable-length string datasets */
#include "h5_direct.h"
#include "h5_direct_heap.h"
#include "h5_direct_win.h"
#include "h5_reader.h"
#include "h5_util.h"
#undef H5Dread /* this test reads with HDF5 itself, not through the fault hook */
#undef H5Aread
#include "buf.h"
#include "internal.h"
#include "sx_fault.h"
#include "sx_test.h"

#include <hdf5.h>

#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];
static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void path_of(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", dir, name);
}

static hid_t vlen_str(void) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

/* A new string of 'len' bytes: printable ASCII, or UTF-8 of 2, 3 and 4 bytes. */
static char *make_str(size_t len, bool utf8) {
    static const char *const seq[] = {"\xc3\xa9", "\xe2\x98\x83", "\xf0\x9d\x84\x9e",
                                      "a"};
    char *s = malloc(len + 1);
    ASSERT(s != NULL);
    size_t i = 0;
    while (i < len) {
        if (utf8) {
            const char *c = seq[rnd() % 4];
            size_t n = strlen(c);
            if (i + n > len)
                c = "b", n = 1;
            memcpy(s + i, c, n);
            i += n;
        } else {
            s[i++] = (char)(' ' + rnd() % 95);
        }
    }
    s[len] = '\0';
    return s;
}

/* Strings of every shape for 'n' rows: NULL, empty, 1 byte, UTF-8, up to 500 bytes. */
static char **make_rows(size_t n, size_t maxlen, bool big) {
    char **s = calloc(n, sizeof *s);
    ASSERT(s != NULL);
    for (size_t i = 0; i < n; i++) {
        switch (rnd() % 10) {
        case 0:
            s[i] = NULL;
            break;
        case 1:
            s[i] = make_str(0, false);
            break;
        case 2:
            s[i] = make_str(1, false);
            break;
        case 3:
            s[i] = make_str(1 + rnd() % maxlen, true);
            break;
        default:
            s[i] = make_str(1 + rnd() % maxlen, false);
        }
    }
    if (big && n > 100) {
        /* bigger than a collection, and one nearly 64 KiB */
        for (size_t k = 0; k < 4; k++) {
            size_t i = 7 + k * (n / 5);
            free(s[i]);
            s[i] = make_str(k == 3 ? 65000 : 200000 + k * 1000, k == 1);
        }
    }
    return s;
}

static void free_rows(char **s, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(s[i]);
    free(s);
}

/* Dataset 'name' of strings 's[0..n)' with dataset creation list 'dcpl'. */
static void write_dset(hid_t f, const char *name, char **s, size_t n, hid_t dcpl) {
    hsize_t dim = n;
    hid_t sp = H5Screate_simple(1, &dim, NULL), t = vlen_str();
    hid_t d = H5Dcreate2(f, name, t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    ASSERT(d >= 0);
    if (n > 0)
        ASSERT(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, s) >= 0);
    H5Dclose(d);
    H5Tclose(t);
    H5Sclose(sp);
}

/* Rows [at, at + n) of dataset 'd' from 's'. */
static void write_rows(hid_t d, char **s, hsize_t at, hsize_t n) {
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &n, NULL), t = vlen_str();
    ASSERT(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at, NULL, &n, NULL) >= 0);
    ASSERT(H5Dwrite(d, t, ms, fs, H5P_DEFAULT, s + at) >= 0);
    H5Tclose(t);
    H5Sclose(ms);
    H5Sclose(fs);
}

/*
 * Two datasets written piece by piece, in turn and out of order, so that
 * their collections interleave; then rows rewritten, so that collections
 * have holes and moved free space.
 */
static void write_pieces(hid_t f, size_t n) {
    hsize_t dim = n;
    hid_t sp = H5Screate_simple(1, &dim, NULL), t = vlen_str();
    hid_t a = H5Dcreate2(f, "pieces", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t b = H5Dcreate2(f, "other", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT(a >= 0 && b >= 0);
    char **sa = make_rows(n, 300, false), **sb = make_rows(n, 300, false);
    const size_t piece = n / 20;
    for (size_t p = 0; p < 20; p++) {
        size_t q = (p * 7) % 20;
        write_rows(a, sa, q * piece, piece);
        write_rows(b, sb, p * piece, piece);
    }
    for (size_t k = 0; k < n / 7; k++) {
        size_t i = rnd() % n;
        free(sa[i]);
        sa[i] = rnd() % 3 == 0 ? NULL : make_str(rnd() % 200, false);
        write_rows(a, sa, i, 1);
    }
    free_rows(sa, n);
    free_rows(sb, n);
    H5Dclose(b);
    H5Dclose(a);
    H5Tclose(t);
    H5Sclose(sp);
}

/* The run of every shape: 'small' offsets and lengths (4 bytes) and a user block. */
static void write_file(const char *path, bool small) {
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (small) {
        ASSERT(H5Pset_sizes(fcpl, 4, 4) >= 0);
        ASSERT(H5Pset_userblock(fcpl, 512) >= 0);
    }
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    ASSERT(f >= 0);
    size_t n = 3000;
    char **s = make_rows(n, 500, true);
    write_dset(f, "mixed", s, n, H5P_DEFAULT);
    free_rows(s, n);
    n = small ? 20000 : 100000;
    s = make_rows(n, 60, false);
    write_dset(f, "many", s, n, H5P_DEFAULT);
    free_rows(s, n);
    write_pieces(f, 2000);
    /* a table small enough to be read whole (a native file's), its strings past the
     * first page of their collections */
    n = 200;
    s = make_rows(n, 500, true);
    write_dset(f, "few", s, n, H5P_DEFAULT);
    free_rows(s, n);

    /* what must be left to HDF5 */
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t chunk = 64;
    H5Pset_chunk(dcpl, 1, &chunk);
    n = 500;
    s = make_rows(n, 100, false);
    write_dset(f, "chunked", s, n, dcpl);
    H5Pset_deflate(dcpl, 6);
    write_dset(f, "deflated", s, n, dcpl);
    H5Pclose(dcpl);
    write_dset(f, "empty", s, 0, H5P_DEFAULT);
    free_rows(s, n);
    hsize_t dim = 10;
    hid_t sp = H5Screate_simple(1, &dim, NULL), ft = H5Tcopy(H5T_C_S1);
    H5Tset_size(ft, 8);
    hid_t d = H5Dcreate2(f, "fixed", ft, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    char fixed[80] = {0};
    ASSERT(H5Dwrite(d, ft, H5S_ALL, H5S_ALL, H5P_DEFAULT, fixed) >= 0);
    H5Dclose(d);
    int64_t ints[10] = {0};
    d = H5Dcreate2(f, "ints", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, ints) >= 0);
    H5Dclose(d);
    H5Tclose(ft);
    H5Sclose(sp);
    hid_t t = vlen_str();
    sp = H5Screate(H5S_SCALAR);
    const char *one = "scalar";
    d = H5Dcreate2(f, "scalar", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &one) >= 0);
    H5Dclose(d);
    H5Sclose(sp);
    H5Tclose(t);
    H5Pclose(fcpl);
    ASSERT(H5Fclose(f) >= 0);
}

/* A dataset open twice: through HDF5 ('all', as H5Dread gives it) and through sx_vlen. */
struct ds {
    hid_t f, d;
    int fd;
    size_t n;
    char **all;
    struct sx_vlen *v;
};

static void ds_open(struct ds *x, const char *path, const char *name) {
    memset(x, 0, sizeof *x);
    x->f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT(x->f >= 0);
    x->d = H5Dopen2(x->f, name, H5P_DEFAULT);
    ASSERT(x->d >= 0);
    hid_t sp = H5Dget_space(x->d), t = vlen_str();
    hsize_t dim = 0;
    ASSERT(H5Sget_simple_extent_dims(sp, &dim, NULL) == 1);
    x->n = dim;
    x->all = calloc(x->n + 1, sizeof *x->all);
    ASSERT(x->all != NULL);
    if (x->n > 0)
        ASSERT(H5Dread(x->d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, x->all) >= 0);
    H5Tclose(t);
    H5Sclose(sp);
    x->fd = open(path, O_RDONLY);
    ASSERT(x->fd >= 0);
    struct sx_error e;
    sx_error_clear(&e);
    ASSERT(sx_vlen_open(x->d, x->fd, NULL, "t.h5:/ds", &x->v, &e) == SX_OK);
}

static void ds_close(struct ds *x) {
    sx_vlen_close(x->v);
    if (x->n > 0) {
        hsize_t dim = x->n;
        hid_t sp = H5Screate_simple(1, &dim, NULL), t = vlen_str();
        H5Dvlen_reclaim(t, sp, H5P_DEFAULT, x->all);
        H5Tclose(t);
        H5Sclose(sp);
    }
    free(x->all);
    close(x->fd);
    H5Dclose(x->d);
    H5Fclose(x->f);
}

/* sx_vlen_read of 'rows[0..n)' (NULL: the rows first .. first + n) gives what H5Dread
 * gave for them. */
static bool same_range(struct ds *x, const hsize_t *rows, hsize_t first, size_t n) {
    struct sx_buf text = {0};
    struct sx_error e;
    sx_error_clear(&e);
    size_t *off = malloc((n + 1) * sizeof *off);
    ASSERT(off != NULL);
    enum sx_status st = sx_vlen_read(x->v, rows, first, n, &text, off, "t.h5:/ds", &e);
    if (st != SX_OK)
        fprintf(stderr, "sx_vlen_read: %s\n", e.text);
    bool ok = st == SX_OK && off[0] == 0 && text.len == off[n];
    for (size_t k = 0; ok && k < n; k++) {
        const hsize_t row = rows != NULL ? rows[k] : first + k;
        const char *want = x->all[row] != NULL ? x->all[row] : "";
        size_t len = off[k + 1] - off[k];
        if (len != strlen(want) || memcmp(text.data + off[k], want, len) != 0) {
            fprintf(stderr, "row %" PRIu64 ": %zu bytes, want %zu\n", (uint64_t)row, len,
                    strlen(want));
            ok = false;
        }
    }
    free(off);
    sx_buf_free(&text);
    return ok;
}

static bool same_rows(struct ds *x, const hsize_t *rows, size_t n) {
    return same_range(x, rows, 0, n);
}

/* Random subsets of random sizes in random order, some with repeats, then all rows. */
static void check_dataset(const char *path, const char *name, int rounds) {
    struct ds x;
    ds_open(&x, path, name);
    ASSERT(x.v != NULL);
    /* room for a subset of 800 rows with repeats, also of a dataset of fewer */
    hsize_t *rows = malloc(((x.n > 800 ? x.n : 800) + 1) * sizeof *rows);
    ASSERT(rows != NULL);
    for (int r = 0; r < rounds; r++) {
        size_t m = 1 + rnd() % (r % 4 == 0 ? x.n : 800);
        for (size_t k = 0; k < m; k++)
            rows[k] =
                r % 3 == 0 && k > 0 && rnd() % 4 == 0 ? rows[rnd() % k] : rnd() % x.n;
        CHECK(same_rows(&x, rows, m));
    }
    for (size_t k = 0; k < x.n; k++)
        rows[k] = k;
    CHECK(same_rows(&x, rows, x.n));
    for (size_t k = 0; k < x.n; k++)
        rows[k] = x.n - 1 - k;
    CHECK(same_rows(&x, rows, x.n));
    CHECK(same_rows(&x, rows, 0));
    /* a few ascending runs, as the rows of blocks read ahead together: merged (up to
     * 16 runs), else sorted whole; a run that starts where the one before ended */
    for (size_t s = 2; s <= 17; s += 5) {
        size_t m = 0;
        for (size_t r = 0; r < s; r++)
            for (size_t k = r; k < x.n; k += s)
                rows[m++] = k;
        CHECK(same_rows(&x, rows, m));
    }
    for (size_t k = 0; k < x.n; k++)
        rows[k] = k < x.n / 2 ? 2 * k : k - x.n / 2;
    CHECK(same_rows(&x, rows, x.n));
    /* ranges of rows, asked without a list */
    CHECK(same_range(&x, NULL, 0, x.n));
    for (int r = 0; r < 8; r++) {
        size_t at = rnd() % x.n;
        CHECK(same_range(&x, NULL, at, 1 + rnd() % (x.n - at)));
    }
    /* the file's rows were what we meant: NULL, empty and long strings among them */
    size_t nul = 0, empty = 0, longest = 0;
    for (size_t i = 0; i < x.n; i++) {
        nul += x.all[i] == NULL;
        empty += x.all[i] != NULL && x.all[i][0] == '\0';
        if (x.all[i] != NULL && strlen(x.all[i]) > longest)
            longest = strlen(x.all[i]);
    }
    CHECK(nul > 0 && empty > 0);
    if (strcmp(name, "mixed") == 0)
        CHECK(longest >= 200000);
    /* out of range */
    struct sx_buf text = {0};
    struct sx_error e;
    sx_error_clear(&e);
    size_t off[2];
    rows[0] = x.n;
    CHECK(sx_vlen_read(x.v, rows, 0, 1, &text, off, "t.h5:/ds", &e) == SX_ERR_FORMAT);
    CHECK(sx_vlen_read(x.v, NULL, x.n, 1, &text, off, "t.h5:/ds", &e) == SX_ERR_FORMAT);
    sx_buf_free(&text);
    free(rows);
    ds_close(&x);
}

/* Global heap collections in the file (a lower bound: "GCOL" may be data too). */
static size_t count_collections(const char *path, size_t *at, size_t cap) {
    FILE *fp = fopen(path, "rb");
    ASSERT(fp != NULL);
    size_t n = 0;
    char w[4] = {0};
    long pos = 0;
    int c;
    while ((c = fgetc(fp)) != EOF) {
        memmove(w, w + 1, 3);
        w[3] = (char)c;
        pos++;
        if (memcmp(w, "GCOL", 4) == 0) {
            if (n < cap)
                at[n] = (size_t)(pos - 4);
            n++;
        }
    }
    fclose(fp);
    return n;
}

static void copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    ASSERT(a != NULL && b != NULL);
    char buf[65536];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, a)) > 0)
        ASSERT(fwrite(buf, 1, k, b) == k);
    fclose(a);
    ASSERT(fclose(b) == 0);
}

static void poke(const char *path, uint64_t at, const void *bytes, size_t n) {
    int fd = open(path, O_WRONLY);
    ASSERT(fd >= 0);
    ASSERT(pwrite(fd, bytes, n, (off_t)at) == (ssize_t)n);
    close(fd);
}

static void check_unsupported(const char *path) {
    static const char *const names[] = {"chunked", "deflated", "empty",
                                        "fixed",   "ints",     "scalar"};
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    int fd = open(path, O_RDONLY);
    ASSERT(f >= 0 && fd >= 0);
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        hid_t d = H5Dopen2(f, names[k], H5P_DEFAULT);
        ASSERT(d >= 0);
        struct sx_vlen *v = (struct sx_vlen *)&v;
        struct sx_error e;
        sx_error_clear(&e);
        CHECK(sx_vlen_open(d, fd, NULL, "t.h5:/ds", &v, &e) == SX_OK);
        if (v != NULL)
            fprintf(stderr, "%s: read from the heap, not left to HDF5\n", names[k]);
        CHECK(v == NULL);
        H5Dclose(d);
    }
    /* no descriptor: HDF5 */
    hid_t d = H5Dopen2(f, "mixed", H5P_DEFAULT);
    struct sx_vlen *v = (struct sx_vlen *)&v;
    CHECK(sx_vlen_open(d, -1, NULL, "t.h5:/ds", &v, NULL) == SX_OK && v == NULL);
    H5Dclose(d);
    close(fd);
    H5Fclose(f);
}

/* Read every row of 'name' in the damaged copy 'path': a clean SX_ERR_FORMAT. */
static void check_damaged(const char *path, const char *name, const char *what) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT(f >= 0);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    int fd = open(path, O_RDONLY);
    ASSERT(d >= 0 && fd >= 0);
    struct sx_vlen *v = NULL;
    struct sx_error e;
    sx_error_clear(&e);
    ASSERT(sx_vlen_open(d, fd, NULL, "t.h5:/ds", &v, &e) == SX_OK && v != NULL);
    hsize_t dim = 0;
    hid_t sp = H5Dget_space(d);
    H5Sget_simple_extent_dims(sp, &dim, NULL);
    H5Sclose(sp);
    hsize_t *rows = malloc(dim * sizeof *rows);
    size_t *off = malloc((dim + 1) * sizeof *off);
    ASSERT(rows != NULL && off != NULL);
    for (size_t k = 0; k < dim; k++)
        rows[k] = k;
    struct sx_buf text = {0};
    enum sx_status st = sx_vlen_read(v, rows, 0, dim, &text, off, "t.h5:/ds", &e);
    if (st != SX_ERR_FORMAT || strstr(e.text, what) == NULL)
        fprintf(stderr, "damaged (%s): status %d: %s\n", what, (int)st, e.text);
    CHECK(st == SX_ERR_FORMAT);
    CHECK(strcmp(e.source, "t.h5:/ds") == 0);
    CHECK(strstr(e.text, "t.h5:/ds[") != NULL && strstr(e.text, what) != NULL);
    CHECK(text.len == 0 && off[dim] == 0);
    /* it stays an error, and a clean one, when asked again */
    sx_error_clear(&e);
    CHECK(sx_vlen_read(v, rows, 0, dim, &text, off, "t.h5:/ds", &e) == SX_ERR_FORMAT);
    sx_buf_free(&text);
    free(off);
    free(rows);
    sx_vlen_close(v);
    close(fd);
    H5Dclose(d);
    H5Fclose(f);
}

/*
 * A heap collection of a version the walker does not know is no damage of
 * ours to report: the walker says SX_ERR_UNSUPPORTED and leaves 'err' clean,
 * and the direct reads fall back to HDF5, which has the last word (the same
 * status and text as HDF5 read alone).
 */
static void check_unknown_version(const char *path, const char *name) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT(f >= 0);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    int fd = open(path, O_RDONLY);
    ASSERT(d >= 0 && fd >= 0);
    hsize_t dim = 0;
    hid_t sp = H5Dget_space(d);
    H5Sget_simple_extent_dims(sp, &dim, NULL);
    H5Sclose(sp);
    hsize_t *rows = malloc(dim * sizeof *rows);
    size_t *off = malloc((dim + 1) * sizeof *off);
    ASSERT(rows != NULL && off != NULL);
    for (size_t k = 0; k < dim; k++)
        rows[k] = k;
    struct sx_buf text = {0}, text2 = {0};
    struct sx_vlen *v = NULL;
    struct sx_error e, e2;
    sx_error_clear(&e);
    ASSERT(sx_vlen_open(d, fd, NULL, "t.h5:/ds", &v, &e) == SX_OK && v != NULL);
    CHECK(sx_vlen_read(v, rows, 0, dim, &text, off, "t.h5:/ds", &e) ==
          SX_ERR_UNSUPPORTED);
    CHECK(e.code == SX_OK && e.text[0] == '\0');
    sx_vlen_close(v);
    v = NULL;

    struct sx_direct *dr = NULL;
    sx_direct_open(sx_h5_posix_fd(f), path, &dr);
    ASSERT(dr != NULL);
    ASSERT(sx_direct_strings_open(dr, d, "t.h5:/ds", &v, &e) == SX_OK && v != NULL);
    sx_error_clear(&e);
    sx_error_clear(&e2);
    enum sx_status st =
        sx_direct_read_strings(dr, &v, d, rows, 0, dim, &text, off, "t.h5:/ds", &e);
    enum sx_status st2 =
        sx_h5_read_point_strings(d, rows, 0, dim, &text2, off, "t.h5:/ds", &e2);
    CHECK(v == NULL); /* the walker is given up for HDF5 */
    CHECK(st == st2 && strcmp(e.text, e2.text) == 0);
    CHECK(strstr(e.text, "version") == NULL);
    sx_direct_close(dr);
    sx_buf_free(&text);
    sx_buf_free(&text2);
    free(off);
    free(rows);
    close(fd);
    H5Dclose(d);
    H5Fclose(f);
}

/* The file offset of the element of 'row' in dataset 'name'. */
static uint64_t element_at(const char *path, const char *name, size_t row) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    haddr_t a = H5Dget_offset(d);
    ASSERT(a != HADDR_UNDEF);
    H5Dclose(d);
    H5Fclose(f);
    return (uint64_t)a + row * 16;
}

static void check_pools(const char *path);

static void test_damage(const char *good) {
    char bad[300];
    path_of(bad, sizeof bad, "bad.h5");
    size_t at[4096];
    size_t n = count_collections(good, at, 4096);
    ASSERT(n > 0 && n <= 4096);

    copy_file(good, bad);
    for (size_t k = 0; k < n; k++)
        poke(bad, at[k], "GCOX", 4);
    check_damaged(bad, "mixed", "GCOL signature");

    copy_file(good, bad);
    for (size_t k = 0; k < n; k++)
        poke(bad, at[k] + 4, "\x02", 1);
    check_unknown_version(bad, "mixed");
    check_pools(bad);

    copy_file(good, bad);
    for (size_t k = 0; k < n; k++)
        poke(bad, at[k] + 8, "\xff\xff\xff\x7f\0\0\0\0", 8); /* collection size */
    check_damaged(bad, "mixed", "cannot hold");

    /* rows of "mixed" that hold a string: 7 is one of the long ones */
    copy_file(good, bad);
    uint64_t e7 = element_at(good, "mixed", 7);
    poke(bad, e7 + 4, "\0\0\0\0\0\0\0\x01", 8); /* collection address beyond the file */
    check_damaged(bad, "mixed", "beyond the end");

    copy_file(good, bad);
    poke(bad, e7 + 12, "\x60\xea\0\0", 4); /* object 60000 */
    check_damaged(bad, "mixed", "object 60000");

    copy_file(good, bad);
    unsigned char len[4];
    int fd = open(good, O_RDONLY);
    ASSERT(pread(fd, len, 4, (off_t)e7) == 4);
    close(fd);
    len[0]++; /* one byte more than the object holds */
    poke(bad, e7, len, 4);
    check_damaged(bad, "mixed", "bytes in object");
    unlink(bad);
}

/*
 * An object whose size overruns its collection ends the walk there, as in
 * HDF5: the strings before it still read, its own is a clean error.
 */
static void test_overrun(const char *good) {
    char bad[300];
    path_of(bad, sizeof bad, "overrun.h5");
    size_t at[1];
    ASSERT(count_collections(good, at, 1) > 0);
    int fd = open(good, O_RDONLY);
    ASSERT(fd >= 0);
    /* the objects of the first collection that rows of "mixed" read */
    static bool used[65536];
    hid_t f = H5Fopen(good, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "mixed", H5P_DEFAULT);
    uint64_t table = (uint64_t)H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(f);
    for (size_t row = 0; row < 3000; row++) {
        unsigned char el[16];
        uint32_t len = 0, idx = 0;
        uint64_t addr = 0;
        ASSERT(pread(fd, el, 16, (off_t)(table + 16 * row)) == 16);
        memcpy(&len, el, 4);
        memcpy(&addr, el + 4, 8);
        memcpy(&idx, el + 12, 4);
        if (addr == at[0] && len > 0 && idx < 65536)
            used[idx] = true;
    }
    /* the one of them that lies last */
    unsigned char hdr[16];
    ASSERT(pread(fd, hdr, 16, (off_t)at[0]) == 16);
    uint64_t size = 0, p = 16, last = 0, last_idx = 0;
    memcpy(&size, hdr + 8, 8);
    while (p + 16 <= size) {
        ASSERT(pread(fd, hdr, 16, (off_t)(at[0] + p)) == 16);
        uint64_t osize = 0, idx = (uint64_t)hdr[0] | (uint64_t)hdr[1] << 8;
        memcpy(&osize, hdr + 8, 8);
        if (idx == 0)
            break;
        if (used[idx]) {
            last = p;
            last_idx = idx;
        }
        p += 16 + ((osize + 7) & ~(uint64_t)7);
    }
    ASSERT(last_idx > 1);
    copy_file(good, bad);
    poke(bad, at[0] + last + 8, "\0\0\1\0\0\0\0\0", 8);

    struct ds x; /* H5Dread of the good file; sx_vlen of the damaged one */
    ds_open(&x, good, "mixed");
    sx_vlen_close(x.v);
    int bfd = open(bad, O_RDONLY);
    hid_t bf = H5Fopen(bad, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t bd = H5Dopen2(bf, "mixed", H5P_DEFAULT);
    ASSERT(bfd >= 0 && bd >= 0);
    struct sx_error e;
    ASSERT(sx_vlen_open(bd, bfd, NULL, "t.h5:/ds", &x.v, &e) == SX_OK && x.v != NULL);
    size_t before = 0, lost = 0;
    for (size_t row = 0; row < x.n; row++) {
        unsigned char el[16];
        uint32_t len = 0, idx = 0;
        uint64_t addr = 0;
        ASSERT(pread(fd, el, 16, (off_t)(table + 16 * row)) == 16);
        memcpy(&len, el, 4);
        memcpy(&addr, el + 4, 8);
        memcpy(&idx, el + 12, 4);
        if (addr != at[0] || len == 0)
            continue;
        hsize_t r = row;
        if (idx != last_idx) {
            before++;
            CHECK(same_rows(&x, &r, 1));
            continue;
        }
        lost++;
        struct sx_buf text = {0};
        size_t off[2];
        sx_error_clear(&e);
        CHECK(sx_vlen_read(x.v, &r, 0, 1, &text, off, "t.h5:/ds", &e) == SX_ERR_FORMAT);
        CHECK(strstr(e.text, "is missing") != NULL);
        sx_buf_free(&text);
    }
    CHECK(before > 100 && lost == 1);
    ds_close(&x);
    H5Dclose(bd);
    H5Fclose(bf);
    close(bfd);
    close(fd);
    unlink(bad);
}

/* A NULL string (heap address 0) with a length: NULL for HDF5, so empty here too. */
static void test_null_length(const char *good) {
    char bad[300];
    path_of(bad, sizeof bad, "null.h5");
    copy_file(good, bad);
    struct ds x;
    ds_open(&x, good, "mixed");
    size_t row = 0;
    while (row < x.n && x.all[row] != NULL)
        row++;
    ASSERT(row < x.n);
    ds_close(&x);
    poke(bad, element_at(good, "mixed", row), "\x05\0\0\0", 4);
    ds_open(&x, bad, "mixed");
    ASSERT(x.v != NULL);
    CHECK(x.all[row] == NULL);
    hsize_t rows[3] = {row, row + 1, row};
    CHECK(same_rows(&x, rows, 3));
    ds_close(&x);
    unlink(bad);
}

/* The file's sizes looked up at its first dataset serve its other datasets (a reader
 * keeps them for the file): each reads as H5Dread does; sizes kept as unusable make
 * the next dataset HDF5's to read, which shows they are not looked up again. */
static void test_file_sizes_kept(const char *path, unsigned sizes) {
    static const char *const names[] = {"mixed", "few", "many"};
    struct sx_vlen_file vf = {0};
    struct sx_error e;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        struct ds x;
        ds_open(&x, path, names[k]);
        sx_vlen_close(x.v);
        x.v = NULL;
        sx_error_clear(&e);
        ASSERT(sx_vlen_open(x.d, x.fd, &vf, "t.h5:/ds", &x.v, &e) == SX_OK);
        CHECK(x.v != NULL && vf.known && vf.ok && vf.sa == sizes && vf.sl == sizes);
        if (x.v != NULL)
            CHECK(same_range(&x, NULL, 0, (size_t)x.n));
        ds_close(&x);
    }
    struct sx_vlen_file unusable = {.known = true, .ok = false};
    struct ds x;
    ds_open(&x, path, "mixed");
    CHECK(x.v != NULL); /* looked up: readable */
    sx_vlen_close(x.v);
    x.v = NULL;
    CHECK(sx_vlen_open(x.d, x.fd, &unusable, "t.h5:/ds", &x.v, &e) == SX_OK &&
          x.v == NULL);
    ds_close(&x);
}

/* Each read, then each allocation, of a first read fails in turn: cleanly. */
static void test_faults(const char *path) {
    struct ds x;
    ds_open(&x, path, "mixed");
    ASSERT(x.v != NULL);
    hsize_t rows[300];
    for (size_t k = 0; k < 300; k++)
        rows[k] = rnd() % x.n;
    sx_vlen_close(x.v);
    struct sx_error e;
    ASSERT(sx_vlen_open(x.d, x.fd, NULL, "t.h5:/ds", &x.v, &e) == SX_OK);
    sx_fault_arm(SX_FAULT_READ, 0);
    CHECK(same_rows(&x, rows, 300));
    long reads = sx_fault_count(SX_FAULT_READ);
    CHECK(reads > 2);
    for (int kind = SX_FAULT_ALLOC; kind <= SX_FAULT_READ; kind++) {
        for (long nth = 1;; nth++) {
            struct sx_buf text = {0};
            size_t off[301];
            sx_vlen_close(x.v);
            x.v = NULL;
            sx_fault_arm((enum sx_fault_kind)kind, nth);
            sx_error_clear(&e);
            enum sx_status st = sx_vlen_open(x.d, x.fd, NULL, "t.h5:/ds", &x.v, &e);
            if (st == SX_OK)
                st = sx_vlen_read(x.v, rows, 0, 300, &text, off, "t.h5:/ds", &e);
            bool fired = sx_fault_fired();
            sx_fault_off();
            sx_buf_free(&text);
            if (!fired) {
                CHECK(st == SX_OK);
                CHECK(kind != SX_FAULT_READ || nth == reads + 1);
                break;
            }
            CHECK(st == (kind == SX_FAULT_READ ? SX_ERR_IO : SX_ERR_NOMEM));
            CHECK(st == SX_OK || strcmp(e.source, "t.h5:/ds") == 0);
            /* the reader is still good after a failed read */
            if (x.v != NULL)
                CHECK(same_rows(&x, rows, 300));
        }
    }
    ds_close(&x);
}

/*
 * The kept windows the element table is read through: any range, across
 * windows and with windows replaced, reads what pread reads; a range past
 * the end of the file is an I/O error naming the source; a failed read
 * leaves the windows good.
 */
static void test_file_win(void) {
    char path[300];
    path_of(path, sizeof path, "win.bin");
    enum { SIZE = 3 * 4096 + 1000 };
    unsigned char *want = malloc(SIZE), got[3 * 4096];
    ASSERT(want != NULL);
    for (size_t i = 0; i < SIZE; i++)
        want[i] = (unsigned char)(rnd() >> 24);
    FILE *f = fopen(path, "wb");
    ASSERT(f != NULL && fwrite(want, 1, SIZE, f) == SIZE && fclose(f) == 0);
    int fd = open(path, O_RDONLY);
    ASSERT(fd >= 0);
    struct sx_file_win *w = sx_file_win_new(fd, 4096, 2);
    ASSERT(w != NULL);
    struct sx_error e;
    for (int k = 0; k < 2000; k++) {
        size_t n = (size_t)(rnd() % sizeof got), at = (size_t)(rnd() % SIZE);
        if (k % 7 == 0)
            at = SIZE - n < at ? SIZE - n : at; /* up to the last byte */
        bool fits = at + n <= SIZE;
        sx_error_clear(&e);
        enum sx_status st = sx_file_win_read(w, at, n, got, "t.bin", &e);
        if (fits) {
            CHECK(st == SX_OK && memcmp(got, want + at, n) == 0);
        } else {
            CHECK(st == SX_ERR_IO && strcmp(e.source, "t.bin") == 0 &&
                  strstr(e.text, "truncated") != NULL);
        }
    }
    /* the 2nd window read fails: an I/O error, and the next read is right */
    sx_file_win_free(w);
    w = sx_file_win_new(fd, 4096, 2);
    ASSERT(w != NULL);
    sx_fault_arm(SX_FAULT_READ, 2);
    CHECK(sx_file_win_read(w, 4000, 200, got, "t.bin", &e) == SX_ERR_IO);
    sx_fault_off();
    CHECK(sx_file_win_read(w, 4000, 200, got, "t.bin", &e) == SX_OK &&
          memcmp(got, want + 4000, 200) == 0);
    sx_file_win_free(w);
    close(fd);
    free(want);
    unlink(path);
}

/*
 * A file cut short while its windows are open: what is left reads, what is gone is an
 * I/O error naming the source (the reads never fault: the file is not mapped).
 */
static void test_file_win_cut(void) {
    char path[300];
    path_of(path, sizeof path, "cut.bin");
    enum { WIN = 4096, SIZE = 5 * WIN + 1000 };
    unsigned char *want = malloc(SIZE), got[2 * WIN];
    ASSERT(want != NULL);
    for (size_t i = 0; i < SIZE; i++)
        want[i] = (unsigned char)(rnd() >> 24);
    FILE *f = fopen(path, "wb");
    ASSERT(f != NULL && fwrite(want, 1, SIZE, f) == SIZE && fclose(f) == 0);
    int fd = open(path, O_RDWR);
    ASSERT(fd >= 0);
    struct sx_file_win *w = sx_file_win_new(fd, WIN, 2);
    ASSERT(w != NULL);
    struct sx_error e;
    sx_error_clear(&e);
    CHECK(sx_file_win_read(w, 4 * WIN - 10, 100, got, "t.bin", &e) == SX_OK &&
          memcmp(got, want + 4 * WIN - 10, 100) == 0);
    ASSERT(ftruncate(fd, 2 * WIN) == 0);
    CHECK(sx_file_win_read(w, WIN, 100, got, "t.bin", &e) == SX_OK &&
          memcmp(got, want + WIN, 100) == 0);
    sx_error_clear(&e);
    CHECK(sx_file_win_read(w, 2 * WIN - 50, 100, got, "t.bin", &e) == SX_ERR_IO &&
          strcmp(e.source, "t.bin") == 0 && strstr(e.text, "truncated") != NULL);
    sx_error_clear(&e);
    CHECK(sx_file_win_read(w, 3 * WIN, 100, got, "t.bin", &e) == SX_ERR_IO &&
          strcmp(e.source, "t.bin") == 0);
    CHECK(sx_file_win_read(w, 0, 100, got, "t.bin", &e) == SX_OK &&
          memcmp(got, want, 100) == 0);
    sx_file_win_free(w);
    close(fd);
    free(want);
    unlink(path);
}

/*
 * The index's string pools (sx_h5_read_pool) read through the walker when the
 * direct reads are open: the same strings, each kept once, as through HDF5, and
 * the walker did the reading.
 */
static void check_pool(const char *path, const char *name) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT(f >= 0);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    ASSERT(d >= 0);
    hsize_t dim = 0;
    hid_t sp = H5Dget_space(d);
    H5Sget_simple_extent_dims(sp, &dim, NULL);
    H5Sclose(sp);
    struct sx_direct *dr = NULL;
    sx_direct_open(sx_h5_posix_fd(f), path, &dr);
    ASSERT(dr != NULL);
    struct pool a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    struct sx_error e;
    sx_error_clear(&e);
    CHECK(sx_h5_read_pool(dr, d, dim, &a, "t.h5:/ds", &e) == SX_OK);
    CHECK(sx_direct_reads(dr) > 0); /* the walker read them */
    CHECK(sx_h5_read_pool(NULL, d, dim, &b, "t.h5:/ds", &e) == SX_OK);
    CHECK(a.n == b.n && a.n > 0);
    for (size_t r = 0; r < dim; r++) {
        const char *x = a.id[r] ? a.s[a.id[r] - 1] : "";
        const char *y = b.id[r] ? b.s[b.id[r] - 1] : "";
        if (strcmp(x, y) != 0) {
            fprintf(stderr, "%s row %zu: pools differ\n", name, r);
            CHECK(false);
            break;
        }
    }
    sx_h5_pool_free(&a);
    sx_h5_pool_free(&b);
    sx_direct_close(dr);
    H5Dclose(d);
    H5Fclose(f);
}

/* The strings of rows [0, n) of pools 'a' and 'b' the same. */
static bool same_pools(const struct pool *a, const struct pool *b, size_t n) {
    for (size_t r = 0; r < n; r++) {
        const char *x = a->id[r] ? a->s[a->id[r] - 1] : "";
        const char *y = b->id[r] ? b->s[b->id[r] - 1] : "";
        if (strcmp(x, y) != 0)
            return false;
    }
    return true;
}

/*
 * The pools of several string columns read together (sx_h5_read_pools), the last in a
 * helper thread where one may run (here, with two CPUs; not with SCOPE_EXPORT_THREADS=0):
 * the status, the error's text and the pools each column gives read alone. The columns
 * end with "mixed": in a file whose heap is of another version, the helper leaves it to
 * the caller, where HDF5 has the last word ("fixed" before it is HDF5's to read, and
 * reads); before a column that fails in the caller ("chunked"), the helper's is not
 * the error.
 */
static void check_pools(const char *path) {
    static const char *const sets[2][3] = {{"fixed", "mixed"},
                                           {"chunked", "few", "mixed"}};
    enum { ROWS = 10 }; /* "fixed" has 10 rows */
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT(f >= 0);
    struct sx_direct *dr = NULL;
    sx_direct_open(sx_h5_posix_fd(f), path, &dr);
    ASSERT(dr != NULL);
    for (int off = 0; off < 2; off++) {
        ASSERT(off == 0 ? unsetenv("SCOPE_EXPORT_THREADS") == 0
                        : setenv("SCOPE_EXPORT_THREADS", "0", 1) == 0);
        for (int set = 0; set < 2; set++) {
            hid_t d[3];
            const char *src[3];
            char names[3][64];
            struct pool a[3], b[3];
            struct pool *pa[3];
            int n = 0;
            memset(a, 0, sizeof a);
            memset(b, 0, sizeof b);
            for (; n < 3 && sets[set][n] != NULL; n++) {
                ASSERT((d[n] = H5Dopen2(f, sets[set][n], H5P_DEFAULT)) >= 0);
                snprintf(names[n], sizeof names[n], "t.h5:/%s", sets[set][n]);
                src[n] = names[n];
                pa[n] = &a[n];
            }
            struct sx_error e, e2;
            sx_error_clear(&e);
            sx_error_clear(&e2);
            const enum sx_status st = sx_h5_read_pools(dr, d, n, ROWS, pa, src, &e);
            enum sx_status st2 = SX_OK;
            for (int k = 0; k < n && st2 == SX_OK; k++)
                st2 = sx_h5_read_pool(dr, d[k], ROWS, &b[k], src[k], &e2);
            if (st != st2 || strcmp(e.text, e2.text) != 0)
                fprintf(stderr, "%s, pools of set %d: %d '%s' alone %d '%s'\n", path, set,
                        (int)st, e.text, (int)st2, e2.text);
            CHECK(st == st2 && strcmp(e.text, e2.text) == 0);
            for (int k = 0; k < n && st == SX_OK; k++)
                CHECK(a[k].n == b[k].n && same_pools(&a[k], &b[k], ROWS));
            for (int k = 0; k < n; k++) {
                sx_h5_pool_free(&a[k]);
                sx_h5_pool_free(&b[k]);
                H5Dclose(d[k]);
            }
        }
    }
    ASSERT(unsetenv("SCOPE_EXPORT_THREADS") == 0);
    sx_direct_close(dr);
    H5Fclose(f);
}

/*
 * The vlen guard's check of stored elements against the heap: the elements of "mixed"
 * pass, all at once and a few at a time (a few read a collection's first 4 KiB, then
 * the rest of a larger one), and a length one byte past its object is refused.
 */
static void test_check_heap(const char *good) {
    hid_t f = H5Fopen(good, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "mixed", H5P_DEFAULT);
    const uint64_t table = (uint64_t)H5Dget_offset(d);
    const size_t n = (size_t)sx_h5_dset_len(d);
    H5Dclose(d);
    H5Fclose(f);
    ASSERT(n > 100);
    int fd = open(good, O_RDONLY);
    struct stat sb;
    ASSERT(fd >= 0 && fstat(fd, &sb) == 0);
    unsigned char *el = malloc(n * 16);
    ASSERT(el != NULL && pread(fd, el, n * 16, (off_t)table) == (ssize_t)(n * 16));
    const uint64_t size = (uint64_t)sb.st_size;
    struct sx_error e;
    sx_error_clear(&e);
    CHECK(sx_vlen_check_heap(fd, size, 0, 8, 8, el, n, 1, NULL, "t.h5:/ds", &e) == SX_OK);
    size_t longs = 0;
    for (size_t row = 0; row < n; row++) {
        uint32_t len = 0;
        memcpy(&len, el + row * 16, 4);
        const uint64_t r = row;
        if (row % 7 != 0 && len <= 8192)
            continue; /* every long string, and some others */
        longs += len > 8192;
        CHECK(sx_vlen_check_heap(fd, size, 0, 8, 8, el + row * 16, 1, 1, &r, "t.h5:/ds",
                                 &e) == SX_OK);
        if (len > 8192 && longs == 1) {
            unsigned char bad[16];
            memcpy(bad, el + row * 16, 16);
            len++;
            memcpy(bad, &len, 4);
            CHECK(sx_vlen_check_heap(fd, size, 0, 8, 8, bad, 1, 1, &r, "t.h5:/ds", &e) ==
                  SX_ERR_FORMAT);
            CHECK(strstr(e.text, "bytes in object") != NULL);
        }
    }
    CHECK(longs > 0);
    free(el);
    close(fd);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/test_h5_vlen.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ASSERT(mkdtemp(dir) != NULL);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    char big[300], small[300];
    path_of(big, sizeof big, "vlen.h5");
    path_of(small, sizeof small, "vlen_small.h5");
    write_file(big, false);
    write_file(small, true);

    size_t at[1];
    CHECK(count_collections(big, at, 0) > 50); /* "many" spans many collections */
    static const char *const names[] = {"mixed", "many", "pieces", "other", "few"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        check_dataset(big, names[k], 40);
        check_dataset(small, names[k], 20);
        check_pool(big, names[k]);
    }
    check_unsupported(big);
    check_pools(big);
    test_damage(big);
    test_null_length(big);
    test_overrun(big);
    test_check_heap(big);
    test_faults(big);
    test_file_sizes_kept(big, 8);
    test_file_sizes_kept(small, 4); /* its offsets and lengths in 4 bytes */
    test_file_win();
    test_file_win_cut();

    if (getenv("KEEP") == NULL) {
        unlink(big);
        unlink(small);
        rmdir(dir);
    }
    TEST_DONE();
}
