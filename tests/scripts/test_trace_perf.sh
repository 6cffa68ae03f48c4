#!/usr/bin/env bash
# test_trace_perf.sh - a run's rank<N>/perf_events groups become the Chrome trace's
# counter ("C") events, with the values scope-export-synth --perf documents
. "$(dirname "$0")/lib.sh"

SYNTH="$BIN/scope-export-synth"
"$SYNTH" --ranks 2 --regions 3 --events 12 --perf "$TMP/perf.h5" ||
    { bad "scope-export-synth --perf failed"; finish; exit 1; }
ver=$("$X" --version | cut -d' ' -f2)

# No region selected (the run is labelled "synth"): the process names and the counters at ts 0.0, worked out by hand
# from the generator's rule (rank i: cycles 1000000 (i+1) + j, instructions
# 2000000 (i+1) + j, calls 10 i + j + 1 for its regions j = 0, 1 in name order).
c() { printf '{"name":"perf events: %s","cat":"perf_events","ph":"C","ts":0.0,"pid":%s,"tid":0,"args":{"cycles":%s,"instructions":%s,"calls":%s}}' "$@"; }
p() { printf '{"name":"process_name","ph":"M","pid":%s,"tid":0,"args":{"name":"rank %s"}}' "$1" "$1"; }
expected="{\"displayTimeUnit\":\"ms\",\"metadata\":{\"name\":\"synth\",\"exporter\":\"scope-export@$ver\"},\"traceEvents\":[$(p 0),$(c main 0 1000000 2000000 1),$(c solve 0 1000001 2000001 2),$(p 1),$(c main 1 2000000 4000000 11),$(c solve 1 2000001 4000001 12)]}"
for np in 1 2; do
    run_np "$np" "$X" export "$TMP/perf.h5" -o "$TMP/none.json" -q --format chrome-trace \
        --ranks 0,1 --include 'no such region$' &&
        [ "$(cat "$TMP/none.json")" = "$expected" ] && ok ||
        bad "perf counters without calls -n $np: $(cat "$TMP/none.json")"
done

# With the calls: the counters stand at the end of the rank's timeline,
# (max end_ns / 1e9 - start_time_ns / 1e9) * 1000000, worked out here from the JSON
# profile's numbers with awk's doubles.
"$X" export "$TMP/perf.h5" -o "$TMP/profile.json" -q || bad "JSON profile"
origin=$(grep -o '"start_time_ns": [0-9]*' "$TMP/profile.json" | head -1 | awk '{print $2}')
for r in 0 1; do
    want=$(grep -o '{"name": "[^"]*", "rank": '"$r"',[^}]*}' "$TMP/profile.json" |
        grep -o '"end_times_ns": \[[^]]*\]' | tr -c '0-9\n' ' ' |
        awk -v o="$origin" '{ for (i = 1; i <= NF; i++) if (m == "" || $i + 0 > m + 0) m = $i }
            END { printf "%.17g\n", (m / 1e9 - o / 1e9) * 1000000 }')
    for np in 1 3; do
        run_np "$np" "$X" export "$TMP/perf.h5" -o "$TMP/all.json.gz" -q \
            --format chrome-trace --ranks 0,1 --block-size 1024 || bad "export -n $np"
        got=$(gzip -dc "$TMP/all.json.gz" |
            grep -o '{"name":"perf events: main","cat":"perf_events","ph":"C","ts":[^,]*,"pid":'"$r"',[^}]*}}' |
            sed 's/.*"ts":\([^,]*\),.*/\1/')
        [ -n "$got" ] && awk -v a="$got" -v b="$want" 'BEGIN { exit !(a + 0 == b + 0) }' &&
            ok || bad "rank $r counters at ts '$got', expected $want (-n $np)"
        gzip -dc "$TMP/all.json.gz" | grep -q '"pid":'"$r"',"tid":0,"args":{"cycles":'"$((1000000 * (r + 1) + 1))"',"instructions":'"$((2000000 * (r + 1) + 1))"',"calls":'"$((10 * r + 2))"'}}' &&
            ok || bad "rank $r 'solve' counters -n $np"
    done
done
# The counters come after the rank's calls and before the next rank's process name.
gzip -dc "$TMP/all.json.gz" | grep -q '"ph":"X"[^{]*{[^}]*}},{"name":"perf events: main".*"pid":0,.*{"name":"process_name","ph":"M","pid":1' &&
    ok || bad "counters are not at the end of rank 0"
finish
