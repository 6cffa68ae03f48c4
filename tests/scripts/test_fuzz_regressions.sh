#!/usr/bin/env bash
# test_fuzz_regressions.sh - every input the fuzzers found (tests/fuzz/regressions) gets
# `validate`'s clear answer, 0 (OK) or 1 (INVALID): no crash, no sanitizer report, no hang.
# And no data lost: a run that validates exports (a JSON profile through import first) to
# a document that validates too, and so does its summary-only document.
. "$(dirname "$0")/lib.sh"
sx_leak_check

dir=$(cd "$(dirname "$0")/../fuzz" 2>/dev/null && pwd)/regressions
[ -d "$dir" ] || { echo "skip: no fuzz regressions at $dir"; exit 77; }
[ -x "$X" ] || { echo "skip: no scope-export binary at $X"; exit 77; }
# Under SX_SANITIZE a report must not look like exit status 1 ("INVALID").
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}:abort_on_error=1
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}:halt_on_error=1:abort_on_error=1

# run CMD...: 0 or 1 is an answer; a hang, a signal or a sanitizer report is a failure
run() {
    rc=0
    timeout -k 5 60 "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        why="did not finish within 60 s"
    elif [ "$rc" -ge 128 ]; then
        why="died with signal $((rc - 128)): $(head -3 "$TMP/err")"
    elif grep -Eq 'ERROR: (Address|Leak|Memory)Sanitizer|runtime error:' "$TMP/err"; then
        why="sanitizer report: $(grep -E -m1 -A3 'Sanitizer|runtime error:' "$TMP/err")"
    elif [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
        why="exited $rc, not 0 or 1"
    else
        why=""
    fi
}

# the export of a run that validated must validate; prints what went wrong, if anything
roundtrip() { # input
    local h5=$1
    if ! head -c 4 "$1" | grep -q HDF; then
        run "$X" import "$1" -o "$TMP/imported.h5"
        [ -z "$why" ] || { echo "import $why"; return; }
        [ "$rc" -eq 0 ] || { echo "import of a valid profile failed: $(head -c 300 "$TMP/err")"; return; }
        h5=$TMP/imported.h5
    fi
    run "$X" export "$h5" -o "$TMP/exported.json" -q
    [ -z "$why" ] || { echo "export $why"; return; }
    [ "$rc" -eq 0 ] || { echo "export of a valid run failed: $(head -c 300 "$TMP/err")"; return; }
    run "$X" validate "$TMP/exported.json"
    [ -z "$why" ] || { echo "validate of the export $why"; return; }
    [ "$rc" -eq 0 ] || { echo "the exported document does not validate: $(head -c 300 "$TMP/out")"; return; }
    # the summary-only document (aggregate rows) must read back as well
    run "$X" export "$h5" --summary -o "$TMP/summary.json" -q
    [ -z "$why" ] || { echo "export --summary $why"; return; }
    [ "$rc" -eq 0 ] || { echo "export --summary of a valid run failed: $(head -c 300 "$TMP/err")"; return; }
    run "$X" validate "$TMP/summary.json"
    [ -z "$why" ] || { echo "validate of the summary export $why"; return; }
    [ "$rc" -eq 0 ] || echo "the summary document does not validate: $(head -c 300 "$TMP/out")"
}

n=0
for f in "$dir"/*; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    name=$(basename "$f")
    # a copy: validate must not depend on the name (.gz, .h5) and must not touch the file
    cp "$f" "$TMP/input"
    run "$X" validate "$TMP/input"
    if [ -n "$why" ]; then
        bad "$name: validate $why"
    elif ! grep -Eq ': (OK|INVALID: .+)$' "$TMP/out"; then
        bad "$name: validate printed no verdict: $(head -c 200 "$TMP/out")"
    elif [ "$rc" -eq 0 ]; then
        lost=$(roundtrip "$TMP/input")
        if [ -n "$lost" ]; then bad "$name: $lost"; else ok; fi
    else
        ok
    fi
done
[ "$n" -gt 0 ] || { echo "skip: $dir is empty"; exit 77; }
finish
