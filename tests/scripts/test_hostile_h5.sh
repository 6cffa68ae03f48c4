#!/usr/bin/env bash
# test_hostile_h5.sh - runs crafted to attack the reader: a string length of 4 GiB, data
# in other files (external storage, an external link, a virtual dataset), a rank of
# 2^32 - 1, a negative count, tags that are not JSON. Each is refused quickly with one
# line naming the file and the object (exit 1 on every rank), in little memory, and
# nothing outside the file is read; the huge rank is valid and must not cost minutes.
. "$(dirname "$0")/lib.sh"
sx_leak_check
. "$(dirname "$0")/mpi_lib.sh"

SYNTH="$BIN/scope-export-synth"
DAMAGE="$BIN/scope-export-damage"
for t in "$SYNTH" "$DAMAGE" "$X"; do
    [ -x "$t" ] || { echo "FAIL: $t is not built" >&2; exit 1; }
done
base="$TMP/base.h5"
"$SYNTH" --ranks 2 --regions 4 --events 300 "$base" >/dev/null ||
    { echo "FAIL: scope-export-synth failed" >&2; exit 1; }

# Memory: a sanitizer reserves terabytes of address space, so the limit is for the
# plain build only (2 GiB: HDF5 would take 4 GiB, twice, for the damaged length).
memlimit() {
    if [ -z "$SX_SAN_FLAGS" ]; then ulimit -v 2097152; fi
    "$@"
}

# refused NAME NP 'NEEDLE|...' ARGS...: 'export ARGS -o OUT' exits 1 on every rank within
# LIMIT seconds, prints one line holding every needle, and writes no output.
refused() {
    local name=$1 np=$2 needles=$3 rc=0 why="" n
    shift 3
    local out="$TMP/out.json"
    rm -f "$out"
    (memlimit mpi "$np" "$X" export "$@" -o "$out" -q) >/dev/null 2>"$TMP/err" || rc=$?
    case $rc in
    1) ;;
    0) why="; exit status 0" ;;
    124 | 137) why="; no result within ${LIMIT:-60} s" ;;
    99) why="; ranks disagree" ;;
    *) why="; exit status $rc" ;;
    esac
    n=$(grep -c '' "$TMP/err")
    [ "$n" = 1 ] || why="$why; $n lines on stderr"
    local -a list
    IFS='|' read -ra list <<<"$needles"
    for needle in "${list[@]}"; do
        grep -qF -- "$needle" "$TMP/err" || why="$why; the error does not say '$needle'"
    done
    [ ! -e "$out" ] || why="$why; an output was written"
    if [ -z "$why" ]; then ok; else bad "$name -n $np:${why#;} -- $(head -c 400 "$TMP/err")"; fi
}

# mode|needles besides the file's name
while IFS='|' read -r mode needles; do
    f="$TMP/$mode.h5"
    "$DAMAGE" "$mode" "$base" "$f" || { bad "scope-export-damage $mode failed"; continue; }
    for np in 0 2; do
        LIMIT=30 refused "$mode" "$np" "$f|$needles" "$f"
    done
done <<'EOF'
vlen-name|region_table/names[0]|claims a value of 4294967295 bytes
vlen-meta|/metadata@sx_hostile|claims a value of 4294967295 bytes
vlen-overrun|region_table/names[0]|a string of 1000 bytes in object
external-storage|/rank_region_index/event_counts|external storage
external-link|/region_table|external link
virtual|/events/durations|virtual dataset
count-negative|rank_region_index/event_counts row 0|negative
bad-tags|rank_region_index/tags row 0|not valid JSON
EOF

# Tags that are not JSON under --summary, whose rows borrow the strings of the index
# from its pools: the same refusal, the row named
f="$TMP/bad-tags.h5"
for np in 0 2; do
    LIMIT=30 refused "bad-tags --summary" "$np" \
        "$f|rank_region_index/tags row 0|not valid JSON" "$f" --summary
done

# A summary whose statistics are a row short of the index: the rows are made of the
# statistics block by block (h5_summary.c), after the index is shared; refused at the open
f="$TMP/summary-short.h5"
if "$DAMAGE" summary-short "$base" "$f"; then
    n=$(h5dump -H -d /rank_region_index/region_ids "$base" | grep -o '( [0-9]* )' | head -1 |
        tr -dc 0-9)
    for np in 0 2; do
        LIMIT=30 refused "summary-short --summary" "$np" \
            "$f|rank_region_index/summary_statistics|has $((n - 1)) rows but the index has $n" \
            "$f" --summary
    done
else
    bad "scope-export-damage summary-short failed"
fi

# A negative count read through HDF5 rather than at its address: the same refusal
f="$TMP/count-negative.h5"
SCOPE_EXPORT_DIRECT_READS=0 LIMIT=30 refused "count-negative, direct reads off" 0 \
    "$f|rank_region_index/event_counts row 0|negative" "$f"

# Data in other files where datasets are read without the claim check: event_metadata
# (the JSON profile) and the perf counter totals (the trace formats).
base2="$TMP/base2.h5"
"$SYNTH" --ranks 2 --regions 4 --events 300 --perf --columns call,parent,meta "$base2" \
    >/dev/null || { echo "FAIL: scope-export-synth --perf failed" >&2; exit 1; }
while IFS='|' read -r mode obj args; do
    f="$TMP/$mode.h5"
    "$DAMAGE" "$mode" "$base2" "$f" || { bad "scope-export-damage $mode failed"; continue; }
    for np in 0 2; do
        # shellcheck disable=SC2086 # the format's arguments, split on purpose
        LIMIT=30 refused "$mode" "$np" "$f|$obj|virtual dataset" "$f" $args
    done
done <<'EOF'
virtual-meta|/rank_region_index/event_metadata|
virtual-perf|/rank0/perf_events/main/values|--format chrome-trace
EOF

# event_metadata that is not JSON, or lists fewer entries than its row has calls: the
# row named. One process reads it ahead in a thread and makes it canonical as it
# writes the row; without the thread, and at two ranks, the same.
while IFS='|' read -r mode needles; do
    f="$TMP/$mode.h5"
    "$DAMAGE" "$mode" "$base2" "$f" || { bad "scope-export-damage $mode failed"; continue; }
    for np in 0 2; do
        LIMIT=30 refused "$mode" "$np" "$f:/rank_region_index/event_metadata[0]|$needles" "$f"
    done
    SCOPE_EXPORT_THREADS=1 LIMIT=30 refused "$mode, no thread" 0 \
        "$f:/rank_region_index/event_metadata[0]|$needles" "$f"
    # validate reads the whole run, a row's metadata at a time: the same refusal
    rc=0
    "$X" validate "$f" >"$TMP/err" 2>&1 || rc=$?
    if [ "$rc" != 0 ] && grep -qF -- "$needles" "$TMP/err"; then ok
    else bad "$mode, validate: status $rc -- $(head -c 300 "$TMP/err")"; fi
done <<'EOF'
bad-meta|event metadata is not valid JSON
meta-count|must match the call count (1 entries for
EOF

# The same refusals from the trace formats and validate, which read the same way.
f="$TMP/external-storage.h5"
LIMIT=30 refused "external-storage, chrome trace" 0 "$f|external storage" "$f" \
    --format chrome-trace
rc=0
"$X" validate "$TMP/vlen-meta.h5" >"$TMP/vout" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -qF 'claims a value of 4294967295 bytes' "$TMP/vout" && ok ||
    bad "validate of vlen-meta: status $rc: $(head -c 300 "$TMP/vout")"

# rank 4294967295 in one index row: valid (the run claims that many ranks); the Chrome
# trace of rank 0 takes no time over the ranks that are not there.
f="$TMP/rank-huge.h5"
if "$DAMAGE" rank-huge "$base" "$f"; then
    rc=0
    (memlimit timeout 20 "$X" export "$f" --format chrome-trace -o "$TMP/huge.json" -q) \
        2>"$TMP/err" || rc=$?
    [ "$rc" = 0 ] && ok || bad "rank-huge: status $rc: $(head -c 300 "$TMP/err")"
    rc=0
    (memlimit timeout 20 "$X" export "$f" --format chrome-trace --ranks 4294967295 \
        -o "$TMP/huge2.json" -q) 2>"$TMP/err" || rc=$?
    [ "$rc" = 0 ] && ok || bad "rank-huge --ranks 4294967295: status $rc: $(head -c 300 "$TMP/err")"
else
    bad "scope-export-damage rank-huge failed"
fi
# The same run through other links to its groups: its index behind a soft link, its
# events group linked twice (a name walked before its own). Valid: the same document
# (the reader answers which paths exist from one walk of the file's links, and must
# know when that walk cannot answer), at 1 and 2 ranks, through HDF5 alone too.
mkdir -p "$TMP/same0"
if "$X" export "$base" -o "$TMP/same0/s.json" -q 2>"$TMP/err"; then
    for mode in soft-index linked-twice; do
        f="$TMP/$mode.h5"
        "$DAMAGE" "$mode" "$base" "$f" || { bad "scope-export-damage $mode failed"; continue; }
        for v in "0 1" "2 1" "0 0"; do
            set -- $v
            mkdir -p "$TMP/same.$mode.$1$2"
            o="$TMP/same.$mode.$1$2/s.json"
            rc=0
            SCOPE_EXPORT_DIRECT_READS=$2 mpi "$1" "$X" export "$f" -o "$o" -q 2>"$TMP/err" ||
                rc=$?
            if [ "$rc" = 0 ] && cmp -s "$o" "$TMP/same0/s.json"; then ok; else
                bad "$mode -n $1 direct=$2: status $rc, not the base run's document: $(head -c 300 "$TMP/err")"
            fi
        done
    done
else
    bad "the export of the base run failed: $(head -c 300 "$TMP/err")"
fi
# num_ranks of 10^15 in a JSON profile: valid, and its trace takes no memory by it
if (memlimit "$X" export "$base" -o "$TMP/base.json" -q); then
    sed 's/"num_ranks": 2,/"num_ranks": 1000000000000000,/' "$TMP/base.json" >"$TMP/nr.json"
    grep -q '"num_ranks": 1000000000000000,' "$TMP/nr.json" || bad "no num_ranks to change"
    rc=0
    (memlimit timeout 20 "$X" export "$TMP/nr.json" --format chrome-trace -o "$TMP/nr.trace" \
        -q) 2>"$TMP/err" || rc=$?
    [ "$rc" = 0 ] && ok || bad "num_ranks 10^15: status $rc: $(head -c 300 "$TMP/err")"
else
    bad "the export of the base run failed"
fi
finish
