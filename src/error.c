/* error.c - struct sx_error setters, sx_strerror(), sx_version() */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum sx_status sx_error_set(struct sx_error *err, enum sx_status code, const char *source,
                            const char *fmt, ...) {
    if (err == NULL || err->code != SX_OK)
        return code; /* the first error wins */
    err->code = code;
    err->rank = -1;
    snprintf(err->source, sizeof err->source, "%s", source ? source : "");
    char raw[sizeof err->text];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    /* One line, whatever a file name or HDF5's text holds: control characters are
     * written as \n, \t, \r or \xHH (cut short at the end of 'text'). */
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)raw; *p != '\0'; p++) {
        char esc[5] = {(char)*p, '\0'};
        if (*p < 0x20 || *p == 0x7f) {
            if (*p == '\n' || *p == '\t' || *p == '\r')
                snprintf(esc, sizeof esc, "\\%c",
                         *p == '\n'   ? 'n'
                         : *p == '\t' ? 't'
                                      : 'r');
            else
                snprintf(esc, sizeof esc, "\\x%02x", *p);
        }
        size_t k = strlen(esc);
        if (n + k >= sizeof err->text)
            break;
        memcpy(err->text + n, esc, k);
        n += k;
    }
    err->text[n] = '\0';
    return code;
}

void sx_error_where(struct sx_error *err, const char *source) {
    if (err != NULL && err->code != SX_OK && err->source[0] == '\0' && source != NULL)
        snprintf(err->source, sizeof err->source, "%s", source);
}

void sx_error_clear(struct sx_error *err) {
    if (err == NULL)
        return;
    memset(err, 0, sizeof *err);
    err->code = SX_OK;
    err->rank = -1;
}

const char *sx_strerror(enum sx_status status) {
    switch (status) {
    case SX_OK:
        return "success";
    case SX_ERR_USAGE:
        return "invalid argument";
    case SX_ERR_NOT_FOUND:
        return "file not found";
    case SX_ERR_OPEN:
        return "cannot open input";
    case SX_ERR_FORMAT:
        return "not a valid scope-profiler run";
    case SX_ERR_UNSUPPORTED:
        return "unsupported format or filter";
    case SX_ERR_NOMEM:
        return "out of memory";
    case SX_ERR_IO:
        return "input/output error";
    case SX_ERR_MPI:
        return "MPI error";
    case SX_ERR_VALUE:
        return "value cannot be written as JSON";
    case SX_ERR_INTERNAL:
        return "internal error";
    case SX_ERR_INTERRUPTED:
        return "interrupted";
    }
    return "unknown error";
}

const char *sx_version(void) { return SX_VERSION_STRING; }
