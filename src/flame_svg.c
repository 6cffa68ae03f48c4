/* flame_svg.c - a flame graph as a standalone SVG: frames by call path, width by time */
#include "flame_svg.h"

#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FRAME_H = 17, MARGIN = 10, TOP = 34 };

/* XML text: the five special characters escaped; at most 'max' characters, ".." after. */
static void xml_text(struct sx_buf *out, const char *s, size_t max) {
    size_t chars = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p & 0xc0) != 0x80 && ++chars > max) {
            sx_buf_puts(out, "..");
            return;
        }
        switch (*p) {
        case '&':
            sx_buf_puts(out, "&amp;");
            break;
        case '<':
            sx_buf_puts(out, "&lt;");
            break;
        case '>':
            sx_buf_puts(out, "&gt;");
            break;
        case '"':
            sx_buf_puts(out, "&quot;");
            break;
        case '\'':
            sx_buf_puts(out, "&apos;");
            break;
        default:
            if (*p >= 0x20 || *p == '\t')
                sx_buf_putc(out, (char)*p);
        }
    }
}

static size_t utf8_len(const char *s) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += (*p & 0xc0) != 0x80;
    return n;
}

/* A warm colour from the name, the same for the same region everywhere. */
static void colour(const char *name, char *buf, size_t n) {
    unsigned h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 16777619u;
    snprintf(buf, n, "rgb(%u,%u,%u)", 205 + h % 50, 80 + (h >> 8) % 130, (h >> 16) % 60);
}

static void frame(struct sx_buf *out, const char *name, const char *tip, double ct,
                  double total, uint64_t calls, double x, double w, int y) {
    char tmp[256], fill[32];
    colour(name, fill, sizeof fill);
    sx_buf_puts(out, "<g class=\"frame\"><title>");
    xml_text(out, tip, (size_t)-1);
    snprintf(tmp, sizeof tmp, " (%.6g s, %.2f%%, %llu call%s)</title>", ct,
             total > 0 ? 100.0 * ct / total : 100.0, (unsigned long long)calls,
             calls == 1 ? "" : "s");
    sx_buf_puts(out, tmp);
    snprintf(tmp, sizeof tmp,
             "<rect x=\"%.17g\" y=\"%d\" width=\"%.17g\" height=\"%d\" fill=\"%s\" "
             "rx=\"2\"/>",
             x, y, w, FRAME_H - 1, fill);
    sx_buf_puts(out, tmp);
    /* about 7 pixels a character at 12 px monospace */
    const double room = (w - 6.0) / 7.0;
    if (room >= 3.0) {
        snprintf(tmp, sizeof tmp, "<text x=\"%.2f\" y=\"%d\">", x + 3.0, y + 12);
        sx_buf_puts(out, tmp);
        size_t len = utf8_len(name);
        xml_text(out, name, len <= (size_t)room ? len : (size_t)room - 2);
        sx_buf_puts(out, "</text>");
    }
    sx_buf_puts(out, "</g>\n");
}

void sx_flame_svg(struct sx_buf *out, const struct sx_flame_frame *f, size_t n,
                  const char *root, double total, int width) {
    double *x = sx_calloc(n + 1, sizeof *x), *used = sx_calloc(n + 1, sizeof *used);
    int *depth = sx_calloc(n + 1, sizeof *depth);
    struct sx_buf path = {0};
    if (x == NULL || used == NULL || depth == NULL) {
        out->failed = true;
        goto out;
    }
    const double w0 = (double)width - 2.0 * MARGIN;
    const double scale = total > 0 ? w0 / total : 0.0;
    double root_used = 0.0;
    int maxd = 0;
    for (size_t i = 0; i < n; i++) {
        const int64_t p = f[i].parent;
        depth[i] = p >= 0 ? depth[p] + 1 : 1;
        x[i] = p >= 0 ? x[p] + used[p] : MARGIN + root_used;
        if (p >= 0)
            used[p] += f[i].ct * scale;
        else
            root_used += f[i].ct * scale;
        if (depth[i] > maxd)
            maxd = depth[i];
    }
    const int height = TOP + (maxd + 1) * FRAME_H + MARGIN;
    char tmp[512];
    snprintf(tmp, sizeof tmp,
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
             "viewBox=\"0 0 %d %d\" font-family=\"monospace\" font-size=\"12\">\n"
             "<rect width=\"100%%\" height=\"100%%\" fill=\"#fdfdf6\"/>\n"
             "<text x=\"%d\" y=\"22\" text-anchor=\"middle\" font-size=\"16\">",
             width, height, width, height, width / 2);
    sx_buf_puts(out, tmp);
    xml_text(out, root, (size_t)-1);
    sx_buf_puts(out, " - flame graph</text>\n");
    const int base = height - MARGIN - FRAME_H; /* the root's row, at the bottom */
    frame(out, root, root, total, total, 1, MARGIN, total * scale, base);
    for (size_t i = 0; i < n; i++) {
        /* the tooltip names the whole path */
        sx_buf_reset(&path);
        bool failed = false; /* a segment's: the next one starts a new buffer */
        for (int64_t k = (int64_t)i; k >= 0; k = f[k].parent) {
            struct sx_buf seg = {0};
            sx_buf_puts(&seg, f[k].name);
            if (path.len > 0)
                sx_buf_puts(&seg, " > ");
            sx_buf_append(&seg, path.data, path.len);
            failed |= seg.failed;
            sx_buf_free(&path);
            path = seg;
        }
        sx_buf_putc(&path, '\0');
        if (failed || path.failed) {
            out->failed = true;
            goto out;
        }
        frame(out, f[i].name, path.data, f[i].ct, total, f[i].calls, x[i],
              f[i].ct * scale, base - depth[i] * FRAME_H);
    }
    sx_buf_puts(out, "</svg>\n");
out:
    free(x);
    free(used);
    free(depth);
    sx_buf_free(&path);
}
