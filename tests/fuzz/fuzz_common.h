/* fuzz_common.h - scratch files and the write-and-read-back oracle shared by the
 * harnesses */
#ifndef SX_FUZZ_COMMON_H
#define SX_FUZZ_COMMON_H

#include "doc.h"
#include "json_convert.h"
#include "json_load.h"
#include "json_write.h"
#include "run.h"
#include "run_compare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The loaders take paths, so every input goes through a file. One name per
 * process and per use, on tmpfs when there is one; removed at exit (a crash
 * leaves it behind, which is harmless).
 */
static char fz_dir[200];
static char fz_in[256], fz_out[256];

static void fz_remove_files(void) {
    remove(fz_in);
    remove(fz_out);
}

static void fz_init_paths(const char *tag, const char *ext) {
    const char *dir = getenv("SX_FUZZ_TMPDIR");
    if (dir == NULL && access("/dev/shm", W_OK) == 0)
        dir = "/dev/shm";
    if (dir == NULL)
        dir = getenv("TMPDIR");
    if (dir == NULL)
        dir = "/tmp";
    snprintf(fz_dir, sizeof fz_dir, "%s", dir);
    snprintf(fz_in, sizeof fz_in, "%s/sx_fuzz_%s_%ld.in%s", fz_dir, tag, (long)getpid(),
             ext);
    snprintf(fz_out, sizeof fz_out, "%s/sx_fuzz_%s_%ld.out.json", fz_dir, tag,
             (long)getpid());
    atexit(fz_remove_files);
}

static void fz_write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f == NULL || (n > 0 && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
        perror(path);
        abort(); /* the harness itself is broken, not the library */
    }
}

/* FNV-1a of the input: picks options deterministically, so a reproducer reproduces. */
static uint64_t fz_hash(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* A failed oracle: say why on stderr and crash so that libFuzzer keeps the input. */
static void fz_fail(const char *what, const char *why) {
    fprintf(stderr, "\n==sx-fuzz== %s: %s\n", what, why);
    abort();
}

/*
 * Write 'run' as a document (the writer on hostile data), with an indent and
 * a block size picked by 'h' (small blocks: many cuts inside columns). Then
 * "never lose data": the text must load back as the same run.
 */
static void fz_write_and_reload(const struct sx_run *run, uint64_t h) {
    static const int indents[] = {-1, 2, 0, -1};
    struct sx_doc doc;
    struct sx_buf out = {0};
    struct sx_error err;
    struct sx_run *back = NULL;
    const struct sx_event_source src = {.ops = NULL}; /* the run in memory */
    const int indent = indents[h & 3];
    const size_t block = (size_t)64 << ((h >> 2) & 7); /* 64 B .. 8 KiB */
    enum sx_status st;
    char why[512];

    memset(&doc, 0, sizeof doc);
    sx_error_clear(&err);
    st = sx_doc_plan(&doc, run, NULL, indent, block, &err);
    if (st == SX_OK)
        st = sx_doc_header(&doc, &out, &err);
    for (size_t b = 0; st == SX_OK && b < doc.nblocks; b++)
        st = sx_doc_block(&doc, &src, NULL, NULL, b, &out, &err);
    if (st == SX_OK)
        st = sx_doc_trailer(&doc, &out, &err);
    if (st == SX_OK && out.failed)
        st = SX_ERR_NOMEM;
    if (st == SX_ERR_NOMEM)
        goto out; /* -rss_limit_mb, not a finding */
    if (st != SX_OK)
        fz_fail("a loaded run cannot be written", err.text);

    fz_write_file(fz_out, out.data, out.len);
    sx_error_clear(&err);
    st = sx_json_load(fz_out, &back, &err);
    if (st == SX_ERR_NOMEM)
        goto out;
    if (st != SX_OK)
        fz_fail("the written document does not load back", err.text);
    if (!sx_run_equal(run, back, why, sizeof why))
        fz_fail("the written document loads back as another run", why);
out:
    sx_run_free(back);
    sx_buf_free(&out);
    sx_doc_free(&doc);
}

#endif /* SX_FUZZ_COMMON_H */
