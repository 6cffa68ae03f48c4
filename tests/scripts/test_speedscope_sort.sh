#!/usr/bin/env bash
# test_speedscope_sort.sh - speedscope's order of calls (by lane, start, -end, region and call
# order) and their nesting, on runs large enough for every path of the sort: a few sorted
# runs per lane merged (rows in start order, threads and tasks), rows merged from their
# columns (no lanes), calls that tie across regions, rows out of order, more lanes than the
# merge takes; checked against check_speedscope.py's plain model of the document, at 1 and
# 3 ranks; and the nesting error of the first failing rank (speedscope and OTF2), and of
# calls that overlap at random, against the reference's method
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

# Calls that do not nest on selected ranks 1 and 2 (rank 0's do): rank 1's error, as the
# reference stops at the first rank, whichever process checks which rank (at -n 2 the
# process that checks ranks 0 and 2 is the lowest to fail); rank 1's alone differs from
# rank 2's, so the check can fail.
python3 - "$TMP/plain.json" "$TMP/bad.json" <<'PYEOF' || bad "bad-nesting variant"
import json, sys
d = json.load(open(sys.argv[1]))
for row in d["regions"]:  # a row's calls lengthened into each other: the second escapes
    if row["name"] == d["regions"][-1]["name"] and row["rank"] > 0:
        row["end_times_ns"] = [e + 10**12 * row["rank"] for e in row["end_times_ns"]]
json.dump(d, open(sys.argv[2], "w"))
PYEOF
for k in 1 2; do
    "$X" export "$TMP/bad.json" -o "$TMP/bad$k.json" -q --format speedscope --ranks $k \
        2>"$TMP/bad$k.err"
done
grep -q "not properly nested" "$TMP/bad1.err" && grep -q "not properly nested" "$TMP/bad2.err" &&
    ! cmp -s "$TMP/bad1.err" "$TMP/bad2.err" && ok || bad "the two ranks' nesting errors"
for np in 1 2 3; do
    run_np "$np" "$X" export "$TMP/bad.json" -o "$TMP/badall.json" -q --format speedscope \
        --ranks 0-2 2>"$TMP/badall.err" && bad "-n $np: no nesting error"
    grep -qF "$(sed 's/^scope-export: error: //; s/ \[rank 0\]$//' "$TMP/bad1.err")" \
        "$TMP/badall.err" && [ ! -e "$TMP/badall.json" ] && ok ||
        bad "-n $np: not rank 1's nesting error: $(head -c 300 "$TMP/badall.err")"
    # the OTF2 archive checks the nesting as speedscope does, each process its ranks
    run_np "$np" "$X" export "$TMP/bad.json" -o "$TMP/otf2.$np/t.otf2" -q --format otf2 \
        --ranks 0-2 2>"$TMP/badall.err" && bad "-n $np: no nesting error (OTF2)"
    grep -qF "$(sed 's/^scope-export: error: //; s/ \[rank 0\]$//' "$TMP/bad1.err")" \
        "$TMP/badall.err" && ok ||
        bad "-n $np: not rank 1's nesting error (OTF2): $(head -c 300 "$TMP/badall.err")"
done

# Calls that overlap here and there (a few of each row lengthened): the error names the
# call the reference names, worked out by the reference's method (the depths from the
# sorted ends), whichever way the export finds it; with lanes and without, at 1 to 3
# processes.
for base in plain lanes; do
    python3 "$CHECK" "$TMP/$base.json" --overlap "$TMP/ov.$base.json" &&
        want=$(python3 "$CHECK" "$TMP/ov.$base.json" --nest-error) &&
        [ "$want" != None ] || { bad "overlap variant of $base"; continue; }
    for np in 1 2 3; do
        run_np "$np" "$X" export "$TMP/ov.$base.json" -o "$TMP/ov.json" -q \
            --format speedscope --ranks 0-2 2>"$TMP/ov.err" && bad "$base -n $np: no error"
        grep -qF "$want" "$TMP/ov.err" && [ ! -e "$TMP/ov.json" ] && ok ||
            bad "$base -n $np: not the reference's call: $(head -c 400 "$TMP/ov.err"), want $want"
    done
done

# Two processes: the worker sends blocks of records that rank 0 finishes, or their text
# when rank 0 is behind; a bounded number in flight, of bounded bytes (the worker of a
# 100 MB document waits for its blocks of 3-4 MiB to go; with blocks of 4 KiB, for a free
# one of its 32). The document is the one process's, byte for byte.
if "$SYNTH" --ranks 2 --regions 6 --nest --events 1000000 "$TMP/big.h5" >/dev/null &&
    "$X" export "$TMP/big.h5" -o "$TMP/big.0.json" -q --format speedscope --ranks 0-1; then
    for bs in "" "--block-size 4096"; do
        # shellcheck disable=SC2086
        run_np 2 "$X" export "$TMP/big.h5" -o "$TMP/big.2.json" -q --format speedscope \
            --ranks 0-1 $bs && cmp -s "$TMP/big.0.json" "$TMP/big.2.json" && ok ||
            bad "100 MB document -n 2 ${bs:-default blocks}: not the one process's"
        rm -f "$TMP/big.2.json"
    done
else
    bad "100 MB document: one process failed"
fi
rm -f "$TMP"/big.*

# The checker can fail: a document of another run's calls is not this one's.
python3 "$CHECK" "$TMP/plain.json" "$TMP/lanes.1.json" >/dev/null && bad "checker accepts anything" || ok
finish
