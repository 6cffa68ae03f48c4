/* native_read.c - find and read per-process .spt traces and .h5 profiles */
#include "h5_read.h"
#include "json_value.h"
#include "native.h"
#include "run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

void sx_nfile_clear(struct sx_nfile *f) {
    free(f->path);
    free(f->ranks);
    for (size_t i = 0; i < f->nrows; i++) {
        free(f->rows[i].name);
        free(f->rows[i].source_file);
        free(f->rows[i].source_text);
    }
    free(f->rows);
    sx_value_free(&f->metadata);
    *f = (struct sx_nfile){0};
}

/* ------------------------------------------------------------------ */
/* Paths, as pathlib prints and orders them                            */

char *sx_native_path_norm(const char *s) {
    size_t n = strlen(s);
    char *out = sx_malloc(n + 2);
    size_t len = 0;
    if (out == NULL)
        return NULL;
    if (s[0] == '/') { /* POSIX keeps exactly two leading slashes */
        out[len++] = '/';
        if (s[1] == '/' && s[2] != '/')
            out[len++] = '/';
    }
    const size_t root = len;
    const char *p = s;
    while (*p != '\0') {
        while (*p == '/')
            p++;
        const char *e = p;
        while (*e != '\0' && *e != '/')
            e++;
        size_t k = (size_t)(e - p);
        if (k > 0 && !(k == 1 && p[0] == '.')) {
            if (len > root)
                out[len++] = '/';
            memcpy(out + len, p, k);
            len += k;
        }
        p = e;
    }
    if (len == 0)
        out[len++] = '.';
    out[len] = '\0';
    return out;
}

/* Path(dir) / name */
static char *path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *out = sx_malloc(a + b + 2);
    if (out == NULL)
        return NULL;
    if (strcmp(dir, ".") == 0)
        memcpy(out, name, b + 1);
    else if (a > 0 && dir[a - 1] == '/')
        snprintf(out, a + b + 2, "%s%s", dir, name);
    else
        snprintf(out, a + b + 2, "%s/%s", dir, name);
    return out;
}

/* Component-wise order: a component's end sorts before any of its characters. */
int sx_native_path_cmp(const char *a, const char *b) {
    for (;; a++, b++) {
        int x = *a == '\0' ? 0 : *a == '/' ? 1 : (unsigned char)*a + 2;
        int y = *b == '\0' ? 0 : *b == '/' ? 1 : (unsigned char)*b + 2;
        if (x != y)
            return x < y ? -1 : 1;
        if (x == 0)
            return 0;
    }
}

static int cmp_paths(const void *a, const void *b) {
    return sx_native_path_cmp(*(char *const *)a, *(char *const *)b);
}

/* fnmatch("*_rank[0-9]*.h5") */
static bool rank_h5_name(const char *name) {
    size_t n = strlen(name);
    if (n < 3 || strcmp(name + n - 3, ".h5") != 0)
        return false;
    for (const char *p = strstr(name, "_rank"); p != NULL; p = strstr(p + 1, "_rank")) {
        size_t at = (size_t)(p - name) + 5;
        if (at < n && name[at] >= '0' && name[at] <= '9' && at + 1 <= n - 3)
            return true;
    }
    return false;
}

static bool spt_name(const char *name) {
    size_t n = strlen(name);
    return n >= 4 && strcmp(name + n - 4, ".spt") == 0;
}

static bool push_path(char ***v, size_t *n, size_t *cap, char *p) {
    if (p == NULL)
        return false;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        char **nv = sx_realloc(*v, nc * sizeof *nv);
        if (nv == NULL) {
            free(p);
            return false;
        }
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = p;
    return true;
}

enum sx_status sx_native_find(const char *const *inputs, size_t n, char ***paths,
                              size_t *npaths, struct sx_error *err) {
    enum sx_status st = SX_OK;
    char **v = NULL;
    size_t nv = 0, cap = 0;
    char *path = NULL;
    DIR *d = NULL;

    *paths = NULL;
    *npaths = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        free(path);
        path = sx_native_path_norm(inputs[i]);
        SX_CHECK(path != NULL, SX_ERR_NOMEM, err, inputs[i], "out of memory");
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            d = opendir(path);
            SX_CHECK(d != NULL, SX_ERR_OPEN, err, path,
                     "%s: cannot list the directory: %s", path, strerror(errno));
            size_t before = nv;
            const struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                    continue;
                if (!spt_name(e->d_name) && !rank_h5_name(e->d_name))
                    continue;
                SX_CHECK(push_path(&v, &nv, &cap, path_join(path, e->d_name)),
                         SX_ERR_NOMEM, err, path, "out of memory");
            }
            closedir(d);
            d = NULL;
            SX_CHECK(nv > before, SX_ERR_NOT_FOUND, err, path,
                     "no .spt traces and no per-rank .h5 profiles in %s", path);
        } else if (stat(path, &sb) == 0) {
            char *p = path;
            path = NULL; /* push_path frees it on failure */
            SX_CHECK(push_path(&v, &nv, &cap, p), SX_ERR_NOMEM, err, inputs[i],
                     "out of memory");
        } else {
            SX_CHECK(false, SX_ERR_NOT_FOUND, err, path, "no such file or directory: %s",
                     path);
        }
    }
    if (nv > 1)
        qsort(v, nv, sizeof *v, cmp_paths);
    size_t k = 0;
    for (size_t i = 0; i < nv; i++) {
        if (k > 0 && strcmp(v[k - 1], v[i]) == 0)
            free(v[i]);
        else
            v[k++] = v[i];
    }
    *paths = v;
    *npaths = k;
    v = NULL;
    nv = 0;
out:
    if (d != NULL)
        closedir(d);
    free(path);
    for (size_t i = 0; i < nv; i++)
        free(v[i]);
    free(v);
    return st;
}

/* ------------------------------------------------------------------ */
/* A table of names                                                    */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static bool names_grow(struct sx_names *t) {
    size_t ns = t->nslot ? t->nslot * 2 : 64;
    size_t *slot = sx_malloc(ns * sizeof *slot);
    if (slot == NULL)
        return false;
    for (size_t i = 0; i < ns; i++)
        slot[i] = SIZE_MAX;
    for (size_t i = 0; i < t->n; i++) {
        size_t h = (size_t)hash_str(t->name[i]) & (ns - 1);
        while (slot[h] != SIZE_MAX)
            h = (h + 1) & (ns - 1);
        slot[h] = i;
    }
    free(t->slot);
    t->slot = slot;
    t->nslot = ns;
    return true;
}

size_t sx_names_add(struct sx_names *t, const char *name) {
    if ((t->n + 1) * 2 > t->nslot && !names_grow(t))
        return SIZE_MAX;
    size_t h = (size_t)hash_str(name) & (t->nslot - 1);
    while (t->slot[h] != SIZE_MAX) {
        if (strcmp(t->name[t->slot[h]], name) == 0)
            return t->slot[h];
        h = (h + 1) & (t->nslot - 1);
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        const char **nv = sx_realloc(t->name, nc * sizeof *nv);
        if (nv == NULL)
            return SIZE_MAX;
        t->name = nv;
        t->cap = nc;
    }
    t->name[t->n] = name;
    t->slot[h] = t->n;
    return t->n++;
}

void sx_names_free(struct sx_names *t) {
    free(t->name);
    free(t->slot);
    *t = (struct sx_names){0};
}

/* ------------------------------------------------------------------ */
/* The .spt trace                                                      */

#define TRACE_MAGIC "SCOPEPRF"
#define TRUNC "%s: truncated trace file (%s)"

/* Python's repr() of a bytes object. */
static void bytes_repr(const unsigned char *s, size_t n, char *out, size_t len) {
    bool sq = memchr(s, '\'', n) != NULL, dq = memchr(s, '"', n) != NULL;
    char q = sq && !dq ? '"' : '\'';
    size_t k = 0;
    k += (size_t)snprintf(out + k, len - k, "b%c", q);
    for (size_t i = 0; i < n && k + 8 < len; i++) {
        unsigned c = s[i];
        if (c == (unsigned)q || c == '\\')
            k += (size_t)snprintf(out + k, len - k, "\\%c", (char)c);
        else if (c == '\t')
            k += (size_t)snprintf(out + k, len - k, "\\t");
        else if (c == '\n')
            k += (size_t)snprintf(out + k, len - k, "\\n");
        else if (c == '\r')
            k += (size_t)snprintf(out + k, len - k, "\\r");
        else if (c < 0x20 || c >= 0x7f)
            k += (size_t)snprintf(out + k, len - k, "\\x%02x", c);
        else
            out[k++] = (char)c;
    }
    snprintf(out + k, len - k, "%c", q);
}

static bool cont(unsigned char c) { return (c & 0xC0) == 0x80; }

/*
 * Whether 's' is valid UTF-8 by Python's strict decoder; if not, its
 * message ("'utf-8' codec can't decode byte 0xff in position 2: ...").
 */
static bool utf8_ok(const unsigned char *s, size_t n, char *msg, size_t len) {
    size_t i = 0, bad = 0;
    const char *why = NULL;
    while (i < n && why == NULL) {
        unsigned c = s[i];
        size_t left = n - i;
        if (c < 0x80) {
            i++;
        } else if (c < 0xC2 || c >= 0xF5) {
            why = "invalid start byte", bad = 1;
        } else if (c < 0xE0) {
            if (left < 2)
                why = "unexpected end of data", bad = left;
            else if (!cont(s[i + 1]))
                why = "invalid continuation byte", bad = 1;
            else
                i += 2;
        } else if (c < 0xF0) {
            bool c2bad = left >= 2 &&
                         (!cont(s[i + 1]) || (s[i + 1] < 0xA0 ? c == 0xE0 : c == 0xED));
            if (left < 2)
                why = "unexpected end of data", bad = left;
            else if (c2bad)
                why = "invalid continuation byte", bad = 1;
            else if (left < 3)
                why = "unexpected end of data", bad = left;
            else if (!cont(s[i + 2]))
                why = "invalid continuation byte", bad = 2;
            else
                i += 3;
        } else {
            bool c2bad = left >= 2 &&
                         (!cont(s[i + 1]) || (s[i + 1] < 0x90 ? c == 0xF0 : c == 0xF4));
            if (left < 2)
                why = "unexpected end of data", bad = left;
            else if (c2bad)
                why = "invalid continuation byte", bad = 1;
            else if (left < 3)
                why = "unexpected end of data", bad = left;
            else if (!cont(s[i + 2]))
                why = "invalid continuation byte", bad = 2;
            else if (left < 4)
                why = "unexpected end of data", bad = left;
            else if (!cont(s[i + 3]))
                why = "invalid continuation byte", bad = 3;
            else
                i += 4;
        }
    }
    if (why == NULL)
        return true;
    if (bad == 1)
        snprintf(msg, len, "'utf-8' codec can't decode byte 0x%02x in position %zu: %s",
                 s[i], i, why);
    else
        snprintf(msg, len, "'utf-8' codec can't decode bytes in position %zu-%zu: %s", i,
                 i + bad - 1, why);
    return false;
}

/* Buffered reads at file offsets. */
struct rd {
    int fd;
    uint64_t size;
    bool be;   /* the file's byte order is big-endian */
    bool swap; /* and not this host's: values are byte-swapped */
    unsigned char buf[1 << 16];
    uint64_t at; /* file offset of buf[0] */
    size_t have;
};

static bool rd_bytes(struct rd *r, uint64_t off, void *dst, size_t n) {
    unsigned char *d = dst;
    while (n > 0) {
        if (off >= r->at && off < r->at + r->have) {
            size_t k = (size_t)(r->at + r->have - off);
            if (k > n)
                k = n;
            memcpy(d, r->buf + (off - r->at), k);
            d += k;
            off += k;
            n -= k;
            continue;
        }
        ssize_t got = pread(r->fd, r->buf, sizeof r->buf, (off_t)off);
        if (got <= 0)
            return false;
        r->at = off;
        r->have = (size_t)got;
    }
    return true;
}

static uint64_t swap64(uint64_t v) { return __builtin_bswap64(v); }

/* Whether this host stores integers big-endian (a trace is read in either order). */
static bool host_big_endian(void) {
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 0;
}

static bool rd_i32(struct rd *r, uint64_t off, int32_t *v) {
    uint32_t u;
    if (!rd_bytes(r, off, &u, 4))
        return false;
    if (r->swap)
        u = __builtin_bswap32(u);
    memcpy(v, &u, 4);
    return true;
}

static bool rd_i64(struct rd *r, uint64_t off, int64_t *v) {
    uint64_t u;
    if (!rd_bytes(r, off, &u, 8))
        return false;
    if (r->swap)
        u = swap64(u);
    memcpy(v, &u, 8);
    return true;
}

/* numpy.frombuffer(count=k, itemsize=w, offset=off) on a buffer of 'size' bytes. */
static const char *frombuffer_error(uint64_t size, uint64_t off, uint64_t k, unsigned w,
                                    char *msg, size_t len) {
    if (off > size) {
        snprintf(msg, len,
                 "offset must be non-negative and no greater than buffer length (%" PRIu64
                 ")",
                 size);
        return msg;
    }
    if (k > (size - off) / w)
        return "buffer is smaller than requested size";
    return NULL;
}

/* Bytes [off, off + n) clipped to the file (Python slicing), as a new string. */
static char *rd_text(struct rd *r, uint64_t off, int64_t n) {
    uint64_t k = off >= r->size ? 0 : r->size - off;
    if ((uint64_t)n < k)
        k = (uint64_t)n;
    char *s = sx_malloc((size_t)k + 1);
    if (s == NULL)
        return NULL;
    if (k > 0 && !rd_bytes(r, off, s, (size_t)k)) {
        free(s);
        return NULL;
    }
    s[k] = '\0';
    return s;
}

static bool push_row(struct sx_nfile *f, size_t *cap, const struct sx_nrow *row) {
    if (f->nrows == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        struct sx_nrow *nv = sx_realloc(f->rows, nc * sizeof *nv);
        if (nv == NULL)
            return false;
        f->rows = nv;
        *cap = nc;
    }
    f->rows[f->nrows++] = *row;
    return true;
}

static void nrow_clear(struct sx_nrow *r) {
    free(r->name);
    free(r->source_file);
    free(r->source_text);
    *r = (struct sx_nrow){0};
}

/* min and first of 'n' int64 at 'off'. */
static bool rd_min_first(struct rd *r, uint64_t off, uint64_t n, int64_t *mn,
                         int64_t *first) {
    int64_t buf[4096];
    for (uint64_t i = 0; i < n;) {
        size_t k = n - i < 4096 ? (size_t)(n - i) : 4096;
        if (!rd_bytes(r, off + 8 * i, buf, 8 * k))
            return false;
        for (size_t j = 0; j < k; j++) {
            int64_t v = buf[j];
            if (r->swap)
                v = (int64_t)swap64((uint64_t)v);
            if (i + j == 0)
                *mn = *first = v;
            else if (v < *mn)
                *mn = v;
        }
        i += k;
    }
    return true;
}

static enum sx_status read_trace(struct sx_nfile *f, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const char *path = f->path;
    struct rd *r = sx_calloc(1, sizeof *r);
    struct sx_nrow row = {0};
    struct sx_names seen = {0};
    size_t cap = 0;
    char msg[256];
    unsigned char head[24];
    struct stat sb;

    SX_CHECK(r != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    r->fd = open(path, O_RDONLY);
    SX_CHECK(r->fd >= 0, errno == ENOENT ? SX_ERR_NOT_FOUND : SX_ERR_OPEN, err, path,
             "%s: %s", path, strerror(errno));
    SX_CHECK(fstat(r->fd, &sb) == 0 && !S_ISDIR(sb.st_mode), SX_ERR_OPEN, err, path,
             "%s: %s", path, S_ISDIR(sb.st_mode) ? "Is a directory" : strerror(errno));
    r->size = (uint64_t)sb.st_size;
    SX_CHECK(r->size >= 24, SX_ERR_FORMAT, err, path, "%s: too short to be a trace file",
             path);
    SX_CHECK(rd_bytes(r, 0, head, 24), SX_ERR_IO, err, path, "%s: read failed: %s", path,
             strerror(errno));
    if (memcmp(head, TRACE_MAGIC, 8) != 0) {
        bytes_repr(head, 8, msg, sizeof msg);
        SX_CHECK(
            false, SX_ERR_FORMAT, err, path,
            "%s: not a scope-profiler Fortran trace (expected b'SCOPEPRF', found %s)",
            path, msg);
    }
    int32_t le = (int32_t)((uint32_t)head[8] | (uint32_t)head[9] << 8 |
                           (uint32_t)head[10] << 16 | (uint32_t)head[11] << 24);
    int32_t be = (int32_t)((uint32_t)head[11] | (uint32_t)head[10] << 8 |
                           (uint32_t)head[9] << 16 | (uint32_t)head[8] << 24);
    int32_t version = le;
    if (le != 1 && le != 2) {
        SX_CHECK(be == 1 || be == 2, SX_ERR_UNSUPPORTED, err, path,
                 "%s: unsupported trace format version %" PRId32
                 " (this scope-profiler reads versions (1, 2))",
                 path, le);
        version = be;
        r->be = true;
    }
    r->swap = r->be != host_big_endian();
    f->big_endian = r->be;
    int32_t rank = 0;
    int64_t nreg = 0;
    rd_i32(r, 12, &rank);
    rd_i64(r, 16, &nreg);
    /* scope-profiler wraps a negative rank into the uint32 ranks column */
    SX_CHECK(rank >= 0, SX_ERR_FORMAT, err, path,
             "%s: negative rank %" PRId32 " in the trace header", path, rank);
    SX_CHECK(nreg >= 0, SX_ERR_FORMAT, err, path,
             "%s: negative number of regions %" PRId64 " in the trace header", path,
             nreg);
    f->ranks = sx_malloc(sizeof *f->ranks);
    SX_CHECK(f->ranks != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    f->ranks[0] = rank;
    f->nranks = 1;

    uint64_t off = 24;
    const char *why = NULL;
    for (int64_t i = 0; i < nreg; i++) {
        int32_t len = 0;
        row = (struct sx_nrow){.rank = rank};
        /* every read is checked against the file's size first */
#define NEED(k, w)                                                                       \
    do {                                                                                 \
        why = frombuffer_error(r->size, off, (k), (w), msg, sizeof msg);                 \
        SX_CHECK(why == NULL, SX_ERR_FORMAT, err, path, TRUNC, path, why);               \
    } while (0)
        NEED(1, 4);
        rd_i32(r, off, &len);
        off += 4;
        SX_CHECK(len >= 0, SX_ERR_FORMAT, err, path,
                 "%s: negative name length %" PRId32 " in region %" PRId64, path, len, i);
        row.name = rd_text(r, off, len);
        SX_CHECK(row.name != NULL, SX_ERR_NOMEM, err, path, "out of memory");
        if (!utf8_ok((const unsigned char *)row.name, strlen(row.name), msg, sizeof msg))
            SX_CHECK(false, SX_ERR_FORMAT, err, path, TRUNC, path, msg);
        off += (uint64_t)len;
        if (version >= 2) {
            int32_t slen = 0, line = 0;
            NEED(1, 4);
            rd_i32(r, off, &slen);
            off += 4;
            SX_CHECK(slen >= 0, SX_ERR_FORMAT, err, path,
                     "%s: negative source path length %" PRId32 " in region %" PRId64,
                     path, slen, i);
            if (slen > 0) {
                row.source_file = rd_text(r, off, slen);
                SX_CHECK(row.source_file != NULL, SX_ERR_NOMEM, err, path,
                         "out of memory");
                if (!utf8_ok((const unsigned char *)row.source_file,
                             strlen(row.source_file), msg, sizeof msg))
                    SX_CHECK(false, SX_ERR_FORMAT, err, path, TRUNC, path, msg);
            }
            off += (uint64_t)slen;
            NEED(1, 4);
            rd_i32(r, off, &line);
            off += 4;
            if (line >= 0) {
                row.has_lineno = true;
                row.lineno = line;
            }
        }
        int64_t ncalls = 0;
        NEED(1, 8);
        rd_i64(r, off, &ncalls);
        off += 8;
        SX_CHECK(ncalls >= 0, SX_ERR_FORMAT, err, path,
                 "%s: negative call count %" PRId64 " in region %" PRId64, path, ncalls,
                 i);
        NEED((uint64_t)ncalls, 8);
        row.count = (uint64_t)ncalls;
        row.loc = off;
        if (row.count > 0)
            SX_CHECK(rd_min_first(r, off, row.count, &row.min_start, &row.first_start),
                     SX_ERR_IO, err, path, "%s: read failed", path);
        off += 8 * row.count;
        NEED((uint64_t)ncalls, 8);
        off += 8 * row.count;
#undef NEED
        /* a name written twice: the first position, the last data (a dict) */
        const size_t before = seen.n;
        size_t k = sx_names_add(&seen, row.name);
        SX_CHECK(k != SIZE_MAX, SX_ERR_NOMEM, err, path, "out of memory");
        if (seen.n == before) { /* the table keeps the first row's name */
            free(row.name);
            row.name = f->rows[k].name;
            f->rows[k].name = NULL;
            nrow_clear(&f->rows[k]);
            f->rows[k] = row;
        } else if (!push_row(f, &cap, &row)) {
            seen.n--; /* (its slot is left; the table is dropped with the error) */
            SX_CHECK(false, SX_ERR_NOMEM, err, path, "out of memory");
        }
        row = (struct sx_nrow){0};
    }
    SX_CHECK(off == r->size, SX_ERR_FORMAT, err, path,
             "%s: %" PRIu64 " trailing byte(s) after the last region", path,
             r->size - off);
out:
    sx_names_free(&seen);
    nrow_clear(&row);
    if (r != NULL && r->fd >= 0)
        close(r->fd);
    free(r);
    return st;
}

/* ------------------------------------------------------------------ */
/* The per-process .h5 (any run read_h5 reads)                         */

struct row_key {
    int64_t rank;
    size_t pos, i;
};

static int cmp_row_key(const void *a, const void *b) {
    const struct row_key *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

struct dkey {
    double k;
    size_t i, v;
};

static int cmp_dkey(const void *a, const void *b) {
    const struct dkey *x = a, *y = b;
    if (x->k != y->k)
        return x->k < y->k ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

enum sx_status sx_native_sort_keys(size_t *idx, size_t n, const double *key) {
    struct dkey *d = sx_malloc((n + 1) * sizeof *d);
    if (d == NULL)
        return SX_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        d[i] = (struct dkey){key[idx[i]], i, idx[i]};
    if (n > 1) /* qsort wants a valid array even for none */
        qsort(d, n, sizeof *d, cmp_dkey);
    for (size_t i = 0; i < n; i++)
        idx[i] = d[i].v;
    free(d);
    return SX_OK;
}

/* How many start values are read at once to find the rows' minimums. */
#define H5_CHUNK 65536

/*
 * Each row's first and smallest start ('first', 'min': run->nrows each; a row
 * without events keeps 0). The rows' pieces are read in batches of up to
 * H5_CHUNK values, one read of the start column per batch: a row at a time,
 * a per-process file of a few rows paid HDF5's selection and read for each.
 */
static enum sx_status row_starts(struct sx_h5 *h5, const struct sx_run *run, int64_t *buf,
                                 int64_t *first, int64_t *min, struct sx_error *err) {
    enum sx_status st = SX_OK;
    enum { BATCH = 256 };
    struct sx_slice s[BATCH];
    size_t owner[BATCH], ns = 0;
    uint64_t used = 0;
    size_t i = 0;
    uint64_t at = 0;
    while (st == SX_OK && (i < run->nrows || ns > 0)) {
        const uint64_t count = i < run->nrows ? run->rows[i].count : 0;
        if (i < run->nrows && at >= count) { /* this row is done: the next */
            i++;
            at = 0;
            continue;
        }
        if (i < run->nrows && ns < BATCH && used < H5_CHUNK) {
            uint64_t n = count - at < H5_CHUNK - used ? count - at : H5_CHUNK - used;
            memset(&s[ns], 0, sizeof s[ns]);
            s[ns].row = &run->rows[i];
            s[ns].first = at;
            s[ns].n = n;
            s[ns].cols = SX_COLBIT(SX_COL_START);
            s[ns].col[SX_COL_START] = buf + used;
            owner[ns++] = i;
            used += n;
            at += n;
            continue;
        }
        /* the batch is full, or the rows are done: read it and fold it in */
        st = sx_h5_read_slices(h5, run, s, ns, err);
        for (size_t k = 0; k < ns && st == SX_OK; k++) {
            const int64_t *v = s[k].col[SX_COL_START];
            const size_t r = owner[k];
            for (uint64_t j = 0; j < s[k].n; j++) {
                if (s[k].first + j == 0)
                    min[r] = first[r] = v[j];
                else if (v[j] < min[r])
                    min[r] = v[j];
            }
        }
        ns = 0;
        used = 0;
    }
    return st;
}

static enum sx_status read_h5_index(struct sx_nfile *f, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_h5 *h5 = NULL;
    struct sx_run *run = NULL;
    int64_t *buf = NULL, *firsts = NULL;
    double *key = NULL;
    size_t *order = NULL, *byname = NULL;
    struct sx_nrow row = {0};
    const char *path = f->path;

    st = sx_h5_open(MPI_COMM_NULL, path, false, &h5, &run, err);
    if (st != SX_OK)
        goto out;
    sx_h5_events_later(h5, run, &f->later);
    SX_CHECK(run->layout != SX_LAYOUT_AGGREGATE, SX_ERR_UNSUPPORTED, err, path,
             "%s: a run in the aggregate layout has no per-call events to import", path);
    buf = sx_malloc(H5_CHUNK * sizeof *buf);
    key = sx_calloc(run->nnames + 1, sizeof *key);
    order = sx_malloc((run->nrows + 1) * sizeof *order);
    byname = sx_malloc((run->nnames + 1) * sizeof *byname);
    firsts = sx_calloc(2 * (run->nrows + 1), sizeof *firsts); /* then the minimums */
    bool ok =
        buf != NULL && key != NULL && order != NULL && byname != NULL && firsts != NULL;
    SX_CHECK(ok, SX_ERR_NOMEM, err, path, "out of memory");
    int64_t *mins = firsts + run->nrows + 1;
    struct sx_nrow *rows = sx_calloc(run->nrows + 1, sizeof *rows);
    SX_CHECK(rows != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    f->rows = rows;
    /* each row's first and minimum start; each region's key over the file's ranks */
    bool *has_key = sx_calloc(run->nnames + 1, sizeof *has_key);
    SX_CHECK(has_key != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    st = row_starts(h5, run, buf, firsts, mins, err);
    if (st != SX_OK) {
        free(has_key);
        goto out;
    }
    for (size_t i = 0; i < run->nrows; i++) {
        const struct sx_row *sr = &run->rows[i];
        row = (struct sx_nrow){.rank = sr->rank,
                               .count = sr->count,
                               .loc = i,
                               .offset = sr->offset,
                               .min_start = mins[i],
                               .first_start = firsts[i]};
        double k = sr->count > 0 ? (double)row.min_start / 1e9 : 0.0;
        if (!has_key[sr->region] || k < key[sr->region])
            key[sr->region] = k;
        has_key[sr->region] = true;
        row.name = sx_strdup(run->names[sr->region]);
        if (sr->source_file != NULL)
            row.source_file = sx_strdup(sr->source_file);
        if (sr->source_text != NULL)
            row.source_text = sx_strdup(sr->source_text);
        row.has_lineno = sr->has_lineno;
        row.lineno = sr->source_lineno;
        ok = row.name != NULL && (sr->source_file == NULL || row.source_file != NULL) &&
             (sr->source_text == NULL || row.source_text != NULL);
        f->rows[f->nrows++] = row;
        row = (struct sx_nrow){0};
        if (!ok) {
            free(has_key);
            SX_CHECK(false, SX_ERR_NOMEM, err, path, "out of memory");
        }
    }
    /* get_regions(): regions stable-sorted by key; then each rank's rows in that order */
    size_t nreg = 0;
    for (size_t i = 0; i < run->nnames; i++)
        if (has_key[i])
            byname[nreg++] = i;
    free(has_key);
    SX_CHECK(sx_native_sort_keys(byname, nreg, key) == SX_OK, SX_ERR_NOMEM, err, path,
             "out of memory");
    size_t *pos = sx_calloc(run->nnames + 1, sizeof *pos);
    SX_CHECK(pos != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    for (size_t i = 0; i < nreg; i++)
        pos[byname[i]] = i;
    /* sort rows by (rank, region position); a (rank, name) twice keeps the later row */
    struct row_key *rk = sx_malloc((f->nrows + 1) * sizeof *rk);
    if (rk == NULL)
        free(pos);
    SX_CHECK(rk != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    for (size_t i = 0; i < f->nrows; i++) {
        const struct sx_row *sr = &run->rows[f->rows[i].loc];
        rk[i] = (struct row_key){sr->rank, pos[sr->region], i};
    }
    free(pos);
    if (f->nrows > 1) /* qsort wants a valid array even for none */
        qsort(rk, f->nrows, sizeof *rk, cmp_row_key);
    for (size_t i = 0; i < f->nrows; i++)
        order[i] = rk[i].i;
    free(rk);
    struct sx_nrow *sorted = sx_malloc((f->nrows + 1) * sizeof *sorted);
    SX_CHECK(sorted != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < f->nrows; i++) {
        struct sx_nrow *cur = &f->rows[order[i]];
        if (i + 1 < f->nrows) {
            const struct sx_nrow *nx = &f->rows[order[i + 1]];
            if (nx->rank == cur->rank && strcmp(nx->name, cur->name) == 0) {
                nrow_clear(cur);
                continue;
            }
        }
        sorted[k++] = *cur;
    }
    free(f->rows);
    f->rows = sorted;
    f->nrows = k;
    /* the ranks it claims: those with rows */
    f->ranks = sx_malloc((k + 1) * sizeof *f->ranks);
    SX_CHECK(f->ranks != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    for (size_t i = 0; i < k; i++)
        if (f->nranks == 0 || f->ranks[f->nranks - 1] != f->rows[i].rank)
            f->ranks[f->nranks++] = f->rows[i].rank;
    f->metadata = run->metadata;
    run->metadata = (struct sx_value){0};
out:
    nrow_clear(&row);
    free(buf);
    free(firsts);
    free(key);
    free(order);
    free(byname);
    sx_run_free(run);
    sx_h5_close(h5);
    return st;
}

enum sx_status sx_native_read_index(struct sx_nfile *f, struct sx_error *err) {
    return f->h5 ? read_h5_index(f, err) : read_trace(f, err);
}

/* ------------------------------------------------------------------ */
/* Events                                                              */

/* Let go of the file being read: its HDF5 reader, or its descriptor unless kept. */
static void nreader_drop(struct sx_nreader *rd) {
    if (rd->h5 != NULL || rd->run != NULL) {
        sx_run_free(rd->run);
        sx_h5_close(rd->h5);
    }
    if (rd->f != NULL && (!rd->f->h5 || rd->f->later.ok) && rd->fd >= 0 && !rd->fd_kept)
        close(rd->fd);
    rd->h5 = NULL;
    rd->run = NULL;
    rd->f = NULL;
    rd->fd = -1;
    rd->fd_kept = false;
}

/* Close the kept descriptors; none is kept then. */
static void keep_release(struct sx_nreader *rd) {
    for (size_t i = 0; rd->kept != NULL && i < rd->nfiles; i++)
        if (rd->kept[i] >= 0) {
            close(rd->kept[i]);
            rd->kept[i] = -1;
        }
    rd->nkeep = 0;
}

void sx_nreader_close(struct sx_nreader *rd) {
    nreader_drop(rd);
    keep_release(rd);
    free(rd->kept);
    *rd = (struct sx_nreader){0};
}

/* Descriptors kept at most: a quarter of the process's limit, the rest are the
 * program's we run inside, and no more than a run's files are worth holding. */
enum { KEEP_MAX = 1024 };

/* The open descriptor of file 'fi' of 'nr' (read without HDF5) for 'rd->fd': kept from
 * an earlier row, or opened, and kept while there is room; when there is none, the
 * files kept stay (a block visits the files in the same order each time: the first
 * ones kept are read again from their descriptors) and this one is closed after its
 * row. */
static enum sx_status nreader_later_fd(struct sx_nreader *rd, const struct sx_native *nr,
                                       size_t fi, struct sx_error *err) {
    const struct sx_nfile *f = &nr->files[fi];
    if (rd->nfiles == 0) { /* the first file: how many may be kept */
        struct rlimit rl;
        size_t max = KEEP_MAX;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            rl.rlim_cur / 4 < max)
            max = (size_t)(rl.rlim_cur / 4);
        rd->kept = sx_malloc(nr->nfiles * sizeof *rd->kept);
        rd->nfiles = nr->nfiles; /* 'kept' NULL (no memory): none is kept */
        for (size_t i = 0; rd->kept != NULL && i < rd->nfiles; i++)
            rd->kept[i] = -1;
        rd->keep_max = rd->kept != NULL ? (max > 0 ? max : 1) : 0;
    }
    if (rd->kept != NULL && rd->kept[fi] >= 0) {
        rd->fd = rd->kept[fi];
        rd->fd_kept = true;
        return SX_OK;
    }
    enum sx_status st = sx_direct_later_open(&f->later, f->path, &rd->fd, err);
    if (st == SX_ERR_OPEN && rd->nkeep > 0) {
        /* out of descriptors, perhaps (the program we run in holds many): the kept
         * ones go back, none is kept from now on, and the open is tried again */
        keep_release(rd);
        rd->keep_max = 0;
        sx_error_clear(err);
        st = sx_direct_later_open(&f->later, f->path, &rd->fd, err);
    }
    if (st == SX_OK && rd->nkeep < rd->keep_max) {
        rd->kept[fi] = rd->fd;
        rd->nkeep++;
        rd->fd_kept = true;
    }
    return st;
}

static bool pread_all(int fd, void *p, size_t n, uint64_t off) {
    char *d = p;
    while (n > 0) {
        ssize_t k = pread(fd, d, n, (off_t)off);
        if (k <= 0)
            return false;
        d += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return true;
}

enum sx_status sx_native_read_events(struct sx_nreader *rd, const struct sx_native *nr,
                                     const struct sx_nloc *l, uint64_t first, uint64_t n,
                                     int64_t *start, int64_t *end, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_nfile *f = &nr->files[l->file];
    const struct sx_nrow *r = &f->rows[l->row];
    if (n == 0)
        return SX_OK;
    if (rd->f != f) {
        nreader_drop(rd);
        if (f->h5 && f->later.ok) {
            st = nreader_later_fd(rd, nr, l->file, err);
            if (st != SX_OK)
                return st;
        } else if (f->h5) {
            st = sx_h5_open(MPI_COMM_NULL, f->path, false, &rd->h5, &rd->run, err);
            if (st != SX_OK) {
                sx_h5_close(rd->h5);
                rd->h5 = NULL;
                sx_run_free(rd->run);
                rd->run = NULL;
                return st;
            }
        } else {
            rd->fd = open(f->path, O_RDONLY);
            if (rd->fd < 0)
                return sx_error_set(err, SX_ERR_OPEN, f->path, "%s: %s", f->path,
                                    strerror(errno));
        }
        rd->f = f;
    }
    if (f->h5 && f->later.ok) {
        if (start != NULL)
            st = sx_direct_later_read(rd->fd, &f->later.col[0], r->offset + first, n,
                                      start, f->path, err);
        if (st == SX_OK && end != NULL)
            st = sx_direct_later_read(rd->fd, &f->later.col[1], r->offset + first, n, end,
                                      f->path, err);
        return st;
    }
    if (f->h5) {
        SX_CHECK(r->loc < rd->run->nrows && rd->run->rows[r->loc].count == r->count,
                 SX_ERR_FORMAT, err, f->path, "%s: the file changed while it was read",
                 f->path);
        int64_t *cols[SX_NCOLS] = {start, end};
        unsigned want =
            (start ? SX_COLBIT(SX_COL_START) : 0u) | (end ? SX_COLBIT(SX_COL_END) : 0u);
        return sx_h5_read_events(rd->h5, rd->run, &rd->run->rows[r->loc], first, n, want,
                                 cols, err);
    }
    SX_CHECK((start == NULL || pread_all(rd->fd, start, 8 * n, r->loc + 8 * first)) &&
                 (end == NULL ||
                  pread_all(rd->fd, end, 8 * n, r->loc + 8 * (r->count + first))),
             SX_ERR_IO, err, f->path,
             "%s: read failed (the file changed while it was read?)", f->path);
    const bool swap = f->big_endian != host_big_endian();
    for (uint64_t i = 0; swap && i < n; i++) {
        if (start != NULL)
            start[i] = (int64_t)swap64((uint64_t)start[i]);
        if (end != NULL)
            end[i] = (int64_t)swap64((uint64_t)end[i]);
    }
out:
    return st;
}
