/* gz_read.c - a whole regular file read into memory, gunzipped when it is gzip (zlib) */
#include "gz_read.h"

#include "fault.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* Grow 'buf' (capacity '*cap', 'n' used) to hold 'more' bytes and a NUL. */
static bool grow(char **buf, size_t *cap, size_t n, size_t more) {
    if (*cap - n > more)
        return true;
    size_t ncap = *cap ? *cap : (size_t)4 << 20;
    while (ncap - n <= more) {
        if (ncap > SIZE_MAX / 2)
            return false;
        ncap *= 2;
    }
    char *p = sx_realloc(*buf, ncap);
    if (p == NULL)
        return false;
    *buf = p;
    *cap = ncap;
    return true;
}

/* The bytes of the regular file 'fd' (size 'size' when opened). */
static enum sx_status read_raw(const char *path, int fd, size_t size, char **data,
                               size_t *len, struct sx_error *err) {
    enum sx_status st = SX_OK;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        SX_CHECK(grow(&buf, &cap, n, n < size ? size - n : (size_t)1 << 20), SX_ERR_NOMEM,
                 err, path, "out of memory reading %s", path);
        const size_t want =
            cap - n - 1 < ((size_t)1 << 30) ? cap - n - 1 : (size_t)1 << 30;
        ssize_t got = read(fd, buf + n, want);
        SX_CHECK(!sx_fault(SX_FAULT_READ, 0), SX_ERR_IO, err, path, "cannot read %s: %s",
                 path, strerror(EIO)); /* a fault test's failed read */
        if (got < 0 && errno == EINTR)
            continue;
        SX_CHECK(got >= 0, SX_ERR_IO, err, path, "cannot read %s: %s", path,
                 strerror(errno));
        if (got == 0)
            break;
        n += (size_t)got;
    }
    *data = buf;
    *len = n;
    buf = NULL;
out:
    free(buf);
    return st;
}

/*
 * Inflate the gzip members of 'in' into '*data' (new). Members may follow
 * each other, as gzip writes them; anything else after a member is an error,
 * as it is for gzip -t: such a file is damaged, not a profile.
 */
static enum sx_status gunzip(const char *path, const unsigned char *in, size_t n,
                             char **data, size_t *len, struct sx_error *err) {
    enum sx_status st = SX_OK;
    z_stream z;
    bool live = false;
    char *buf = NULL;
    size_t out = 0, cap = 0, at = 0;
    memset(&z, 0, sizeof z);
    SX_CHECK(inflateInit2(&z, 16 + 15) == Z_OK, SX_ERR_NOMEM, err, path,
             "out of memory reading %s", path);
    live = true;
    for (;;) {
        SX_CHECK(grow(&buf, &cap, out, (size_t)1 << 20), SX_ERR_NOMEM, err, path,
                 "out of memory reading %s", path);
        const size_t in_left = n - at, room = cap - out - 1;
        z.next_in = (unsigned char *)(uintptr_t)(in + at);
        z.avail_in = in_left < ((size_t)1 << 30) ? (uInt)in_left : 1u << 30;
        z.next_out = (unsigned char *)buf + out;
        z.avail_out = room < ((size_t)1 << 30) ? (uInt)room : 1u << 30;
        const uInt gave_in = z.avail_in, gave_out = z.avail_out;
        int rc = inflate(&z, Z_NO_FLUSH);
        at += gave_in - z.avail_in;
        out += gave_out - z.avail_out;
        SX_CHECK(rc == Z_OK || rc == Z_STREAM_END || (rc == Z_BUF_ERROR && at < n),
                 SX_ERR_FORMAT, err, path, "%s: gzip data is damaged or truncated (%s)",
                 path,
                 rc == Z_BUF_ERROR ? "unexpected end of file"
                 : z.msg           ? z.msg
                                   : "");
        if (rc != Z_STREAM_END)
            continue;
        if (at == n)
            break;
        SX_CHECK(n - at >= 2 && in[at] == 0x1f && in[at + 1] == 0x8b, SX_ERR_FORMAT, err,
                 path,
                 "%s: gzip data is damaged: %zu bytes that are not gzip follow the "
                 "compressed data",
                 path, n - at);
        SX_CHECK(inflateReset(&z) == Z_OK, SX_ERR_FORMAT, err, path,
                 "%s: gzip data is damaged", path);
    }
    *data = buf;
    *len = out;
    buf = NULL;
out:
    if (live)
        inflateEnd(&z);
    free(buf);
    return st;
}

/*
 * The whole (decompressed) content of 'path', NUL-terminated. gzip is
 * detected by content. Only a regular file: a FIFO or a device (/dev/zero)
 * would block or never end.
 */
enum sx_status sx_gz_read_all(const char *path, char **data, size_t *len,
                              struct sx_error *err) {
    enum sx_status st = SX_OK;
    int fd = -1;
    char *raw = NULL;
    size_t n = 0;
    struct stat sb;

    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    SX_CHECK(fd >= 0 || errno != ENOENT, SX_ERR_NOT_FOUND, err, path,
             "JSON profile not found: %s", path);
    SX_CHECK(fd >= 0, SX_ERR_OPEN, err, path, "cannot open %s: %s", path,
             strerror(errno));
    SX_CHECK(fstat(fd, &sb) == 0, SX_ERR_OPEN, err, path, "cannot open %s: %s", path,
             strerror(errno));
    SX_CHECK(S_ISREG(sb.st_mode), SX_ERR_OPEN, err, path, "%s is not a regular file",
             path);
    st = read_raw(path, fd, (size_t)sb.st_size, &raw, &n, err);
    if (st != SX_OK)
        goto out;
    if (n >= 2 && (unsigned char)raw[0] == 0x1f && (unsigned char)raw[1] == 0x8b) {
        st = gunzip(path, (const unsigned char *)raw, n, data, len, err);
        if (st != SX_OK)
            goto out;
    } else {
        *data = raw;
        *len = n;
        raw = NULL;
    }
    (*data)[*len] = '\0';
out:
    if (fd >= 0)
        close(fd);
    free(raw);
    return st;
}

/* ------------------------------------------------------------------ */
/* Read in pieces                                                     */

#define GZ_IN_RAW ((size_t)1 << 20) /* compressed bytes read at a time */

struct sx_gz_in {
    const char *path; /* borrowed: the caller's, alive while it reads */
    int fd;
    bool gz, live, done;
    uint64_t size;
    z_stream z;
    unsigned char *raw; /* compressed input */
    size_t raw_len;
};

enum sx_status sx_gz_in_open(const char *path, struct sx_gz_in **out,
                             struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_gz_in *in = NULL;
    struct stat sb;
    unsigned char magic[2];

    *out = NULL;
    in = sx_calloc(1, sizeof *in);
    SX_CHECK(in != NULL, SX_ERR_NOMEM, err, path, "out of memory reading %s", path);
    in->fd = -1;
    in->path = path;
    in->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    SX_CHECK(in->fd >= 0 || errno != ENOENT, SX_ERR_NOT_FOUND, err, path,
             "JSON profile not found: %s", path);
    SX_CHECK(in->fd >= 0, SX_ERR_OPEN, err, path, "cannot open %s: %s", path,
             strerror(errno));
    SX_CHECK(fstat(in->fd, &sb) == 0, SX_ERR_OPEN, err, path, "cannot open %s: %s", path,
             strerror(errno));
    SX_CHECK(S_ISREG(sb.st_mode), SX_ERR_OPEN, err, path, "%s is not a regular file",
             path);
    in->size = (uint64_t)sb.st_size;
    const ssize_t got = pread(in->fd, magic, 2, 0);
    SX_CHECK(got >= 0 && !sx_fault(SX_FAULT_READ, 0), SX_ERR_IO, err, path,
             "cannot read %s: %s", path, strerror(got < 0 ? errno : EIO));
    in->gz = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (in->gz) {
        in->raw = sx_malloc(GZ_IN_RAW);
        SX_CHECK(in->raw != NULL, SX_ERR_NOMEM, err, path, "out of memory reading %s",
                 path);
        SX_CHECK(inflateInit2(&in->z, 16 + 15) == Z_OK, SX_ERR_NOMEM, err, path,
                 "out of memory reading %s", path);
        in->live = true;
    }
    *out = in;
    in = NULL;
out:
    sx_gz_in_close(in);
    return st;
}

/* read(2) of up to 'cap' bytes, again after EINTR. */
static enum sx_status read_some(struct sx_gz_in *in, void *dst, size_t cap, size_t *n,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    ssize_t got;
    const size_t want = cap < ((size_t)1 << 30) ? cap : (size_t)1 << 30;
    do
        got = read(in->fd, dst, want);
    while (got < 0 && errno == EINTR);
    SX_CHECK(!sx_fault(SX_FAULT_READ, 0), SX_ERR_IO, err, in->path, "cannot read %s: %s",
             in->path, strerror(EIO));
    SX_CHECK(got >= 0, SX_ERR_IO, err, in->path, "cannot read %s: %s", in->path,
             strerror(errno));
    *n = (size_t)got;
out:
    return st;
}

enum sx_status sx_gz_in_read(struct sx_gz_in *in, char *dst, size_t cap, size_t *n,
                             struct sx_error *err) {
    enum sx_status st = SX_OK;
    size_t got = 0;

    *n = 0;
    if (!in->gz) {
        st = read_some(in, dst, cap, n, err);
        goto out;
    }
    cap = cap < ((size_t)1 << 30) ? cap : (size_t)1 << 30;
    while (*n == 0 && cap > 0 && !in->done) {
        if (in->z.avail_in == 0) {
            st = read_some(in, in->raw, GZ_IN_RAW, &got, err);
            if (st != SX_OK)
                goto out;
            in->raw_len = got;
            in->z.next_in = in->raw;
            in->z.avail_in = (uInt)got;
        }
        const bool at_end = in->z.avail_in == 0;
        in->z.next_out = (unsigned char *)dst;
        in->z.avail_out = (uInt)cap;
        const int rc = at_end ? Z_BUF_ERROR : inflate(&in->z, Z_NO_FLUSH);
        *n = cap - in->z.avail_out;
        SX_CHECK(rc == Z_OK || rc == Z_STREAM_END || (rc == Z_BUF_ERROR && !at_end),
                 SX_ERR_FORMAT, err, in->path,
                 "%s: gzip data is damaged or truncated (%s)", in->path,
                 rc == Z_BUF_ERROR ? "unexpected end of file"
                 : in->z.msg       ? in->z.msg
                                   : "");
        if (rc != Z_STREAM_END)
            continue;
        /* another member may follow, as gzip writes them; anything else is damage */
        if (in->z.avail_in == 0) {
            st = read_some(in, in->raw, GZ_IN_RAW, &got, err);
            if (st != SX_OK)
                goto out;
            in->raw_len = got;
            in->z.next_in = in->raw;
            in->z.avail_in = (uInt)got;
        }
        if (in->z.avail_in == 0) {
            in->done = true;
            break;
        }
        if (in->z.avail_in == 1) { /* the second magic byte may be in the next read */
            unsigned char two[2] = {in->z.next_in[0], 0};
            st = read_some(in, in->raw + 1, GZ_IN_RAW - 1, &got, err);
            if (st != SX_OK)
                goto out;
            in->raw[0] = two[0];
            in->z.next_in = in->raw;
            in->z.avail_in = (uInt)(got + 1);
        }
        SX_CHECK(in->z.avail_in >= 2 && in->z.next_in[0] == 0x1f &&
                     in->z.next_in[1] == 0x8b,
                 SX_ERR_FORMAT, err, in->path,
                 "%s: gzip data is damaged: bytes that are not gzip follow the "
                 "compressed data",
                 in->path);
        SX_CHECK(inflateReset(&in->z) == Z_OK, SX_ERR_FORMAT, err, in->path,
                 "%s: gzip data is damaged", in->path);
    }
out:
    return st;
}

bool sx_gz_in_is_gz(const struct sx_gz_in *in) { return in->gz; }

uint64_t sx_gz_in_size(const struct sx_gz_in *in) { return in->size; }

enum sx_status sx_gz_in_seek(struct sx_gz_in *in, uint64_t off, struct sx_error *err) {
    enum sx_status st = SX_OK;
    SX_CHECK(!in->gz && lseek(in->fd, (off_t)off, SEEK_SET) == (off_t)off, SX_ERR_IO, err,
             in->path, "cannot read %s: %s", in->path,
             in->gz ? "a gzip file is read in order" : strerror(errno));
out:
    return st;
}

void sx_gz_in_close(struct sx_gz_in *in) {
    if (in == NULL)
        return;
    if (in->live)
        inflateEnd(&in->z);
    if (in->fd >= 0)
        close(in->fd);
    free(in->raw);
    free(in);
}

enum sx_status sx_gz_locate(const char *path, uint64_t off, int *line, int *column,
                            struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_gz_in *in = NULL;
    char *buf = NULL;
    const size_t cap = (size_t)1 << 20;
    uint64_t at = 0;
    long l = 1, c = 0;

    *line = 1;
    *column = 0;
    st = sx_gz_in_open(path, &in, err);
    if (st != SX_OK)
        goto out;
    buf = sx_malloc(cap);
    SX_CHECK(buf != NULL, SX_ERR_NOMEM, err, path, "out of memory reading %s", path);
    while (at <= off) {
        size_t n = 0;
        st = sx_gz_in_read(in, buf, cap, &n, err);
        if (st != SX_OK || n == 0)
            break;
        for (size_t i = 0; i < n && at <= off; i++, at++) {
            const unsigned char b = (unsigned char)buf[i];
            if (b == '\n') {
                l++;
                c = 0;
            } else if ((b & 0xc0) != 0x80) {
                c++;
            }
        }
    }
    *line = l > INT32_MAX ? INT32_MAX : (int)l;
    *column = c > INT32_MAX ? INT32_MAX : (int)c;
out:
    free(buf);
    sx_gz_in_close(in);
    return st;
}
