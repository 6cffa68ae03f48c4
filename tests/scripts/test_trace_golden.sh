#!/usr/bin/env bash
# test_trace_golden.sh - the Chrome trace and speedscope documents of every golden run
# equal scope-profiler's (exporter masked), at 1, 2 and 3 ranks, as .json and .json.gz,
# from the HDF5 run and from its JSON profile; the reference's errors fail the same way
. "$(dirname "$0")/lib.sh"

[ -d "$SHARED/golden" ] || { echo "skip: no golden runs at $SHARED/golden"; exit 77; }

# The golden text of NAME in DIR: NAME or, for a large one, NAME.gz.
golden() { if [ -f "$1/$2" ]; then echo "$1/$2"; else echo "$1/$2.gz"; fi; }
# Every rank of the run, as --ranks takes them.
all_ranks() { grep -o '"num_ranks": [0-9]*' "$1/run.json" | head -1 | awk '{ n = $2; s = "0"; for (i = 1; i < n; i++) s = s "," i; print s }'; }

# An export that must fail with the reference's MESSAGE, status 1, leaving no file.
expect_error() {
    local what=$1 msg=$2 out=$3
    shift 3
    if "$@" 2>"$TMP/err"; then
        bad "$what: succeeded, expected '$msg'"
    elif [ $? -ne 1 ]; then
        bad "$what: exit status is not 1: $(cat "$TMP/err")"
    elif ! grep -qF -- "$msg" "$TMP/err" || [ "$(grep -c '^scope-export:' "$TMP/err")" -ne 1 ]; then
        bad "$what: expected one line with '$msg', got: $(cat "$TMP/err")"
    elif [ -e "$out" ]; then
        bad "$what: left $out behind"
    else
        ok
    fi
}

for dir in "$SHARED"/golden/*/; do
    dir=${dir%/}
    case=$(basename "$dir")
    all=$(all_ranks "$dir")
    # every rank count, each suffix at two of them; blocks of a few calls cut ranks and
    # profiles too (the .gz bytes do not depend on the rank count: test_golden)
    for combo in 1:json:0 2:json.gz:0 3:json:0 2:json:1024 3:json.gz:1024; do
        IFS=: read -r np ext bs <<<"$combo"
        sx_sample 5 || continue
        bsopt=()
        [ "$bs" = 0 ] || bsopt=(--block-size "$bs")
        {
            o="$TMP/$case.$np"
            run_np "$np" "$X" export "$dir/run.h5" -o "$o.chrome.$ext" -q "${bsopt[@]}" \
                --format chrome-trace --ranks "$all" &&
                "$CMP" "$o.chrome.$ext" "$(golden "$dir" run.chrome.json)" && ok ||
                bad "$case chrome-trace every rank -n $np $ext $bs"
            # rank 0's trace (a subset of every rank's) at each rank count once
            if [ "$combo" != 3:json:0 ] && [ "$combo" != 2:json:1024 ]; then
                run_np "$np" "$X" export "$dir/run.h5" -o "$o.chrome0.$ext" -q \
                    "${bsopt[@]}" --format chrome-trace &&
                    "$CMP" "$o.chrome0.$ext" "$(golden "$dir" run.chrome.rank0.json)" &&
                    ok || bad "$case chrome-trace rank 0 -n $np $ext $bs"
            fi
            if [ -f "$dir/run.speedscope.error.txt" ]; then
                msg=$(sed 's/^ValueError: //' "$dir/run.speedscope.error.txt")
                expect_error "$case speedscope -n $np $ext" "$msg" "$o.ss.$ext" \
                    run_np "$np" "$X" export "$dir/run.h5" -o "$o.ss.$ext" -q "${bsopt[@]}" \
                    --format speedscope --ranks "$all"
            else
                run_np "$np" "$X" export "$dir/run.h5" -o "$o.ss.$ext" -q "${bsopt[@]}" \
                    --format speedscope --ranks "$all" &&
                    "$CMP" "$o.ss.$ext" "$(golden "$dir" run.speedscope.json)" && ok ||
                    bad "$case speedscope -n $np $ext $bs"
            fi
        }
    done
    # The run's JSON profile as input gives the same documents (its stem is "run" too).
    cp "$dir/run.json" "$TMP/run.json"
    for np in 1 2; do
        sx_sample 2 || continue
        run_np "$np" "$X" export "$TMP/run.json" -o "$TMP/j.chrome.json" -q \
            --format chrome-trace --ranks "$all" &&
            "$CMP" "$TMP/j.chrome.json" "$(golden "$dir" run.chrome.json)" && ok ||
            bad "$case chrome-trace from run.json -n $np"
        if [ ! -f "$dir/run.speedscope.error.txt" ]; then
            run_np "$np" "$X" export "$TMP/run.json" -o "$TMP/j.ss.json.gz" -q \
                --format speedscope --ranks "$all" &&
                "$CMP" "$TMP/j.ss.json.gz" "$(golden "$dir" run.speedscope.json)" && ok ||
                bad "$case speedscope from run.json -n $np"
        fi
    done
done

# The reference's errors: a rank outside the run, filters that keep nothing.
d="$SHARED/golden/mpi4_parallel"
for np in 1 3; do
    for fmt in chrome-trace speedscope; do
        expect_error "$fmt --ranks 0,4 -n $np" "Invalid rank requested: 4" "$TMP/e.json" \
            run_np "$np" "$X" export "$d/run.h5" -o "$TMP/e.json" -q --format "$fmt" \
            --ranks 0,4
    done
    expect_error "speedscope --include nothing -n $np" \
        "No regions matched the selected filters." "$TMP/e.json.gz" \
        run_np "$np" "$X" export "$d/run.h5" -o "$TMP/e.json.gz" -q --format speedscope \
        --include 'no such region$'
done
# A failed export leaves an existing output as it was.
echo keep >"$TMP/keep.json"
expect_error "existing output" "Invalid rank requested: 9" "$TMP/none" \
    run_np 2 "$X" export "$d/run.h5" -o "$TMP/keep.json" -q --format speedscope --ranks 9
[ "$(cat "$TMP/keep.json")" = keep ] && ok || bad "a failed export changed the existing output"
# The Chrome trace of no region is the processes alone; --ranks keeps its order.
run_np 2 "$X" export "$d/run.h5" -o "$TMP/none.json" -q --format chrome-trace \
    --ranks 2,0 --include 'no such region$' &&
    [ "$(cat "$TMP/none.json")" = '{"displayTimeUnit":"ms","metadata":{"name":"4 ranks parallel","exporter":"scope-export@'"$("$X" --version | cut -d' ' -f2)"'"},"traceEvents":[{"name":"process_name","ph":"M","pid":2,"tid":0,"args":{"name":"rank 2"}},{"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"rank 0"}}]}' ] &&
    ok || bad "chrome-trace of no region, ranks 2,0: $(cat "$TMP/none.json")"
# Bare (no MPI) gives the same text.
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u PMI_FD \
    timeout 120 "$X" export "$d/run.h5" -o "$TMP/bare.json" -q --format speedscope \
    --ranks 0,1,2,3 && "$CMP" "$TMP/bare.json" "$(golden "$d" run.speedscope.json)" && ok ||
    bad "speedscope bare"
finish
