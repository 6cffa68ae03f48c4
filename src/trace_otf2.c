/* trace_otf2.c - the OTF2 trace archive: every call an Enter and a Leave event, written
 * collectively through the OTF2 library; the only file that includes <otf2/otf2.h> */
#include "cli_support.h"
#include "mpi_util.h"
#include "out_file.h"
#include "pipeline.h"
#include "run.h"
#include "stop.h"
#include "trace.h"
#include "trace_calls.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <otf2/otf2.h>

/*
 * The archive OUT.otf2 is three names beside each other: the anchor OUT.otf2, the
 * global definitions OUT.def and the directory OUT/ of one event file per location
 * ("<location>.evt"). OTF2 writes them under 'archivePath/archiveName': here a new
 * hidden directory beside OUT (".OUT.otf2.XXXXXX"), from which rank 0 renames them into
 * place once the archive is closed, the anchor last. A failed export removes that
 * directory and nothing else.
 *
 * Locations: file rank R is a location group "rank R" (their ids dense, 0, 1, ..., in
 * the order of the ranks, as readers want them); its lanes, in the Chrome
 * trace's order (the rank's own lane, its tasks, its threads), are locations
 * R * 2^32 + j, so every process numbers its own without asking the others.
 */

/* Events are buffered by OTF2 in chunks of this size, written out when the writer's
 * pool of MAX_CHUNKS is full (one location is open at a time on a process). */
#define EVT_CHUNK ((uint64_t)1 << 20)
#define DEF_CHUNK ((uint64_t)4 << 20)
#define LOC_SHIFT 32

/* One location, as its process reports it to rank 0: [rank, lane, events]. */
enum { REC = 3 };

struct otf2_state {
    struct sx_trace t;
    int64_t *ranks; /* the selected file ranks, each once, ascending (OTF2 readers want
                     * definitions in the order of their ids) */
    size_t nranks;
};

static void otf2_state_free(void *ctx) {
    struct otf2_state *s = ctx;
    if (s == NULL)
        return;
    free(s->ranks);
    sx_trace_free(&s->t);
    free(s);
}

/* ------------------------------------------------------------------ */
/* OTF2's collectives over the export's communicator                   */

/*
 * Ours rather than OTF2_MPI_Collectives.h's, whose set-up allocates and then calls the
 * collective MPI_Comm_dup: an allocation failing there on one process left the others in
 * the dup for ever. These allocate nothing once made (the displacements of the v-calls
 * are made, on every process, before the ranks agree to go on), and use the export's own
 * communicator: OTF2 calls them at the same points on every process, in the order of the
 * export's own collectives.
 */
struct OTF2_CollectiveContext {
    MPI_Comm comm;
    int size, rank;
    int *displs; /* 'size' of them, for gatherv and scatterv */
    /* After a failure every process closes its archive alone, as the one process of
     * a serial archive (no MPI call), whether or not the others got as far. */
    bool alone;
};

/* Bytes of one element of 't' (alone: the collectives copy). */
static size_t coll_bytes(OTF2_Type t) {
    switch (t) {
    case OTF2_TYPE_UINT8:
    case OTF2_TYPE_INT8:
        return 1;
    case OTF2_TYPE_UINT16:
    case OTF2_TYPE_INT16:
        return 2;
    case OTF2_TYPE_UINT32:
    case OTF2_TYPE_INT32:
    case OTF2_TYPE_FLOAT:
        return 4;
    default:
        return 8;
    }
}

/* What a collective of one process does: its own data moved from 'in' to 'out'. */
static OTF2_CallbackCode coll_copy(void *out, const void *in, uint32_t n, OTF2_Type t) {
    if (n > 0 && out != in)
        memmove(out, in, (size_t)n * coll_bytes(t));
    return OTF2_CALLBACK_SUCCESS;
}

static MPI_Datatype coll_type(OTF2_Type t) {
    switch (t) {
    case OTF2_TYPE_UINT8:
        return MPI_UINT8_T;
    case OTF2_TYPE_INT8:
        return MPI_INT8_T;
    case OTF2_TYPE_UINT16:
        return MPI_UINT16_T;
    case OTF2_TYPE_INT16:
        return MPI_INT16_T;
    case OTF2_TYPE_UINT32:
        return MPI_UINT32_T;
    case OTF2_TYPE_INT32:
        return MPI_INT32_T;
    case OTF2_TYPE_UINT64:
        return MPI_UINT64_T;
    case OTF2_TYPE_INT64:
        return MPI_INT64_T;
    case OTF2_TYPE_FLOAT:
        return MPI_FLOAT;
    case OTF2_TYPE_DOUBLE:
        return MPI_DOUBLE;
    default:
        return MPI_DATATYPE_NULL;
    }
}

static OTF2_CallbackCode coll_rc(int rc) {
    return rc == MPI_SUCCESS ? OTF2_CALLBACK_SUCCESS : OTF2_CALLBACK_ERROR;
}

static OTF2_CallbackCode coll_get_size(void *u, OTF2_CollectiveContext *c,
                                       uint32_t *size) {
    (void)u;
    *size = c->alone ? 1 : (uint32_t)c->size;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode coll_get_rank(void *u, OTF2_CollectiveContext *c,
                                       uint32_t *rank) {
    (void)u;
    *rank = c->alone ? 0 : (uint32_t)c->rank;
    return OTF2_CALLBACK_SUCCESS;
}

/* Asked for by the SION substrate only (files shared by processes); the archive is
 * written with the POSIX one, a file per location. */
static OTF2_CallbackCode coll_create_local(void *u, OTF2_CollectiveContext **local,
                                           OTF2_CollectiveContext *global, uint32_t grank,
                                           uint32_t gsize, uint32_t lrank, uint32_t lsize,
                                           uint32_t file, uint32_t nfiles) {
    (void)u, (void)global, (void)grank, (void)gsize, (void)lrank, (void)lsize;
    (void)file, (void)nfiles;
    *local = NULL;
    return OTF2_CALLBACK_ERROR;
}

static OTF2_CallbackCode coll_free_local(void *u, OTF2_CollectiveContext *local) {
    (void)u, (void)local;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode coll_barrier(void *u, OTF2_CollectiveContext *c) {
    (void)u;
    return c->alone ? OTF2_CALLBACK_SUCCESS : coll_rc(MPI_Barrier(c->comm));
}

static OTF2_CallbackCode coll_bcast(void *u, OTF2_CollectiveContext *c, void *data,
                                    uint32_t n, OTF2_Type t, uint32_t root) {
    (void)u;
    if (c->alone)
        return OTF2_CALLBACK_SUCCESS;
    return coll_rc(MPI_Bcast(data, (int)n, coll_type(t), (int)root, c->comm));
}

static OTF2_CallbackCode coll_gather(void *u, OTF2_CollectiveContext *c, const void *in,
                                     void *out, uint32_t n, OTF2_Type t, uint32_t root) {
    (void)u;
    if (c->alone)
        return coll_copy(out, in, n, t);
    return coll_rc(MPI_Gather(in, (int)n, coll_type(t), out, (int)n, coll_type(t),
                              (int)root, c->comm));
}

/* The displacements of 'counts' (root only). */
static const int *displs_of(OTF2_CollectiveContext *c, const uint32_t *counts, int root) {
    if (c->rank != root)
        return NULL;
    int at = 0;
    for (int i = 0; i < c->size; i++) {
        c->displs[i] = at;
        at += (int)counts[i];
    }
    return c->displs;
}

static OTF2_CallbackCode coll_gatherv(void *u, OTF2_CollectiveContext *c, const void *in,
                                      uint32_t nin, void *out, const uint32_t *nout,
                                      OTF2_Type t, uint32_t root) {
    (void)u;
    if (c->alone)
        return coll_copy(out, in, nin, t);
    const int *d = displs_of(c, nout, (int)root);
    return coll_rc(MPI_Gatherv(in, (int)nin, coll_type(t), out, (const int *)nout, d,
                               coll_type(t), (int)root, c->comm));
}

static OTF2_CallbackCode coll_scatter(void *u, OTF2_CollectiveContext *c, const void *in,
                                      void *out, uint32_t n, OTF2_Type t, uint32_t root) {
    (void)u;
    if (c->alone)
        return coll_copy(out, in, n, t);
    return coll_rc(MPI_Scatter(in, (int)n, coll_type(t), out, (int)n, coll_type(t),
                               (int)root, c->comm));
}

static OTF2_CallbackCode coll_scatterv(void *u, OTF2_CollectiveContext *c, const void *in,
                                       const uint32_t *nin, void *out, uint32_t nout,
                                       OTF2_Type t, uint32_t root) {
    (void)u;
    if (c->alone)
        return coll_copy(out, in, nout, t);
    const int *d = displs_of(c, nin, (int)root);
    return coll_rc(MPI_Scatterv(in, (const int *)nin, d, coll_type(t), out, (int)nout,
                                coll_type(t), (int)root, c->comm));
}

static void coll_release(void *u, OTF2_CollectiveContext *global,
                         OTF2_CollectiveContext *local) {
    (void)u, (void)global, (void)local; /* the context is the export's, freed by it */
}

static const OTF2_CollectiveCallbacks coll_callbacks = {
    coll_release,    coll_get_size, coll_get_rank, coll_create_local,
    coll_free_local, coll_barrier,  coll_bcast,    coll_gather,
    coll_gatherv,    coll_scatter,  coll_scatterv};

/* ------------------------------------------------------------------ */
/* OTF2's errors as ours                                               */

/* The first error OTF2 reported, for the message; and whether one of our allocations for
 * it failed (OTF2 reports that as a failure of what it was doing). */
struct otf2_errors {
    char text[512];
    bool nomem;
};

static OTF2_ErrorCode on_error(void *user, const char *file, uint64_t line,
                               const char *function, OTF2_ErrorCode code, const char *fmt,
                               va_list va) {
    struct otf2_errors *e = user;
    (void)file;
    (void)line;
    (void)function;
    if (e != NULL && e->text[0] == '\0') {
        char msg[400] = "";
        if (fmt != NULL)
            vsnprintf(msg, sizeof msg, fmt, va);
        snprintf(e->text, sizeof e->text, "%s%s%s", OTF2_Error_GetDescription(code),
                 msg[0] ? ": " : "", msg);
    }
    return code;
}

/*
 * OTF2's error callback is the process's: the library leaves it alone (a profiler that
 * calls us may write its own OTF2 traces with its own), and reads a failure's
 * description from its code. The command owns its process: it sets this quiet one
 * (sx_otf2_quiet_errors), so OTF2 prints nothing and the export's one line says it all.
 */
static struct otf2_errors cli_errors; /* the command's: its export's first OTF2 message */
static bool cli_quiet; /* the command set the callback (one export at a time) */
void sx_otf2_quiet_errors(void) {
    cli_quiet = true;
    OTF2_Error_RegisterCallback(on_error, &cli_errors);
}

/* 'rc' of OTF2 call 'what' as a status (SX_OK, or an error naming the archive). */
static enum sx_status otf2_check(OTF2_ErrorCode rc, const char *what, const char *out,
                                 const struct otf2_errors *e, struct sx_error *err) {
    if (rc == OTF2_SUCCESS)
        return SX_OK;
    if (e->nomem)
        return sx_error_set(err, SX_ERR_NOMEM, out,
                            "%s: out of memory writing the OTF2 archive", out);
    if (!e->text[0] && cli_quiet &&
        cli_errors.text[0]) /* the command's callback saw it */
        e = &cli_errors;
    return sx_error_set(err, SX_ERR_IO, out,
                        "%s: writing the OTF2 archive: %s failed: %s", out, what,
                        e->text[0] ? e->text : OTF2_Error_GetDescription(rc));
}

static OTF2_FlushType pre_flush(void *user, OTF2_FileType type, OTF2_LocationRef loc,
                                void *caller, bool final) {
    (void)user;
    (void)type;
    (void)loc;
    (void)caller;
    (void) final;
    return OTF2_FLUSH; /* a full chunk goes to its file: memory stays one chunk */
}

/* No post-flush callback: OTF2 then records no BufferFlush event (a flush here is not
 * the measured program's). */
static OTF2_FlushCallbacks flush_callbacks = {pre_flush, NULL};

/*
 * OTF2 keeps a writer's chunks in memory until its pool (128 MiB a writer by default)
 * runs out, and only then flushes them. Our pool: MAX_CHUNKS chunks a writer, so that a
 * full pool is written out (pre_flush) and reused: a process's memory is a few chunks,
 * whatever the number of events.
 */
#define MAX_CHUNKS 2

struct chunk_pool {
    void *chunk[MAX_CHUNKS];
    size_t n;
};

static void *pool_alloc(void *user, OTF2_FileType type, OTF2_LocationRef loc,
                        void **per_buffer, uint64_t size) {
    struct otf2_errors *e = user;
    (void)type;
    (void)loc;
    struct chunk_pool *p = *per_buffer;
    if (p == NULL) {
        p = sx_calloc(1, sizeof *p);
        if (p == NULL) {
            e->nomem = true;
            return NULL;
        }
        *per_buffer = p;
    }
    if (p->n == MAX_CHUNKS)
        return NULL; /* the pool is full: OTF2 flushes it and frees all */
    void *c = sx_malloc((size_t)size);
    if (c != NULL)
        p->chunk[p->n++] = c;
    else
        e->nomem = true;
    return c;
}

static void pool_free_all(void *user, OTF2_FileType type, OTF2_LocationRef loc,
                          void **per_buffer, bool final) {
    (void)user;
    (void)type;
    (void)loc;
    struct chunk_pool *p = *per_buffer;
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->n; i++)
        free(p->chunk[i]);
    p->n = 0;
    if (final) {
        free(p);
        *per_buffer = NULL;
    }
}

static OTF2_MemoryCallbacks memory_callbacks = {pool_alloc, pool_free_all};

/* ------------------------------------------------------------------ */
/* The archive's names                                                 */

struct names {
    char *base;   /* OUT: the output without ".otf2" */
    char *anchor; /* OUT.otf2, OUT.def, OUT/ */
    char *def;
    char *dir;
    char *tmpdir;   /* where OTF2 writes it (rank 0 made it; every rank knows it) */
    char *name;     /* the archive's name in 'tmpdir': OUT's last component */
    bool made;      /* rank 0 created 'tmpdir' */
    bool committed; /* renamed into place */
};

static void names_free(struct names *n) {
    free(n->base);
    free(n->anchor);
    free(n->def);
    free(n->dir);
    free(n->tmpdir);
    free(n->name);
}

static char *cat(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *s = sx_malloc(la + lb + 1);
    if (s != NULL) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb + 1);
    }
    return s;
}

static bool ends_with(const char *s, const char *sfx) {
    size_t n = strlen(s), m = strlen(sfx);
    return n >= m && strcmp(s + n - m, sfx) == 0;
}

/* OUT from the output 'path': the anchor is OUT.otf2 (".otf2" is added when missing). */
static enum sx_status names_of(const char *path, struct names *n, struct sx_error *err) {
    enum sx_status st = SX_OK;
    n->base = sx_strdup(path);
    SX_CHECK(n->base != NULL, SX_ERR_NOMEM, err, path, "out of memory");
    if (ends_with(n->base, ".otf2"))
        n->base[strlen(n->base) - 5] = '\0';
    const char *last = strrchr(n->base, '/') ? strrchr(n->base, '/') + 1 : n->base;
    SX_CHECK(last[0] != '\0' && strcmp(last, ".") != 0 && strcmp(last, "..") != 0,
             SX_ERR_USAGE, err, path,
             "%s: an OTF2 archive needs a file name, as OUT.otf2", path);
    n->anchor = cat(n->base, ".otf2");
    n->def = cat(n->base, ".def");
    n->dir = sx_strdup(n->base);
    n->name = sx_strdup(last);
    SX_CHECK(n->anchor && n->def && n->dir && n->name, SX_ERR_NOMEM, err, path,
             "out of memory");
out:
    return st;
}

/* Whether 'name' is one of the files OTF2 writes into an archive's directory. */
static bool otf2_file(const char *name) {
    return ends_with(name, ".evt") || ends_with(name, ".def") ||
           ends_with(name, ".snap") || ends_with(name, ".thumb");
}

/*
 * An existing OUT/ is replaced only when it is an archive's: OUT.otf2 is there, and it
 * holds only the files OTF2 writes. Anything else there is the user's: refused.
 */
static enum sx_status check_old_dir(const struct names *n, struct sx_error *err) {
    struct stat sb;
    if (lstat(n->dir, &sb) != 0)
        return SX_OK;
    bool ok = S_ISDIR(sb.st_mode) && stat(n->anchor, &sb) == 0;
    DIR *d = ok ? opendir(n->dir) : NULL;
    ok = d != NULL;
    for (struct dirent *e; ok && (e = readdir(d)) != NULL;)
        ok = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
             otf2_file(e->d_name);
    if (d != NULL)
        closedir(d);
    if (ok)
        return SX_OK;
    return sx_error_set(err, SX_ERR_USAGE, n->dir,
                        "%s: the archive's directory %s/ exists and is not an OTF2 "
                        "archive's; refusing to replace it",
                        n->anchor, n->dir);
}

/* Remove directory 'path' and what it holds, two levels deep (an archive's). */
static void remove_tree(const char *path, int depth) {
    DIR *d = opendir(path);
    if (d != NULL) {
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char *sub = sx_malloc(strlen(path) + strlen(e->d_name) + 2);
            if (sub == NULL)
                continue;
            sprintf(sub, "%s/%s", path, e->d_name);
            struct stat sb;
            if (depth > 0 && lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode))
                remove_tree(sub, depth - 1);
            else
                unlink(sub);
            free(sub);
        }
        closedir(d);
    }
    rmdir(path);
}

/* Rank 0: check what the archive replaces; make the directory it is written in. */
static enum sx_status names_prepare(struct names *n, struct sx_error *err) {
    enum sx_status st = SX_OK;
    char *final = NULL, *probe = NULL;
    struct stat old;
    /* the anchor and the definitions: where a file there may be replaced */
    st = sx_out_target(n->anchor, &final, &old, err);
    free(final);
    final = NULL;
    if (st == SX_OK)
        st = sx_out_target(n->def, &final, &old, err);
    if (st == SX_OK)
        st = check_old_dir(n, err);
    if (st != SX_OK)
        goto out;
    /* the parent directories, as the other outputs' */
    probe = sx_strdup(n->base);
    SX_CHECK(probe != NULL, SX_ERR_NOMEM, err, n->anchor, "out of memory");
    for (char *q = probe + 1; *q; q++) {
        if (*q != '/')
            continue;
        *q = '\0';
        struct stat sb;
        SX_CHECK((mkdir(probe, 0777) == 0 || errno == EEXIST) && stat(probe, &sb) == 0 &&
                     S_ISDIR(sb.st_mode),
                 SX_ERR_IO, err, probe, "cannot create directory %s: %s", probe,
                 errno == EEXIST ? "a file of that name is in the way" : strerror(errno));
        *q = '/';
    }
    size_t dl = strlen(n->base) - strlen(n->name);
    n->tmpdir = sx_malloc(dl + strlen(n->name) + 16);
    SX_CHECK(n->tmpdir != NULL, SX_ERR_NOMEM, err, n->anchor, "out of memory");
    sprintf(n->tmpdir, "%.*s.%s.otf2.XXXXXX", (int)dl, n->base, n->name);
    SX_CHECK(mkdtemp(n->tmpdir) != NULL, SX_ERR_IO, err, n->anchor,
             "%s: cannot create a directory beside it: %s", n->anchor, strerror(errno));
    n->made = true;
out:
    free(final);
    free(probe);
    return st;
}

/* A path in the temporary directory. */
static char *in_tmp(const struct names *n, const char *sfx) {
    char *s = sx_malloc(strlen(n->tmpdir) + strlen(n->name) + strlen(sfx) + 2);
    if (s != NULL)
        sprintf(s, "%s/%s%s", n->tmpdir, n->name, sfx);
    return s;
}

/*
 * Rank 0: the complete archive renamed into place: the directory (an old one moved
 * into the temporary directory first, removed with it), the definitions, the anchor
 * last, so that an anchor is never older than what it names.
 */
static enum sx_status names_commit(struct names *n, struct sx_error *err) {
    enum sx_status st = SX_OK;
    char *dir = in_tmp(n, ""), *def = in_tmp(n, ".def"), *anchor = in_tmp(n, ".otf2");
    char *old = cat(n->tmpdir, "/old");
    bool moved = false;
    SX_CHECK(dir && def && anchor && old, SX_ERR_NOMEM, err, n->anchor, "out of memory");
    st =
        check_old_dir(n, err); /* again: it may have changed while the archive was made */
    if (st != SX_OK)
        goto out;
    struct stat sb;
    /* all three made, before anything is moved */
    SX_CHECK(lstat(dir, &sb) == 0 && lstat(def, &sb) == 0 && lstat(anchor, &sb) == 0,
             SX_ERR_IO, err, n->anchor, "%s: the OTF2 archive is incomplete (%s)",
             n->anchor, strerror(errno));
    if (lstat(n->dir, &sb) == 0) {
        SX_CHECK(rename(n->dir, old) == 0, SX_ERR_IO, err, n->dir,
                 "%s: cannot move the old archive's directory %s/ aside: %s", n->anchor,
                 n->dir, strerror(errno));
        moved = true;
    }
    if (rename(dir, n->dir) != 0) {
        st = sx_error_set(err, SX_ERR_IO, n->dir, "%s: cannot rename %s to %s: %s",
                          n->anchor, dir, n->dir, strerror(errno));
        if (moved)
            rename(old, n->dir); /* the old archive whole again */
        goto out;
    }
    /* from here the old archive is gone: its directory was replaced */
    SX_CHECK(sx_tmp_commit(def, n->def) == 0 && sx_tmp_commit(anchor, n->anchor) == 0,
             errno == EINTR ? SX_ERR_INTERRUPTED : SX_ERR_IO, err, n->anchor,
             "%s: cannot rename the archive into place: %s", n->anchor, strerror(errno));
    n->committed = true;
out:
    free(dir);
    free(def);
    free(anchor);
    free(old);
    return st;
}

/* ------------------------------------------------------------------ */
/* The plan                                                            */

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static enum sx_status otf2_plan(const struct sx_pipe *p, struct sx_doc_state *ds,
                                struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct otf2_state *s = sx_calloc(1, sizeof *s);
    ds->ctx = s;
    ds->free = otf2_state_free;
    if (s == NULL)
        st = sx_error_set(err, SX_ERR_NOMEM, p->run->path, "out of memory");
    st = sx_all_ok(p->comm, st, err);
    if (st != SX_OK)
        return st;
    struct sx_trace *t = &s->t;
    /* Stages: the region order (NOTE: collective). */
    st = sx_pipe_trace_plan(p, t, err);
    t->perf = p->perf;
    t->nperf = p->nperf;                    /* borrowed */
    if (st == SX_OK && p->o->ranks == NULL) /* every rank unless --ranks says */
        st = sx_trace_select_every_rank(t, err);
    if (st == SX_OK && t->nregions == 0)
        st = sx_trace_value_error(t, SX_ERR_VALUE,
                                  "No regions matched the selected filters.", err);
    if (st == SX_OK) {
        s->ranks = sx_malloc((t->nranks + 1) * sizeof *s->ranks);
        if (s->ranks == NULL)
            st = sx_error_set(err, SX_ERR_NOMEM, p->run->path, "out of memory");
    }
    for (size_t k = 0; st == SX_OK && k < t->nranks; k++) {
        if (t->ranks[k] < 0 || t->ranks[k] >= t->run->num_ranks) {
            char msg[64];
            snprintf(msg, sizeof msg, "Invalid rank requested: %" PRId64, t->ranks[k]);
            st = sx_trace_value_error(t, SX_ERR_VALUE, msg, err);
        }
        bool seen = false; /* a rank asked for twice is one location group */
        for (size_t j = 0; j < s->nranks && !seen; j++)
            seen = s->ranks[j] == t->ranks[k];
        if (!seen)
            s->ranks[s->nranks++] = t->ranks[k];
    }
    if (st == SX_OK)
        qsort(s->ranks, s->nranks, sizeof *s->ranks, cmp_i64);
    return st;
}

/* ------------------------------------------------------------------ */
/* The events                                                          */

/* A lane's place in the Chrome trace's order: the rank's lane, tasks, threads. */
static int64_t lane_key(int64_t lane) {
    return lane == -1 ? INT64_MIN : lane >= 0 ? lane : INT64_MAX / 2 + (-2 - lane);
}

/* What a process's share of the ranks came to. */
struct written {
    int64_t *rec; /* REC values per location */
    size_t n, cap;
    int64_t first, last; /* timestamps: the earliest and latest of all */
};

static bool push_rec(struct written *w, int64_t rank, int64_t lane, int64_t events) {
    if (w->n + REC > w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 64;
        int64_t *nv = sx_realloc(w->rec, nc * sizeof *nv);
        if (nv == NULL)
            return false;
        w->rec = nv;
        w->cap = nc;
    }
    w->rec[w->n++] = rank;
    w->rec[w->n++] = lane;
    w->rec[w->n++] = events;
    return true;
}

/* The perf counter totals of 'rank', or NULL. */
static const struct sx_perf_rank *perf_of(const struct sx_trace *t, int64_t rank) {
    for (size_t i = 0; i < t->nperf; i++)
        if (t->perf[i].rank == rank && t->perf[i].n > 0)
            return &t->perf[i];
    return NULL;
}

/*
 * The metrics: a class per (selected rank, perf region), a member per distinct event
 * name of it and "calls" (the Chrome trace's counter dict), numbered the same on every
 * process by walking the selected ranks in order. Calls 'f' on each member.
 */
struct metric_walk {
    uint32_t cls, member;
};

/* The values of a perf region as the Chrome trace's dict: a repeated name keeps its
 * first place and its last value, "calls" is the region's calls, added when missing. */
static size_t perf_dict(const struct sx_perf_region *pr, const char **names,
                        uint64_t *values) {
    size_t n = 0;
    bool calls_seen = false;
    for (size_t e = 0; e < pr->nevents; e++) {
        bool dup = false;
        for (size_t f = 0; f < e && !dup; f++)
            dup = strcmp(pr->event_names[f], pr->event_names[e]) == 0;
        if (dup)
            continue;
        uint64_t val = pr->values[e];
        for (size_t f = e + 1; f < pr->nevents; f++)
            if (strcmp(pr->event_names[f], pr->event_names[e]) == 0)
                val = pr->values[f];
        if (strcmp(pr->event_names[e], "calls") == 0) {
            val = pr->calls;
            calls_seen = true;
        }
        if (names != NULL) {
            names[n] = pr->event_names[e];
            values[n] = val;
        }
        n++;
    }
    if (!calls_seen) {
        if (names != NULL) {
            names[n] = "calls";
            values[n] = pr->calls;
        }
        n++;
    }
    return n;
}

/* The first class and member of selected rank 'rank''s perf regions. */
static struct metric_walk metric_base(const struct otf2_state *s, int64_t rank) {
    struct metric_walk w = {0, 0};
    for (size_t k = 0; k < s->nranks && s->ranks[k] != rank; k++) {
        const struct sx_perf_rank *pf = perf_of(&s->t, s->ranks[k]);
        for (size_t j = 0; pf != NULL && j < pf->n; j++) {
            w.cls++;
            w.member += (uint32_t)perf_dict(&pf->regions[j], NULL, NULL);
        }
    }
    return w;
}

/*
 * A rank's calls in the order their events are written: speedscope's sort, by lane
 * (threads, the rank's own, tasks: so that the first call that does not nest is the one
 * speedscope names), start, longest first, then region order and call order.
 * Sorted SORT_CALLS at a time; more than that are sorted in runs written to unlinked
 * files in the archive's temporary directory and merged, so that a process's memory
 * does not grow with the run.
 */
struct ocall { /* 32 bytes: what the sort moves and writes */
    int64_t start, end;
    uint64_t seq; /* position in region order, call order: the stable tie-break (its
                   * call index in its row is seq less the row's first) */
    int32_t lane; /* -1 the rank's own lane, >= 0 a task, <= -2 thread -2 - lane */
    uint32_t region;
};

static int cmp_ocall(const void *a, const void *b) {
    const struct ocall *x = a, *y = b;
    if (x->lane != y->lane)
        return x->lane < y->lane ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

#define SORT_CALLS ((size_t)1 << 16) /* 3 MiB of calls */
/* SCOPE_EXPORT_OTF2_SORT_CALLS (2 .. SORT_CALLS) sorts fewer at a time: the tests' way
 * to the merge with small runs. */
static size_t sort_calls(void) {
    const char *v = getenv("SCOPE_EXPORT_OTF2_SORT_CALLS");
    long n = v != NULL ? strtol(v, NULL, 10) : 0;
    return n >= 2 && (size_t)n < SORT_CALLS ? (size_t)n : SORT_CALLS;
}
#define MERGE_BYTES ((size_t)4 << 20) /* the merge's read buffers, all runs together */
#define SLICE ((uint64_t)1 << 15)     /* events read from a row at a time */

struct sort_run {
    int fd;           /* the sorter's file, which holds every run */
    uint64_t first;   /* the run's first call in the file */
    uint64_t n, next; /* calls in the run, the next to read into 'buf' */
    struct ocall *buf;
    size_t bn, bi; /* calls in 'buf', the next to hand out */
};

struct sorter {
    const char *dir; /* where runs are written */
    const char *out; /* for messages */
    struct ocall *buf;
    size_t n;
    struct sort_run *runs;
    size_t nruns;
    size_t *heap; /* the merge: run indexes, smallest call first */
    size_t nheap;
    size_t at;     /* in memory (no runs): the next call of 'buf' */
    size_t cap;    /* calls sorted at a time */
    int fd;        /* the runs, one after another (one file: no limit of open files) */
    uint64_t size; /* calls in it */
};

static void sorter_free(struct sorter *so) {
    for (size_t i = 0; i < so->nruns; i++)
        free(so->runs[i].buf);
    if (so->fd >= 0)
        close(so->fd);
    free(so->runs);
    free(so->heap);
    free(so->buf);
    memset(so, 0, sizeof *so);
}

static enum sx_status io_error(const struct sorter *so, const char *what,
                               struct sx_error *err) {
    return sx_error_set(err, SX_ERR_IO, so->out, "%s: sorting the calls in %s: %s: %s",
                        so->out, so->dir, what, strerror(errno));
}

/* The gathered calls sorted into a new run at the end of the sorter's file (created
 * on the first, unlinked at once: nothing is left whatever ends the process). */
static enum sx_status spill(struct sorter *so, struct sx_error *err) {
    enum sx_status st = SX_OK;
    char *name = NULL;
    if (so->n > 1) /* qsort wants a valid array even for none */
        qsort(so->buf, so->n, sizeof *so->buf, cmp_ocall);
    struct sort_run *nr = sx_realloc(so->runs, (so->nruns + 1) * sizeof *nr);
    SX_CHECK(nr != NULL, SX_ERR_NOMEM, err, so->out, "out of memory");
    so->runs = nr;
    if (so->fd < 0) {
        name = cat(so->dir, "/sort.XXXXXX");
        SX_CHECK(name != NULL, SX_ERR_NOMEM, err, so->out, "out of memory");
        so->fd = mkstemp(name);
        if (so->fd < 0) {
            st = io_error(so, "mkstemp", err);
            goto out;
        }
        unlink(name);
    }
    const char *p = (const char *)so->buf;
    for (size_t left = so->n * sizeof *so->buf; left > 0;) {
        ssize_t w = write(so->fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            st = io_error(so, "write", err);
            goto out;
        }
        p += w;
        left -= (size_t)w;
    }
    so->runs[so->nruns++] = (struct sort_run){so->fd, so->size, so->n, 0, NULL, 0, 0};
    so->size += so->n;
    so->n = 0;
out:
    free(name);
    return st;
}

static enum sx_status sorter_add(struct sorter *so, const struct ocall *c,
                                 struct sx_error *err) {
    if (so->buf == NULL) {
        so->cap = sort_calls();
        so->buf = sx_malloc(so->cap * sizeof *so->buf);
        if (so->buf == NULL)
            return sx_error_set(err, SX_ERR_NOMEM, so->out, "out of memory");
    }
    if (so->n == so->cap) {
        enum sx_status st = spill(so, err);
        if (st != SX_OK)
            return st;
    }
    so->buf[so->n++] = *c;
    return SX_OK;
}

/* Refill run 'r''s buffer; false at its end or on a failed read (errno set). */
static bool run_fill(struct sort_run *r) {
    if (r->next == r->n)
        return false;
    size_t want = r->n - r->next < r->bn ? (size_t)(r->n - r->next) : r->bn;
    size_t got = 0;
    while (got < want * sizeof *r->buf) {
        ssize_t n = pread(r->fd, (char *)r->buf + got, want * sizeof *r->buf - got,
                          (off_t)((r->first + r->next) * sizeof *r->buf + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return false;
        }
        got += (size_t)n;
    }
    r->next += want;
    r->bi = 0;
    r->bn = want;
    return true;
}

static bool heap_less(const struct sorter *so, size_t a, size_t b) {
    const struct sort_run *x = &so->runs[so->heap[a]], *y = &so->runs[so->heap[b]];
    return cmp_ocall(&x->buf[x->bi], &y->buf[y->bi]) < 0;
}

static void heap_down(struct sorter *so, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < so->nheap && heap_less(so, l, m))
            m = l;
        if (l + 1 < so->nheap && heap_less(so, l + 1, m))
            m = l + 1;
        if (m == i)
            return;
        size_t tmp = so->heap[i];
        so->heap[i] = so->heap[m];
        so->heap[m] = tmp;
        i = m;
    }
}

/* Every call added: sorted in memory, or the runs' merge set up. */
static enum sx_status sorter_done(struct sorter *so, struct sx_error *err) {
    enum sx_status st = SX_OK;
    if (so->nruns == 0) {
        if (so->n > 1)
            qsort(so->buf, so->n, sizeof *so->buf, cmp_ocall);
        return SX_OK;
    }
    if (so->n > 0 && (st = spill(so, err)) != SX_OK)
        return st;
    free(so->buf);
    so->buf = NULL;
    size_t bn = MERGE_BYTES / sizeof(struct ocall) / so->nruns;
    if (bn < 64)
        bn = 64;
    so->heap = sx_malloc(so->nruns * sizeof *so->heap);
    SX_CHECK(so->heap != NULL, SX_ERR_NOMEM, err, so->out, "out of memory");
    for (size_t i = 0; i < so->nruns; i++) {
        struct sort_run *r = &so->runs[i];
        r->bn = bn;
        r->buf = sx_malloc(bn * sizeof *r->buf);
        SX_CHECK(r->buf != NULL, SX_ERR_NOMEM, err, so->out, "out of memory");
        if (!run_fill(r))
            return io_error(so, "read", err);
        so->heap[so->nheap++] = i;
    }
    for (size_t i = so->nheap / 2; i-- > 0;)
        heap_down(so, i);
out:
    return st;
}

/* The next call in order into '*c': 1, or 0 at the end, or -1 with 'err' set. */
static int sorter_next(struct sorter *so, struct ocall *c, struct sx_error *err) {
    if (so->nruns == 0) {
        if (so->at == so->n)
            return 0;
        *c = so->buf[so->at++];
        return 1;
    }
    if (so->nheap == 0)
        return 0;
    struct sort_run *r = &so->runs[so->heap[0]];
    *c = r->buf[r->bi++];
    if (r->bi == r->bn) {
        errno = 0;
        if (!run_fill(r)) {
            if (errno != 0) {
                io_error(so, "read", err);
                return -1;
            }
            so->heap[0] = so->heap[--so->nheap];
        }
    }
    heap_down(so, 0);
    return 1;
}

/* One location being written: its writer and the calls entered and not yet left. */
struct lane_out {
    OTF2_EvtWriter *ew;
    uint64_t loc, j;
    int64_t lane;
    struct ocall *stack;
    size_t sp, cap;
};

static OTF2_ErrorCode leave_to(struct lane_out *lo, size_t depth) {
    OTF2_ErrorCode rc = OTF2_SUCCESS;
    while (lo->sp > depth && rc == OTF2_SUCCESS) {
        const struct ocall *o = &lo->stack[--lo->sp];
        rc = OTF2_EvtWriter_Leave(lo->ew, NULL, (OTF2_TimeStamp)o->end, o->region);
    }
    return rc;
}

/* Close the location: what is open left; on the first, the perf counters. */
static enum sx_status lane_close(const struct otf2_state *s, OTF2_Archive *ar,
                                 struct lane_out *lo, int64_t rank, int64_t last,
                                 struct written *w, const struct otf2_errors *oe,
                                 const char *out, struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_trace *t = &s->t;
    const char **mnames = NULL;
    uint64_t *mvals = NULL;
    OTF2_MetricValue *mv = NULL;
    OTF2_Type *mtypes = NULL;
    OTF2_ErrorCode rc = leave_to(lo, 0);
    const struct sx_perf_rank *pf = perf_of(t, rank);
    const struct metric_walk mw = metric_base(s, rank);
    /* the perf counter totals, after the rank's last call (its first location) */
    for (size_t q = 0; lo->j == 0 && pf != NULL && q < pf->n && rc == OTF2_SUCCESS; q++) {
        const struct sx_perf_region *pr = &pf->regions[q];
        free(mnames);
        free(mvals);
        free(mv);
        free(mtypes);
        mnames = sx_calloc(pr->nevents + 1, sizeof *mnames);
        mvals = sx_calloc(pr->nevents + 1, sizeof *mvals);
        mv = sx_calloc(pr->nevents + 1, sizeof *mv);
        mtypes = sx_calloc(pr->nevents + 1, sizeof *mtypes);
        SX_CHECK(mnames && mvals && mv && mtypes, SX_ERR_NOMEM, err, t->run->path,
                 "out of memory");
        size_t m = perf_dict(pr, mnames, mvals);
        SX_CHECK(m <= 255, SX_ERR_UNSUPPORTED, err, t->run->path,
                 "%s: rank %" PRId64 ": perf region %s has %zu counters; an OTF2 "
                 "metric holds 255 at most",
                 t->run->path, rank, pr->name, m);
        for (size_t e = 0; e < m; e++) {
            mv[e].unsigned_int = mvals[e];
            mtypes[e] = OTF2_TYPE_UINT64;
        }
        rc = OTF2_EvtWriter_Metric(lo->ew, NULL, (OTF2_TimeStamp)last,
                                   mw.cls + (uint32_t)q, (uint8_t)m, mtypes, mv);
    }
    uint64_t events = 0;
    if (rc == OTF2_SUCCESS)
        rc = OTF2_EvtWriter_GetNumberOfEvents(lo->ew, &events);
    OTF2_ErrorCode rc2 = OTF2_Archive_CloseEvtWriter(ar, lo->ew);
    lo->ew = NULL;
    /* an empty local definitions file: readers look for one per location */
    if (rc == OTF2_SUCCESS && rc2 == OTF2_SUCCESS) {
        OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(ar, lo->loc);
        rc2 = dw != NULL ? OTF2_Archive_CloseDefWriter(ar, dw)
                         : OTF2_ERROR_PROCESSED_WITH_FAULTS;
    }
    st = otf2_check(rc != OTF2_SUCCESS ? rc : rc2, "writing events", out, oe, err);
    if (st == SX_OK && !push_rec(w, rank, lo->lane, (int64_t)events))
        st = sx_error_set(err, SX_ERR_NOMEM, t->run->path, "out of memory");
out:
    free(mnames);
    free(mvals);
    free(mv);
    free(mtypes);
    return st;
}

static int cmp_lane(const void *a, const void *b) {
    int64_t x = lane_key(*(const int64_t *)a), y = lane_key(*(const int64_t *)b);
    return (x > y) - (x < y);
}

/* The lanes of 'v' sorted, each once. */
static size_t unique_lanes(int64_t *v, size_t n) {
    if (n > 1) /* qsort wants a valid array even for none */
        qsort(v, n, sizeof *v, cmp_lane);
    size_t nu = 0;
    for (size_t i = 0; i < n; i++)
        if (nu == 0 || v[nu - 1] != v[i])
            v[nu++] = v[i];
    return nu;
}

/* 'lane' added to the list: it grows with the rank's lanes, not its calls. */
static enum sx_status add_lane(int64_t **v, size_t *n, size_t *cap, int64_t lane,
                               struct sx_error *err, const struct sx_trace *t) {
    if (*n == *cap && *n > 0)
        *n = unique_lanes(*v, *n);
    if (*n == *cap || *n * 2 > *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        int64_t *nv = sx_realloc(*v, nc * sizeof *nv);
        if (nv == NULL)
            return sx_error_set(err, SX_ERR_NOMEM, t->run->path, "out of memory");
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = lane;
    return SX_OK;
}

/* A lane index the sort's 32 bits hold (a run has not 2^31 threads or tasks). */
static bool lane_fits(int64_t lane) { return lane >= INT32_MIN && lane <= INT32_MAX; }

/*
 * Write selected rank 'rank''s calls: a location per lane, Enter at each start and
 * Leave at each end, nested as speedscope nests them (its error when they do not nest);
 * the perf counter totals as one metric event per perf region on the rank's first
 * location, at its last end. Run files of the sort go to 'dir'. Local.
 */
static enum sx_status write_rank(const struct otf2_state *s, OTF2_Archive *ar,
                                 int64_t rank, const char *dir, struct written *w,
                                 const struct otf2_errors *oe, const char *out,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    struct sx_trace *t = (struct sx_trace *)&s->t;
    struct sorter so = {dir, out, NULL, 0, NULL, 0, NULL, 0, 0, 0, -1, 0};
    struct lane_out lo = {NULL, 0, 0, 0, NULL, 0, 0};
    int64_t *lanes = NULL; /* the rank's lanes */
    size_t nl = 0, lcap = 0;
    int64_t *room[SX_NCOLS] = {0};
    uint64_t *row_seq = sx_malloc((t->nregions + 1) * sizeof *row_seq);
    SX_CHECK(row_seq != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
    const unsigned want = SX_COLBIT(SX_COL_START) | SX_COLBIT(SX_COL_END) |
                          SX_COLBIT(SX_COL_THREAD) | SX_COLBIT(SX_COL_TASK);
    for (int c = 0; c < SX_NCOLS; c++)
        if (want & SX_COLBIT(c)) {
            room[c] = sx_malloc(SLICE * sizeof(int64_t));
            SX_CHECK(room[c] != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
        }

    /* Stage: read the rank's calls, a slice of a row at a time, into the sort. */
    int64_t last = INT64_MIN;
    uint64_t seq = 0;
    for (size_t g = 0; g < t->nregions; g++) {
        const struct sx_row *row = sx_trace_row(t, g, rank);
        row_seq[g] = seq;
        if (row == NULL || row->is_aggregate || row->count == 0)
            continue;
        for (uint64_t at = 0; at < row->count; at += SLICE) {
            const uint64_t m = row->count - at < SLICE ? row->count - at : SLICE;
            const int64_t *col[SX_NCOLS];
            SX_CHECK(!sx_stop_requested(), SX_ERR_INTERRUPTED, err, out, "interrupted");
            st = sx_trace_slice(t, row, at, m, want, room, col, err);
            if (st != SX_OK)
                goto out;
            for (uint64_t i = 0; i < m; i++) {
                const int64_t lane =
                    sx_call_lane(col[SX_COL_THREAD], col[SX_COL_TASK], i);
                SX_CHECK(lane_fits(lane), SX_ERR_UNSUPPORTED, err, t->run->path,
                         "%s: rank %" PRId64 ": lane index %" PRId64
                         " is beyond what the OTF2 export handles (2^31)",
                         t->run->path, rank, lane < 0 ? -2 - lane : lane);
                struct ocall c = {col[SX_COL_START][i], col[SX_COL_END][i], seq++,
                                  (int32_t)lane, (uint32_t)g};
                if (nl == 0 || lanes[nl - 1] != c.lane) {
                    st = add_lane(&lanes, &nl, &lcap, c.lane, err, t);
                    if (st != SX_OK)
                        goto out;
                }
                if (c.end < c.start) {
                    st = sx_trace_value_error(
                        t, SX_ERR_FORMAT, "a recorded call ends before it starts", err);
                    goto out;
                }
                SX_CHECK(c.start >= 0, SX_ERR_FORMAT, err, t->run->path,
                         "%s: rank %" PRId64 ": a call starts at %" PRId64
                         " ns, before the clock's zero: OTF2 has no negative timestamps",
                         t->run->path, rank, c.start);
                if (c.start < w->first)
                    w->first = c.start;
                if (c.end > last)
                    last = c.end;
                st = sorter_add(&so, &c, err);
                if (st != SX_OK)
                    goto out;
            }
        }
    }
    if (last > w->last)
        w->last = last;
    /* the rank's lanes in the Chrome trace's order: the locations' numbers */
    nl = unique_lanes(lanes, nl);
    st = sorter_done(&so, err);
    if (st != SX_OK)
        goto out;

    /* Stage: the events, lane by lane, in time order. */
    struct ocall c;
    int got;
    bool any = false;
    uint64_t written = 0;
    while ((got = sorter_next(&so, &c, err)) == 1) {
        OTF2_ErrorCode rc = OTF2_SUCCESS;
        SX_CHECK((++written & 0xffff) != 0 || !sx_stop_requested(), SX_ERR_INTERRUPTED,
                 err, out, "interrupted");
        if (!any || c.lane != lo.lane) {
            if (any &&
                (st = lane_close(s, ar, &lo, rank, last, w, oe, out, err)) != SX_OK)
                goto out;
            lo.j = 0;
            while (lo.j < nl && lanes[lo.j] != c.lane)
                lo.j++;
            lo.lane = c.lane;
            lo.loc = ((uint64_t)rank << LOC_SHIFT) | lo.j;
            lo.ew = OTF2_Archive_GetEvtWriter(ar, lo.loc);
            SX_CHECK(lo.ew != NULL, oe->nomem ? SX_ERR_NOMEM : SX_ERR_IO, err, out,
                     "%s: writing the OTF2 archive: %s", out,
                     oe->nomem     ? "out of memory"
                     : oe->text[0] ? oe->text
                                   : "no event writer");
            any = true;
        }
        /* leave the calls closed before this one starts (one of no length at its start
         * is still open, as in speedscope's nesting); the one left open is its parent */
        size_t d = lo.sp;
        while (d > 0 && 2 * lo.stack[d - 1].end +
                                (lo.stack[d - 1].end == lo.stack[d - 1].start ? 1 : 0) <=
                            2 * c.start)
            d--;
        if (d > 0 && lo.stack[d - 1].end < c.end) {
            const struct ocall *p = &lo.stack[d - 1];
            const struct sx_ss_call x = {c.start, c.end, c.region,
                                         c.seq - row_seq[c.region]},
                                    y = {p->start, p->end, p->region,
                                         p->seq - row_seq[p->region]};
            st = sx_ss_nest_error(t, &x, &y, err);
            goto out;
        }
        rc = leave_to(&lo, d);
        if (rc == OTF2_SUCCESS)
            rc = OTF2_EvtWriter_Enter(lo.ew, NULL, (OTF2_TimeStamp)c.start, c.region);
        st = otf2_check(rc, "writing events", out, oe, err);
        if (st != SX_OK)
            goto out;
        if (lo.sp == lo.cap) {
            size_t nc = lo.cap ? lo.cap * 2 : 64;
            struct ocall *ns = sx_realloc(lo.stack, nc * sizeof *ns);
            SX_CHECK(ns != NULL, SX_ERR_NOMEM, err, t->run->path, "out of memory");
            lo.stack = ns;
            lo.cap = nc;
        }
        lo.stack[lo.sp++] = c;
    }
    if (got < 0) {
        st = SX_ERR_IO;
        goto out;
    }
    if (any)
        st = lane_close(s, ar, &lo, rank, last, w, oe, out, err);
    /* (a rank without calls has no location, and so no perf counters) */
out:
    if (lo.ew != NULL)
        OTF2_Archive_CloseEvtWriter(ar, lo.ew);
    free(lo.stack);
    free(lanes);
    free(row_seq);
    for (int q = 0; q < SX_NCOLS; q++)
        free(room[q]);
    sorter_free(&so);
    return st;
}

/* ------------------------------------------------------------------ */
/* The global definitions (rank 0)                                     */

struct defs {
    OTF2_GlobalDefWriter *w;
    uint32_t nstr;
    OTF2_ErrorCode rc;
};

/* A new string definition; its reference. */
static uint32_t def_str(struct defs *d, const char *s) {
    if (d->rc != OTF2_SUCCESS)
        return OTF2_UNDEFINED_STRING;
    d->rc = OTF2_GlobalDefWriter_WriteString(d->w, d->nstr, s);
    return d->nstr++;
}

static int cmp_rec(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    int64_t kx = lane_key(x[1]), ky = lane_key(y[1]);
    return (kx > ky) - (kx < ky);
}

/*
 * Rank 0: the clock, the system tree (one node), a location group per selected rank,
 * a location per lane that has calls ('rec': every process's records), the regions
 * and the metrics.
 */
static enum sx_status write_defs(const struct otf2_state *s, OTF2_Archive *ar,
                                 int64_t *rec, size_t nrec, int64_t first, int64_t last,
                                 const struct otf2_errors *oe, const char *out,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_trace *t = &s->t;
    struct sx_buf b = {0};
    const char **mnames = NULL;
    uint64_t *mvals = NULL;
    OTF2_MetricMemberRef *members = NULL;
    uint32_t *files = NULL;
    struct defs d = {OTF2_Archive_GetGlobalDefWriter(ar), 0, OTF2_SUCCESS};
    SX_CHECK(d.w != NULL, oe->nomem ? SX_ERR_NOMEM : SX_ERR_IO, err, out,
             "%s: writing the OTF2 archive: %s", out,
             oe->nomem     ? "out of memory"
             : oe->text[0] ? oe->text
                           : "no definitions writer");
    if (first > last)
        first = last = 0;
    d.rc = OTF2_GlobalDefWriter_WriteClockProperties(d.w, 1000000000u, (uint64_t)first,
                                                     (uint64_t)(last - first),
                                                     OTF2_UNDEFINED_TIMESTAMP);
    uint32_t node = def_str(&d, t->label);
    uint32_t node_class = def_str(&d, "node");
    if (d.rc == OTF2_SUCCESS)
        d.rc = OTF2_GlobalDefWriter_WriteSystemTreeNode(d.w, 0, node, node_class,
                                                        OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    /* the regions: their position in region order, their source where the run has it */
    files = sx_malloc((t->nregions + 1) * sizeof *files);
    SX_CHECK(files != NULL, SX_ERR_NOMEM, err, out, "out of memory");
    for (size_t g = 0; g < t->nregions && d.rc == OTF2_SUCCESS; g++) {
        uint32_t name = def_str(&d, t->run->names[t->regions[g]]);
        files[g] = OTF2_UNDEFINED_STRING; /* a file named once, by its first region */
        for (size_t q = 0; q < g && t->src_file[g] != NULL; q++)
            if (t->src_file[q] != NULL && strcmp(t->src_file[q], t->src_file[g]) == 0) {
                files[g] = files[q];
                break;
            }
        if (t->src_file[g] != NULL && files[g] == OTF2_UNDEFINED_STRING)
            files[g] = def_str(&d, t->src_file[g]);
        const uint32_t file = files[g];
        int64_t line = t->src_line[g] != NULL ? *t->src_line[g] : 0;
        if (d.rc == OTF2_SUCCESS)
            d.rc = OTF2_GlobalDefWriter_WriteRegion(
                d.w, (uint32_t)g, name, name, name, OTF2_REGION_ROLE_FUNCTION,
                OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, file,
                line > 0 && line <= UINT32_MAX ? (uint32_t)line : 0, 0);
    }
    /* the location groups and their locations, by rank and lane */
    if (nrec / REC > 1)
        qsort(rec, nrec / REC, REC * sizeof *rec, cmp_rec);
    size_t at = 0;
    for (size_t k = 0; k < s->nranks && d.rc == OTF2_SUCCESS; k++) {
        const int64_t rank = s->ranks[k];
        sx_buf_reset(&b);
        sx_buf_puts(&b, "rank ");
        sx_buf_i64(&b, rank);
        SX_CHECK(!b.failed, SX_ERR_NOMEM, err, out, "out of memory");
        uint32_t gname = def_str(&d, b.data);
        if (d.rc == OTF2_SUCCESS)
            d.rc = OTF2_GlobalDefWriter_WriteLocationGroup(
                d.w, (uint32_t)k, gname, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                OTF2_UNDEFINED_LOCATION_GROUP);
        while (at < nrec && rec[at] < rank)
            at += REC;
        for (uint64_t j = 0; at < nrec && rec[at] == rank && d.rc == OTF2_SUCCESS;
             at += REC, j++) {
            const int64_t lane = rec[at + 1];
            sx_buf_reset(&b);
            if (lane == -1) {
                sx_buf_puts(&b, "rank ");
                sx_buf_i64(&b, rank);
            } else {
                sx_trace_lane_label(t->run, lane, rank, &b);
            }
            SX_CHECK(!b.failed, SX_ERR_NOMEM, err, out, "out of memory");
            uint32_t lname = def_str(&d, b.data ? b.data : "");
            if (d.rc == OTF2_SUCCESS)
                d.rc = OTF2_GlobalDefWriter_WriteLocation(
                    d.w, ((uint64_t)rank << LOC_SHIFT) | j, lname,
                    OTF2_LOCATION_TYPE_CPU_THREAD, (uint64_t)rec[at + 2], (uint32_t)k);
        }
    }
    /* the perf counter totals: a member per counter of a region, a class per region */
    uint32_t member = 0, cls = 0, unit = OTF2_UNDEFINED_STRING;
    for (size_t k = 0; k < s->nranks && d.rc == OTF2_SUCCESS; k++) {
        const struct sx_perf_rank *pf = perf_of(t, s->ranks[k]);
        struct metric_walk mw = metric_base(s, s->ranks[k]);
        member = mw.member;
        cls = mw.cls;
        for (size_t q = 0; pf != NULL && q < pf->n && d.rc == OTF2_SUCCESS; q++) {
            const struct sx_perf_region *pr = &pf->regions[q];
            free(mnames);
            free(mvals);
            free(members);
            mnames = sx_calloc(pr->nevents + 1, sizeof *mnames);
            mvals = sx_calloc(pr->nevents + 1, sizeof *mvals);
            members = sx_calloc(pr->nevents + 1, sizeof *members);
            SX_CHECK(mnames && mvals && members, SX_ERR_NOMEM, err, out, "out of memory");
            size_t m = perf_dict(pr, mnames, mvals);
            sx_buf_reset(&b);
            sx_buf_puts(&b, "perf events: ");
            sx_buf_puts(&b, pr->name);
            SX_CHECK(!b.failed, SX_ERR_NOMEM, err, out, "out of memory");
            uint32_t desc = def_str(&d, b.data);
            if (unit == OTF2_UNDEFINED_STRING)
                unit = def_str(&d, "#");
            for (size_t e = 0; e < m && d.rc == OTF2_SUCCESS && m <= 255; e++) {
                uint32_t name = def_str(&d, mnames[e]);
                members[e] = member + (uint32_t)e;
                if (d.rc == OTF2_SUCCESS)
                    d.rc = OTF2_GlobalDefWriter_WriteMetricMember(
                        d.w, members[e], name, desc, OTF2_METRIC_TYPE_OTHER,
                        OTF2_METRIC_ACCUMULATED_START, OTF2_TYPE_UINT64,
                        OTF2_BASE_DECIMAL, 0, unit);
            }
            member += (uint32_t)m;
            if (d.rc == OTF2_SUCCESS && m <= 255)
                d.rc = OTF2_GlobalDefWriter_WriteMetricClass(
                    d.w, cls, (uint8_t)m, members, OTF2_METRIC_ASYNCHRONOUS,
                    OTF2_RECORDER_KIND_ABSTRACT);
            cls++;
        }
    }
    st = otf2_check(d.rc, "writing the definitions", out, oe, err);
out:
    sx_buf_free(&b);
    free(mnames);
    free(mvals);
    free(members);
    free(files);
    return st;
}

/*
 * The run's metadata as the archive's properties "SCOPE_PROFILER::KEY" (the key in
 * upper case, other characters than [A-Z0-9_] as '_'; the first of two keys that
 * come out alike wins): strings as they are, other values as JSON text. The label and
 * the input as "SCOPE_EXPORT::LABEL" and "SCOPE_EXPORT::INPUT".
 */
static enum sx_status set_properties(const struct otf2_state *s, OTF2_Archive *ar,
                                     const struct otf2_errors *oe, const char *out,
                                     struct sx_error *err) {
    enum sx_status st = SX_OK;
    const struct sx_run *run = s->t.run;
    struct sx_buf name = {0}, val = {0};
    OTF2_ErrorCode rc =
        OTF2_Archive_SetProperty(ar, "SCOPE_EXPORT::LABEL", s->t.label, true);
    if (rc == OTF2_SUCCESS)
        rc = OTF2_Archive_SetProperty(ar, "SCOPE_EXPORT::INPUT", run->path, true);
    for (size_t i = 0; rc == OTF2_SUCCESS && run->metadata.kind == SX_V_OBJECT &&
                       i < run->metadata.u.obj.n;
         i++) {
        const struct sx_member *m = &run->metadata.u.obj.items[i];
        sx_buf_reset(&name);
        sx_buf_reset(&val);
        sx_buf_puts(&name, "SCOPE_PROFILER::");
        for (size_t c = 0; c < m->key_len; c++) {
            unsigned char ch = (unsigned char)m->key[c];
            sx_buf_putc(&name, ch >= 'a' && ch <= 'z' ? (char)(ch - 'a' + 'A')
                               : (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
                                   ? (char)ch
                                   : '_');
        }
        if (m->key_len == 0)
            sx_buf_putc(&name, '_');
        if (m->value.kind == SX_V_STR)
            sx_buf_append(&val, m->value.u.str.s, m->value.u.str.len);
        else
            sx_write_value(&val, &m->value, -1, 0);
        sx_buf_putc(&val, '\0');
        SX_CHECK(!name.failed && !val.failed, SX_ERR_NOMEM, err, out, "out of memory");
        rc = OTF2_Archive_SetProperty(ar, name.data, val.data[0] ? val.data : " ", false);
        if (rc == OTF2_ERROR_PROPERTY_EXISTS)
            rc = OTF2_SUCCESS;
    }
    st = otf2_check(rc, "setting the archive's properties", out, oe, err);
out:
    sx_buf_free(&name);
    sx_buf_free(&val);
    return st;
}

/* ------------------------------------------------------------------ */
/* The write: NOTE: collective                                         */

/* NOTE: collective. Every process's location records on rank 0 (others: none). */
static enum sx_status gather(MPI_Comm comm, int rank, int size, const struct written *w,
                             int64_t **all, size_t *nall, struct sx_error *err) {
    enum sx_status st = SX_OK;
    int *counts = NULL, *displs = NULL;
    *all = NULL;
    *nall = 0;
    if (comm == MPI_COMM_NULL) {
        *all = sx_malloc((w->n + 1) * sizeof **all);
        if (*all == NULL)
            return sx_error_set(err, SX_ERR_NOMEM, "", "out of memory");
        memcpy(*all, w->rec, w->n * sizeof **all);
        *nall = w->n;
        return SX_OK;
    }
    counts = sx_calloc((size_t)size, sizeof *counts);
    displs = sx_calloc((size_t)size, sizeof *displs);
    if (counts == NULL || displs == NULL || w->n >= (1u << 28))
        st = sx_error_set(err, SX_ERR_NOMEM, "", "out of memory");
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    int c = (int)w->n;
    st = sx_mpi_check(MPI_Gather(&c, 1, MPI_INT, counts, 1, MPI_INT, 0, comm),
                      "MPI_Gather", err);
    size_t total = 0;
    for (int r = 0; rank == 0 && r < size; r++) {
        displs[r] = (int)total;
        total += (size_t)counts[r];
    }
    if (st == SX_OK && rank == 0 && total >= (1u << 28))
        st = sx_error_set(err, SX_ERR_NOMEM, "", "too many locations");
    if (st == SX_OK && rank == 0) {
        *all = sx_malloc((total + 1) * sizeof **all);
        if (*all == NULL)
            st = sx_error_set(err, SX_ERR_NOMEM, "", "out of memory");
    }
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    st = sx_mpi_check(
        MPI_Gatherv(w->rec, c, MPI_INT64_T, *all, counts, displs, MPI_INT64_T, 0, comm),
        "MPI_Gatherv", err);
    *nall = total;
out:
    free(counts);
    free(displs);
    return st;
}

/* NOTE: collective: the earliest first and latest last timestamp of all processes. */
static enum sx_status reduce_times(MPI_Comm comm, int64_t *first, int64_t *last,
                                   struct sx_error *err) {
    if (comm == MPI_COMM_NULL)
        return SX_OK;
    int64_t v[2] = {-*first, *last};
    enum sx_status st =
        sx_mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT64_T, MPI_MAX, comm),
                     "MPI_Allreduce", err);
    *first = -v[0];
    *last = v[1];
    return st;
}

static enum sx_status otf2_write(const struct sx_pipe *p, void *ctx,
                                 struct sx_error *err) {
    enum sx_status st = SX_OK;
    MPI_Comm comm = p->comm;
    struct otf2_state *s = ctx;
    struct names n = {0};
    struct otf2_errors oe = {"", false};
    if (cli_quiet)
        cli_errors.text[0] = '\0';
    OTF2_Archive *ar = NULL;
    bool evt_open = false, def_open = false;
    struct written w = {NULL, 0, 0, INT64_MAX, INT64_MIN};
    struct OTF2_CollectiveContext coll = {MPI_COMM_NULL, 0, 0, NULL, false};
    bool coll_set = false; /* OTF2's collectives set up on this process's archive */
    int64_t *all = NULL;
    size_t nall = 0;
    char tmp[SX_TMP_NAME] = "";
    const char *out = p->output;

    /* Stage: the names; rank 0 checks what they replace and makes the directory. */
    st = names_of(out, &n, err);
    if (st == SX_OK)
        out = n.anchor;
    if (st == SX_OK && p->rank == 0)
        st = names_prepare(&n, err);
    if (st == SX_OK && p->rank == 0)
        snprintf(tmp, sizeof tmp, "%s", n.tmpdir);
    st = sx_all_ok(comm, st, err);
    if (st == SX_OK && comm != MPI_COMM_NULL)
        st = sx_mpi_check(MPI_Bcast(tmp, SX_TMP_NAME, MPI_CHAR, 0, comm), "MPI_Bcast",
                          err);
    if (st == SX_OK && p->rank != 0) {
        n.tmpdir = sx_strdup(tmp);
        if (n.tmpdir == NULL)
            st = sx_error_set(err, SX_ERR_NOMEM, out, "out of memory");
    }
    /* Stage: every process opens the archive. */
    if (st == SX_OK) {
        ar = OTF2_Archive_Open(n.tmpdir, n.name, OTF2_FILEMODE_WRITE, EVT_CHUNK,
                               DEF_CHUNK, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
        if (ar == NULL)
            st = otf2_check(OTF2_ERROR_PROCESSED_WITH_FAULTS, "OTF2_Archive_Open", out,
                            &oe, err);
    }
    if (st == SX_OK)
        st = otf2_check(OTF2_Archive_SetFlushCallbacks(ar, &flush_callbacks, NULL),
                        "OTF2_Archive_SetFlushCallbacks", out, &oe, err);
    if (st == SX_OK)
        st = otf2_check(OTF2_Archive_SetMemoryCallbacks(ar, &memory_callbacks, &oe),
                        "OTF2_Archive_SetMemoryCallbacks", out, &oe, err);
    if (st == SX_OK)
        st = otf2_check(OTF2_Archive_SetCreator(ar, "scope-export " SX_VERSION_STRING),
                        "OTF2_Archive_SetCreator", out, &oe, err);
    if (st == SX_OK)
        st = otf2_check(OTF2_Archive_SetDescription(ar, s->t.label),
                        "OTF2_Archive_SetDescription", out, &oe, err);
    if (st == SX_OK)
        st = set_properties(s, ar, &oe, out, err);
    if (st == SX_OK && comm != MPI_COMM_NULL) {
        coll.comm = comm;
        MPI_Comm_size(comm, &coll.size);
        MPI_Comm_rank(comm, &coll.rank);
        coll.displs = sx_calloc((size_t)coll.size, sizeof *coll.displs);
        if (coll.displs == NULL)
            st = sx_error_set(err, SX_ERR_NOMEM, out, "out of memory");
    }
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    /* Stage: NOTE: collective: OTF2's collectives over the export's communicator, rank
     * 0 the archive's master (it writes the anchor and the definitions). */
    if (comm != MPI_COMM_NULL)
        st = otf2_check(
            OTF2_Archive_SetCollectiveCallbacks(ar, &coll_callbacks, NULL, &coll, NULL),
            "OTF2_Archive_SetCollectiveCallbacks", out, &oe, err);
    else
        st = otf2_check(OTF2_Archive_SetSerialCollectiveCallbacks(ar),
                        "OTF2_Archive_SetSerialCollectiveCallbacks", out, &oe, err);
    coll_set = st == SX_OK;
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    st = otf2_check(OTF2_Archive_OpenEvtFiles(ar), "OTF2_Archive_OpenEvtFiles", out, &oe,
                    err);
    evt_open = true;
    st = sx_all_ok(comm, st, err);
    if (st == SX_OK) {
        st = otf2_check(OTF2_Archive_OpenDefFiles(ar), "OTF2_Archive_OpenDefFiles", out,
                        &oe, err);
        def_open = true;
    }
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto close;

    /* Stage: each process writes the locations of its share of the selected ranks. */
    size_t bad_k =
        SIZE_MAX; /* the selected rank that failed: the first in order speaks */
    for (size_t k = (size_t)p->rank; k < s->nranks && st == SX_OK; k += (size_t)p->size)
        if ((st = write_rank(s, ar, s->ranks[k], n.tmpdir, &w, &oe, out, err)) != SX_OK)
            bad_k = k;
    st = sx_all_ok_first(comm, st, bad_k < s->nranks ? (long)bad_k : LONG_MAX, err);
    if (st == SX_OK)
        st = gather(comm, p->rank, p->size, &w, &all, &nall, err);
    st = sx_all_ok(comm, st, err);
    if (st == SX_OK)
        st = reduce_times(comm, &w.first, &w.last, err);
    st = sx_all_ok(comm, st, err);
    if (st == SX_OK && p->rank == 0 && nall == 0)
        st = sx_trace_value_error(&s->t, SX_ERR_VALUE,
                                  "No calls recorded for the requested ranks.", err);
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto close;
    /* Stage: rank 0 writes the global definitions. */
    if (p->rank == 0)
        st = write_defs(s, ar, all, nall, w.first, w.last, &oe, out, err);
    st = sx_all_ok(comm, st, err);
close:
    /* NOTE: collective: closed on every process, whatever came before (agreed) */
    if (def_open) {
        enum sx_status c = otf2_check(OTF2_Archive_CloseDefFiles(ar),
                                      "OTF2_Archive_CloseDefFiles", out, &oe, err);
        if (st == SX_OK)
            st = c;
    }
    if (evt_open) {
        enum sx_status c = otf2_check(OTF2_Archive_CloseEvtFiles(ar),
                                      "OTF2_Archive_CloseEvtFiles", out, &oe, err);
        if (st == SX_OK)
            st = c;
    }
    {
        enum sx_status c =
            otf2_check(OTF2_Archive_Close(ar), "OTF2_Archive_Close", out, &oe, err);
        ar = NULL;
        /* OTF2 may let a buffer it could not have go (the anchor's, on close): any of
         * our allocations for it that failed fails the archive */
        if (c == SX_OK && oe.nomem)
            c = sx_error_set(err, SX_ERR_NOMEM, out,
                             "%s: out of memory writing the OTF2 archive", out);
        if (st == SX_OK)
            st = c;
    }
    st = sx_all_ok(comm, st, err);
    if (st != SX_OK)
        goto out;
    /* Stage: rank 0 renames the archive into place. */
    if (p->rank == 0)
        st = names_commit(&n, err);
    st = sx_all_ok(comm, st, err);
out:
    if (ar != NULL) {
        /* a failure before the archive's collectives were set up on every process (or
         * they were never used): each process closes its own alone */
        coll.alone = true;
        if (!coll_set)
            (void)OTF2_Archive_SetCollectiveCallbacks(ar, &coll_callbacks, NULL, &coll,
                                                      NULL);
        OTF2_Archive_Close(ar);
        ar = NULL;
    }
    /* NOTE: collective (every process is here after the same agreed failure): what the
     * others closed alone is in the directory before rank 0 removes it */
    if (st != SX_OK && comm != MPI_COMM_NULL)
        (void)MPI_Barrier(comm);
    if (p->rank == 0 && n.made)
        remove_tree(n.tmpdir, 2); /* what is left: all of it after a failure */
    free(w.rec);
    free(all);
    free(coll.displs);
    names_free(&n);
    return st;
}

/* The lanes' names, the perf counter totals (no GPU columns: the events are the calls'
 * times alone); every rank unless --ranks. */
const struct sx_doc_type sx_doc_otf2 = {
    .format = SX_FORMAT_OTF2,
    .events_for = "OTF2 archive needs",
    .needs = SX_NEED_LANES | SX_NEED_PERF | SX_NEED_JSON_INPUT,
    .plan = otf2_plan,
    .write = otf2_write,
};
