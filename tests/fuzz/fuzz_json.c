/* fuzz_json.c - libFuzzer harness: JSON snippets, the JSON profile loader (its fast path
 * against jansson) and the writer */
#include "fuzz_common.h"
#include "json_parse.h"
#include "meta_canon.h"
#include "sx_test_run.h"

#include <zlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fz_init_paths("json", ".json");
    return 0;
}

/* Stored snippets: event_metadata lists, tag lists, metadata values. */
static void fuzz_snippets(const char *text, size_t n, uint64_t h) {
    struct sx_error err;
    struct sx_buf canon = {0};
    bool any = false;
    uint64_t count = 0;
    char **tags = NULL;
    size_t ntags = 0;
    struct sx_value v = {.kind = SX_V_NULL}, back = {.kind = SX_V_NULL};
    struct sx_buf text_out = {0};

    sx_error_clear(&err);
    if (sx_json_canon_meta(text, n, &canon, &any, &count, &err) == SX_OK) {
        /* canonical text is a fixed point: canon(canon(x)) == canon(x) */
        struct sx_buf again = {0};
        bool any2 = false;
        uint64_t count2 = 0;
        sx_error_clear(&err);
        if (sx_json_canon_meta(canon.data, canon.len, &again, &any2, &count2, &err) !=
            SX_OK)
            fz_fail("canonical event metadata does not parse", err.text);
        if (again.len != canon.len || memcmp(again.data, canon.data, canon.len) != 0 ||
            any2 != any || count2 != count)
            fz_fail("canonical event metadata is not a fixed point", canon.data);
        sx_buf_free(&again);
    }
    sx_buf_free(&canon);

    /* the fast path takes only text that jansson writes back unchanged */
    struct sx_buf fast = {0}, slow = {0};
    bool fany = false, sany = false;
    uint64_t fcount = 0, scount = 0;
    if (sx_meta_canon_fast(text, n, &fast, &fany, &fcount)) {
        sx_meta_canon_fast_enable(false);
        sx_error_clear(&err);
        const enum sx_status st =
            sx_json_canon_meta(text, n, &slow, &sany, &scount, &err);
        sx_meta_canon_fast_enable(true);
        if (st != SX_OK)
            fz_fail("event metadata the fast path took does not parse", err.text);
        if (slow.len != fast.len || memcmp(slow.data, fast.data, fast.len) != 0 ||
            sany != fany || scount != fcount)
            fz_fail("the fast path and jansson disagree on event metadata", fast.data);
    }
    sx_buf_free(&fast);
    sx_buf_free(&slow);

    sx_error_clear(&err);
    if (sx_json_parse_tags(text, n, "tags", &tags, &ntags, &err) == SX_OK) {
        for (size_t i = 0; i < ntags; i++)
            free(tags[i]);
        free(tags);
    }

    sx_error_clear(&err);
    if (sx_json_to_value(text, n, &v, &err) == SX_OK) {
        /* written as json.dumps would and parsed again: the same value */
        sx_write_value(&text_out, &v, (h >> 5) & 1 ? 2 : -1, 0);
        if (!text_out.failed) {
            sx_error_clear(&err);
            if (sx_json_to_value(text_out.data, text_out.len, &back, &err) != SX_OK)
                fz_fail("a written value does not parse", err.text);
            if (!sx_value_equal(&v, &back))
                fz_fail("a written value parses as another value", text_out.data);
        }
    }
    sx_value_free(&v);
    sx_value_free(&back);
    sx_buf_free(&text_out);
}

/*
 * The input gzipped in members of 'chunk' bytes (0: one member). The reader
 * gets a member's text per read: small ones end its window all through the
 * document, as a document over its 4 MiB does only at a few places.
 */
static void fz_write_gz(const char *path, const uint8_t *data, size_t size,
                        size_t chunk) {
    struct sx_buf out = {0};
    unsigned char buf[1 << 14];
    z_stream z;
    size_t at = 0;

    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        fz_fail("harness", "deflateInit2");
    do {
        const size_t len = chunk == 0 || size - at < chunk ? size - at : chunk;
        int rc;
        z.next_in = (unsigned char *)(uintptr_t)(data + at);
        z.avail_in = (uInt)len;
        do {
            z.next_out = buf;
            z.avail_out = sizeof buf;
            rc = deflate(&z, Z_FINISH);
            sx_buf_append(&out, buf, sizeof buf - z.avail_out);
        } while (rc == Z_OK);
        if (rc != Z_STREAM_END || deflateReset(&z) != Z_OK)
            fz_fail("harness", "deflate");
        at += len;
    } while (at < size);
    deflateEnd(&z);
    if (out.failed)
        fz_fail("harness", "out of memory writing the gzip input");
    fz_write_file(path, out.data, out.len);
    sx_buf_free(&out);
}

static enum sx_status fz_load(bool fast, struct sx_run **run, struct sx_error *err) {
    if (fast)
        unsetenv("SCOPE_EXPORT_FAST_JSON");
    else
        setenv("SCOPE_EXPORT_FAST_JSON", "0", 1);
    sx_error_clear(err);
    *run = NULL;
    const enum sx_status st = sx_json_load(fz_in, run, err);
    unsetenv("SCOPE_EXPORT_FAST_JSON");
    return st;
}

/*
 * The document in fz_in read with the fast path on and off: the same run, in
 * every field, or the same status and error. The run read with it on, or NULL.
 */
static struct sx_run *fz_load_both_ways(void) {
    struct sx_run *a = NULL, *b = NULL;
    struct sx_error ea, eb;
    char why[1200];

    const enum sx_status sa = fz_load(true, &a, &ea);
    const enum sx_status sb = fz_load(false, &b, &eb);
    if (sa == SX_ERR_NOMEM || sb == SX_ERR_NOMEM) {
        /* -rss_limit_mb: jansson's tree needs more than the fast path, not a finding */
        sx_run_free(a);
        a = NULL;
        goto out;
    }
    if (sa != sb || strcmp(ea.text, eb.text) != 0 || strcmp(ea.source, eb.source) != 0) {
        snprintf(why, sizeof why, "fast path: status %d [%s]; jansson: status %d [%s]",
                 sa, ea.text, sb, eb.text);
        fz_fail("the fast path and jansson disagree", why);
    }
    if (sa == SX_OK && !sx_test_same_run(a, b, why, sizeof why))
        fz_fail("the fast path and jansson read different runs", why);
out:
    sx_run_free(b);
    return a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint64_t h = fz_hash(data, size);
    struct sx_run *run = NULL;

    fuzz_snippets((const char *)data, size, h);

    /* The whole-document loader reads a file; one input in eight goes in gzipped, half
     * of those in small members. */
    if ((h >> 9) % 8 == 0)
        fz_write_gz(fz_in, data, size, (h >> 12) & 1 ? 0 : 1 + (size_t)((h >> 13) % 97));
    else
        fz_write_file(fz_in, data, size);
    run = fz_load_both_ways();
    if (run != NULL)
        fz_write_and_reload(run, h);
    sx_run_free(run);
    return 0;
}
