/* test_h5_direct.c - the reads around libhdf5: byte orders, file identity, the switch,
 * chunked deflated columns and their fall-backs */
#define _GNU_SOURCE /* sched_getaffinity */
#include "h5_direct.h"
#include "h5_read.h"
#include "h5_reader.h"
#include "h5_util.h"
#include "internal.h"
#include "read_batch.h"
#include "run.h"
#include "sx_test.h"

#include <hdf5.h>

#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

/* 'v' in 'size' bytes of the given byte order. */
static void encode(uint64_t v, size_t size, bool be, unsigned char *p) {
    for (size_t b = 0; b < size; b++)
        p[be ? size - 1 - b : b] = (unsigned char)(v >> (8 * b));
}

/* An int64 as a host of order 'host_be' stores it, read back on this host. */
static int64_t as_host(int64_t x, bool host_be) {
    if (host_be == sx_direct_host_big_endian())
        return x;
    unsigned char b[8], r[8];
    memcpy(b, &x, 8);
    for (int i = 0; i < 8; i++)
        r[i] = b[7 - i];
    memcpy(&x, r, 8);
    return x;
}

/*
 * Every size, sign and pair of file and host byte orders: a big-endian
 * host runs its own path here (the same code, the host's order a
 * parameter), and its int64 bytes must be the value stored big-endian.
 */
static void test_decode(void) {
    const uint64_t vals[] = {0,
                             1,
                             0x7f,
                             0x80,
                             0xff,
                             0x1234,
                             0x8001,
                             0x12345678,
                             0x80000001,
                             0x0102030405060708ULL,
                             0x8000000000000000ULL,
                             0xfffffffffffffffeULL};
    const size_t nv = sizeof vals / sizeof vals[0];
    const size_t sizes[] = {1, 2, 4, 8};
    unsigned char bytes[sizeof vals / sizeof vals[0] * 8];
    int64_t out[sizeof vals / sizeof vals[0]];
    for (int si = 0; si < 4; si++) {
        const size_t size = sizes[si];
        for (int sg = 0; sg < 2; sg++) {
            for (int fb = 0; fb < 2; fb++) {
                for (size_t i = 0; i < nv; i++)
                    encode(vals[i], size, fb, bytes + i * size);
                for (int hb = 0; hb < 2; hb++) {
                    sx_direct_decode(bytes, size, sg, fb, hb, nv, out);
                    for (size_t i = 0; i < nv; i++) {
                        uint64_t want = size == 8
                                            ? vals[i]
                                            : vals[i] & ((UINT64_C(1) << (8 * size)) - 1);
                        if (sg && size < 8 && (want >> (8 * size - 1)) & 1)
                            want |= ~UINT64_C(0) << (8 * size);
                        int64_t got = as_host(out[i], hb);
                        if ((uint64_t)got != want)
                            fprintf(stderr,
                                    "size %zu signed %d file %s host %s: %#" PRIx64
                                    " gave %#" PRIx64 "\n",
                                    size, sg, fb ? "BE" : "LE", hb ? "BE" : "LE", vals[i],
                                    (uint64_t)got);
                        CHECK((uint64_t)got == want);
                    }
                }
            }
        }
    }
    /* a big-endian column read in place on a big-endian host: the bytes as stored */
    encode(0x0102030405060708ULL, 8, true, bytes);
    sx_direct_decode(bytes, 8, true, true, true, 1, out);
    CHECK(memcmp(out, bytes, 8) == 0);
}

/* A small HDF5 file at 'path' with a 1-D int64 dataset "v" of 'n' values i * 3 - 7. */
static void make_file(const char *path, hid_t type, size_t n) {
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT(f >= 0);
    hsize_t dim = n;
    hid_t sp = H5Screate_simple(1, &dim, NULL);
    hid_t d = H5Dcreate2(f, "v", type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT(d >= 0);
    int64_t *v = malloc(n * sizeof *v);
    ASSERT(v != NULL);
    for (size_t i = 0; i < n; i++)
        v[i] = (int64_t)i * 3 - 7;
    ASSERT((H5Dwrite)(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    free(v);
    H5Dclose(d);
    H5Sclose(sp);
    H5Fclose(f);
}

/* Dataset "v" of the file at 'path' opened by HDF5 and by the direct reads, its column.
 */
struct opened {
    hid_t f, d, t;
    struct sx_direct *dr;
    struct sx_direct_col c;
};
static void open_col(const char *path, struct opened *o) {
    o->f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    o->d = H5Dopen2(o->f, "v", H5P_DEFAULT);
    o->t = H5Dget_type(o->d);
    ASSERT(o->f >= 0 && o->d >= 0 && o->t >= 0);
    o->dr = NULL;
    sx_direct_open(sx_h5_posix_fd(o->f), path, &o->dr);
    ASSERT(o->dr != NULL);
    sx_direct_int_col(o->dr, o->d, o->t, &o->c);
}
static void close_col(struct opened *o) {
    sx_direct_close(o->dr);
    H5Tclose(o->t);
    H5Dclose(o->d);
    H5Fclose(o->f);
}

/*
 * Big-endian columns of every size read at their file address, spans and
 * points, give what HDF5 gives; and a column is eligible only when 'dr' is.
 */
static void test_columns(const char *dir) {
    const hid_t types[] = {H5T_STD_I8BE,  H5T_STD_I16BE, H5T_STD_I32BE, H5T_STD_I64BE,
                           H5T_STD_I16LE, H5T_STD_I64LE, H5T_STD_U32BE};
    enum { N = 5000 };
    char path[4096];
    snprintf(path, sizeof path, "%s/cols.h5", dir);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        make_file(path, types[ti], N);
        struct opened o;
        open_col(path, &o);
        struct sx_direct *dr = o.dr;
        hid_t d = o.d, t = o.t;
        struct sx_direct_col c;
        sx_direct_int_col(NULL, d, t, &c);
        CHECK(!c.ok);
        c = o.c;
        CHECK(c.ok && c.nelem == N && c.size == H5Tget_size(t));
        CHECK(c.big_endian == (H5Tget_order(t) == H5T_ORDER_BE));
        int64_t want[N], got[N];
        ASSERT((H5Dread)(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, want) >= 0);
        memset(got, 0x5a, sizeof got);
        struct sx_direct_span sp[3] = {
            {0, 10, got}, {12, 1000, got + 12}, {4000, N - 4000, got + 4000}};
        struct sx_error e;
        sx_error_clear(&e);
        CHECK(sx_direct_read_spans(dr, &c, sp, 3, "t", &e) == SX_OK);
        CHECK(memcmp(got, want, 10 * 8) == 0);
        CHECK(memcmp(got + 12, want + 12, 1000 * 8) == 0);
        CHECK(memcmp(got + 4000, want + 4000, (N - 4000) * 8) == 0);
        hsize_t pts[4] = {N - 1, 0, 2500, 7};
        int64_t pv[4];
        CHECK(sx_direct_read_points(dr, &c, pts, 4, pv, "t", &e) == SX_OK);
        for (int k = 0; k < 4; k++)
            CHECK(pv[k] == want[pts[k]]);
        /* past the column: an error, never bytes of whatever follows it */
        struct sx_direct_span past = {N - 1, 2, got};
        CHECK(sx_direct_read_spans(dr, &c, &past, 1, "t", &e) == SX_ERR_FORMAT);
        CHECK(sx_direct_reads(dr) == 3);
        close_col(&o);
    }
    unlink(path);
}

/* Whether 'path' lies on ext2/3/4 or tmpfs, where the reads are mapped (read_batch.h). */
static bool local_fs(const char *path) {
    struct statfs fs;
    return statfs(path, &fs) == 0 && (fs.f_type == 0xEF53 || fs.f_type == 0x01021994);
}

/*
 * Spans far apart (more than a page): copied from a mapping of the file where one is to
 * be had (read_batch.h: a local file system), else (SCOPE_EXPORT_MAPPED_READS=0) a read
 * each, in batches through a ring where one is to be had, else pread each
 * (SCOPE_EXPORT_URING=0, read when the first batch makes the ring); the values HDF5
 * gives every way, of every span of a batch and of batches after the first, little- and
 * big-endian (decoded after the batch) columns alike.
 */
static void test_batched_spans(const char *dir) {
    enum { N = 330000, NSPAN = 290, EVERY = 1100 }; /* > a page apart */
    const hid_t types[] = {H5T_STD_I64LE, H5T_STD_I64BE, H5T_STD_I32LE};
    char path[4096];
    snprintf(path, sizeof path, "%s/spans.h5", dir);
    static int64_t want[N], got[N];
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        make_file(path, types[ti], N);
        for (int mode = 2; mode >= 0; mode--) {
            const bool ring = mode >= 1, mapped = mode == 2;
            if (mapped)
                unsetenv("SCOPE_EXPORT_MAPPED_READS");
            else
                setenv("SCOPE_EXPORT_MAPPED_READS", "0", 1);
            if (mode > 0)
                unsetenv("SCOPE_EXPORT_URING");
            else
                setenv("SCOPE_EXPORT_URING", "0", 1);
            struct opened o;
            open_col(path, &o);
            ASSERT(o.c.ok);
            ASSERT((H5Dread)(o.d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                             want) >= 0);
            memset(got, 0x5a, sizeof got);
            struct sx_direct_span sp[NSPAN];
            for (size_t k = 0; k < NSPAN; k++)
                sp[k] = (struct sx_direct_span){k * EVERY, 1 + k % 7, got + k * EVERY};
            struct sx_error e;
            sx_error_clear(&e);
            CHECK(sx_direct_read_spans(o.dr, &o.c, sp, NSPAN, "t", &e) == SX_OK);
            for (size_t k = 0; k < NSPAN; k++) {
                CHECK(memcmp(sp[k].dst, want + sp[k].start, sp[k].n * 8) == 0);
                CHECK(sp[k].dst[sp[k].n] == (int64_t)0x5a5a5a5a5a5a5a5aLL);
            }
            const bool m = sx_direct_mapped(o.dr);
            if (mapped && local_fs(path))
                CHECK(m);
            CHECK(mapped || !m);
            const bool rung =
                !m && ring && sx_read_batch_built() && sx_test_kernel_rings();
            CHECK(sx_direct_batched(o.dr) == (rung ? NSPAN : 0));
            close_col(&o);
        }
    }
    unsetenv("SCOPE_EXPORT_URING");
    unsetenv("SCOPE_EXPORT_MAPPED_READS");
    unlink(path);
}

/*
 * A chunked dataset "v" of 'n' values i * 3 - 7 (clipped to the type) at 'path', in
 * chunks of 'chunk': shuffled (or not) then deflated, with a Fletcher-32 checksum after
 * them when 'fletcher'; the extent 'extent' >= n, so that chunks past 'n' are never
 * allocated.
 */
static void make_zip_file(const char *path, hid_t type, size_t n, size_t extent,
                          size_t chunk, bool shuffle, bool fletcher) {
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT(f >= 0);
    hsize_t dim = extent, maxdim = H5S_UNLIMITED, cdim = chunk, cnt = n, at = 0;
    hid_t sp = H5Screate_simple(1, &dim, &maxdim);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    ASSERT(H5Pset_chunk(dcpl, 1, &cdim) >= 0);
    if (shuffle)
        ASSERT(H5Pset_shuffle(dcpl) >= 0);
    ASSERT(H5Pset_deflate(dcpl, 4) >= 0);
    if (fletcher)
        ASSERT(H5Pset_fletcher32(dcpl) >= 0);
    hid_t d = H5Dcreate2(f, "v", type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    ASSERT(d >= 0);
    int64_t *v = malloc(n * sizeof *v);
    ASSERT(v != NULL);
    for (size_t i = 0; i < n; i++)
        v[i] = (int64_t)i * 3 - 7;
    hid_t ms = H5Screate_simple(1, &cnt, NULL);
    ASSERT(H5Sselect_hyperslab(sp, H5S_SELECT_SET, &at, NULL, &cnt, NULL) >= 0);
    ASSERT((H5Dwrite)(d, H5T_NATIVE_INT64, ms, sp, H5P_DEFAULT, v) >= 0);
    free(v);
    H5Sclose(ms);
    H5Pclose(dcpl);
    H5Dclose(d);
    H5Sclose(sp);
    H5Fclose(f);
}

/*
 * The shuffle filter undone for the event columns: the vector path and the one element
 * at a time agree with the filter's definition (byte b of element i at b * n + i) for
 * every count around the 16 elements the vector path takes at once, and write nothing
 * past the n elements.
 */
static void test_unshuffle(void) {
    enum { MAX = 4099 };
    const uint64_t counts[] = {0, 1, 7, 15, 16, 17, 31, 32, 33, 100, 4096, 4097, MAX};
    unsigned char *p = malloc(8 * MAX);
    uint64_t *got = malloc((MAX + 1) * sizeof *got), *ref = malloc(MAX * sizeof *ref);
    ASSERT(p != NULL && got != NULL && ref != NULL);
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < 8 * MAX; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = (unsigned char)x;
    }
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        const uint64_t n = counts[k];
        for (uint64_t i = 0; i < n; i++) {
            ref[i] = 0;
            for (unsigned b = 0; b < 8; b++)
                ref[i] |= (uint64_t)p[b * n + i] << (8 * b);
        }
        for (int simd = 0; simd < 2; simd++) {
            memset(got, 0xa5, (MAX + 1) * sizeof *got);
            sx_direct_unshuffle8(p, n, got, simd != 0);
            CHECK(n == 0 || memcmp(got, ref, n * sizeof *got) == 0);
            CHECK(got[n] == 0xa5a5a5a5a5a5a5a5u);
        }
    }
    free(p);
    free(got);
    free(ref);
}

/* Junk written over the middle of the stored bytes of the chunk at element 'at' of 'o'.
 */
static void damage_chunk(const struct opened *o, const char *path, hsize_t at) {
    hsize_t bytes = 0;
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    ASSERT(H5Dget_chunk_info_by_coord(o->d, &at, &mask, &addr, &bytes) >= 0 && bytes > 8);
    int fd = open(path, O_RDWR);
    ASSERT(fd >= 0);
    unsigned char junk[8] = {0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef};
    ASSERT(pwrite(fd, junk, sizeof junk, (off_t)(addr + bytes / 2)) ==
           (ssize_t)sizeof junk);
    close(fd);
}

/*
 * Chunked, deflated columns (shuffled or not, every size and byte order) read chunk by
 * chunk give what HDF5 gives, spans across chunks and within one, the chunk kept from one
 * call to the next included; a Fletcher-32 checksum makes a column HDF5's; a chunk never
 * written, or one whose bytes do not inflate, is left to HDF5 (SX_ERR_UNSUPPORTED).
 */
static void test_zip_columns(const char *dir) {
    const struct {
        hid_t type;
        bool shuffle;
        size_t chunk;
    } cases[] = {{H5T_STD_I64LE, true, 512},  {H5T_STD_I64LE, true, 500},
                 {H5T_STD_I64LE, false, 512}, {H5T_STD_I64BE, true, 512},
                 {H5T_STD_I32LE, true, 512},  {H5T_STD_I16BE, true, 512},
                 {H5T_STD_I8LE, true, 512}};
    enum { N = 5000, CH = 512 };
    char path[4096];
    struct opened o;
    struct sx_error e;
    sx_error_clear(&e);
    snprintf(path, sizeof path, "%s/zip.h5", dir);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        make_zip_file(path, cases[ci].type, N, N, cases[ci].chunk, cases[ci].shuffle,
                      false);
        open_col(path, &o);
        const struct sx_direct_col *c = &o.c;
        CHECK(!c->ok && c->zip == (sx_has_isal() != 0));
        if (c->zip) { /* (a build without ISA-L: HDF5 reads them) */
            CHECK(c->chunk == cases[ci].chunk && c->nelem == N &&
                  c->shuffle == cases[ci].shuffle);
            int64_t want[N], got[N];
            ASSERT((H5Dread)(o.d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                             want) >= 0);
            memset(got, 0x5a, sizeof got);
            struct sx_direct_span sp[4] = {{0, 10, got},
                                           {12, 1000, got + 12},
                                           {1012, 3, got + 1012},
                                           {4000, N - 4000, got + 4000}};
            CHECK(sx_direct_read_zspans(o.dr, c, sp, 3, "t", &e) == SX_OK);
            CHECK(sx_direct_read_zspans(o.dr, c, sp + 3, 1, "t", &e) == SX_OK);
            CHECK(memcmp(got, want, 10 * 8) == 0);
            CHECK(memcmp(got + 12, want + 12, 1003 * 8) == 0);
            CHECK(memcmp(got + 4000, want + 4000, (N - 4000) * 8) == 0);
            struct sx_direct_span past = {N - 1, 2, got};
            CHECK(sx_direct_read_zspans(o.dr, c, &past, 1, "t", &e) == SX_ERR_FORMAT);
        }
        close_col(&o);
    }
    if (!sx_has_isal()) {
        unlink(path);
        return;
    }
    /* a checksum filter: HDF5's */
    make_zip_file(path, H5T_STD_I64LE, N, N, CH, true, true);
    open_col(path, &o);
    CHECK(!o.c.ok && !o.c.zip);
    close_col(&o);
    /* chunks past the written values were never allocated */
    int64_t got[2 * N];
    make_zip_file(path, H5T_STD_I64LE, N, 2 * N, CH, true, false);
    open_col(path, &o);
    CHECK(o.c.zip && o.c.nelem == 2 * N);
    struct sx_direct_span low = {0, N, got}, high = {N + 600, 100, got};
    CHECK(sx_direct_read_zspans(o.dr, &o.c, &low, 1, "t", &e) == SX_OK);
    CHECK(got[N - 1] == (int64_t)(N - 1) * 3 - 7);
    CHECK(sx_direct_read_zspans(o.dr, &o.c, &high, 1, "t", &e) == SX_ERR_UNSUPPORTED);
    /* a chunk's bytes damaged: left to HDF5, which says what is wrong */
    damage_chunk(&o, path, CH);
    close_col(&o);
    open_col(path, &o);
    struct sx_direct_span first = {0, 10, got}, second = {CH, 10, got},
                          whole = {CH, CH, got};
    CHECK(sx_direct_read_zspans(o.dr, &o.c, &first, 1, "t", &e) == SX_OK);
    CHECK(sx_direct_read_zspans(o.dr, &o.c, &second, 1, "t", &e) == SX_ERR_UNSUPPORTED);
    CHECK(sx_direct_read_zspans(o.dr, &o.c, &whole, 1, "t", &e) == SX_ERR_UNSUPPORTED);
    /* the chunk kept from the first read is still whole after the failed ones */
    memset(got, 0, sizeof got);
    CHECK(sx_direct_read_zspans(o.dr, &o.c, &first, 1, "t", &e) == SX_OK);
    CHECK(got[9] == 9 * 3 - 7);
    close_col(&o);
    unlink(path);
}

/*
 * A delta-encoded run reads a row's start deltas for its starts and again for its ends,
 * in one call or the next: the values of overlapping spans are right in both, and
 * chunks read a second time are kept from then on (a kept chunk is not read again: the
 * file's bytes damaged under it do not matter to it).
 */
static void test_zip_kept(const char *dir) {
    enum { N = 5000, CH = 512 };
    if (!sx_has_isal())
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/zkept.h5", dir);
    make_zip_file(path, H5T_STD_I64LE, N, N, CH, true, false);
    struct opened o;
    struct sx_error e;
    sx_error_clear(&e);
    open_col(path, &o);
    ASSERT(o.c.zip);
    static int64_t a[N], b[N], c3[N];
    /* one call: a row's span, the same span again, one inside it */
    struct sx_direct_span one[3] = {{100, 3000, a}, {100, 3000, b}, {600, 1000, c3}};
    CHECK(sx_direct_read_zspans(o.dr, &o.c, one, 3, "t", &e) == SX_OK);
    for (int i = 0; i < 3000; i++)
        CHECK(a[i] == (int64_t)(100 + i) * 3 - 7 && b[i] == a[i]);
    for (int i = 0; i < 1000; i++)
        CHECK(c3[i] == (int64_t)(600 + i) * 3 - 7);
    /* the next calls: the whole column, twice (the second read of each chunk keeps it) */
    for (int round = 0; round < 2; round++) {
        memset(a, 0, sizeof a);
        struct sx_direct_span all = {0, N, a};
        CHECK(sx_direct_read_zspans(o.dr, &o.c, &all, 1, "t", &e) == SX_OK);
        for (int i = 0; i < N; i++)
            CHECK(a[i] == (int64_t)i * 3 - 7);
    }
    /* every chunk of the column is kept now: damage one on disk, read it again */
    damage_chunk(&o, path, 2 * CH);
    memset(a, 0, sizeof a);
    struct sx_direct_span again = {2 * CH, CH, a};
    CHECK(sx_direct_read_zspans(o.dr, &o.c, &again, 1, "t", &e) == SX_OK);
    CHECK(a[0] == (int64_t)(2 * CH) * 3 - 7 &&
          a[CH - 1] == (int64_t)(3 * CH - 1) * 3 - 7);
    close_col(&o);
    /* a reader that never read it finds the damage (left to HDF5) */
    open_col(path, &o);
    CHECK(sx_direct_read_zspans(o.dr, &o.c, &again, 1, "t", &e) == SX_ERR_UNSUPPORTED);
    close_col(&o);
    unlink(path);
}

/* Whether this process may run on more than one CPU (the helper thread's condition). */
static bool many_cpus(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 2;
}

/*
 * A batch of chunks is shared with the helper thread where the process may run on two
 * CPUs, and decoded by the caller alone with SCOPE_EXPORT_THREADS=0: the same values
 * either way. Which thread takes which chunk is the threads' race: the read is repeated
 * until the helper has taken some (a helper that never runs in 30 seconds fails). A chunk
 * that does not inflate, whichever thread takes it, fails the call (left to HDF5) and
 * leaves nothing half done: the reads after it give the right values.
 */
static void test_zip_helper(const char *dir) {
    enum { N = 40 * 512, CH = 512 };
    if (!sx_has_isal())
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/zhelp.h5", dir);
    make_zip_file(path, H5T_STD_I64LE, N, N, CH, true, false);
    static int64_t want[N], got[N];
    struct sx_error e;
    sx_error_clear(&e);
    for (int off = 0; off < 2; off++) {
        ASSERT(off == 0 ? unsetenv("SCOPE_EXPORT_THREADS") == 0
                        : setenv("SCOPE_EXPORT_THREADS", "0", 1) == 0);
        const bool may_help = off == 0 && many_cpus();
        /* The column opened afresh for each try: a column's ring keeps the chunks it
         * decoded, and a read again of the same spans decodes none. On a loaded machine
         * the helper may wake only after the caller took every chunk: tries go on for
         * up to 30 seconds until the helper has taken one. */
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        unsigned long helped = 0;
        do {
            struct opened o;
            open_col(path, &o);
            ASSERT(o.c.zip);
            if (off == 0)
                ASSERT((H5Dread)(o.d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                 want) >= 0);
            memset(got, 0, sizeof got);
            /* whole chunks straight into place, and partial ones through the ring */
            struct sx_direct_span sp[3] = {
                {0, 20 * CH, got},
                {20 * CH, 7 * CH + 3, got + 20 * CH},
                {27 * CH + 3, N - 27 * CH - 3, got + 27 * CH + 3}};
            CHECK(sx_direct_read_zspans(o.dr, &o.c, sp, 3, "t", &e) == SX_OK);
            CHECK(memcmp(got, want, sizeof got) == 0);
            helped = sx_direct_helped(o.dr);
            close_col(&o);
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while (may_help && helped == 0 && t.tv_sec - t0.tv_sec < 30);
        if (may_help)
            CHECK(helped > 0);
        else
            CHECK(helped == 0);
    }
    ASSERT(unsetenv("SCOPE_EXPORT_THREADS") == 0);
    /* chunk 30 of a batch of 40 damaged */
    struct opened o;
    open_col(path, &o);
    damage_chunk(&o, path, 30 * CH);
    close_col(&o);
    open_col(path, &o);
    struct sx_direct_span all = {0, N, got}, low = {0, 10 * CH, got},
                          near = {29 * CH + 5, CH - 10, got},
                          bad = {30 * CH + 5, 10, got};
    CHECK(sx_direct_read_zspans(o.dr, &o.c, &all, 1, "t", &e) == SX_ERR_UNSUPPORTED);
    memset(got, 0, sizeof got);
    CHECK(sx_direct_read_zspans(o.dr, &o.c, &low, 1, "t", &e) == SX_OK);
    CHECK(memcmp(got, want, 10 * CH * sizeof *got) == 0);
    CHECK(sx_direct_read_zspans(o.dr, &o.c, &near, 1, "t", &e) == SX_OK);
    CHECK(memcmp(got, want + 29 * CH + 5, (CH - 10) * sizeof *got) == 0);
    CHECK(sx_direct_read_zspans(o.dr, &o.c, &bad, 1, "t", &e) == SX_ERR_UNSUPPORTED);
    CHECK(sx_direct_read_zspans(o.dr, &o.c, &near, 1, "t", &e) == SX_OK);
    CHECK(memcmp(got, want + 29 * CH + 5, (CH - 10) * sizeof *got) == 0);
    close_col(&o);
    unlink(path);
}

/*
 * The raw views are opened by path after HDF5 opened it: a path that names
 * another file by then (the run replaced) gives no raw views, and the
 * descriptor check itself tells files apart.
 */
static void test_identity(const char *dir) {
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/a.h5", dir);
    snprintf(b, sizeof b, "%s/b.h5", dir);
    make_file(a, H5T_STD_I64LE, 100);
    make_file(b, H5T_STD_I64LE, 100);
    int fa = open(a, O_RDONLY), fa2 = open(a, O_RDONLY), fb = open(b, O_RDONLY);
    ASSERT(fa >= 0 && fa2 >= 0 && fb >= 0);
    CHECK(sx_direct_same_file(fa, fa2));
    CHECK(!sx_direct_same_file(fa, fb));
    CHECK(!sx_direct_same_file(fa, -1));
    close(fa);
    close(fa2);
    close(fb);

    hid_t f = H5Fopen(a, H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT(f >= 0);
    struct sx_direct *dr = NULL;
    sx_direct_open(sx_h5_posix_fd(f), a, &dr);
    CHECK(dr != NULL); /* the same file: raw views */
    sx_direct_close(dr);
    ASSERT(rename(b, a) == 0); /* 'a' now names another file than HDF5 has open */
    dr = (struct sx_direct *)&dr;
    sx_direct_open(sx_h5_posix_fd(f), a, &dr);
    CHECK(dr == NULL);
    H5Fclose(f);
    unlink(a);
}

/* SCOPE_EXPORT_DIRECT_READS=0 turns the raw views off, read at each open. */
static void test_switch(const char *dir) {
    char a[4096];
    snprintf(a, sizeof a, "%s/s.h5", dir);
    make_file(a, H5T_STD_I64LE, 10);
    hid_t f = H5Fopen(a, H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT(f >= 0);
    const char *vals[] = {NULL, "1", "0", "yes", "0"};
    const bool on[] = {true, true, false, true, false};
    for (int i = 0; i < 5; i++) {
        if (vals[i] == NULL)
            unsetenv("SCOPE_EXPORT_DIRECT_READS");
        else
            setenv("SCOPE_EXPORT_DIRECT_READS", vals[i], 1);
        struct sx_direct *dr = NULL;
        sx_direct_open(sx_h5_posix_fd(f), a, &dr);
        CHECK((dr != NULL) == on[i]);
        CHECK(sx_direct_enabled() == on[i]);
        sx_direct_close(dr);
    }
    unsetenv("SCOPE_EXPORT_DIRECT_READS");
    H5Fclose(f);
    unlink(a);
}

/*
 * A golden run read whole through the reader's slices with the switch on
 * and off: the same values, and the raw reads counted only when on (so the
 * switch reaches the reader, and the comparison compares two paths).
 */
static void read_all(const char *path, bool direct, int64_t **vals, size_t *nvals,
                     unsigned long *reads) {
    if (direct)
        unsetenv("SCOPE_EXPORT_DIRECT_READS");
    else
        setenv("SCOPE_EXPORT_DIRECT_READS", "0", 1);
    struct sx_h5 *h5 = NULL;
    struct sx_run *run = NULL;
    struct sx_error e;
    sx_error_clear(&e);
    ASSERT(sx_h5_open(MPI_COMM_NULL, path, false, &h5, &run, &e) == SX_OK);
    unsetenv("SCOPE_EXPORT_DIRECT_READS");
    ASSERT(run->layout == SX_LAYOUT_COLUMNAR && run->nrows > 0);
    const unsigned cols =
        SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END) | run->file_cols;
    struct sx_slice *s = calloc(run->nrows, sizeof *s);
    size_t total = 0;
    for (size_t i = 0; i < run->nrows; i++)
        total += run->rows[i].count * SX_NCOLS;
    *vals = calloc(total + 1, sizeof **vals);
    ASSERT(s != NULL && *vals != NULL);
    size_t at = 0;
    for (size_t i = 0; i < run->nrows; i++) {
        s[i].row = &run->rows[i];
        s[i].first = 0;
        s[i].n = run->rows[i].count;
        s[i].cols = cols;
        for (int c = 0; c < SX_NCOLS; c++) {
            s[i].col[c] = *vals + at;
            at += run->rows[i].count;
        }
    }
    ASSERT(sx_h5_read_slices(h5, run, s, run->nrows, &e) == SX_OK);
    *nvals = total;
    *reads = sx_direct_reads(h5->direct);
    CHECK((h5->direct != NULL) == direct);
    free(s);
    sx_run_free(run);
    sx_h5_close(h5);
}

static void test_switch_reader(void) {
    const char *cases[] = {"gen_schema3_allcols", "mpi4_parallel", "basic_nested"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/golden/%s/run.h5", SX_SHARED_DIR, cases[i]);
        if (access(path, R_OK) != 0) {
            fprintf(stderr, "skip %s: no golden run at %s\n", cases[i], path);
            continue;
        }
        int64_t *on = NULL, *off = NULL;
        size_t non = 0, noff = 0;
        unsigned long ron = 0, roff = 0;
        read_all(path, true, &on, &non, &ron);
        read_all(path, false, &off, &noff, &roff);
        CHECK(non == noff && non > 0 && memcmp(on, off, non * sizeof *on) == 0);
        if (ron == 0 || roff != 0)
            fprintf(stderr, "%s: %lu direct reads on, %lu off\n", cases[i], ron, roff);
        CHECK(ron > 0 && roff == 0);
        free(on);
        free(off);
    }
}

int main(void) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    char dir[] = "/tmp/sx_h5_direct.XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    test_decode();
    test_unshuffle();
    test_columns(dir);
    test_batched_spans(dir);
    test_zip_columns(dir);
    test_zip_kept(dir);
    test_zip_helper(dir);
    test_identity(dir);
    test_switch(dir);
    test_switch_reader();
    rmdir(dir);
    TEST_DONE();
}
