#!/usr/bin/env bash
# test_sweep_cli.sh - the command with several inputs, an allocation, HDF5 read or output
# write failing on one rank: every rank ends with status 1, rank 0 prints one line naming
# the failing rank (out of memory called out of memory), and no partial or temporary file
# is left; what was written before the failure is complete
. "$(dirname "$0")/lib.sh"
sx_leak_check
. "$(dirname "$0")/mpi_lib.sh"

XF="$BIN/tests/scope-export-faults" # the command with the test-only fault hooks (SX_FAULT)
[ -x "$XF" ] || { echo "FAIL: $XF is not built" >&2; exit 1; }

# Runs per (ranks, failing rank, output kind): fewer under the sanitizers' slowness.
if [ "$SX_SAN" = 1 ]; then K_ALLOC=3 K_IO=1; else K_ALLOC=8 K_IO=4; fi

ins=("$SHARED/golden/basic_nested/run.h5" "$SHARED/golden/threads/run.h5"
    "$SHARED/golden/gen_likwid_lineprof/run.h5")
for f in "${ins[@]}"; do [ -f "$f" ] || { echo "SKIP: no $f"; exit 77; }; done
runs=0 hangs=0 absorbed=0
# same_dir A B: the same files in both, byte for byte
same_dir() {
    [ "$(ls -A "$1")" = "$(ls -A "$2")" ] || return 1
    local f
    for f in "$2"/*; do cmp -s "$f" "$1/$(basename "$f")" || return 1; done
}

# sweep NP EXT: reference outputs and counts from a normal run, then the faults.
sweep() {
    local np=$1 ext=$2 ref="$TMP/ref.$1.$2" out="$TMP/out.$1.$2" r kind count k n rc why
    rm -rf "$ref" && mkdir -p "$ref"
    if ! SX_FAULT=count mpi "$np" "$XF" export "${ins[@]}" -o "$ref/p.$ext" -q \
        2>"$TMP/count.txt"; then
        bad "-n $np .$ext: the normal run failed: $(head -c 300 "$TMP/count.txt")"
        return
    fi
    [ "$(ls "$ref" | wc -l)" = 3 ] || bad "-n $np .$ext: not three outputs: $(ls "$ref")"
    for ((r = 0; r < np; r++)); do
        for kind in alloc read write; do
            count=$(awk -v r="$r" -v k="$kind" '$1 == "sx-fault-count" && $3 == r {
                for (i = 4; i < NF; i += 2) if ($i == k) print $(i + 1) }' "$TMP/count.txt")
            [ -n "$count" ] || { bad "-n $np: no count for rank $r"; continue; }
            [ "$count" -gt 0 ] || continue
            k=$K_IO
            [ "$kind" = alloc ] && k=$K_ALLOC
            [ "$k" -le "$count" ] || k=$count
            # every N from 1 to count, evenly, starting differently on each rank
            for ((i = 0; i < k; i++)); do
                n=$((1 + (i * count + r * count / (3 * k + 1)) / k))
                rm -rf "$out" && mkdir -p "$out"
                rc=0
                SX_FAULT="$kind:$n:$r" mpi "$np" "$XF" export "${ins[@]}" -o "$out/p.$ext" -q \
                    >/dev/null 2>"$TMP/err.txt" || rc=$?
                runs=$((runs + 1))
                # A fault that a fall-back absorbs (a mapping that cannot be made is read
                # with pread) is fine when every output is the normal run's, byte for byte.
                if [ "$rc" = 0 ] && [ ! -s "$TMP/err.txt" ] && same_dir "$out" "$ref"; then
                    absorbed=$((absorbed + 1))
                    ok
                    continue
                fi
                why=""
                case $rc in
                1) ;;
                124 | 137) why="; a hang"; hangs=$((hangs + 1)) ;;
                99) why="; $RANKS_AGREE" ;;
                *) why="; exit status $rc" ;;
                esac
                [ "$(grep -vc '^\[warn\] Epoll ' "$TMP/err.txt")" = 1 ] ||
                    why="$why; $(grep -c '' "$TMP/err.txt") lines on stderr"
                grep -q "\[rank $r[],]" "$TMP/err.txt" || why="$why; the rank is not named"
                if [ "$kind" = alloc ]; then
                    grep -q 'out of memory' "$TMP/err.txt" || why="$why; not out of memory"
                else
                    grep -qi 'out of memory' "$TMP/err.txt" && why="$why; out of memory?"
                fi
                for f in "$out"/* "$out"/.[!.]*; do
                    [ -e "$f" ] || continue
                    cmp -s "$f" "$ref/$(basename "$f")" || why="$why; $(basename "$f") left"
                done
                [ "$(ls "$out" | wc -l)" -lt 3 ] || why="$why; every output written"
                [ -z "$why" ] && ok ||
                    bad "-n $np .$ext: $kind $n of $count on rank $r:${why#;}: $(head -c 300 "$TMP/err.txt")"
            done
        done
    done
}

# (under the sanitizers, -n 2 to .json and -n 3 to .json.gz only)
for combo in 2:json 2:json.gz 3:json 3:json.gz; do
    IFS=: read -r np ext <<<"$combo"
    sx_sample 3 || continue
    sweep "$np" "$ext"
done
# The options' own allocations (the list of --ranks) on one rank: one line naming it and
# status 1 on every rank, not a usage error (status 2, said by rank 0 alone: nothing).
mkdir -p "$TMP/opt"
for n in 1 2 3 4 5 6; do
    rm -f "$TMP/opt"/*
    rc=0
    SX_FAULT="alloc:$n:1" mpi 2 "$XF" export "${ins[0]}" -o "$TMP/opt/p.json" -q --ranks 0 \
        >/dev/null 2>"$TMP/err.txt" || rc=$?
    runs=$((runs + 1))
    if [ "$rc" = 0 ]; then
        [ -s "$TMP/opt/p.json" ] && ok || bad "--ranks, allocation $n on rank 1: no output"
    else
        [ "$rc" = 1 ] && [ "$(grep -vc '^\[warn\] Epoll ' "$TMP/err.txt")" = 1 ] &&
            grep -q 'out of memory \[rank 1\]' "$TMP/err.txt" && [ -z "$(ls -A "$TMP/opt")" ] &&
            ok || bad "--ranks, allocation $n on rank 1: status $rc: $(head -c 300 "$TMP/err.txt")"
    fi
done
# The same in scope-profiler's form of the command (export KIND FILES -o DIR), whose
# own allocations (the files, the ranks, the labels, the output names) come before
# its collective steps: on either rank, status 1 and one line naming it (or the
# normal output), never a hang (a rank left for an export the other never joined).
for r in 0 1; do
    for n in 1 2 3 4 5 6 7 8 9 10 11 12; do
        rm -rf "$TMP/spo" && mkdir -p "$TMP/spo"
        rc=0
        SX_FAULT="alloc:$n:$r" mpi 2 "$XF" export prof "${ins[0]}" "${ins[1]}" -o "$TMP/spo" \
            -r 0 --label a --label b >/dev/null 2>"$TMP/err.txt" || rc=$?
        runs=$((runs + 1))
        if [ "$rc" = 0 ]; then
            [ "$(ls "$TMP/spo")" = "$(printf 'profile_a_rank0.prof\nprofile_b_rank0.prof')" ] &&
                ok || bad "export prof, allocation $n on rank $r: $(ls "$TMP/spo")"
        else
            [ "$rc" = 1 ] && [ "$(grep -vc '^\[warn\] Epoll ' "$TMP/err.txt")" = 1 ] &&
                grep -q "out of memory \[rank $r\]" "$TMP/err.txt" &&
                [ -z "$(ls -A "$TMP/spo")" ] && ok ||
                bad "export prof, allocation $n on rank $r: status $rc: $(head -c 300 "$TMP/err.txt")"
        fi
    done
done
echo "test_sweep_cli: $runs runs, hangs: $hangs, absorbed by a fall-back: $absorbed"
finish
