/* json_write.c - byte-exact JSON text: integers, floats and strings */
#include "json_write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Integers: the hot path (every event time goes through here)         */

static const char sx_digits2[201] = "00010203040506070809"
                                    "10111213141516171819"
                                    "20212223242526272829"
                                    "30313233343536373839"
                                    "40414243444546474849"
                                    "50515253545556575859"
                                    "60616263646566676869"
                                    "70717273747576777879"
                                    "80818283848586878889"
                                    "90919293949596979899";

/* Exactly 8 digits of 'v' < 10^8 at 'p': 32-bit arithmetic, two digits at a time. */
static inline void put8(char *p, uint32_t v) {
    const uint32_t hi = v / 10000, lo = v % 10000;
    memcpy(p, sx_digits2 + 2 * (hi / 100), 2);
    memcpy(p + 2, sx_digits2 + 2 * (hi % 100), 2);
    memcpy(p + 4, sx_digits2 + 2 * (lo / 100), 2);
    memcpy(p + 6, sx_digits2 + 2 * (lo % 100), 2);
}

/* The digits of 'v' < 10^8, as few as it takes. */
static inline size_t put_small(char *out, uint32_t v) {
    if (v < 10) {
        out[0] = (char)('0' + v);
        return 1;
    }
    if (v < 100) {
        memcpy(out, sx_digits2 + 2 * v, 2);
        return 2;
    }
    if (v < 10000) {
        const uint32_t a = v / 100, b = v % 100;
        if (a < 10) {
            out[0] = (char)('0' + a);
            memcpy(out + 1, sx_digits2 + 2 * b, 2);
            return 3;
        }
        memcpy(out, sx_digits2 + 2 * a, 2);
        memcpy(out + 2, sx_digits2 + 2 * b, 2);
        return 4;
    }
    const uint32_t hi = v / 10000, lo = v % 10000;
    size_t n = put_small(out, hi);
    memcpy(out + n, sx_digits2 + 2 * (lo / 100), 2);
    memcpy(out + n + 2, sx_digits2 + 2 * (lo % 100), 2);
    return n + 4;
}

/*
 * Split at 10^8 so that the digit work is 32-bit: nanosecond timestamps
 * (19 digits) cost two 64-bit divisions by constants and three put8-sized steps.
 */
size_t sx_fmt_u64(char *out, uint64_t v) {
    size_t n;
    if (v < 100000000u) {
        n = put_small(out, (uint32_t)v);
    } else if (v < 10000000000000000u) {
        n = put_small(out, (uint32_t)(v / 100000000u));
        put8(out + n, (uint32_t)(v % 100000000u));
        n += 8;
    } else {
        const uint64_t q = v / 100000000u;
        n = put_small(out, (uint32_t)(q / 100000000u));
        put8(out + n, (uint32_t)(q % 100000000u));
        put8(out + n + 8, (uint32_t)(v % 100000000u));
        n += 16;
    }
    out[n] = '\0';
    return n;
}

/*
 * The hot path: 'n' integers, each preceded by ", " unless it is the list's first
 * ('first'). Nanosecond timestamps of one row share their leading digits, so the part
 * above 10^8 is formatted once and copied while it repeats. 'out' has room for 22 bytes
 * per value. Returns the end of what was written.
 */
char *sx_fmt_i64_list(char *out, const int64_t *v, size_t n, bool first) {
    char hi_text[16];
    size_t hi_len = 0;
    uint64_t hi_prev = UINT64_MAX;
    char *p = out;
    for (size_t i = 0; i < n; i++) {
        if (!first || i > 0) {
            p[0] = ',';
            p[1] = ' ';
            p += 2;
        }
        const int64_t x = v[i];
        if (x < 100000000) { /* ids, counts, durations: small; or negative */
            p += x >= 0 ? put_small(p, (uint32_t)x) : sx_fmt_i64(p, x);
            continue;
        }
        const uint64_t u = (uint64_t)x;
        const uint64_t hi = u / 100000000u;
        if (hi != hi_prev) {
            hi_len = sx_fmt_u64(hi_text, hi);
            hi_prev = hi;
        }
        memcpy(p, hi_text, 16); /* fixed size: the compiler makes it two moves */
        p += hi_len;
        put8(p, (uint32_t)(u - hi * 100000000u));
        p += 8;
    }
    return p;
}

size_t sx_fmt_i64(char *out, int64_t v) {
    if (v >= 0)
        return sx_fmt_u64(out, (uint64_t)v);
    /* Negate in unsigned arithmetic so that INT64_MIN does not overflow. */
    out[0] = '-';
    return 1 + sx_fmt_u64(out + 1, 0 - (uint64_t)v);
}

void sx_buf_u64(struct sx_buf *b, uint64_t v) {
    if (!sx_buf_reserve(b, 24))
        return;
    b->len += sx_fmt_u64(b->data + b->len, v);
}

void sx_buf_i64(struct sx_buf *b, int64_t v) {
    if (!sx_buf_reserve(b, 24))
        return;
    b->len += sx_fmt_i64(b->data + b->len, v);
}

/* ------------------------------------------------------------------ */
/* Floats: Python's float.__repr__ (the traces' hot path: three per call)  */

/* strtod of mantissa 'm' times 10^'e', written without a decimal point (locale-proof). */
static double decimal_value(uint64_t m, int e) {
    char tmp[48];
    snprintf(tmp, sizeof tmp, "%llue%d", (unsigned long long)m, e);
    return strtod(tmp, NULL);
}

/*
 * Whether some 'prec'-digit decimal reads back as 'v' (> 0, finite); if so,
 * the one nearest to 'v' is '*m' x 10^'*e' (otherwise that is just the
 * nearest). The correctly rounded candidate
 * is tried first, then the grid point on the other side of 'v': at a power
 * of two the rounding interval is lopsided, so that one may read back when
 * the nearest does not (2^-1017 is 7.120236347223045e-307, not ...0444e-307).
 * Any 'prec'-digit number inside the interval implies one of these two is.
 */
static bool try_precision(double v, int prec, uint64_t *m, int *e) {
    char tmp[48];
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
    /* "d.ddde+XX": gather the digits; any non-digit before 'e' is the point. */
    uint64_t c = 0;
    const char *p = tmp;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            c = c * 10 + (uint64_t)(*p - '0');
    const int x = (*p == 'e' ? (int)strtol(p + 1, NULL, 10) : 0) - (prec - 1);
    uint64_t low = 1; /* the smallest 'prec'-digit mantissa */
    for (int i = 1; i < prec; i++)
        low *= 10;
    *m = c;
    *e = x;
    if (decimal_value(c, x) == v) {
        /* the nearest one */
    } else if (decimal_value(c + 1, x) == v) {
        *m = c + 1;
    } else if (c > low && decimal_value(c - 1, x) == v) {
        *m = c - 1;
    } else if (c == low && decimal_value(low * 10 - 1, x - 1) == v) {
        *m = low * 10 - 1; /* below a power of ten the grid is ten times finer */
        *e = x - 1;
    } else {
        return false;
    }
    return true;
}

/*
 * The shortest decimal digits that read back as 'v' (> 0, finite), as
 * David Gay's dtoa mode 0 finds them: returns the number of digits in
 * 'digits' (no trailing zeros) and sets '*decpt' so that v = 0.DIGITS x
 * 10^decpt. The p-digit numbers are among the (p+1)-digit ones, so "some
 * p-digit number reads back" is monotone in p and a binary search finds the
 * shortest; 17 digits always suffice for a double.
 */
/* 128-bit integers (GCC and Clang), for the exact fast path below. */
__extension__ typedef unsigned __int128 u128;

/*
 * The shortest digits of 'v' (> 0, finite) by exact integer arithmetic,
 * where it fits in 128 bits (about 1e-15 <= v < 1e16, the times and
 * durations of a trace): v scaled by 10^k into [1e16, 1e17) has the
 * rounding interval [(2M-1), (2M+1)] * 5^k / 2^s, whose integers are the
 * 17-digit numbers that read back as v; the shortest is the multiple of the
 * largest power of ten among them, the nearest one to v (half to even, as
 * dtoa). Returns false (the caller takes the slow path) outside that range.
 */
/* x * 5^k, one 64-bit multiply while 5^k fits in 64 bits (k < 28: times of a trace) */
static inline u128 mul_pow5(uint64_t x, const u128 *pow5, int k) {
    return k < 28 ? (u128)x * (uint64_t)pow5[k] : (u128)x * pow5[k];
}

/* x / 10^j and x % 10^j; by 1 and 10 without a division instruction (the common j) */
static inline uint64_t div_pow10(uint64_t x, const uint64_t *pow10, int j,
                                 uint64_t *rem) {
    if (j == 0) {
        *rem = 0;
        return x;
    }
    if (j == 1) {
        *rem = x % 10;
        return x / 10;
    }
    *rem = x % pow10[j];
    return x / pow10[j];
}

static bool fast_digits(double v, uint64_t *m_out, int *e_out) {
    /* constants, not tables filled on first use: no state outlives a call */
    static const u128 pow5[32] = {
        UINT64_C(1),
        UINT64_C(5),
        UINT64_C(25),
        UINT64_C(125),
        UINT64_C(625),
        UINT64_C(3125),
        UINT64_C(15625),
        UINT64_C(78125),
        UINT64_C(390625),
        UINT64_C(1953125),
        UINT64_C(9765625),
        UINT64_C(48828125),
        UINT64_C(244140625),
        UINT64_C(1220703125),
        UINT64_C(6103515625),
        UINT64_C(30517578125),
        UINT64_C(152587890625),
        UINT64_C(762939453125),
        UINT64_C(3814697265625),
        UINT64_C(19073486328125),
        UINT64_C(95367431640625),
        UINT64_C(476837158203125),
        UINT64_C(2384185791015625),
        UINT64_C(11920928955078125),
        UINT64_C(59604644775390625),
        UINT64_C(298023223876953125),
        UINT64_C(1490116119384765625),
        UINT64_C(7450580596923828125),
        (u128)UINT64_C(7450580596923828125) * 5,
        (u128)UINT64_C(7450580596923828125) * 25,
        (u128)UINT64_C(7450580596923828125) * 125,
        (u128)UINT64_C(7450580596923828125) * 625,
    };
    static const uint64_t pow10[18] = {
        UINT64_C(1),
        UINT64_C(10),
        UINT64_C(100),
        UINT64_C(1000),
        UINT64_C(10000),
        UINT64_C(100000),
        UINT64_C(1000000),
        UINT64_C(10000000),
        UINT64_C(100000000),
        UINT64_C(1000000000),
        UINT64_C(10000000000),
        UINT64_C(100000000000),
        UINT64_C(1000000000000),
        UINT64_C(10000000000000),
        UINT64_C(100000000000000),
        UINT64_C(1000000000000000),
        UINT64_C(10000000000000000),
        UINT64_C(100000000000000000),
    };
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    const int eb = (int)((bits >> 52) & 0x7ff);
    const uint64_t frac = bits & ((UINT64_C(1) << 52) - 1);
    if (eb <= 1 || eb == 0x7ff)
        return false;
    const uint64_t M = frac | (UINT64_C(1) << 52);
    const int E = eb - 1075;
    /* floor(log10(v)) is floor((E + 52) log10 2) or one more: the loop below settles it
     */
    int k = 16 - (((E + 52) * 78913) >> 18);
    u128 av = 0;
    int s = 0;
    for (int tries = 0; tries < 3; tries++) {
        if (k < 0 || k > 31)
            return false;
        s = 1 - E - k;
        if (s < 0 || s > 120)
            return false;
        av = mul_pow5(2 * M, pow5, k);
        const u128 vi = av >> s;
        if (vi < (u128)pow10[16])
            k++;
        else if (vi >= (u128)pow10[17])
            k--;
        else
            break;
        if (tries == 2)
            return false;
    }
    const u128 mask = s == 0 ? 0 : (((u128)1 << s) - 1);
    const bool even = (M & 1) == 0;
    /* at a power of two the interval below is half as wide: (4M-1) / 2^(s+1) */
    const int sl = frac == 0 ? s + 1 : s;
    const u128 maskl = ((u128)1 << sl) - 1;
    const u128 al = mul_pow5(frac == 0 ? 4 * M - 1 : 2 * M - 1, pow5, k);
    const u128 ar = mul_pow5(2 * M + 1, pow5, k);
    uint64_t lo = (uint64_t)(al >> sl), hi = (uint64_t)(ar >> s);
    if ((al & maskl) != 0 || !even)
        lo++; /* an exact boundary reads back only when M is even (ties to even) */
    if ((ar & mask) == 0 && !even)
        hi--;
    /* The largest power of ten with a multiple in [lo, hi]: the interval is 2 to 22 units
     * wide, so most often none of 10 (j = 0) or of 100 (j = 1), each asked by a division
     * by a constant; else a binary search (a short decimal, as a duration in whole
     * nanoseconds, has j near 9). */
    int j = 0;
    if (hi / 10 * 10 >= lo)
        j = hi / 100 * 100 >= lo ? 2 : 1;
    if (j == 2) {
        int top = 16;
        while (j < top) {
            const int mid = (j + top + 1) / 2;
            if (hi / pow10[mid] * pow10[mid] >= lo)
                j = mid;
            else
                top = mid - 1;
        }
    }
    const uint64_t P = pow10[j];
    const uint64_t vi = (uint64_t)(av >> s);
    const u128 vr = av & mask;
    uint64_t r;
    uint64_t q = div_pow10(vi, pow10, j, &r);
    /* round(v / P), half to even: v / P = q + (r + vr / 2^s) / P */
    if (2 * r + 2 <= P) {
        /* down */
    } else if (2 * r > P) {
        q++;
    } else if (2 * r == P) {
        if (vr != 0 || (q & 1))
            q++;
    } else { /* 2r + 1 == P: compare vr with half of 2^s */
        const u128 half = s == 0 ? 0 : ((u128)1 << (s - 1));
        if (s == 0 || vr < half) {
            /* down */
        } else if (vr == half) {
            if (q & 1)
                q++;
        } else {
            q++;
        }
    }
    uint64_t c = q * P;
    if (c < lo)
        c += P;
    else if (c > hi)
        c -= P;
    if (c < lo || c > hi)
        return false;
    uint64_t unused;
    uint64_t m = div_pow10(c, pow10, j, &unused);
    int e = j - k;
    while (m % 10 == 0) {
        m /= 10;
        e++;
    }
    *m_out = m;
    *e_out = e;
    return true;
}

static size_t shortest_digits(double v, char digits[24], int *decpt) {
    uint64_t m = 0;
    int e = 0;
    if (fast_digits(v, &m, &e)) {
        const size_t n = sx_fmt_u64(digits, m);
        *decpt = e + (int)n;
        return n;
    }
    int lo = 1, hi = 17;
    /* Most doubles (times computed in seconds) need 16 or 17 digits: look there first. */
    if (!try_precision(v, 16, &m, &e))
        lo = 17;
    else if (!try_precision(v, 15, &m, &e))
        lo = hi = 16;
    else
        hi = 15;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (try_precision(v, mid, &m, &e))
            hi = mid;
        else
            lo = mid + 1;
    }
    /* Digits at the shortest precision (at 17 the nearest always reads back). */
    try_precision(v, hi, &m, &e);
    while (m % 10 == 0 && m != 0) {
        m /= 10;
        e++;
    }
    const size_t n = sx_fmt_u64(digits, m);
    *decpt = e + (int)n;
    return n;
}

size_t sx_fmt_double(char *out, double v) {
    char *p = out;
    if (isnan(v)) {
        memcpy(out, "NaN", 4);
        return 3;
    }
    if (signbit(v)) {
        *p++ = '-';
        v = -v;
    }
    if (isinf(v)) {
        memcpy(p, "Infinity", 9);
        return (size_t)(p - out) + 8;
    }
    if (v == 0) {
        memcpy(p, "0.0", 4);
        return (size_t)(p - out) + 3;
    }
    char digits[24];
    int d;
    const size_t n = shortest_digits(v, digits, &d);
    if (d > -4 && d <= 16) {
        /* Fixed notation, always with a fractional part. */
        if (d <= 0) {
            *p++ = '0';
            *p++ = '.';
            for (int i = 0; i < -d; i++)
                *p++ = '0';
            memcpy(p, digits, n);
            p += n;
        } else if ((size_t)d < n) {
            memcpy(p, digits, (size_t)d);
            p += d;
            *p++ = '.';
            memcpy(p, digits + d, n - (size_t)d);
            p += n - (size_t)d;
        } else {
            memcpy(p, digits, n);
            p += n;
            for (size_t i = n; i < (size_t)d; i++)
                *p++ = '0';
            *p++ = '.';
            *p++ = '0';
        }
    } else {
        /* Scientific: no ".0" for one digit, at least two exponent digits. */
        *p++ = digits[0];
        if (n > 1) {
            *p++ = '.';
            memcpy(p, digits + 1, n - 1);
            p += n - 1;
        }
        int x = d - 1;
        *p++ = 'e';
        *p++ = x < 0 ? '-' : '+';
        if (x < 0)
            x = -x;
        if (x < 10)
            *p++ = '0';
        p += sx_fmt_u64(p, (uint64_t)x);
    }
    *p = '\0';
    return (size_t)(p - out);
}

void sx_buf_double(struct sx_buf *b, double v) {
    if (!sx_buf_reserve(b, 32))
        return;
    b->len += sx_fmt_double(b->data + b->len, v);
}

/* ------------------------------------------------------------------ */
/* Strings                                                            */

#define SX_BAD_CP 0x110000u /* an invalid subpart: becomes U+FFFD */

/*
 * Decode one character of 's' (n >= 1 bytes); returns the bytes consumed.
 * An invalid sequence consumes its maximal valid prefix (at least one
 * byte) and yields SX_BAD_CP, which is how CPython's "replace" handler
 * counts: C0 80 is two errors, ED A0 80 three, a truncated F0 9F 98 one.
 */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp) {
    const unsigned c = s[0];
    unsigned lo = 0x80, hi = 0xBF;
    size_t need;
    uint32_t v;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c < 0xC2) {
        *cp = SX_BAD_CP; /* continuation byte, or overlong two-byte lead */
        return 1;
    } else if (c < 0xE0) {
        need = 1;
        v = c & 0x1F;
    } else if (c < 0xF0) {
        need = 2;
        v = c & 0x0F;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* UTF-16 surrogates */
    } else if (c < 0xF5) {
        need = 3;
        v = c & 0x07;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* beyond U+10FFFF */
    } else {
        *cp = SX_BAD_CP;
        return 1;
    }
    for (size_t i = 1; i <= need; i++) {
        if (i >= n || s[i] < lo || s[i] > hi) {
            *cp = SX_BAD_CP;
            return i;
        }
        lo = 0x80;
        hi = 0xBF;
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return need + 1;
}

/* Bytes that end a plain run: controls, '"', '\\', DEL and everything non-ASCII. */
static bool needs_escape(unsigned char c) {
    return c < 0x20 || c == '"' || c == '\\' || c >= 0x7F;
}

static size_t put_u_escape(char *out, unsigned u) {
    static const char hex[] = "0123456789abcdef";
    out[0] = '\\';
    out[1] = 'u';
    out[2] = hex[(u >> 12) & 0xF];
    out[3] = hex[(u >> 8) & 0xF];
    out[4] = hex[(u >> 4) & 0xF];
    out[5] = hex[u & 0xF];
    return 6;
}

/* The escape json.dumps(ensure_ascii=True) writes for code point 'cp'. */
static size_t escape_cp(char *out, uint32_t cp) {
    const char *two = NULL;
    switch (cp) {
    case '"':
        two = "\\\"";
        break;
    case '\\':
        two = "\\\\";
        break;
    case '\n':
        two = "\\n";
        break;
    case '\r':
        two = "\\r";
        break;
    case '\t':
        two = "\\t";
        break;
    case '\b':
        two = "\\b";
        break;
    case '\f':
        two = "\\f";
        break;
    default:
        break;
    }
    if (two) {
        memcpy(out, two, 2);
        return 2;
    }
    if (cp == SX_BAD_CP)
        cp = 0xFFFD;
    if (cp < 0x10000)
        return put_u_escape(out, cp);
    cp -= 0x10000;
    put_u_escape(out, 0xD800 | (cp >> 10));
    return 6 + put_u_escape(out + 6, 0xDC00 | (cp & 0x3FF));
}

void sx_buf_str(struct sx_buf *b, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    sx_buf_putc(b, '"');
    while (i < n) {
        const size_t start = i;
        while (i < n && !needs_escape(p[i]))
            i++;
        if (i > start)
            sx_buf_append(b, p + start, i - start);
        if (i >= n)
            break;
        uint32_t cp;
        if (p[i] < 0x80) {
            cp = p[i];
            i++;
        } else {
            i += utf8_next(p + i, n - i, &cp);
        }
        char esc[12];
        sx_buf_append(b, esc, escape_cp(esc, cp));
    }
    sx_buf_putc(b, '"');
}

void sx_buf_cstr(struct sx_buf *b, const char *s) { sx_buf_str(b, s, strlen(s)); }

char *sx_utf8_sanitize(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    /* Every invalid byte grows to at most the 3 bytes of U+FFFD. */
    if (n > (SIZE_MAX - 1) / 3)
        return NULL;
    char *out = sx_malloc(3 * n + 1);
    if (!out)
        return NULL;
    size_t o = 0, i = 0;
    while (i < n) {
        if (p[i] < 0x80) {
            out[o++] = (char)p[i++];
            continue;
        }
        uint32_t cp;
        const size_t k = utf8_next(p + i, n - i, &cp);
        if (cp == SX_BAD_CP) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
        } else {
            memcpy(out + o, p + i, k);
            o += k;
        }
        i += k;
    }
    out[o] = '\0';
    return out;
}
