/* names.c - output file names and run labels, as export_json chooses them */
#include "internal.h"

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

enum sx_status sx_run_label(MPI_Comm comm, const char *input, char **label,
                            struct sx_error *err) {
    enum sx_status st = SX_OK;
    int rank = 0;
    char *text = NULL;
    struct sx_h5 *h5 = NULL;
    struct sx_run *run = NULL;
    if (comm != MPI_COMM_NULL)
        MPI_Comm_rank(comm, &rank);
    *label = NULL;
    if (rank == 0) {
        st = sx_h5_open(MPI_COMM_NULL, input, false, &h5, &run, err);
        if (st == SX_OK) {
            for (size_t i = 0; i < run->metadata.u.obj.n; i++) {
                const struct sx_member *m = &run->metadata.u.obj.items[i];
                if (strcmp(m->key, "label") == 0 && m->value.kind == SX_V_STR &&
                    m->value.u.str.len > 0)
                    text = sx_strdup(m->value.u.str.s);
            }
            if (text == NULL) { /* Path(file_path).stem */
                const char *slash = strrchr(input, '/');
                const char *name = slash ? slash + 1 : input;
                const char *dot = strrchr(name, '.');
                text = dot && dot != name ? sx_strndup(name, (size_t)(dot - name))
                                          : sx_strdup(name);
            }
            if (text == NULL)
                st = sx_error_set(err, SX_ERR_NOMEM, input, "out of memory");
        }
        sx_run_free(run);
        sx_h5_close(h5);
    }
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK) {
        free(text);
        return st;
    }
    if (comm == MPI_COMM_NULL) {
        *label = text;
        return SX_OK;
    }
    /* NOTE: collective: every rank learns rank 0's label */
    int n = rank == 0 ? (int)strlen(text) : 0;
    MPI_Bcast(&n, 1, MPI_INT, 0, comm);
    if (rank != 0)
        text = sx_calloc((size_t)n + 1, 1);
    int ok = text != NULL, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    if (!all) {
        free(text);
        return sx_error_set(err, SX_ERR_NOMEM, input, "out of memory");
    }
    MPI_Bcast(text, n, MPI_CHAR, 0, comm);
    *label = text;
    return SX_OK;
}
