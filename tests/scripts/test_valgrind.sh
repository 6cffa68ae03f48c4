#!/usr/bin/env bash
# test_valgrind.sh - the single-rank path (export .json and .json.gz, validate, import, and
# the error paths of damaged inputs) under valgrind: no invalid access, no definite leak
. "$(dirname "$0")/lib.sh"

command -v valgrind >/dev/null 2>&1 ||
    { echo "skip: valgrind is not installed (apt-get install valgrind)"; exit 77; }
if grep -q '^SX_SANITIZE:BOOL=ON' "$BIN/CMakeCache.txt" 2>/dev/null; then
    echo "skip: $BIN is built with sanitizers, which do not run under valgrind"
    exit 77
fi
[ -d "$SHARED/golden" ] || { echo "skip: no golden runs at $SHARED/golden"; exit 77; }

SUPP="$(cd "$(dirname "$0")/.." && pwd)/valgrind.supp"
# Exit status 9 = a valgrind error; the suppressions cover Open MPI's MPI_Init/Finalize.
vg() {
    local log=$1
    shift
    timeout 600 valgrind -q --error-exitcode=9 --leak-check=full \
        --errors-for-leak-kinds=definite --show-leak-kinds=definite --num-callers=40 \
        --suppressions="$SUPP" --log-file="$log" "$@" </dev/null
}

# vg_ok NAME WANT CMD...: CMD exits with WANT under valgrind, with nothing reported.
vg_ok() {
    local name=$1 want=$2 rc=0
    shift 2
    local log="$TMP/vg.$(echo "$name" | tr -c 'A-Za-z0-9.\n' '_').log"
    vg "$log" "$@" >"$TMP/vg.out" 2>&1 || rc=$?
    if [ "$rc" = 9 ] || grep -q 'definitely lost\|Invalid \|uninitialised' "$log"; then
        bad "$name: valgrind reports errors:"
        grep -v '^==[0-9]*== *$' "$log" | head -60 >&2
    elif [ "$rc" != "$want" ]; then
        bad "$name: exit status $rc, $want expected: $(head -c 300 "$TMP/vg.out")"
    else
        ok
    fi
}

for case in basic_nested gen_schema3_allcols unicode_metadata; do
    d="$SHARED/golden/$case"
    [ -f "$d/run.h5" ] || continue
    for ext in json json.gz; do
        out="$TMP/$case.$ext"
        vg_ok "export $case .$ext" 0 "$X" export "$d/run.h5" -o "$out" -q --block-size 4096
        "$CMP" "$out" "$d/run.json" && ok || bad "export $case .$ext under valgrind: wrong text"
    done
done
vg_ok "validate a document" 0 "$X" validate "$TMP/basic_nested.json.gz"
vg_ok "validate a run" 0 "$X" validate "$SHARED/golden/basic_nested/run.h5"
vg_ok "import" 0 "$X" import "$TMP/gen_schema3_allcols.json.gz" -o "$TMP/back.h5"
vg_ok "validate the imported run" 0 "$X" validate "$TMP/back.h5"

# Error paths: everything allocated before the failure is released.
if [ -x "$BIN/scope-export-damage" ]; then
    base="$SHARED/golden/basic_nested/run.h5"
    for mode in offsets-beyond unknown-filter bad-utf8; do
        "$BIN/scope-export-damage" "$mode" "$base" "$TMP/$mode.h5" || {
            bad "scope-export-damage $mode failed"
            continue
        }
        want=1
        [ "$mode" = bad-utf8 ] && want=0
        vg_ok "export damaged $mode" "$want" "$X" export "$TMP/$mode.h5" -o "$TMP/$mode.json" -q
    done
fi
vg_ok "export a missing file" 1 "$X" export "$TMP/missing.h5" -o "$TMP/missing.json" -q
echo "not json" >"$TMP/bad.json"
vg_ok "import a damaged document" 1 "$X" import "$TMP/bad.json" -o "$TMP/bad.h5"
finish
