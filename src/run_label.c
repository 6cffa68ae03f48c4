/* run_label.c - run labels and the output file names made of them, as export_json
 * chooses them: the label read from the run, its slug */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "run_label.h"

#include "h5_read.h"
#include "json_value.h"
#include "mpi_util.h"
#include "run.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *sx_output_path(const char *base, const char *label, size_t n_runs) {
    /* stem, dot, extension = Path(base).name.partition(".") */
    const char *slash = strrchr(base, '/');
    size_t dir_len = slash ? (size_t)(slash - base) + 1 : 0;
    const char *name = base + dir_len;
    const char *dot = strchr(name, '.');
    size_t stem_len = dot ? (size_t)(dot - name) : strlen(name);
    const char *suffix = dot ? dot : ".json";
    char *slug = NULL;
    if (n_runs > 1) {
        slug = sx_slug(label ? label : "");
        if (slug == NULL)
            return NULL;
    }
    size_t n = dir_len + stem_len + strlen(suffix) + (slug ? strlen(slug) + 1 : 0) + 1;
    char *out = sx_malloc(n);
    if (out != NULL)
        snprintf(out, n, "%.*s%.*s%s%s%s", (int)dir_len, base, (int)stem_len, name,
                 slug ? "_" : "", slug ? slug : "", suffix);
    free(slug);
    return out;
}

/* The label of the run in 'input', read on this process alone. New string in '*label'. */
static enum sx_status read_label(const char *input, char **label, struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_h5 *h5 = NULL;
    struct sx_run *run = NULL;
    char *text = NULL;
    st = sx_h5_open(MPI_COMM_NULL, input, false, &h5, &run, err);
    if (st != SX_OK)
        goto out;
    for (size_t i = 0; i < run->metadata.u.obj.n && text == NULL; i++) {
        const struct sx_member *m = &run->metadata.u.obj.items[i];
        if (strcmp(m->key, "label") == 0 && m->value.kind == SX_V_STR &&
            m->value.u.str.len > 0)
            text = sx_strdup(m->value.u.str.s);
    }
    if (text == NULL) { /* Path(file_path).stem */
        const char *slash = strrchr(input, '/');
        const char *name = slash ? slash + 1 : input;
        const char *dot = strrchr(name, '.');
        text =
            dot && dot != name ? sx_strndup(name, (size_t)(dot - name)) : sx_strdup(name);
    }
    SX_CHECK(text != NULL, SX_ERR_NOMEM, err, input, "%s: out of memory", input);
out:
    sx_run_free(run);
    sx_h5_close(h5);
    *label = text;
    return st;
}

enum sx_status sx_run_label(MPI_Comm comm, const char *input, char **label,
                            struct sx_error *err) {
    enum sx_status st = SX_OK;
    MPI_Comm c = MPI_COMM_NULL;
    int rank = 0, n = 0;
    char *text = NULL;
    sx_error_clear(err);
    *label = NULL;
    /* NOTE: collective: rank 0 reads the label, every rank learns it */
    st = sx_comm_dup(comm, &c, err);
    if (st != SX_OK)
        return st;
    if (c != MPI_COMM_NULL)
        st = sx_mpi_check(MPI_Comm_rank(c, &rank), "MPI_Comm_rank", err);
    if (st == SX_OK && rank == 0) {
        st = read_label(input, &text, err);
        n = text != NULL ? (int)strlen(text) : 0;
    }
    st = sx_all_ok(c, st, err);
    if (st != SX_OK || c == MPI_COMM_NULL)
        goto out;
    st = sx_mpi_check(MPI_Bcast(&n, 1, MPI_INT, 0, c), "MPI_Bcast", err);
    if (st == SX_OK && rank != 0) {
        text = sx_calloc((size_t)n + 1, 1);
        if (text == NULL)
            st = sx_error_set(err, SX_ERR_NOMEM, input, "%s: out of memory", input);
    }
    st = sx_all_ok(c, st, err);
    if (st == SX_OK)
        st = sx_mpi_check(MPI_Bcast(text, n, MPI_CHAR, 0, c), "MPI_Bcast", err);
    st = sx_all_ok(c, st, err);
out:
    sx_comm_free(&c);
    if (st != SX_OK) {
        free(text);
        text = NULL;
    }
    *label = text;
    return st;
}

/* _filename_slug: re.sub(r"[^\w.+-]+", "_", label).strip("_") or the label itself. */
char *sx_slug(const char *label) {
    int code = 0;
    PCRE2_SIZE off = 0;
    char *res = NULL;
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR) "[^\\w.+-]+", PCRE2_ZERO_TERMINATED,
                      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &off, NULL);
    if (re == NULL)
        return NULL;
    size_t n = strlen(label);
    PCRE2_SIZE outlen = n * 2 + 16;
    PCRE2_UCHAR *buf = sx_malloc(outlen);
    if (buf == NULL)
        goto out;
    int rc = pcre2_substitute(re, (PCRE2_SPTR)label, n, 0, PCRE2_SUBSTITUTE_GLOBAL, NULL,
                              NULL, (PCRE2_SPTR) "_", 1, buf, &outlen);
    if (rc < 0)
        goto out;
    const char *s = (const char *)buf;
    size_t len = outlen;
    while (len > 0 && *s == '_') {
        s++;
        len--;
    }
    while (len > 0 && s[len - 1] == '_')
        len--;
    res = len > 0 ? sx_strndup(s, len) : sx_strdup(label);
out:
    free(buf);
    pcre2_code_free(re);
    return res;
}
