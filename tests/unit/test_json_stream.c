/* test_json_stream.c - the JSON reader's fast path reads every region row exactly as
 * jansson does: each document loaded with it on and off gives the same run or the same
 * error */
#include "buf.h"
#include "json_load.h"
#include "json_stream.h"
#include "run.h"
#include "sx_test.h"
#include "sx_test_doc.h"
#include "sx_test_run.h"

#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define GOLDEN SX_SHARED_DIR "/golden/"
#define FAST_ENV "SCOPE_EXPORT_FAST_JSON"

/* The reader's first window (json_stream.c): text beyond it is read in later refills. */
#define WINDOW ((size_t)4 << 20)

static char tmp_json[512], tmp_gz[512];
static size_t ndocs, nelements, nfast; /* what the comparisons covered */
static bool counting = true; /* whether check_path counts the fast path's elements */

/* ------------------------------------------------------------------ */
/* Files                                                              */

static void put_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    ASSERT(f != NULL);
    ASSERT(n == 0 || fwrite(data, 1, n, f) == n);
    ASSERT(fclose(f) == 0);
}

/*
 * 'data' gzipped as members of 'chunk' bytes each (0: one member), appended to
 * 'out'. The reader gets one member's text per read, so the text it holds ends
 * after every chunk: a cheap way to put the end of its window at any byte.
 */
static void gz_members(struct sx_buf *out, const char *data, size_t n, size_t chunk) {
    z_stream z;
    unsigned char buf[1 << 14];
    size_t at = 0;

    memset(&z, 0, sizeof z);
    ASSERT(deflateInit2(&z, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    do {
        const size_t len = chunk == 0 || n - at < chunk ? n - at : chunk;
        z.next_in = (unsigned char *)(uintptr_t)(data + at);
        z.avail_in = (uInt)len;
        int rc;
        do {
            z.next_out = buf;
            z.avail_out = sizeof buf;
            rc = deflate(&z, Z_FINISH);
            ASSERT(rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR);
            sx_buf_append(out, buf, sizeof buf - z.avail_out);
        } while (rc != Z_STREAM_END);
        ASSERT(deflateReset(&z) == Z_OK);
        at += len;
    } while (at < n);
    deflateEnd(&z);
    ASSERT(!out->failed);
}

static void put_gz(const char *path, const char *data, size_t n, size_t chunk) {
    struct sx_buf out = {0};
    gz_members(&out, data, n, chunk);
    put_file(path, out.data, out.len);
    sx_buf_free(&out);
}

/* Two members: the text up to 'k', then the rest. */
static void put_gz_split(const char *path, const char *data, size_t n, size_t k) {
    struct sx_buf out = {0};
    gz_members(&out, data, k, 0);
    gz_members(&out, data + k, n - k, 0);
    put_file(path, out.data, out.len);
    sx_buf_free(&out);
}

/*
 * A gzip stream of 'data' flushed but never finished: inflating it gives all
 * the text, then "unexpected end of file".
 */
static void put_gz_unfinished(const char *path, const char *data, size_t n) {
    z_stream z;
    unsigned char *buf = malloc(n + 1024);
    ASSERT(buf != NULL);
    memset(&z, 0, sizeof z);
    ASSERT(deflateInit2(&z, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    z.next_in = (unsigned char *)(uintptr_t)data;
    z.avail_in = (uInt)n;
    z.next_out = buf;
    z.avail_out = (uInt)(n + 1024);
    ASSERT(deflate(&z, Z_SYNC_FLUSH) == Z_OK && z.avail_in == 0);
    put_file(path, buf, n + 1024 - z.avail_out);
    deflateEnd(&z);
    free(buf);
}

/* ------------------------------------------------------------------ */
/* One document, read both ways                                       */

struct counts {
    size_t elements, fast;
};

static enum sx_status count_value(void *ctx, const char *key, size_t klen,
                                  const char *text, size_t n, uint64_t off,
                                  struct sx_error *err) {
    (void)ctx, (void)key, (void)klen, (void)text, (void)n, (void)off, (void)err;
    return SX_OK;
}

static enum sx_status count_regions(void *ctx, struct sx_error *err) {
    (void)ctx, (void)err;
    return SX_OK;
}

static enum sx_status count_element(void *ctx, size_t i, struct sx_row *row,
                                    const char *name, size_t nlen, const char *text,
                                    size_t n, uint64_t off, struct sx_error *err) {
    struct counts *c = ctx;
    (void)i, (void)name, (void)nlen, (void)text, (void)n, (void)off, (void)err;
    c->elements++;
    c->fast += row != NULL;
    return SX_OK;
}

static enum sx_status count_end(void *ctx, struct sx_error *err) {
    (void)ctx, (void)err;
    return SX_OK;
}

static const struct sx_jstream_ops count_ops = {.value = count_value,
                                                .regions = count_regions,
                                                .element = count_element,
                                                .end = count_end};

/* How many elements of regions the fast path reads in the document at 'path'. */
static struct counts count_fast(const char *path) {
    struct counts c = {0, 0};
    struct sx_error err;
    sx_error_clear(&err);
    unsetenv(FAST_ENV);
    (void)sx_jstream_read(path, &count_ops, &c, &err);
    return c;
}

static enum sx_status load(const char *path, bool fast, struct sx_run **run,
                           struct sx_error *err) {
    if (fast)
        unsetenv(FAST_ENV); /* the default */
    else
        ASSERT(setenv(FAST_ENV, "0", 1) == 0);
    sx_error_clear(err);
    *run = NULL;
    const enum sx_status st = sx_json_load(path, run, err);
    unsetenv(FAST_ENV);
    return st;
}

/* Which way a document must go, besides the same answer both ways. */
enum want_fast { ANY_PATH = -1, NO_FAST = 0, ALL_FAST = 1 };
enum want_ok { ANY_END = -1, FAILS = 0, LOADS = 1 };

/*
 * Load 'path' with the fast path on and off: the same run, or the same status
 * and error. 'wf': ALL_FAST when every element must go through the fast path
 * (and there is one), NO_FAST when none may; 'wo': whether it must load.
 * Returns what the fast path read (not counted when 'counting' is off).
 */
static struct counts check_path(const char *label, const char *path, int wf, int wo) {
    struct sx_run *a = NULL, *b = NULL;
    struct sx_error ea, eb;
    char why[600];
    struct counts c = {0, 0};

    const enum sx_status sa = load(path, true, &a, &ea);
    const enum sx_status sb = load(path, false, &b, &eb);
    ndocs++;
    if (sa != sb || ea.code != eb.code || strcmp(ea.text, eb.text) != 0 ||
        strcmp(ea.source, eb.source) != 0 || ea.rank != eb.rank) {
        fprintf(stderr,
                "  %s: fast path: status %d [%s]\n  %*s  jansson:   status %d [%s]\n",
                label, sa, ea.text, (int)strlen(label), "", sb, eb.text);
        CHECK(!"the fast path and jansson disagree");
    } else if (sa == SX_OK && !sx_test_same_run(a, b, why, sizeof why)) {
        fprintf(stderr, "  %s: the fast path reads another run: %s\n", label, why);
        CHECK(!"the fast path and jansson read different runs");
    }
    CHECK(sa != SX_OK || (a != NULL && b != NULL));
    CHECK(sa == SX_OK || (a == NULL && b == NULL && ea.text[0] != '\0'));
    if (wo != ANY_END && (sa == SX_OK) != (wo == LOADS)) {
        fprintf(stderr, "  %s: status %d [%s], want %s\n", label, sa, ea.text,
                wo == LOADS ? "a run" : "an error");
        CHECK(!"outcome");
    }
    if (!counting && wf == ANY_PATH)
        goto out; /* a third read costs much under the sanitizers, and says little */
    c = count_fast(path);
    nelements += c.elements;
    nfast += c.fast;
    if ((wf == ALL_FAST && (c.elements == 0 || c.fast != c.elements)) ||
        (wf == NO_FAST && c.fast != 0)) {
        fprintf(stderr, "  %s: the fast path read %zu of %zu elements, want %s\n", label,
                c.fast, c.elements, wf == ALL_FAST ? "all" : "none");
        CHECK(!"fast path coverage");
    }
out:
    sx_run_free(a);
    sx_run_free(b);
    return c;
}

/*
 * validate (a check that keeps no row) of 'path', with the fast path on and off: the
 * same status and message, and 'wo' the status.
 */
static void check_validate(const char *label, const char *path, int wo) {
    struct sx_error ea, eb;
    sx_error_clear(&ea);
    sx_error_clear(&eb);
    unsetenv(FAST_ENV);
    const enum sx_status sa = sx_validate(path, &ea);
    ASSERT(setenv(FAST_ENV, "0", 1) == 0);
    const enum sx_status sb = sx_validate(path, &eb);
    unsetenv(FAST_ENV);
    if (sa != sb || strcmp(ea.text, eb.text) != 0 || (sa == SX_OK) != (wo == LOADS)) {
        fprintf(stderr, "  %s: validate: fast path %d [%s], jansson %d [%s]\n", label, sa,
                ea.text, sb, eb.text);
        CHECK(!"validate: the fast path and jansson disagree");
    }
}

/* 'text' plain, and gzipped in 7-byte members (the window's end all through it). */
static void check_text(const char *label, const char *text, size_t n, int wf, int wo) {
    char l[300];
    put_file(tmp_json, text, n);
    check_path(label, tmp_json, wf, wo);
    put_gz(tmp_gz, text, n, 7);
    snprintf(l, sizeof l, "%s (gzip, 7-byte members)", label);
    check_path(l, tmp_gz, wf, wo);
}

#define HEAD                                                                             \
    "{\"format\": \"scope-profiler-profile\", \"format_version\": 1, \"num_ranks\": 2, "
#define EV "\"start_times_ns\": [1, 2], \"end_times_ns\": [3, 4]"
#define EV1 "\"start_times_ns\": [1], \"end_times_ns\": [3]"

/* A document whose "regions" value is 'regions'. */
static void check_regions(const char *label, const char *regions, int wf, int wo) {
    struct sx_buf d = {0};
    sx_buf_puts(&d, HEAD "\"regions\": ");
    sx_buf_puts(&d, regions);
    sx_buf_puts(&d, "}");
    ASSERT(!d.failed);
    check_text(label, d.data, d.len, wf, wo);
    sx_buf_free(&d);
}

/* A document with one row: the members 'a' 'b' 'c' (concatenated). */
static void check_row3(const char *label, const char *a, const char *b, const char *c,
                       int wf, int wo) {
    struct sx_buf d = {0};
    sx_buf_puts(&d, HEAD "\"regions\": [{");
    sx_buf_puts(&d, a);
    sx_buf_puts(&d, b);
    sx_buf_puts(&d, c);
    sx_buf_puts(&d, "}]}");
    ASSERT(!d.failed);
    check_text(label, d.data, d.len, wf, wo);
    sx_buf_free(&d);
}

static void check_row(const char *label, const char *members, int wf, int wo) {
    check_row3(label, members, "", "", wf, wo);
}

/* ------------------------------------------------------------------ */
/* The comparison itself                                              */

/* sx_test_same_run sees a change in any field the fast path fills. */
static void test_compare(void) {
    static const char doc[] =
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 1, \"source_file\": \"f\", "
             "\"source_lineno\": 3, \"source_text\": \"t\", \"tags\": [\"x\"], " EV
             ", \"call_ids\": [0, 1], \"event_metadata\": [{}, {\"k\": 1}], "
             "\"exclusive_total_ns\": 9}]}";
    struct sx_run *a = NULL, *b = NULL;
    struct sx_error err;
    char why[600];

    put_file(tmp_json, doc, sizeof doc - 1);
    ASSERT(load(tmp_json, true, &a, &err) == SX_OK &&
           load(tmp_json, false, &b, &err) == SX_OK);
    ASSERT(a->nrows == 1 && b->nrows == 1);
    struct sx_row *r = &b->rows[0];
    CHECK(sx_test_same_run(a, b, why, sizeof why));
#define CHANGED(change, undo)                                                            \
    do {                                                                                 \
        change;                                                                          \
        CHECK(!sx_test_same_run(a, b, why, sizeof why));                                 \
        CHECK(!sx_test_same_run(b, a, why, sizeof why));                                 \
        undo;                                                                            \
        CHECK(sx_test_same_run(a, b, why, sizeof why));                                  \
    } while (0)
    CHANGED(r->rank++, r->rank--);
    CHANGED(r->region++, r->region--);
    CHANGED(r->file_row++, r->file_row--);
    CHANGED(r->source_file[0]++, r->source_file[0]--);
    CHANGED(r->source_text[0]++, r->source_text[0]--);
    CHANGED(r->source_lineno++, r->source_lineno--);
    CHANGED(r->has_lineno = false, r->has_lineno = true);
    CHANGED(r->tags[0][0]++, r->tags[0][0]--);
    CHANGED(r->ntags--, r->ntags++);
    CHANGED(r->exclusive_total++, r->exclusive_total--);
    CHANGED(r->has_exclusive = false, r->has_exclusive = true);
    CHANGED(r->count--, r->count++);
    CHANGED(r->cols ^= SX_COLBIT(SX_COL_GPU), r->cols ^= SX_COLBIT(SX_COL_GPU));
    for (int c = 0; c < SX_NCOLS; c++)
        if (r->col[c] != NULL)
            CHANGED(r->col[c][1]++, r->col[c][1]--);
    CHANGED(r->meta_text[2]++, r->meta_text[2]--);
    CHANGED(r->meta_any = false, r->meta_any = true);
    CHANGED(r->event_data_available = false, r->event_data_available = true);
    CHANGED(b->names[0][0]++, b->names[0][0]--);
    CHANGED(b->num_ranks++, b->num_ranks--);
#undef CHANGED
    sx_run_free(a);
    sx_run_free(b);
}

/* ------------------------------------------------------------------ */
/* The fast path's look-ahead                                         */

/*
 * A list of integers that starts k bytes before the end of the text, for every
 * k around the 64 bytes the fast path wants to see ahead of a value: at the end
 * of the text it reads what there is, and never gives the row up for it.
 */
static void test_lookahead(void) {
    char doc[400], label[64];
    for (int pad = 0; pad < 100; pad++) {
        const int n =
            snprintf(doc, sizeof doc,
                     HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, "
                          "\"end_times_ns\": [3], \"start_times_ns\": [1]%*s}]}",
                     pad, "");
        ASSERT(n > 0 && (size_t)n < sizeof doc);
        snprintf(label, sizeof label, "a list, %d spaces, the end of the row", pad);
        check_text(label, doc, (size_t)n, ALL_FAST, LOADS);
    }
}

/* ------------------------------------------------------------------ */
/* Documents on disk                                                  */

/* Whether the file at 'path' says it is a JSON profile in its first bytes. */
static bool is_profile(const char *path) {
    char head[4096];
    gzFile z = gzopen(path, "rb");
    if (z == NULL)
        return false;
    const int n = gzread(z, head, sizeof head - 1);
    gzclose(z);
    if (n <= 0)
        return false;
    head[n] = '\0';
    return strstr(head, "\"scope-profiler-profile\"") != NULL;
}

/*
 * The same document with other whitespace: 0 compact (separators (',', ':')),
 * 1 as json.dumps(indent=2) lays it out, 2 whitespace of every kind between
 * every two tokens.
 */
static void relayout(const char *s, size_t n, int style, struct sx_buf *o) {
    static const char *const ws[] = {"",        " ",      "\n",   "\t",  "\r\n",
                                     "  \n\t ", "\n    ", "\t\t", " \r "};
    size_t depth = 0, k = 0;

    sx_buf_reset(o);
    for (size_t i = 0; i < n;) {
        const char c = s[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
            i++;
            continue;
        }
        if (style == 2)
            sx_buf_puts(o, ws[k++ % (sizeof ws / sizeof ws[0])]);
        if (c == '"') {
            size_t j = i + 1;
            while (j < n && s[j] != '"')
                j += s[j] == '\\' ? 2 : 1;
            sx_buf_append(o, s + i, j + 1 - i);
            i = j + 1;
        } else if (c == '{' || c == '[') {
            size_t j = i + 1;
            while (j < n && (s[j] == ' ' || s[j] == '\n' || s[j] == '\r' || s[j] == '\t'))
                j++;
            sx_buf_putc(o, c);
            if (j < n && (s[j] == '}' || s[j] == ']')) {
                sx_buf_putc(o, s[j]);
                i = j + 1;
                continue;
            }
            depth++;
            if (style == 1) {
                sx_buf_putc(o, '\n');
                for (size_t d = 0; d < 2 * depth; d++)
                    sx_buf_putc(o, ' ');
            }
            i++;
        } else if (c == '}' || c == ']') {
            depth--;
            if (style == 1) {
                sx_buf_putc(o, '\n');
                for (size_t d = 0; d < 2 * depth; d++)
                    sx_buf_putc(o, ' ');
            }
            sx_buf_putc(o, c);
            i++;
        } else if (c == ',') {
            sx_buf_putc(o, ',');
            if (style == 1) {
                sx_buf_putc(o, '\n');
                for (size_t d = 0; d < 2 * depth; d++)
                    sx_buf_putc(o, ' ');
            }
            i++;
        } else if (c == ':') {
            sx_buf_puts(o, style == 1 ? ": " : ":");
            i++;
        } else {
            size_t j = i;
            while (j < n && !strchr(" \n\r\t,:{}[]\"", s[j]))
                j++;
            sx_buf_append(o, s + i, j - i);
            i = j;
        }
        if (style == 2)
            sx_buf_puts(o, ws[k++ % (sizeof ws / sizeof ws[0])]);
    }
    ASSERT(!o->failed);
}

/* A profile on disk, and its text laid out again three ways. */
static void check_profile(const char *path, bool relay) {
    struct sx_buf o = {0};
    char label[1200];
    size_t n = 0;

    const struct counts c0 = check_path(path, path, ANY_PATH, LOADS);
    if (!relay)
        return;
    char *text = sx_test_slurp(path, &n, true);
    ASSERT(text != NULL);
    for (int style = 0; style < 3; style++) {
        relayout(text, n, style, &o);
        put_file(tmp_json, o.data, o.len);
        snprintf(label, sizeof label, "%s laid out as %s", path,
                 style == 0   ? "compact"
                 : style == 1 ? "indent=2"
                              : "spaced");
        const struct counts c = check_path(label, tmp_json, ANY_PATH, LOADS);
        /* whitespace is no reason to leave a row to jansson */
        if (c.fast != c0.fast || c.elements != c0.elements) {
            fprintf(stderr, "  %s: the fast path read %zu of %zu elements, not %zu\n",
                    label, c.fast, c.elements, c0.fast);
            CHECK(!"the fast path reads any layout");
        }
    }
    free(text);
    sx_buf_free(&o);
}

static size_t check_glob(const char *pattern, bool relay) {
    glob_t g;
    size_t n = 0;
    if (glob(pattern, 0, NULL, &g) != 0)
        return 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        if (!is_profile(g.gl_pathv[i]))
            continue;
        check_profile(g.gl_pathv[i], relay);
        n++;
    }
    globfree(&g);
    return n;
}

static void test_shared_documents(void) {
    const size_t before = nfast;
    CHECK(check_glob(GOLDEN "*/*.json", true) >= 16);
    CHECK(check_glob(GOLDEN "*/*.json.gz", false) >= 16);
    CHECK(check_glob(SX_SHARED_DIR "/golden-native/*/*.json", true) >= 5);
    CHECK(check_glob(SX_SHARED_DIR "/golden-native/*/*/*.json", true) >= 3);
    (void)check_glob(SX_SHARED_DIR "/golden-native/*/*.json.gz", false);
    (void)check_glob(SX_SHARED_DIR "/golden-native/*/*/*.json.gz", false);
    CHECK(check_glob(SX_SHARED_DIR "/fixtures/compat/*.json", true) >= 1);
    CHECK(nfast - before > 1000); /* the exporters' rows go through the fast path */
}

/* ------------------------------------------------------------------ */
/* Strings                                                            */

/* JSON string tokens: whether jansson takes them, and whether they hold a NUL. */
static const struct {
    const char *tok;
    bool valid, nul;
} strings[] = {
    {"\"plain\"", true, false},
    {"\"\"", true, false},
    {"\"q\\\"b\\\\s\\/f\\bb\\ff\\nn\\rr\\tt\"", true, false},
    {"\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", true, false},
    {"\"\\u00e9\\u00E9\\u65e5\\u0041\\u007f\\u0080\\u07ff\\u0800\\uffff\"", true, false},
    {"\"\\ud83d\\ude00\\uD83D\\uDE00\\udbff\\udfff\\ud800\\udc00\"", true, false},
    {"\"\\u0000\"", true, true},
    {"\"a\\u0000b\"", true, true},
    {"\"\\u0000sxbig0:12\"", true, true},
    {"\"raw DEL \x7f\"", true, false},
    {"\"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf \xc2\x80 "
     "\xe0\xa0\x80 \xf0\x90\x80\x80 \xed\x9f\xbf \xee\x80\x80\"",
     true, false},
    {"\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\ud83d\\ude00bbbbbbbbbbbbbb\\nccccccccccccc\"",
     true, false},
    /* escapes jansson refuses */
    {"\"\\ud83d\"", false, false},
    {"\"\\ud83dx\"", false, false},
    {"\"\\ud83d\\u0041\"", false, false},
    {"\"\\ud83d\\ud83d\"", false, false},
    {"\"\\ude00\"", false, false},
    {"\"\\ude00\\ud83d\"", false, false},
    {"\"\\ud83d\\n\"", false, false},
    {"\"\\x41\"", false, false},
    {"\"\\u12\"", false, false},
    {"\"\\u12G4\"", false, false},
    {"\"\\U00e9\"", false, false},
    {"\"\\'\"", false, false},
    {"\"\\\"", false, false},
    /* raw bytes jansson refuses */
    {"\"ctl \x01\"", false, false},
    {"\"ctl \x1f\"", false, false},
    {"\"tab \t\"", false, false},
    {"\"nl \n\"", false, false},
    {"\"overlong \xc0\x80\"", false, false},
    {"\"overlong \xc1\xbf\"", false, false},
    {"\"overlong \xe0\x80\x80\"", false, false},
    {"\"overlong \xe0\x9f\xbf\"", false, false},
    {"\"overlong \xf0\x80\x80\x80\"", false, false},
    {"\"overlong \xf0\x8f\xbf\xbf\"", false, false},
    {"\"cut \xc3\"", false, false},
    {"\"cut \xc3x\"", false, false},
    {"\"cut \xe6\x97\"", false, false},
    {"\"cut \xf0\x9f\x98\"", false, false},
    {"\"surrogate \xed\xa0\x80\"", false, false},
    {"\"surrogate \xed\xbf\xbf\"", false, false},
    {"\"beyond \xf4\x90\x80\x80\"", false, false},
    {"\"beyond \xf5\x80\x80\x80\"", false, false},
    {"\"beyond \xf8\x88\x80\x80\x80\"", false, false},
    {"\"byte \xfe\"", false, false},
    {"\"byte \xff\"", false, false},
    {"\"continuation \x80\"", false, false},
    {"\"continuation \xbf\"", false, false},
    {"\"unterminated", false, false},
};

/* Where a string goes in a row. */
enum place {
    P_NAME,
    P_TAG,
    P_SFILE,
    P_STEXT,
    P_META_VALUE,
    P_META_KEY,
    P_ROW_KEY,
    P_NPLACES
};

static void test_strings(void) {
    static const char *const place_names[P_NPLACES] = {
        "name",           "tag",          "source_file", "source_text",
        "metadata value", "metadata key", "row key"};
    char label[200];

    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        const char *s = strings[i].tok;
        for (int p = 0; p < P_NPLACES; p++) {
            int wf = strings[i].valid && !strings[i].nul ? ALL_FAST : NO_FAST;
            int wo = strings[i].valid && !strings[i].nul ? LOADS : FAILS;
            /* a NUL is kept where the run keeps text with its length (the C string
             * ends there alike); a name and a key cannot hold one */
            if (strings[i].valid && strings[i].nul && p != P_NAME && p != P_META_KEY &&
                p != P_ROW_KEY)
                wf = ALL_FAST, wo = LOADS;
            if (p == P_ROW_KEY)
                wf = NO_FAST; /* an unknown key */
            snprintf(label, sizeof label, "string %zu as the %s", i, place_names[p]);
            switch (p) {
            case P_NAME:
                check_row3(label, "\"name\": ", s, ", \"rank\": 0, " EV, wf, wo);
                break;
            case P_TAG:
                check_row3(label, "\"name\": \"a\", \"rank\": 0, \"tags\": [\"t\", ", s,
                           "], " EV, wf, wo);
                break;
            case P_SFILE:
                check_row3(label, "\"name\": \"a\", \"rank\": 0, \"source_file\": ", s,
                           ", " EV, wf, wo);
                break;
            case P_STEXT:
                check_row3(label,
                           "\"name\": \"a\", \"rank\": 0, " EV ", \"source_text\": ", s,
                           "", wf, wo);
                break;
            case P_META_VALUE:
                check_row3(label,
                           "\"name\": \"a\", \"rank\": 0, " EV
                           ", \"event_metadata\": [{}, {\"k\": ",
                           s, "}]", wf, wo);
                break;
            case P_META_KEY:
                check_row3(label,
                           "\"name\": \"a\", \"rank\": 0, " EV
                           ", \"event_metadata\": [{\"a\": 1, ",
                           s, ": 2}, {}]", wf, wo);
                break;
            default:
                check_row3(label, "\"name\": \"a\", \"rank\": 0, " EV ", ", s, ": 1", wf,
                           wo);
                break;
            }
        }
    }
    /* keys spelled with escapes are the same keys */
    check_row("escaped keys",
              "\"n\\u0061me\": \"a\", \"\\u0072ank\": 0, \"start_times_ns\": [1], "
              "\"end\\u005ftimes_ns\": [2], \"event_metad\\u0061ta\": [{\"\\u006b\": 1}]",
              ALL_FAST, LOADS);
    check_row("a key that only looks like one", "\"Name\": \"a\", \"rank\": 0, " EV,
              NO_FAST, FAILS);
    check_row("a key with a NUL",
              "\"name\\u0000\": \"a\", \"name\": \"a\", \"rank\": 0, " EV, NO_FAST,
              FAILS);
    /* strings long enough to leave the reader's look-ahead on every side of an escape */
    for (size_t k = 0; k < 40; k++) {
        char row[400];
        snprintf(
            row, sizeof row,
            "\"name\": \"%.*s\\ud83d\\ude00\\t%.*s\xf0\x9f\x98\x80\", \"rank\": 0, " EV,
            (int)k, "0123456789012345678901234567890123456789", (int)(39 - k),
            "0123456789012345678901234567890123456789");
        snprintf(label, sizeof label, "escape after %zu bytes", k);
        check_row(label, row, ALL_FAST, LOADS);
    }
}

/* ------------------------------------------------------------------ */
/* Numbers                                                            */

enum num_kind { N_INT, N_BIG, N_REAL, N_LONG_REAL, N_OVERFLOW, N_BAD };

static const struct {
    const char *tok;
    enum num_kind kind;
} numbers[] = {
    {"0", N_INT},
    {"-0", N_INT},
    {"7", N_INT},
    {"-1", N_INT},
    {"1234567890123", N_INT},
    {"9223372036854775807", N_INT},
    {"-9223372036854775808", N_INT},
    {"9223372036854775806", N_INT},
    {"-9223372036854775807", N_INT},
    {"1000000000000000000", N_INT},
    {"9223372036854775808", N_BIG},
    {"-9223372036854775809", N_BIG},
    {"18446744073709551615", N_BIG},
    {"18446744073709551616", N_BIG},
    {"12345678901234567890", N_BIG},
    {"99999999999999999999", N_BIG},
    {"-99999999999999999999", N_BIG},
    {"100000000000000000000000000000000000000000", N_BIG},
    {"1.5", N_REAL},
    {"1.0", N_REAL},
    {"-0.0", N_REAL},
    {"0.1", N_REAL},
    {"1e5", N_REAL},
    {"1E5", N_REAL},
    {"1e+5", N_REAL},
    {"1E-5", N_REAL},
    {"2.5e-05", N_REAL},
    {"-1.5E+300", N_REAL},
    {"1.7976931348623157e308", N_REAL},
    {"5e-324", N_REAL},
    {"1e-400", N_REAL},
    {"123456789012345678901234567890.5", N_REAL},
    {"12345678901234567890e-3", N_REAL},
    {"1e0000000000000000000000000000005", N_REAL},
    {"0.000000000000000000000000000000000000000001", N_LONG_REAL},
    {"1.00000000000000000000000000000000000000000000001", N_LONG_REAL},
    {"1e400", N_OVERFLOW},
    {"-1e400", N_OVERFLOW},
    {"1.8e308", N_OVERFLOW},
    {"NaN", N_OVERFLOW},
    {"Infinity", N_OVERFLOW},
    {"-Infinity", N_OVERFLOW},
    {"01", N_BAD},
    {"-01", N_BAD},
    {"00", N_BAD},
    {"007", N_BAD},
    {"00000000000000000000001", N_BAD},
    {"-", N_BAD},
    {"--1", N_BAD},
    {"+1", N_BAD},
    {"1.", N_BAD},
    {".5", N_BAD},
    {"-.5", N_BAD},
    {"1e", N_BAD},
    {"1e+", N_BAD},
    {"1.5.3", N_BAD},
    {"1e5e5", N_BAD},
    {"0x10", N_BAD},
    {"1_000", N_BAD},
    {"1 2", N_BAD},
    {"1-2", N_BAD},
    {"nan", N_BAD},
    {"inf", N_BAD},
};

enum num_place { Q_START, Q_CALL, Q_RANK, Q_LINENO, Q_EXCL, Q_META, Q_NPLACES };

static void test_numbers(void) {
    static const char *const place_names[Q_NPLACES] = {
        "start time",         "call id",       "rank", "source_lineno",
        "exclusive_total_ns", "metadata value"};
    char label[200], row[600];

    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        const char *t = numbers[i].tok;
        const enum num_kind kind = numbers[i].kind;
        for (int p = 0; p < Q_NPLACES; p++) {
            int wf = kind == N_INT ? ALL_FAST : NO_FAST;
            int wo = kind == N_INT ? LOADS : FAILS;
            if (p == Q_META && (kind == N_REAL || kind == N_LONG_REAL || kind == N_BIG))
                wo = LOADS;
            if (p == Q_META && kind == N_REAL)
                wf = ALL_FAST;
            if (p == Q_RANK && (kind == N_REAL || kind == N_LONG_REAL))
                wo = ANY_END; /* Python's int(): within int64 or not */
            snprintf(label, sizeof label, "number '%s' as the %s", t, place_names[p]);
            switch (p) {
            case Q_START:
                snprintf(row, sizeof row,
                         "\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [5, %s, 6], "
                         "\"end_times_ns\": [1, 2, 3]",
                         t);
                break;
            case Q_CALL:
                snprintf(row, sizeof row,
                         "\"name\": \"a\", \"rank\": 0, " EV1 ", \"call_ids\": [%s]", t);
                break;
            case Q_RANK:
                snprintf(row, sizeof row, "\"name\": \"a\", \"rank\": %s, " EV1, t);
                break;
            case Q_LINENO:
                snprintf(row, sizeof row,
                         "\"name\": \"a\", \"rank\": 0, \"source_lineno\": %s, " EV1, t);
                break;
            case Q_EXCL:
                snprintf(row, sizeof row,
                         "\"name\": \"a\", \"rank\": 0, " EV1
                         ", \"exclusive_total_ns\": %s",
                         t);
                break;
            default:
                snprintf(row, sizeof row,
                         "\"name\": \"a\", \"rank\": 0, " EV1
                         ", \"event_metadata\": [{\"x\": %s, \"y\": %s}]",
                         t, t);
                break;
            }
            check_row(label, row, wf, wo);
        }
    }
}

/* ------------------------------------------------------------------ */
/* Rows and documents of every shape                                  */

static void test_shapes(void) {
    /* the forms the exporters write */
    check_row("one row", "\"name\": \"a\", \"rank\": 0, " EV, ALL_FAST, LOADS);
    check_row(
        "every key",
        "\"name\": \"a\", \"rank\": 1, \"source_file\": \"f.py\", \"source_lineno\": "
        "7, \"source_text\": \"def f():\", \"tags\": [\"t\", \"u\"], " EV
        ", \"gpu_durations_ns\": [-1, 5], \"call_ids\": [0, 1], \"parent_ids\": [-1, "
        "0], \"thread_ids\": [0, 0], \"task_ids\": [-1, -1], \"await_ns\": [0, 0], "
        "\"event_metadata\": [{}, {\"i\": 1, \"f\": 2.5, \"s\": \"x\", \"t\": true, "
        "\"n\": null, \"b\": false}], \"exclusive_total_ns\": 4",
        ALL_FAST, LOADS);
    check_row("keys in another order",
              "\"exclusive_total_ns\": 4, \"event_metadata\": [{\"z\": 1, \"a\": 2}, "
              "{\"m\": 3}], \"end_times_ns\": [3, 4], \"tags\": [], \"rank\": 1, "
              "\"start_times_ns\": [1, 2], \"name\": \"a\"",
              ALL_FAST, LOADS);
    check_row(
        "null sources",
        "\"name\": \"a\", \"rank\": 0, \"source_file\": null, \"source_text\": null, "
        "\"source_lineno\": null, " EV,
        ALL_FAST, LOADS);
    check_row(
        "empty strings",
        "\"name\": \"\", \"rank\": 0, \"source_file\": \"\", \"source_text\": \"\", "
        "\"tags\": [\"\"], " EV,
        ALL_FAST, LOADS);
    check_row("no calls",
              "\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [], "
              "\"end_times_ns\": [], \"gpu_durations_ns\": [ ], "
              "\"event_metadata\": []",
              ALL_FAST, LOADS);
    check_row("metadata of empty dicts",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"event_metadata\": [{}, {}]",
              ALL_FAST, LOADS);
    check_row("metadata of no dicts",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"event_metadata\": []", ALL_FAST,
              LOADS);
    check_row("metadata spaced",
              "\"name\": \"a\", \"rank\": 0, " EV
              ", \"event_metadata\": [ { \"a\" : 1 ,\"b\":2.50 } ,{ },\n{\t}\n]",
              NO_FAST, FAILS); /* three dicts, two calls */
    check_row("metadata spaced, two",
              "\"name\": \"a\", \"rank\": 0, " EV
              ", \"event_metadata\": [ { \"a\" : 1 ,\"b\":2.50 } ,\r\n{ }\n]",
              ALL_FAST, LOADS);
    check_row("metadata compact",
              "\"name\": \"a\", \"rank\": 0, " EV
              ", \"event_metadata\": [{},{\"a\":1,\"b\":\"c\"}]",
              ALL_FAST, LOADS);
    check_row("tags spaced",
              "\"name\": \"a\", \"rank\": 0, \"tags\": [ \"a\" ,\"b\"\n], " EV, ALL_FAST,
              LOADS);
    check_row("tags repeated",
              "\"name\": \"a\", \"rank\": 0, \"tags\": [\"a\", \"a\"], " EV, ALL_FAST,
              LOADS);
    check_row("columns spaced",
              "\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [ 1 ,2 , 3\n,\t4 ] , "
              "\"end_times_ns\" :[5,6,7,8]",
              ALL_FAST, LOADS);
    check_row(
        "metadata with 16 keys",
        "\"name\": \"a\", \"rank\": 0, " EV1
        ", \"event_metadata\": [{\"a\": 1, \"b\": 1, \"c\": 1, \"d\": 1, \"e\": 1, "
        "\"f\": 1, \"g\": 1, \"h\": 1, \"i\": 1, \"j\": 1, \"k\": 1, \"l\": 1, \"m\": "
        "1, \"n\": 1, \"o\": 1, \"p\": 1}]",
        ALL_FAST, LOADS);
    check_row(
        "metadata with 17 keys",
        "\"name\": \"a\", \"rank\": 0, " EV1
        ", \"event_metadata\": [{\"a\": 1, \"b\": 1, \"c\": 1, \"d\": 1, \"e\": 1, "
        "\"f\": 1, \"g\": 1, \"h\": 1, \"i\": 1, \"j\": 1, \"k\": 1, \"l\": 1, \"m\": "
        "1, \"n\": 1, \"o\": 1, \"p\": 1, \"q\": 1}]",
        NO_FAST, LOADS);
    check_row("metadata keys that differ in their last byte",
              "\"name\": \"a\", \"rank\": 0, " EV1
              ", \"event_metadata\": [{\"ab\": 1, \"ac\": 2, \"a\": 3, \"\": 4}]",
              ALL_FAST, LOADS);

    /* what the fast path leaves to jansson */
    check_row("repeated name", "\"name\": \"a\", \"name\": \"b\", \"rank\": 0, " EV,
              NO_FAST, LOADS);
    check_row(
        "repeated column",
        "\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [1], \"start_times_ns\": [1, "
        "2], \"end_times_ns\": [3, 4]",
        NO_FAST, LOADS);
    check_row("repeated metadata",
              "\"name\": \"a\", \"rank\": 0, " EV1 ", \"event_metadata\": [{\"k\": 1}], "
              "\"event_metadata\": [{\"k\": 2}]",
              NO_FAST, LOADS);
    check_row("repeated metadata key",
              "\"name\": \"a\", \"rank\": 0, " EV
              ", \"event_metadata\": [{\"k\": 1, \"j\": 0, \"k\": 2}, {}]",
              NO_FAST, LOADS);
    check_row("unknown key",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"x\": [1, {\"y\": 2}]", NO_FAST,
              LOADS);
    check_row("aggregate null",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"aggregate\": null", NO_FAST,
              LOADS);
    check_row("event_data_available",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"event_data_available\": false",
              NO_FAST, LOADS);
    check_row("aggregate",
              "\"name\": \"a\", \"rank\": 0, \"aggregate\": {\"count\": 2, \"total\": 7, "
              "\"mean\": 3.5}",
              NO_FAST, LOADS);
    check_row("null gpu column",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"gpu_durations_ns\": null", NO_FAST,
              LOADS);
    check_row("null start",
              "\"name\": \"a\", \"rank\": 0, \"start_times_ns\": null, "
              "\"end_times_ns\": [3, 4]",
              NO_FAST, FAILS);
    check_row("null end",
              "\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [], "
              "\"end_times_ns\": null",
              NO_FAST, LOADS);
    check_row("no columns", "\"name\": \"a\", \"rank\": 0", NO_FAST, LOADS);
    check_row("null exclusive",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"exclusive_total_ns\": null",
              NO_FAST, LOADS);
    check_row("null tags", "\"name\": \"a\", \"rank\": 0, \"tags\": null, " EV, NO_FAST,
              FAILS);
    check_row("null metadata",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"event_metadata\": null", NO_FAST,
              LOADS);
    check_row("null name", "\"name\": null, \"rank\": 0, " EV, NO_FAST, FAILS);
    check_row("null rank", "\"name\": \"a\", \"rank\": null, " EV, NO_FAST, FAILS);
    check_row("no rank", "\"name\": \"a\", " EV, NO_FAST, FAILS);
    check_row("no name", "\"rank\": 0, " EV, NO_FAST, FAILS);
    check_row("rank as a string", "\"name\": \"a\", \"rank\": \"1\", " EV, NO_FAST,
              LOADS);
    check_row("rank true", "\"name\": \"a\", \"rank\": true, " EV, NO_FAST, LOADS);
    check_row("nested metadata",
              "\"name\": \"a\", \"rank\": 0, " EV
              ", \"event_metadata\": [{\"a\": [1]}, {\"b\": {\"c\": 1}}]",
              NO_FAST, LOADS);
    check_row("nested empty metadata",
              "\"name\": \"a\", \"rank\": 0, " EV
              ", \"event_metadata\": [{\"a\": []}, {\"b\": {}}]",
              NO_FAST, LOADS);
    check_row("metadata marker and a big integer",
              "\"name\": \"a\", \"rank\": 0, " EV1
              ", \"event_metadata\": [{\"a\": \"\\u0000sxbig0:1\", \"b\": "
              "99999999999999999999}]",
              NO_FAST, LOADS);
    check_row("metadata marker alone",
              "\"name\": \"a\", \"rank\": 0, " EV1
              ", \"event_metadata\": [{\"a\": \"\\u0000sxbig0:1\"}]",
              ALL_FAST, LOADS);

    /* what both refuse */
    check_row("lengths differ",
              "\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [1, 2], "
              "\"end_times_ns\": [3]",
              NO_FAST, FAILS);
    check_row("gpu length",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"gpu_durations_ns\": [1]", NO_FAST,
              FAILS);
    check_row("await length",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"await_ns\": [1, 2, 3]", NO_FAST,
              FAILS);
    check_row("metadata length 1 of 2",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"event_metadata\": [{}]", NO_FAST,
              FAILS);
    check_row("metadata length 3 of 2",
              "\"name\": \"a\", \"rank\": 0, " EV
              ", \"event_metadata\": [{}, {}, {\"a\": 1}]",
              NO_FAST, FAILS);
    check_row("metadata of no calls",
              "\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [], "
              "\"end_times_ns\": [], \"event_metadata\": [{}]",
              NO_FAST, FAILS);
    check_row("metadata item a number",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"event_metadata\": [1, {}]",
              NO_FAST, FAILS);
    check_row("metadata item null",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"event_metadata\": [{}, null]",
              NO_FAST, FAILS);
    check_row("metadata item a list",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"event_metadata\": [[], {}]",
              NO_FAST, FAILS);
    check_row("metadata an object",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"event_metadata\": {}", NO_FAST,
              FAILS);
    check_row("column a number",
              "\"name\": \"a\", \"rank\": 0, \"start_times_ns\": 1, "
              "\"end_times_ns\": [1]",
              NO_FAST, FAILS);
    check_row("column of strings",
              "\"name\": \"a\", \"rank\": 0, \"start_times_ns\": "
              "[\"1\"], \"end_times_ns\": [1]",
              NO_FAST, FAILS);
    check_row("column of null",
              "\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [null], "
              "\"end_times_ns\": [1]",
              NO_FAST, FAILS);
    check_row("column of bools",
              "\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [true], "
              "\"end_times_ns\": [1]",
              NO_FAST, FAILS);
    check_row("source_lineno a string",
              "\"name\": \"a\", \"rank\": 0, \"source_lineno\": "
              "\"7\", " EV,
              NO_FAST, FAILS);
    check_row("source_lineno true",
              "\"name\": \"a\", \"rank\": 0, \"source_lineno\": true, " EV, NO_FAST,
              FAILS);
    check_row("source_file a number",
              "\"name\": \"a\", \"rank\": 0, \"source_file\": 1, " EV, NO_FAST, FAILS);
    check_row("tags of numbers", "\"name\": \"a\", \"rank\": 0, \"tags\": [1], " EV,
              NO_FAST, FAILS);
    check_row("tags a string", "\"name\": \"a\", \"rank\": 0, \"tags\": \"a\", " EV,
              NO_FAST, FAILS);
    check_row("trailing comma in a row", "\"name\": \"a\", \"rank\": 0, " EV ",", NO_FAST,
              FAILS);
    check_row("trailing comma in a column",
              "\"name\": \"a\", \"rank\": 0, \"start_times_ns\": "
              "[1, 2,], \"end_times_ns\": [3, 4]",
              NO_FAST, FAILS);
    check_row("leading comma in a column",
              "\"name\": \"a\", \"rank\": 0, \"start_times_ns\": "
              "[, 1, 2], \"end_times_ns\": [3, 4]",
              NO_FAST, FAILS);
    check_row("trailing comma in tags",
              "\"name\": \"a\", \"rank\": 0, \"tags\": [\"a\",], " EV, NO_FAST, FAILS);
    check_row("trailing comma in metadata",
              "\"name\": \"a\", \"rank\": 0, " EV ", \"event_metadata\": [{}, {},]",
              NO_FAST, FAILS);
    check_row("trailing comma in a dict",
              "\"name\": \"a\", \"rank\": 0, " EV
              ", \"event_metadata\": [{\"a\": 1,}, {}]",
              NO_FAST, FAILS);
    check_row("missing comma", "\"name\": \"a\" \"rank\": 0, " EV, NO_FAST, FAILS);
    check_row("missing colon", "\"name\" \"a\", \"rank\": 0, " EV, NO_FAST, FAILS);
    check_row("double colon", "\"name\":: \"a\", \"rank\": 0, " EV, NO_FAST, FAILS);
    check_row("missing value", "\"name\": , \"rank\": 0, " EV, NO_FAST, FAILS);
    check_row("a key not a string", "name: \"a\", \"rank\": 0, " EV, NO_FAST, FAILS);
    check_row("single quotes", "'name': 'a', \"rank\": 0, " EV, NO_FAST, FAILS);
    check_row("a comment", "\"name\": \"a\", /* c */ \"rank\": 0, " EV, NO_FAST, FAILS);
    check_row("Null", "\"name\": \"a\", \"rank\": 0, \"source_file\": Null, " EV, NO_FAST,
              FAILS);
    check_row("nul", "\"name\": \"a\", \"rank\": 0, \"source_file\": nul, " EV, NO_FAST,
              FAILS);
    check_row("nullx", "\"name\": \"a\", \"rank\": 0, \"source_lineno\": nullx, " EV,
              NO_FAST, FAILS);
    check_row("null\"", "\"name\": \"a\", \"rank\": 0, \"source_file\": null\"x\", " EV,
              NO_FAST, FAILS);
    check_row("True",
              "\"name\": \"a\", \"rank\": 0, " EV1
              ", \"event_metadata\": [{\"t\": True}]",
              NO_FAST, FAILS);
    check_row("truex",
              "\"name\": \"a\", \"rank\": 0, " EV1
              ", \"event_metadata\": [{\"t\": truex}]",
              NO_FAST, FAILS);
    check_row("form feed", "\"name\": \"a\",\f\"rank\": 0, " EV, NO_FAST, FAILS);
    check_row("vertical tab", "\"name\": \"a\",\v\"rank\": 0, " EV, NO_FAST, FAILS);
    check_row("no-break space", "\"name\": \"a\",\xc2\xa0\"rank\": 0, " EV, NO_FAST,
              FAILS);
    check_row(
        "whitespace everywhere",
        "\n\t\"name\"\r\n:\t\"a\"\n,\r\"rank\"  :\n0\t,\n\"start_times_ns\"\t:\n[\n1\n,"
        "\n2\n]\r\n,\"end_times_ns\":[3,\t4],\"event_metadata\"\n:\n[\n{\n\"a\"\n:\n1.5"
        "\n}\n,\n{\n}\n]\n,\"tags\"\t:\t[\t\"x\"\t]\t",
        ALL_FAST, LOADS);
    {
        /* a raw NUL byte in the text: never JSON */
        static const char nul_row[] = HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, "
                                           "\"start_times_ns\": [1\0, 2], "
                                           "\"end_times_ns\": [3, 4]}]}";
        check_text("a NUL byte in a column", nul_row, sizeof nul_row - 1, NO_FAST,
                   ANY_END);
        static const char nul_str[] =
            HEAD "\"regions\": [{\"name\": \"a\0b\", \"rank\": 0, "
                 "\"start_times_ns\": [1, 2], "
                 "\"end_times_ns\": [3, 4]}]}";
        check_text("a NUL byte in a string", nul_str, sizeof nul_str - 1, NO_FAST, FAILS);
        static const char nul_end[] = HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, "
                                           "\"start_times_ns\": [1, 2], "
                                           "\"end_times_ns\": [3, 4]}\0]}";
        check_text("a NUL byte after a row", nul_end, sizeof nul_end - 1, ANY_PATH,
                   FAILS);
    }
    {
        /* nesting deeper than jansson goes, inside a row */
        struct sx_buf d = {0};
        sx_buf_puts(&d, "\"name\": \"a\", \"rank\": 0, " EV1
                        ", \"event_metadata\": [{\"a\": ");
        for (int i = 0; i < 5000; i++)
            sx_buf_putc(&d, '[');
        for (int i = 0; i < 5000; i++)
            sx_buf_putc(&d, ']');
        sx_buf_puts(&d, "}]");
        ASSERT(!d.failed);
        check_row("deep nesting", d.data, NO_FAST, FAILS);
        sx_buf_free(&d);
    }

    /* regions itself */
    check_regions("no regions", "[]", ANY_PATH, LOADS);
    check_regions("no regions, spaced", "[ \n\t ]", ANY_PATH, LOADS);
    check_regions("regions an object", "{}", ANY_PATH, FAILS);
    check_regions("regions null", "null", ANY_PATH, FAILS);
    check_regions("regions a number", "1", ANY_PATH, FAILS);
    check_regions("regions a string", "\"[]\"", ANY_PATH, FAILS);
    check_regions("element a number", "[1]", NO_FAST, FAILS);
    check_regions("element a string", "[\"x\"]", NO_FAST, FAILS);
    check_regions("element null", "[null]", NO_FAST, FAILS);
    check_regions("element a list", "[[]]", NO_FAST, FAILS);
    check_regions("element empty", "[{}]", NO_FAST, FAILS);
    check_regions("element empty, spaced", "[{ }]", NO_FAST, FAILS);
    check_regions("trailing comma in regions",
                  "[{\"name\": \"a\", \"rank\": 0, " EV "},]", ANY_PATH, FAILS);
    check_regions("leading comma in regions",
                  "[, {\"name\": \"a\", \"rank\": 0, " EV "}]", ANY_PATH, FAILS);
    check_regions("two rows without a comma",
                  "[{\"name\": \"a\", \"rank\": 0, " EV
                  "} {\"name\": \"b\", \"rank\": 0, " EV "}]",
                  ANY_PATH, FAILS);
    check_regions("regions not closed", "[{\"name\": \"a\", \"rank\": 0, " EV "}",
                  ANY_PATH, FAILS);
    check_regions("a row not closed", "[{\"name\": \"a\", \"rank\": 0, " EV "]", ANY_PATH,
                  FAILS);
    /* rows named alike: the later (name, rank) replaces the earlier in its place, read
     * either way */
    check_regions("rows named alike",
                  "[{\"name\": \"b\", \"rank\": 0, " EV
                  "}, {\"name\": \"a\", \"rank\": 1, " EV
                  ", \"x\": 1}, {\"name\": \"b\", \"rank\": 1, " EV1
                  "}, {\"name\": \"a\", \"rank\": "
                  "1, " EV1 "}, {\"name\": \"b\", \"rank\": 0, " EV1
                  ", \"x\": 2}, {\"name\": \"c\", "
                  "\"rank\": \"0\", " EV
                  "}, {\"name\": \"c\", \"rank\": 0, \"start_times_ns\": [9], "
                  "\"end_times_ns\": [10]}]",
                  ANY_PATH, LOADS);

    /* the document around regions */
    static const char *const docs[][2] = {
        {"regions twice",
         HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV "}], \"regions\": "
              "[{\"name\": \"b\", \"rank\": 0, " EV1
              "}, {\"name\": \"a\", \"rank\": 0, " EV1 "}]}"},
        {"regions twice, the second not a list",
         HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV "}], \"regions\": 1}"},
        {"regions twice, the first not a list",
         HEAD "\"regions\": 1, \"regions\": [{\"name\": \"a\", \"rank\": 0, " EV "}]}"},
        {"format after regions",
         "{\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV
         "}], \"format\": \"scope-profiler-profile\", \"num_ranks\": 1}"},
        {"another format after regions",
         "{\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV
         "}], \"format\": \"other\"}"},
        {"another format before regions",
         "{\"format\": \"other\", \"regions\": [{\"name\": \"a\", \"rank\": 0, " EV
         "}]}"},
        {"no format", "{\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV "}]}"},
        {"format version 2",
         "{\"format\": \"scope-profiler-profile\", \"format_version\": 2, \"regions\": "
         "[{\"name\": \"a\", \"rank\": 0, " EV "}]}"},
        {"text after the document",
         HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV "}]} x"},
        {"a brace after the document",
         HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV "}]}}"},
        {"a list", "[{\"name\": \"a\", \"rank\": 0, " EV "}]"},
        {"a byte order mark",
         "\xef\xbb\xbf" HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV "}]}"},
        {"an empty document", ""},
        {"only whitespace", " \n\t\r "},
        {"bad metadata after regions", HEAD
         "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV "}], \"metadata\": [1]}"},
        {"num_ranks after regions, spaced",
         "\n{\n\"format\"\n:\n\"scope-profiler-profile\"\n,\n\"regions\"\n:\n[\n{"
         "\"name\": "
         "\"a\", \"rank\": 0, " EV "}\n,\n{\"name\": \"a\", \"rank\": 1, " EV
         "}\n]\n,\n\"num_ranks\"\n:\n2\n}\n"},
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++)
        check_text(docs[i][0], docs[i][1], strlen(docs[i][1]), ANY_PATH, ANY_END);
}

/*
 * A document that is not an object, after whitespace: read whole for jansson,
 * which says what it is. In gzip members the whitespace before it leaves the
 * window in pieces, so its text must be kept from the value, not from the start.
 */
static void test_not_object(void) {
    static const char *const values[] = {"[1, 2]", "1", "\"x\"", "null",
                                         "[{\"name\": 1}]"};
    char doc[200], label[100], want[700];
    struct sx_run *run = NULL;
    struct sx_error err;

    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++)
        for (int ws = 0; ws < 40; ws += 3) {
            const int n = snprintf(doc, sizeof doc, "%*s%s \n", ws, "", values[v]);
            ASSERT(n > 0 && (size_t)n < sizeof doc);
            snprintf(label, sizeof label, "%s after %d spaces", values[v], ws);
            check_text(label, doc, (size_t)n, ANY_PATH, FAILS);
            /* jansson read it: not a profile, rather than invalid */
            snprintf(want, sizeof want, "%s is not a scope-profiler JSON profile",
                     tmp_gz);
            for (size_t chunk = 1; chunk < 9; chunk += 3) {
                put_gz(tmp_gz, doc, (size_t)n, chunk);
                CHECK(load(tmp_gz, true, &run, &err) == SX_ERR_FORMAT);
                if (strstr(err.text, want) == NULL) {
                    fprintf(stderr, "  %s in %zu-byte members: [%s]\n", label, chunk,
                            err.text);
                    CHECK(!"a document that is not an object");
                }
                sx_run_free(run);
            }
        }
}

/* ------------------------------------------------------------------ */
/* Cuts, window ends and long rows                                    */

/* A document with a row of every feature the fast path reads, and one it leaves. */
static const char rich_doc[] =
    "{\"format\": \"scope-profiler-profile\", \"format_version\": 1, \"exporter\": "
    "\"scope-profiler@0.7.3\", \"num_ranks\": 2, \"metadata\": {\"label\": "
    "\"caf\\u00e9\"}, \"regions\": [{\"name\": \"l\\u00f6sen/\xe6\xb1\x82\xe8\xa7\xa3 "
    "\\\"q\\\" \\\\ \\/ \\b\\f\\n\\r\\t \\ud83d\\ude00 \xf0\x9f\x98\x80 end\", \"rank\": "
    "1, \"source_file\": \"a/very/long/path/to/the/source/file/of/this/region.py\", "
    "\"source_lineno\": null, \"source_text\": \"with scope(\\\"x\\\"):\\n    pass\\t# "
    "\\u2603\", \"tags\": [\"\\u6570\\u5024\", \"caf\xc3\xa9\", \"\", \"\\u0000\"], "
    "\"start_times_ns\": [0, 1, -1, 9223372036854775807, -9223372036854775808, "
    "1234567890123456789, 22,333,4444 , 55555,\n 666666], \"end_times_ns\": [1,2,3,4,5,6,"
    "7,8,9,10,11], \"gpu_durations_ns\": [-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1], "
    "\"call_ids\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], \"parent_ids\": [-1, 0, 1, 2, 3, "
    "4, 5, 6, 7, 8, 9], \"event_metadata\": [{}, {\"i\": 1, \"f\": 2.5, \"e\": 1e-05, "
    "\"E\": 1E+300, \"z\": -0.0, \"s\": \"\\u00e9\\n\", \"t\": true, \"F\": false, "
    "\"n\": "
    "null, \"k\": -9223372036854775808}, {}, {\"a\": 0.1}, {}, {\"b\": 12345678.875}, "
    "{}, "
    "{}, {\"c\": \"x\"}, {}, {\"\\u00e9\": 7}], \"exclusive_total_ns\": 42}, {\"name\": "
    "\"nested\", \"rank\": 0, \"start_times_ns\": [5], \"end_times_ns\": [6], "
    "\"event_metadata\": [{\"p\": {\"dt\": 0.5, \"lst\": [1, \"z\\u00e9\", "
    "\"]\\\"}\"]}}], "
    "\"unknown\": \"}\\\\\"}, {\"name\": \"agg\", \"rank\": 0, \"aggregate\": "
    "{\"count\": "
    "2, \"total\": 7.5}, \"event_data_available\": false}], \"threads\": {\"0\": "
    "[{\"index\": 0, \"name\": \"Main\", \"ident\": 1, \"native_id\": 2, \"daemon\": "
    "false, "
    "\"start_ns\": 0, \"end_ns\": 9, \"cpu_ns\": 5}]}}\n";

static void test_rich(void) {
    const size_t n = sizeof rich_doc - 1;
    char label[160];

    check_text("rich document", rich_doc, n, ANY_PATH, LOADS);
    struct counts c = count_fast(tmp_gz);
    CHECK(c.elements == 3 && c.fast == 1);
    /*
     * The text the reader holds ends after every byte in turn: gzip members of 1 to
     * 130 bytes, and two members split at every byte.
     */
    for (size_t chunk = 1; chunk <= 130; chunk += chunk < 20 ? 1 : 11) {
        put_gz(tmp_gz, rich_doc, n, chunk);
        snprintf(label, sizeof label, "rich document in %zu-byte members", chunk);
        c = check_path(label, tmp_gz, ANY_PATH, LOADS);
        CHECK(c.elements == 3 &&
              c.fast == 1); /* the end of the text in no way stops it */
    }
    counting = false;
    for (size_t k = 1; k < n; k++) {
        put_gz_split(tmp_gz, rich_doc, n, k);
        snprintf(label, sizeof label, "rich document split at %zu", k);
        check_path(label, tmp_gz, ANY_PATH, LOADS);
    }
    counting = true;
}

/* A document cut at every byte: the same error either way (or the same run). */
static void check_cuts(const char *label, const char *text, size_t n) {
    char l[300];
    for (size_t k = 0; k < n; k++) {
        put_file(tmp_json, text, k);
        snprintf(l, sizeof l, "%s cut at %zu", label, k);
        check_path(l, tmp_json, ANY_PATH, ANY_END);
    }
}

static void test_cuts(void) {
    size_t n = 0;
    counting = false;
    char *text = sx_test_slurp(GOLDEN "unicode_metadata/run.json", &n, false);
    ASSERT(text != NULL && n > 1000);
    check_cuts("unicode_metadata", text, n);
    free(text);
    check_cuts("rich document", rich_doc, sizeof rich_doc - 1);

    /* the gzip file cut at every byte */
    char l[300];
    text = sx_test_slurp(GOLDEN "unicode_metadata/run.json.gz", &n, false);
    ASSERT(text != NULL && n > 100);
    for (size_t k = 0; k < n; k++) {
        put_file(tmp_gz, text, k);
        snprintf(l, sizeof l, "unicode_metadata/run.json.gz cut at %zu", k);
        check_path(l, tmp_gz, ANY_PATH, FAILS);
    }
    free(text);
    counting = true;
}

/* A gzip file that ends early, just after rows that jansson refuses. */
static void test_damaged_gzip(void) {
    static const char *const docs[] = {
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [1, 2], "
             "\"end_times_ns\": [3]}",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [1, 2], "
             "\"end_times_ns\": [3]}, ",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, \"source_file\": 1, " EV "}",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV ", \"tags\": [1]}",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV ", \"event_metadata\": "
             "[{\"a\": \"b\"}]}",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV "}, {\"name\": \"a\"}",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV "}]",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, " EV "}",
        HEAD "\"regions\": [{\"name\": \"a\", \"rank\": 0, \"start_times_ns\": [1",
    };
    char label[64];
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        put_gz_unfinished(tmp_gz, docs[i], strlen(docs[i]));
        snprintf(label, sizeof label, "unfinished gzip %zu", i);
        check_path(label, tmp_gz, ANY_PATH, FAILS);
    }
}

/*
 * Rows longer than the reader's window, a string and whitespace across its end:
 * the window moves and grows under the fast path and under jansson alike.
 */
static void test_long_rows(void) {
    struct sx_buf d = {0};
    const size_t calls = (size_t)1 << 20;
    char num[32];

    sx_buf_puts(&d, HEAD "\"regions\": [{\"name\": \"long\", \"rank\": 0, "
                         "\"start_times_ns\": [");
    for (size_t i = 0; i < calls; i++) {
        const int k = snprintf(num, sizeof num, "%s%llu", i == 0 ? "" : ", ",
                               1700000000000000000ull + (unsigned long long)i * 7919);
        sx_buf_append(&d, num, (size_t)k);
    }
    sx_buf_puts(&d, "], \"end_times_ns\": [");
    for (size_t i = 0; i < calls; i++) {
        /* other separators now and then, and numbers of every length */
        const char *sep = i == 0         ? ""
                          : i % 977 == 0 ? " ,\n\t "
                          : i % 13 == 0  ? ","
                                         : ", ";
        const int k = snprintf(num, sizeof num, "%s%lld", sep,
                               (long long)(i % 3 == 0 ? -(long long)(i * i % 1000003)
                                                      : (long long)(i * 2654435761u)));
        sx_buf_append(&d, num, (size_t)k);
    }
    sx_buf_puts(&d, "], \"source_text\": \"");
    /* a 9 MB string with escapes and raw UTF-8 all along it */
    const size_t string_end = d.len + ((size_t)9 << 20);
    for (size_t i = 0; d.len < string_end; i++)
        sx_buf_puts(&d, i % 5 == 0   ? "\\u00e9\\ud83d\\ude00 "
                        : i % 5 == 1 ? "\xf0\x9f\x98\x80\xe6\x97\xa5 \\n\\\"\\\\ "
                                     : "plain text of the source line ");
    sx_buf_puts(&d, "\", \"tags\": [\"t\"]}, ");
    /* 5 MB of whitespace between two rows and inside the second */
    for (size_t i = 0; i < ((size_t)5 << 20) / 4; i++)
        sx_buf_puts(&d, i % 3 ? "  \n " : "\t\r\n ");
    sx_buf_puts(&d, "{\"name\": \"after\", \"rank\"");
    for (size_t i = 0; i < ((size_t)5 << 20) / 4; i++)
        sx_buf_puts(&d, "\n   ");
    sx_buf_puts(&d, ": 1, \"start_times_ns\": [1, 2], \"end_times_ns\": [3, 4], "
                    "\"event_metadata\": [{\"k\": 1.5}, {\"k\": \"v\"}]}], "
                    "\"num_ranks\": 2}");
    ASSERT(!d.failed);
    CHECK(d.len > 4 * WINDOW);
    put_file(tmp_json, d.data, d.len);
    check_path("long rows", tmp_json, ALL_FAST, LOADS);
    check_validate("long rows", tmp_json, LOADS);

    /* the same with the long row read by jansson (an unknown key at its end) */
    char *p = strstr(d.data, "\"tags\": [\"t\"]}");
    ASSERT(p != NULL);
    memcpy(p, "\"tagz\"", 6);
    put_file(tmp_json, d.data, d.len);
    const struct counts c =
        check_path("long rows, the first by jansson", tmp_json, ANY_PATH, LOADS);
    CHECK(c.elements == 2 && c.fast == 1);
    check_validate("long rows, the first by jansson", tmp_json, LOADS);

    /* and broken at its end, long after the fast path began it: the same error */
    memcpy(p, "\"tagz\": [\"t\"]]", 14);
    put_file(tmp_json, d.data, d.len);
    check_path("long rows, the first broken at its end", tmp_json, ANY_PATH, FAILS);
    check_validate("long rows, the first broken at its end", tmp_json, FAILS);
    sx_buf_free(&d);
}

int main(void) {
    const clock_t t0 = clock();
    snprintf(tmp_json, sizeof tmp_json, "%s/test_json_stream_%ld.json", SX_BUILD_DIR,
             (long)getpid());
    snprintf(tmp_gz, sizeof tmp_gz, "%s/test_json_stream_%ld.json.gz", SX_BUILD_DIR,
             (long)getpid());
    unsetenv(FAST_ENV);

    test_compare();
    test_lookahead();
    test_shared_documents();
    test_strings();
    test_numbers();
    test_shapes();
    test_not_object();
    test_rich();
    test_cuts();
    test_damaged_gzip();
    test_long_rows();

    printf("%zu documents read both ways; the fast path read %zu of their %zu region "
           "elements (%.1f s)\n",
           ndocs, nfast, nelements, (double)(clock() - t0) / CLOCKS_PER_SEC);
    unlink(tmp_json);
    unlink(tmp_gz);
    TEST_DONE();
}
