/* test_alloc.c - large buffers (sx_big): kept bytes, growth, large frames advised on
 * their own mapping, and malloc's when the switch is off or the buffer small; the
 * page-aligned buffers of the output's stages: grown without a copy, trimmed back;
 * growing arrays: malloc's, then whole frames, contents kept */
#include "buf.h"
#include "internal.h"
#include "sx_fault.h"
#include "sx_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB ((size_t)1 << 20)

/* The VmFlags of the mapping holding 'p' (from /proc/self/smaps), or "" when unknown. */
static void vm_flags(const void *p, char *out, size_t n) {
    out[0] = '\0';
    FILE *f = fopen("/proc/self/smaps", "r");
    if (f == NULL)
        return;
    char line[512];
    bool in = false;
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) { /* a mapping's first line */
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
            continue;
        }
        if (in && strncmp(line, "VmFlags:", 8) == 0) {
            snprintf(out, n, "%s", line + 8);
            break;
        }
    }
    fclose(f);
}

static bool pattern_ok(const unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(i * 7 + seed))
            return false;
    return true;
}

static void pattern(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 7 + seed);
}

int main(void) {
    unsetenv("SCOPE_EXPORT_HUGE_PAGES");
    struct sx_big b = {0};

    /* small: malloc's */
    CHECK(sx_big_reserve(&b, 1000, 0));
    CHECK(b.p != NULL && b.cap >= 1000 && b.map == 0);
    pattern(b.p, 1000, 1);
    void *was = b.p;
    CHECK(sx_big_reserve(&b, 900, 900)); /* room enough: nothing moves */
    CHECK(b.p == was && pattern_ok(b.p, 1000, 1));

    /* large: its own mapping at a 2 MiB boundary, whole frames, the bytes asked kept */
    CHECK(sx_big_reserve(&b, 6 * MIB + 5, 1000));
    CHECK(b.map > 0 && b.map == b.cap && b.cap >= 6 * MIB + 5);
    CHECK(b.cap % (2 * MIB) == 0 && (uintptr_t)b.p % (2 * MIB) == 0);
    CHECK(pattern_ok(b.p, 1000, 1));
    pattern(b.p, b.cap, 2); /* all of it writable */
    char flags[600];
    vm_flags(b.p, flags, sizeof flags);
    /* "hg": advised MADV_HUGEPAGE (the kernel's own THP mode decides the rest) */
    if (flags[0] != '\0')
        CHECK(strstr(flags, " hg") != NULL);

    /* growth by half again at least, contents kept up to 'keep' */
    const size_t cap = b.cap;
    CHECK(sx_big_reserve(&b, cap + 1, cap));
    CHECK(b.cap >= cap + cap / 2 && b.map == b.cap && pattern_ok(b.p, cap, 2));
    /* nothing kept: the room only, a fresh mapping that reads as zeros (the
     * read-ahead's rows count on it) */
    CHECK(sx_big_reserve(&b, 3 * b.cap, 0));
    CHECK(b.cap >= 3 * cap && b.map == b.cap);
    bool zero = true;
    for (size_t i = 0; i < b.cap && zero; i += 4096)
        zero = ((const unsigned char *)b.p)[i] == 0 &&
               ((const unsigned char *)b.p)[i + 4095] == 0;
    CHECK(zero);
    sx_big_free(&b);
    CHECK(b.p == NULL && b.cap == 0 && b.map == 0);
    sx_big_free(&b); /* an empty one again: nothing */

    /* the switch off: malloc's, large or not */
    setenv("SCOPE_EXPORT_HUGE_PAGES", "0", 1);
    CHECK(sx_big_reserve(&b, 6 * MIB, 0));
    CHECK(b.map == 0 && b.cap >= 6 * MIB);
    pattern(b.p, 6 * MIB, 3);
    CHECK(sx_big_reserve(&b, 7 * MIB, 6 * MIB) && pattern_ok(b.p, 6 * MIB, 3));
    /* on again: the next growth is mapped, the malloc'd bytes copied over */
    unsetenv("SCOPE_EXPORT_HUGE_PAGES");
    CHECK(sx_big_reserve(&b, 20 * MIB, 6 * MIB));
    CHECK(b.map > 0 && pattern_ok(b.p, 6 * MIB, 3));
    sx_big_free(&b);

    /*
     * An aligned sx_buf (an output's stage): its text, after a front, kept as it grows
     * from pages to frames (moved, not copied), at a page and, once large, at a frame;
     * trimmed back to its first size with the text kept, and not below its text.
     */
    struct sx_buf s = {0};
    CHECK(sx_buf_align(&s, 64 * 1024));
    CHECK(s.data != NULL && (uintptr_t)s.data % 4096 == 0 && s.cap > 64 * 1024);
    const size_t first_cap = s.cap;
    pattern((unsigned char *)s.data, 5000, 4);
    s.len = 5000;
    s.data += 4000; /* as a lend leaves it: the unwritten bytes before 'data' */
    s.front = 4000;
    s.cap -= 4000;
    s.len = 1000;
    CHECK(sx_buf_reserve(&s, 9 * MIB)); /* past SX_BIG_MIN: frames */
    CHECK(s.cap >= 9 * MIB + 1000 && (uintptr_t)(s.data - s.front) % (2 * MIB) == 0);
    CHECK(pattern_ok((unsigned char *)s.data - s.front, 5000, 4));
    pattern((unsigned char *)s.data + s.len, 9 * MIB, 5); /* all of it writable */
    vm_flags(s.data, flags, sizeof flags);
    if (flags[0] != '\0')
        CHECK(strstr(flags, " hg") != NULL);
    s.data -= s.front; /* given back */
    s.cap += s.front;
    s.front = 0;
    s.len = 5000;
    sx_buf_align_trim(&s, 64 * 1024);
    CHECK(s.cap == first_cap && pattern_ok((unsigned char *)s.data, 5000, 4));
    sx_buf_align_trim(&s, 64 * 1024); /* at its size: nothing */
    CHECK(s.cap == first_cap);
    CHECK(sx_buf_reserve(&s, 2 * MIB));
    pattern((unsigned char *)s.data, s.len + 2 * MIB, 6);
    s.len += 2 * MIB;
    sx_buf_align_trim(&s, 64 * 1024); /* its text stays */
    CHECK(s.cap > s.len && pattern_ok((unsigned char *)s.data, s.len, 6));
    sx_buf_free(&s);

    /*
     * A growing array (a loader's rows, a reader's column): malloc's while small, then
     * whole 2 MiB frames at a frame boundary, advised, its bytes kept at every step
     * (moved from malloc's to frames, then from frames to frames); a failed growth
     * leaves it as it was.
     */
    struct sx_big g = {0};
    size_t have = 0;
    for (size_t len = 1000; len <= 40 * MIB; len = len * 2 + 3) {
        if (len >= 8 * MIB && g.map > 0) {
            sx_fault_arm(SX_FAULT_ALLOC, 1);
            const struct sx_big before = g;
            CHECK(!sx_big_reserve(&g, g.cap + 1, have));
            CHECK(sx_fault_fired());
            sx_fault_off();
            CHECK(g.p == before.p && g.cap == before.cap && g.map == before.map);
            CHECK(pattern_ok(g.p, have, 7));
        }
        CHECK(sx_big_reserve(&g, len, have));
        CHECK(g.p != NULL && g.cap >= len && pattern_ok(g.p, have, 7));
        if (g.cap < MIB) {
            CHECK(g.map == 0);
        } else {
            CHECK(g.map == g.cap && g.map % (2 * MIB) == 0 &&
                  (uintptr_t)g.p % (2 * MIB) == 0);
            vm_flags(g.p, flags, sizeof flags);
            if (flags[0] != '\0')
                CHECK(strstr(flags, " hg") != NULL);
        }
        pattern(g.p, len, 7); /* all of it writable */
        have = len;
    }
    const struct sx_big full = g;
    CHECK(sx_big_reserve(&g, full.cap - 10, have) && g.p == full.p); /* room enough */
    sx_big_free(&g);
    TEST_DONE();
}
