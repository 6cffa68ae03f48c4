#!/usr/bin/env bash
# test_speedscope_sort.sh - speedscope's order of calls (by lane, start, -end, region and call
# order) and their nesting, on runs large enough for every path of the sort: a few sorted
# runs per lane merged (rows in start order, threads and tasks), rows merged from their
# columns (no lanes), calls that tie across regions, rows out of order, more lanes than the
# merge takes; checked against check_speedscope.py's plain model of the
# document, at 1 and 3 ranks
. "$(dirname "$0")/lib.sh"
SYNTH="$BIN/scope-export-synth"
CHECK="$(dirname "$0")/check_speedscope.py"

check() { # label profile.json input
    local label=$1 prof=$2 in=$3 np out
    for np in 1 3; do
        out="$TMP/$label.$np.json"
        if run_np "$np" "$X" export "$in" -o "$out" -q --format speedscope --ranks 0-2 &&
            python3 "$CHECK" "$prof" "$out" >"$TMP/check.txt"; then
            ok
        else
            bad "$label -n $np: $(cat "$TMP/check.txt" 2>/dev/null)"
        fi
    done
}

"$SYNTH" --ranks 3 --regions 9 --nest --lanes --columns thread,task --events 30000 --seed 3 \
    "$TMP/lanes.h5" >/dev/null && "$X" export "$TMP/lanes.h5" -o "$TMP/lanes.json" -q ||
    { bad "generator"; finish; exit 1; }
check lanes "$TMP/lanes.json" "$TMP/lanes.h5"
"$SYNTH" --ranks 3 --regions 12 --nest --events 30000 --seed 4 "$TMP/plain.h5" >/dev/null &&
    "$X" export "$TMP/plain.h5" -o "$TMP/plain.json" -q || bad "generator (no lanes)"
check plain "$TMP/plain.json" "$TMP/plain.h5"
python3 "$CHECK" "$TMP/lanes.json" --shuffle "$TMP/shuffled.json" || bad "shuffle"
check shuffled "$TMP/shuffled.json" "$TMP/shuffled.json"
python3 "$CHECK" "$TMP/plain.json" --ties "$TMP/ties.json" || bad "ties"
check ties "$TMP/ties.json" "$TMP/ties.json"
python3 "$CHECK" "$TMP/lanes.json" --lanes "$TMP/many.json" || bad "many lanes"
check many-lanes "$TMP/many.json" "$TMP/many.json"

# The checker can fail: a document of another run's calls is not this one's.
python3 "$CHECK" "$TMP/plain.json" "$TMP/lanes.1.json" >/dev/null && bad "checker accepts anything" || ok
finish
