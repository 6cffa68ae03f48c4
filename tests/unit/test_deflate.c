/*
 * test_deflate.c - the deflate segments gzip outputs (and the Perfetto trace's
 * compressed packets) are joined from: a segment that is not the last ends on a
 * byte boundary with its input all in it, so that the next segment (another block,
 * another rank) starts where it ends; and its bytes are the same whatever room the
 * output buffer had, since that room differs from rank to rank while the document
 * must not; with each engine the build has.
 */
#include "buf.h"
#include "deflate_out.h"
#include "sx_test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static unsigned long long rnd_state = 0x9e3779b97f4a7c15ull;
static unsigned rnd(void) {
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return (unsigned)(rnd_state >> 16);
}

/* Whether the raw deflate stream z[0..zn) inflates to exactly want[0..n). */
static bool inflates_to(const unsigned char *z, size_t zn, const unsigned char *want,
                        size_t n) {
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit2(&s, -15) != Z_OK)
        return false;
    unsigned char *got = malloc(n + 1);
    if (got == NULL) {
        inflateEnd(&s);
        return false;
    }
    s.next_in = (Bytef *)(uintptr_t)z;
    s.avail_in = (uInt)zn;
    s.next_out = got;
    s.avail_out = (uInt)(n + 1);
    int rc = inflate(&s, Z_FINISH);
    bool ok = rc == Z_STREAM_END && s.total_out == n && s.avail_in == 0 &&
              memcmp(got, want, n) == 0;
    inflateEnd(&s);
    free(got);
    return ok;
}

/*
 * Input 'in[0..n)' in two segments, the first not final, written after 'skip'
 * bytes already in the output buffer: the skip moves where the buffer's room
 * ends against the compressed bytes.
 */
static bool two_segments(const unsigned char *in, size_t n, size_t cut, size_t skip,
                         enum sx_deflate eng, size_t *first_len, struct sx_buf *bytes) {
    struct sx_buf out = {0};
    struct sx_error err = {0};
    bool ok = sx_buf_reserve(&out, skip);
    if (ok) {
        memset(out.data, 'x', skip);
        out.len = skip;
    }
    ok = ok && sx_deflate_segment(in, cut, 1, eng, false, &out, &err) == SX_OK;
    if (first_len != NULL)
        *first_len = out.len - skip;
    ok = ok && sx_deflate_segment(in + cut, n - cut, 1, eng, true, &out, &err) == SX_OK;
    ok = ok && inflates_to((unsigned char *)out.data + skip, out.len - skip, in, n);
    if (ok && bytes != NULL) {
        sx_buf_reset(bytes);
        sx_buf_append(bytes, out.data + skip, out.len - skip);
    }
    sx_buf_free(&out);
    return ok;
}

static void engine(enum sx_deflate eng, const char *name) {
    /* incompressible bytes, so that the compressed segment outgrows the room the
     * first call has and the buffer's end falls inside it */
    const size_t n = 200000, cut = 190000;
    unsigned char *in = malloc(n);
    ASSERT(in != NULL);
    for (size_t i = 0; i < n; i++)
        in[i] = (unsigned char)rnd();
    size_t len = 0;
    struct sx_buf ref = {0}, got = {0};
    ASSERT(two_segments(in, n, cut, 0, eng, &len, &ref));
    /* the buffer the first segment starts in: 64 doubled past skip + cut/2 + 64 KiB
     * and its terminator; walk its end across the segment's last bytes */
    size_t cap = 64;
    while (cap < cut / 2 + 65536 + 1 + 70000)
        cap *= 2;
    int bad = 0;
    for (size_t room = len - 48; room <= len + 48; room++) {
        size_t skip = cap - room;
        if (skip + cut / 2 + 65536 + 1 > cap)
            continue; /* the buffer would grow before the first call */
        bool ok = two_segments(in, n, cut, skip, eng, NULL, &got);
        if (!ok || got.len != ref.len || memcmp(got.data, ref.data, ref.len) != 0) {
            if (bad++ < 5)
                fprintf(stderr, "%s: room %zu against a %zu-byte segment: %s\n", name,
                        room, len, ok ? "other bytes" : "corrupt");
        }
    }
    CHECK(bad == 0);
    sx_buf_free(&ref);
    sx_buf_free(&got);
    /* small and empty segments, compressible text */
    for (size_t k = 0; k < 64; k++) {
        size_t m = (size_t)rnd() % 5000;
        for (size_t i = 0; i < m; i++)
            in[i] = (unsigned char)("[1, 22, 333, 4444]"[rnd() % 18]);
        CHECK(two_segments(in, m, m == 0 ? 0 : (size_t)rnd() % m, (size_t)rnd() % 300,
                           eng, NULL, NULL));
    }
    free(in);
}

/*
 * Whole zlib streams (the Perfetto trace's compressed packets): each inflates back to
 * its input with zlib's own reader, and the same input gives the same bytes, with
 * libdeflate where the build has it (other bytes than zlib's for the same level: it
 * did write them) and with zlib's own under SCOPE_EXPORT_LIBDEFLATE=0.
 */
static void zlib_streams(void) {
    const size_t big = (size_t)300 << 10;
    unsigned char *in = malloc(big);
    ASSERT(in != NULL);
    const bool lib = sx_zlib_by_libdeflate();
    const char *env = getenv("SCOPE_EXPORT_LIBDEFLATE");
    CHECK(lib == (SX_HAVE_LIBDEFLATE && (env == NULL || strcmp(env, "0") != 0)));
    for (int by_zlib = 0; by_zlib < 2; by_zlib++) {
        if (by_zlib)
            setenv("SCOPE_EXPORT_LIBDEFLATE", "0", 1);
        CHECK(sx_zlib_by_libdeflate() == (lib && !by_zlib));
        size_t unlike = 0, streams = 0;
        for (int k = 0; k < 40; k++) {
            const size_t m = k == 0       ? 0
                             : k == 1     ? 1
                             : k % 4 == 0 ? big
                                          : (size_t)rnd() % big;
            for (size_t i = 0; i < m; i++) /* packets' varints, or noise */
                in[i] = k % 8 == 3
                            ? (unsigned char)rnd()
                            : (unsigned char)("\x0a\x08\x10\x92\x01\x18"[rnd() % 6]);
            struct sx_buf a = {0}, b = {0};
            struct sx_error e;
            sx_error_clear(&e);
            CHECK(sx_zlib_compress(in, m, 1, SX_DEFLATE_ZLIB, &a, &e) == SX_OK);
            CHECK(sx_zlib_compress(in, m, 1, SX_DEFLATE_ZLIB, &b, &e) == SX_OK);
            CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
            uLongf back_n = (uLongf)m + 1;
            unsigned char *back = malloc(m + 1);
            ASSERT(back != NULL);
            CHECK(uncompress(back, &back_n, (const Bytef *)a.data, (uLong)a.len) ==
                      Z_OK &&
                  back_n == m && memcmp(back, in, m) == 0);
            /* zlib's own stream of the same input and level */
            uLongf zn = compressBound((uLong)m);
            unsigned char *z = malloc(zn);
            ASSERT(z != NULL);
            ASSERT(compress2(z, &zn, in, (uLong)m, 1) == Z_OK);
            streams += m > 1000;
            unlike += m > 1000 && (zn != a.len || memcmp(z, a.data, zn) != 0);
            free(z);
            free(back);
            sx_buf_free(&a);
            sx_buf_free(&b);
        }
        /* libdeflate's bytes are its own; zlib's are zlib's */
        CHECK(lib && !by_zlib ? unlike == streams : unlike == 0);
        CHECK(streams > 20);
    }
    unsetenv("SCOPE_EXPORT_LIBDEFLATE");
    free(in);
}

int main(void) {
    zlib_streams();
    engine(SX_DEFLATE_ZLIB, "zlib");
    if (sx_has_isal())
        engine(SX_DEFLATE_ISAL, "ISA-L");
    TEST_DONE();
}
