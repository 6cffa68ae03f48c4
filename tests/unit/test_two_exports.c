/*
 * test_two_exports.c - exports one after another in one process give what separate
 * processes give: an export interrupted by sx_request_stop (from its progress
 * callback), then a good one; a stop asked for while no export runs does not stop the
 * next one; the same for a native run (sx_export_native); each output equal to the
 * command's, run as a process of its own.
 */
#include "sx_test.h"
#include "sx_test_doc.h"

#include "scope_export.h"

#include <sys/stat.h>
#include <unistd.h>

static void stop_now(uint64_t done, uint64_t total, void *user) {
    (void)done;
    (void)total;
    (void)user;
    sx_request_stop();
}

static bool same_bytes(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    char *x = sx_test_slurp(a, &na, false), *y = sx_test_slurp(b, &nb, false);
    const bool same = x != NULL && y != NULL && na == nb && memcmp(x, y, na) == 0;
    if (!same)
        fprintf(stderr, "%s and %s differ\n", a, b);
    free(x);
    free(y);
    return same;
}

static bool absent(const char *p) {
    struct stat sb;
    return stat(p, &sb) != 0;
}

int main(void) {
    char dir[] = "/tmp/sx_two_XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    const char *in = SX_SHARED_DIR "/golden/gen_schema3_allcols/run.h5";
    const char *native = SX_SHARED_DIR "/golden-native/mixed_3ranks/ranks";
    char cmd[4096], ref[512], refn[512], out[512], outn[512];
    snprintf(ref, sizeof ref, "%s/ref.json", dir);
    snprintf(refn, sizeof refn, "%s/a/p.json", dir); /* the label is the output's stem */
    snprintf(out, sizeof out, "%s/out.json", dir);
    snprintf(outn, sizeof outn, "%s/b/p.json", dir);
    snprintf(cmd, sizeof cmd, "mkdir %s/a %s/b", dir, dir);
    ASSERT(system(cmd) == 0);

    /* the outputs of separate processes (the command, one process, no MPI) */
    snprintf(
        cmd, sizeof cmd,
        "env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK %s/scope-export export "
        "%s -o %s -q && env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK "
        "%s/scope-export export --native %s -o %s -q",
        SX_BUILD_DIR, in, ref, SX_BUILD_DIR, native, refn);
    ASSERT(system(cmd) == 0);

    struct sx_options o, stop;
    struct sx_error e;
    sx_options_init(&o);
    sx_options_init(&stop);
    stop.progress = stop_now;

    /* interrupted, then a good one */
    CHECK(sx_export(MPI_COMM_NULL, in, out, &stop, &e) == SX_ERR_INTERRUPTED);
    CHECK(absent(out));
    enum sx_status st = sx_export(MPI_COMM_NULL, in, out, &o, &e);
    if (st != SX_OK)
        fprintf(stderr, "second export: %s\n", e.text);
    CHECK(st == SX_OK && same_bytes(out, ref));
    unlink(out);

    /* a stop asked for between exports (a host's signal handler) is not the next one's */
    sx_request_stop();
    st = sx_export(MPI_COMM_NULL, in, out, &o, &e);
    if (st != SX_OK)
        fprintf(stderr, "export after a stop between exports: %s\n", e.text);
    CHECK(st == SX_OK && same_bytes(out, ref));
    unlink(out);

    /* the same for a native run */
    const char *ins[1] = {native};
    CHECK(sx_export_native(MPI_COMM_NULL, ins, 1, outn, NULL, &stop, &e) ==
          SX_ERR_INTERRUPTED);
    CHECK(absent(outn));
    st = sx_export_native(MPI_COMM_NULL, ins, 1, outn, NULL, &o, &e);
    if (st != SX_OK)
        fprintf(stderr, "second native export: %s\n", e.text);
    CHECK(st == SX_OK && same_bytes(outn, refn));
    unlink(outn);
    sx_request_stop();
    st = sx_export_native(MPI_COMM_NULL, ins, 1, outn, NULL, &o, &e);
    if (st != SX_OK)
        fprintf(stderr, "native export after a stop between exports: %s\n", e.text);
    CHECK(st == SX_OK && same_bytes(outn, refn));
    /* and a plain export after the native ones */
    st = sx_export(MPI_COMM_NULL, in, out, &o, &e);
    CHECK(st == SX_OK && same_bytes(out, ref));

    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    TEST_DONE();
}
