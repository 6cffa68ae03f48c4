/* h5_direct.c - reads of a run's file that go around libhdf5, and their fall-back to it
 */
#include "h5_direct.h"

#include "fault.h"
#include "h5_direct_heap.h"
#include "h5_direct_win.h"
#include "h5_util.h"
#include "mpi_util.h"
#include "read_batch.h"
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if SX_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The index's integer columns are read through NWIN kept windows of WIN bytes. */
enum { WIN = 1 << 16, NWIN = 32 };
/* Deflated columns keep their last chunks read, ZKEEP columns (the start and end columns
 * and two more) of at most ZRING chunks or ZRING_BYTES each. */
enum { ZKEEP = 4, ZRING = 64, ZRING_BYTES = 1 << 20 };
/* A batch of chunk reads: at most ZJOBS chunks and ZCOPIES copies. */
enum { ZJOBS = 64, ZCOPIES = 256 };

/* A decoder's own state and room: one for the caller, one for the helper thread. */
struct zdec {
#if SX_HAVE_ISAL
    struct inflate_state *inf;
#endif
    unsigned char *raw; /* inflated bytes, and room to unshuffle them */
    size_t raw_cap;
};

struct sx_direct {
    int fd;
    uint64_t size;
    /* The event columns and the metadata's strings are read from a mapping of the file
     * on a local file system (read_batch.h), else with pread; the element tables through
     * kept windows, read. */
    struct sx_file_win *iwin; /* made at the first point read */
    unsigned char *buf;       /* reused read buffer of span reads */
    size_t buf_cap;
    /* chunk reads (zip columns): a chunk's stored bytes and inflated bytes; the
     * values of the last chunks read of each of ZKEEP columns, in a ring (a span's
     * first chunk is often the one the span before it ended in, a call before; a
     * delta-encoded run reads a row's start deltas for its starts and again for its
     * ends, a call later) */
    struct zkept {
        hid_t dset;
        uint64_t chunk;     /* elements of a chunk of the column */
        int64_t *val;       /* 'nslot' chunks */
        uint64_t ci[ZRING]; /* the chunk in each slot; UINT64_MAX: none */
        bool pend[ZRING];   /* the slot's chunk is in the batch, not decoded yet */
        unsigned nslot, next, npend;
        uint64_t hi; /* one past the furthest chunk read */
        bool again;  /* a chunk was read a second time: whole ones are kept too */
    } zkeep[ZKEEP];
    /* A call's chunks go in batches: their stored bytes read one by one through HDF5
     * (zin), then decoded together, half by the helper thread when there is one; the
     * copies from the ring and between spans wait for them (zcopy). */
    unsigned char *zin;
    size_t zin_len, zin_cap;
    struct zjob {
        size_t at, n; /* stored bytes at zin + at */
        int64_t *val; /* the chunk's values to */
        bool ok;
    } zjob[ZJOBS];
    struct zcopy {
        const int64_t *from;
        int64_t *to;
        uint64_t n;
    } zcopy[ZCOPIES];
    size_t nzjob, nzcopy;
    struct zdec zd;
    struct zhelp *help;
    bool help_ok;         /* a helper thread may be started */
    unsigned long helped; /* chunks the helper thread decoded */
    bool host_be;
    unsigned long reads;
    /* span reads in batches, one call each (read_batch.h); no ring: pread each */
    struct sx_read_ring uring;
    struct sx_read_map map;    /* the file mapped, where it may be (read_batch.h) */
    struct sx_vlen_file vfile; /* the file's sizes for its string datasets */
};

static void helper_stop(struct sx_direct *dr);
static void zdec_free(struct zdec *zd);

bool sx_direct_enabled(void) { return sx_switch_on("SCOPE_EXPORT_DIRECT_READS"); }

bool sx_direct_host_big_endian(void) {
    const uint16_t one = 1;
    unsigned char b[sizeof one];
    memcpy(b, &one, sizeof one);
    return b[0] == 0;
}

bool sx_direct_same_file(int a, int b) {
    struct stat sa, sb;
    return a >= 0 && b >= 0 && fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void sx_direct_open(int hfd, const char *path, struct sx_direct **out) {
    struct sx_direct *dr = NULL;
    struct stat sb;
    *out = NULL;
    if (!sx_direct_enabled())
        return;
    if (hfd < 0)
        return;
    dr = sx_calloc(1, sizeof *dr);
    if (dr == NULL)
        return;
    dr->host_be = sx_direct_host_big_endian();
    dr->help_ok = sx_helper_allowed();
    dr->fd = open(path, O_RDONLY | O_CLOEXEC);
    /* the path is looked up again: it must still name the file HDF5 opened (a run
     * replaced meanwhile is read by HDF5 alone, never half from each) */
    if (dr->fd < 0 || !sx_direct_same_file(dr->fd, hfd) || fstat(dr->fd, &sb) != 0 ||
        sb.st_size <= 0) {
        sx_direct_close(dr);
        return;
    }
    dr->size = (uint64_t)sb.st_size;
    sx_read_map_open(dr->fd, dr->size, &dr->map);
    *out = dr;
}

void sx_direct_close(struct sx_direct *dr) {
    if (dr == NULL)
        return;
    sx_file_win_free(dr->iwin);
    sx_read_map_close(&dr->map);
    if (dr->fd >= 0)
        close(dr->fd);
    helper_stop(dr);
    sx_read_batch_free(dr->uring.b);
    free(dr->buf);
    free(dr->zin);
    zdec_free(&dr->zd);
    for (int i = 0; i < ZKEEP; i++)
        free(dr->zkeep[i].val);
    free(dr);
}

unsigned long sx_direct_reads(const struct sx_direct *dr) {
    return dr != NULL ? dr->reads : 0;
}

void sx_direct_set_file_sizes(struct sx_direct *dr, unsigned sa, unsigned sl,
                              uint64_t userblock) {
    if (dr != NULL && sa >= 2 && sa <= 8 && sl >= 2 && sl <= 8)
        dr->vfile = (struct sx_vlen_file){true, true, sa, sl, userblock, &dr->map};
}

bool sx_direct_mapped(const struct sx_direct *dr) {
    return dr != NULL && dr->map.p != NULL;
}

unsigned long sx_direct_batched(const struct sx_direct *dr) {
    return dr != NULL ? sx_read_batch_count(dr->uring.b) : 0;
}

unsigned long sx_direct_helped(const struct sx_direct *dr) {
    return dr != NULL ? dr->helped : 0;
}

void sx_direct_decode(const unsigned char *p, size_t size, bool is_signed, bool file_be,
                      bool host_be, uint64_t n, int64_t *out) {
    if (size == 8 && file_be == host_be) {
        memcpy(out, p, (size_t)n * 8);
        return;
    }
    const bool swap = host_be != sx_direct_host_big_endian(); /* a test's host */
    for (uint64_t i = 0; i < n; i++, p += size) {
        uint64_t u = 0;
        for (size_t b = 0; b < size; b++)
            u |= (uint64_t)p[file_be ? size - 1 - b : b] << (8 * b);
        if (is_signed && size < 8 && (u >> (8 * size - 1)) & 1)
            u |= ~(uint64_t)0 << (8 * size);
        if (swap) {
            uint64_t s = 0;
            for (int b = 0; b < 8; b++)
                s |= ((u >> (8 * b)) & 0xff) << (8 * (7 - b));
            u = s;
        }
        memcpy(&out[i], &u, sizeof u);
    }
}

/* Whether 'dcpl' stores 1-D chunks deflated after an optional shuffle, and nothing else;
 * the elements per chunk in '*chunk'. */
static bool zip_layout(hid_t dcpl, bool *shuffle, uint64_t *chunk) {
    hsize_t cdim = 0;
    const int nf = H5Pget_nfilters(dcpl);
    if (H5Pget_layout(dcpl) != H5D_CHUNKED || H5Pget_external_count(dcpl) != 0 ||
        H5Pget_chunk(dcpl, 1, &cdim) != 1 || cdim == 0 || cdim > ((hsize_t)1 << 24) ||
        nf < 1 || nf > 2)
        return false;
    *shuffle = false;
    for (int i = 0; i < nf; i++) {
        unsigned flags = 0, cd[8];
        size_t ncd = sizeof cd / sizeof cd[0];
        const H5Z_filter_t id =
            H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, 0, NULL, NULL);
        if (i == nf - 1 && id == H5Z_FILTER_DEFLATE)
            continue;
        if (i == 0 && id == H5Z_FILTER_SHUFFLE)
            *shuffle = true;
        else
            return false;
    }
    *chunk = (uint64_t)cdim;
    return true;
}

void sx_direct_int_col(const struct sx_direct *dr, hid_t d, hid_t t,
                       struct sx_direct_col *c) {
    const hid_t dcpl = dr != NULL ? H5Dget_create_plist(d) : -1;
    sx_direct_int_col_dcpl(dr, d, t, dcpl, c);
    if (dcpl >= 0)
        H5Pclose(dcpl);
}

void sx_direct_int_col_dcpl(const struct sx_direct *dr, hid_t d, hid_t t, hid_t dcpl,
                            struct sx_direct_col *c) {
    memset(c, 0, sizeof *c);
    c->dset = -1;
    if (dr == NULL || dcpl < 0)
        return;
    const bool contig = H5Pget_layout(dcpl) == H5D_CONTIGUOUS &&
                        H5Pget_nfilters(dcpl) == 0 && H5Pget_external_count(dcpl) == 0;
    bool shuffle = false;
    uint64_t chunk = 0;
    /* without ISA-L, zlib's inflate here is no faster than HDF5's: HDF5 reads them */
    const bool zip = SX_HAVE_ISAL && !contig && zip_layout(dcpl, &shuffle, &chunk);
    haddr_t addr = H5Dget_offset(d);
    int64_t nelem = sx_h5_dset_len(d);
    size_t size = H5Tget_size(t);
    H5T_sign_t sign = H5Tget_sign(t);
    H5T_order_t order = H5Tget_order(t);
    /* int64 reads of a uint64 column clip, as HDF5's conversion does: leave it to HDF5 */
    if ((order != H5T_ORDER_LE && order != H5T_ORDER_BE) ||
        !(size == 1 || size == 2 || size == 4 || size == 8) ||
        (size == 8 && sign != H5T_SGN_2) || nelem < 0)
        return;
    if (zip) {
        c->zip = true;
        c->shuffle = shuffle;
        c->chunk = chunk;
        c->dset = d;
    } else if (!contig || addr == HADDR_UNDEF || addr > dr->size ||
               (uint64_t)nelem > (dr->size - addr) / size) {
        return;
    } else {
        c->ok = true;
        c->addr = (uint64_t)addr;
    }
    c->nelem = (uint64_t)nelem;
    c->size = size;
    c->is_signed = sign == H5T_SGN_2;
    c->big_endian = order == H5T_ORDER_BE;
}

/* Make dr->buf hold 'bytes' (its contents need not survive); false: no memory. */
static bool buf_reserve(struct sx_direct *dr, size_t bytes) {
    if (bytes > dr->buf_cap) {
        free(dr->buf);
        dr->buf = sx_malloc(bytes);
        dr->buf_cap = dr->buf != NULL ? bytes : 0;
    }
    return dr->buf != NULL;
}

/* Whether every span lies in column 'c': SX_OK, or SX_ERR_FORMAT naming 'src'. */
static enum sx_status spans_in_range(const struct sx_direct_col *c,
                                     const struct sx_direct_span *sp, size_t n,
                                     const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    for (size_t k = 0; k < n; k++)
        SX_CHECK(sp[k].start <= c->nelem && sp[k].n <= c->nelem - sp[k].start,
                 SX_ERR_FORMAT, err, src,
                 "%s: elements %" PRIu64 "..%" PRIu64 " are out of range", src,
                 sp[k].start, sp[k].start + sp[k].n);
out:
    return st;
}

/* One run of spans less than a page apart, read in one piece: spans [i, j) of elements
 * [lo, hi), to the spans' own room when 'direct' (a span alone, already int64 of this
 * host), else to dr->buf at 'at'. */
struct span_run {
    size_t i, j;
    uint64_t lo, hi;
    bool direct;
    size_t at;
};

/* Bytes of dr->buf a batch of runs reads into, unless one run alone needs more. */
enum { BATCH_BYTES = 1 << 20 };

enum sx_status sx_direct_read_spans(struct sx_direct *dr, const struct sx_direct_col *c,
                                    const struct sx_direct_span *sp, size_t n,
                                    const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const uint64_t gap = 4096 / c->size;
    /* read into place when the bytes are already int64 of this host */
    const bool in_place = c->size == 8 && c->big_endian == dr->host_be;
    struct span_run run[SX_READ_BATCH_MAX];
    struct sx_read_one rd[SX_READ_BATCH_MAX];
    dr->reads++;
    st = spans_in_range(c, sp, n, src, err);
    if (st != SX_OK)
        goto out;
    /* mapped: each span decoded from the file's pages, no read, no room between */
    if (c->ok && sx_read_map_ok(&dr->map, dr->fd) &&
        sx_read_map_at(&dr->map, c->addr, (size_t)(c->nelem * c->size)) != NULL) {
        SX_CHECK(!sx_fault(SX_FAULT_READ, 0), SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
        /* a long span in steps, each's pages let go when they add up (read_batch.h) */
        const uint64_t step = SX_READ_MAP_KEEP / c->size;
        for (size_t k = 0; k < n; k++)
            for (uint64_t i = 0; i < sp[k].n; i += step) {
                const uint64_t m = sp[k].n - i < step ? sp[k].n - i : step;
                const uint64_t at = c->addr + (sp[k].start + i) * c->size;
                sx_direct_decode(dr->map.p + at, c->size, c->is_signed, c->big_endian,
                                 dr->host_be, m, sp[k].dst + i);
                sx_read_map_used(&dr->map, at, m * c->size);
            }
        sx_read_map_release(&dr->map);
        goto out;
    }
    /* one read per run of spans less than a page apart; the runs in batches, each
     * batch's reads in one call where a ring is to be had (read_batch.h) */
    size_t i = 0;
    while (i < n) {
        size_t nr = 0, bytes = 0;
        while (i < n && nr < SX_READ_BATCH_MAX) {
            uint64_t lo = sp[i].start, hi = sp[i].start + sp[i].n;
            size_t j = i + 1;
            while (j < n && sp[j].start <= hi + gap) {
                if (sp[j].start + sp[j].n > hi)
                    hi = sp[j].start + sp[j].n;
                j++;
            }
            const size_t len = (size_t)(hi - lo) * c->size;
            const bool direct = in_place && j == i + 1;
            if (!direct && nr > 0 && bytes + len > BATCH_BYTES)
                break; /* the next batch's */
            run[nr] = (struct span_run){i, j, lo, hi, direct, bytes};
            rd[nr] = (struct sx_read_one){NULL, len, c->addr + lo * c->size, 0};
            bytes += direct ? 0 : len;
            nr++;
            i = j;
        }
        SX_CHECK(bytes == 0 || buf_reserve(dr, bytes), SX_ERR_NOMEM, err, src,
                 "out of memory");
        for (size_t k = 0; k < nr; k++) {
            rd[k].to = run[k].direct ? (void *)sp[run[k].i].dst
                       : bytes > 0   ? (void *)(dr->buf + run[k].at)
                                     : NULL; /* (an empty run) */
            SX_CHECK(!sx_fault(SX_FAULT_READ, 0), SX_ERR_IO, err, src,
                     "%s cannot be read; the file is truncated or damaged", src);
        }
        const size_t bad =
            sx_read_all(&dr->map, sx_read_ring_for(&dr->uring, nr), dr->fd, rd, nr);
        SX_CHECK(bad == nr, SX_ERR_IO, err, src,
                 "%s cannot be read (elements %" PRIu64 "..%" PRIu64
                 "); the file is truncated or damaged",
                 src, run[bad < nr ? bad : 0].lo, run[bad < nr ? bad : 0].hi);
        for (size_t k = 0; k < nr; k++)
            for (size_t q = run[k].i; q < run[k].j && !run[k].direct && rd[k].len > 0;
                 q++)
                sx_direct_decode(
                    dr->buf + run[k].at + (sp[q].start - run[k].lo) * c->size, c->size,
                    c->is_signed, c->big_endian, dr->host_be, sp[q].n, sp[q].dst);
    }
out:
    return st;
}

/* Grow '*p' (of '*cap' bytes) to hold 'bytes'; false: no memory. */
static bool grow(void *p, size_t *cap, size_t bytes) {
    void **pp = p;
    if (bytes <= *cap)
        return true;
    free(*pp);
    *pp = sx_malloc(bytes);
    *cap = *pp != NULL ? bytes : 0;
    return *pp != NULL;
}

static void zdec_free(struct zdec *zd) {
#if SX_HAVE_ISAL
    free(zd->inf);
#endif
    free(zd->raw);
    memset(zd, 0, sizeof *zd);
}

/* Room for chunks of column 'c' in 'zd'; false: no memory. */
static bool zdec_ready(struct zdec *zd, const struct sx_direct_col *c) {
#if SX_HAVE_ISAL
    if (zd->inf == NULL && (zd->inf = sx_malloc(sizeof *zd->inf)) == NULL)
        return false;
#endif
    return grow(&zd->raw, &zd->raw_cap, 2 * (size_t)c->chunk * c->size);
}

/* A zlib stream (HDF5's deflate filter) of 'n' bytes inflated to exactly 'cap' bytes. */
static bool inflate_all(struct zdec *zd, const unsigned char *in, size_t n,
                        unsigned char *out, size_t cap) {
    if (n > UINT32_MAX || cap > UINT32_MAX)
        return false;
#if SX_HAVE_ISAL
    struct inflate_state *s = zd->inf;
    isal_inflate_init(s);
    s->crc_flag = ISAL_ZLIB; /* the header, and the Adler-32 checked */
    s->next_in = (uint8_t *)(uintptr_t)in;
    s->avail_in = (uint32_t)n;
    s->next_out = out;
    s->avail_out = (uint32_t)cap;
    return isal_inflate(s) == ISAL_DECOMP_OK && s->block_state == ISAL_BLOCK_FINISH &&
           s->avail_out == 0;
#else
    (void)zd, (void)in, (void)out; /* zip columns need ISA-L (sx_direct_int_col) */
    return false;
#endif
}

void sx_direct_unshuffle8(const unsigned char *p, uint64_t n, uint64_t *out, bool simd) {
    uint64_t i = 0;
#if defined(__SSE2__)
    if (simd) {
        /* 16 elements at a time: the 8 x 16 bytes of their planes transposed in
         * three rounds of interleaving (bytes, then pairs, then quads) */
        for (; i + 16 <= n; i += 16) {
            __m128i x[8], t[8], u[8];
            for (int b = 0; b < 8; b++)
                x[b] = _mm_loadu_si128((const __m128i *)(const void *)(p + b * n + i));
            for (int b = 0; b < 8; b += 2) {
                t[b] = _mm_unpacklo_epi8(x[b], x[b + 1]);     /* elements 0..7 */
                t[b + 1] = _mm_unpackhi_epi8(x[b], x[b + 1]); /* elements 8..15 */
            }
            for (int h = 0; h < 2; h++) { /* bytes 0..3, then 4..7 */
                const __m128i *a = &t[4 * h], *b = &t[4 * h + 2];
                u[4 * h + 0] = _mm_unpacklo_epi16(a[0], b[0]); /* elements 0..3 */
                u[4 * h + 1] = _mm_unpackhi_epi16(a[0], b[0]); /* 4..7 */
                u[4 * h + 2] = _mm_unpacklo_epi16(a[1], b[1]); /* 8..11 */
                u[4 * h + 3] = _mm_unpackhi_epi16(a[1], b[1]); /* 12..15 */
            }
            __m128i *o = (__m128i *)(void *)(out + i);
            for (int q = 0; q < 4; q++) {
                _mm_storeu_si128(o + 2 * q, _mm_unpacklo_epi32(u[q], u[4 + q]));
                _mm_storeu_si128(o + 2 * q + 1, _mm_unpackhi_epi32(u[q], u[4 + q]));
            }
        }
    }
#else
    (void)simd;
#endif
    for (; i < n; i++) {
        uint64_t v = 0;
        for (unsigned b = 0; b < 8; b++)
            v |= (uint64_t)p[b * n + i] << (8 * b);
        out[i] = v;
    }
}

/* Undo the shuffle filter: byte b of element i is at p[b * n + i]. */
static void unshuffle(const unsigned char *p, size_t size, uint64_t n,
                      unsigned char *out) {
    for (size_t b = 0; b < size; b++)
        for (uint64_t i = 0; i < n; i++)
            out[i * size + b] = p[b * n + i];
}

/*
 * The stored bytes 'in[0..n)' of a chunk of 'c' to its c->chunk values at 'val', with
 * the room of 'zd' (made ready for 'c'). Touches nothing else: the helper thread runs
 * it beside the caller. false: the bytes do not inflate to a whole chunk.
 */
static bool decode_chunk(struct zdec *zd, const struct sx_direct_col *c, bool host_be,
                         const unsigned char *in, size_t n, int64_t *val) {
    const size_t raw = (size_t)c->chunk * c->size;
    if (!inflate_all(zd, in, n, zd->raw, raw))
        return false;
    const unsigned char *p = zd->raw;
    if (c->shuffle && c->size == 8 && !c->big_endian && !host_be) {
        /* the event columns: little-endian int64, straight into place */
        sx_direct_unshuffle8(p, c->chunk, (uint64_t *)val, true);
        return true;
    }
    if (c->shuffle && c->size > 1) {
        unshuffle(zd->raw, c->size, c->chunk, zd->raw + raw);
        p = zd->raw + raw;
    }
    sx_direct_decode(p, c->size, c->is_signed, c->big_endian, host_be, c->chunk, val);
    return true;
}

/*
 * The helper thread: it decodes a batch's chunks beside the caller, each the next not
 * yet taken (decode_jobs). It runs only while a reader is open (sx_direct_close joins
 * it), only when the process may run on more than one CPU (its affinity: an MPI rank
 * bound to a core gets none) and may run a thread at all (MPI's thread level, as the
 * output's writer thread), and never when SCOPE_EXPORT_THREADS is 0 or 1. It makes no
 * HDF5 or MPI call and allocates nothing: the caller reads the chunks' bytes and makes
 * its room ready.
 */
struct zhelp {
    struct sx_worker t;
    unsigned long gen, done; /* the batch given, the batch done */
    struct sx_direct *dr;
    const struct sx_direct_col *c;
    size_t n;            /* the batch's jobs */
    atomic_size_t taken; /* jobs taken, by either thread */
    size_t decoded;      /* by the helper */
    struct zdec zd;
};

static size_t decode_jobs(struct sx_direct *dr, struct zdec *zd,
                          const struct sx_direct_col *c, atomic_size_t *taken, size_t n);

static void *helper_main(void *arg) {
    struct zhelp *h = arg;
    pthread_mutex_lock(&h->t.mu);
    for (;;) {
        while (!h->t.quit && h->done == h->gen)
            pthread_cond_wait(&h->t.cv, &h->t.mu);
        if (h->t.quit)
            break;
        pthread_mutex_unlock(&h->t.mu);
        h->decoded = decode_jobs(h->dr, &h->zd, h->c, &h->taken, h->n);
        pthread_mutex_lock(&h->t.mu);
        h->done = h->gen;
        pthread_cond_broadcast(&h->t.cv);
    }
    pthread_mutex_unlock(&h->t.mu);
    return NULL;
}

/* The helper thread, started at the first batch it can share; NULL: none. */
static struct zhelp *helper_of(struct sx_direct *dr) {
    if (dr->help != NULL || !dr->help_ok)
        return dr->help;
    dr->help_ok = false; /* one try */
    struct zhelp *h = sx_calloc(1, sizeof *h);
    if (h == NULL)
        return NULL;
    h->dr = dr;
    if (!sx_worker_start(&h->t, helper_main, h)) {
        free(h);
        return NULL;
    }
    dr->help = h;
    return h;
}

static void helper_stop(struct sx_direct *dr) {
    struct zhelp *h = dr->help;
    if (h == NULL)
        return;
    sx_worker_stop(&h->t);
    zdec_free(&h->zd);
    free(h);
    dr->help = NULL;
}

/* Decode the batch's jobs, one at a time, each the next not yet taken: the caller and
 * the helper share them, whichever runs more decodes more (the helper thread shares its
 * core with the caller's others, a read-ahead beside the formatting: a fixed half each
 * left one of them waiting on the other at every batch). */
static size_t decode_jobs(struct sx_direct *dr, struct zdec *zd,
                          const struct sx_direct_col *c, atomic_size_t *taken, size_t n) {
    size_t done = 0;
    for (size_t i; (i = atomic_fetch_add_explicit(taken, 1, memory_order_relaxed)) < n;
         done++) {
        struct zjob *j = &dr->zjob[i];
        j->ok = decode_chunk(zd, c, dr->host_be, dr->zin + j->at, j->n, j->val);
    }
    return done;
}

/* Column 'c''s ring: its own, a free one, or the first made over; NULL: no memory. */
static struct zkept *ring_of(struct sx_direct *dr, const struct sx_direct_col *c) {
    struct zkept *z = NULL;
    for (int i = 0; i < ZKEEP && z == NULL; i++)
        if (dr->zkeep[i].val != NULL && dr->zkeep[i].dset == c->dset)
            z = &dr->zkeep[i];
    for (int i = 0; i < ZKEEP && z == NULL; i++)
        if (dr->zkeep[i].val == NULL)
            z = &dr->zkeep[i];
    if (z == NULL)
        z = &dr->zkeep[0];
    if (z->val != NULL && z->dset == c->dset && z->chunk == c->chunk)
        return z;
    free(z->val);
    memset(z, 0, sizeof *z);
    const uint64_t per = c->chunk * sizeof *z->val;
    z->nslot = per >= ZRING_BYTES ? 1 : (unsigned)(ZRING_BYTES / per);
    if (z->nslot > ZRING)
        z->nslot = ZRING;
    z->val = sx_malloc((size_t)(z->nslot * per));
    if (z->val == NULL)
        return NULL;
    z->dset = c->dset;
    z->chunk = c->chunk;
    for (unsigned k = 0; k < z->nslot; k++)
        z->ci[k] = UINT64_MAX;
    return z;
}

/* The batch emptied: the ring's slots it took hold their chunks, or, when it was given
 * up ('drop'), nothing. */
static void batch_clear(struct sx_direct *dr, struct zkept *z, bool drop) {
    for (unsigned k = 0; k < z->nslot; k++)
        if (z->pend[k]) {
            z->pend[k] = false;
            if (drop)
                z->ci[k] = UINT64_MAX;
        }
    dr->nzjob = dr->nzcopy = 0;
    dr->zin_len = 0;
    z->npend = 0;
}

/*
 * The batch's chunks decoded (shared with the helper thread when there is one),
 * then its copies made in order. SX_ERR_UNSUPPORTED when a chunk does not inflate.
 */
static enum sx_status batch_run(struct sx_direct *dr, const struct sx_direct_col *c,
                                struct zkept *z, const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const size_t n = dr->nzjob;
    struct zhelp *h = n >= 2 ? helper_of(dr) : NULL;
    SX_CHECK(zdec_ready(&dr->zd, c) && (h == NULL || zdec_ready(&h->zd, c)), SX_ERR_NOMEM,
             err, src, "out of memory");
    atomic_size_t alone;
    atomic_size_t *taken = &alone;
    atomic_init(&alone, 0);
    if (h != NULL) {
        pthread_mutex_lock(&h->t.mu);
        h->c = c;
        h->n = n;
        atomic_store_explicit(&h->taken, 0, memory_order_relaxed);
        h->gen++;
        pthread_cond_broadcast(&h->t.cv);
        pthread_mutex_unlock(&h->t.mu);
        taken = &h->taken;
    }
    decode_jobs(dr, &dr->zd, c, taken, n);
    if (h != NULL) {
        pthread_mutex_lock(&h->t.mu);
        while (h->done != h->gen)
            pthread_cond_wait(&h->t.cv, &h->t.mu);
        pthread_mutex_unlock(&h->t.mu);
        dr->helped += h->decoded;
    }
    for (size_t i = 0; i < n && st == SX_OK; i++)
        if (!dr->zjob[i].ok)
            st = SX_ERR_UNSUPPORTED;
    for (size_t i = 0; i < dr->nzcopy && st == SX_OK; i++) {
        const struct zcopy *y = &dr->zcopy[i];
        memmove(y->to, y->from, (size_t)y->n * sizeof *y->to);
    }
out:
    batch_clear(dr, z, st != SX_OK);
    return st;
}

/* A copy the batch makes after its chunks are decoded; runs the batch when it is full. */
static enum sx_status batch_copy(struct sx_direct *dr, const struct sx_direct_col *c,
                                 struct zkept *z, const int64_t *from, int64_t *to,
                                 uint64_t n, const char *src, struct sx_error *err) {
    dr->zcopy[dr->nzcopy++] = (struct zcopy){from, to, n};
    return dr->nzcopy == ZCOPIES ? batch_run(dr, c, z, src, err) : SX_OK;
}

/*
 * Chunk 'ci' of 'c' into the batch, to decode into 'val': its stored bytes read now,
 * through HDF5's lookup of one chunk (a walk down the chunk index; HDF5's query of a
 * chunk's address walks the whole index, one call per chunk making a run's read
 * quadratic in its chunks).
 */
static enum sx_status batch_job(struct sx_direct *dr, const struct sx_direct_col *c,
                                uint64_t ci, int64_t *val, const char *src,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    hsize_t coord = (hsize_t)(ci * c->chunk), bytes = 0;
    uint32_t mask = 0;
    if (H5Dget_chunk_storage_size(c->dset, &coord, &bytes) < 0 || bytes == 0 ||
        bytes > dr->size)
        return SX_ERR_UNSUPPORTED;
    if (dr->zin_len + bytes > dr->zin_cap) {
        size_t cap = 2 * (dr->zin_len + (size_t)bytes);
        unsigned char *p = sx_realloc(dr->zin, cap);
        SX_CHECK(p != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        dr->zin = p;
        dr->zin_cap = cap;
    }
    SX_CHECK(!sx_fault(SX_FAULT_READ, 0), SX_ERR_IO, err, src,
             "%s cannot be read; the file is truncated or damaged", src);
    if (H5Dread_chunk(c->dset, H5P_DEFAULT, &coord, &mask, dr->zin + dr->zin_len) < 0 ||
        mask != 0)
        return SX_ERR_UNSUPPORTED;
    dr->zjob[dr->nzjob++] = (struct zjob){dr->zin_len, (size_t)bytes, val, false};
    dr->zin_len += (size_t)bytes;
out:
    return st;
}

/*
 * 'take' values of chunk 'ci' of ring 'z' from 'off' to 'dst': copied from the ring
 * when it is kept, else read into the batch (straight into place when whole and read
 * the first time).
 */
static enum sx_status ring_take(struct sx_direct *dr, const struct sx_direct_col *c,
                                struct zkept *z, uint64_t ci, uint64_t off, uint64_t take,
                                int64_t *dst, const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    unsigned k = 0;
    while (k < z->nslot && z->ci[k] != ci)
        k++;
    if (k < z->nslot && !z->pend[k]) { /* kept, and whole: now */
        memcpy(dst, z->val + k * c->chunk + off, (size_t)take * sizeof *dst);
        return SX_OK;
    }
    if (k == z->nslot) {
        /* a full batch runs first; and before a slot of it would be taken again */
        const bool whole = take == c->chunk && !(z->again || ci < z->hi);
        if (dr->nzjob == ZJOBS || (!whole && z->npend == z->nslot)) {
            st = batch_run(dr, c, z, src, err);
            if (st != SX_OK)
                return st;
        }
        z->again = z->again || ci < z->hi;
        if (ci >= z->hi)
            z->hi = ci + 1;
        if (whole) /* whole, and read once: straight into place */
            return batch_job(dr, c, ci, dst, src, err);
        k = z->next;
        z->next = (k + 1) % z->nslot;
        z->ci[k] = ci;
        z->pend[k] = true;
        z->npend++;
        st = batch_job(dr, c, ci, z->val + k * c->chunk, src, err);
        if (st != SX_OK)
            return st;
    }
    return batch_copy(dr, c, z, z->val + k * c->chunk + off, dst, take, src, err);
}

enum sx_status sx_direct_read_zspans(struct sx_direct *dr, const struct sx_direct_col *c,
                                     const struct sx_direct_span *sp, size_t n,
                                     const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct zkept *z = ring_of(dr, c);
    SX_CHECK(z != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    dr->reads++;
    st = spans_in_range(c, sp, n, src, err);
    if (st != SX_OK)
        goto out;
    /* the span of this call reaching furthest so far: a delta-encoded run's end
     * slice needs the start deltas of its row, which its start slice may read too */
    const struct sx_direct_span *cov = NULL;
    for (size_t k = 0; k < n && st == SX_OK; k++) {
        uint64_t at = sp[k].start, left = sp[k].n;
        int64_t *dst = sp[k].dst;
        if (cov != NULL && at < cov->start + cov->n && left > 0) {
            const uint64_t end = cov->start + cov->n;
            const uint64_t take = left < end - at ? left : end - at;
            st = batch_copy(dr, c, z, cov->dst + (at - cov->start), dst, take, src, err);
            dst += take;
            at += take;
            left -= take;
        }
        if (cov == NULL || sp[k].start + sp[k].n > cov->start + cov->n)
            cov = &sp[k];
        while (left > 0 && st == SX_OK) {
            const uint64_t ci = at / c->chunk, off = at % c->chunk;
            const uint64_t take = left < c->chunk - off ? left : c->chunk - off;
            st = ring_take(dr, c, z, ci, off, take, dst, src, err);
            dst += take;
            at += take;
            left -= take;
        }
    }
    if (st == SX_OK)
        st = batch_run(dr, c, z, src, err);
    else
        batch_clear(dr, z, true);
out:
    return st;
}

void sx_direct_later_init(const struct sx_direct *dr, const struct sx_direct_col *start,
                          const struct sx_direct_col *end, struct sx_direct_later *out) {
    struct stat sb;
    memset(out, 0, sizeof *out);
    if (dr == NULL || !start->ok || !end->ok || fstat(dr->fd, &sb) != 0)
        return;
    out->dev = (uint64_t)sb.st_dev;
    out->ino = (uint64_t)sb.st_ino;
    out->size = dr->size;
    out->col[0] = *start;
    out->col[1] = *end;
    out->ok = true;
}

enum sx_status sx_direct_later_open(const struct sx_direct_later *dl, const char *path,
                                    int *fd, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct stat sb;
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    SX_CHECK(*fd >= 0, SX_ERR_OPEN, err, path, "%s: %s", path, strerror(errno));
    SX_CHECK(fstat(*fd, &sb) == 0 && (uint64_t)sb.st_dev == dl->dev &&
                 (uint64_t)sb.st_ino == dl->ino && (uint64_t)sb.st_size == dl->size,
             SX_ERR_FORMAT, err, path, "%s: the file changed while it was read", path);
out:
    if (st != SX_OK && *fd >= 0) {
        close(*fd);
        *fd = -1;
    }
    return st;
}

enum sx_status sx_direct_later_read(int fd, const struct sx_direct_col *c, uint64_t first,
                                    uint64_t n, int64_t *dst, const char *src,
                                    struct sx_error *err) {
    enum sx_status st = SX_OK;
    const bool host_be = sx_direct_host_big_endian();
    const bool in_place = c->size == 8 && c->big_endian == host_be;
    unsigned char tmp[65536];
    SX_CHECK(first <= c->nelem && n <= c->nelem - first, SX_ERR_FORMAT, err, src,
             "%s: events %" PRIu64 "..%" PRIu64 " are out of range", src, first,
             first + n);
    SX_CHECK(!sx_fault(SX_FAULT_READ, 0), SX_ERR_IO, err, src,
             "%s cannot be read; the file is truncated or damaged", src);
    /* into place when the bytes are already int64 of this host, else through 'tmp' */
    const uint64_t per = in_place ? n : sizeof tmp / c->size;
    for (uint64_t at = 0; at < n;) {
        const uint64_t k = n - at < per ? n - at : per;
        unsigned char *p = in_place ? (unsigned char *)(dst + at) : tmp;
        const size_t bytes = (size_t)k * c->size;
        const uint64_t off = c->addr + (first + at) * c->size;
        for (size_t got = 0; got < bytes;) {
            ssize_t r = pread(fd, p + got, bytes - got, (off_t)(off + got));
            if (r < 0 && errno == EINTR)
                continue;
            SX_CHECK(r > 0, SX_ERR_IO, err, src,
                     "%s cannot be read (events %" PRIu64 "..%" PRIu64
                     "); the file is truncated or damaged",
                     src, first, first + n);
            got += (size_t)r;
        }
        if (!in_place)
            sx_direct_decode(tmp, c->size, c->is_signed, c->big_endian, host_be, k,
                             dst + at);
        at += k;
    }
out:
    return st;
}

enum sx_status sx_direct_read_points(struct sx_direct *dr, const struct sx_direct_col *c,
                                     const hsize_t *pts, size_t n, int64_t *out,
                                     const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    dr->reads++;
    if (dr->iwin == NULL)
        dr->iwin = sx_file_win_new(dr->fd, WIN, NWIN);
    SX_CHECK(dr->iwin != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t k = 0; k < n; k++) {
        uint64_t r = pts[k];
        unsigned char b[8];
        SX_CHECK(r < c->nelem && c->size <= sizeof b, SX_ERR_FORMAT, err, src,
                 "%s: row %" PRIu64 " out of range", src, r);
        st = sx_file_win_read(dr->iwin, c->addr + r * c->size, c->size, b, src, err);
        if (st != SX_OK)
            goto out;
        sx_direct_decode(b, c->size, c->is_signed, c->big_endian, dr->host_be, 1,
                         &out[k]);
    }
out:
    return st;
}

enum sx_status sx_direct_point_ints(struct sx_direct *dr, const struct sx_direct_col *c,
                                    hid_t d, const hsize_t *pts, size_t n, int64_t *out,
                                    const char *src, struct sx_error *err) {
    if (dr != NULL && c->ok)
        return sx_direct_read_points(dr, c, pts, n, out, src, err);
    return sx_h5_read_point_ints(d, pts, n, out, src, err);
}

enum sx_status sx_direct_strings_open(struct sx_direct *dr, hid_t d, const char *src,
                                      struct sx_vlen **out, struct sx_error *err) {
    *out = NULL;
    if (dr == NULL)
        return SX_OK;
    return sx_vlen_open(d, dr->fd, &dr->vfile, src, out, err);
}

enum sx_status sx_direct_read_strings(struct sx_direct *dr, struct sx_vlen **v, hid_t d,
                                      const hsize_t *pts, hsize_t first, size_t n,
                                      struct sx_buf *text, size_t *off, const char *src,
                                      struct sx_error *err) {
    if (dr != NULL && *v != NULL) {
        dr->reads++;
        enum sx_status st = sx_vlen_read(*v, pts, first, n, text, off, src, err);
        if (st != SX_ERR_UNSUPPORTED)
            return st;
        /* a collection of a version the walker does not know: HDF5 knows more */
        sx_vlen_close(*v);
        *v = NULL;
    }
    return sx_h5_read_point_strings(d, pts, first, n, text, off, src, err);
}
