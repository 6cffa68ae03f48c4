/* flame_svg.h - a flame graph as a standalone SVG: frames by call path, width by time */
#ifndef SX_FLAME_SVG_H
#define SX_FLAME_SVG_H

#include "buf.h"

/* One frame: a call path, under its parent frame (-1: under the root). */
struct sx_flame_frame {
    int64_t parent;   /* an earlier frame, or -1 */
    const char *name; /* the path's last region (UTF-8) */
    double ct;        /* inclusive seconds: pstats' cumulative time of the path */
    uint64_t calls;
};

/*
 * The SVG of frames 'f[0..n)' (each after its parent) over a root frame
 * 'root' of 'total' seconds, 'width' pixels wide: each frame's rectangle as
 * wide as its share of 'total' (x and width in pixels, width = ct / total *
 * (width - 20)), children left to right in order and stacked above their
 * parent, a label where it fits and a tooltip (<title>) with the path's name,
 * time, share and calls. Appended to 'out'.
 */
void sx_flame_svg(struct sx_buf *out, const struct sx_flame_frame *f, size_t n,
                  const char *root, double total, int width);

#endif /* SX_FLAME_SVG_H */
