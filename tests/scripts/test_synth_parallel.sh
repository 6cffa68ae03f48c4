#!/usr/bin/env bash
# test_synth_parallel.sh - scope-export-synth under mpirun writes the same run as serially
. "$(dirname "$0")/lib.sh"
sx_normal_build_only "the test generator"
SYNTH="$BIN/scope-export-synth"

[ -x "$SYNTH" ] || { echo "FAIL: $SYNTH is not built" >&2; exit 1; }
command -v "$MPIEXEC" >/dev/null 2>&1 || {
    echo "SKIP: $MPIEXEC not found; the parallel mode needs an MPI launcher" >&2
    exit 77
}

# check NAME ARGS...: serial, -n 2 and -n 3 files export to byte-identical JSON.
check() {
    local name=$1 np
    shift
    "$SYNTH" "$@" "$TMP/$name.np1.h5" || { bad "$name: serial generation failed"; return; }
    "$X" export "$TMP/$name.np1.h5" -o "$TMP/$name.np1.json" -q ||
        { bad "$name: export of the serial file"; return; }
    grep -q '"regions": \[' "$TMP/$name.np1.json" || bad "$name: the export holds no regions"
    for np in 2 3; do
        # -v says how many processes wrote: a silently serial run is a failure too.
        if ! run_np "$np" "$SYNTH" -v "$@" "$TMP/$name.np$np.h5" >"$TMP/$name.np$np.out"; then
            bad "$name: generation with -n $np failed"
            continue
        fi
        grep -q ", $np processes\$" "$TMP/$name.np$np.out" ||
            bad "$name: -n $np did not write with $np processes: $(cat "$TMP/$name.np$np.out")"
        if ! "$X" export "$TMP/$name.np$np.h5" -o "$TMP/$name.np$np.json" -q; then
            bad "$name: export of the -n $np file"
            continue
        fi
        if cmp -s "$TMP/$name.np1.json" "$TMP/$name.np$np.json"; then ok; else
            bad "$name: -n $np export differs from the serial one"
        fi
        # Types too (vlen vs fixed strings, int widths): HDF5's own dump, minus the file name.
        if command -v h5dump >/dev/null 2>&1; then
            if cmp -s <(h5dump "$TMP/$name.np1.h5" | tail -n +2) \
                <(h5dump "$TMP/$name.np$np.h5" | tail -n +2); then ok; else
                bad "$name: h5dump of the -n $np file differs from the serial one"
            fi
        fi
    done
}

check default
check all --ranks 5 --events 20000 --columns all --lanes --likwid --lineprof --unicode
check fixed --ranks 4 --strings fixed --empty-ranks --columns meta
# one row of 160000 events: written in several pieces by one process
check skew --ranks 3 --events 200000 --skew 0.8
check agg --ranks 5 --events 5000 --aggregate

# The comparison can tell runs apart: another seed gives another export.
"$SYNTH" --seed 2 "$TMP/seed2.h5" && "$X" export "$TMP/seed2.h5" -o "$TMP/seed2.json" -q &&
    if cmp -s "$TMP/default.np1.json" "$TMP/seed2.json"; then
        bad "seed: different seeds, same export"
    else ok; fi

# A failure on every process is reported once and leaves no file behind.
run_np 2 "$SYNTH" --events 10 "$TMP/missing/x.h5" 2>"$TMP/fail.err" &&
    bad "unwritable output: exit status 0"
[ "$(grep -c 'scope-export-synth:' "$TMP/fail.err")" = 1 ] && ok ||
    bad "unwritable output: not reported exactly once: $(cat "$TMP/fail.err")"
leftover=$(find "$TMP" -name '.*.??????' | head -1)
[ -z "$leftover" ] && ok || bad "temporary file left behind: $leftover"
finish
