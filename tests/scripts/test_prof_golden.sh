#!/usr/bin/env bash
# test_prof_golden.sh - the pstats files of every golden run load (marshal) to the same
# value as scope-profiler's export_prof wrote (keys and callers in order, ints, floats
# exactly), with and without call paths, at 1 and 3 ranks; its errors the same, no file
. "$(dirname "$0")/lib.sh"

[ -d "$SHARED/golden" ] || { echo "skip: no golden runs at $SHARED/golden"; exit 77; }
command -v python3 >/dev/null || { echo "skip: no python3 to load the files"; exit 77; }

bare() { env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u PMI_FD \
    timeout 120 "$@"; }
# same OURS GOLDEN: the loaded dicts are equal, keys and callers in the same order
same() {
    python3 - "$1" "$2" <<'EOF_PY'
import marshal, sys
a, b = (marshal.load(open(p, "rb")) for p in sys.argv[1:3])
sys.exit(0 if a == b and list(a) == list(b) and
         all(list(a[k][4]) == list(b[k][4]) for k in a) else 1)
EOF_PY
}

# Under the sanitizers (several times slower) every fourth case runs at 3 ranks too.
stride=1
[ -n "$SX_SAN_FLAGS" ] && stride=4
n=0
for dir in "$SHARED"/golden/*/; do
    dir=${dir%/}
    case=$(basename "$dir")
    nps="1 3"
    [ $((n++ % stride)) -eq 0 ] || nps=1
    for mode in run.prof run.nocallpaths.prof; do
        opt=()
        [ "$mode" = run.nocallpaths.prof ] && opt=(--no-call-paths)
        for np in $nps; do
            run=(run_np 3)
            [ "$np" = 1 ] && run=(bare)
            o="$TMP/$case.$np.$mode"
            mkdir -p "$o"
            if [ -f "$dir/$mode.error.txt" ]; then
                msg=$(sed 's/^ValueError: //' "$dir/$mode.error.txt")
                if "${run[@]}" "$X" export "$dir/run.h5" -o "$o/p.prof" -q --format prof \
                    "${opt[@]}" 2>"$TMP/err"; then
                    bad "$case $mode -n $np: succeeded, expected '$msg'"
                elif ! grep -qF -- "$msg" "$TMP/err"; then
                    bad "$case $mode -n $np: expected '$msg', got: $(cat "$TMP/err")"
                elif [ -n "$(ls -A "$o")" ]; then
                    bad "$case $mode -n $np: left $(ls -A "$o") behind"
                else
                    ok
                fi
                continue
            fi
            "${run[@]}" "$X" export "$dir/run.h5" -o "$o/p.prof" -q --format prof \
                "${opt[@]}" && [ "$(ls -A "$o")" = p_rank0.prof ] &&
                same "$o/p_rank0.prof" "$dir/$mode" && ok ||
                bad "$case $mode -n $np: $(ls -A "$o")"
        done
    done
done

# Every rank, at 3 ranks (each process writes its share): the files of one process.
d="$SHARED/golden/mpi4_parallel"
bare "$X" export "$d/run.h5" -o "$TMP/one/p" -q --format prof --ranks 0-3 &&
    run_np 3 "$X" export "$d/run.h5" -o "$TMP/three/p" -q --format prof --ranks 0-3 &&
    [ "$(ls "$TMP/three")" = "$(printf 'p_rank0.prof\np_rank1.prof\np_rank2.prof\np_rank3.prof')" ] &&
    for r in 0 1 2 3; do cmp -s "$TMP/one/p_rank$r.prof" "$TMP/three/p_rank$r.prof" || exit 1; done &&
    ok || bad "every rank at 3 ranks: $(ls "$TMP/three" 2>&1)"
# The command names the files it wrote (one a rank with calls), not the -o name.
mkdir -p "$TMP/wrote"
out=$(run_np 3 "$X" export "$d/run.h5" -o "$TMP/wrote/p.prof" --format prof --ranks 0,2 2>&1)
[ "$out" = "$(printf 'Wrote %s\nWrote %s' "$TMP/wrote/p_rank0.prof" "$TMP/wrote/p_rank2.prof")" ] &&
    ok || bad "the Wrote lines of a pstats export: $out"
# pstats reads them.
python3 -c 'import pstats, sys; s = pstats.Stats(sys.argv[1]); assert s.total_calls > 0' \
    "$TMP/three/p_rank2.prof" && ok || bad "pstats cannot read a file"
# A rank outside the run, filters that keep nothing: the reference's words, no file.
for args in "--ranks 0,4:Invalid rank requested: 4" \
    "--include nothing\$:No regions matched the selected filters."; do
    msg=${args#*:}
    read -r -a a <<<"${args%%:*}"
    mkdir -p "$TMP/e"
    if run_np 2 "$X" export "$d/run.h5" -o "$TMP/e/p.prof" -q --format prof "${a[@]}" \
        2>"$TMP/err"; then
        bad "${a[*]}: succeeded"
    else
        grep -qF -- "$msg" "$TMP/err" && [ -z "$(ls -A "$TMP/e")" ] && ok ||
            bad "${a[*]}: $(cat "$TMP/err") $(ls -A "$TMP/e")"
    fi
done
# Rows out of order (calls recorded by their end, or threads interleaved): the calls are
# sorted instead of merged row by row, and the files are the same. Each row's calls of a
# golden run reversed (a stable sort by descending start), read from the JSON profile.
moved=0
for dir in "$SHARED"/golden/*/; do
    dir=${dir%/}
    case=$(basename "$dir")
    [ -f "$dir/run.json" ] && [ -f "$dir/run.prof" ] && [ ! -f "$dir/run.prof.error.txt" ] ||
        continue
    mkdir -p "$TMP/perm/$case"
    n=$(python3 - "$dir/run.json" "$TMP/perm/$case/run.json" <<'EOF_PY'
import json, sys
d = json.load(open(sys.argv[1]))
moved = 0
for r in d.get("regions", []):
    s = r.get("start_times_ns")
    if not isinstance(s, list) or len(s) < 2:
        continue
    order = sorted(range(len(s)), key=lambda i: -s[i])
    moved += order != list(range(len(s)))
    for k, v in list(r.items()):
        if k != "tags" and isinstance(v, list) and len(v) == len(s):
            r[k] = [v[i] for i in order]
json.dump(d, open(sys.argv[2], "w"))
print(moved)
EOF_PY
    ) || { bad "$case: the rows could not be reversed"; continue; }
    [ "$n" -gt 0 ] || continue
    moved=$((moved + 1))
    for mode in run.prof run.nocallpaths.prof; do
        opt=()
        [ "$mode" = run.nocallpaths.prof ] && opt=(--no-call-paths)
        o="$TMP/perm/$case/$mode"
        mkdir -p "$o"
        bare "$X" export "$TMP/perm/$case/run.json" -o "$o/p.prof" -q --format prof \
            "${opt[@]}" && same "$o/p_rank0.prof" "$dir/$mode" && ok ||
            bad "$case $mode, rows out of order: $(ls -A "$o")"
    done
done
[ "$moved" -ge 3 ] && ok || bad "rows out of order: only $moved golden runs have rows to reverse"
finish
