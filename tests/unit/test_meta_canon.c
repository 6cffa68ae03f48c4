/* test_meta_canon.c - the event-metadata fast path agrees with jansson on every input */
#include "json_parse.h"
#include "json_write.h"
#include "meta_canon.h"
#include "sx_test.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t state = 0x9E3779B97F4A7C15u;
static uint64_t next(void) { /* xorshift64 */
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}
static unsigned below(unsigned n) { return (unsigned)(next() % n); }

/* Inputs the fast path took, and those it left to jansson. */
static long taken, left;

/*
 * Room for a copy of an input that ends where an unreadable page begins, so
 * that a read past the end crashes the test.
 */
#define GUARDED_MAX (256u * 1024u)
static char *guarded;
static size_t page;

static void guarded_init(void) {
    const int fd = open("/dev/zero", O_RDWR);
    ASSERT(fd >= 0);
    page = (size_t)sysconf(_SC_PAGESIZE);
    guarded = mmap(NULL, GUARDED_MAX + page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    ASSERT(guarded != MAP_FAILED);
    ASSERT(mprotect(guarded + GUARDED_MAX, page, PROT_NONE) == 0);
    close(fd);
}

/* The input as a C string literal would show it, for a failure's message. */
static void show(const char *text, size_t n) {
    fputs("  input: [", stderr);
    for (size_t i = 0; i < n && i < 300; i++) {
        const unsigned char c = (unsigned char)text[i];
        if (c >= 0x20 && c < 0x7F)
            fputc(c, stderr);
        else
            fprintf(stderr, "\\x%02x", c);
    }
    fprintf(stderr, "%s] (%zu bytes)\n", n > 300 ? "..." : "", n);
}

/*
 * The differential check. 'want': 1 the fast path must take the text, 0 it
 * must refuse it, -1 either. Whatever it takes must be what jansson writes,
 * with the same 'any' and 'count'; whatever it refuses it leaves untouched;
 * and sx_json_canon_meta answers as jansson alone does. 'text' is used where
 * it is: bytes after 'n' must never be read (truncations leave the rest of a
 * document there, so a read past the end shows as a wrong acceptance).
 */
static void check_text(const char *text, size_t n, int want) {
    struct sx_buf fast = {0}, slow = {0}, wired = {0};
    struct sx_error err;
    bool fany = true, sany = false, wany = false;
    uint64_t fcount = 777, scount = 0, wcount = 0;
    const int failures = sx_test_failures;

    sx_buf_puts(&fast, "<>"); /* the fast path appends */
    const bool ok = sx_meta_canon_fast(text, n, &fast, &fany, &fcount);
    ASSERT(n <= GUARDED_MAX);
    char *const copy = guarded + GUARDED_MAX - n;
    memcpy(copy, text, n);
    CHECK(sx_meta_canon_fast(copy, n, &wired, NULL, NULL) == ok);
    sx_buf_reset(&wired);
    sx_meta_canon_fast_enable(false);
    sx_error_clear(&err);
    const enum sx_status sst = sx_json_canon_meta(text, n, &slow, &sany, &scount, &err);
    sx_meta_canon_fast_enable(true);
    sx_error_clear(&err);
    const enum sx_status wst = sx_json_canon_meta(text, n, &wired, &wany, &wcount, &err);

    if (ok) {
        taken++;
        CHECK(sst == SX_OK);
        CHECK(fast.len == n + 2 && memcmp(fast.data + 2, text, n) == 0);
        CHECK(sst != SX_OK || (slow.len == n && memcmp(slow.data, text, n) == 0 &&
                               fany == sany && fcount == scount));
    } else {
        left++;
        CHECK(fast.len == 2 && memcmp(fast.data, "<>", 2) == 0);
        CHECK(fany == true && fcount == 777);
    }
    CHECK(want != 1 || ok);
    CHECK(want != 0 || !ok);
    CHECK(wst == sst);
    CHECK(sst != SX_OK ||
          (wired.len == slow.len && memcmp(wired.data, slow.data, slow.len) == 0 &&
           wany == sany && wcount == scount));
    if (sx_test_failures != failures) {
        show(text, n);
        fprintf(stderr, "  fast %s; jansson status %d: [%.200s]\n",
                ok ? "took it" : "refused", (int)sst, sst == SX_OK ? slow.data : "");
    }
    sx_buf_free(&fast);
    sx_buf_free(&slow);
    sx_buf_free(&wired);
}

static void check_str(const char *text, int want) {
    check_text(text, strlen(text), want);
}

/* Every strict prefix of a document the fast path takes is refused. */
static void check_prefixes(const char *text, size_t n) {
    for (size_t k = 0; k < n; k++)
        check_text(text, k, 0);
}

/* ------------------------------------------------------------------ */
/* Hand-written inputs                                                */

static const char *const accepted[] = {
    "[]",
    "[{}]",
    "[{}, {}, {\"iter\": 3}, {}, {\"ok\": true, \"phase\": \"setup\"}]",
    "[{\"a\": 1}, {\"a\": 1}]",
    "[{\"a\": {\"a\": 1}}]",
    "[{\"a\": [1, [2, {\"b\": null}], {}], \"c\": {\"d\": {\"e\": []}}}]",
    "[{\"t\": true, \"f\": false, \"n\": null, \"z\": 0, \"m\": -7, \"s\": \"\"}]",
    "[{\"s\": \"q\\\"b\\\\n\\nr\\rt\\tb\\bf\\f\"}]",
    "[{\"\": \"\", \"a\\n\": 1, \"a\\\\n\": 2, \"a\\\"\": 3}]",
    "[{\"s\": \" !#$%&'()*+,-./0123456789:;<=>?@AZ[]^_`az{|}~\"}]",
    "[{\"p\": \"[{\\\"x\\\": 1}]\", \"q\": \", : ] }\"}]",
    "[{\"a\": 9223372036854775807, \"b\": -9223372036854775808}]",
    "[{\"a\": 9223372036854775808, \"b\": -9223372036854775809}]",
    "[{\"u\": 18446744073709551615}, {\"v\": [18446744073709551616, -1]}]",
    "[{\"a\": 1234567890123456789012345678901234567890123456789012345678901234}]",
    "[{\"a\": -1234567890123456789012345678901234567890123456789012345678901234}]",
    "[{\"k1\": 1, \"k2\": 2, \"k3\": 3, \"k4\": 4, \"k5\": 5, \"k6\": 6, \"k7\": 7, "
    "\"k8\": 8, \"k9\": 9, \"k10\": 10, \"k11\": 11, \"k12\": 12, \"k13\": 13, "
    "\"k14\": 14, \"k15\": 15, \"k16\": 16}]",
    "[{\"a\": 1, \"ab\": 2, \"b\": 3, \"ba\": 4}]",
};

static const char *const refused[] = {
    "",
    "[",
    "]",
    "{}",
    "[{}",
    "[{}]]",
    "[{}] ",
    " [{}]",
    "[{}]\n",
    "[ ]",
    "[{} ]",
    "[ {}]",
    "[{ }]",
    "[{},{}]",
    "[{},  {}]",
    "[{}, ]",
    "[, {}]",
    "[{\"a\":1}]",
    "[{\"a\" : 1}]",
    "[{\"a\":  1}]",
    "[{\"a\": 1,\"b\": 2}]",
    "[{\"a\": 1, }]",
    "[{\"a\": [1,2]}]",
    "[{\"a\": [1, 2, ]}]",
    "[{\"a\"}]",
    "[{\"a\": }]",
    "[{a: 1}]",
    "[{'a': 1}]",
    "[1]",
    "[\"a\"]",
    "[[]]",
    "[null]",
    "[{}, 1]",
    "[{\"a\": 1.5}]",
    "[{\"a\": 1.0}]",
    "[{\"a\": 1e5}]",
    "[{\"a\": 1E5}]",
    "[{\"a\": 1e+05}]",
    "[{\"a\": -0}]",
    "[{\"a\": -0.0}]",
    "[{\"a\": 01}]",
    "[{\"a\": -01}]",
    "[{\"a\": 00}]",
    "[{\"a\": +1}]",
    "[{\"a\": -}]",
    "[{\"a\": --1}]",
    "[{\"a\": 1-}]",
    "[{\"a\": NaN}]",
    "[{\"a\": Infinity}]",
    "[{\"a\": -Infinity}]",
    "[{\"a\": tru}]",
    "[{\"a\": True}]",
    "[{\"a\": nul}]",
    "[{\"a\": falsey}]",
    "[{\"a\": truefalse}]",
    "[{\"a\": \"\\/\"}]",
    "[{\"a\": \"\\u0041\"}]",
    "[{\"a\": \"\\u00e9\"}]",
    "[{\"a\": \"\\ud83d\\ude00\"}]",
    "[{\"a\": \"\\u0000sxbig:12\"}]",
    "[{\"a\": \"\\x\"}]",
    "[{\"a\": \"\\\"}]",
    "[{\"a\": \"abc}]",
    "[{\"a\": \"\xc3\xa9\"}]",
    "[{\"a\": \"\x7f\"}]",
    "[{\"a\": \"\x1f\"}]",
    "[{\"a\": \"\t\"}]",
    "[{\"\xff\": 1}]",
    "[{\"a\": 1, \"a\": 2}]",
    "[{\"a\": 1, \"b\": 2, \"a\": 3}]",
    "[{\"a\\n\": 1, \"a\\n\": 2}]",
    "[{}, {\"x\": {\"b\": 1, \"b\": 2}}]",
    "[{\"a\": 12345678901234567890123456789012345678901234567890123456789012345}]",
    "[{\"a\": 9999999999999999999999999999999999999999999999999999999999999999999999999"
    "99999999999999999999999999}]",
    "[{\"k1\": 1, \"k2\": 2, \"k3\": 3, \"k4\": 4, \"k5\": 5, \"k6\": 6, \"k7\": 7, "
    "\"k8\": 8, \"k9\": 9, \"k10\": 10, \"k11\": 11, \"k12\": 12, \"k13\": 13, "
    "\"k14\": 14, \"k15\": 15, \"k16\": 16, \"k17\": 17}]",
    "[{\"a\": 1}]garbage",
    "garbage",
    "\xef\xbb\xbf[{}]",
    "[{}, {\"a\": [1, 2]}, {\"b\": {\"c\": \"d\"}}",
};

/*
 * A list of one object holding 'levels' nested lists (or objects): nesting
 * depth 'levels' + 2.
 */
static void check_depth(int levels, bool objects, int want) {
    struct sx_buf b = {0};
    sx_buf_puts(&b, "[{\"a\": ");
    for (int i = 0; i < levels; i++)
        sx_buf_puts(&b, objects ? "{\"a\": " : "[");
    sx_buf_puts(&b, objects ? "1" : "");
    for (int i = 0; i < levels; i++)
        sx_buf_putc(&b, objects ? '}' : ']');
    sx_buf_puts(&b, "}]");
    ASSERT(!b.failed);
    check_text(b.data, b.len, want);
    sx_buf_free(&b);
}

static void test_hand_written(void) {
    for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++) {
        check_str(accepted[i], 1);
        check_prefixes(accepted[i], strlen(accepted[i]));
    }
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        check_str(refused[i], 0);
    /* texts with a NUL inside, which strlen would cut */
    check_text("[{}]\0", 5, 0);
    check_text("[{\"a\": \"\0\"}]", 12, 0);
    check_text("[{\"a\0\": 1}]", 11, 0);

    for (int objects = 0; objects < 2; objects++) {
        check_depth(61, objects, 1);
        check_depth(62, objects, 1);
        check_depth(63, objects, 0);
        check_depth(500, objects, 0);
    }

    /* long strings, many items */
    struct sx_buf b = {0};
    sx_buf_puts(&b, "[{\"long\": \"");
    for (int i = 0; i < 100000; i++) {
        const char c = (char)(0x20 + i % 95);
        sx_buf_putc(&b, c == '"' || c == '\\' ? 'x' : c);
    }
    sx_buf_puts(&b, "\\n\"}]");
    ASSERT(!b.failed);
    check_text(b.data, b.len, 1);
    sx_buf_reset(&b);
    sx_buf_putc(&b, '[');
    for (int i = 0; i < 20000; i++)
        sx_buf_puts(&b, i % 3 ? "{}, " : "{\"i\": 1}, ");
    sx_buf_puts(&b, "{}]");
    ASSERT(!b.failed);
    check_text(b.data, b.len, 1);
    sx_buf_free(&b);
}

/* ------------------------------------------------------------------ */
/* Generated canonical documents and their mutations                  */

static const char *const common_keys[] = {"iter", "phase", "ok", "step", "rank",
                                          "n",    "name",  "",   "a b",  "x\\ty"};

static void gen_string(struct sx_buf *b) {
    static const char *const escapes[] = {"\\\"", "\\\\", "\\n", "\\r",
                                          "\\t",  "\\b",  "\\f"};
    const unsigned len = below(8) == 0 ? below(300) : below(12);
    sx_buf_putc(b, '"');
    for (unsigned i = 0; i < len; i++) {
        if (below(10) == 0) {
            sx_buf_puts(b, escapes[below(7)]);
            continue;
        }
        char c = (char)(0x20 + below(95));
        if (c == '"' || c == '\\')
            c = '_';
        sx_buf_putc(b, c);
    }
    sx_buf_putc(b, '"');
}

static void gen_int(struct sx_buf *b) {
    switch (below(6)) {
    case 0:
        sx_buf_i64(b, (int64_t)below(100));
        break;
    case 1:
        sx_buf_i64(b, -(int64_t)below(1000) - 1);
        break;
    case 2:
        sx_buf_i64(b, (int64_t)next());
        break;
    case 3:
        sx_buf_puts(b, below(2) ? "9223372036854775807" : "-9223372036854775808");
        break;
    default: { /* beyond int64 now and then: 19 to 64 digits */
        const unsigned nd = 19 + below(46);
        if (below(2))
            sx_buf_putc(b, '-');
        sx_buf_putc(b, (char)('1' + below(9)));
        for (unsigned i = 1; i < nd; i++)
            sx_buf_putc(b, (char)('0' + below(10)));
        break;
    }
    }
}

static void gen_value(struct sx_buf *b, int depth);

/* An object without repeated keys; 'depth' is its own nesting level. */
static void gen_object(struct sx_buf *b, int depth) {
    char keys[16][48];
    const unsigned nkeys = below(6) == 0 ? below(17) : below(4);
    unsigned have = 0;

    sx_buf_putc(b, '{');
    for (unsigned k = 0; k < nkeys; k++) {
        struct sx_buf key = {0};
        if (below(2))
            sx_buf_puts(&key, common_keys[below(10)]);
        else
            for (unsigned i = 0, n = below(6); i < n; i++)
                sx_buf_putc(&key, (char)('a' + below(26)));
        sx_buf_putc(&key, '\0'); /* an empty key, too, is text */
        ASSERT(!key.failed && strlen(key.data) < sizeof keys[0]);
        bool repeat = false;
        for (unsigned i = 0; i < have; i++)
            repeat = repeat || strcmp(keys[i], key.data) == 0;
        if (!repeat) {
            strcpy(keys[have++], key.data);
            if (have > 1)
                sx_buf_puts(b, ", ");
            sx_buf_putc(b, '"');
            sx_buf_puts(b, key.data);
            sx_buf_puts(b, "\": ");
            gen_value(b, depth);
        }
        sx_buf_free(&key);
    }
    sx_buf_putc(b, '}');
}

/* A value inside a container at nesting level 'depth'. */
static void gen_value(struct sx_buf *b, int depth) {
    const unsigned kind = below(depth < 6 ? 9 : 6);
    switch (kind) {
    case 0:
    case 1:
        gen_int(b);
        break;
    case 2:
    case 3:
        gen_string(b);
        break;
    case 4:
        sx_buf_puts(b, below(2) ? "true" : "false");
        break;
    case 5:
        sx_buf_puts(b, "null");
        break;
    case 6:
    case 7: {
        const unsigned n = below(5);
        sx_buf_putc(b, '[');
        for (unsigned i = 0; i < n; i++) {
            if (i > 0)
                sx_buf_puts(b, ", ");
            gen_value(b, depth + 1);
        }
        sx_buf_putc(b, ']');
        break;
    }
    default:
        gen_object(b, depth + 1);
        break;
    }
}

/* A list of objects, most of them empty as a profiler writes them. */
static void gen_doc(struct sx_buf *b) {
    const unsigned n = below(8);
    sx_buf_putc(b, '[');
    for (unsigned i = 0; i < n; i++) {
        if (i > 0)
            sx_buf_puts(b, ", ");
        if (below(3) == 0)
            sx_buf_puts(b, "{}");
        else
            gen_object(b, 2);
    }
    sx_buf_putc(b, ']');
}

/* Bytes a mutation puts in: mostly JSON's own, so that many mutants still parse. */
static char mutant_byte(void) {
    static const char syntax[] = " ,:\"\\{}[]0123456789-.eEtfnu/a";
    if (below(4) == 0)
        return (char)below(256);
    return syntax[below(sizeof syntax - 1)];
}

static void test_generated(void) {
    struct sx_buf doc = {0}, m = {0};
    long mutants = 0, mutants_taken = 0;

    for (int d = 0; d < 4000; d++) {
        sx_buf_reset(&doc);
        gen_doc(&doc);
        ASSERT(!doc.failed);
        check_text(doc.data, doc.len, 1);
        if (d < 200)
            check_prefixes(doc.data, doc.len);
        else
            check_text(doc.data, below((unsigned)doc.len), 0);

        for (int k = 0; k < 6; k++) {
            const size_t at = below((unsigned)doc.len);
            sx_buf_reset(&m);
            sx_buf_append(&m, doc.data, doc.len);
            ASSERT(!m.failed);
            switch (k % 3) {
            case 0: /* a byte changed */
                m.data[at] = mutant_byte();
                break;
            case 1: /* a byte put in */
                memmove(m.data + at + 1, m.data + at, m.len - at);
                m.data[at] = mutant_byte();
                m.len++;
                break;
            default: /* a byte taken out */
                memmove(m.data + at, m.data + at + 1, m.len - at - 1);
                m.len--;
                break;
            }
            const long before = taken;
            check_text(m.data, m.len, -1);
            mutants++;
            mutants_taken += taken - before;
        }
    }
    fprintf(stderr, "%ld mutants, %ld of them still canonical\n", mutants, mutants_taken);
    /* both answers must come up, or the mutations test nothing */
    CHECK(mutants_taken > mutants / 100);
    CHECK(mutants - mutants_taken > mutants / 10);
    sx_buf_free(&doc);
    sx_buf_free(&m);
}

int main(void) {
    guarded_init();
    test_hand_written();
    test_generated();
    fprintf(stderr, "fast path took %ld inputs, left %ld to jansson\n", taken, left);
    TEST_DONE();
}
