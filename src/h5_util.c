/* h5_util.c - HDF5 helpers the readers share: ids, a quiet error stack, typed reads of
 * datasets and attributes, group listings, object names for messages */
#include "h5_util.h"
#include "cli_support.h"
#include "fault.h"
#include "h5_direct.h"
#include "h5_direct_heap.h"
#include "h5_reader.h"
#include "json_value.h"
#include "json_write.h"
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const sx_h5_col_names[SX_NCOLS] = {
    "start_times", "end_times",  "gpu_durations", "call_ids",
    "parent_ids",  "thread_ids", "task_ids",      "await_ns",
};

const char *const sx_h5_rd_names[RD_N] = {"source_files", "source_texts", "tags",
                                          "source_lines", "exclusive_totals"};

void sx_h5_quiet_begin(struct h5_quiet *q) {
    q->func = NULL;
    q->data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void sx_h5_quiet_end(const struct h5_quiet *q) {
    H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
}

/* Each read may fail on purpose in the fault tests (SX_FAULT_READ). */
herr_t sx_h5_dread(hid_t d, hid_t mt, hid_t ms, hid_t fs, hid_t x, void *buf) {
    return sx_fault(SX_FAULT_READ, 0) ? -1 : (H5Dread)(d, mt, ms, fs, x, buf);
}

herr_t sx_h5_aread(hid_t a, hid_t mt, void *buf) {
    return sx_fault(SX_FAULT_READ, 0) ? -1 : (H5Aread)(a, mt, buf);
}

/* ------------------------------------------------------------------ */
/* Variable-length values: their lengths checked before HDF5 reads them */

/*
 * HDF5 takes memory for whatever length a variable-length element claims
 * before it reads the heap object: one damaged length makes it allocate
 * gigabytes. So the elements themselves (a 4-byte length, the collection's
 * address, a 4-byte object index, as the file stores them) are read first:
 * a conversion from any variable-length type to an opaque type of the same
 * size with this tag leaves the stored bytes as they are.
 */
static const char vlen_desc_tag[] = "scope-export vlen descriptor";

static herr_t vlen_desc_conv(hid_t src, hid_t dst, H5T_cdata_t *cd, size_t n,
                             size_t stride, size_t bkg_stride, void *buf, void *bkg,
                             hid_t dxpl) {
    (void)n;
    (void)stride;
    (void)bkg_stride;
    (void)buf;
    (void)bkg;
    (void)dxpl;
    if (cd->command != H5T_CONV_INIT)
        return 0; /* the bytes are already where they belong */
    if (H5Tget_class(dst) != H5T_OPAQUE ||
        (H5Tget_class(src) != H5T_VLEN && H5Tis_variable_str(src) <= 0) ||
        H5Tget_size(src) != H5Tget_size(dst))
        return -1;
    char *tag = H5Tget_tag(dst);
    bool ours = tag != NULL && strcmp(tag, vlen_desc_tag) == 0;
    H5free_memory(tag);
    if (!ours)
        return -1;
    cd->need_bkg = H5T_BKG_NO;
    return 0;
}

/* Row of the k-th element of selection 'fs' (H5S_ALL: k), for messages. */
static uint64_t sel_row(hid_t fs, uint64_t k) {
    hsize_t c[2 * H5S_MAX_RANK];
    if (fs == H5S_ALL)
        return k;
    if (H5Sget_select_type(fs) == H5S_SEL_POINTS && H5Sget_simple_extent_ndims(fs) == 1 &&
        H5Sget_select_elem_pointlist(fs, k, 1, c) >= 0)
        return c[0];
    if (H5Sget_select_type(fs) == H5S_SEL_HYPERSLABS &&
        H5Sget_simple_extent_ndims(fs) == 1 && H5Sget_select_hyper_nblocks(fs) == 1 &&
        H5Sget_select_hyper_blocklist(fs, 0, 1, c) >= 0)
        return c[0] + k;
    return k;
}

void sx_h5_facts_fill(struct sx_h5_facts *ff, hid_t file, int hfd) {
    const hid_t fcpl = file >= 0 ? H5Fget_create_plist(file) : -1;
    size_t sa = 0, sl = 0;
    hsize_t fsize = 0, ub = 0;
    memset(ff, 0, sizeof *ff);
    ff->known = true;
    ff->fd = -1;
    ff->sizes_ok = fcpl >= 0 && H5Pget_sizes(fcpl, &sa, &sl) >= 0 && sa >= 2 && sa <= 8 &&
                   H5Fget_filesize(file, &fsize) >= 0;
    ff->sa = (unsigned)sa;
    ff->sl = (unsigned)sl;
    ff->size = (uint64_t)fsize;
    /* read where HDF5 reads, not by the file's name: the name may meanwhile be
     * another file's */
    if (ff->sizes_ok && H5Pget_userblock(fcpl, &ub) >= 0 && sl >= 2 && sl <= 8) {
        ff->userblock = (uint64_t)ub;
        ff->fd = hfd;
    }
    sx_h5_close_id(fcpl);
}

/* The facts of obj's file, looked up. */
static void file_facts(hid_t obj, struct sx_h5_facts *ff) {
    const hid_t file = H5Iget_file_id(obj);
    sx_h5_facts_fill(ff, file, file >= 0 ? sx_h5_posix_fd(file) : -1);
    sx_h5_close_id(file);
}

enum sx_status sx_h5_vlen_guard(hid_t obj, hid_t ms, hid_t fs, const char *src,
                                struct sx_error *err) {
    return sx_h5_vlen_guard_in(NULL, obj, ms, fs, src, err);
}

enum sx_status sx_h5_vlen_guard_in(struct sx_h5_facts *ff, hid_t obj, hid_t ms, hid_t fs,
                                   const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t t = -1, sup = -1, sp = -1, op = -1;
    struct sx_h5_facts here;
    unsigned char *raw = NULL;
    uint64_t *rows = NULL;
    bool is_attr = H5Iget_type(obj) == H5I_ATTR, registered = false;
    t = is_attr ? H5Aget_type(obj) : H5Dget_type(obj);
    SX_CHECK(t >= 0, SX_ERR_FORMAT, err, src, "%s has an unreadable datatype", src);
    size_t base = 1;
    if (H5Tget_class(t) == H5T_VLEN) {
        sup = H5Tget_super(t);
        base = sup >= 0 ? H5Tget_size(sup) : 0;
        base = base > 0 ? base : 1;
    } else if (H5Tis_variable_str(t) <= 0) {
        goto out; /* fixed-size elements: their bytes are all in the file */
    }
    hssize_t n = -1;
    if (is_attr || (ms == H5S_ALL && fs == H5S_ALL)) {
        sp = is_attr ? H5Aget_space(obj) : H5Dget_space(obj);
        n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    } else {
        n = H5Sget_select_npoints(ms != H5S_ALL ? ms : fs);
    }
    SX_CHECK(n >= 0, SX_ERR_FORMAT, err, src, "%s has a damaged dataspace", src);
    if (n == 0)
        goto out;
    if (ff == NULL)
        ff = &here;
    if (ff == &here || !ff->known)
        file_facts(obj, ff);
    SX_CHECK(ff->sizes_ok, SX_ERR_FORMAT, err, src,
             "%s: the file's superblock cannot be read", src);
    const size_t sa = ff->sa;
    const uint64_t fsize = ff->size;
    const size_t esize = 4 + sa + 4;
    /* a filtered dataset of elements compresses at most ~1032:1 (deflate) */
    SX_CHECK((double)n * (double)esize <= (double)fsize * 1032.0 + 65536.0, SX_ERR_FORMAT,
             err, src,
             "%s claims %lld values, more than the file's %llu bytes can hold; the file "
             "is truncated or damaged",
             src, (long long)n, (unsigned long long)fsize);
    raw = sx_malloc((size_t)n * esize);
    SX_CHECK(raw != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    op = H5Tcreate(H5T_OPAQUE, esize);
    SX_CHECK(op >= 0 && H5Tset_tag(op, vlen_desc_tag) >= 0, SX_ERR_INTERNAL, err, src,
             "%s: HDF5 cannot make a datatype", src);
    registered = H5Tregister(H5T_PERS_SOFT, vlen_desc_tag, t, op, vlen_desc_conv) >= 0;
    SX_CHECK(registered, SX_ERR_INTERNAL, err, src,
             "%s: HDF5 cannot register a conversion", src);
    herr_t rc =
        is_attr ? H5Aread(obj, op, raw) : H5Dread(obj, op, ms, fs, H5P_DEFAULT, raw);
    SX_CHECK(rc >= 0, SX_ERR_IO, err, src,
             "%s cannot be read; the file is truncated or damaged", src);
    if (!is_attr && fs != H5S_ALL) {
        rows = sx_malloc((size_t)n * sizeof *rows);
        SX_CHECK(rows != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        for (hssize_t k = 0; k < n; k++)
            rows[k] = sel_row(fs, (uint64_t)k);
    }
    uint64_t total = 0;
    for (hssize_t k = 0; k < n; k++) {
        const unsigned char *e = raw + (size_t)k * esize;
        uint64_t len = 0, addr = 0;
        for (unsigned b = 0; b < 4; b++)
            len |= (uint64_t)e[b] << (8 * b);
        for (unsigned b = 0; b < sa; b++)
            addr |= (uint64_t)e[4 + b] << (8 * b);
        if (addr == 0)
            continue; /* HDF5's NULL, whatever the length says */
        st = sx_vlen_claim(len * base, true, &total, (uint64_t)fsize, src,
                           rows != NULL ? rows[k] : (uint64_t)k, err);
        if (st != SX_OK)
            goto out;
    }
    /* and each must name a heap object that holds it: HDF5 would copy what
     * lies past a shorter one */
    if (ff->fd >= 0)
        st = sx_vlen_check_heap(ff->fd, fsize, ff->userblock, ff->sa, ff->sl, raw,
                                (size_t)n, base, rows, src, err);
out:
    if (registered)
        H5Tunregister(H5T_PERS_SOFT, vlen_desc_tag, t, op, vlen_desc_conv);
    free(rows);
    free(raw);
    sx_h5_close_id(op);
    sx_h5_close_id(sp);
    sx_h5_close_id(sup);
    sx_h5_close_id(t);
    return st;
}

/* ------------------------------------------------------------------ */
/* Objects that would make the reader read other files                */

/* Links kept at most: the few groups of a run's layout hold tens; a file of many more
 * is looked up by HDF5 as before. */
enum { LINKS_MAX = 4096 };

struct sx_h5_links {
    char **path;   /* sorted */
    haddr_t *addr; /* of the hard links' objects */
    size_t n, cap;
    bool off; /* cannot answer for the file */
};

void sx_h5_links_free(struct sx_h5_links *l) {
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->path[i]);
    free(l->path);
    free(l->addr);
    free(l);
}

/* Keep link 'name' (hard, at 'addr'); off when it cannot be kept. */
static void links_add(struct sx_h5_links *l, const char *name, haddr_t addr) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        char **p = cap <= LINKS_MAX ? sx_realloc(l->path, cap * sizeof *p) : NULL;
        if (p != NULL)
            l->path = p;
        haddr_t *a = p != NULL ? sx_realloc(l->addr, cap * sizeof *a) : NULL;
        if (a != NULL)
            l->addr = a;
        if (a == NULL) {
            l->off = true;
            return;
        }
        l->cap = cap;
    }
    l->path[l->n] = sx_strdup(name);
    if (l->path[l->n] == NULL) {
        l->off = true;
        return;
    }
    l->addr[l->n++] = addr;
}

static int cmp_path(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_addr(const void *a, const void *b) {
    const haddr_t x = *(const haddr_t *)a, y = *(const haddr_t *)b;
    return (x > y) - (x < y);
}

struct foreign_walk {
    const char *path;
    struct sx_error *err;
    enum sx_status st;
    struct sx_h5_links *links; /* or NULL */
};

static herr_t foreign_cb(hid_t g, const char *name, const H5L_info_t *info, void *op) {
    struct foreign_walk *w = op;
    enum sx_status st = SX_OK;
    struct sx_error *err = w->err;
    char src[1200];
    (void)g;
    snprintf(src, sizeof src, "%.1000s:/%.190s", w->path, name);
    SX_CHECK(info->type == H5L_TYPE_HARD || info->type == H5L_TYPE_SOFT,
             SX_ERR_UNSUPPORTED, err, src,
             "%s is %s; a link to another file is not followed, the run must be in "
             "one file",
             src,
             info->type == H5L_TYPE_EXTERNAL ? "an external link"
                                             : "a user-defined link");
    if (w->links != NULL && !w->links->off) {
        if (info->type == H5L_TYPE_SOFT)
            w->links->off = true; /* a path through it is HDF5's to resolve */
        else
            links_add(w->links, name, info->u.address);
    }
out:
    w->st = st;
    return st == SX_OK ? 0 : 1;
}

/* The data of a dataset whose creation properties are 'dcpl' lies in its file. */
static enum sx_status local_data(hid_t dcpl, const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    SX_CHECK(H5Pget_layout(dcpl) != H5D_VIRTUAL, SX_ERR_UNSUPPORTED, err, src,
             "%s is a virtual dataset, its data in other files; it is not read, the run "
             "must be in one file",
             src);
    SX_CHECK(H5Pget_external_count(dcpl) == 0, SX_ERR_UNSUPPORTED, err, src,
             "%s has external storage, its data in other files; it is not read, the run "
             "must be in one file",
             src);
out:
    return st;
}

enum sx_status sx_h5_local_data(hid_t d, const char *src, struct sx_error *err) {
    const hid_t dcpl = H5Dget_create_plist(d);
    /* what cannot be looked at here fails where it is read */
    const enum sx_status st = dcpl >= 0 ? local_data(dcpl, src, err) : SX_OK;
    sx_h5_close_id(dcpl);
    return st;
}

static enum sx_status refuse_foreign(hid_t file, const char *path,
                                     struct sx_h5_links *links, struct sx_error *err) {
    struct foreign_walk w = {path, err, SX_OK, links};
    herr_t rc = H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, foreign_cb, &w);
    if (w.st == SX_OK && rc < 0)
        w.st = sx_error_set(err, SX_ERR_FORMAT, path,
                            "%s: its groups cannot be listed; the file is truncated or "
                            "damaged",
                            path);
    return w.st;
}

enum sx_status sx_h5_refuse_foreign(hid_t file, const char *path, struct sx_error *err) {
    return refuse_foreign(file, path, NULL, err);
}

enum sx_status sx_h5_refuse_foreign_links(hid_t file, const char *path,
                                          struct sx_h5_links **links,
                                          struct sx_error *err) {
    struct sx_h5_links *l = sx_calloc(1, sizeof *l);
    *links = NULL;
    const enum sx_status st = refuse_foreign(file, path, l, err);
    if (st == SX_OK && l != NULL && !l->off) {
        /* an object at two paths: the walk listed what lies under one of them only */
        qsort(l->addr, l->n, sizeof *l->addr, cmp_addr);
        for (size_t i = 1; i < l->n; i++)
            if (l->addr[i] == l->addr[i - 1])
                l->off = true;
        qsort(l->path, l->n, sizeof *l->path, cmp_path);
    }
    if (st == SX_OK && l != NULL && !l->off) {
        *links = l;
        l = NULL;
    }
    sx_h5_links_free(l);
    return st;
}

int sx_h5_posix_fd(hid_t file) {
    void *handle = NULL;
    hid_t fapl = H5Fget_access_plist(file);
    bool sec2 = fapl >= 0 && H5Pget_driver(fapl) == H5FD_SEC2;
    if (fapl >= 0)
        H5Pclose(fapl);
    if (!sec2 || H5Fget_vfd_handle(file, H5P_DEFAULT, &handle) < 0 || handle == NULL)
        return -1;
    return *(const int *)handle;
}

void sx_h5_close_id(hid_t id) {
    if (id < 0)
        return;
    switch (H5Iget_type(id)) {
    case H5I_FILE:
        H5Fclose(id);
        break;
    case H5I_GROUP:
        H5Gclose(id);
        break;
    case H5I_DATASET:
        H5Dclose(id);
        break;
    case H5I_ATTR:
        H5Aclose(id);
        break;
    case H5I_DATATYPE:
        H5Tclose(id);
        break;
    case H5I_DATASPACE:
        H5Sclose(id);
        break;
    case H5I_GENPROP_LST:
        H5Pclose(id);
        break;
    default:
        break;
    }
}

/* "file.h5:/object" for error sources (the object's path made absolute). */
const char *sx_h5_src_name(char *buf, size_t n, const char *path, const char *obj) {
    snprintf(buf, n, "%s:%s%s", path, obj[0] == '/' ? "" : "/", obj);
    return buf;
}

bool sx_h5_link_exists(hid_t loc, const char *name) {
    /* H5Lexists fails on a missing intermediate group; check step by step. */
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", name);
    for (char *p = tmp; *p; p++) {
        if (*p == '/' && p != tmp) {
            *p = '\0';
            if (H5Lexists(loc, tmp, H5P_DEFAULT) <= 0)
                return false;
            *p = '/';
        }
    }
    return H5Lexists(loc, tmp, H5P_DEFAULT) > 0;
}

bool sx_h5_has_link(const struct sx_h5 *h5, hid_t loc, const char *name) {
    if (h5 == NULL || h5->links == NULL || loc != h5->file || name[0] == '/')
        return sx_h5_link_exists(loc, name);
    return h5->links->n > 0 && bsearch(&name, h5->links->path, h5->links->n,
                                       sizeof *h5->links->path, cmp_path) != NULL;
}

/* ------------------------------------------------------------------ */
/* Generic dataset readers                                            */

/* Length of a 1-D dataset (a scalar counts as 1); -1 when not 1-D. */
int64_t sx_h5_dset_len(hid_t d) {
    hid_t sp = H5Dget_space(d);
    if (sp < 0)
        return -1;
    int nd = H5Sget_simple_extent_ndims(sp);
    hsize_t dims[H5S_MAX_RANK];
    int64_t n = -1;
    if (nd == 0)
        n = H5Sget_simple_extent_type(sp) == H5S_NULL ? 0 : 1;
    else if (nd == 1 && H5Sget_simple_extent_dims(sp, dims, NULL) == 1)
        n = (int64_t)dims[0];
    H5Sclose(sp);
    return n;
}

/*
 * Refuse sizes the file cannot hold before taking memory for them: an
 * unfiltered dataset's bytes are in the file; a filtered one compresses
 * at most ~1032:1 (deflate's limit).
 */
enum sx_status sx_h5_check_claim(const struct sx_h5 *h5, hid_t d, uint64_t n, size_t elem,
                                 const char *src, struct sx_error *err) {
    const hid_t dcpl = H5Dget_create_plist(d);
    const enum sx_status st = sx_h5_check_claim_dcpl(h5, dcpl, n, elem, src, err);
    sx_h5_close_id(dcpl);
    return st;
}

enum sx_status sx_h5_check_claim_dcpl(const struct sx_h5 *h5, hid_t dcpl, uint64_t n,
                                      size_t elem, const char *src,
                                      struct sx_error *err) {
    enum sx_status st = SX_OK;
    if (dcpl >= 0) {
        st = local_data(dcpl, src, err);
        if (st != SX_OK)
            goto out;
    }
    const int nfilters = dcpl >= 0 ? H5Pget_nfilters(dcpl) : 0;
    double need = (double)n * (double)elem;
    double have = (double)h5->file_size;
    if (nfilters > 0)
        have *= 1032.0;
    SX_CHECK(need <= have + 65536.0, SX_ERR_FORMAT, err, src,
             "%s claims %" PRIu64 " values, more than the file's %lld bytes can hold; "
             "the file is truncated or damaged",
             src, n, (long long)h5->file_size);
    /* HDF5 filters this library cannot decode are named, not guessed at. */
    for (int i = 0; i < nfilters; i++) {
        unsigned flags = 0, cd[8];
        size_t ncd = 8;
        char fname[64] = "";
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd,
                                         sizeof fname, fname, NULL);
        if (id >= 0 && H5Zfilter_avail(id) <= 0) {
            const char *known = id == 32000   ? "LZF"
                                : id == 32015 ? "Zstandard"
                                : id == 307   ? "bzip2"
                                : id == 32001 ? "Blosc"
                                : id == 32008 ? "bitshuffle"
                                              : (fname[0] ? fname : "unknown");
            st =
                sx_error_set(err, SX_ERR_UNSUPPORTED, src,
                             "%s is compressed with HDF5 filter %d (%s), which this HDF5 "
                             "build cannot decode; install the filter plugin "
                             "(HDF5_PLUGIN_PATH) or repack the file with h5repack",
                             src, (int)id, known);
            goto out;
        }
    }
out:
    return st;
}

/* Read a whole 1-D integer dataset as int64 (or uint64 bits when 'as_unsigned'). */
enum sx_status sx_h5_read_ints(struct sx_h5 *h5, hid_t loc, const char *name,
                               bool as_unsigned, int64_t **out, uint64_t *n_out,
                               struct sx_error *err) {
    enum sx_status st = SX_OK;
    char src[1100];
    hid_t d = -1, t = -1;
    int64_t *v = NULL;
    sx_h5_src_name(src, sizeof src, h5->path, name);
    d = H5Dopen2(loc, name, H5P_DEFAULT);
    SX_CHECK(d >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
    t = H5Dget_type(d);
    SX_CHECK(t >= 0 && H5Tget_class(t) == H5T_INTEGER, SX_ERR_FORMAT, err, src,
             "%s has the wrong datatype: integers expected", src);
    int64_t n = sx_h5_dset_len(d);
    SX_CHECK(n >= 0, SX_ERR_FORMAT, err, src, "%s is not one-dimensional", src);
    struct sx_direct_col col = {.dset = -1};
    hid_t dcpl = H5Dget_create_plist(d);
    st = sx_h5_check_claim_dcpl(h5, dcpl, (uint64_t)n, H5Tget_size(t), src, err);
    if (st == SX_OK && n > 0)
        sx_direct_int_col_dcpl(h5->direct, d, t, dcpl, &col);
    sx_h5_close_id(dcpl);
    if (st != SX_OK)
        goto out;
    v = sx_malloc(((size_t)n + 1) * sizeof *v);
    SX_CHECK(v != NULL, SX_ERR_NOMEM, err, src, "out of memory reading %s", src);
    const bool from_signed = as_unsigned && H5Tget_sign(t) == H5T_SGN_2;
    if (n > 0 && col.ok) {
        /* a contiguous column read at its address: HDF5's conversion of a few
         * rows costs a zeroed buffer of a megabyte, and files of many small
         * indexes (native runs) paid it for each column. The direct view takes
         * no uint64 column, so a value is what HDF5 gives, signed or not. */
        const struct sx_direct_span all = {0, (uint64_t)n, v};
        st = sx_direct_read_spans(h5->direct, &col, &all, 1, src, err);
        if (st != SX_OK)
            goto out;
    } else if (n > 0) {
        /* HDF5 turns a negative value read as unsigned into 0: a signed column
         * is read signed, and its negative values refused below */
        herr_t rc =
            H5Dread(d, as_unsigned && !from_signed ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64,
                    H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
        SX_CHECK(rc >= 0, SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
    }
    /* a count or offset stored signed: the direct view and HDF5 both give its
     * negative values as they are (an unsigned column has none) */
    for (int64_t r = 0; from_signed && r < n; r++)
        SX_CHECK(
            v[r] >= 0, SX_ERR_FORMAT, err, src,
            "%s row %" PRId64 " holds %" PRId64
            ", a negative value where a count or offset belongs; the file is damaged",
            src, r, v[r]);
    *out = v;
    v = NULL;
    *n_out = (uint64_t)n;
out:
    free(v);
    sx_h5_close_id(t);
    sx_h5_close_id(d);
    return st;
}

static enum sx_status sx_h5_read_doubles(struct sx_h5 *h5, hid_t loc, const char *name,
                                         double **out, uint64_t *n_out, hsize_t *dims2,
                                         int *ndims, struct sx_error *err) {
    enum sx_status st = SX_OK;
    char src[1100];
    hid_t d = -1, t = -1, sp = -1;
    double *v = NULL;
    sx_h5_src_name(src, sizeof src, h5->path, name);
    d = H5Dopen2(loc, name, H5P_DEFAULT);
    SX_CHECK(d >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
    t = H5Dget_type(d);
    H5T_class_t cls = H5Tget_class(t);
    SX_CHECK(cls == H5T_FLOAT || cls == H5T_INTEGER, SX_ERR_FORMAT, err, src,
             "%s has the wrong datatype: numbers expected", src);
    sp = H5Dget_space(d);
    int nd = H5Sget_simple_extent_ndims(sp);
    hsize_t dims[H5S_MAX_RANK] = {0};
    SX_CHECK(nd >= 0 && nd <= 2, SX_ERR_FORMAT, err, src,
             "%s has %d dimensions; at most 2 expected", src, nd);
    H5Sget_simple_extent_dims(sp, dims, NULL);
    uint64_t n = nd == 0 ? 1 : nd == 1 ? dims[0] : dims[0] * dims[1];
    st = sx_h5_check_claim(h5, d, n, H5Tget_size(t), src, err);
    if (st != SX_OK)
        goto out;
    v = sx_malloc((n + 1) * sizeof *v);
    SX_CHECK(v != NULL, SX_ERR_NOMEM, err, src, "out of memory reading %s", src);
    if (n > 0)
        SX_CHECK(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0,
                 SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
    if (ndims != NULL)
        *ndims = nd;
    if (dims2 != NULL) {
        dims2[0] = nd >= 1 ? dims[0] : 1;
        dims2[1] = nd == 2 ? dims[1] : 0;
    }
    *out = v;
    v = NULL;
    *n_out = n;
out:
    free(v);
    sx_h5_close_id(sp);
    sx_h5_close_id(t);
    sx_h5_close_id(d);
    return st;
}

/* Strings of a vlen or fixed-length string type, decoded as h5py+errors="replace". */
static enum sx_status convert_strings(struct sx_h5_facts *ff, hid_t obj, bool is_attr,
                                      hid_t ftype, uint64_t n, char ***out,
                                      const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t mt = -1, sp = -1;
    char **v = NULL, *raw = NULL, **vl = NULL;
    v = sx_calloc(n + 1, sizeof *v);
    SX_CHECK(v != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    if (n == 0)
        goto done;
    if (H5Tis_variable_str(ftype) > 0) {
        mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(ftype));
        st = sx_h5_vlen_guard_in(ff, obj, H5S_ALL, H5S_ALL, src, err);
        if (st != SX_OK)
            goto out;
        vl = sx_calloc(n, sizeof *vl);
        SX_CHECK(vl != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        herr_t rc = is_attr ? H5Aread(obj, mt, vl)
                            : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, vl);
        SX_CHECK(rc >= 0, SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
        for (uint64_t i = 0; i < n; i++) {
            const char *s = vl[i] ? vl[i] : "";
            v[i] = sx_utf8_sanitize(s, strlen(s));
            if (v[i] == NULL)
                break;
        }
        sp = is_attr ? H5Aget_space(obj) : H5Dget_space(obj);
        H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, vl);
        for (uint64_t i = 0; i < n; i++)
            SX_CHECK(v[i] != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    } else {
        size_t w = H5Tget_size(ftype);
        SX_CHECK(w > 0, SX_ERR_FORMAT, err, src, "%s has a zero-width string type", src);
        raw = sx_malloc(w * n + 1);
        SX_CHECK(raw != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        mt = H5Tcopy(ftype);
        herr_t rc = is_attr ? H5Aread(obj, mt, raw)
                            : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw);
        SX_CHECK(rc >= 0, SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
        for (uint64_t i = 0; i < n; i++) {
            const char *s = raw + i * w;
            size_t len = w;
            /* numpy's S dtype drops trailing NULs only */
            while (len > 0 && s[len - 1] == '\0')
                len--;
            v[i] = sx_utf8_sanitize(s, len);
            SX_CHECK(v[i] != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        }
    }
done:
    *out = v;
    v = NULL;
out:
    if (v != NULL) {
        for (uint64_t i = 0; i < n; i++)
            free(v[i]);
        free(v);
    }
    free(vl);
    free(raw);
    sx_h5_close_id(sp);
    sx_h5_close_id(mt);
    return st;
}

/*
 * All 'n' strings of dataset 'd' through the heap walker (h5_direct_heap.h),
 * decoded as convert_strings decodes them. SX_ERR_UNSUPPORTED, with nothing
 * said, when HDF5 is to read them: no direct reads, a dataset the walker does
 * not read, a heap collection of a version it does not know. A run's many small
 * files (native runs: four string datasets each) paid for HDF5's read and the
 * guard before it in each.
 */
static enum sx_status walk_strings(struct sx_h5 *h5, hid_t d, uint64_t n, char ***out,
                                   const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_vlen *v = NULL;
    struct sx_buf text = {0};
    size_t *off = NULL;
    char **sv = NULL;
    st = sx_direct_strings_open(h5->direct, d, src, &v, err);
    if (st != SX_OK)
        goto out;
    if (v == NULL || n == 0 || n > SIZE_MAX / sizeof *off - 1) {
        st = SX_ERR_UNSUPPORTED;
        goto out;
    }
    off = sx_malloc((n + 1) * sizeof *off);
    sv = sx_calloc(n + 1, sizeof *sv);
    SX_CHECK(off != NULL && sv != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    st = sx_vlen_read(v, NULL, 0, (size_t)n, &text, off, src, err);
    if (st != SX_OK)
        goto out;
    for (uint64_t i = 0; i < n; i++) {
        sv[i] = sx_h5_text_string(&text, off, (size_t)i);
        SX_CHECK(sv[i] != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    }
    *out = sv;
    sv = NULL;
out:
    sx_h5_free_strv(sv, n);
    free(off);
    sx_buf_free(&text);
    sx_vlen_close(v);
    return st;
}

char *sx_h5_text_string(const struct sx_buf *text, const size_t *off, size_t k) {
    const char *q = text->data != NULL ? text->data + off[k] : "";
    return sx_utf8_sanitize(q, strnlen(q, off[k + 1] - off[k]));
}

enum sx_status sx_h5_read_strings(struct sx_h5 *h5, hid_t loc, const char *name,
                                  char ***out, uint64_t *n_out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    char src[1100];
    hid_t d = -1, t = -1;
    sx_h5_src_name(src, sizeof src, h5->path, name);
    d = H5Dopen2(loc, name, H5P_DEFAULT);
    SX_CHECK(d >= 0, SX_ERR_FORMAT, err, src, "%s cannot be opened", src);
    t = H5Dget_type(d);
    SX_CHECK(t >= 0 && H5Tget_class(t) == H5T_STRING, SX_ERR_FORMAT, err, src,
             "%s has the wrong datatype: strings expected", src);
    int64_t n = sx_h5_dset_len(d);
    SX_CHECK(n >= 0, SX_ERR_FORMAT, err, src, "%s is not one-dimensional", src);
    st = sx_h5_check_claim(h5, d, (uint64_t)n,
                           H5Tis_variable_str(t) > 0 ? 16 : H5Tget_size(t), src, err);
    if (st != SX_OK)
        goto out;
    st = h5->direct != NULL && H5Tis_variable_str(t) > 0
             ? walk_strings(h5, d, (uint64_t)n, out, src, err)
             : SX_ERR_UNSUPPORTED;
    if (st == SX_ERR_UNSUPPORTED)
        st = convert_strings(&h5->facts, d, false, t, (uint64_t)n, out, src, err);
    if (st == SX_OK)
        *n_out = (uint64_t)n;
out:
    sx_h5_close_id(t);
    sx_h5_close_id(d);
    return st;
}

void sx_h5_free_strv(char **v, uint64_t n) {
    if (v == NULL)
        return;
    for (uint64_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* ------------------------------------------------------------------ */
/* Attributes                                                         */

/* h5py writes numpy bools as an int8 enum {FALSE 0, TRUE 1}. */
static bool is_bool_enum(hid_t t) {
    if (H5Tget_class(t) != H5T_ENUM || H5Tget_nmembers(t) != 2)
        return false;
    char *a = H5Tget_member_name(t, 0), *b = H5Tget_member_name(t, 1);
    bool yes = a && b && strcmp(a, "FALSE") == 0 && strcmp(b, "TRUE") == 0;
    H5free_memory(a);
    H5free_memory(b);
    return yes;
}

/* One element (at 'p', of native type class) as a value. */
static enum sx_status attr_values(struct sx_h5_facts *ff, hid_t a, hid_t t, uint64_t n,
                                  struct sx_value *vals, const char *src,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    H5T_class_t cls = H5Tget_class(t);
    void *buf = NULL;
    char **strs = NULL;
    if (cls == H5T_INTEGER || (cls == H5T_ENUM && !is_bool_enum(t))) {
        bool uns = cls == H5T_INTEGER && H5Tget_sign(t) == H5T_SGN_NONE;
        buf = sx_malloc((n + 1) * 8);
        SX_CHECK(buf != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        hid_t base = cls == H5T_ENUM ? H5Tget_super(t) : -1;
        if (base >= 0) {
            uns = H5Tget_sign(base) == H5T_SGN_NONE;
            H5Tclose(base);
        }
        hid_t mt = uns ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64;
        if (cls == H5T_ENUM) {
            /* HDF5 converts enums only to enums: read the base integers, convert in
             * place. */
            hid_t b2 = H5Tget_super(t);
            herr_t rc = H5Aread(a, b2, buf);
            if (rc >= 0)
                rc = H5Tconvert(b2, mt, n, buf, NULL, H5P_DEFAULT);
            H5Tclose(b2);
            SX_CHECK(rc >= 0, SX_ERR_IO, err, src, "%s cannot be read", src);
        } else {
            SX_CHECK(H5Aread(a, mt, buf) >= 0, SX_ERR_IO, err, src, "%s cannot be read",
                     src);
        }
        for (uint64_t i = 0; i < n; i++) {
            if (uns) {
                uint64_t u = ((const uint64_t *)buf)[i];
                if (u > (uint64_t)INT64_MAX) {
                    vals[i].kind = SX_V_UINT;
                    vals[i].u.u = u;
                } else {
                    vals[i] = sx_value_int((int64_t)u);
                }
            } else {
                vals[i] = sx_value_int(((const int64_t *)buf)[i]);
            }
        }
    } else if (cls == H5T_ENUM) {
        buf = sx_malloc(n + 1);
        SX_CHECK(buf != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        hid_t b2 = H5Tget_super(t);
        hid_t mem = H5Tcopy(H5T_NATIVE_INT8);
        herr_t rc = H5Aread(a, b2, buf);
        if (rc >= 0)
            rc = H5Tconvert(b2, mem, n, buf, NULL, H5P_DEFAULT);
        H5Tclose(mem);
        H5Tclose(b2);
        SX_CHECK(rc >= 0, SX_ERR_IO, err, src, "%s cannot be read", src);
        for (uint64_t i = 0; i < n; i++)
            vals[i] = sx_value_bool(((const signed char *)buf)[i] != 0);
    } else if (cls == H5T_FLOAT) {
        buf = sx_malloc((n + 1) * sizeof(double));
        SX_CHECK(buf != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        SX_CHECK(H5Aread(a, H5T_NATIVE_DOUBLE, buf) >= 0, SX_ERR_IO, err, src,
                 "%s cannot be read", src);
        for (uint64_t i = 0; i < n; i++)
            vals[i] = sx_value_float(((const double *)buf)[i]);
    } else if (cls == H5T_STRING) {
        st = convert_strings(ff, a, true, t, n, &strs, src, err);
        if (st != SX_OK)
            goto out;
        for (uint64_t i = 0; i < n; i++) {
            vals[i].kind = SX_V_STR;
            vals[i].u.str.s = strs[i];
            vals[i].u.str.len = strlen(strs[i]);
            strs[i] = NULL;
        }
    } else {
        st = sx_error_set(
            err, SX_ERR_UNSUPPORTED, src,
            "%s has a datatype (HDF5 class %d) that cannot be written as JSON", src,
            (int)cls);
    }
out:
    if (strs != NULL) {
        for (uint64_t i = 0; i < n; i++)
            free(strs[i]);
        free(strs);
    }
    free(buf);
    return st;
}

/* Nest a flat row-major list into arrays of the attribute's shape. */
static bool nest(struct sx_value *out, struct sx_value *flat, const hsize_t *dims, int nd,
                 uint64_t *pos) {
    sx_value_array(out);
    for (hsize_t i = 0; i < dims[0]; i++) {
        struct sx_value item;
        if (nd > 1) {
            if (!nest(&item, flat, dims + 1, nd - 1, pos))
                goto fail;
        } else {
            item = flat[(*pos)++];
        }
        if (!sx_value_push(out, item)) /* frees item */
            goto fail;
    }
    return true;
fail:
    /* what was taken from flat is freed here; flat[*pos..] stays with the caller */
    sx_value_free(out);
    return false;
}

/* An attribute as a metadata value (h5reader._decode_attribute + _metadata_value). */
enum sx_status sx_h5_read_attr_value(hid_t a, struct sx_value *out, const char *src,
                                     struct sx_error *err) {
    return sx_h5_read_attr_value_in(NULL, a, out, src, err);
}

enum sx_status sx_h5_read_attr_value_in(struct sx_h5_facts *ff, hid_t a,
                                        struct sx_value *out, const char *src,
                                        struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t t = -1, sp = -1;
    struct sx_value *flat = NULL;
    uint64_t n = 0;
    t = H5Aget_type(a);
    sp = H5Aget_space(a);
    SX_CHECK(t >= 0 && sp >= 0, SX_ERR_IO, err, src, "%s cannot be read", src);
    SX_CHECK(H5Sget_simple_extent_type(sp) != H5S_NULL, SX_ERR_UNSUPPORTED, err, src,
             "%s is an empty (null dataspace) attribute, which cannot be written as JSON",
             src);
    int nd = H5Sget_simple_extent_ndims(sp);
    hsize_t dims[H5S_MAX_RANK];
    H5Sget_simple_extent_dims(sp, dims, NULL);
    n = 1;
    for (int i = 0; i < nd; i++)
        n *= dims[i];
    flat = sx_calloc(n + 1, sizeof *flat);
    SX_CHECK(flat != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    st = attr_values(ff, a, t, n, flat, src, err);
    if (st != SX_OK)
        goto out;
    if (nd == 0) {
        *out = flat[0];
    } else {
        uint64_t pos = 0;
        bool ok = nest(out, flat, dims, nd, &pos);
        for (uint64_t i = pos; i < n; i++)
            sx_value_free(&flat[i]);
        free(flat);
        flat = NULL;
        SX_CHECK(ok, SX_ERR_NOMEM, err, src, "out of memory");
        goto out;
    }
    free(flat);
    flat = NULL;
out:
    if (flat != NULL) {
        for (uint64_t i = 0; i < n; i++)
            sx_value_free(&flat[i]);
        free(flat);
    }
    sx_h5_close_id(sp);
    sx_h5_close_id(t);
    return st;
}

/* Optional scalar attributes of a group. */
enum sx_status sx_h5_attr_string(struct sx_h5 *h5, hid_t loc, const char *obj,
                                 const char *name, char **out, bool *found,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t a = -1;
    struct sx_value v = {0};
    char src[1200];
    *out = NULL;
    if (found)
        *found = false;
    if (H5Aexists(loc, name) <= 0)
        goto out;
    snprintf(src, sizeof src, "%s:%s@%s", h5->path, obj, name);
    a = H5Aopen(loc, name, H5P_DEFAULT);
    SX_CHECK(a >= 0, SX_ERR_IO, err, src, "%s cannot be read", src);
    st = sx_h5_read_attr_value_in(&h5->facts, a, &v, src, err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(v.kind == SX_V_STR, SX_ERR_FORMAT, err, src, "%s is not a string", src);
    *out = v.u.str.s;
    v.kind = SX_V_NULL;
    if (found)
        *found = true;
out:
    sx_value_free(&v);
    sx_h5_close_id(a);
    return st;
}

enum sx_status sx_h5_attr_number(struct sx_h5 *h5, hid_t loc, const char *obj,
                                 const char *name, struct sx_value *out, bool *found,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t a = -1;
    char src[1200];
    *found = false;
    if (H5Aexists(loc, name) <= 0)
        goto out;
    snprintf(src, sizeof src, "%s:%s@%s", h5->path, obj, name);
    a = H5Aopen(loc, name, H5P_DEFAULT);
    SX_CHECK(a >= 0, SX_ERR_IO, err, src, "%s cannot be read", src);
    st = sx_h5_read_attr_value_in(&h5->facts, a, out, src, err);
    if (st != SX_OK)
        goto out;
    SX_CHECK(out->kind == SX_V_INT || out->kind == SX_V_FLOAT || out->kind == SX_V_BOOL ||
                 out->kind == SX_V_UINT,
             SX_ERR_FORMAT, err, src, "%s is not a number", src);
    *found = true;
out:
    sx_h5_close_id(a);
    return st;
}

int64_t sx_h5_value_as_int(const struct sx_value *v) {
    switch (v->kind) {
    case SX_V_INT:
        return v->u.i;
    case SX_V_UINT:
        return (int64_t)v->u.u;
    case SX_V_BOOL:
        return v->u.b;
    case SX_V_FLOAT:
        return isfinite(v->u.f) ? (int64_t)v->u.f : 0;
    default:
        return 0;
    }
}

/* A 1-D string array attribute (tags, event_names, ...); absent -> empty. */
enum sx_status sx_h5_attr_strings(struct sx_h5 *h5, hid_t loc, const char *obj,
                                  const char *name, char ***out, size_t *n_out,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t a = -1;
    struct sx_value v = {0};
    char src[1200];
    *out = NULL;
    *n_out = 0;
    if (H5Aexists(loc, name) <= 0)
        goto out;
    snprintf(src, sizeof src, "%s:%s@%s", h5->path, obj, name);
    a = H5Aopen(loc, name, H5P_DEFAULT);
    SX_CHECK(a >= 0, SX_ERR_IO, err, src, "%s cannot be read", src);
    st = sx_h5_read_attr_value_in(&h5->facts, a, &v, src, err);
    if (st != SX_OK)
        goto out;
    if (v.kind == SX_V_STR) { /* a scalar string: one element */
        char **s = sx_calloc(1, sizeof *s);
        SX_CHECK(s != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        s[0] = v.u.str.s;
        v.kind = SX_V_NULL;
        *out = s;
        *n_out = 1;
        goto out;
    }
    SX_CHECK(v.kind == SX_V_ARRAY, SX_ERR_FORMAT, err, src, "%s is not a list of strings",
             src);
    char **s = sx_calloc(v.u.arr.n + 1, sizeof *s);
    SX_CHECK(s != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t i = 0; i < v.u.arr.n; i++) {
        struct sx_value *it = &v.u.arr.items[i];
        if (it->kind != SX_V_STR) {
            sx_h5_free_strv(s, i);
            st =
                sx_error_set(err, SX_ERR_FORMAT, src, "%s is not a list of strings", src);
            goto out;
        }
        s[i] = it->u.str.s;
        it->kind = SX_V_NULL;
    }
    *out = s;
    *n_out = v.u.arr.n;
out:
    sx_value_free(&v);
    sx_h5_close_id(a);
    return st;
}

enum sx_status sx_h5_req_len(const struct sx_h5 *h5, const char *name, uint64_t got,
                             uint64_t want, struct sx_error *err) {
    enum sx_status st = SX_OK;
    char src[1100];
    sx_h5_src_name(src, sizeof src, h5->path, name);
    SX_CHECK(got == want, SX_ERR_FORMAT, err, src,
             "%s has %" PRIu64 " rows but rank_region_index/region_ids has %" PRIu64
             "; the index is damaged",
             src, got, want);
out:
    return st;
}

/*
 * The strings of a 1-D string dataset at 'n' points (file rows 'pts', any
 * order) in one read, raw bytes as stored (fixed-length ones without their
 * trailing NULs): string k is text->data[off[k] .. off[k + 1]). One H5Dread
 * instead of one per row: each read costs HDF5 a type-conversion buffer.
 */
enum sx_status sx_h5_read_point_strings(hid_t d, const hsize_t *pts, hsize_t first,
                                        size_t n, struct sx_buf *text, size_t *off,
                                        const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t fs = -1, ms = -1, t = -1, mt = -1;
    char **vl = NULL, *raw = NULL;
    sx_buf_reset(text);
    off[0] = 0;
    if (n == 0)
        goto out;
    hsize_t count = n;
    fs = H5Dget_space(d);
    ms = H5Screate_simple(1, &count, NULL);
    t = H5Dget_type(d);
    SX_CHECK(fs >= 0 && ms >= 0 && t >= 0, SX_ERR_IO, err, src, "%s: dataspace error",
             src);
    SX_CHECK((pts != NULL ? H5Sselect_elements(fs, H5S_SELECT_SET, n, pts)
                          : H5Sselect_hyperslab(fs, H5S_SELECT_SET, &first, NULL, &count,
                                                NULL)) >= 0,
             SX_ERR_FORMAT, err, src, "%s: rows out of range", src);
    if (H5Tis_variable_str(t) > 0) {
        mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(t));
        st = sx_h5_vlen_guard(d, ms, fs, src, err);
        if (st != SX_OK)
            goto out;
        vl = sx_calloc(n, sizeof *vl);
        SX_CHECK(vl != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        SX_CHECK(H5Dread(d, mt, ms, fs, H5P_DEFAULT, vl) >= 0, SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
        for (size_t k = 0; k < n; k++) {
            if (vl[k] != NULL)
                sx_buf_append(text, vl[k], strlen(vl[k]));
            off[k + 1] = text->len;
        }
    } else {
        size_t w = H5Tget_size(t);
        SX_CHECK(w > 0, SX_ERR_FORMAT, err, src, "%s has a zero-width string type", src);
        raw = sx_malloc(w * n + 1);
        SX_CHECK(raw != NULL, SX_ERR_NOMEM, err, src, "out of memory");
        mt = H5Tcopy(t);
        SX_CHECK(H5Dread(d, mt, ms, fs, H5P_DEFAULT, raw) >= 0, SX_ERR_IO, err, src,
                 "%s cannot be read; the file is truncated or damaged", src);
        for (size_t k = 0; k < n; k++) {
            const char *s = raw + k * w;
            size_t len = w;
            while (len > 0 && s[len - 1] == '\0') /* numpy's S dtype drops these only */
                len--;
            sx_buf_append(text, s, len);
            off[k + 1] = text->len;
        }
    }
    SX_CHECK(!text->failed, SX_ERR_NOMEM, err, src, "out of memory");
out:
    if (vl != NULL) {
        H5Dvlen_reclaim(mt, ms, H5P_DEFAULT, vl);
        free(vl);
    }
    free(raw);
    sx_h5_close_id(mt);
    sx_h5_close_id(t);
    sx_h5_close_id(ms);
    sx_h5_close_id(fs);
    return st;
}

/* ------------------------------------------------------------------ */
/* Schema 1                                                           */

static herr_t collect_cb(hid_t g, const char *name, const H5L_info_t *info, void *op) {
    (void)g;
    (void)info;
    struct h5_name_list *l = op;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **v = sx_realloc(l->v, cap * sizeof *v);
        l->nomem = v == NULL;
        if (v == NULL)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n] = sx_strdup(name);
    l->nomem = l->v[l->n] == NULL;
    if (l->v[l->n] == NULL)
        return -1;
    l->n++;
    return 0;
}

/* Link names of a group in h5py order (by name). */
enum sx_status sx_h5_list_links(hid_t g, struct h5_name_list *l, const char *src,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    hsize_t idx = 0;
    herr_t rc = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_cb, l);
    SX_CHECK(!l->nomem, SX_ERR_NOMEM, err, src, "%s: out of memory", src);
    SX_CHECK(rc >= 0, SX_ERR_IO, err, src, "%s: members cannot be listed", src);
out:
    return st;
}

void sx_h5_free_names(struct h5_name_list *l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* "rank<digits>" -> rank, else -1. */
static int64_t rank_of(const char *name) {
    if (strncmp(name, "rank", 4) != 0 || name[4] == '\0')
        return -1;
    int64_t r = 0;
    for (const char *p = name + 4; *p; p++) {
        if (*p < '0' || *p > '9' || r > INT64_MAX / 10 - 10)
            return -1;
        r = r * 10 + (*p - '0');
    }
    return r;
}

static int cmp_rank_group(const void *a, const void *b) {
    const struct h5_rank_group *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static void free_names_v(struct h5_rank_group *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(v[i].name);
}

/* Rank groups of the root in numeric order. */
enum sx_status sx_h5_rank_groups(struct sx_h5 *h5, struct h5_rank_group **out,
                                 size_t *n_out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct h5_name_list l = {0};
    struct h5_rank_group *v = NULL;
    size_t n = 0;
    char src[1100];
    sx_h5_src_name(src, sizeof src, h5->path, "/");
    st = sx_h5_list_links(h5->file, &l, src, err);
    if (st != SX_OK)
        goto out;
    v = sx_calloc(l.n + 1, sizeof *v);
    SX_CHECK(v != NULL, SX_ERR_NOMEM, err, src, "out of memory");
    for (size_t i = 0; i < l.n; i++) {
        int64_t r = rank_of(l.v[i]);
        if (r < 0)
            continue;
        H5O_info_t oi;
        if (H5Oget_info_by_name2(h5->file, l.v[i], &oi, H5O_INFO_BASIC, H5P_DEFAULT) <
                0 ||
            oi.type != H5O_TYPE_GROUP)
            continue;
        v[n].rank = r;
        v[n].name = l.v[i];
        l.v[i] = NULL;
        n++;
    }
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_rank_group);
    /* "rank0" and "rank00" would be one rank twice: the document could not say which */
    for (size_t i = 0; i + 1 < n; i++) {
        if (v[i].rank == v[i + 1].rank) {
            st =
                sx_error_set(err, SX_ERR_FORMAT, src,
                             "%s: the groups /%s and /%s are both rank %lld; the file is "
                             "damaged",
                             h5->path, v[i].name, v[i + 1].name, (long long)v[i].rank);
            free_names_v(v, n);
            goto out;
        }
    }
    *out = v;
    *n_out = n;
    v = NULL;
out:
    free(v);
    sx_h5_free_names(&l);
    return st;
}

void sx_h5_free_rank_groups(struct h5_rank_group *v, size_t n) {
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i].name);
    free(v);
}

static int cmp_i64v(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Distinct ranks of a lane table, ascending. */
size_t sx_h5_distinct(const int64_t *ranks, uint64_t n, int64_t *out) {
    memcpy(out, ranks, n * sizeof *out);
    qsort(out, n, sizeof *out, cmp_i64v);
    size_t k = 0;
    for (uint64_t i = 0; i < n; i++)
        if (k == 0 || out[k - 1] != out[i])
            out[k++] = out[i];
    return k;
}

enum sx_status sx_h5_read_ints_opt(struct sx_h5 *h5, hid_t loc, const char *name,
                                   int64_t **out, size_t *n, struct sx_error *err) {
    uint64_t m = 0;
    *out = NULL;
    *n = 0;
    if (!sx_h5_has_link(h5, loc, name))
        return SX_OK;
    enum sx_status st = sx_h5_read_ints(h5, loc, name, false, out, &m, err);
    *n = (size_t)m;
    return st;
}

enum sx_status sx_h5_read_doubles_opt(struct sx_h5 *h5, hid_t loc, const char *name,
                                      double **out, size_t *n, struct sx_error *err) {
    uint64_t m = 0;
    *out = NULL;
    *n = 0;
    if (!sx_h5_has_link(h5, loc, name))
        return SX_OK;
    enum sx_status st = sx_h5_read_doubles(h5, loc, name, out, &m, NULL, NULL, err);
    *n = (size_t)m;
    return st;
}

enum sx_status sx_h5_read_matrix(struct sx_h5 *h5, hid_t loc, const char *name,
                                 struct sx_matrix *m, const char *src,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    uint64_t n = 0;
    hsize_t dims[2] = {0, 0};
    int nd = 0;
    m->v = NULL;
    m->rows = m->cols = 0;
    if (!sx_h5_has_link(h5, loc, name))
        goto out;
    st = sx_h5_read_doubles(h5, loc, name, &m->v, &n, dims, &nd, err);
    if (st != SX_OK)
        goto out;
    if (nd == 2) {
        m->rows = dims[0];
        m->cols = dims[1];
    } else {
        /* Only an empty placeholder may be other than 2-D (the exporter reshapes it). */
        SX_CHECK(n == 0, SX_ERR_FORMAT, err, src,
                 "%s/%s is a non-empty %d-D array; LIKWID events and metrics must be 2-D",
                 src, name, nd);
    }
out:
    return st;
}

/* Integers of a 1-D dataset at 'n' points in one read. */
enum sx_status sx_h5_read_point_ints(hid_t d, const hsize_t *pts, size_t n, int64_t *out,
                                     const char *src, struct sx_error *err) {
    enum sx_status st = SX_OK;
    hid_t fs = -1, ms = -1;
    if (n == 0)
        goto out;
    hsize_t count = n;
    fs = H5Dget_space(d);
    ms = H5Screate_simple(1, &count, NULL);
    SX_CHECK(fs >= 0 && ms >= 0, SX_ERR_IO, err, src, "%s: dataspace error", src);
    SX_CHECK(H5Sselect_elements(fs, H5S_SELECT_SET, n, pts) >= 0, SX_ERR_FORMAT, err, src,
             "%s: rows out of range", src);
    SX_CHECK(H5Dread(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, out) >= 0, SX_ERR_IO, err,
             src, "%s cannot be read; the file is truncated or damaged", src);
out:
    sx_h5_close_id(ms);
    sx_h5_close_id(fs);
    return st;
}

/* ------------------------------------------------------------------ */
/* Where the process is, for a crash report                            */

/*
 * The HDF5 library may crash or loop on a damaged file (1.10 does on some).
 * Every entry point below marks the file it reads while inside, so that a
 * signal handler can say which file and whether HDF5 was at work.
 */
static const char *volatile h5_file_in_use;
static volatile sig_atomic_t h5_depth;

const char *sx_hdf5_file_in_use(void) { return h5_depth > 0 ? h5_file_in_use : NULL; }

void sx_h5_enter(const char *path) {
    if (h5_depth++ == 0)
        h5_file_in_use = path;
}

void sx_h5_leave(void) {
    if (--h5_depth == 0)
        h5_file_in_use = NULL;
}

static const unsigned char hdf5_magic[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

/* Whether 'path' starts with the HDF5 signature (a missing file is not HDF5). */
bool sx_is_hdf5(const char *path) {
    unsigned char head[8] = {0};
    FILE *f = fopen(path, "rb");
    bool yes = false;

    if (f == NULL)
        return false;
    yes = fread(head, 1, sizeof head, f) == sizeof head &&
          memcmp(head, hdf5_magic, sizeof head) == 0;
    fclose(f);
    return yes;
}
