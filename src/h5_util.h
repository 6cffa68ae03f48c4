/* h5_util.h - HDF5 helpers: ids, a quiet error stack, typed reads, group listings */
#ifndef SX_H5_UTIL_H
#define SX_H5_UTIL_H

#include "buf.h"
#include "internal.h"
#include "json_value.h"
#include "run.h"

#include <hdf5.h>

struct sx_h5; /* an open run (h5_reader.h): its path and size name and bound the reads */

/* HDF5 prints its error stack by default; we turn failures into sx_error. */
struct h5_quiet {
    H5E_auto2_t func;
    void *data;
};

struct h5_name_list {
    char **v;
    size_t n, cap;
    bool nomem; /* the listing stopped for want of memory */
};

struct h5_rank_group {
    int64_t rank;
    char *name;
};

/*
 * Every HDF5 read may fail on purpose in the fault tests (SX_FAULT_READ): the
 * readers call these through the macros below.
 */
herr_t sx_h5_dread(hid_t d, hid_t mt, hid_t ms, hid_t fs, hid_t x, void *buf);
herr_t sx_h5_aread(hid_t a, hid_t mt, void *buf);
#define H5Dread(...) sx_h5_dread(__VA_ARGS__)
#define H5Aread(...) sx_h5_aread(__VA_ARGS__)

void sx_h5_quiet_begin(struct h5_quiet *q);

void sx_h5_quiet_end(const struct h5_quiet *q);

void sx_h5_close_id(hid_t id);

/*
 * Before HDF5 reads variable-length values of 'obj' (an attribute whole, or a
 * dataset's selection 'ms'/'fs' as H5Dread takes them): each element's
 * claimed length must fit in the file, and so must their sum, or it is
 * SX_ERR_FORMAT naming 'src' and the row. Other datatypes pass unread.
 */
enum sx_status sx_h5_vlen_guard(hid_t obj, hid_t ms, hid_t fs, const char *src,
                                struct sx_error *err);

/*
 * What the guard needs of the file an object is in: its superblock's sizes, its
 * size, and HDF5's own descriptor. A reader keeps one (zeroed: not yet known)
 * so that each attribute it guards does not look them up again (a property
 * list copy each, and a run of many small files guards many attributes).
 */
struct sx_h5_facts {
    bool known;    /* filled from the first object guarded */
    bool sizes_ok; /* the superblock's sizes and the file's size could be had */
    int fd;        /* HDF5's descriptor (POSIX driver), or -1: no heap check */
    unsigned sa, sl;
    uint64_t size, userblock;
};

/* The facts of open 'file' whose HDF5 descriptor is 'hfd' (sx_h5_posix_fd; -1: none). */
void sx_h5_facts_fill(struct sx_h5_facts *ff, hid_t file, int hfd);

/* sx_h5_vlen_guard with the facts of obj's file: 'ff' (filled on first use), or NULL
 * to look them up for this call. */
enum sx_status sx_h5_vlen_guard_in(struct sx_h5_facts *ff, hid_t obj, hid_t ms, hid_t fs,
                                   const char *src, struct sx_error *err);

/*
 * Refuse a file whose links would make the reader read other files: an
 * external (or user-defined) link anywhere in it is SX_ERR_UNSUPPORTED naming
 * the link. 'path' names the file. A dataset's data in other files is refused
 * where the dataset is opened to be read (sx_h5_local_data), which costs no
 * second open of every dataset.
 */
enum sx_status sx_h5_refuse_foreign(hid_t file, const char *path, struct sx_error *err);

/* The paths of a file's links as the walk above met them, so that whether a path
 * exists is answered without HDF5 (a lookup walks the path's groups each time). */
struct sx_h5_links;
/* sx_h5_refuse_foreign, keeping the links it met in '*links' (new), or NULL when they
 * cannot answer for the file: a soft link, an object linked twice (HDF5 walks each
 * group once), more than a few thousand links, no memory. */
enum sx_status sx_h5_refuse_foreign_links(hid_t file, const char *path,
                                          struct sx_h5_links **links,
                                          struct sx_error *err);
void sx_h5_links_free(struct sx_h5_links *l);

/*
 * Refuse dataset 'd' (named 'src') when its data lies in other files: a
 * virtual dataset, or one with external storage, is SX_ERR_UNSUPPORTED. Every
 * dataset is held to this before it is read (sx_h5_check_claim does it).
 */
enum sx_status sx_h5_local_data(hid_t d, const char *src, struct sx_error *err);

/* "file.h5:/object" for error sources (the object's path made absolute). */
const char *sx_h5_src_name(char *buf, size_t n, const char *path, const char *obj);

bool sx_h5_link_exists(hid_t loc, const char *name);
/* The same for a path from the root of h5's file ('loc' its file): from the links kept
 * at its open when there are, else by HDF5. */
struct sx_h5;
bool sx_h5_has_link(const struct sx_h5 *h5, hid_t loc, const char *name);

/* Length of a 1-D dataset (a scalar counts as 1); -1 when not 1-D. */
int64_t sx_h5_dset_len(hid_t d);

/*
 * Refuse sizes the file cannot hold before taking memory for them: an
 * unfiltered dataset's bytes are in the file; a filtered one compresses
 * at most ~1032:1 (deflate's limit). And data in other files
 * (sx_h5_local_data), and filters this HDF5 cannot decode.
 */
enum sx_status sx_h5_check_claim(const struct sx_h5 *h5, hid_t d, uint64_t n, size_t elem,
                                 const char *src, struct sx_error *err);
/* The same, of the dataset's creation properties 'dcpl' (borrowed; < 0: the data
 * and the filters go unchecked here, and fail where they are read). */
enum sx_status sx_h5_check_claim_dcpl(const struct sx_h5 *h5, hid_t dcpl, uint64_t n,
                                      size_t elem, const char *src, struct sx_error *err);

/* Read a whole 1-D integer dataset as int64 (or uint64 bits when 'as_unsigned'). */
enum sx_status sx_h5_read_ints(struct sx_h5 *h5, hid_t loc, const char *name,
                               bool as_unsigned, int64_t **out, uint64_t *n_out,
                               struct sx_error *err);

enum sx_status sx_h5_read_strings(struct sx_h5 *h5, hid_t loc, const char *name,
                                  char ***out, uint64_t *n_out, struct sx_error *err);

void sx_h5_free_strv(char **v, uint64_t n);

/* An attribute as a metadata value (h5reader._decode_attribute + _metadata_value). */
enum sx_status sx_h5_read_attr_value(hid_t a, struct sx_value *out, const char *src,
                                     struct sx_error *err);
/* The same, guarding strings with the facts of the attribute's file 'ff' (or NULL). */
enum sx_status sx_h5_read_attr_value_in(struct sx_h5_facts *ff, hid_t a,
                                        struct sx_value *out, const char *src,
                                        struct sx_error *err);

/* Optional scalar attributes of a group. */
enum sx_status sx_h5_attr_string(struct sx_h5 *h5, hid_t loc, const char *obj,
                                 const char *name, char **out, bool *found,
                                 struct sx_error *err);

enum sx_status sx_h5_attr_number(struct sx_h5 *h5, hid_t loc, const char *obj,
                                 const char *name, struct sx_value *out, bool *found,
                                 struct sx_error *err);

int64_t sx_h5_value_as_int(const struct sx_value *v);

/* A 1-D string array attribute (tags, event_names, ...); absent -> empty. */
enum sx_status sx_h5_attr_strings(struct sx_h5 *h5, hid_t loc, const char *obj,
                                  const char *name, char ***out, size_t *n_out,
                                  struct sx_error *err);

enum sx_status sx_h5_req_len(const struct sx_h5 *h5, const char *name, uint64_t got,
                             uint64_t want, struct sx_error *err);

/*
 * The strings of a 1-D string dataset at 'n' points (file rows 'pts', any
 * order) in one read, raw bytes as stored (fixed-length ones without their
 * trailing NULs): string k is text->data[off[k] .. off[k + 1]). One H5Dread
 * instead of one per row: each read costs HDF5 a type-conversion buffer.
 */
enum sx_status sx_h5_read_point_strings(hid_t d, const hsize_t *pts, hsize_t first,
                                        size_t n, struct sx_buf *text, size_t *off,
                                        const char *src, struct sx_error *err);

/*
 * String k of 'text' and 'off' as those reads give them, decoded as every string of
 * the file is: up to its first NUL, made valid UTF-8 (sx_utf8_sanitize). A new
 * string, or NULL when out of memory.
 */
char *sx_h5_text_string(const struct sx_buf *text, const size_t *off, size_t k);

/* Link names of a group in h5py order (by name). */
enum sx_status sx_h5_list_links(hid_t g, struct h5_name_list *l, const char *src,
                                struct sx_error *err);

void sx_h5_free_names(struct h5_name_list *l);

/* Rank groups of the root in numeric order. */
enum sx_status sx_h5_rank_groups(struct sx_h5 *h5, struct h5_rank_group **out,
                                 size_t *n_out, struct sx_error *err);

void sx_h5_free_rank_groups(struct h5_rank_group *v, size_t n);

/* Distinct ranks of a lane table, ascending. */
size_t sx_h5_distinct(const int64_t *ranks, uint64_t n, int64_t *out);

enum sx_status sx_h5_read_ints_opt(struct sx_h5 *h5, hid_t loc, const char *name,
                                   int64_t **out, size_t *n, struct sx_error *err);

enum sx_status sx_h5_read_doubles_opt(struct sx_h5 *h5, hid_t loc, const char *name,
                                      double **out, size_t *n, struct sx_error *err);

enum sx_status sx_h5_read_matrix(struct sx_h5 *h5, hid_t loc, const char *name,
                                 struct sx_matrix *m, const char *src,
                                 struct sx_error *err);

/* Integers of a 1-D dataset at 'n' points in one read. */
enum sx_status sx_h5_read_point_ints(hid_t d, const hsize_t *pts, size_t n, int64_t *out,
                                     const char *src, struct sx_error *err);

/*
 * The descriptor HDF5's POSIX driver reads 'file' with (borrowed: not to be
 * closed), or -1 under another driver.
 */
int sx_h5_posix_fd(hid_t file);

/* Entry points mark the file they read, for a crash report (sx_hdf5_file_in_use). */
void sx_h5_enter(const char *path);
void sx_h5_leave(void);

#endif /* SX_H5_UTIL_H */
