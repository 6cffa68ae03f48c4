#!/usr/bin/env bash
# test_synth.sh - scope-export-synth writes scope-profiler's schema-3 layout for each option set
set -u

bin="${SX_BIN_DIR:-build}/scope-export-synth"
if grep -q '^SX_SANITIZE:BOOL=ON' "${SX_BIN_DIR:-build}/CMakeCache.txt" 2>/dev/null; then
    echo "skip: a sanitizer build; the test generator (the normal build runs this test)"
    exit 77
fi
if ! command -v h5dump >/dev/null 2>&1; then
    echo "SKIP: h5dump not found (install hdf5-tools); it is needed to inspect the files" >&2
    exit 77
fi
if [ ! -x "$bin" ]; then
    echo "FAIL: $bin is not built (set SX_BIN_DIR to the build directory)" >&2
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_synth.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# gen NAME ARGS...: write $tmp/NAME.h5, failing the test if the generator fails.
gen() {
    local name=$1
    shift
    if ! "$bin" "$@" "$tmp/$name.h5" 2>"$tmp/$name.err"; then
        fail "$name: scope-export-synth $* failed: $(cat "$tmp/$name.err")"
        return 1
    fi
    h5dump -H "$tmp/$name.h5" >"$tmp/$name.hdr" 2>&1 || fail "$name: h5dump -H failed"
}

# has FILE OBJECT: the dataset or group exists.
has() {
    h5dump -H -d "$2" "$1" >/dev/null 2>&1 || h5dump -H -g "$2" "$1" >/dev/null 2>&1
}
want() { has "$tmp/$1.h5" "$2" || fail "$1: $2 missing"; }
lacks() { ! has "$tmp/$1.h5" "$2" || fail "$1: $2 should not exist"; }

# header NAME OBJECT: h5dump -H of one object, flattened to one line.
header() { h5dump -H -p -d "$2" "$tmp/$1.h5" 2>/dev/null | tr -s ' \n' ' '; }

# data NAME DATASET: the values of a dataset, one line.
data() { h5dump -d "$2" -y -w 0 "$tmp/$1.h5" 2>/dev/null | sed -n '/DATA {/,/}/p' | tr -s ' \n' ' '; }

# 1. Defaults: the columnar schema-3 skeleton and nothing optional.
if gen base --events 100; then
    grep -q 'ATTRIBUTE "scope_profiler_schema"' "$tmp/base.hdr" || fail "base: no schema attribute"
    [ "$(h5dump -a /scope_profiler_schema "$tmp/base.h5" | grep -c '(0): 3')" = 1 ] ||
        fail "base: scope_profiler_schema is not 3"
    h5dump -a /storage_layout "$tmp/base.h5" | grep -q '"columnar"' || fail "base: not columnar"
    for o in /metadata /region_table/names /rank_region_index/region_ids \
        /rank_region_index/ranks /rank_region_index/event_offsets \
        /rank_region_index/event_counts /rank_region_index/source_lines \
        /rank_region_index/exclusive_totals /rank_region_index/summary_statistics \
        /rank_region_index/source_files /rank_region_index/source_texts \
        /rank_region_index/tags /events/start_deltas /events/durations; do
        want base "$o"
    done
    for o in /events/gpu_durations /events/call_ids /events/await_ns /thread_table \
        /task_table /rank_region_index/event_metadata /rank0; do
        lacks base "$o"
    done
    header base /events/durations | grep -q 'SIMPLE { ( 100 ) / ( 100 ) }' ||
        fail "base: durations is not 100 events"
    header base /events/durations | grep -q 'CONTIGUOUS' || fail "base: durations not contiguous"
    header base /rank_region_index/summary_statistics | grep -q 'H5T_IEEE_F64LE "m2"' ||
        fail "base: summary_statistics has no m2 field"
    header base /region_table/names | grep -q 'STRSIZE H5T_VARIABLE' ||
        fail "base: names are not vlen strings"
    counts=$(data base /rank_region_index/event_counts)
    sum=0
    for c in $(echo "$counts" | grep -o '[0-9][0-9]*'); do sum=$((sum + c)); done
    [ "$sum" = 100 ] || fail "base: event_counts sum to $sum, not 100 ($counts)"
fi

# 2. Every optional column, metadata and lanes.
if gen all --ranks 3 --regions 5 --events 2000 --columns all --lanes; then
    for c in start_deltas durations gpu_durations call_ids parent_ids thread_ids task_ids \
        await_ns; do
        want all "/events/$c"
        header all "/events/$c" | grep -q 'H5T_STD_I64LE' || fail "all: $c is not int64"
    done
    want all /rank_region_index/event_metadata
    for c in ranks index ident native_id daemon start_ns end_ns cpu_ns name; do
        want all "/thread_table/$c"
    done
    for c in ranks index thread_index created_ns done_ns steps running_ns suspended_ns kind \
        name coro_name; do
        want all "/task_table/$c"
    done
    header all /thread_table/daemon | grep -q 'H5T_STD_I8LE' || fail "all: daemon is not int8"
    data all /rank_region_index/event_metadata | grep -q '{"iter": 3}' ||
        fail "all: event_metadata holds no dict"
fi

# 3. Aggregate layout: aggregate columns, empty event columns.
if gen agg --aggregate --ranks 2 --regions 3 --events 500; then
    h5dump -a /storage_layout "$tmp/agg.h5" | grep -q '"aggregate"' || fail "agg: not aggregate"
    for c in aggregate_counts aggregate_totals aggregate_minimums aggregate_maximums \
        aggregate_exclusives; do
        want agg "/rank_region_index/$c"
    done
    header agg /events/start_deltas | grep -q 'SIMPLE { ( 0 ) / ( 0 ) }' ||
        fail "agg: start_deltas is not empty"
    header agg /rank_region_index/tags | grep -q 'SIMPLE { ( 0 ) / ( 0 ) }' ||
        fail "agg: tags is not empty"
fi

# 4. Fixed-length strings, as the parallel writer stores them.
if gen fixed --strings fixed --columns meta; then
    for o in /region_table/names /rank_region_index/source_files \
        /rank_region_index/source_texts /rank_region_index/tags \
        /rank_region_index/event_metadata; do
        header fixed "$o" | grep -q 'STRPAD H5T_STR_NULLPAD' || fail "fixed: $o is not NULLPAD"
        header fixed "$o" | grep -q 'CSET H5T_CSET_UTF8' || fail "fixed: $o is not UTF-8"
    done
fi

# 5. Chunked and deflated event columns.
if gen chunk --events 5000 --chunk 1000 --deflate 4 --columns call; then
    for c in start_deltas durations call_ids; do
        h=$(header chunk "/events/$c")
        echo "$h" | grep -q 'CHUNKED ( 1000 )' || fail "chunk: $c is not chunked by 1000"
        echo "$h" | grep -q 'DEFLATE { LEVEL 4 }' || fail "chunk: $c is not deflated"
        echo "$h" | grep -q 'SHUFFLE' || fail "chunk: $c has no shuffle"
    done
fi

# 6. LIKWID, line profile, empty ranks.
if gen aux --ranks 4 --regions 3 --events 300 --likwid --lineprof --empty-ranks; then
    want aux "/rank0/likwid/regions/io|write"
    want aux "/rank0/likwid/regions/Assemble/events"
    want aux /rank0/line_profile/10/line_numbers
    want aux /rank2/line_profile/1/times
    lacks aux /rank1
    h5dump -a "/rank0/likwid/regions/io|write/tag" "$tmp/aux.h5" | grep -q '"io/write"' ||
        fail "aux: LIKWID tag attribute is not the original tag"
    data aux /rank_region_index/ranks | grep -q '\b1\b' && fail "aux: empty rank 1 has rows"
    data aux /rank0/likwid/regions/Assemble/times | grep -q 'nan' ||
        fail "aux: LIKWID times hold no NaN"
fi

# 7. Non-ASCII names; one huge row with --skew.
if gen uni --unicode --regions 6 --events 1000 --skew 0.9; then
    data uni /region_table/names | grep -q 'launch' || fail "uni: no region names"
    max=0
    for c in $(data uni /rank_region_index/event_counts | grep -o '[0-9][0-9]*'); do
        [ "$c" -gt "$max" ] && max=$c
    done
    [ "$max" -ge 900 ] || fail "uni: --skew 0.9 gave a largest row of $max events"
fi

# 8. No events at all is still a valid file.
if gen empty --events 0; then
    header empty /events/durations | grep -q 'SIMPLE { ( 0 ) / ( 0 ) }' ||
        fail "empty: durations is not empty"
fi

# 9. Deterministic from the seed; a different seed gives different data.
gen s1 --seed 7 --columns all --events 300 && gen s2 --seed 7 --columns all --events 300 &&
    gen s3 --seed 8 --columns all --events 300 && {
    h5dump "$tmp/s1.h5" | tail -n +2 >"$tmp/s1.txt"
    h5dump "$tmp/s2.h5" | tail -n +2 >"$tmp/s2.txt"
    h5dump "$tmp/s3.h5" | tail -n +2 >"$tmp/s3.txt"
    cmp -s "$tmp/s1.txt" "$tmp/s2.txt" || fail "seed: same seed, different content"
    cmp -s "$tmp/s1.txt" "$tmp/s3.txt" && fail "seed: different seeds, same content"
}

# 10. Usage errors exit 2 and write nothing.
"$bin" --ranks 0 "$tmp/bad.h5" 2>/dev/null
[ $? = 2 ] || fail "usage: --ranks 0 did not exit 2"
"$bin" --columns bogus "$tmp/bad.h5" 2>/dev/null
[ $? = 2 ] || fail "usage: --columns bogus did not exit 2"
[ -e "$tmp/bad.h5" ] && fail "usage: a file was written"
leftover=$(find "$tmp" -name '.*.??????' | head -1)
[ -z "$leftover" ] || fail "temporary file left behind: $leftover"

if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)" >&2
    exit 1
fi
echo "test_synth: all checks passed"
exit 0
