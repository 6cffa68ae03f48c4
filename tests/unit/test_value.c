/* test_value.c - value trees and their text against CPython 3.11's json.dumps */
#include "buf.h"
#include "json_value.h"
#include "sx_test.h"

#include <math.h>

static struct sx_value str_value(const char *s) {
    struct sx_value v;
    ASSERT(sx_value_str(&v, s, strlen(s)));
    return v;
}

static void set(struct sx_value *obj, const char *key, struct sx_value item) {
    ASSERT(sx_value_set(obj, key, strlen(key), item));
}

static struct sx_value empty_array(void) {
    struct sx_value v;
    sx_value_array(&v);
    return v;
}

static struct sx_value empty_object(void) {
    struct sx_value v;
    sx_value_object(&v);
    return v;
}

/* The text of 'v' at depth 0; a static copy that lives until the next call. */
static const char *text(const struct sx_value *v, int indent) {
    static char out[4096];
    struct sx_buf b = {0};
    sx_write_value(&b, v, indent, 0);
    ASSERT(!b.failed && b.len < sizeof out);
    memcpy(out, b.data, b.len + 1);
    sx_buf_free(&b);
    return out;
}

/*
 * doc = {"name": "r\u00e9gion \"q\"", "n": 0, "neg": -1,
 *        "big": 18446744073709551615, "f": 0.1, "nan": None, "t": True,
 *        "fl": False, "none": None, "empty_list": [], "empty_obj": {},
 *        "nested": {"a": [1, [], {}, [2, {"b": {}}]], "c": "x\U0001F600"},
 *        "e": 1e-05}
 * ("nan" is a float NaN in the tree; the exporter writes it as None.)
 */
static struct sx_value build_doc(void) {
    struct sx_value doc = empty_object();
    set(&doc, "name", str_value("r\xc3\xa9gion \"q\""));
    set(&doc, "n", sx_value_int(0));
    set(&doc, "neg", sx_value_int(-1));
    struct sx_value big = sx_value_null();
    big.kind = SX_V_UINT;
    big.u.u = UINT64_MAX;
    set(&doc, "big", big);
    set(&doc, "f", sx_value_float(0.1));
    set(&doc, "nan", sx_value_float(NAN));
    set(&doc, "t", sx_value_bool(true));
    set(&doc, "fl", sx_value_bool(false));
    set(&doc, "none", sx_value_null());
    set(&doc, "empty_list", empty_array());
    set(&doc, "empty_obj", empty_object());

    struct sx_value inner = empty_array();
    ASSERT(sx_value_push(&inner, sx_value_int(2)));
    struct sx_value ob = empty_object();
    set(&ob, "b", empty_object());
    ASSERT(sx_value_push(&inner, ob));
    struct sx_value a = empty_array();
    ASSERT(sx_value_push(&a, sx_value_int(1)));
    ASSERT(sx_value_push(&a, empty_array()));
    ASSERT(sx_value_push(&a, empty_object()));
    ASSERT(sx_value_push(&a, inner));
    struct sx_value nested = empty_object();
    set(&nested, "a", a);
    set(&nested, "c", str_value("x\xf0\x9f\x98\x80"));
    set(&doc, "nested", nested);
    set(&doc, "e", sx_value_float(1e-05));
    return doc;
}

static void test_doc(void) {
    struct sx_value doc = build_doc();
    CHECK_STR(text(&doc, -1),
              "{\"name\": \"r\\u00e9gion \\\"q\\\"\", \"n\": 0, \"neg\": -1, \"big\": "
              "18446744073709551615, \"f\": 0.1, \"nan\": null, \"t\": true, \"fl\": "
              "false, \"none\": null, \"empty_list\": [], \"empty_obj\": {}, "
              "\"nested\": {\"a\": [1, [], {}, [2, {\"b\": {}}]], \"c\": "
              "\"x\\ud83d\\ude00\"}, \"e\": 1e-05}");
    CHECK_STR(
        text(&doc, 2),
        "{\n  \"name\": \"r\\u00e9gion \\\"q\\\"\",\n  \"n\": 0,\n  \"neg\": -1,\n  "
        "\"big\": 18446744073709551615,\n  \"f\": 0.1,\n  \"nan\": null,\n  "
        "\"t\": true,\n  \"fl\": false,\n  \"none\": null,\n  \"empty_list\": "
        "[],\n  \"empty_obj\": {},\n  \"nested\": {\n    \"a\": [\n      1,\n   "
        "   [],\n      {},\n      [\n        2,\n        {\n          \"b\": "
        "{}\n        }\n      ]\n    ],\n    \"c\": \"x\\ud83d\\ude00\"\n  },\n "
        " \"e\": 1e-05\n}");
    CHECK_STR(
        text(&doc, 0),
        "{\n\"name\": \"r\\u00e9gion \\\"q\\\"\",\n\"n\": 0,\n\"neg\": -1,\n\"big\": "
        "18446744073709551615,\n\"f\": 0.1,\n\"nan\": null,\n\"t\": true,\n\"fl\": "
        "false,\n\"none\": null,\n\"empty_list\": [],\n\"empty_obj\": "
        "{},\n\"nested\": {\n\"a\": [\n1,\n[],\n{},\n[\n2,\n{\n\"b\": "
        "{}\n}\n]\n],\n\"c\": \"x\\ud83d\\ude00\"\n},\n\"e\": 1e-05\n}");

    struct sx_value copy = build_doc();
    CHECK(sx_value_equal(&doc, &copy)); /* NaN equals NaN here */
    set(&copy, "f", sx_value_float(0.2));
    CHECK(!sx_value_equal(&doc, &copy));
    sx_value_free(&copy);
    sx_value_free(&doc);
    CHECK(doc.kind == SX_V_NULL);
    sx_value_free(&doc);
}

static void test_set_replaces(void) {
    /* d = {"a": 1, "b": 2}; d["a"] = 3; d["c"] = [] */
    struct sx_value d = empty_object();
    set(&d, "a", sx_value_int(1));
    set(&d, "b", sx_value_int(2));
    set(&d, "a", str_value("gone"));
    set(&d, "a", sx_value_int(3));
    set(&d, "c", empty_array());
    CHECK(d.u.obj.n == 3);
    CHECK_STR(text(&d, -1), "{\"a\": 3, \"b\": 2, \"c\": []}");
    CHECK_STR(text(&d, 2), "{\n  \"a\": 3,\n  \"b\": 2,\n  \"c\": []\n}");
    CHECK_STR(text(&d, 0), "{\n\"a\": 3,\n\"b\": 2,\n\"c\": []\n}");
    /* Keys may hold NUL bytes; the length decides. */
    ASSERT(sx_value_set(&d, "a\0z", 3, sx_value_int(4)));
    CHECK(d.u.obj.n == 4);
    sx_value_free(&d);

    /* A push or set on the wrong kind fails and frees the item. */
    struct sx_value n = sx_value_int(1);
    CHECK(!sx_value_push(&n, str_value("leak?")));
    CHECK(!sx_value_set(&n, "k", 1, str_value("leak?")));
}

static void test_nested_empty(void) {
    /* [[[]], [{}]] */
    struct sx_value outer = empty_array();
    struct sx_value a = empty_array();
    ASSERT(sx_value_push(&a, empty_array()));
    struct sx_value b = empty_array();
    ASSERT(sx_value_push(&b, empty_object()));
    ASSERT(sx_value_push(&outer, a));
    ASSERT(sx_value_push(&outer, b));
    CHECK_STR(text(&outer, -1), "[[[]], [{}]]");
    CHECK_STR(text(&outer, 2), "[\n  [\n    []\n  ],\n  [\n    {}\n  ]\n]");
    CHECK_STR(text(&outer, 0), "[\n[\n[]\n],\n[\n{}\n]\n]");
    sx_value_free(&outer);

    struct sx_value e = empty_array();
    CHECK_STR(text(&e, 4), "[]");
    sx_value_free(&e);
    e = empty_object();
    CHECK_STR(text(&e, -1), "{}");
    sx_value_free(&e);

    /* json.dumps({"x": None}, indent=3) */
    struct sx_value x = empty_object();
    set(&x, "x", sx_value_null());
    CHECK_STR(text(&x, 3), "{\n   \"x\": null\n}");
    sx_value_free(&x);
}

static void test_scalars(void) {
    struct sx_value v = sx_value_float(-0.0);
    CHECK_STR(text(&v, -1), "-0.0");
    v = sx_value_float(INFINITY);
    CHECK_STR(text(&v, 2), "null");
    v = sx_value_float(1.5);
    CHECK_STR(text(&v, 2), "1.5");
    v = sx_value_int(INT64_MIN);
    CHECK_STR(text(&v, -1), "-9223372036854775808");
    v = sx_value_bool(false);
    CHECK_STR(text(&v, 0), "false");
    v = str_value("\x7f/");
    CHECK_STR(text(&v, -1), "\"\\u007f/\"");
    sx_value_free(&v);
}

static void test_raw(void) {
    /* RAW is canonical one-line JSON and is written verbatim in both modes. */
    const char *raw = "[{\"k\": 1}, {}]";
    struct sx_value arr = empty_array();
    struct sx_value r;
    ASSERT(sx_value_raw(&r, raw, strlen(raw)));
    ASSERT(sx_value_push(&arr, r));
    ASSERT(sx_value_push(&arr, sx_value_int(5)));
    CHECK_STR(text(&arr, -1), "[[{\"k\": 1}, {}], 5]");
    CHECK_STR(text(&arr, 2), "[\n  [{\"k\": 1}, {}],\n  5\n]");

    struct sx_value other = empty_array();
    ASSERT(sx_value_raw(&r, raw, strlen(raw)));
    ASSERT(sx_value_push(&other, r));
    ASSERT(sx_value_push(&other, sx_value_int(5)));
    CHECK(sx_value_equal(&arr, &other));
    sx_value_free(&other);
    sx_value_free(&arr);
}

static void test_depth_and_separators(void) {
    /* A value written inside an enclosing document at depth 1 (indent 2). */
    struct sx_value a = empty_array();
    ASSERT(sx_value_push(&a, sx_value_int(1)));
    ASSERT(sx_value_push(&a, sx_value_int(2)));
    struct sx_buf b = {0};
    sx_buf_putc(&b, '[');
    sx_write_newline(&b, 2, 1);
    sx_write_value(&b, &a, 2, 1);
    sx_write_sep(&b, 2, 1);
    sx_buf_putc(&b, '3');
    sx_write_newline(&b, 2, 0);
    sx_buf_putc(&b, ']');
    /* json.dumps([[1, 2], 3], indent=2) */
    CHECK_STR(b.data, "[\n  [\n    1,\n    2\n  ],\n  3\n]");
    sx_buf_reset(&b);
    sx_write_newline(&b, -1, 3);
    sx_write_sep(&b, -1, 3);
    CHECK_STR(b.data, ", ");
    sx_buf_free(&b);
    sx_value_free(&a);
}

static void test_equal(void) {
    struct sx_value i = sx_value_int(5), u = sx_value_null();
    u.kind = SX_V_UINT;
    u.u.u = 5;
    CHECK(sx_value_equal(&i, &u));
    i = sx_value_int(-1);
    u.u.u = UINT64_MAX;
    CHECK(!sx_value_equal(&i, &u));
    struct sx_value z = sx_value_float(0.0), nz = sx_value_float(-0.0);
    CHECK(!sx_value_equal(&z, &nz)); /* bitwise */
    struct sx_value one = sx_value_float(1.0), ione = sx_value_int(1);
    CHECK(!sx_value_equal(&one, &ione));
    struct sx_value s1 = str_value("a"), s2 = str_value("ab");
    CHECK(!sx_value_equal(&s1, &s2));
    sx_value_free(&s1);
    sx_value_free(&s2);
    /* Key order matters: it changes the written text. */
    struct sx_value o1 = empty_object(), o2 = empty_object();
    set(&o1, "a", sx_value_int(1));
    set(&o1, "b", sx_value_int(2));
    set(&o2, "b", sx_value_int(2));
    set(&o2, "a", sx_value_int(1));
    CHECK(!sx_value_equal(&o1, &o2));
    sx_value_free(&o1);
    sx_value_free(&o2);
}

int main(void) {
    test_doc();
    test_set_replaces();
    test_nested_empty();
    test_scalars();
    test_raw();
    test_depth_and_separators();
    test_equal();
    TEST_DONE();
}
