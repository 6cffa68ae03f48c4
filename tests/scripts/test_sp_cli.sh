#!/usr/bin/env bash
# test_sp_cli.sh - scope-profiler's own `export KIND FILES... -o DIR` command line, with
# only the program's name swapped, writes the reference's file names and contents and its
# "Outputs saved to:" lines; our own `export IN -o OUT` form is unchanged beside it
. "$(dirname "$0")/lib.sh"
sx_leak_check 2

[ -d "$SHARED/golden" ] || { echo "skip: no golden runs at $SHARED/golden"; exit 77; }
command -v python3 >/dev/null || { echo "skip: no python3 to load the files"; exit 77; }

bare() { env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u PMI_FD \
    timeout 120 "$@"; }
# the reference's command line, its program name swapped: run "scope-profiler export ..."
swap() {
    local np=$1 cmd=$2
    read -r -a words <<<"$cmd"
    [ "${words[0]}" = scope-profiler ] || { echo "not a scope-profiler command: $cmd"; return 1; }
    words[0]=$X
    if [ "$np" = 1 ]; then bare "${words[@]}"; else run_np "$np" "${words[@]}"; fi
}
same_prof() {
    python3 - "$1" "$2" <<'EOF_PY'
import marshal, sys
a, b = (marshal.load(open(p, "rb")) for p in sys.argv[1:3])
sys.exit(0 if a == b and list(a) == list(b) else 1)
EOF_PY
}
same_stats() {
    python3 - "$1" "$2" "$3" <<'EOF_PY'
import json, os, sys
ours, golden = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
field = b'"file_path": ' + json.dumps(os.path.realpath(sys.argv[3])).encode() + b','
sys.exit(0 if ours.replace(field, b'"file_path": "run.h5",') == golden else 1)
EOF_PY
}

cd "$TMP" || exit 1
for np in 1 3; do
    d="$SHARED/golden/mpi4_parallel"
    o="out$np"
    swap "$np" "scope-profiler export json $d/run.h5 -o $o/json" >"$TMP/stdout" &&
        "$CMP" "$o/json/profile.json" "$d/run.json" &&
        [ "$(cat "$TMP/stdout")" = "$(printf 'Outputs saved to:\n  %s\n\nRead one back with: scope-profiler inspect %s' "$o/json/profile.json" "$o/json/profile.json")" ] &&
        ok || bad "json -n $np: $(cat "$TMP/stdout")"
    swap "$np" "scope-profiler export json $d/run.h5 -o $o/jz --gzip" >/dev/null &&
        "$CMP" "$o/jz/profile.json.gz" "$d/run.json" && ok || bad "json --gzip -n $np"
    swap "$np" "scope-profiler export chrome-trace $d/run.h5 -o $o/ct" >/dev/null &&
        "$CMP" "$o/ct/profile.trace.json" "$d/run.chrome.rank0.json" && ok ||
        bad "chrome-trace -n $np"
    swap "$np" "scope-profiler export chrome-trace $d/run.h5 -o $o/ct4 --ranks 0-1 2,3" \
        >/dev/null && "$CMP" "$o/ct4/profile.trace.json" "$d/run.chrome.json" && ok ||
        bad "chrome-trace --ranks 0-1 2,3 -n $np"
    swap "$np" "scope-profiler export speedscope $d/run.h5 -o $o/ss -r 3 0-2" >/dev/null &&
        "$CMP" "$o/ss/profile.speedscope.json" "$d/run.speedscope.json" && ok ||
        bad "speedscope -n $np"
    swap "$np" "scope-profiler export prof $d/run.h5 -o $o/prof" >"$TMP/stdout" &&
        [ "$(ls "$o/prof")" = profile_rank0.prof ] &&
        same_prof "$o/prof/profile_rank0.prof" "$d/run.prof" &&
        [ "$(cat "$TMP/stdout")" = "$(printf 'Outputs saved to:\n  %s\n\nView a .prof file with: snakeviz %s' "$o/prof/profile_rank0.prof" "$o/prof/profile_rank0.prof")" ] &&
        ok || bad "prof -n $np: $(cat "$TMP/stdout")"
    swap "$np" "scope-profiler export prof $d/run.h5 -o $o/np --no-call-paths" >/dev/null &&
        same_prof "$o/np/profile_rank0.prof" "$d/run.nocallpaths.prof" && ok ||
        bad "prof --no-call-paths -n $np"
    swap "$np" "scope-profiler export plot-data $d/run.h5 -o $o/pd" >"$TMP/stdout" &&
        same_stats "$o/pd/region_statistics.json" "$d/run.region_statistics.json" "$d/run.h5" &&
        [ "$(cat "$TMP/stdout")" = "$(printf 'Outputs saved to:\n  %s' "$o/pd/region_statistics.json")" ] &&
        ok || bad "plot-data -n $np: $(cat "$TMP/stdout")"
    swap "$np" "scope-profiler export plot-data $d/run.h5 -o $o/pd0 --ranks 0" >/dev/null &&
        same_stats "$o/pd0/region_statistics.json" "$d/run.region_statistics.rank0.json" \
            "$d/run.h5" && ok || bad "plot-data --ranks 0 -n $np"
done
# Glob patterns: sorted matches, each once; a pattern with no match is a usage error.
cp "$SHARED/golden/basic_nested/run.h5" "$TMP/b.h5"
cp "$SHARED/golden/basic_nested/run.h5" "$TMP/a.h5"
swap 1 "scope-profiler export prof $TMP/?.h5 $TMP/a.h5 -o g" >"$TMP/stdout" &&
    [ "$(ls g)" = "$(printf 'profile_basic_nested_2_rank0.prof\nprofile_basic_nested_rank0.prof')" ] &&
    ok || bad "glob: $(ls g) $(cat "$TMP/stdout")"
swap 1 "scope-profiler export json $TMP/none*.h5 -o n" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q 'No files matched pattern' "$TMP/err" && [ ! -e n ] && ok ||
    bad "no match: $(cat "$TMP/err")"
# Our own form still takes an input named like a kind when it exists.
cp "$SHARED/golden/basic_nested/run.h5" "$TMP/json"
bare "$X" export json -o own.json -q && "$CMP" own.json "$SHARED/golden/basic_nested/run.json" &&
    ok || bad "our form with an input named json"
finish
