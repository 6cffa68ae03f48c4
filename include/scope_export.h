/* scope_export.h - export scope-profiler HDF5 runs as JSON, in parallel over MPI */
#ifndef SCOPE_EXPORT_H
#define SCOPE_EXPORT_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The library is built with hidden visibility: only what this header declares
 * with SX_API is global in libscope_export.so and in libscope_export.a.
 */
/*
 * Threads. The calls that read or write runs (sx_export, sx_export_args,
 * sx_export_args_f, sx_export_native, sx_import, sx_import_native, sx_validate)
 * must not run concurrently in one process: the HDF5 library they use
 * (the parallel build) is not thread-safe, and neither may the host call HDF5 from
 * another thread while one of them runs. One after another they are independent:
 * two exports in one process give what two processes give, an interrupted one
 * followed by a good one included. The host's process-wide state is left as it was
 * (the umask is only read; a SIGBUS handler is installed only while a run's file is
 * mapped, passes any other SIGBUS to the handler that was there before, and is
 * removed with the last mapping unless the host has set another since). Any thread,
 * at any time: sx_options_init, sx_strerror, sx_version, sx_has_isal, and sx_args_*
 * on an sx_args no other thread uses. From a signal handler: sx_request_stop
 * (async-signal-safe).
 */
/*
 * SX_WARN_UNUSED: the compiler warns when the status of a fallible call is dropped
 * (GCC and Clang; nothing elsewhere).
 */
#if defined(__GNUC__)
#define SX_API __attribute__((visibility("default")))
#define SX_WARN_UNUSED __attribute__((warn_unused_result))
#else
#define SX_API
#define SX_WARN_UNUSED
#endif

#define SX_VERSION_MAJOR 0
#define SX_VERSION_MINOR 3
#define SX_VERSION_PATCH 0
#define SX_VERSION_STRING "0.3.0"
/* One number for #if: major * 10000 + minor * 100 + patch (0.3.0 is 300). */
#define SX_VERSION_NUMBER                                                                \
    (SX_VERSION_MAJOR * 10000 + SX_VERSION_MINOR * 100 + SX_VERSION_PATCH)

/*
 * Status of a fallible call. Values are part of the ABI and are never
 * renumbered; SX_OK is zero.
 */
enum sx_status {
    SX_OK = 0,
    SX_ERR_USAGE = 1,       /* bad argument or option */
    SX_ERR_NOT_FOUND = 2,   /* input file missing */
    SX_ERR_OPEN = 3,        /* input cannot be opened or is not HDF5/JSON */
    SX_ERR_FORMAT = 4,      /* input is not a scope-profiler run, or is damaged */
    SX_ERR_UNSUPPORTED = 5, /* schema/format version or HDF5 filter not supported */
    SX_ERR_NOMEM = 6,       /* allocation failed */
    SX_ERR_IO = 7,          /* reading or writing failed */
    SX_ERR_MPI = 8,         /* an MPI call failed */
    SX_ERR_VALUE = 9,       /* a value cannot be written as JSON (e.g. NaN) */
    SX_ERR_INTERNAL = 10,   /* a bug: please report */
    SX_ERR_INTERRUPTED = 11 /* stopped by sx_request_stop() (e.g. a signal) */
};

/*
 * The first error of a call, like jansson's json_error_t. 'text' is one
 * line; 'source' names the file and the object ("run.h5:/events/durations");
 * 'rank' is the MPI rank (in the communicator the call was given) that
 * failed first, or -1 outside MPI.
 */
#define SX_ERROR_TEXT_LENGTH 512
#define SX_ERROR_SOURCE_LENGTH 512
struct sx_error {
    enum sx_status code;
    int rank;
    char text[SX_ERROR_TEXT_LENGTH];
    char source[SX_ERROR_SOURCE_LENGTH];
};

/* Which deflate engine compresses .gz output. */
enum sx_deflate {
    SX_DEFLATE_ZLIB = 0,
    SX_DEFLATE_ISAL = 1 /* only when built with ISA-L; see sx_has_isal() */
};

/* Which document an export writes. */
enum sx_format {
    SX_FORMAT_JSON = 0,         /* scope-profiler's JSON profile (json_export) */
    SX_FORMAT_CHROME_TRACE = 1, /* Chrome Trace Event (Perfetto UI, DevTools) */
    SX_FORMAT_SPEEDSCOPE = 2,   /* speedscope's evented profiles */
    /* region_statistics.json of scope-profiler's plot-data export: every rank
     * unless 'ranks' is given */
    SX_FORMAT_REGION_STATISTICS = 3,
    /* pstats files of export_prof, "<stem>_rank<N>.prof" beside the output (rank 0
     * unless 'ranks' is given) */
    SX_FORMAT_PROF = 4,
    /* a flame graph (SVG) per rank of the same call paths, "<stem>_rank<N>.svg" */
    SX_FORMAT_FLAMEGRAPH = 5,
    /* Perfetto's protobuf trace (Perfetto UI, trace_processor): a slice per call on
     * its lane's thread track; every rank unless 'ranks' is given */
    SX_FORMAT_PERFETTO = 6,
    /* an OTF2 trace archive OUT.otf2, OUT.def and OUT/ (Vampir, otf2-print); every rank
     * unless 'ranks' is given */
    SX_FORMAT_OTF2 = 7
};

/*
 * Options of an export. The caller owns the struct; fill it with
 * sx_options_init() and then set fields. String arrays are borrowed for the
 * duration of the call only.
 *
 * The struct's layout is not a stable ABI: a release may add fields (before 1.0
 * such a release changes the shared library's SONAME, which carries major.minor),
 * so a program must run with the library of the header it was compiled with.
 * The stable route is sx_args (below): options by name, which the Python and
 * Fortran bindings use, as should a program that loads the library at run time.
 */
struct sx_options {
    int indent;              /* -1: one line (default); N >= 0: json.dumps(indent=N) */
    int summary;             /* 1: summary-only read (read_h5_summary) */
    int gzip_level;          /* 0..9 for .gz output; default 6 */
    enum sx_deflate deflate; /* engine for .gz output; default zlib */
    /*
     * The document: JSON profile (default), Chrome trace or speedscope. The
     * trace formats keep rank 0 only when 'ranks' is NULL, as scope-profiler
     * does, and fail on a rank outside the run.
     */
    enum sx_format format;
    const char *const *include; /* region name patterns (re.match); NULL = all */
    size_t n_include;
    const char *const *exclude; /* region name patterns to drop */
    size_t n_exclude;
    const int64_t *ranks; /* ranks to keep; NULL = every rank */
    size_t n_ranks;
    size_t block_bytes; /* target bytes of JSON text per block; 0 = default */
    /*
     * Progress callback, called on rank 0 only, after each block written:
     * 'done' of 'total' units of work, counted exactly from the plan (the
     * document's rows and events), so 'done' ends equal to 'total'. Units,
     * not bytes: the text's length is known only once it is made. NULL = no
     * progress.
     */
    void (*progress)(uint64_t done, uint64_t total, void *user);
    void *progress_user;
    /* The trace formats' document name; NULL = the run's label (borrowed). */
    const char *label;
    /* SX_FORMAT_PROF: 1 = one entry per region (export_prof's call_paths=False) */
    int no_call_paths;
    /* SX_FORMAT_FLAMEGRAPH: the SVG's width in pixels; 0 = 1200 */
    int width;
};

/* Fill 'opts' with the defaults. */
SX_API void sx_options_init(struct sx_options *opts);

/*
 * Export the run in 'input' (a scope-profiler HDF5 file) as a JSON document
 * to 'output'; a name ending in ".gz" (any case) is written gzip-compressed.
 * Parent directories of 'output' are created. The output is written under a
 * temporary name in its directory and renamed when complete: a failed call
 * leaves no file and never destroys an existing 'output'.
 *
 * Collective over 'comm': every rank reads its share of the events and
 * formats its share of the document; rank 0 writes the file. Every rank
 * returns the same status, and 'err' (may be NULL) receives the same error
 * on every rank. 'opts' may be NULL for the defaults. MPI must be
 * initialized; the call neither initializes nor finalizes MPI or HDF5 and
 * leaves no HDF5 identifier open.
 *
 * With 'comm' MPI_COMM_NULL the call runs on the calling process alone and
 * makes no MPI call at all, so MPI need not be initialized (the output is the
 * same as with one rank).
 *
 * The process that writes the file writes it from a thread of its own, which
 * makes no MPI call, when MPI was initialized with MPI_THREAD_FUNNELED or more
 * (or 'comm' is MPI_COMM_NULL); under MPI_THREAD_SINGLE the calling thread
 * writes it. Under the same condition, a rank whose affinity allows more than
 * one CPU decodes half of the deflated chunks it reads in a helper thread,
 * which makes no MPI or HDF5 call (SCOPE_EXPORT_THREADS=0: none). The threads
 * are gone when the call returns.
 *
 * The environment variable SCOPE_EXPORT_DIRECT_READS, read by each rank at
 * each call: "0" reads the run through the HDF5 library alone; otherwise the
 * integer columns and event metadata of suitable datasets are read straight
 * from the file (the same output, faster on runs of many rows).
 */
SX_API SX_WARN_UNUSED enum sx_status sx_export(MPI_Comm comm, const char *input,
                                               const char *output,
                                               const struct sx_options *opts,
                                               struct sx_error *err);

/*
 * Check a document or run: a JSON profile (.json, .json.gz or by content)
 * or an HDF5 run; a FIFO or a device is not one. Not collective: runs on the
 * calling process alone.
 */
SX_API SX_WARN_UNUSED enum sx_status sx_validate(const char *path, struct sx_error *err);

/*
 * sx_validate() by the processes of 'comm' together: a plain JSON profile of
 * a few MiB or more is read in parts, one a process, each starting at a row
 * of its regions (when a part's start cannot be confirmed, rank 0 reads the
 * document alone); gzip, HDF5 and small files are read by rank 0 alone.
 * Every rank returns the same status and error: the document's first error,
 * as sx_validate() gives it. Collective over 'comm'; MPI_COMM_NULL is
 * sx_validate().
 */
SX_API SX_WARN_UNUSED enum sx_status sx_validate_mpi(MPI_Comm comm, const char *path,
                                                     struct sx_error *err);

/*
 * A JSON profile, checked as sx_validate() checks it, for a reader that
 * builds its own objects (the Python module's load()): the document's text
 * with each event column (start_times_ns, end_times_ns, gpu_durations_ns,
 * call_ids, parent_ids, thread_ids, task_ids, await_ns) of a row replaced by
 * the string "\u0000sx<N>", and the columns' int64 values. A column the fast
 * reader did not take (a row in an unusual form) stays in the text as it is.
 * '*loaded' is new; release it with sx_loaded_free(). Not collective.
 */
struct sx_loaded;
SX_API SX_WARN_UNUSED enum sx_status sx_load(const char *path, struct sx_loaded **loaded,
                                             struct sx_error *err);
/* The text ('*len' bytes, NUL-terminated); borrowed from 'loaded'. */
SX_API const char *sx_loaded_text(const struct sx_loaded *loaded, size_t *len);
/*
 * The columns' values one after another ('*n' int64, borrowed), and where
 * each column ends: '*ncolumns' + 1 counts of values (borrowed), the first 0;
 * column N is values[ends[N] .. ends[N + 1]).
 */
SX_API const int64_t *sx_loaded_values(const struct sx_loaded *loaded, size_t *n);
/*
 * The event_metadata lists the reader took apart, as a JSON list ('*len'
 * bytes, borrowed): item N, for the string "\u0000sxm<N>" in the text, is
 * [length, index, object, index, object, ...]: the list's length and its
 * non-empty objects with their places; every other object of it is {}.
 */
SX_API const char *sx_loaded_metadata(const struct sx_loaded *loaded, size_t *len);
SX_API const int64_t *sx_loaded_ends(const struct sx_loaded *loaded, size_t *ncolumns);
/*
 * Where the markers are, so that a reader need not look for them: '*n' pairs
 * of int64 (borrowed), in the order of the text: (i, c) for a column marker of
 * element i of "regions", c its column (0 start_times_ns .. 7 await_ns, in the
 * order above), (i, -1) for an event_metadata marker, (i, -2) for an element
 * the fast reader left as text. None ('*n' 0) when the document has no
 * "regions" key or more than one (a JSON reader keeps the last).
 */
SX_API const int64_t *sx_loaded_slots(const struct sx_loaded *loaded, size_t *n);
/* Accepts NULL. */
SX_API void sx_loaded_free(struct sx_loaded *loaded);

/*
 * Read a JSON profile in 'input' (a regular file) and write it as a schema-3
 * HDF5 run to 'output' (atomically; an existing file keeps its mode and, where
 * we may, its owner). The document is read twice, its index then its events
 * row by row, so the text is never held whole; the HDF5 file is built in
 * memory and written out whole, so a
 * failed write (a full disk, a size limit) is an error here, never a crash of
 * the HDF5 library later at the process's exit. 'output' being 'input' is
 * SX_ERR_USAGE. Not collective: runs on the calling process alone.
 */
SX_API SX_WARN_UNUSED enum sx_status sx_import(const char *input, const char *output,
                                               struct sx_error *err);

/*
 * Export a native run - the per-process files scope-profiler's C and Fortran
 * APIs write, <prefix>_rank<NNNNN>.h5 and <prefix>_rank<NNNNN>.spt - as one
 * JSON document to 'output': the document of `scope-profiler import-native
 * INPUTS -o M` exported, without writing M. 'inputs' are 'n_inputs' files
 * and directories as import-native takes them (a directory gives its *.spt
 * and *_rank[0-9]*.h5 entries). 'label' is the run's label; NULL or "" gives
 * the name of 'output' without its document suffix (.json, .trace.json,
 * .speedscope.json, .pftrace, each also with .gz: profile.json.gz gives "profile"),
 * or else without its last suffix. 'opts' as for sx_export(); a
 * summary-only read does not apply.
 *
 * Collective over 'comm'. Each rank passes its own inputs (a profiler's
 * finalize passes just the file it wrote; a command line may pass the same
 * list everywhere): the run is the union of every rank's files, a path named
 * by several ranks read once. Each file's index is read by one rank that
 * named it, and what the document needs of the whole run is agreed with
 * collectives. Every rank returns the same status and error; on failure no
 * output is written and an existing 'output' is left as it was. With 'comm'
 * MPI_COMM_NULL the call runs on this process alone, without MPI. The output
 * is written from a thread of its own as sx_export() says.
 */
SX_API SX_WARN_UNUSED enum sx_status
sx_export_native(MPI_Comm comm, const char *const *inputs, size_t n_inputs,
                 const char *output, const char *label, const struct sx_options *opts,
                 struct sx_error *err);

/*
 * Merge a native run (inputs and 'label' as for sx_export_native()) into one
 * schema-3 HDF5 run in 'output', as `scope-profiler import-native INPUTS -o
 * output [--label L]` does; its export is the document sx_export_native()
 * writes. Written under a temporary name and renamed when complete.
 * Collective over 'comm' like sx_export_native(): each rank copies the
 * events of the files it reads, through MPI-IO.
 */
SX_API SX_WARN_UNUSED enum sx_status
sx_import_native(MPI_Comm comm, const char *const *inputs, size_t n_inputs,
                 const char *output, const char *label, struct sx_error *err);

/*
 * Ask running exports on this process to stop at the next block and fail
 * with SX_ERR_INTERRUPTED. Async-signal-safe: meant for a signal handler.
 * Returns how many outputs this process was writing (or knew another rank
 * to be writing) under their temporary names: those are removed now and
 * will not be written, so their exports are sure to fail; 0 when none was
 * (not yet created, or already renamed into place).
 * The stop applies to the exports running when it is asked for: an export
 * started afterwards runs to its end.
 */
SX_API int sx_request_stop(void);

/*
 * Options by name, for callers that cannot or should not follow the layout
 * of struct sx_options (language bindings, programs that load the library at
 * run time): a set of "key" = "value" strings with the command's long option
 * names. Keys: "indent" (0..1000), "summary" ("1"/"0", "true"/"false";
 * NULL value: "1"), "ranks" ("0,2,5-7"; the last one set counts), "include"
 * and "exclude" (a regular expression; each call adds one), "gzip-level"
 * (0..9), "deflate" ("zlib" or "isal"), "block-size" (bytes, 1024..2^30),
 * "format" ("json", "chrome-trace", "speedscope", "region-statistics",
 * "prof", "flamegraph", "perfetto", "otf2"), "no-call-paths" (as "summary").
 * Unset keys keep sx_options_init()'s defaults.
 */
struct sx_args;

/* A new, empty set of options to free with sx_args_free(); NULL when out of memory. */
SX_API struct sx_args *sx_args_new(void);

/* Free 'a' and everything it holds; NULL is allowed. */
SX_API void sx_args_free(struct sx_args *a);

/*
 * Set option 'key' to 'value' in 'a' (both borrowed: the library keeps
 * copies). An unknown key or a bad value is SX_ERR_USAGE, and 'a' is left
 * as it was; 'err' (may be NULL) says which key and why.
 */
SX_API SX_WARN_UNUSED enum sx_status sx_args_set(struct sx_args *a, const char *key,
                                                 const char *value, struct sx_error *err);

/*
 * sx_export() with the options in 'a' (borrowed; NULL for the defaults).
 * Collective over 'comm' as sx_export() is; MPI_COMM_NULL runs on the
 * calling process alone without MPI.
 */
SX_API SX_WARN_UNUSED enum sx_status sx_export_args(MPI_Comm comm, const char *input,
                                                    const char *output,
                                                    const struct sx_args *a,
                                                    struct sx_error *err);

/*
 * sx_export_args() for callers that hold a Fortran communicator handle: a
 * Fortran INTEGER of `use mpi`, the MPI_VAL of a `use mpi_f08` TYPE(MPI_Comm),
 * or mpi4py's Comm.py2f(). '*fcomm' is converted with MPI_Comm_f2c() (MPI
 * must be initialized); 'fcomm' NULL runs on the calling process alone and
 * makes no MPI call at all, like MPI_COMM_NULL in sx_export().
 */
SX_API SX_WARN_UNUSED enum sx_status
sx_export_args_f(const MPI_Fint *fcomm, const char *input, const char *output,
                 const struct sx_args *a, struct sx_error *err);

/* Whether this build has the ISA-L deflate engine. */
SX_API int sx_has_isal(void);

/* A short English description of 'status'. Never NULL. */
SX_API const char *sx_strerror(enum sx_status status);

/* The library version, e.g. "0.3.0". */
SX_API const char *sx_version(void);

#ifdef __cplusplus
}
#endif

#endif /* SCOPE_EXPORT_H */
