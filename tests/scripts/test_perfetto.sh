#!/usr/bin/env bash
# test_perfetto.sh - the Perfetto trace of every golden run, its compressed packets
# expanded and decoded by protoc, holds exactly the run's calls as slices on the right
# tracks (exact nanoseconds through each track's stepping clock); its bytes are the same at
# 1, 2 and 3 ranks, and its .gz decompresses to them
. "$(dirname "$0")/lib.sh"

[ -d "$SHARED/golden" ] || { echo "skip: no golden runs at $SHARED/golden"; exit 77; }
command -v protoc >/dev/null || { echo "skip: no protoc (scripts/setup.sh installs protobuf-compiler)"; exit 77; }
PF=$(cd "$(dirname "$0")/../perfetto" && pwd)

# The golden text of NAME in DIR: NAME or, for a large one, NAME.gz.
golden() { if [ -f "$1/$2" ]; then echo "$1/$2"; else echo "$1/$2.gz"; fi; }
# The export bare: one process, no MPI. Under the sanitizers its leaks are checked (the
# library's own tests do not reach this format; under mpiexec, LeakSanitizer would see
# Open MPI's start-up allocations, see lib.sh).
bare() {
    env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u PMI_FD \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1" timeout 120 "$X" "$@"
}
# CHECK TRACE DIR [ARGS...]: TRACE's compressed packets expand, it decodes, and
# check_perfetto.py finds DIR's calls in it.
check() {
    local trace=$1 dir=$2
    shift 2
    python3 "$PF/check_perfetto.py" --expand "$trace" "$trace.raw" &&
        protoc -I "$PF" --decode=perfetto.protos.Trace perfetto_trace.proto <"$trace.raw" \
            >"$trace.txt" &&
        python3 "$PF/check_perfetto.py" "$trace.txt" "$dir/run.json" \
            "$(golden "$dir" run.chrome.json)" "$@"
}

for dir in "$SHARED"/golden/*/; do
    dir=${dir%/}
    case=$(basename "$dir")
    o="$TMP/$case"
    # whole blocks, and blocks of a few calls that cut the tracks (decoded where small:
    # the check reads protoc's text at ~100k lines a second)
    for bs in 4194304 1024; do
        bare export "$dir/run.h5" -o "$o.$bs.pftrace" -q --format perfetto \
            --block-size "$bs" &&
            { [ "$bs" = 1024 ] && [ "$(stat -c %s "$o.$bs.pftrace")" -gt 1000000 ] ||
                check "$o.$bs.pftrace" "$dir"; } && ok ||
            bad "$case perfetto --block-size $bs"
    done
    # the same bytes from more ranks, and as gzip
    sx_sample 3 || continue
    run_np 2 "$X" export "$dir/run.h5" -o "$o.np2.pftrace.gz" -q --format perfetto &&
        gzip -dc "$o.np2.pftrace.gz" | cmp -s - "$o.4194304.pftrace" && ok ||
        bad "$case perfetto -n 2 .pftrace.gz differs from -n 1 .pftrace"
    run_np 3 "$X" export "$dir/run.h5" -o "$o.np3.pftrace" -q --format perfetto \
        --block-size 1024 && cmp -s "$o.np3.pftrace" "$o.1024.pftrace" && ok ||
        bad "$case perfetto -n 3 differs from -n 1 (--block-size 1024)"
done

# The run's JSON profile gives the same trace; --ranks and --include filter it.
d="$SHARED/golden/mpi4_parallel"
cp "$d/run.json" "$TMP/run.json"
bare export "$TMP/run.json" -o "$TMP/j.pftrace" -q --format perfetto &&
    cmp -s "$TMP/j.pftrace" "$TMP/mpi4_parallel.4194304.pftrace" && ok ||
    bad "perfetto from run.json differs from the HDF5 run's"
run_np 2 "$X" export "$d/run.h5" -o "$TMP/r.pftrace" -q --format perfetto --ranks 2,0 \
    --include 'compute|rank' && check "$TMP/r.pftrace" "$d" --ranks 2,0 --include 'compute|rank' &&
    ok || bad "perfetto --ranks 2,0 --include"
# A generated run with perf counter totals, whose calls overlap without nesting (extra
# tracks): the calls as in its JSON profile, the counters as scope-export-synth --perf
# documents them (rank i: cycles 1000000 (i+1) + j, instructions 2000000 (i+1) + j,
# calls 10 i + j + 1 for its regions j = 0, 1: main, solve) at the rank's last end.
g="$TMP/gen"
mkdir -p "$g"
if "$BIN/scope-export-synth" --ranks 2 --regions 3 --events 200 --columns all --lanes \
    --perf "$g/run.h5" &&
    bare export "$g/run.h5" -o "$g/run.json" -q &&
    bare export "$g/run.h5" -o "$g/run.chrome.json" -q --format chrome-trace --ranks 0,1 &&
    run_np 2 "$X" export "$g/run.h5" -o "$g/p.pftrace" -q --format perfetto \
        --block-size 1024 &&
    check "$g/p.pftrace" "$g" --counters "$g/counters.json"; then
    ok
    python3 - "$g/run.json" "$g/counters.json" <<'EOF' && ok || bad "perf counters"
import json, sys
run = json.load(open(sys.argv[1]))
got = json.load(open(sys.argv[2]))
want = []
for i in (0, 1):
    end = max(e for r in run["regions"] if r["rank"] == i for e in r["end_times_ns"])
    for j, name in enumerate(("main", "solve")):
        for ev, v in (("cycles", 1000000 * (i + 1) + j),
                      ("instructions", 2000000 * (i + 1) + j), ("calls", 10 * i + j + 1)):
            want.append([i, "perf events: %s %s" % (name, ev), end, v])
if got != want:
    sys.exit("counters %s, expected %s" % (got, want))
EOF
    grep -q '(overlap 1)' "$g/p.pftrace.txt" && ok || bad "no overlap track in the generated run"
else
    bad "generated run with perf counters"
fi

# Not a check that passes on anything: another run's trace fails it.
if check "$TMP/mpi4_direct.1024.pftrace" "$d" 2>/dev/null; then
    bad "the trace of mpi4_direct passed as mpi4_parallel's"
else ok; fi
finish
