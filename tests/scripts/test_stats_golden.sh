#!/usr/bin/env bash
# test_stats_golden.sh - region_statistics.json of every golden run equals scope-profiler's
# write_region_statistics_json byte for byte (file_path is the input's absolute path; the
# golden files hold "run.h5" there), every rank and --ranks 0, at 1 and 3 ranks
. "$(dirname "$0")/lib.sh"

[ -d "$SHARED/golden" ] || { echo "skip: no golden runs at $SHARED/golden"; exit 77; }
command -v python3 >/dev/null || { echo "skip: no python3 to mask file_path"; exit 77; }

# same OURS GOLDEN INPUT: equal bytes once our file_path, the resolved INPUT, reads "run.h5"
same() {
    python3 - "$1" "$2" "$3" <<'EOF_PY'
import json, os, sys
ours, golden, inp = (open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(),
                     sys.argv[3])
field = b'"file_path": ' + json.dumps(os.path.realpath(inp)).encode() + b','
if ours.count(field) != 1:
    sys.exit("file_path is not the input's absolute path")
sys.exit(0 if ours.replace(field, b'"file_path": "run.h5",') == golden else 1)
EOF_PY
}

bare() { env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u PMI_FD \
    timeout 120 "$@"; }

# Under the sanitizers (several times slower) every fourth case runs at 3 ranks too.
stride=1
[ -n "$SX_SAN_FLAGS" ] && stride=4
n=0
for dir in "$SHARED"/golden/*/; do
    dir=${dir%/}
    case=$(basename "$dir")
    nps="1 3"
    [ $((n++ % stride)) -eq 0 ] || nps=1
    # one process bare (no MPI: as -n 1, without mpirun's start-up), and 3 ranks
    for np in $nps; do
        o="$TMP/$case.$np"
        run=(run_np 3)
        [ "$np" = 1 ] && run=(bare)
        "${run[@]}" "$X" export "$dir/run.h5" -o "$o.all.json" -q \
            --format region-statistics &&
            same "$o.all.json" "$dir/run.region_statistics.json" "$dir/run.h5" && ok ||
            bad "$case region statistics, every rank, -n $np"
        "${run[@]}" "$X" export "$dir/run.h5" -o "$o.r0.json" -q \
            --format region-statistics --ranks 0 &&
            same "$o.r0.json" "$dir/run.region_statistics.rank0.json" "$dir/run.h5" && ok ||
            bad "$case region statistics, --ranks 0, -n $np"
    done
done

# A JSON profile gives the same numbers; .gz output the same text.
d="$SHARED/golden/mpi4_parallel"
cp "$d/run.json" "$TMP/run.json"
run_np 2 "$X" export "$TMP/run.json" -o "$TMP/j.json.gz" -q --format region-statistics &&
    gzip -dc "$TMP/j.json.gz" >"$TMP/j.json" &&
    same "$TMP/j.json" "$d/run.region_statistics.json" "$TMP/run.json" && ok ||
    bad "region statistics of run.json, .gz, -n 2"
finish
