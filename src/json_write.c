/* json_write.c - byte-exact JSON text: integers, floats and strings */
#include "json_write.h"

#include <math.h>
#include <stdio.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
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

/* 128-bit integers (GCC and Clang), for the exact fast path below. */
__extension__ typedef unsigned __int128 u128;

/* 5^k while it fits 64 bits: constants, not a table filled on first use (no state
 * outlives a call) */
static const uint64_t pow5[27] = {
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
};

/*
 * Digits as the bytes of words: a word's first byte in memory (its least significant, as
 * on x86-64 and AArch64) is its first digit, and stores swap the bytes on a big-endian
 * machine. Held in registers and written with whole-word stores, never gathered back
 * from smaller stores (a load across several stores waits for them all).
 */
#define ZEROS UINT64_C(0x3030303030303030) /* eight '0' characters */

static inline void store_le(char *p, uint64_t w) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    memcpy(p, &w, sizeof w);
}

static inline uint64_t load_le(const char *p) {
    uint64_t w;
    memcpy(&w, p, sizeof w);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* The 8 digits of 'v' < 10^8 as the bytes of a word, each 0..9 (not yet characters):
 * 4 + 4 digits in two 32-bit lanes, then 2 + 2 in each, then 1 + 1, by multiplying
 * with reciprocals that are exact in those ranges (x * 10486 >> 20 is x / 100 for x <
 * 10^4, x * 103 >> 10 is x / 10 for x < 100). */
static inline uint64_t digits8(uint32_t v) {
    const uint64_t x = (v / 10000) | ((uint64_t)(v % 10000) << 32);
    const uint64_t h = ((x * 10486) >> 20) & UINT64_C(0x0000007F0000007F);
    const uint64_t y = h | ((x - h * 100) << 16);
    const uint64_t t = ((y * 103) >> 10) & UINT64_C(0x000F000F000F000F);
    return t | ((y - t * 10) << 8);
}

/* Up to 24 digits as characters, the bytes of three words (first digit lowest). */
struct digit_words {
    uint64_t w0, w1, w2;
};

/*
 * The 16 digits of 'r' < 10^16 as the bytes of two words, each 0..9 (not yet
 * characters): its four groups of 4 digits, each x in four 16-bit lanes that become
 * x / 1000, x / 100, x / 10 and x by two high-half multiplies (of 4x by 8389, 5243,
 * 3277, 32768, then by 2^7, 2^11, 2^15, 2^15: exact for x < 10^4, checked for every x
 * by test_float_repr), then each lane less ten times the one before it; packed to
 * bytes. Fewer instructions than digits8 twice, where SSE2 is (x86-64 always).
 */
static inline void digits16(uint64_t r, uint64_t *first, uint64_t *second) {
    const uint32_t h = (uint32_t)(r / 100000000u), l = (uint32_t)(r % 100000000u);
#if defined(__SSE2__)
    const uint64_t groups = (uint64_t)(h / 10000) | (uint64_t)(h % 10000) << 16 |
                            (uint64_t)(l / 10000) << 32 | (uint64_t)(l % 10000) << 48;
    const __m128i g = _mm_cvtsi64_si128((long long)groups);
    const __m128i gg = _mm_unpacklo_epi16(g, g);   /* A A B B C C D D */
    const __m128i ab = _mm_unpacklo_epi32(gg, gg); /* A A A A B B B B */
    const __m128i cd = _mm_unpackhi_epi32(gg, gg); /* C C C C D D D D */
    const __m128i m1 =
        _mm_set_epi16((short)32768, 3277, 5243, 8389, (short)32768, 3277, 5243, 8389);
    const __m128i m2 = _mm_set_epi16((short)32768, (short)32768, 2048, 128, (short)32768,
                                     (short)32768, 2048, 128);
    const __m128i ten = _mm_set1_epi16(10);
    __m128i q0 = _mm_mulhi_epu16(_mm_mulhi_epu16(_mm_slli_epi16(ab, 2), m1), m2);
    __m128i q1 = _mm_mulhi_epu16(_mm_mulhi_epu16(_mm_slli_epi16(cd, 2), m1), m2);
    q0 = _mm_sub_epi16(q0, _mm_slli_epi64(_mm_mullo_epi16(q0, ten), 16));
    q1 = _mm_sub_epi16(q1, _mm_slli_epi64(_mm_mullo_epi16(q1, ten), 16));
    const __m128i d = _mm_packus_epi16(q0, q1);
    *first = (uint64_t)_mm_cvtsi128_si64(d);
    *second = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(d, d));
#else
    *first = digits8(h);
    *second = digits8(l);
#endif
}

void sx_fmt_digits16(char *out, uint64_t r) {
    uint64_t a, b;
    digits16(r, &a, &b);
    store_le(out, a | ZEROS);
    store_le(out + 8, b | ZEROS);
}

/*
 * The shortest digits 'c' x 10^-k (16 or 17 digits, trailing zeros included) in 'w'
 * as characters padded with '0'; returns their number without the trailing zeros
 * (the leading zero bytes of the digit words) and sets '*decpt'. Laid out as 17
 * digits, then moved down a byte when the first is 0: selections, not branches (the
 * two lengths come about equally often, in no order).
 */
static inline size_t words_of(uint64_t c, int k, struct digit_words *w, int *decpt) {
    const uint64_t e16 = UINT64_C(10000000000000000);
    const uint64_t d0 = c / e16, rest = c - d0 * e16;
    uint64_t a, b;
    digits16(rest, &a, &b);
    const uint64_t last = b != 0 ? b : a;
    const size_t z =
        (b != 0 ? 0 : 8) + (last != 0 ? (size_t)__builtin_clzll(last) / 8 : 8);
    const bool short16 = d0 == 0;
    w->w0 = (short16 ? a : (d0 | a << 8)) | ZEROS;
    w->w1 = (short16 ? b : (a >> 56 | b << 8)) | ZEROS;
    w->w2 = (short16 ? 0 : b >> 56) | ZEROS;
    *decpt = 17 - (int)short16 - k;
    return 17 - (size_t)short16 - z;
}

/*
 * The shortest digits' integer among [lo, hi] (units of 10^-k, narrower than 10): the
 * multiple of 10 if there is one, else the nearest to v, 'vi' rounded up when 'up' (half
 * to even); 0 when that is not inside (the caller's slower path decides). Which case
 * holds is a coin toss from one number to the next: selections, not branches.
 */
static inline uint64_t pick(uint64_t lo, uint64_t hi, uint64_t vi, bool up) {
    const uint64_t ten = hi / 10 * 10;
    uint64_t c = vi + up;
    c += c < lo;
    c -= c > hi;
    const uint64_t take = -(uint64_t)(ten >= lo); /* a mask: compilers keep it a select */
    c = (ten & take) | (c & ~take);
    return c >= lo && c <= hi ? c : 0;
}

/*
 * The shortest digits of 'v' (> 0, finite) by exact integer arithmetic, where the
 * scaled value's fraction fits a 64-bit word: 2^-33 <= v < 2^53, the times and
 * durations of a trace. With v = M 2^E, scaled by 10^k, k = -floor(E log10 2), one ulp
 * is W = 2^E 10^k units, 1 <= W < 10, and the numbers that read back as v are the
 * integers of [(2M-1), (2M+1)] 5^k / 2^(1-E-k) (the lower half of it halved at a power
 * of two; a boundary only when M is even: ties to even). In that range v 10^k = vi + r /
 * 2^s with s <= 60 and 5^k < 2^64, so the interval's ends are vi plus r +- 5^k over
 * 2^s: one 64 x 64 -> 128-bit multiply, no 128-bit shifts. The interval is narrower
 * than 10 units, so it holds at most one multiple of 10: if one, it is the shortest (its
 * trailing zeros go); else every integer in it has the same length and the nearest to
 * v is dtoa's choice (half to even). The result has 16 or 17 digits (v 10^k = M W >=
 * 2^52) before its trailing zeros go. Returns the number of digits, in 'w' as
 * characters padded with '0', and sets '*decpt' (v = 0.DIGITS x 10^decpt); 0 outside
 * that range: the caller takes the slow path.
 */
static inline size_t fast_digits(double v, struct digit_words *w, int *decpt) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    const uint64_t frac = bits & ((UINT64_C(1) << 52) - 1);
    const uint64_t M = frac | (UINT64_C(1) << 52); /* v = M 2^E */
    const int E = (int)((bits >> 52) & 0x7ff) - 1075;
    if (E > 0 || E < -85)
        return 0;
    /* floor(E log10 2), exact for |E| <= 1650; an arithmetic shift floors (GCC, Clang) */
    const int k = -((E * 78913) >> 18); /* 0..26 */
    const int s = 1 - E - k;            /* 1..60 */
    const uint64_t p5 = pow5[k];
    const u128 av = (u128)(2 * M) * p5;
    const uint64_t m = (UINT64_C(1) << s) - 1;
    const uint64_t vi = (uint64_t)(av >> s), r = (uint64_t)av & m;
    const bool even = (M & 1) == 0;
    /* the top: vi + (r + 5^k) / 2^s; r + 5^k < 6 x 2^60 */
    const uint64_t t = r + p5;
    const uint64_t hi = vi + (t >> s) - ((t & m) == 0 && !even);
    /* the bottom: vi + (r - 5^k) / 2^s, at a power of two (2r - 5^k) / 2^(s+1) */
    const int sl = s + (frac == 0);
    const int64_t bl = (int64_t)(frac == 0 ? 2 * r : r) - (int64_t)p5;
    const uint64_t lo = vi + (uint64_t)(bl >> sl) +
                        (((uint64_t)bl & ((UINT64_C(1) << sl) - 1)) != 0 || !even);
    const uint64_t half = UINT64_C(1) << (s - 1);
    /* bitwise, not '||': short-circuit evaluation is a branch, taken half the time */
    const bool up = (r > half) | ((r == half) & (bool)(vi & 1));
    const uint64_t c = pick(lo, hi, vi, up);
    return c == 0 ? 0 : words_of(c, k, w, decpt);
}

/*
 * The shortest digits of 'v' (> 0, finite) as David Gay's dtoa mode 0 finds them,
 * the slow way (libc's correctly rounded "%.*e"), for what fast_digits leaves (below
 * 2^-33, from 2^53); returns and sets what it does. The p-digit numbers are among the
 * (p+1)-digit ones, so "some p-digit number reads back" is monotone in p and a binary
 * search finds the shortest; 17 digits always suffice.
 */
static size_t slow_digits(double v, struct digit_words *w, int *decpt) {
    uint64_t m = 0;
    int e = 0;
    int lo = 1, hi = 17;
    /* Most doubles need 16 or 17 digits: look there first. */
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
    char text[32];
    memset(text, '0', sizeof text);
    const size_t n = sx_fmt_u64(text, m);
    text[n] = '0';
    w->w0 = load_le(text);
    w->w1 = load_le(text + 8);
    w->w2 = load_le(text + 16);
    *decpt = e + (int)n;
    return n;
}

/* The bytes of a word below byte 'i' (any int; none below 0, all from 8). */
static inline uint64_t low_bytes(int i) {
    return i <= 0 ? 0 : i >= 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * i)) - 1;
}

size_t sx_fmt_double(char *out, double v) {
    char *const start = out;
    if (isnan(v)) {
        memcpy(out, "NaN", 4);
        return 3;
    }
    if (signbit(v)) {
        *out++ = '-';
        v = -v;
    }
    if (isinf(v)) {
        memcpy(out, "Infinity", 9);
        return (size_t)(out - start) + 8;
    }
    if (v == 0) {
        memcpy(out, "0.0", 4);
        return (size_t)(out - start) + 3;
    }
    struct digit_words w;
    int d;
    size_t n = fast_digits(v, &w, &d);
    if (n == 0)
        n = slow_digits(v, &w, &d);
    /* Whole words stored where the text goes: at most 30 bytes with the sign, and 'out'
     * has room for 32. The words are padded with '0', the zeros of "12300.0". */
    size_t len;
    if (d > 0 && d <= 16) {
        /* Fixed notation, always with a fractional part: the digits before byte 'd'
         * from the words as they are, those after from the words moved up a byte (the
         * whole text in three stores, made in registers), then the point. */
        const uint64_t m0 = low_bytes(d), m1 = low_bytes(d - 8), m2 = low_bytes(d - 16);
        const uint64_t u0 = w.w0 << 8, u1 = w.w1 << 8 | w.w0 >> 56,
                       u2 = w.w2 << 8 | w.w1 >> 56;
        store_le(out, (w.w0 & m0) | (u0 & ~m0));
        store_le(out + 8, (w.w1 & m1) | (u1 & ~m1));
        store_le(out + 16, (w.w2 & m2) | (u2 & ~m2));
        out[d] = '.';
        len = ((size_t)d < n ? n : (size_t)d + 1) + 1;
    } else if (d <= 0 && d > -4) {
        memcpy(out, "0.000000", 8);
        char *p = out + 2 - d;
        store_le(p, w.w0);
        store_le(p + 8, w.w1);
        store_le(p + 16, w.w2);
        len = (size_t)(2 - d) + n;
    } else {
        /* Scientific: no ".0" for one digit, at least two exponent digits. */
        store_le(out + 1, w.w0);
        store_le(out + 9, w.w1);
        store_le(out + 17, w.w2);
        out[0] = (char)(w.w0 & 0xff);
        len = 1;
        if (n > 1) {
            out[1] = '.';
            len = n + 1;
        }
        int x = d - 1;
        out[len++] = 'e';
        out[len++] = x < 0 ? '-' : '+';
        if (x < 0)
            x = -x;
        if (x < 10)
            out[len++] = '0';
        len += sx_fmt_u64(out + len, (uint64_t)x);
    }
    out[len] = '\0';
    return (size_t)(out - start) + len;
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
