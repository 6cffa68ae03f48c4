/* out_file.h - the output under a temporary name, renamed over the final name when
 * complete */
#ifndef SX_OUT_FILE_H
#define SX_OUT_FILE_H

#include "buf.h"
#include "internal.h"

#include <sys/stat.h>

struct sx_out_file;

/* Whether an output named 'path' is written gzip-compressed: it ends in ".gz", any case.
 */
bool sx_out_is_gz(const char *path);
/*
 * Create the parent directories and a temporary file beside 'path': an
 * unnamed one (O_TMPFILE) where the file system has them, so that nothing is
 * left whatever ends the process, else ".NAME.XXXXXX". The checks and the
 * mode and owner of sx_out_target() apply. Flags: SX_OUT_THREAD, a thread
 * of its own writes what sx_out_write_buf hands it; SX_OUT_DIRECT, a large
 * output streamed in order (no sx_out_fd) is written around the page cache
 * (O_DIRECT) where the file system allows it (out_file.c).
 */
enum { SX_OUT_THREAD = 1u, SX_OUT_DIRECT = 2u };
enum sx_status sx_out_open(const char *path, unsigned flags, struct sx_out_file **f,
                           struct sx_error *err);
enum sx_status sx_out_write(struct sx_out_file *f, const void *p, size_t n,
                            struct sx_error *err);
/*
 * Write b's bytes, in order after all written before: a thread writes them
 * while the caller goes on, and 'b' comes back empty, holding the storage of
 * a buffer written before (or its own). A failed write is reported here or by
 * the next write or the commit.
 */
enum sx_status sx_out_write_buf(struct sx_out_file *f, struct sx_buf *b,
                                struct sx_error *err);
/*
 * Lend 'b' the output's own buffer to append the next bytes to (what 'b' held is kept
 * aside): the caller formats into it and hands it to sx_out_write_buf, with no write in
 * between, and gets its own back; what it appended is written without a copy. false:
 * nothing lent ('b' as it was; no thread, no direct writes, or no memory).
 */
bool sx_out_lend(struct sx_out_file *f, struct sx_buf *b);
/*
 * Ownership, the library's one rule: a function that takes ownership of an argument
 * takes it in every case, on failure too (as jansson's json_array_append_new): the
 * caller neither frees nor uses what it passed, whatever the call returns.
 */
/* Flush, close and rename over 'path'. Takes 'f' (freed, its temporary file removed on
 * failure). */
enum sx_status sx_out_commit(struct sx_out_file *f, struct sx_error *err);
/* Remove the temporary file. Accepts NULL. */
void sx_out_abort(struct sx_out_file *f);
/* The temporary name 'f' is written under (shorter than SX_TMP_NAME bytes); "" while
 * it is an unnamed file. */
#define SX_TMP_NAME 4096
const char *sx_out_tmp_path(const struct sx_out_file *f);

/* The output's descriptor, for positional writes (an output opened without a thread). */
int sx_out_fd(const struct sx_out_file *f);

/* The bytes of one stage the thread writes at a time, while the caller fills the next
 * (direct writes with the thread); 0 when the caller's bytes are not staged so. */
size_t sx_out_stage_bytes(const struct sx_out_file *f);

/*
 * Where an output named 'path' goes, as a shell's > would write it: the
 * target of a symbolic link ('*final', new: the caller frees it). An existing
 * file must be a regular file we may write, and root is refused one that has
 * no write bit at all; its status is in '*old' (st_mode 0 when there is none).
 */
enum sx_status sx_out_target(const char *path, char **final, struct stat *old,
                             struct sx_error *err);
/* Give the new file 'fd' the mode and, when we may, the owner of the file it
 * replaces ('old' from sx_out_target(); nothing when st_mode is 0). */
void sx_out_adopt(int fd, const struct stat *old);

/*
 * The one temporary-file scheme: a new empty file ".NAME.XXXXXX" beside
 * 'path' (mode as open(2) with 0666 under the umask), tracked for
 * sx_tmp_remove_all. New name in '*tmp'; its descriptor in '*fd', or closed
 * when 'fd' is NULL. The caller renames it with sx_tmp_commit, or removes it
 * and calls sx_tmp_forget.
 */
enum sx_status sx_tmp_create(const char *path, char **tmp, int *fd, struct sx_error *err);
/* Track a temporary file another rank writes, so that a signal here removes it. */
void sx_tmp_track(const char *tmp);
/*
 * NOTE: collective over 'comm'. Every rank learns rank 0's temporary name: rank 0 has it
 * in 'tmp', the others get it there, and track it (sx_tmp_track), so that a signal on any
 * rank removes the file: when rank 0 is killed outright, the launcher stops the others
 * with SIGTERM. Those others call sx_tmp_forget when the file is renamed or removed.
 */
enum sx_status sx_tmp_share(MPI_Comm comm, int rank, char tmp[SX_TMP_NAME],
                            struct sx_error *err);
/* 'tmp' was renamed or removed: no longer tracked. */
void sx_tmp_forget(const char *tmp);
/* Unlink every tracked temporary file (async-signal-safe: signal handlers); how
 * many were tracked. */
int sx_tmp_remove_all(void);
/*
 * The finished 'tmp' renamed to 'path' and no longer tracked, unless a stop was
 * asked for (sx_request_stop): then -1 with errno EINTR, 'tmp' left in place
 * (untracked) for the caller to remove. Else rename(2)'s result.
 */
int sx_tmp_commit(const char *tmp, const char *path);

#endif /* SX_OUT_FILE_H */
