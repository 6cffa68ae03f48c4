/* buf.c - a growable byte buffer, kept NUL-terminated */
#include "buf.h"

#include <stdlib.h>
#include <string.h>

void sx_buf_init(struct sx_buf *b) { *b = (struct sx_buf){0}; }

void sx_buf_free(struct sx_buf *b) {
    if (b->aligned)
        sx_pages_free(b->data != NULL ? b->data - b->front : NULL, b->front + b->cap);
    else
        free(b->data);
    sx_buf_init(b);
}

enum { PAGE = 4096 };

/* The aligned storage of 'b' grown to hold 'cap' bytes after its front, the front and
 * the text moved along. */
static bool align_grow(struct sx_buf *b, size_t cap) {
    if (cap > SIZE_MAX - b->front - PAGE)
        return false;
    const size_t total = (b->front + cap + PAGE - 1) & ~(size_t)(PAGE - 1);
    char *p = b->data == NULL
                  ? sx_pages_alloc(total)
                  : sx_pages_grow(b->data - b->front, b->front + b->cap, total);
    if (p == NULL)
        return false;
    b->data = p + b->front;
    b->cap = total - b->front;
    return true;
}

bool sx_buf_align(struct sx_buf *b, size_t cap) {
    sx_buf_free(b);
    b->aligned = true;
    if (!align_grow(b, cap + 1)) {
        b->failed = true;
        return false;
    }
    b->data[0] = '\0';
    return true;
}

void sx_buf_align_trim(struct sx_buf *b, size_t cap) {
    if (!b->aligned || b->data == NULL)
        return;
    const size_t total = (b->front + cap + 1 + PAGE - 1) & ~(size_t)(PAGE - 1);
    if (b->len + 1 > total - b->front || total >= b->front + b->cap)
        return;
    if (sx_pages_trim(b->data - b->front, b->front + b->cap, total))
        b->cap = total - b->front;
}

void sx_buf_reset(struct sx_buf *b) {
    b->len = 0;
    b->failed = false;
    if (b->data)
        b->data[0] = '\0';
}

/*
 * One byte more than asked is kept free so that 'data' can stay
 * NUL-terminated after every append: callers may treat it as a C string.
 */
bool sx_buf_reserve(struct sx_buf *b, size_t extra) {
    if (b->failed)
        return false;
    if (extra > SIZE_MAX - 1 - b->len)
        goto fail;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    if (b->aligned) {
        if (!align_grow(b, cap))
            goto fail;
        return true;
    }
    char *p = sx_realloc(b->data, cap);
    if (!p)
        goto fail;
    b->data = p;
    b->cap = cap;
    return true;
fail:
    b->failed = true;
    return false;
}

void sx_buf_append(struct sx_buf *b, const void *p, size_t n) {
    if (!sx_buf_reserve(b, n))
        return;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void sx_buf_puts(struct sx_buf *b, const char *s) { sx_buf_append(b, s, strlen(s)); }

void sx_buf_putc(struct sx_buf *b, char c) {
    if (!sx_buf_reserve(b, 1))
        return;
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}
