#!/usr/bin/env bash
# test_kill_rank.sh - one rank killed outright (SIGKILL, as an OOM killer does) in the middle
# of an export: mpiexec stops the others with SIGTERM, and whichever rank died, no temporary
# output is left beside the output and an existing output is untouched
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mpi_lib.sh" # state, leftovers, mid_export

SYNTH="$BIN/scope-export-synth"
[ -x "$SYNTH" ] || { echo "FAIL: $SYNTH is not built" >&2; exit 1; }
big="$TMP/big.h5"
"$SYNTH" --ranks 2 --regions 8 --events 3000000 "$big" >/dev/null ||
    { echo "FAIL: scope-export-synth failed" >&2; exit 1; }

for np in 2 3; do
    for ((victim = 0; victim < np; victim++)); do
        d="$TMP/kill.$np.$victim"
        out="$d/out.json.gz"
        mkdir -p "$d"
        echo precious >"$out"
        before=$(state "$out")
        t0=$SECONDS
        timeout -k 5 120 "$MPIEXEC" --quiet --oversubscribe -n "$np" \
            "$X" export "$big" -o "$out" -q 2>"$d.err" </dev/null &
        tpid=$!
        started=no
        vpid=$(mid_export "$tpid" "$out" "$victim") && started=yes
        [ -n "$vpid" ] && kill -KILL "$vpid"
        wait "$tpid"
        rc=$?
        why=""
        [ "$started" = yes ] || why="; the export never started writing (or ended within 20 s)"
        [ -n "$vpid" ] || why="$why; no process for rank $victim"
        [ "$rc" != 0 ] || why="$why; exit status 0"
        [ $((SECONDS - t0)) -lt 100 ] || why="$why; still running 100 s later (a hang)"
        [ "$(state "$out")" = "$before" ] || why="$why; the existing output was changed"
        [ -z "$(leftovers "$out")" ] || why="$why; temporary file left: $(leftovers "$out")"
        if [ -z "$why" ]; then ok; else
            bad "-n $np, rank $victim killed:${why#;} ($(head -c 300 "$d.err"))"
        fi
    done
done
finish
