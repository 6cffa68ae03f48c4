/* h5_write_vfd.c - HDF5's file driver of the serial writer: positional writes to the
 * library's own output, a failure kept for the writer (h5_write_vfd.h) */
#include "h5_write_vfd.h"

#include "internal.h"

#include <H5FDpublic.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* HDF5's file: its public part first, as HDF5 requires */
struct vfile {
    H5FD_t pub;
    struct sx_h5vfd *s;
    haddr_t eoa, eof;
};

/* The driver's access property: the writer's shared state. */
struct vinfo {
    struct sx_h5vfd *s;
};

static void keep(struct sx_h5vfd *s, int e) {
    if (s->werr == 0)
        s->werr = e != 0 ? e : EIO;
}

static void *info_copy(const void *info) {
    struct vinfo *c = sx_malloc(sizeof *c);
    if (c != NULL)
        memcpy(c, info, sizeof *c);
    else if (((const struct vinfo *)info)->s != NULL)
        ((const struct vinfo *)info)->s->nomem = true;
    return c;
}

static herr_t info_free(void *info) {
    free(info);
    return 0;
}

static void *info_get(H5FD_t *file) {
    struct vinfo v = {((struct vfile *)file)->s};
    return info_copy(&v);
}

static H5FD_t *v_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr) {
    (void)name;
    (void)flags;
    (void)maxaddr;
    const struct vinfo *info = H5Pget_driver_info(fapl);
    if (info == NULL || info->s == NULL)
        return NULL;
    struct vfile *f = sx_calloc(1, sizeof *f);
    if (f == NULL) {
        info->s->nomem = true;
        return NULL;
    }
    f->s = info->s;
    off_t end = lseek(f->s->fd, 0, SEEK_END);
    f->eof = end > 0 ? (haddr_t)end : 0;
    return &f->pub;
}

static herr_t v_close(H5FD_t *file) {
    free(file);
    return 0;
}

static int v_cmp(const H5FD_t *a, const H5FD_t *b) {
    const struct vfile *x = (const struct vfile *)a, *y = (const struct vfile *)b;
    return x->s->fd < y->s->fd ? -1 : x->s->fd > y->s->fd;
}

static herr_t v_query(const H5FD_t *file, unsigned long *flags) {
    (void)file;
    /* what the memory driver (the writer's before this one) declares for the layout,
     * so that HDF5 lays the file out as it did; not a POSIX handle, which would have
     * HDF5 look for the file by its name, which it has not */
    *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA |
             H5FD_FEAT_DATA_SIEVE | H5FD_FEAT_AGGREGATE_SMALLDATA;
    return 0;
}

static haddr_t v_get_eoa(const H5FD_t *file, H5FD_mem_t type) {
    (void)type;
    return ((const struct vfile *)file)->eoa;
}

static herr_t v_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr) {
    (void)type;
    struct vfile *f = (struct vfile *)file;
    f->eoa = addr;
    if (!f->s->frozen)
        f->s->eoa = addr;
    return 0;
}

static haddr_t v_get_eof(const H5FD_t *file, H5FD_mem_t type) {
    (void)type;
    return ((const struct vfile *)file)->eof;
}

static herr_t v_get_handle(H5FD_t *file, hid_t fapl, void **handle) {
    (void)fapl;
    *handle = &((struct vfile *)file)->s->fd;
    return 0;
}

static herr_t v_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                     void *buf) {
    (void)type;
    (void)dxpl;
    struct vfile *f = (struct vfile *)file;
    char *p = buf;
    while (size > 0) {
        size_t k = size > (1u << 30) ? (1u << 30) : size;
        ssize_t r = pread(f->s->fd, p, k, (off_t)addr);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            /* past the end (space allocated, not written), or a failed read kept
             * for the writer: zeros, as the memory driver reads them */
            if (r < 0)
                keep(f->s, errno);
            memset(p, 0, size);
            break;
        }
        p += r;
        addr += (haddr_t)r;
        size -= (size_t)r;
    }
    return 0;
}

static herr_t v_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr,
                      size_t size, const void *buf) {
    (void)type;
    (void)dxpl;
    struct vfile *f = (struct vfile *)file;
    if (f->s->frozen)
        return 0;
    const char *p = buf;
    if (addr + size > f->eof)
        f->eof = addr + size;
    while (size > 0 && f->s->werr == 0) {
        size_t k = size > (1u << 30) ? (1u << 30) : size;
        ssize_t w = pwrite(f->s->fd, p, k, (off_t)addr);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            keep(f->s, w < 0 ? errno : EIO);
            break;
        }
        p += w;
        addr += (haddr_t)w;
        size -= (size_t)w;
    }
    return 0;
}

static herr_t v_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing) {
    (void)dxpl;
    (void)closing;
    struct vfile *f = (struct vfile *)file;
    if (f->s->frozen || f->eoa == f->eof)
        return 0;
    if (f->s->werr == 0 && ftruncate(f->s->fd, (off_t)f->eoa) != 0)
        keep(f->s, errno);
    f->eof = f->eoa;
    return 0;
}

static const H5FD_class_t vclass = {
    .name = "scope-export-out",
    .maxaddr = (haddr_t)INT64_MAX,
    .fc_degree = H5F_CLOSE_WEAK,
    .fapl_size = sizeof(struct vinfo),
    .fapl_get = info_get,
    .fapl_copy = info_copy,
    .fapl_free = info_free,
    .open = v_open,
    .close = v_close,
    .cmp = v_cmp,
    .query = v_query,
    .get_eoa = v_get_eoa,
    .set_eoa = v_set_eoa,
    .get_eof = v_get_eof,
    .get_handle = v_get_handle,
    .read = v_read,
    .write = v_write,
    .truncate = v_truncate,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

herr_t sx_h5vfd_use(struct sx_h5vfd *s, hid_t fapl) {
    s->driver = H5FDregister(&vclass);
    if (s->driver < 0)
        return -1;
    struct vinfo info = {s};
    if (H5Pset_driver(fapl, s->driver, &info) < 0) {
        sx_h5vfd_drop(s);
        s->nomem = false; /* the writer falls back to the memory driver */
        return -1;
    }
    return 0;
}

void sx_h5vfd_drop(struct sx_h5vfd *s) {
    if (s->driver >= 0)
        H5FDunregister(s->driver);
    s->driver = H5I_INVALID_HID;
}
