/* test_float_repr.c - sx_fmt_double is Python's float.__repr__ over many doubles */
#include "json_write.h"
#include "sx_test.h"

#include <math.h>
#include <stdint.h>

static uint64_t state = 88172645463325252u;
static uint64_t next(void) { /* xorshift64 */
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

/*
 * The shortest repr, worked out the slow way from libc: the fewest
 * significant digits p whose correctly rounded "%.{p-1}e" reads back, in
 * those digits. Not for a power of two, whose lopsided rounding interval
 * can hold a shorter number that is not the nearest (checked by value below).
 */
static bool reference(double v, char *digits, int *exp10) {
    char tmp[64];
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
        if (strtod(tmp, NULL) != v)
            continue;
        size_t n = 0;
        const char *q = tmp;
        for (; *q && *q != 'e'; q++)
            if (*q >= '0' && *q <= '9')
                digits[n++] = *q;
        while (n > 1 && digits[n - 1] == '0')
            n--;
        digits[n] = '\0';
        *exp10 = (int)strtol(q + 1, NULL, 10);
        return true;
    }
    return false;
}

/* The significant digits of a repr text ("1.25e-07" -> "125", "0.001" -> "1"). */
static void parse(const char *s, char *digits) {
    size_t n = 0;
    for (const char *p = s; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && (n > 0 || *p != '0'))
            digits[n++] = *p;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = '\0';
}

/*
 * Whether some decimal of 'p' significant digits reads back as 'v' (> 0): the two
 * 'p'-digit numbers either side of it are the only ones that can.
 */
static bool reads_back_at(double v, int p) {
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
    const double near = strtod(tmp, NULL);
    if (near == v)
        return true;
    /* the other side: one unit in the last place the other way */
    char *e = strchr(tmp, 'e');
    const int x = (int)strtol(e + 1, NULL, 10) - (p - 1);
    double unit = 1;
    snprintf(tmp, sizeof tmp, "1e%d", x);
    unit = strtod(tmp, NULL);
    const double other = near < v ? near + unit : near - unit;
    snprintf(tmp, sizeof tmp, "%.*e", p - 1, other);
    return strtod(tmp, NULL) == v;
}

/* Every binary exponent, at the ends of its mantissas and at a power of two (where the
 * rounding interval is lopsided): read back, the reference's digits, and no shorter
 * decimal reads back. */
static long every_exponent(void) {
    char out[64], want[32], got[32];
    long checked = 0;
    for (int e = -1074; e <= 1023; e++) {
        const double m[] = {1.0, 1.0 + 0x1p-52, 2.0 - 0x1p-52, 1.5 + 0x1p-40, 1.1};
        for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
            const double v = ldexp(m[i], e);
            if (!isfinite(v) || v == 0)
                continue;
            sx_fmt_double(out, v);
            CHECK(strtod(out, NULL) == v);
            parse(out, got);
            const int n = (int)strlen(got);
            if (n > 1 && reads_back_at(v, n - 1)) {
                fprintf(stderr, "%.17g: %s is not the shortest\n", v, out);
                sx_test_failures++;
            }
            int ex = 0, we = 0;
            if (frexp(v, &ex) != 0.5 && reference(v, want, &we) &&
                strcmp(got, want) != 0) {
                fprintf(stderr, "%.17g: got %s, want digits %s\n", v, out, want);
                sx_test_failures++;
            }
            checked++;
        }
    }
    return checked;
}

/* The text, its NUL and the words stored past it stay inside the 32 bytes promised, for
 * the longest texts of each notation (17 digits, a sign, "0.000", "e-308"). */
static void stays_in_room(void) {
    static const double v[] = {-0.00012345678901234567,  -1.2345678901234567e-300,
                               -1234567890123456.7,      -9007199254740991.0,
                               -0.12345678901234568,     -1.7976931348623157e308,
                               -4.9406564584124654e-324, -2.2250738585072014e-308,
                               -123456.78901234567,      1e22};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        unsigned char buf[64];
        memset(buf, 0xa5, sizeof buf);
        const size_t n = sx_fmt_double((char *)buf, v[i]);
        CHECK(n < 32 && buf[n] == '\0' && strtod((char *)buf, NULL) == v[i]);
        for (size_t k = 32; k < sizeof buf; k++)
            CHECK(buf[k] == 0xa5);
    }
}

/* The digit step, for every group of four digits in each of its four places (its
 * reciprocals are exact for 0..9999 and nothing else is tried), and at random. */
static void every_digit_group(void) {
    static const uint64_t place[] = {1000000000000u, 100000000u, 10000u, 1u};
    char out[17], want[32];
    for (size_t p = 0; p < 4; p++)
        for (uint64_t x = 0; x < 10000; x++) {
            const uint64_t r = x * place[p] + (9999 - x) * place[(p + 1) % 4];
            sx_fmt_digits16(out, r);
            out[16] = '\0';
            snprintf(want, sizeof want, "%016llu", (unsigned long long)r);
            if (strcmp(out, want) != 0) {
                fprintf(stderr, "digits of %s: %s\n", want, out);
                sx_test_failures++;
                return;
            }
        }
    for (int i = 0; i < 100000; i++) {
        const uint64_t r = next() % 10000000000000000u;
        sx_fmt_digits16(out, r);
        out[16] = '\0';
        snprintf(want, sizeof want, "%016llu", (unsigned long long)r);
        CHECK_STR(out, want);
    }
}

int main(void) {
    char out[64], want[32], got[32];
    long checked = 0;
    every_digit_group();
    stays_in_room();
    CHECK(every_exponent() > 10000);
    for (int i = 0; i < 400000; i++) {
        double v;
        const uint64_t r = next();
        switch (i % 5) {
        case 0: { /* any bits */
            uint64_t b = next();
            memcpy(&v, &b, sizeof v);
            break;
        }
        case 1: /* a trace time: ns / 1e9 minus an origin, times 1e6 */
            v = ((double)(int64_t)(r % 4000000000000u) / 1e9 - 1.7) * 1000000;
            break;
        case 2: /* few mantissa bits: differences of large times */
            v = ldexp((double)(r % ((uint64_t)1 << (r % 40 + 1))),
                      (int)(next() % 110) - 80);
            break;
        case 3: /* a power of two */
            v = ldexp(1.0, (int)(r % 200) - 100);
            break;
        default: /* durations */
            v = (double)(int64_t)(r % 100000000u) / 1e9;
            break;
        }
        if (!isfinite(v) || v == 0)
            continue;
        sx_fmt_double(out, v);
        CHECK(strtod(out, NULL) == v);
        int we = 0, ex = 0;
        if (frexp(fabs(v), &ex) == 0.5 || !reference(fabs(v), want, &we))
            continue;
        parse(out, got);
        if (strcmp(got, want) != 0) {
            fprintf(stderr, "%.17g: got %s, want digits %s\n", v, out, want);
            sx_test_failures++;
        }
        checked++;
    }
    /* Python's own text of some values. */
    static const struct {
        double v;
        const char *text;
    } known[] = {
        {4183.48400035029, "4183.48400035029"},
        {0.019384708999950817, "0.019384708999950817"},
        {2.384185791015625e-07, "2.384185791015625e-07"},
        {23.126602172851562, "23.126602172851562"},
        {85.353851318359375, "85.35385131835938"},
        {1e16, "1e+16"},
        {1e15, "1000000000000000.0"},
        {0.1, "0.1"},
        {1e-5, "1e-05"},
        {0.0001, "0.0001"},
        {9007199254740993.0, "9007199254740992.0"},
        {5e-324, "5e-324"},
        {5.9604644775390625e-08, "5.960464477539063e-08"},
        {6.1897001964269014e+26, "6.189700196426902e+26"},
        {5.6843418860808015e-14, "5.684341886080802e-14"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
    };
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        sx_fmt_double(out, known[k].v);
        CHECK_STR(out, known[k].text);
    }
    CHECK(checked > 300000);
    TEST_DONE();
}
