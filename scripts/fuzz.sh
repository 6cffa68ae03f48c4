#!/usr/bin/env bash
# fuzz.sh - build the libFuzzer harnesses (build-fuzz/) and run each for SECONDS (default 60)
#   scripts/fuzz.sh [SECONDS]
# Environment: SX_SHARED_DIR (reference runs), BUILD_DIR (default build-fuzz),
# SX_FUZZ_TARGETS ("fuzz_json fuzz_h5"), SX_FUZZ_HDF5_STRICT=1 (see tests/fuzz/hdf5.supp).
# Seeds come from the reference runs in ../shared (copied, never touched) and a few
# hand-made snippets. The corpora grow in build-fuzz/corpus across runs; findings
# land in build-fuzz/artifacts/<target>/. Exit status 1 when a target found a crash.
set -euo pipefail
secs=${1:-60}
case $secs in '' | *[!0-9]*) echo "usage: $0 [SECONDS per target]" >&2; exit 2 ;; esac
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build-fuzz}
shared=${SX_SHARED_DIR:-$(cd "$top/.." && pwd)/shared}
targets=${SX_FUZZ_TARGETS:-"fuzz_json fuzz_h5"}

# clang with libFuzzer: probe by linking an empty harness
probe() {
    local d
    d=$(mktemp -d)
    printf 'int LLVMFuzzerTestOneInput(const unsigned char *p, unsigned long n)\n{ (void)p; (void)n; return 0; }\n' >"$d/p.c"
    clang -fsanitize=fuzzer,address,undefined "$d/p.c" -o "$d/p" >/dev/null 2>&1
    local rc=$?
    rm -rf "$d"
    return $rc
}
if ! command -v clang >/dev/null || ! probe; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "fuzz: installing clang and its fuzzer runtime"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        clang libclang-rt-dev
    probe || { echo "fuzz: clang cannot link -fsanitize=fuzzer" >&2; exit 1; }
fi

CC=clang cmake -S "$top" -B "$build" -DSX_FUZZ=ON -DSX_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSX_SHARED_DIR="$shared" >/dev/null
cmake --build "$build" --target fuzz -j "$(nproc)" >/dev/null

# Seeds: fresh copies each run (the reference files stay where they are, untouched).
# Very large files only slow the mutator down, so they are left out.
seeds=$build/seeds
rm -rf "$seeds"
mkdir -p "$seeds/fuzz_json" "$seeds/fuzz_h5"
add_seed() { # target file name max_bytes
    [ -f "$2" ] || return 0
    [ "$(stat -c %s "$2")" -le "$4" ] || return 0
    cp "$2" "$seeds/$1/$3"
}
if [ -d "$shared" ]; then
    for d in "$shared"/golden/*/; do
        c=$(basename "$d")
        for f in run.json run.json.gz run.summary.json run.indent2.json; do
            add_seed fuzz_json "$d/$f" "$c.$f" 262144
        done
        add_seed fuzz_h5 "$d/run.h5" "$c.run.h5" 262144
    done
    add_seed fuzz_json "$shared/fixtures/compat/json-v1.json" compat.json-v1.json 262144
    for f in "$shared"/fixtures/compat/*.h5; do
        add_seed fuzz_h5 "$f" "compat.$(basename "$f")" 262144
    done
else
    echo "fuzz: note: $shared not found, hand-made seeds only"
fi
hand() { printf '%s' "$2" >"$seeds/fuzz_json/hand.$1"; }
hand meta-empty '[]'
hand meta-dicts '[{}, {"n": 1, "x": 2.5}, {"s": "caf\u00e9", "l": [1, null, true]}]'
hand meta-big '[{"u": 18446744073709551615, "b": -99999999999999999999, "f": 1e-05}]'
hand meta-nested '[{"a": {"b": {"c": [[], {}, "\ud83d\ude00"]}}}]'
hand tags '["solver", "gpu", "", "\u0000", "caf\u00e9"]'
hand tags-empty '[]'
hand doc-min '{"format": "scope-profiler-profile", "format_version": 1, "regions": []}'
hand doc-row '{"format": "scope-profiler-profile", "format_version": 1, "num_ranks": 1, "metadata": {"k": [1, 2.0, "v"]}, "regions": [{"name": "a", "rank": 0, "tags": ["t"], "start_times_ns": [1, 5], "end_times_ns": [3, 9], "call_ids": [0, 1], "parent_ids": [-1, 0], "event_metadata": [{}, {"i": 1}], "exclusive_total_ns": 6}, {"name": "b", "rank": "1", "aggregate": {"count": 2, "total": 7.5, "gpu_count": 18446744073709551615}, "event_data_available": false}], "threads": {"0": [{"index": 0, "name": "Main", "ident": 1, "native_id": 2, "daemon": false, "start_ns": 0, "end_ns": 9, "cpu_ns": 5}]}, "tasks": {"0": [{"index": 0, "kind": "task", "name": "t", "coro_name": "c", "thread_index": 0, "created_ns": 1, "done_ns": 2, "steps": 1, "running_ns": 1, "suspended_ns": 0}]}}'
# rows the reader's fast path takes (escapes, raw UTF-8, floats and null in event metadata)
# beside one it leaves to jansson (nested metadata, an unknown key)
hand doc-fast-rows '{"format": "scope-profiler-profile", "regions": [{"name": "l\u00f6sen \"q\" \\ \ud83d\ude00 é", "rank": 1, "source_file": null, "source_lineno": 7, "tags": ["\u0000", ""], "start_times_ns": [0, -1, 9223372036854775807,2 , 3], "end_times_ns": [1,2,3,4,5], "event_metadata": [{}, {"i": -9223372036854775808, "f": 1e-05, "z": -0.0, "s": "\n", "t": true, "n": null}, {}, {"\u00e9": 2.5}, {}], "exclusive_total_ns": 4}, {"name": "b", "rank": 0, "start_times_ns": [1], "end_times_ns": [2], "event_metadata": [{"p": {"l": [1, "]\"}"]}}], "x": 1}]}'

corpus=$build/corpus
# the harnesses' scratch files (one pair per process; a crashed child leaves its pair)
scratch=$(mktemp -d "$([ -w /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")/sx_fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export SX_FUZZ_TMPDIR=$scratch
rm -rf "$build/artifacts"
found=0
summary=()
for t in $targets; do
    exe=$build/tests/fuzz/$t
    art=$build/artifacts/$t
    log=$build/$t.log
    mkdir -p "$corpus/$t" "$art"
    dict=()
    [ "$t" = fuzz_json ] && dict=(-dict="$top/tests/fuzz/json.dict")
    asan=${ASAN_OPTIONS:-detect_leaks=1}
    # libhdf5's own over-reads on malformed files (through strdup etc.) would stop every
    # job; they are HDF5's bugs, so they are suppressed unless SX_FUZZ_HDF5_STRICT=1.
    [ "$t" = fuzz_h5 ] && [ "${SX_FUZZ_HDF5_STRICT:-0}" != 1 ] &&
        asan="$asan:suppressions=$top/tests/fuzz/hdf5.supp"
    echo "fuzz: $t for ${secs}s (log: $log)"
    # fork mode with one child: a crash is saved and fuzzing goes on until the time is up
    set +e
    ASAN_OPTIONS=$asan \
        UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$exe" -fork=1 -ignore_crashes=1 -max_total_time="$secs" -rss_limit_mb=2048 \
        -timeout=10 -print_final_stats=1 -artifact_prefix="$art/" "${dict[@]}" \
        "$corpus/$t" "$seeds/$t" >"$log" 2>&1
    rc=$?
    set -e
    execs=$(grep -Eo '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    ncorp=$(find "$corpus/$t" -type f | wc -l)
    ncrash=$(find "$art" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
        -o -name 'oom-*' \) | wc -l)
    line=$(printf '%-10s executions %-10s corpus %-6s crashes %s (exit %s)' "$t" \
        "${execs:-?}" "$ncorp" "$ncrash" "$rc")
    summary+=("$line")
    [ "$ncrash" -eq 0 ] || found=1
done
echo
echo "fuzz: ${secs}s per target"
printf '%s\n' "${summary[@]}"
if [ "$found" -ne 0 ]; then
    echo "fuzz: findings in $build/artifacts (reproduce: $build/tests/fuzz/<target> <file>)"
    find "$build/artifacts" -type f | sed 's/^/  /'
    exit 1
fi
