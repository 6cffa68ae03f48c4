/* test_h5_write.c - sx_h5_write and the streaming writer against the schema-3 layout */
#include "h5_write.h"
#include "json_value.h"
#include "run.h"

#include "sx_test.h"

#include <hdf5.h>

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static hid_t open_file(const char *path) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT(f >= 0);
    return f;
}

/* Length of 1-D dataset 'path' (-1 if missing or not 1-D). */
static long dset_len(hid_t f, const char *path) {
    hsize_t dim = 0;
    if (H5Lexists(f, path, H5P_DEFAULT) <= 0)
        return -1;
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    hid_t s = H5Dget_space(d);
    int rank = H5Sget_simple_extent_ndims(s);
    if (rank == 1)
        H5Sget_simple_extent_dims(s, &dim, NULL);
    H5Sclose(s);
    H5Dclose(d);
    return rank == 1 ? (long)dim : -1;
}

/* Whether dataset 'path' is stored with exactly file type 'want'. */
static bool dset_type_is(hid_t f, const char *path, hid_t want) {
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    if (d < 0)
        return false;
    hid_t t = H5Dget_type(d);
    bool eq = H5Tequal(t, want) > 0;
    H5Tclose(t);
    H5Dclose(d);
    return eq;
}

/* The whole of dataset 'path' as int64 (converted by HDF5). */
static void read_i64(hid_t f, const char *path, int64_t *out, long n) {
    ASSERT(dset_len(f, path) == n);
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    if (n > 0)
        ASSERT(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0);
    H5Dclose(d);
}

/* String 'i' of string dataset 'path' (vlen or fixed) into 'out'. */
static void read_str(hid_t f, const char *path, long i, char *out, size_t cap) {
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    ASSERT(d >= 0);
    hid_t t = H5Dget_type(d), fs = H5Dget_space(d);
    hsize_t off = (hsize_t)i, one = 1;
    hid_t ms = H5Screate_simple(1, &one, NULL);
    ASSERT(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &off, NULL, &one, NULL) >= 0);
    ASSERT(H5Tget_cset(t) == H5T_CSET_UTF8);
    if (H5Tis_variable_str(t) > 0) {
        char *p = NULL;
        ASSERT(H5Dread(d, t, ms, fs, H5P_DEFAULT, &p) >= 0);
        snprintf(out, cap, "%s", p ? p : "");
        H5Dvlen_reclaim(t, ms, H5P_DEFAULT, &p);
    } else {
        size_t w = H5Tget_size(t);
        ASSERT(H5Tget_strpad(t) == H5T_STR_NULLPAD);
        char *buf = calloc(w + 1, 1);
        ASSERT(H5Dread(d, t, ms, fs, H5P_DEFAULT, buf) >= 0);
        snprintf(out, cap, "%s", buf);
        free(buf);
    }
    H5Sclose(ms);
    H5Sclose(fs);
    H5Tclose(t);
    H5Dclose(d);
}

static hid_t vlen_str(void) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

/* Scalar string attribute 'name' of object 'obj'. */
static void attr_str(hid_t f, const char *obj, const char *name, char *out, size_t cap) {
    hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT(a >= 0);
    hid_t t = H5Aget_type(a), mt = vlen_str(), s = H5Aget_space(a);
    char *p = NULL;
    CHECK(H5Tis_variable_str(t) > 0);
    CHECK(H5Tget_cset(t) == H5T_CSET_UTF8);
    CHECK(H5Sget_simple_extent_type(s) == H5S_SCALAR);
    ASSERT(H5Aread(a, mt, &p) >= 0);
    snprintf(out, cap, "%s", p ? p : "");
    H5Dvlen_reclaim(mt, s, H5P_DEFAULT, &p);
    H5Sclose(s);
    H5Tclose(mt);
    H5Tclose(t);
    H5Aclose(a);
}

/* Attribute 'name' of 'obj': its file type is 'want' and 'n' elements (-1 = scalar). */
static bool attr_is(hid_t f, const char *obj, const char *name, hid_t want, long n) {
    hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0)
        return false;
    hid_t t = H5Aget_type(a), s = H5Aget_space(a);
    bool ok = want < 0 || H5Tequal(t, want) > 0;
    if (n < 0)
        ok = ok && H5Sget_simple_extent_type(s) == H5S_SCALAR;
    else
        ok = ok && H5Sget_simple_extent_npoints(s) == n;
    H5Sclose(s);
    H5Tclose(t);
    H5Aclose(a);
    return ok;
}

static void attr_num(hid_t f, const char *obj, const char *name, hid_t mtype, void *out) {
    hid_t a = H5Aopen_by_name(f, obj, name, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT(a >= 0);
    ASSERT(H5Aread(a, mtype, out) >= 0);
    H5Aclose(a);
}

static bool exists(hid_t f, const char *path) {
    /* H5Lexists needs every intermediate link: check each prefix. */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (H5Lexists(f, buf, H5P_DEFAULT) <= 0)
                return false;
            if (c == '\0')
                return true;
            *p = c;
        }
    }
}

/* Files in the test directory (a leftover temporary file shows up here). */
static int count_files(void) {
    int n = 0;
    DIR *d = opendir(dir);
    ASSERT(d != NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static long open_objects(void) {
    return (long)H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
}

/* ------------------------------------------------------------------ */
/* A small run: two ranks, two regions, every kind of extra           */

static char n_solve[] = "solve", n_io[] = "io/write";
static char *names[] = {n_solve, n_io};
static char f_solver[] = "solver.py", t_text[] = "x = solve()";
static char tg_golden[] = "golden", tg_u[] = "\xc3\xbc";
static char *tags_a[] = {tg_golden, tg_u};
static char meta_a[] = "[{}, {\"k\": 1}, {}]";

/* Row A: rank 0 region 0, 3 events, GPU + call + parent. */
static int64_t a_start[] = {1000, 1100, 1300}, a_end[] = {1050, 1250, 1310};
static int64_t a_gpu[] = {-1, 20, 5}, a_call[] = {0, 1, 2}, a_par[] = {-1, 0, 0};
/* Row B: rank 1 region 0, 2 events, call ids only. */
static int64_t b_start[] = {5000, 5010}, b_end[] = {5005, 5030}, b_call[] = {7, 8};
/* Row C: rank 0 region 1, 2 events, thread ids. */
static int64_t c_start[] = {2000, 2500}, c_end[] = {2400, 2600}, c_thr[] = {0, 1};
/* Row D: rank 1 region 1, 1 event. */
static int64_t d_start[] = {6000}, d_end[] = {6100};

static char th_main[] = "MainThread", th_w[] = "worker";
static struct sx_thread threads0[] = {{.index = 0,
                                       .name = th_main,
                                       .ident = 11,
                                       .native_id = 101,
                                       .daemon = false,
                                       .start_ns = 0,
                                       .end_ns = -1,
                                       .cpu_ns = 900},
                                      {.index = 1,
                                       .name = th_w,
                                       .ident = 12,
                                       .native_id = 102,
                                       .daemon = true,
                                       .start_ns = 10,
                                       .end_ns = 500,
                                       .cpu_ns = 400}};
static char k_task[] = "task", tn[] = "Task-1", cn[] = "main";
static struct sx_task tasks1[] = {{.index = 0,
                                   .kind = k_task,
                                   .name = tn,
                                   .coro_name = cn,
                                   .thread_index = 0,
                                   .created_ns = 5,
                                   .done_ns = -1,
                                   .steps = 3,
                                   .running_ns = 40,
                                   .suspended_ns = 60}};

static char lk_tag[] = "io/write", lk_group[] = "MEM", lk_src[] = "marker_api";
static char ev0[] = "PMC0", ev1[] = "PMC1", mn0[] = "Runtime";
static char *lk_events[] = {ev0, ev1}, *lk_metrics[] = {mn0};
static int64_t lk_cpus[] = {0, 1}, lk_calls[] = {3, 3};
static double lk_times[] = {0.5, 0.25};
static double lk_ev[] = {1.0, 2.0, 3.0, 0.0}; /* NaN set in main */
static double lk_mt[] = {0.1, 0.2};

static char lp_file[] = "solver.py", lp_func[] = "solve";
static int64_t lp_lines[] = {10, 11}, lp_hits[] = {1, 5};
static double lp_times[] = {100.0, 250.5};

static void build_run(struct sx_run *run, struct sx_row rows[4], struct sx_lane_rank *thr,
                      struct sx_lane_rank *tsk, struct sx_likwid_entry *lke,
                      struct sx_likwid_rank *lkr, struct sx_lp_record *lpr,
                      struct sx_lp_rank *lpk) {
    struct sx_value v, arr;
    *run = (struct sx_run){0};
    run->schema = 3;
    run->layout = SX_LAYOUT_COLUMNAR;
    run->names = names;
    run->nnames = 2;

    sx_value_object(&run->metadata);
    ASSERT(sx_value_set(&run->metadata, "mpi_size", 8, sx_value_int(2)));
    v = (struct sx_value){.kind = SX_V_UINT, .u.u = UINT64_MAX};
    ASSERT(sx_value_set(&run->metadata, "big", 3, v));
    ASSERT(sx_value_set(&run->metadata, "ghz", 3, sx_value_float(2.5)));
    ASSERT(sx_value_set(&run->metadata, "debug", 5, sx_value_bool(true)));
    ASSERT(sx_value_str(&v, "h\xc3\xb6st", 5));
    ASSERT(sx_value_set(&run->metadata, "hostname", 8, v));
    ASSERT(sx_value_set(&run->metadata, "nothing", 7, sx_value_null()));
    sx_value_array(&arr);
    ASSERT(sx_value_str(&v, "gcc", 3) && sx_value_push(&arr, v));
    ASSERT(sx_value_str(&v, "mpi", 3) && sx_value_push(&arr, v));
    ASSERT(sx_value_set(&run->metadata, "modules", 7, arr));
    sx_value_array(&arr);
    ASSERT(sx_value_push(&arr, sx_value_int(1)) && sx_value_push(&arr, sx_value_int(-2)));
    ASSERT(sx_value_set(&run->metadata, "ints", 4, arr));
    sx_value_array(&arr);
    ASSERT(sx_value_push(&arr, sx_value_int(1)) &&
           sx_value_push(&arr, sx_value_float(0.5)));
    ASSERT(sx_value_set(&run->metadata, "floats", 6, arr));
    sx_value_array(&arr);
    ASSERT(sx_value_set(&run->metadata, "empty", 5, arr));

    /* Region-major order on purpose: the file must come out rank-major. */
    rows[0] = (struct sx_row){.region = 0,
                              .rank = 0,
                              .count = 3,
                              .source_file = f_solver,
                              .source_text = t_text,
                              .has_lineno = true,
                              .source_lineno = 7,
                              .tags = tags_a,
                              .ntags = 2,
                              .meta_text = meta_a,
                              .cols = SX_COLBIT(SX_COL_GPU) | SX_COLBIT(SX_COL_CALL) |
                                      SX_COLBIT(SX_COL_PARENT)};
    rows[0].col[SX_COL_START] = a_start;
    rows[0].col[SX_COL_END] = a_end;
    rows[0].col[SX_COL_GPU] = a_gpu;
    rows[0].col[SX_COL_CALL] = a_call;
    rows[0].col[SX_COL_PARENT] = a_par;
    rows[1] = (struct sx_row){
        .region = 0, .rank = 1, .count = 2, .cols = SX_COLBIT(SX_COL_CALL)};
    rows[1].col[SX_COL_START] = b_start;
    rows[1].col[SX_COL_END] = b_end;
    rows[1].col[SX_COL_CALL] = b_call;
    rows[2] = (struct sx_row){.region = 1,
                              .rank = 0,
                              .count = 2,
                              .has_exclusive = true,
                              .exclusive_total = 5,
                              .cols = SX_COLBIT(SX_COL_THREAD)};
    rows[2].col[SX_COL_START] = c_start;
    rows[2].col[SX_COL_END] = c_end;
    rows[2].col[SX_COL_THREAD] = c_thr;
    rows[3] = (struct sx_row){.region = 1, .rank = 1, .count = 1};
    rows[3].col[SX_COL_START] = d_start;
    rows[3].col[SX_COL_END] = d_end;
    run->rows = rows;
    run->nrows = 4;
    run->file_cols = SX_COLBIT(SX_COL_AWAIT); /* present in the file, for no row */

    *thr = (struct sx_lane_rank){.rank = 0, .n = 2, .threads = threads0};
    *tsk = (struct sx_lane_rank){.rank = 1, .n = 1, .tasks = tasks1};
    run->threads = thr;
    run->nthreads = 1;
    run->tasks = tsk;
    run->ntasks = 1;
    run->has_threads = run->has_tasks = true;

    *lke = (struct sx_likwid_entry){.tag = lk_tag,
                                    .group_id = 2,
                                    .group_name = lk_group,
                                    .cpus = lk_cpus,
                                    .ncpus = 2,
                                    .times = lk_times,
                                    .ntimes = 2,
                                    .call_counts = lk_calls,
                                    .ncall_counts = 2,
                                    .event_names = lk_events,
                                    .nevent_names = 2,
                                    .events = {lk_ev, 2, 2},
                                    .metric_names = lk_metrics,
                                    .nmetric_names = 1,
                                    .metrics = {lk_mt, 1, 2},
                                    .source = lk_src};
    *lkr = (struct sx_likwid_rank){.rank = 1, .entries = lke, .n = 1};
    run->likwid = lkr;
    run->nlikwid = 1;

    for (int i = 0; i < 11; i++)
        lpr[i] = (struct sx_lp_record){.region = n_solve,
                                       .filename = lp_file,
                                       .function = lp_func,
                                       .first_lineno = 100 + i,
                                       .line_numbers = lp_lines,
                                       .nline_numbers = 2,
                                       .hits = lp_hits,
                                       .nhits = 2,
                                       .times = lp_times,
                                       .ntimes = 2,
                                       .unit = 1e-6};
    *lpk = (struct sx_lp_rank){.rank = 0, .records = lpr, .n = 11};
    run->line_profile = lpk;
    run->nline_profile = 1;
}

static void check_columnar(const char *path) {
    hid_t f = open_file(path);
    int64_t v[16];
    char s[256];

    /* Root attributes. */
    CHECK(attr_is(f, "/", "scope_profiler_schema", H5T_STD_I64LE, -1));
    attr_num(f, "/", "scope_profiler_schema", H5T_NATIVE_INT64, v);
    CHECK(v[0] == 3);
    attr_str(f, "/", "storage_layout", s, sizeof s);
    CHECK_STR(s, "columnar");

    /* Metadata types (spec 2.1 read rules). */
    CHECK(attr_is(f, "/metadata", "mpi_size", H5T_STD_I64LE, -1));
    CHECK(attr_is(f, "/metadata", "big", H5T_STD_U64LE, -1));
    CHECK(attr_is(f, "/metadata", "ghz", H5T_IEEE_F64LE, -1));
    CHECK(attr_is(f, "/metadata", "nothing", H5T_IEEE_F64LE, -1));
    CHECK(attr_is(f, "/metadata", "ints", H5T_STD_I64LE, 2));
    CHECK(attr_is(f, "/metadata", "floats", H5T_IEEE_F64LE, 2));
    CHECK(attr_is(f, "/metadata", "modules", -1, 2));
    CHECK(attr_is(f, "/metadata", "empty", -1, 0));
    uint64_t big = 0;
    attr_num(f, "/metadata", "big", H5T_NATIVE_UINT64, &big);
    CHECK(big == UINT64_MAX);
    double nothing = 0;
    attr_num(f, "/metadata", "nothing", H5T_NATIVE_DOUBLE, &nothing);
    CHECK(isnan(nothing));
    attr_str(f, "/metadata", "hostname", s, sizeof s);
    CHECK_STR(s, "h\xc3\xb6st");
    {
        hid_t a = H5Aopen_by_name(f, "/metadata", "debug", H5P_DEFAULT, H5P_DEFAULT);
        hid_t t = H5Aget_type(a);
        int8_t b = 0;
        char *name0 = NULL;
        CHECK(H5Tget_class(t) == H5T_ENUM);
        CHECK(H5Tget_size(t) == 1 && H5Tget_nmembers(t) == 2);
        name0 = H5Tget_member_name(t, 1);
        CHECK(name0 != NULL && strcmp(name0, "TRUE") == 0);
        H5free_memory(name0);
        H5Aread(a, H5T_NATIVE_INT8, &b);
        CHECK(b == 1);
        H5Tclose(t);
        H5Aclose(a);
    }

    /* Region table and index: rank-major A, C, B, D. */
    CHECK(dset_len(f, "/region_table/names") == 2);
    read_str(f, "/region_table/names", 1, s, sizeof s);
    CHECK_STR(s, "io/write");
    CHECK(dset_type_is(f, "/rank_region_index/region_ids", H5T_STD_U32LE));
    CHECK(dset_type_is(f, "/rank_region_index/ranks", H5T_STD_U32LE));
    CHECK(dset_type_is(f, "/rank_region_index/event_offsets", H5T_STD_U64LE));
    CHECK(dset_type_is(f, "/rank_region_index/event_counts", H5T_STD_U64LE));
    CHECK(dset_type_is(f, "/rank_region_index/source_lines", H5T_STD_I64LE));
    CHECK(dset_type_is(f, "/rank_region_index/exclusive_totals", H5T_STD_I64LE));
    read_i64(f, "/rank_region_index/region_ids", v, 4);
    CHECK(v[0] == 0 && v[1] == 1 && v[2] == 0 && v[3] == 1);
    read_i64(f, "/rank_region_index/ranks", v, 4);
    CHECK(v[0] == 0 && v[1] == 0 && v[2] == 1 && v[3] == 1);
    read_i64(f, "/rank_region_index/event_offsets", v, 4);
    CHECK(v[0] == 0 && v[1] == 3 && v[2] == 5 && v[3] == 7);
    read_i64(f, "/rank_region_index/event_counts", v, 4);
    CHECK(v[0] == 3 && v[1] == 2 && v[2] == 2 && v[3] == 1);
    read_i64(f, "/rank_region_index/source_lines", v, 4);
    CHECK(v[0] == 7 && v[1] == -1 && v[2] == -1 && v[3] == -1);
    read_i64(f, "/rank_region_index/exclusive_totals", v, 4);
    CHECK(v[0] == -1 && v[1] == 5 && v[2] == -1 && v[3] == -1);
    read_str(f, "/rank_region_index/source_files", 0, s, sizeof s);
    CHECK_STR(s, "solver.py");
    read_str(f, "/rank_region_index/source_files", 1, s, sizeof s);
    CHECK_STR(s, "");
    read_str(f, "/rank_region_index/source_texts", 0, s, sizeof s);
    CHECK_STR(s, "x = solve()");
    read_str(f, "/rank_region_index/tags", 0, s, sizeof s);
    CHECK_STR(s, "[\"golden\", \"\\u00fc\"]");
    read_str(f, "/rank_region_index/tags", 1, s, sizeof s);
    CHECK_STR(s, "[]");
    read_str(f, "/rank_region_index/event_metadata", 0, s, sizeof s);
    CHECK_STR(s, "[{}, {\"k\": 1}, {}]");
    read_str(f, "/rank_region_index/event_metadata", 3, s, sizeof s);
    CHECK_STR(s, "[]");

    /* Events: deltas restart per row; optional columns back-filled. */
    read_i64(f, "/events/start_deltas", v, 8);
    CHECK(v[0] == 1000 && v[1] == 100 && v[2] == 200); /* A */
    CHECK(v[3] == 2000 && v[4] == 500);                /* C */
    CHECK(v[5] == 5000 && v[6] == 10);                 /* B */
    CHECK(v[7] == 6000);                               /* D */
    read_i64(f, "/events/durations", v, 8);
    CHECK(v[0] == 50 && v[1] == 150 && v[2] == 10 && v[3] == 400 && v[4] == 100 &&
          v[5] == 5 && v[6] == 20 && v[7] == 100);
    read_i64(f, "/events/gpu_durations", v, 8);
    CHECK(v[0] == -1 && v[1] == 20 && v[2] == 5 && v[3] == -1 && v[7] == -1);
    read_i64(f, "/events/call_ids", v, 8);
    CHECK(v[0] == 0 && v[2] == 2 && v[3] == -1 && v[5] == 7 && v[6] == 8 && v[7] == -1);
    read_i64(f, "/events/thread_ids", v, 8);
    CHECK(v[0] == -1 && v[3] == 0 && v[4] == 1 && v[5] == -1);
    read_i64(f, "/events/await_ns", v, 8);
    CHECK(v[0] == 0 && v[7] == 0);
    CHECK(dset_len(f, "/events/parent_ids") == 8);
    CHECK(dset_len(f, "/events/task_ids") == -1);
    CHECK(dset_type_is(f, "/events/start_deltas", H5T_STD_I64LE));

    /* summary_statistics of row A: durations 50, 150, 10; GPU 20 + 5. */
    {
        hid_t d = H5Dopen2(f, "/rank_region_index/summary_statistics", H5P_DEFAULT);
        hid_t t = H5Dget_type(d);
        CHECK(H5Tget_class(t) == H5T_COMPOUND && H5Tget_size(t) == 88 &&
              H5Tget_nmembers(t) == 11);
        char *m9 = H5Tget_member_name(t, 9);
        CHECK(m9 != NULL && strcmp(m9, "mean") == 0);
        H5free_memory(m9);
        struct {
            int64_t total, minimum, maximum, first, last, start_minimum, end_maximum;
            uint64_t gpu_count;
            int64_t gpu_total;
            double mean, m2;
        } st[4];
        hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof st[0]);
        static const char *const nm[] = {
            "total",       "minimum",   "maximum",   "first", "last", "start_minimum",
            "end_maximum", "gpu_count", "gpu_total", "mean",  "m2"};
        for (int i = 0; i < 11; i++)
            H5Tinsert(mt, nm[i], (size_t)i * 8,
                      i == 7   ? H5T_NATIVE_UINT64
                      : i >= 9 ? H5T_NATIVE_DOUBLE
                               : H5T_NATIVE_INT64);
        ASSERT(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, st) >= 0);
        CHECK(st[0].total == 210 && st[0].minimum == 10 && st[0].maximum == 150);
        CHECK(st[0].first == 50 && st[0].last == 10);
        CHECK(st[0].start_minimum == 1000 && st[0].end_maximum == 1310);
        CHECK(st[0].gpu_count == 2 && st[0].gpu_total == 25);
        CHECK(fabs(st[0].mean - 70.0) < 1e-9);
        CHECK(fabs(st[0].m2 - 10400.0) < 1e-6); /* 400 + 6400 + 3600 */
        CHECK(st[2].gpu_count == 0 && st[2].total == 25);
        H5Tclose(mt);
        H5Tclose(t);
        H5Dclose(d);
    }

    /* Lane tables. */
    CHECK(dset_type_is(f, "/thread_table/daemon", H5T_STD_I8LE));
    CHECK(dset_type_is(f, "/thread_table/ranks", H5T_STD_U32LE));
    read_i64(f, "/thread_table/end_ns", v, 2);
    CHECK(v[0] == -1 && v[1] == 500);
    read_i64(f, "/thread_table/daemon", v, 2);
    CHECK(v[0] == 0 && v[1] == 1);
    read_str(f, "/thread_table/name", 1, s, sizeof s);
    CHECK_STR(s, "worker");
    read_i64(f, "/task_table/ranks", v, 1);
    CHECK(v[0] == 1);
    read_i64(f, "/task_table/suspended_ns", v, 1);
    CHECK(v[0] == 60);
    read_str(f, "/task_table/coro_name", 0, s, sizeof s);
    CHECK_STR(s, "main");

    /* LIKWID: '/' in the tag becomes '|' in the group name only. */
    CHECK(exists(f, "/rank1/likwid/regions/io|write"));
    attr_str(f, "/rank1/likwid/regions/io|write", "tag", s, sizeof s);
    CHECK_STR(s, "io/write");
    CHECK(attr_is(f, "/rank1/likwid", "num_regions", H5T_STD_I64LE, -1));
    CHECK(attr_is(f, "/rank1/likwid/regions/io|write", "event_names", -1, 2));
    CHECK(attr_is(f, "/rank1/likwid/regions/io|write", "counter_names", -1, 0));
    {
        hid_t d = H5Dopen2(f, "/rank1/likwid/regions/io|write/events", H5P_DEFAULT);
        hid_t sp = H5Dget_space(d);
        hsize_t dims[2] = {0, 0};
        double ev[4];
        CHECK(H5Sget_simple_extent_ndims(sp) == 2);
        H5Sget_simple_extent_dims(sp, dims, NULL);
        CHECK(dims[0] == 2 && dims[1] == 2);
        H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, ev);
        CHECK(ev[0] == 1.0 && isnan(ev[3]));
        H5Sclose(sp);
        H5Dclose(d);
    }

    /* Line profile: record k is the k-th group in name order ("0","1","10","2",...). */
    int64_t first = 0;
    attr_num(f, "/rank0/line_profile/10", "first_lineno", H5T_NATIVE_INT64, &first);
    CHECK(first == 102);
    attr_num(f, "/rank0/line_profile/2", "first_lineno", H5T_NATIVE_INT64, &first);
    CHECK(first == 103);
    attr_num(f, "/rank0/line_profile/9", "first_lineno", H5T_NATIVE_INT64, &first);
    CHECK(first == 110);
    CHECK(!exists(f, "/rank1/line_profile"));
    H5Fclose(f);
}

static void test_columnar(void) {
    struct sx_run run;
    struct sx_row rows[4];
    struct sx_lane_rank thr, tsk;
    struct sx_likwid_entry lke;
    struct sx_likwid_rank lkr;
    struct sx_lp_record lpr[11];
    struct sx_lp_rank lpk;
    struct sx_error err = {0};
    char path[300];

    lk_ev[3] = NAN;
    build_run(&run, rows, &thr, &tsk, &lke, &lkr, lpr, &lpk);
    snprintf(path, sizeof path, "%s/run.h5", dir);
    enum sx_status st = sx_h5_write(&run, path, &err);
    if (st != SX_OK)
        fprintf(stderr, "sx_h5_write: %s: %s\n", err.source, err.text);
    ASSERT(st == SX_OK);
    CHECK(open_objects() == 0);
    CHECK(count_files() == 1);
    check_columnar(path);

    /* A failed write leaves the existing file alone and no temporary behind. */
    struct stat before, after;
    ASSERT(stat(path, &before) == 0);
    rows[3].region = 9; /* no such region */
    sx_error_clear(&err);
    st = sx_h5_write(&run, path, &err);
    CHECK(st == SX_ERR_VALUE);
    CHECK(strstr(err.source, "run.h5") != NULL);
    CHECK(strstr(err.source, "rank_region_index") != NULL);
    CHECK(open_objects() == 0);
    CHECK(count_files() == 1);
    ASSERT(stat(path, &after) == 0);
    CHECK(before.st_ino == after.st_ino && before.st_size == after.st_size);
    check_columnar(path);
    rows[3].region = 1;

    /* A nested object in metadata has no HDF5 form. */
    struct sx_value obj;
    sx_value_object(&obj);
    ASSERT(sx_value_set(&run.metadata, "nested", 6, obj));
    sx_error_clear(&err);
    CHECK(sx_h5_write(&run, path, &err) == SX_ERR_UNSUPPORTED);
    CHECK(strstr(err.text, "nested") != NULL);
    CHECK(open_objects() == 0);
    CHECK(count_files() == 1);

    /* A directory that cannot be made (a file is in the way) is an I/O error naming
     * the path; missing parents are created, as for an export. */
    sx_error_clear(&err);
    CHECK(sx_h5_write(&run, "/proc/version/x/run.h5", &err) == SX_ERR_IO);
    CHECK(strstr(err.source, "/proc/version") != NULL);
    sx_value_free(&run.metadata);
}

static void test_aggregate(void) {
    struct sx_run run = {0};
    struct sx_row rows[2];
    struct sx_error err = {0};
    char path[300], s[64];
    int64_t v[4];
    static const uint8_t keys[] = {SX_AGG_COUNT, SX_AGG_TOTAL, SX_AGG_MINIMUM,
                                   SX_AGG_MAXIMUM, SX_AGG_EXCLUSIVE};

    run.layout = SX_LAYOUT_AGGREGATE;
    run.names = names;
    run.nnames = 2;
    for (int r = 0; r < 2; r++) {
        rows[r] = (struct sx_row){
            .region = (uint32_t)r, .rank = 1 - r, .is_aggregate = true, .nagg = 5};
        ASSERT(sx_row_agg(&rows[r]));
        for (int k = 0; k < 5; k++)
            rows[r].agg[k] = (struct sx_agg_field){.key = keys[k], .i = 10 * (r + 1) + k};
    }
    run.rows = rows;
    run.nrows = 2;
    snprintf(path, sizeof path, "%s/agg.h5", dir);
    ASSERT(sx_h5_write(&run, path, &err) == SX_OK);
    CHECK(open_objects() == 0);

    hid_t f = open_file(path);
    attr_str(f, "/", "storage_layout", s, sizeof s);
    CHECK_STR(s, "aggregate");
    read_i64(f, "/rank_region_index/ranks", v, 2);
    CHECK(v[0] == 0 && v[1] == 1); /* rank-major */
    read_i64(f, "/rank_region_index/region_ids", v, 2);
    CHECK(v[0] == 1 && v[1] == 0);
    CHECK(dset_type_is(f, "/rank_region_index/aggregate_counts", H5T_STD_U64LE));
    read_i64(f, "/rank_region_index/aggregate_counts", v, 2);
    CHECK(v[0] == 20 && v[1] == 10);
    read_i64(f, "/rank_region_index/aggregate_exclusives", v, 2);
    CHECK(v[0] == 24 && v[1] == 14);
    read_i64(f, "/rank_region_index/aggregate_minimums", v, 2);
    CHECK(v[0] == 22);
    CHECK(dset_len(f, "/rank_region_index/event_offsets") == 0);
    CHECK(dset_len(f, "/rank_region_index/tags") == 0);
    CHECK(dset_len(f, "/rank_region_index/summary_statistics") == 0);
    CHECK(dset_len(f, "/events/start_deltas") == 0);
    CHECK(dset_len(f, "/events/durations") == 0);
    CHECK(dset_len(f, "/events/call_ids") == -1);
    H5Fclose(f);
    for (int r = 0; r < 2; r++)
        sx_row_clear(&rows[r]);
}

/* The streaming API: a row in pieces, fixed strings, chunked + deflated columns. */
static void test_stream(void) {
    struct sx_h5w *w = NULL;
    struct sx_h5w_spec spec;
    struct sx_error err = {0};
    struct sx_row row = {.region = 0, .rank = 3, .count = 5};
    const struct sx_row *rows[] = {&row};
    int64_t s1[] = {100, 110}, e1[] = {105, 130}, s2[] = {150, 151, 170},
            e2[] = {150, 160, 171}, call[] = {1, 2, 3};
    char path[300], s[64];
    int64_t v[5];

    sx_h5w_spec_init(&spec);
    spec.fixed_strings = true;
    spec.chunk = 2;
    spec.deflate = 4;
    spec.cols = SX_COLBIT(SX_COL_CALL);
    snprintf(path, sizeof path, "%s/stream.h5", dir);
    ASSERT(sx_h5w_create(path, &spec, &w, &err) == SX_OK);
    ASSERT(sx_h5w_names(w, names, 2, &err) == SX_OK);
    ASSERT(sx_h5w_index(w, rows, 1, &err) == SX_OK);
    const int64_t *c1[SX_NCOLS] = {s1, e1};
    const int64_t *c2[SX_NCOLS] = {s2, e2, NULL, call};
    ASSERT(sx_h5w_events(w, 0, 0, 2, c1, &err) == SX_OK);
    /* Out of order: the delta chain would break. */
    CHECK(sx_h5w_events(w, 0, 3, 2, c2, &err) == SX_ERR_USAGE);
    sx_h5w_abort(w);
    CHECK(open_objects() == 0);
    CHECK(access(path, F_OK) != 0);

    sx_error_clear(&err);
    ASSERT(sx_h5w_create(path, &spec, &w, &err) == SX_OK);
    ASSERT(sx_h5w_names(w, names, 2, &err) == SX_OK);
    ASSERT(sx_h5w_index(w, rows, 1, &err) == SX_OK);
    ASSERT(sx_h5w_events(w, 0, 0, 2, c1, &err) == SX_OK);
    ASSERT(sx_h5w_events(w, 0, 2, 3, c2, &err) == SX_OK);
    ASSERT(sx_h5w_set_exclusive(w, 0, 33, &err) == SX_OK);
    ASSERT(sx_h5w_finish(w, &err) == SX_OK);
    CHECK(open_objects() == 0);

    hid_t f = open_file(path);
    read_i64(f, "/events/start_deltas", v, 5);
    CHECK(v[0] == 100 && v[1] == 10 && v[2] == 40 && v[3] == 1 && v[4] == 19);
    read_i64(f, "/events/durations", v, 5);
    CHECK(v[0] == 5 && v[1] == 20 && v[2] == 0 && v[3] == 9 && v[4] == 1);
    read_i64(f, "/events/call_ids", v, 5);
    CHECK(v[0] == -1 && v[1] == -1 && v[2] == 1 && v[4] == 3);
    read_i64(f, "/rank_region_index/exclusive_totals", v, 1);
    CHECK(v[0] == 33);
    read_str(f, "/region_table/names", 1, s, sizeof s);
    CHECK_STR(s, "io/write");
    read_str(f, "/rank_region_index/tags", 0, s, sizeof s);
    CHECK_STR(s, "[]");
    {
        hid_t d = H5Dopen2(f, "/events/durations", H5P_DEFAULT);
        hid_t pl = H5Dget_create_plist(d);
        hsize_t chunk = 0;
        CHECK(H5Pget_layout(pl) == H5D_CHUNKED);
        H5Pget_chunk(pl, 1, &chunk);
        CHECK(chunk == 2);
        CHECK(H5Pget_nfilters(pl) == 2); /* shuffle, deflate */
        H5Pclose(pl);
        H5Dclose(d);
        d = H5Dopen2(f, "/rank_region_index/source_files", H5P_DEFAULT);
        hid_t t = H5Dget_type(d);
        CHECK(H5Tis_variable_str(t) == 0 && H5Tget_size(t) == 1);
        H5Tclose(t);
        H5Dclose(d);
    }
    H5Fclose(f);

    /* Finishing with events missing fails and leaves nothing behind. */
    sx_error_clear(&err);
    snprintf(path, sizeof path, "%s/short.h5", dir);
    ASSERT(sx_h5w_create(path, &spec, &w, &err) == SX_OK);
    ASSERT(sx_h5w_names(w, names, 2, &err) == SX_OK);
    ASSERT(sx_h5w_index(w, rows, 1, &err) == SX_OK);
    ASSERT(sx_h5w_events(w, 0, 0, 2, c1, &err) == SX_OK);
    CHECK(sx_h5w_finish(w, &err) == SX_ERR_USAGE);
    CHECK(access(path, F_OK) != 0);
    CHECK(open_objects() == 0);
}

static void remove_dir(void) {
    DIR *d = opendir(dir);
    char p[600];
    if (d == NULL)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/test_h5_write.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ASSERT(mkdtemp(dir) != NULL);
    test_columnar();
    test_aggregate();
    test_stream();
    remove_dir();
    TEST_DONE();
}
