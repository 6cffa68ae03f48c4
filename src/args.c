/* args.c - export options by name, for callers that cannot mirror struct sx_options */
/*
 * Language bindings (the Python and Fortran modules) and anyone who loads
 * the shared library at run time give options as "key" = "value" strings,
 * the command's long option names, so that struct sx_options may change its
 * layout without breaking them.
 */
#include "args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct sx_args {
    int indent;
    int summary;
    int gzip_level;
    enum sx_deflate deflate;
    size_t block_bytes;
    char **include; /* copies */
    size_t n_include;
    char **exclude;
    size_t n_exclude;
    int64_t *ranks; /* NULL: every rank */
    size_t n_ranks;
    enum sx_format format;
    int no_call_paths;
};

struct sx_args *sx_args_new(void) {
    struct sx_args *a = sx_calloc(1, sizeof *a);
    if (a == NULL)
        return NULL;
    struct sx_options o;
    sx_options_init(&o); /* the defaults live in one place */
    a->indent = o.indent;
    a->summary = o.summary;
    a->gzip_level = o.gzip_level;
    a->deflate = o.deflate;
    a->block_bytes = o.block_bytes;
    return a;
}

static void free_list(char **v, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void sx_args_free(struct sx_args *a) {
    if (a == NULL)
        return;
    free_list(a->include, a->n_include);
    free_list(a->exclude, a->n_exclude);
    free(a->ranks);
    free(a);
}

/* A whole decimal number in lo..hi, or -1. */
static int parse_long(const char *s, long lo, long hi, long *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* "0,2,5-7" -> a new array of ranks; SX_ERR_USAGE or SX_ERR_NOMEM on failure. */
static enum sx_status parse_ranks(const char *s, int64_t **out, size_t *n_out) {
    size_t cap = 16, n = 0;
    int64_t *v = sx_malloc(cap * sizeof *v);
    enum sx_status st = SX_ERR_USAGE;
    if (v == NULL)
        return SX_ERR_NOMEM;
    const char *p = s;
    if (*p == '\0')
        goto bad;
    while (*p != '\0') {
        char *end = NULL;
        if (*p < '0' || *p > '9') /* strtoll would take a sign or blanks */
            goto bad;
        errno = 0;
        long long lo = strtoll(p, &end, 10);
        if (errno != 0)
            goto bad;
        long long hi = lo;
        p = end;
        if (*p == '-') {
            if (p[1] < '0' || p[1] > '9')
                goto bad;
            hi = strtoll(p + 1, &end, 10);
            if (errno != 0 || hi < lo || hi - lo > 10000000)
                goto bad;
            p = end;
        }
        for (long long r = lo; r <= hi; r++) {
            if (n == cap) {
                int64_t *nv = sx_realloc(v, 2 * cap * sizeof *nv);
                if (nv == NULL) {
                    st = SX_ERR_NOMEM;
                    goto bad;
                }
                v = nv;
                cap *= 2;
            }
            v[n++] = r;
        }
        if (*p == ',' && p[1] != '\0')
            p++;
        else if (*p != '\0')
            goto bad;
    }
    *out = v;
    *n_out = n;
    return SX_OK;
bad:
    free(v);
    return st;
}

static enum sx_status push(char ***list, size_t *n, const char *s) {
    char *copy = sx_strdup(s);
    char **nl = copy != NULL ? sx_realloc(*list, (*n + 1) * sizeof *nl) : NULL;
    if (nl == NULL) {
        free(copy);
        return SX_ERR_NOMEM;
    }
    nl[(*n)++] = copy;
    *list = nl;
    return SX_OK;
}

/* A switch: absent value, "1", "true", "yes", "on" or "0", "false", "no", "off". */
static int parse_bool(const char *s, int *out) {
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    if (s == NULL) {
        *out = 1;
        return 0;
    }
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcmp(s, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcmp(s, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

enum sx_status sx_args_set(struct sx_args *a, const char *key, const char *value,
                           struct sx_error *err) {
    enum sx_status st = SX_OK;
    long v = 0;
    sx_error_clear(err);
    SX_CHECK(a != NULL && key != NULL, SX_ERR_USAGE, err, "", "sx_args_set: no %s",
             a == NULL ? "arguments" : "key");
    if (strcmp(key, "summary") == 0) {
        SX_CHECK(parse_bool(value, &a->summary) == 0, SX_ERR_USAGE, err, "",
                 "option summary takes 1 or 0 (true or false), not '%s'", value);
        return SX_OK;
    }
    if (strcmp(key, "no-call-paths") == 0) {
        SX_CHECK(parse_bool(value, &a->no_call_paths) == 0, SX_ERR_USAGE, err, "",
                 "option no-call-paths takes 1 or 0 (true or false), not '%s'", value);
        return SX_OK;
    }
    SX_CHECK(value != NULL, SX_ERR_USAGE, err, "", "option %s needs a value", key);
    if (strcmp(key, "indent") == 0) {
        SX_CHECK(parse_long(value, 0, 1000, &v) == 0, SX_ERR_USAGE, err, "",
                 "option indent takes a number from 0 to 1000, not '%s'", value);
        a->indent = (int)v;
    } else if (strcmp(key, "gzip-level") == 0) {
        SX_CHECK(parse_long(value, 0, 9, &v) == 0, SX_ERR_USAGE, err, "",
                 "option gzip-level takes a number from 0 to 9, not '%s'", value);
        a->gzip_level = (int)v;
    } else if (strcmp(key, "deflate") == 0) {
        bool zlib = strcmp(value, "zlib") == 0, isal = strcmp(value, "isal") == 0;
        SX_CHECK(zlib || isal, SX_ERR_USAGE, err, "",
                 "option deflate takes zlib or isal, not '%s'", value);
        a->deflate = zlib ? SX_DEFLATE_ZLIB : SX_DEFLATE_ISAL;
    } else if (strcmp(key, "block-size") == 0) {
        SX_CHECK(parse_long(value, 1024, 1L << 30, &v) == 0, SX_ERR_USAGE, err, "",
                 "option block-size takes bytes from 1024 to 1073741824, not '%s'",
                 value);
        a->block_bytes = (size_t)v;
    } else if (strcmp(key, "ranks") == 0) {
        int64_t *ranks = NULL;
        size_t n = 0;
        st = parse_ranks(value, &ranks, &n);
        SX_CHECK(st != SX_ERR_NOMEM, SX_ERR_NOMEM, err, "", "out of memory");
        SX_CHECK(st == SX_OK, SX_ERR_USAGE, err, "",
                 "option ranks takes a list like 0,2,5-7, not '%s'", value);
        free(a->ranks); /* the last list given counts, as on the command line */
        a->ranks = ranks;
        a->n_ranks = n;
    } else if (strcmp(key, "format") == 0) {
        static const char *const names[] = {
            "json", "chrome-trace", "speedscope", "region-statistics",
            "prof", "flamegraph",   "perfetto",   "otf2"};
        size_t f = 0;
        while (f < sizeof names / sizeof names[0] && strcmp(value, names[f]) != 0)
            f++;
        SX_CHECK(f < sizeof names / sizeof names[0], SX_ERR_USAGE, err, "",
                 "option format takes json, chrome-trace, speedscope, region-statistics, "
                 "prof, flamegraph, perfetto or otf2, not '%s'",
                 value);
        a->format = (enum sx_format)f; /* the names in the enum's order */
    } else if (strcmp(key, "include") == 0 || strcmp(key, "exclude") == 0) {
        bool inc = key[0] == 'i';
        st = push(inc ? &a->include : &a->exclude, inc ? &a->n_include : &a->n_exclude,
                  value);
        SX_CHECK(st == SX_OK, SX_ERR_NOMEM, err, "", "out of memory");
    } else {
        SX_CHECK(false, SX_ERR_USAGE, err, "",
                 "unknown option '%s' (known: indent, summary, ranks, include, exclude, "
                 "gzip-level, deflate, block-size, format, no-call-paths)",
                 key);
    }
out:
    return st;
}

void sx_args_options(const struct sx_args *a, struct sx_options *o) {
    sx_options_init(o);
    if (a == NULL)
        return;
    o->indent = a->indent;
    o->summary = a->summary;
    o->gzip_level = a->gzip_level;
    o->deflate = a->deflate;
    o->block_bytes = a->block_bytes;
    o->include = (const char *const *)a->include;
    o->n_include = a->n_include;
    o->exclude = (const char *const *)a->exclude;
    o->n_exclude = a->n_exclude;
    o->ranks = a->ranks;
    o->n_ranks = a->n_ranks;
    o->format = a->format;
    o->no_call_paths = a->no_call_paths;
}

enum sx_status sx_export_args(MPI_Comm comm, const char *input, const char *output,
                              const struct sx_args *a, struct sx_error *err) {
    struct sx_options o;
    sx_args_options(a, &o);
    return sx_export(comm, input, output, &o, err);
}

enum sx_status sx_export_args_f(const MPI_Fint *fcomm, const char *input,
                                const char *output, const struct sx_args *a,
                                struct sx_error *err) {
    /* MPI_Comm_f2c only with a handle: the NULL mode makes no MPI call at all */
    MPI_Comm comm = fcomm != NULL ? MPI_Comm_f2c(*fcomm) : MPI_COMM_NULL;
    return sx_export_args(comm, input, output, a, err);
}
