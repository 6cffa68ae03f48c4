/* fuzz_json.c - libFuzzer harness: JSON snippets, the JSON profile loader and the writer
 */
#include "fuzz_common.h"
#include "json_parse.h"
#include "meta_canon.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint64_t h = fz_hash(data, size);
    struct sx_run *run = NULL;
    struct sx_error err;

    fuzz_snippets((const char *)data, size, h);

    /* The whole-document loader reads a file; one input in eight goes in gzipped. */
    if ((h >> 9) % 8 == 0) {
        gzFile gz = gzopen(fz_in, "wb1");
        if (gz == NULL || (size > 0 && gzwrite(gz, data, (unsigned)size) != (int)size) ||
            gzclose(gz) != Z_OK)
            fz_fail("harness", "cannot write the gzip input file");
    } else {
        fz_write_file(fz_in, data, size);
    }
    sx_error_clear(&err);
    if (sx_json_load(fz_in, &run, &err) == SX_OK)
        fz_write_and_reload(run, h);
    sx_run_free(run);
    return 0;
}
