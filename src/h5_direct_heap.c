/* h5_direct_heap.c - (h5_direct) variable-length strings read from the global heap
 */
#include "h5_direct_heap.h"

#include "fault.h"
#include "h5_direct_win.h"
#include "read_batch.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The file format (HDF5 File Format Specification, "Global Heap" and the
 * variable-length datatype): each element of the dataset is a 4-byte
 * little-endian length, then a global heap ID, the collection's address
 * (size of offsets) and a 4-byte object index; address 0 is a NULL string.
 * A collection is "GCOL", version 1, 3 reserved bytes, its size (size of
 * lengths, header included), then its objects: 2-byte index, 2-byte
 * reference count, 4 reserved bytes, size (size of lengths), the data
 * padded to 8 bytes; both headers are padded to 8 bytes too. Index 0 is
 * the free space (its size counts its header), which HDF5 keeps last. The
 * walk reads on as HDF5's does: space too small for an object header is
 * free, and an object that overruns the collection ends it.
 */

/* Reads less than GAP bytes apart are merged into one of at most SPAN bytes. */
enum { GAP = 4096, SPAN = 1 << 20, FIRST_READ = 1 << 16 };
/* A collection's first read when a few values are checked: HDF5's smallest collection
 * (H5HG_MINSIZE), so that a string attribute's check reads 4 KiB, not 64 */
enum { FEW = 64, FIRST_READ_FEW = 4096 };
/* The element table is read through NWIN kept windows of WIN bytes (1 MiB). */
enum { WIN = 1 << 16, NWIN = 16 };
/* A table of at most SMALL_TABLE bytes is read whole instead. */
enum { SMALL_TABLE = 4096 };
/* A table larger than the windows: rows less than ELEM_GAP bytes apart read together,
 * ELEM_BATCH bytes a batch of reads at most (read_element_runs). */
enum { ELEM_GAP = 4096, ELEM_BATCH = 1 << 20 };

/*
 * A collection read once: where its objects lie are obj[first .. first + nobj),
 * by index - 1, each the offset of the object's header in the collection / 8
 * (headers are 8-aligned; 0: no such object). The header is read again with
 * the string, which checks it and its size: 4 bytes per object are kept.
 */
struct gcol {
    uint64_t addr; /* as heap IDs name it (relative to the base); 0: free slot */
    size_t first;
    uint32_t nobj;
};

/* Bytes of a window over the heap. */
#define HEAP_WIN ((size_t)64 << 10)

struct sx_vlen {
    int fd;
    uint64_t base;  /* the user block: heap addresses are relative to it */
    uint64_t table; /* file offset of the dataset's elements */
    uint64_t nelem;
    uint64_t file_size;
    unsigned sa, sl;  /* size of offsets, size of lengths */
    size_t esize;     /* bytes per element */
    size_t objhdr;    /* bytes of an object's header, and of a collection's */
    struct gcol *col; /* open addressing on the address */
    size_t ncol, col_cap;
    uint32_t *obj;
    size_t nobj, obj_cap;
    struct sx_file_win *win; /* over the element table; NULL: the table is small, 'tab' */
    unsigned char *tab;      /* a small table whole, read at the first read of it */
    struct sx_file_win *hwin; /* over the heap (NULL: pread each) */
    /* a large table's runs of rows (read_element_runs), in batches of reads: their
     * bytes, and the ring that reads them (none: pread each) */
    unsigned char *ebuf;
    size_t ebuf_cap;
    struct sx_read_ring uring;
    /* a view of the file's mapping (read_batch.h), p NULL: none, read; its own, as a
     * column's strings may be read in a helper thread beside another's */
    struct sx_read_map map;
    size_t first_read; /* a collection's first read: its header and what follows */
};

/* One requested row on its way through a read. */
struct req {
    uint64_t row;
    size_t k;      /* its place in the caller's rows */
    uint64_t addr; /* collection; 0: a NULL string */
    uint64_t at;   /* file offset of its bytes, once known */
    uint32_t idx;
    uint32_t len; /* 0 for an empty or NULL string */
};

static uint64_t get_le(const unsigned char *p, unsigned size) {
    uint64_t u = 0;
    for (unsigned b = 0; b < size; b++)
        u |= (uint64_t)p[b] << (8 * b);
    return u;
}

static int cmp_row(const void *a, const void *b) {
    const struct req *x = a, *y = b;
    return x->row < y->row ? -1 : x->row > y->row;
}

static int cmp_addr(const void *a, const void *b) {
    const struct req *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int cmp_at(const void *a, const void *b) {
    const struct req *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

/*
 * Sort requests that often come sorted already (a column read in row order), or in a few
 * sorted runs (a column's strings lie in the heap in row order but for a few; a
 * read-ahead's rows are those of a few blocks, each in order): up to FEW_RUNS runs are
 * merged, a pass per two runs, instead of a whole qsort (a merge sort that copies every
 * element log n times: 5% of the many-row export's setup). No memory for the merge:
 * qsort, as before.
 */
enum { FEW_RUNS = 16 };

static void sort_reqs(struct req *rq, size_t n, int (*cmp)(const void *, const void *)) {
    size_t at[FEW_RUNS + 1], nrun = 1; /* run k: rq[at[k] .. at[k + 1]) */
    at[0] = 0;
    for (size_t i = 1; i < n; i++)
        if (cmp(&rq[i - 1], &rq[i]) > 0) {
            if (nrun == FEW_RUNS) {
                qsort(rq, n, sizeof *rq, cmp);
                return;
            }
            at[nrun++] = i;
        }
    if (nrun == 1)
        return;
    at[nrun] = n;
    struct req *tmp = sx_malloc(n * sizeof *tmp);
    if (tmp == NULL) {
        qsort(rq, n, sizeof *rq, cmp);
        return;
    }
    struct req *from = rq, *to = tmp;
    while (nrun > 1) {
        size_t k = 0, m = 0;
        for (; k + 1 < nrun; k += 2) { /* runs k and k + 1 into one */
            size_t a = at[k], b = at[k + 1], o = at[k];
            const size_t ae = at[k + 1], be = at[k + 2];
            while (a < ae && b < be)
                to[o++] = cmp(&from[b], &from[a]) < 0 ? from[b++] : from[a++];
            memcpy(&to[o], &from[a], (ae - a) * sizeof *to);
            o += ae - a;
            memcpy(&to[o], &from[b], (be - b) * sizeof *to);
            at[m++] = at[k];
        }
        if (k < nrun) { /* an odd run out, as it is */
            memcpy(&to[at[k]], &from[at[k]], (n - at[k]) * sizeof *to);
            at[m++] = at[k];
        }
        at[m] = n;
        nrun = m;
        struct req *t = from;
        from = to;
        to = t;
    }
    if (from != rq)
        memcpy(rq, from, n * sizeof *rq);
    free(tmp);
}

/* 'n' bytes at file offset 'at' into 'buf'; may fail on purpose (SX_FAULT_READ). */
static enum sx_status read_at(const struct sx_vlen *v, void *buf, size_t n, uint64_t at,
                              const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t got = 0;
    /* the heap's objects lie side by side: one read per window, not per object (a
     * read past the end goes on to the message below) */
    if (v->hwin != NULL && at <= v->file_size && n <= v->file_size - at)
        return sx_file_win_read(v->hwin, at, n, buf, src, err);
    SX_CHECK(!sx_fault(SX_FAULT_READ, 0), SX_ERR_IO, err, src,
             "%s cannot be read; the file is truncated or damaged", src);
    while (got < n) {
        ssize_t k = pread(v->fd, (unsigned char *)buf + got, n - got, (off_t)(at + got));
        if (k < 0 && errno == EINTR)
            continue;
        SX_CHECK(k > 0, SX_ERR_IO, err, src,
                 "%s cannot be read (%zu bytes at offset %" PRIu64
                 "); the file is truncated or damaged",
                 src, n, at);
        got += (size_t)k;
    }
out:
    return st;
}

/* Make '*buf' hold at least 'n' bytes; its contents need not survive. */
static bool grow_buf(unsigned char **buf, size_t *cap, size_t n) {
    if (n <= *cap)
        return true;
    free(*buf);
    *buf = sx_malloc(n);
    *cap = *buf != NULL ? n : 0;
    return *buf != NULL;
}

static size_t col_slot(const struct sx_vlen *v, uint64_t addr) {
    size_t mask = v->col_cap - 1;
    size_t i = (size_t)(((addr >> 3) * 0x9E3779B97F4A7C15ULL) >> 20) & mask;
    while (v->col[i].addr != 0 && v->col[i].addr != addr)
        i = (i + 1) & mask;
    return i;
}

static const struct gcol *col_find(const struct sx_vlen *v, uint64_t addr) {
    const struct gcol *c = &v->col[col_slot(v, addr)];
    return c->addr == addr ? c : NULL;
}

/* Room for one more collection in the table, kept at most half full. */
static bool col_reserve(struct sx_vlen *v) {
    if ((v->ncol + 1) * 2 <= v->col_cap)
        return true;
    struct sx_vlen grown = *v;
    grown.col_cap = v->col_cap * 2;
    grown.col = sx_calloc(grown.col_cap, sizeof *grown.col);
    if (grown.col == NULL)
        return false;
    for (size_t i = 0; i < v->col_cap; i++)
        if (v->col[i].addr != 0)
            grown.col[col_slot(&grown, v->col[i].addr)] = v->col[i];
    free(v->col);
    v->col = grown.col;
    v->col_cap = grown.col_cap;
    return true;
}

/*
 * Read the collection at 'addr' whole into '*buf' and add where its objects
 * lie to the tables. 'r' is the row that led here, for errors.
 */
static enum sx_status load_col(struct sx_vlen *v, uint64_t addr, const struct req *r,
                               unsigned char **buf, size_t *cap, const char *src,
                               struct sx_error *err) {
    enum sx_status st = SX_OK;
    const size_t hdr = v->objhdr, objhdr = v->objhdr;
    const size_t first = v->nobj;
    uint32_t count = 0;
    char where[1200];
    snprintf(where, sizeof where,
             "%.1000s[%" PRIu64 "]: the global heap collection at address %" PRIu64, src,
             r->row, addr);
    SX_CHECK(v->file_size >= hdr && addr < v->file_size &&
                 v->base + addr <= v->file_size - hdr,
             SX_ERR_FORMAT, err, src,
             "%s lies beyond the end of the file; the file is truncated or damaged",
             where);
    const uint64_t at = v->base + addr;
    size_t got =
        v->file_size - at < v->first_read ? (size_t)(v->file_size - at) : v->first_read;
    SX_CHECK(grow_buf(buf, cap, got), SX_ERR_NOMEM, err, src, "out of memory");
    st = read_at(v, *buf, got, at, src, err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(memcmp(*buf, "GCOL", 4) == 0, SX_ERR_FORMAT, err, src,
             "%s has no GCOL signature; the file is truncated or damaged", where);
    /* another version is not damage, only not ours to read: HDF5 reads it (err kept
     * clean, so that the caller can fall back) */
    if ((*buf)[4] != 1) {
        st = SX_ERR_UNSUPPORTED;
        goto out;
    }
    uint64_t size = get_le(*buf + 8, v->sl);
    SX_CHECK(size >= hdr && size <= v->file_size - at && size <= UINT32_MAX,
             SX_ERR_FORMAT, err, src,
             "%s claims %" PRIu64 " bytes, which the file cannot hold; the file is "
             "truncated or damaged",
             where, size);
    if (size > got) {
        unsigned char *more = sx_realloc(*buf, (size_t)size);
        SX_CHECK(more != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        *buf = more;
        *cap = (size_t)size;
        st = read_at(v, *buf + got, (size_t)size - got, at + got, src, err);
        if (st != SX_OK)
            goto out;
    }
    SX_CHECK(col_reserve(v), SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t p = hdr; p + objhdr <= size;) {
        const unsigned char *o = *buf + p;
        uint32_t idx = (uint32_t)get_le(o, 2);
        uint64_t osize = get_le(o + 8, v->sl);
        if (idx == 0) { /* free space, its header included */
            if (osize < objhdr || osize > size - p || osize % 8 != 0)
                break;
            p += (size_t)osize;
            continue;
        }
        /*
         * As in HDF5, an object that overruns the collection ends the walk
         * and is not there: a damaged tail costs only the strings in it.
         */
        if (osize > size - p - objhdr)
            break;
        if (idx > count) {
            if (first + idx > v->obj_cap) {
                size_t ncap = v->obj_cap ? v->obj_cap : 1024;
                while (ncap < first + idx)
                    ncap *= 2;
                uint32_t *g = sx_realloc(v->obj, ncap * sizeof *g);
                SX_CHECK(g != NULL, SX_ERR_NOMEM, err, src, "out of memory");
                v->obj = g;
                v->obj_cap = ncap;
            }
            memset(v->obj + first + count, 0, (idx - count) * sizeof *v->obj);
            count = idx;
        }
        v->obj[first + idx - 1] = (uint32_t)(p / 8);
        p += objhdr + ((osize + 7) & ~(uint64_t)7);
    }
    struct gcol *c = &v->col[col_slot(v, addr)];
    c->addr = addr;
    c->first = first;
    c->nobj = count;
    v->ncol++;
    v->nobj = first + count;
out:
    return st;
}

/*
 * The reads rd[0 .. nr) (lengths and offsets set, 'bytes' in all) into '*buf' (of '*cap'
 * bytes, grown), side by side, in one batch where a ring is to be had; each may fail on
 * purpose (SX_FAULT_READ). An error names the first read that could not be had whole.
 */
static enum sx_status read_side_by_side(struct sx_vlen *v, struct sx_read_one *rd,
                                        size_t nr, size_t bytes, unsigned char **buf,
                                        size_t *cap, const char *src,
                                        struct sx_error *err) {
    enum sx_status st = SX_OK;
    SX_CHECK(grow_buf(buf, cap, bytes), SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t k = 0, at = 0; k < nr; at += rd[k].len, k++) {
        rd[k].to = *buf + at;
        SX_CHECK(!sx_fault(SX_FAULT_READ, 0), SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
    }
    const size_t bad =
        sx_read_all(&v->map, sx_read_ring_for(&v->uring, nr), v->fd, rd, nr);
    SX_CHECK(bad == nr, SX_ERR_IO, err, src,
             "%s cannot be read (%zu bytes at offset %" PRIu64
             "); the file is truncated or damaged",
             src, rd[bad < nr ? bad : 0].len, rd[bad < nr ? bad : 0].off);
out:
    return st;
}

/* Request 'r's length and heap ID from its element 'e'. */
static void parse_element(const struct sx_vlen *v, const unsigned char *e,
                          struct req *r) {
    r->len = (uint32_t)get_le(e, 4);
    r->addr = get_le(e + 4, v->sa);
    r->idx = (uint32_t)get_le(e + 4 + v->sa, 4);
    if (r->addr == 0) /* HDF5's NULL, whatever the length says */
        r->len = 0;
}

/*
 * The elements of rows 'rq[0..n)', sorted by row, of a table larger than the windows
 * hold: one read per run of rows less than ELEM_GAP bytes apart, the runs in batches of
 * at most ELEM_BATCH bytes, each batch in one call where a ring is to be had
 * (read_batch.h). A job of a many-row run wants a few hundred bytes of each rank's rows
 * from all over the table: windows of 64 KiB read ~100 times the bytes wanted, one
 * pread each (4096 x 64 regions: 112k of them, 7 GB copied).
 */
static enum sx_status read_element_runs(struct sx_vlen *v, struct req *rq, size_t n,
                                        const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_read_one rd[SX_READ_BATCH_MAX];
    size_t from[SX_READ_BATCH_MAX + 1]; /* run k: requests from[k] .. from[k + 1] */
    const uint64_t gap = ELEM_GAP / v->esize, most = ELEM_BATCH / v->esize;
    size_t i = 0;
    while (i < n) {
        size_t nr = 0, bytes = 0;
        while (i < n && nr < SX_READ_BATCH_MAX) {
            const uint64_t lo = rq[i].row;
            uint64_t hi = lo + 1;
            size_t j = i + 1;
            while (j < n && rq[j].row <= hi + gap && rq[j].row - lo < most) {
                if (rq[j].row + 1 > hi)
                    hi = rq[j].row + 1;
                j++;
            }
            const size_t len = (size_t)(hi - lo) * v->esize;
            if (nr > 0 && bytes + len > ELEM_BATCH)
                break; /* the next batch's */
            from[nr] = i;
            rd[nr] = (struct sx_read_one){NULL, len, v->table + lo * v->esize, 0};
            bytes += len;
            nr++;
            i = j;
        }
        from[nr] = i;
        st = read_side_by_side(v, rd, nr, bytes, &v->ebuf, &v->ebuf_cap, src, err);
        if (st != SX_OK)
            goto out;
        for (size_t k = 0; k < nr; k++) {
            const unsigned char *t = rd[k].to;
            const uint64_t lo = rq[from[k]].row;
            for (size_t m = from[k]; m < from[k + 1]; m++)
                parse_element(v, t + (rq[m].row - lo) * v->esize, &rq[m]);
        }
    }
out:
    return st;
}

/*
 * The elements (length, heap ID) of rows 'rq[0..n)', sorted by row: of a small table
 * from the table whole, of one the windows hold (NWIN x WIN) through them (a block's
 * rows lie far apart in it, and the next block's rows in the same windows), of a larger
 * one in runs (read_element_runs).
 */
static enum sx_status read_elements(struct sx_vlen *v, struct req *rq, size_t n,
                                    const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    unsigned char e[32];
    if (v->win != NULL && v->nelem * v->esize > (uint64_t)WIN * NWIN)
        return read_element_runs(v, rq, n, src, err);
    if (v->win == NULL && v->tab == NULL) {
        const size_t bytes = (size_t)v->nelem * v->esize;
        unsigned char *tab = sx_malloc(bytes + 1);
        SX_CHECK(tab != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        st = read_at(v, tab, bytes, v->table, src, err);
        if (st != SX_OK) {
            free(tab);
            goto out;
        }
        v->tab = tab;
    }
    for (size_t m = 0; m < n; m++) {
        if (v->tab != NULL)
            memcpy(e, v->tab + rq[m].row * v->esize, v->esize);
        else
            st = sx_file_win_read(v->win, v->table + rq[m].row * v->esize, v->esize, e,
                                  src, err);
        if (st != SX_OK)
            goto out;
        parse_element(v, e, &rq[m]);
    }
out:
    return st;
}

/* Whether object header 'h' is that of the string of 'r' and holds all of it. */
static enum sx_status check_obj(const struct sx_vlen *v, const unsigned char *h,
                                const struct req *r, const char *src,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    uint64_t osize = get_le(h + 8, v->sl);
    SX_CHECK(get_le(h, 2) == r->idx, SX_ERR_FORMAT, err, src,
             "%s[%" PRIu64 "]: object %" PRIu32
             " of the global heap collection at address %" PRIu64
             " is missing; the file is truncated or damaged",
             src, r->row, r->idx, r->addr);
    SX_CHECK(osize >= r->len, SX_ERR_FORMAT, err, src,
             "%s[%" PRIu64 "]: a string of %" PRIu32 " bytes in object %" PRIu32
             " of %" PRIu64 " bytes of the global heap collection at address %" PRIu64
             "; the file is truncated or damaged",
             src, r->row, r->len, r->idx, osize, r->addr);
out:
    return st;
}

/* The pending strings 'rq[0..n)', object headers first, into 'text': reads merged of
 * strings less than GAP bytes apart, up to SPAN bytes, in batches of at most SPAN bytes
 * (one call each where a ring is to be had: a job of a many-row run reads a string or
 * two of each rank's, a hundred bytes each, from all over the heap). */
static enum sx_status read_strings(struct sx_vlen *v, struct req *rq, size_t n,
                                   struct sx_buf *text, const size_t *off,
                                   unsigned char **buf, size_t *cap, const char *src,
                                   struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_read_one rd[SX_READ_BATCH_MAX];
    size_t from[SX_READ_BATCH_MAX + 1]; /* read k: requests from[k] .. from[k + 1] */
    sort_reqs(rq, n, cmp_at);
    size_t i = 0;
    while (i < n) {
        size_t nr = 0, bytes = 0;
        while (i < n && nr < SX_READ_BATCH_MAX) {
            uint64_t lo = rq[i].at, hi = lo + v->objhdr + rq[i].len;
            size_t j = i + 1;
            while (j < n && rq[j].at <= hi + GAP) {
                uint64_t end = rq[j].at + v->objhdr + rq[j].len;
                if (end < hi)
                    end = hi;
                if (end - lo > SPAN)
                    break;
                hi = end;
                j++;
            }
            const size_t len = (size_t)(hi - lo);
            if (nr > 0 && bytes + len > SPAN)
                break; /* the next batch's */
            from[nr] = i;
            rd[nr] = (struct sx_read_one){NULL, len, lo, 0};
            bytes += len;
            nr++;
            i = j;
        }
        from[nr] = i;
        st = read_side_by_side(v, rd, nr, bytes, buf, cap, src, err);
        if (st != SX_OK)
            goto out;
        for (size_t k = 0; k < nr; k++) {
            const unsigned char *t = rd[k].to;
            for (size_t m = from[k]; m < from[k + 1]; m++) {
                const unsigned char *h = t + (rq[m].at - rd[k].off);
                st = check_obj(v, h, &rq[m], src, err);
                if (st != SX_OK)
                    goto out;
                memcpy(text->data + off[rq[m].k], h + v->objhdr, rq[m].len);
            }
        }
    }
out:
    return st;
}

enum sx_status sx_vlen_claim(uint64_t need, bool count, uint64_t *total,
                             uint64_t file_size, const char *src, uint64_t row,
                             struct sx_error *err) {
    enum sx_status st = SX_OK;
    SX_CHECK(need <= file_size, SX_ERR_FORMAT, err, src,
             "%s[%" PRIu64 "] claims a value of %" PRIu64
             " bytes, more than the file's %" PRIu64
             " bytes; the file is truncated or damaged",
             src, row, need, file_size);
    if (count)
        *total += need;
    SX_CHECK(*total <= file_size + 65536, SX_ERR_FORMAT, err, src,
             "%s: its variable-length values up to [%" PRIu64 "] claim %" PRIu64
             " bytes, more than the file's %" PRIu64 " bytes; the file is truncated or "
             "damaged",
             src, row, *total, file_size);
out:
    return st;
}

enum sx_status sx_vlen_read(struct sx_vlen *v, const hsize_t *rows, hsize_t first,
                            size_t n, struct sx_buf *text, size_t *off, const char *src,
                            struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct req *rq = NULL;
    unsigned char *buf = NULL;
    size_t cap = 0, npend = 0;
    sx_buf_reset(text);
    off[0] = 0;
    if (n == 0)
        goto out;
    rq = sx_malloc(n * sizeof *rq);
    SX_CHECK(rq != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t k = 0; k < n; k++) {
        const uint64_t row = rows != NULL ? rows[k] : first + k;
        SX_CHECK(row < v->nelem, SX_ERR_FORMAT, err, src,
                 "%s: row %" PRIu64 " out of range (%" PRIu64 " rows)", src, row,
                 v->nelem);
        rq[k].row = row;
        rq[k].k = k;
    }
    sort_reqs(rq, n, cmp_row);
    st = read_elements(v, rq, n, src, err);
    if (st != SX_OK)
        goto out;
    /* string k goes to text->data[off[k] ..) until NULs are dropped at the end; the
     * lengths claimed are held to the file's size, as the vlen guard holds them before
     * HDF5 reads (h5_util.h), before any room is taken for them */
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        st = sx_vlen_claim(rq[i].len, i == 0 || rq[i].row != rq[i - 1].row, &total,
                           v->file_size, src, rq[i].row, err);
        if (st != SX_OK)
            goto out;
        off[rq[i].k + 1] = rq[i].len;
    }
    for (size_t k = 0; k < n; k++)
        off[k + 1] += off[k];
    SX_CHECK(sx_buf_reserve(text, off[n]), SX_ERR_NOMEM, err, src, "out of memory");

    /* collection by collection: a collection read now gives its strings at once */
    sort_reqs(rq, n, cmp_addr);
    size_t i = 0;
    while (i < n) {
        if (rq[i].len == 0) {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < n && rq[j].addr == rq[i].addr)
            j++;
        const struct gcol *c = col_find(v, rq[i].addr);
        bool fresh = c == NULL;
        if (fresh) {
            st = load_col(v, rq[i].addr, &rq[i], &buf, &cap, src, err);
            if (st != SX_OK)
                goto out;
            c = col_find(v, rq[i].addr);
        }
        for (size_t m = i; m < j; m++) {
            const struct req *r = &rq[m];
            if (r->len == 0)
                continue;
            uint64_t o = r->idx >= 1 && r->idx <= c->nobj
                             ? (uint64_t)v->obj[c->first + r->idx - 1] * 8
                             : 0;
            SX_CHECK(o != 0, SX_ERR_FORMAT, err, src,
                     "%s[%" PRIu64 "]: object %" PRIu32
                     " of the global heap collection at address %" PRIu64
                     " is missing; the file is truncated or damaged",
                     src, r->row, r->idx, r->addr);
            if (fresh) {
                st = check_obj(v, buf + o, r, src, err);
                if (st != SX_OK)
                    goto out;
                memcpy(text->data + off[r->k], buf + o + v->objhdr, r->len);
            } else {
                rq[npend] = *r;
                rq[npend++].at = v->base + r->addr + o;
            }
        }
        i = j;
    }
    st = read_strings(v, rq, npend, text, off, &buf, &cap, src, err);
    if (st != SX_OK)
        goto out;

    /* H5Dread gives C strings: each ends at its first NUL */
    size_t w = 0, start = 0;
    for (size_t k = 0; k < n; k++) {
        size_t end = off[k + 1], len = end - start;
        const char *nul = len > 0 ? memchr(text->data + start, '\0', len) : NULL;
        if (nul != NULL)
            len = (size_t)(nul - (text->data + start));
        if (len > 0 && w != start)
            memmove(text->data + w, text->data + start, len);
        w += len;
        off[k + 1] = w;
        start = end;
    }
    text->len = w;
    if (text->data != NULL)
        text->data[w] = '\0';
out:
    sx_read_map_release(&v->map);
    if (st != SX_OK) {
        sx_buf_reset(text);
        for (size_t k = 0; k <= n; k++)
            off[k] = 0;
    }
    free(buf);
    free(rq);
    return st;
}

enum sx_status sx_vlen_check_heap(int fd, uint64_t file_size, uint64_t base, unsigned sa,
                                  unsigned sl, const unsigned char *elems, size_t n,
                                  uint64_t unit, const uint64_t *rows, const char *src,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    unsigned char *buf = NULL, hdr[32];
    size_t cap = 0;
    struct sx_vlen v = {.fd = fd,
                        .base = base,
                        .file_size = file_size,
                        .sa = sa,
                        .sl = sl,
                        .esize = 4 + sa + 4,
                        .objhdr = (8 + sl + 7) & ~(size_t)7,
                        .col_cap = 16,
                        .first_read = n < FEW ? FIRST_READ_FEW : FIRST_READ};
    v.col = sx_calloc(v.col_cap, sizeof *v.col);
    SX_CHECK(v.col != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    /* HEAP_WIN bytes a window; without the memory, or for a few values (an attribute's),
     * a pread per object */
    v.hwin = n < FEW ? NULL : sx_file_win_new(fd, HEAP_WIN, 2);
    for (size_t k = 0; k < n; k++) {
        const unsigned char *e = elems + k * v.esize;
        struct req r = {.row = rows != NULL ? rows[k] : k,
                        .k = k,
                        .addr = get_le(e + 4, sa),
                        .idx = (uint32_t)get_le(e + 4 + sa, 4)};
        uint64_t len = get_le(e, 4) * unit;
        if (r.addr == 0 || len == 0)
            continue;
        SX_CHECK(len <= UINT32_MAX, SX_ERR_FORMAT, err, src,
                 "%s[%" PRIu64 "] claims a value of %" PRIu64
                 " bytes; the file is truncated or damaged",
                 src, r.row, len);
        r.len = (uint32_t)len;
        const struct gcol *c = col_find(&v, r.addr);
        const bool fresh = c == NULL; /* its collection whole in 'buf' */
        if (fresh) {
            st = load_col(&v, r.addr, &r, &buf, &cap, src, err);
            if (st == SX_ERR_UNSUPPORTED) {
                st = SX_OK; /* a collection HDF5 knows and we do not: HDF5 checks it */
                goto out;
            }
            if (st != SX_OK)
                goto out;
            c = col_find(&v, r.addr);
        }
        uint64_t o = r.idx >= 1 && r.idx <= c->nobj
                         ? (uint64_t)v.obj[c->first + r.idx - 1] * 8
                         : 0;
        SX_CHECK(o != 0, SX_ERR_FORMAT, err, src,
                 "%s[%" PRIu64 "]: object %" PRIu32
                 " of the global heap collection at address %" PRIu64
                 " is missing; the file is truncated or damaged",
                 src, r.row, r.idx, r.addr);
        /* the header from the collection just read; else read again */
        if (fresh) {
            st = check_obj(&v, buf + o, &r, src, err);
        } else {
            st = read_at(&v, hdr, v.objhdr, v.base + r.addr + o, src, err);
            if (st == SX_OK)
                st = check_obj(&v, hdr, &r, src, err);
        }
        if (st != SX_OK)
            goto out;
    }
out:
    sx_file_win_free(v.hwin);
    free(buf);
    free(v.col);
    free(v.obj);
    return st;
}

/* The sizes of dset's file: its superblock's lengths and its user block. */
static void vlen_file_of(hid_t dset, struct sx_vlen_file *vf) {
    const hid_t file = H5Iget_file_id(dset);
    const hid_t fcpl = file >= 0 ? H5Fget_create_plist(file) : -1;
    size_t sa = 0, sl = 0;
    hsize_t ub = 0;
    *vf = (struct sx_vlen_file){.known = true};
    vf->ok = fcpl >= 0 && H5Pget_sizes(fcpl, &sa, &sl) >= 0 &&
             H5Pget_userblock(fcpl, &ub) >= 0 && sa >= 2 && sa <= 8 && sl >= 2 && sl <= 8;
    vf->sa = (unsigned)sa;
    vf->sl = (unsigned)sl;
    vf->userblock = (uint64_t)ub;
    if (fcpl >= 0)
        H5Pclose(fcpl);
    if (file >= 0)
        H5Fclose(file);
}

enum sx_status sx_vlen_open(hid_t dset, int fd, struct sx_vlen_file *vf, const char *src,
                            struct sx_vlen **out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t t = -1, dcpl = -1, sp = -1;
    struct sx_vlen_file here;
    struct sx_vlen *v = NULL;
    struct stat sb;
    *out = NULL;
    if (fd < 0 || fstat(fd, &sb) != 0 || sb.st_size <= 0)
        goto out;
    t = H5Dget_type(dset);
    if (t < 0 || H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) <= 0)
        goto out;
    dcpl = H5Dget_create_plist(dset);
    if (dcpl < 0 || H5Pget_layout(dcpl) != H5D_CONTIGUOUS || H5Pget_nfilters(dcpl) != 0 ||
        H5Pget_external_count(dcpl) != 0)
        goto out;
    sp = H5Dget_space(dset);
    hsize_t dim = 0;
    if (sp < 0 || H5Sget_simple_extent_ndims(sp) != 1 ||
        H5Sget_simple_extent_dims(sp, &dim, NULL) != 1)
        goto out;
    if (vf == NULL)
        vf = &here;
    if (vf == &here || !vf->known)
        vlen_file_of(dset, vf);
    if (!vf->ok)
        goto out;
    const uint64_t sa = vf->sa, sl = vf->sl, ub = vf->userblock;
    /* the dataset's bytes, all of them in the file: else HDF5 knows better */
    haddr_t addr = H5Dget_offset(dset);
    uint64_t size = (uint64_t)sb.st_size, esize = 4 + sa + 4;
    if (addr == HADDR_UNDEF || addr > size || dim > (size - addr) / esize ||
        H5Dget_storage_size(dset) != dim * esize || ub >= size)
        goto out;
    v = sx_calloc(1, sizeof *v);
    SX_CHECK(v != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    v->fd = fd;
    sx_read_map_view(vf->map, &v->map);
    v->base = ub;
    v->table = addr;
    v->nelem = dim;
    v->file_size = size;
    v->sa = (unsigned)sa;
    v->sl = (unsigned)sl;
    v->esize = (size_t)esize;
    v->objhdr = (8 + sl + 7) & ~(size_t)7; /* headers are padded to 8 bytes */
    /* a table of a few rows (a run's many small files) is read whole, and its strings'
     * collection from its first page: windows of WIN bytes would read a hundred times
     * the bytes wanted, for each string dataset of each file */
    const bool small = dim * esize <= SMALL_TABLE;
    v->first_read = small ? FIRST_READ_FEW : FIRST_READ;
    v->col_cap = 64;
    v->col = sx_calloc(v->col_cap, sizeof *v->col);
    v->win = small ? NULL : sx_file_win_new(fd, WIN, NWIN);
    SX_CHECK(v->col != NULL && (small || v->win != NULL), SX_ERR_NOMEM, err, src,
             "out of memory");
    *out = v;
    v = NULL;
out:
    sx_vlen_close(v);
    if (sp >= 0)
        H5Sclose(sp);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (t >= 0)
        H5Tclose(t);
    return st;
}

void sx_vlen_close(struct sx_vlen *v) {
    if (v == NULL)
        return;
    sx_file_win_free(v->win);
    sx_read_map_close(&v->map);
    sx_read_batch_free(v->uring.b);
    free(v->ebuf);
    free(v->tab);
    free(v->col);
    free(v->obj);
    free(v);
}
