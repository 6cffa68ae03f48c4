/* buf.h - a growable byte buffer: the bytes every writer appends to */
#ifndef SX_BUF_H
#define SX_BUF_H

#include "internal.h"

/* A growable byte buffer. Zero-initialise, or sx_buf_init(). */
struct sx_buf {
    char *data;
    size_t len;
    size_t cap;
    bool failed; /* an allocation failed; further appends are dropped */
    /* Its storage is whole pages of its own (sx_pages_alloc; grows so: sx_buf_align),
     * 'front' bytes of them before 'data': an output's unwritten bytes, which the text
     * appended goes after (sx_out_lend). Kept by sx_buf_reset; 'cap' counts from
     * 'data'. */
    bool aligned;
    size_t front;
};

void sx_buf_init(struct sx_buf *b);
void sx_buf_free(struct sx_buf *b);
void sx_buf_reset(struct sx_buf *b);
/* Make room for 'extra' more bytes; false (and b->failed) on allocation failure. */
bool sx_buf_reserve(struct sx_buf *b, size_t extra);
void sx_buf_append(struct sx_buf *b, const void *p, size_t n);
void sx_buf_puts(struct sx_buf *b, const char *s);
void sx_buf_putc(struct sx_buf *b, char c);
/* An empty buffer whose storage begins at a page and stays so as it grows, with room
 * for 'cap' bytes; false (and b->failed) on allocation failure. Frees what 'b' held. */
bool sx_buf_align(struct sx_buf *b, size_t cap);
/* An aligned buffer grown past room for 'cap' bytes (and its text) back to it: its
 * pages beyond let go. Nothing else changes; a refusal keeps them. */
void sx_buf_align_trim(struct sx_buf *b, size_t cap);

#endif /* SX_BUF_H */
