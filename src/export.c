/* export.c - sx_export(): every rank formats its blocks, rank 0 stitches and writes */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Tags of the block stream on the export's own communicator. */
enum { TAG_HDR = 11, TAG_DATA = 12, TAG_CTRL = 13 };

/* What precedes every block a rank sends to rank 0, and its final word. */
struct block_hdr {
    int32_t status; /* SX_OK, or the sender's error (then 'error' is valid) */
    int32_t end;    /* 1: the sender has nothing more to send */
    uint64_t raw_len;
    uint64_t data_len;
    uint32_t crc;
    uint32_t pad;
    struct sx_error error;
};

void sx_options_init(struct sx_options *o) {
    memset(o, 0, sizeof *o);
    o->indent = -1;
    o->gzip_level = 6;
    o->deflate = SX_DEFLATE_ZLIB;
    o->fail_rank = -1;
}

static bool ends_with_gz(const char *path) {
    size_t n = strlen(path);
    if (n < 3)
        return false;
    const char *e = path + n - 3;
    return e[0] == '.' && (e[1] == 'g' || e[1] == 'G') && (e[2] == 'z' || e[2] == 'Z');
}

static const char *inject_path; /* the input of the export under way, for the message */
static unsigned inject_seen;    /* stages this rank has passed in this export */

static enum sx_status inject(const struct sx_options *o, int rank,
                             enum sx_fail_stage stage, struct sx_error *err) {
    static const char *const names[] = {"",         "open", "read", "format",
                                        "compress", "send", "write"};
    inject_seen |= 1u << stage;
    if (o->fail_rank == rank && o->fail_stage == (int)stage)
        return sx_error_set(err, SX_ERR_INTERNAL, inject_path ? inject_path : "",
                            "%s: failure injected at the %s stage (fault test)",
                            inject_path ? inject_path : "export", names[stage]);
    return SX_OK;
}

/*
 * A rank that owns no block, or writes plain text, never reaches some
 * stages; a failure injected there happens when its share of the work ends,
 * so that every (rank, stage) pair can be made to fail.
 */
static enum sx_status inject_rest(const struct sx_options *o, int rank,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    for (int stage = SX_FAIL_READ; st == SX_OK && stage <= SX_FAIL_WRITE; stage++)
        if (!(inject_seen & (1u << stage)))
            st = inject(o, rank, (enum sx_fail_stage)stage, err);
    return st;
}

/* A block's text and, for .gz, its deflate segment and CRC. */
struct block_out {
    struct sx_buf raw;
    struct sx_buf z;
    uint32_t crc;
};

static enum sx_status make_block(const struct sx_doc *doc,
                                 const struct sx_event_source *src, size_t b,
                                 const struct sx_options *o, bool gz, int rank,
                                 struct block_out *bo, struct sx_error *err) {
    enum sx_status st = SX_OK;
    sx_buf_reset(&bo->raw);
    sx_buf_reset(&bo->z);
    if (sx_stop_requested())
        return sx_error_set(err, SX_ERR_INTERRUPTED, doc->run->path,
                            "%s: export interrupted by a signal; no output was written",
                            doc->run->path);
    st = inject(o, rank, SX_FAIL_READ, err);
    if (st == SX_OK)
        st = sx_doc_block(doc, src, b, &bo->raw, err);
    if (st == SX_OK)
        st = inject(o, rank, SX_FAIL_FORMAT, err);
    if (st == SX_OK && gz) {
        bo->crc = sx_crc32(0, bo->raw.data, bo->raw.len);
        st = inject(o, rank, SX_FAIL_COMPRESS, err);
        if (st == SX_OK)
            st = sx_deflate_segment(bo->raw.data, bo->raw.len, o->gzip_level, o->deflate,
                                    false, &bo->z, err);
    }
    return st;
}

/*
 * Which rank formats block 'b'. For .gz every rank deflates its share,
 * rank 0 included: compression is the cost. For plain text rank 0's job is
 * writing every byte, so with two or more ranks the others do all the
 * formatting and rank 0 only receives and writes, a two-stage pipeline.
 */
static int block_owner(size_t b, int size, bool gz) {
    if (gz || size == 1)
        return (int)(b % (size_t)size);
    return 1 + (int)(b % (size_t)(size - 1));
}

/* MPI counts are int: move large buffers in pieces of at most 1 GiB. */
#define MAX_MSG (1u << 30)

static int send_bytes(const char *p, uint64_t n, MPI_Comm comm, MPI_Request *reqs,
                      int *nreq, int max_req) {
    while (n > 0 && *nreq < max_req) {
        int k = n > MAX_MSG ? (int)MAX_MSG : (int)n;
        if (MPI_Isend(p, k, MPI_BYTE, 0, TAG_DATA, comm, &reqs[(*nreq)++]) != MPI_SUCCESS)
            return -1;
        p += k;
        n -= (uint64_t)k;
    }
    return n == 0 ? 0 : -1;
}

static int recv_bytes(struct sx_buf *b, uint64_t n, int from, MPI_Comm comm) {
    sx_buf_reset(b);
    if (!sx_buf_reserve(b, n + 1))
        return -1;
    char *p = b->data;
    uint64_t left = n;
    while (left > 0) {
        int k = left > MAX_MSG ? (int)MAX_MSG : (int)left;
        if (MPI_Recv(p, k, MPI_BYTE, from, TAG_DATA, comm, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS)
            return -1;
        p += k;
        left -= (uint64_t)k;
    }
    b->len = n;
    return 0;
}

/* Rank 0's writer stage: plain text, or gzip segments with a running CRC. */
struct writer {
    struct sx_out_file *f;
    const char *path;
    bool gz;
    int level;
    enum sx_deflate eng;
    uint32_t crc;
    uint64_t isize;
    uint64_t done;
    uint64_t total;
    const struct sx_options *o;
    struct sx_buf z;
};

static enum sx_status write_raw(struct writer *w, const struct sx_buf *raw,
                                const struct sx_buf *z, uint32_t crc, bool final,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    if (sx_stop_requested())
        return sx_error_set(
            err, SX_ERR_INTERRUPTED, w->path,
            "%s: export interrupted by a signal; the output was not written "
            "(an existing file is left as it was)",
            w->path);
    if (!w->gz) {
        st = sx_out_write(w->f, raw->data, raw->len, err);
    } else {
        if (z == NULL) { /* rank 0's header and trailer: compress here */
            sx_buf_reset(&w->z);
            crc = sx_crc32(0, raw->data, raw->len);
            st = sx_deflate_segment(raw->data, raw->len, w->level, w->eng, final, &w->z,
                                    err);
            z = &w->z;
        }
        if (st == SX_OK)
            st = sx_out_write(w->f, z->data, z->len, err);
        w->crc = sx_crc32_combine(w->crc, crc, raw->len);
        w->isize += raw->len;
    }
    w->done += raw->len;
    if (st == SX_OK && w->o->progress != NULL)
        w->o->progress(w->done, w->total > w->done ? w->total : w->done,
                       w->o->progress_user);
    return st;
}

/* NOTE: collective. Rank 0 receives blocks in document order and writes them. */
static enum sx_status stream_root(MPI_Comm comm, int size, const struct sx_doc *doc,
                                  const struct sx_event_source *src,
                                  const struct sx_options *o, struct writer *w,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct block_out mine = {0};
    struct sx_buf hdr_text = {0}, in = {0};
    bool *ended = sx_calloc((size_t)size + 1, sizeof *ended);
    bool remote_failed = false;
    struct block_hdr h;

    if (ended == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, "output", "out of memory");
    if (st == SX_OK && w->gz) {
        unsigned char gh[10];
        sx_gzip_header(gh, w->level);
        st = sx_out_write(w->f, gh, sizeof gh, err);
    }
    if (st == SX_OK)
        st = sx_doc_header(doc, &hdr_text, err);
    if (st == SX_OK)
        st = write_raw(w, &hdr_text, NULL, 0, false, err);
    if (st == SX_OK)
        st = inject(o, 0, SX_FAIL_WRITE, err);
    for (size_t b = 0; st == SX_OK && !remote_failed && b < doc->nblocks; b++) {
        int owner = block_owner(b, size, w->gz);
        if (owner == 0) {
            st = make_block(doc, src, b, o, w->gz, 0, &mine, err);
            if (st == SX_OK)
                st = write_raw(w, &mine.raw, &mine.z, mine.crc, false, err);
            continue;
        }
        MPI_Recv(&h, sizeof h, MPI_BYTE, owner, TAG_HDR, comm, MPI_STATUS_IGNORE);
        if (h.end || h.status != SX_OK) {
            ended[owner] = h.end != 0;
            remote_failed = true; /* the sender reports its error itself */
            break;
        }
        if (recv_bytes(&in, h.raw_len, owner, comm) != 0) {
            st = sx_error_set(err, SX_ERR_NOMEM, "output",
                              "out of memory receiving a block");
            break;
        }
        if (w->gz) {
            struct sx_buf zb = {0};
            if (recv_bytes(&zb, h.data_len, owner, comm) != 0) {
                sx_buf_free(&zb);
                st = sx_error_set(err, SX_ERR_NOMEM, "output", "out of memory receiving");
                break;
            }
            st = write_raw(w, &in, &zb, h.crc, false, err);
            sx_buf_free(&zb);
        } else {
            st = write_raw(w, &in, NULL, 0, false, err);
        }
    }
    if (st == SX_OK && !remote_failed)
        st = inject_rest(o, 0, err);
    bool failed = st != SX_OK || remote_failed;
    /* Tell every other rank whether to go on (only an abort is urgent). */
    int ctrl = failed ? 1 : 0;
    if (failed)
        for (int r = 1; r < size; r++)
            MPI_Send(&ctrl, 1, MPI_INT, r, TAG_CTRL, comm);
    /* Drain: every rank ends with an 'end' header; data before it is read and dropped. */
    for (int r = 1; r < size; r++) {
        while (!ended[r]) {
            MPI_Recv(&h, sizeof h, MPI_BYTE, r, TAG_HDR, comm, MPI_STATUS_IGNORE);
            if (h.end) {
                ended[r] = true;
                break;
            }
            if (recv_bytes(&in, h.raw_len, r, comm) != 0 ||
                (w->gz && recv_bytes(&in, h.data_len, r, comm) != 0)) {
                /* cannot happen short of memory; keep draining in small steps */
                st = st != SX_OK
                         ? st
                         : sx_error_set(err, SX_ERR_NOMEM, "output", "out of memory");
            }
        }
    }
    if (!failed)
        for (int r = 1; r < size; r++)
            MPI_Send(&ctrl, 1, MPI_INT, r, TAG_CTRL, comm);
    if (st == SX_OK && !remote_failed) {
        sx_buf_reset(&hdr_text);
        st = sx_doc_trailer(doc, &hdr_text, err);
        if (st == SX_OK)
            st = write_raw(w, &hdr_text, NULL, 0, true, err);
        if (st == SX_OK && w->gz) {
            unsigned char gt[8];
            sx_gzip_trailer(gt, w->crc, w->isize);
            st = sx_out_write(w->f, gt, sizeof gt, err);
        }
    }
    sx_buf_free(&mine.raw);
    sx_buf_free(&mine.z);
    sx_buf_free(&hdr_text);
    sx_buf_free(&in);
    free(ended);
    return st;
}

/* NOTE: collective. A non-root rank formats its blocks and sends them in order. */
static enum sx_status stream_worker(MPI_Comm comm, int rank, int size,
                                    const struct sx_doc *doc,
                                    const struct sx_event_source *src,
                                    const struct sx_options *o, bool gz,
                                    struct sx_error *err) {
    enum sx_status st = SX_OK;
    enum { NSETS = 2, MAXREQ = 16 };
    struct block_out set[NSETS] = {0};
    struct block_hdr hdr[NSETS];
    MPI_Request reqs[NSETS][MAXREQ];
    int nreq[NSETS] = {0};
    int got_ctrl = 0, ctrl = 0;
    size_t k = 0;
    for (size_t b = 0; b < doc->nblocks; b++) {
        if (block_owner(b, size, gz) != rank)
            continue;
        int flag = 0;
        MPI_Iprobe(0, TAG_CTRL, comm, &flag, MPI_STATUS_IGNORE);
        if (flag) { /* rank 0 gave up: stop producing */
            MPI_Recv(&ctrl, 1, MPI_INT, 0, TAG_CTRL, comm, MPI_STATUS_IGNORE);
            got_ctrl = 1;
            break;
        }
        int j = (int)(k % NSETS);
        MPI_Waitall(nreq[j], reqs[j], MPI_STATUSES_IGNORE);
        nreq[j] = 0;
        st = make_block(doc, src, b, o, gz, rank, &set[j], err);
        if (st == SX_OK)
            st = inject(o, rank, SX_FAIL_SEND, err);
        if (st != SX_OK)
            break;
        k++;
        memset(&hdr[j], 0, sizeof hdr[j]);
        hdr[j].raw_len = set[j].raw.len;
        hdr[j].data_len = set[j].z.len;
        hdr[j].crc = set[j].crc;
        MPI_Isend(&hdr[j], sizeof hdr[j], MPI_BYTE, 0, TAG_HDR, comm,
                  &reqs[j][nreq[j]++]);
        if (send_bytes(set[j].raw.data, set[j].raw.len, comm, reqs[j], &nreq[j],
                       MAXREQ) != 0 ||
            (gz && send_bytes(set[j].z.data, set[j].z.len, comm, reqs[j], &nreq[j],
                              MAXREQ) != 0)) {
            st =
                sx_error_set(err, SX_ERR_MPI, "send", "sending a block to rank 0 failed");
            break;
        }
    }
    if (st == SX_OK && !got_ctrl)
        st = inject_rest(o, rank, err);
    for (int j = 0; j < NSETS; j++)
        MPI_Waitall(nreq[j], reqs[j], MPI_STATUSES_IGNORE);
    struct block_hdr end;
    memset(&end, 0, sizeof end);
    end.end = 1;
    end.status = st;
    if (err != NULL)
        end.error = *err;
    MPI_Send(&end, sizeof end, MPI_BYTE, 0, TAG_HDR, comm);
    if (!got_ctrl)
        MPI_Recv(&ctrl, 1, MPI_INT, 0, TAG_CTRL, comm, MPI_STATUS_IGNORE);
    for (int j = 0; j < NSETS; j++) {
        sx_buf_free(&set[j].raw);
        sx_buf_free(&set[j].z);
    }
    return st;
}

/* Mark GPU columns of rows whose slice has no value >= 0 as absent; rows split over
 * ranks. */
static enum sx_status resolve_gpu(MPI_Comm comm, int rank, int size, struct sx_h5 *h5,
                                  struct sx_run *run, struct sx_error *err) {
    enum sx_status st = SX_OK;
    unsigned char *present = NULL;
    if (run->layout != SX_LAYOUT_COLUMNAR || !(run->file_cols & SX_COLBIT(SX_COL_GPU)))
        goto agree;
    present = sx_calloc(run->nrows + 1, 1);
    SX_CHECK(present != NULL, SX_ERR_NOMEM, err, run->path, "out of memory");
    for (size_t r = (size_t)rank; r < run->nrows; r += (size_t)size) {
        bool p = false;
        st = sx_h5_gpu_present(h5, run, &run->rows[r], &p, err);
        if (st != SX_OK)
            break;
        present[r] = p;
    }
agree:
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK || present == NULL)
        goto out;
    /* NOTE: collective; MPI counts are int, so reduce in pieces */
    for (size_t at = 0; comm != MPI_COMM_NULL && at < run->nrows; at += MAX_MSG) {
        size_t n = run->nrows - at < MAX_MSG ? run->nrows - at : MAX_MSG;
        MPI_Allreduce(MPI_IN_PLACE, present + at, (int)n, MPI_UNSIGNED_CHAR, MPI_BOR,
                      comm);
    }
    for (size_t r = 0; r < run->nrows; r++)
        if (!present[r])
            run->rows[r].cols &= ~SX_COLBIT(SX_COL_GPU);
out:
    free(present);
    return st;
}

static enum sx_status check_paths(const char *input, const char *output,
                                  struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct stat a, b;
    SX_CHECK(input != NULL && output != NULL, SX_ERR_USAGE, err, "",
             "input and output needed");
    SX_CHECK(!(stat(input, &a) == 0 && stat(output, &b) == 0 && a.st_dev == b.st_dev &&
               a.st_ino == b.st_ino),
             SX_ERR_USAGE, err, output,
             "the output %s is the input file itself; refusing to overwrite the run",
             output);
out:
    return st;
}

enum sx_status sx_export(MPI_Comm comm, const char *input, const char *output,
                         const struct sx_options *opts, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_options defaults;
    MPI_Comm c = MPI_COMM_NULL;
    struct sx_h5 *h5 = NULL;
    struct sx_run *run = NULL;
    struct sx_filter *filter = NULL;
    struct sx_doc doc;
    struct writer w;
    struct sx_error local;
    int rank = 0, size = 1;
    bool opened = false;

    memset(&doc, 0, sizeof doc);
    memset(&w, 0, sizeof w);
    sx_error_clear(&local);
    if (err == NULL)
        err = &local;
    sx_error_clear(err);
    if (opts == NULL) {
        sx_options_init(&defaults);
        opts = &defaults;
    }
    /* MPI_COMM_NULL: this process alone, without MPI (which need not be initialized) */
    if (comm != MPI_COMM_NULL) {
        if (MPI_Comm_dup(comm, &c) != MPI_SUCCESS)
            return sx_error_set(err, SX_ERR_MPI, "", "MPI_Comm_dup failed");
        MPI_Comm_rank(c, &rank);
        MPI_Comm_size(c, &size);
    }
    const bool gz = output != NULL && ends_with_gz(output);
    inject_path = input;
    inject_seen = 0;

    /* Options and paths: every rank checks the same things. */
    st = check_paths(input, output, err);
    if (st == SX_OK && (opts->gzip_level < 0 || opts->gzip_level > 9))
        st = sx_error_set(err, SX_ERR_USAGE, "", "gzip level %d is not in 0..9",
                          opts->gzip_level);
    if (st == SX_OK && gz && opts->deflate == SX_DEFLATE_ISAL && !sx_has_isal())
        st = sx_error_set(err, SX_ERR_USAGE, "",
                          "this build has no ISA-L deflate engine; use --deflate=zlib");
    if (st == SX_OK)
        st = sx_filter_new(opts, &filter, err);
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;

    /* NOTE: collective open; every rank reads and validates the index. */
    st = sx_h5_open(c, input, opts->summary != 0, &h5, &run, err);
    opened = true;
    if (st == SX_OK)
        st = inject(opts, rank, SX_FAIL_OPEN, err);
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;
    st = resolve_gpu(c, rank, size, h5, run, err);
    if (st != SX_OK)
        goto out;
    st = sx_doc_plan(&doc, run, filter, opts->indent, opts->block_bytes, err);
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;

    /* Rank 0 alone reads the lane tables and per-rank groups and opens the output. */
    if (rank == 0) {
        st = sx_h5_read_extras(h5, run, err);
        if (st == SX_OK)
            st = sx_out_open(output, &w.f, err);
    }
    st = sx_all_ok(c, st, err);
    if (st != SX_OK)
        goto out;

    struct sx_event_source src = {h5};
    if (rank == 0) {
        w.gz = gz;
        w.path = output;
        w.level = opts->gzip_level;
        w.eng = opts->deflate;
        w.o = opts;
        w.total = doc.total_weight;
        st = stream_root(c, size, &doc, &src, opts, &w, err);
    } else {
        st = stream_worker(c, rank, size, &doc, &src, opts, gz, err);
    }
    st = sx_all_ok(c, st, err);
    if (st == SX_OK && rank == 0) {
        struct sx_out_file *f = w.f;
        w.f = NULL;
        st = sx_out_commit(f, err);
    }
    st = sx_all_ok(c, st, err);
out:
    /* Whichever rank saw the signal first, and at whichever stage, the user asks
     * about the output: name it, and say it was not written. */
    if (st == SX_ERR_INTERRUPTED && err->code == SX_ERR_INTERRUPTED) {
        snprintf(err->text, sizeof err->text,
                 "%s: export of %s interrupted by a signal; the output was not written "
                 "(an existing file is left as it was)",
                 output, input);
        snprintf(err->source, sizeof err->source, "%s", output);
    }
    if (rank == 0)
        sx_out_abort(w.f); /* removes the temporary file of a failed run */
    sx_buf_free(&w.z);
    sx_doc_free(&doc);
    sx_filter_free(filter);
    sx_run_free(run);
    if (opened)
        sx_h5_close(h5); /* NOTE: collective */
    if (c != MPI_COMM_NULL)
        MPI_Comm_free(&c);
    return st;
}
