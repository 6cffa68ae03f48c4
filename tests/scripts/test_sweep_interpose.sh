#!/usr/bin/env bash
# test_sweep_interpose.sh - the Nth allocation of our code failing, by interposition
# (an LD_PRELOAD shim, independent of sx_malloc), on one rank at -n 2 and -n 3: the
# library under every command (tests/sweep/test_sweep_interpose.c, every N under 60 and
# a stride beyond), then the command itself, whose allocations (main.c's included) end
# in status 1 on every rank with one line on stderr, or in the normal run's output; never
# a crash, a hang, an output or a temporary file left; and the command alone, without MPI,
# on a run it reads ahead in a helper thread
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mpi_lib.sh"

if [ -n "$SX_SAN_FLAGS" ]; then
    # AddressSanitizer replaces malloc itself: a preloaded allocator cannot sit under it
    echo "skipped: the allocator shim cannot be preloaded under AddressSanitizer"
    exit 77
fi
SHIM="$BIN/tests/libsx_failmalloc.so"
SWEEP="$BIN/tests/test_sweep_interpose"
for f in "$SHIM" "$SWEEP"; do [ -e "$f" ] || { echo "FAIL: $f is not built" >&2; exit 1; }; done
G="$SHARED/golden/gen_schema3_allcols/run.h5"
[ -f "$G" ] || { echo "skipped: no $G"; exit 77; }
export SX_SHARED_DIR="$SHARED"

# A plain profile that validate reads in parts, one a rank (a few MiB).
"$BIN/scope-export-synth" --ranks 4 --regions 8 --events 120000 --seed 2 "$TMP/parts.h5" \
    >/dev/null && "$X" export "$TMP/parts.h5" -o "$TMP/parts.json" -q ||
    bad "cannot make the profile read in parts"
export SX_SWEEP_PARTS_JSON="$TMP/parts.json"

# The library: every command, every N under 60 and SX_SWEEP_BEYOND runs beyond.
for np in 2 3; do
    start=$SECONDS
    if LIMIT=900 mpi "$np" env LD_PRELOAD="$SHIM" SX_FAILMALLOC_MATCH=libscope_export \
        SX_SWEEP_BEYOND="${SX_SWEEP_BEYOND:-15}" "$SWEEP" >"$TMP/lib$np.txt" 2>&1; then
        ok
    else
        bad "-n $np: the library's sweep failed: $(grep -v '^\[warn\] Epoll ' "$TMP/lib$np.txt" | head -c 3000)"
    fi
    grep '^interposition sweep\|allocations per rank' "$TMP/lib$np.txt"
    echo "library sweep -n $np: $((SECONDS - start)) s"
done

# The OTF2 archive at every N (a few hundred runs of a second): its allocations feed
# OTF2's own buffers and collectives, where a failure on one process once left the other
# in a collective, or an archive half renamed into place.
if LIMIT=600 mpi 2 env LD_PRELOAD="$SHIM" SX_FAILMALLOC_MATCH=libscope_export \
    SX_SWEEP_ONLY="export otf2" SX_SWEEP_BEYOND=100000 "$SWEEP" >"$TMP/otf2.txt" 2>&1; then
    ok
else
    bad "-n 2: the OTF2 sweep at every N failed: $(grep -v '^\[warn\] Epoll \|^\[OTF2\]' "$TMP/otf2.txt" | head -c 3000)"
fi
grep '^interposition sweep' "$TMP/otf2.txt"

# The command (the library linked in statically): the shim matches its own file name. On
# the golden run, and on a run whose event columns are chunked and deflated (read chunk by
# chunk around HDF5, h5_direct.c).
command_sweep() { # NAME RUN.h5
    local what=$1 G=$2
    out="$TMP/out" ref="$TMP/ref"
    mkdir -p "$out" "$ref"
    mpi 2 "$X" export "$G" -o "$ref/p.json.gz" -q || bad "the normal run failed"
    rm -rf "$TMP/count" && mkdir -p "$TMP/count"
    for r in 0 1; do
        mpi 2 env LD_PRELOAD="$SHIM" SX_FAILMALLOC_OUT="$TMP/count" SX_FAILMALLOC_RANK=$r \
            SX_FAILMALLOC_MATCH=scope-export "$X" export "$G" -o "$out/p.json.gz" -q ||
            bad "the counting run failed"
        rm -f "$out/p.json.gz"
    done
    runs=0 crashes=0 hangs=0
    for n in 1 2 3 4 5 6 7 8 9 10 11 12 20 40 80 160 320; do
        r=$((n % 2))
        count=$(cut -d' ' -f1 "$TMP/count/count.$r" 2>/dev/null)
        [ -n "$count" ] || { bad "no count for rank $r"; break; }
        [ "$n" -le "$count" ] || continue
        rc=0
        mpi 2 env LD_PRELOAD="$SHIM" SX_FAILMALLOC_MATCH=scope-export SX_FAILMALLOC=$n \
            SX_FAILMALLOC_RANK=$r "$X" export "$G" -o "$out/p.json.gz" -q >/dev/null \
            2>"$TMP/err.txt" || rc=$?
        runs=$((runs + 1))
        why=""
        case $rc in
        0) cmp -s "$out/p.json.gz" "$ref/p.json.gz" || why="; status 0 but not the normal output" ;;
        1) [ ! -e "$out/p.json.gz" ] || why="; an output after a failure"
           [ "$(grep -vc '^\[warn\] Epoll ' "$TMP/err.txt")" = 1 ] ||
               why="$why; $(grep -c '' "$TMP/err.txt") lines on stderr" ;;
        124 | 137) why="; a hang"; hangs=$((hangs + 1)) ;;
        99) why="; $RANKS_AGREE" ;;
        *) why="; exit status $rc"; crashes=$((crashes + 1)) ;;
        esac
        grep -qi 'double free\|sanitizer\|signal\|crashed' "$TMP/err.txt" && why="$why; a crash"
        for f in "$out"/.[!.]*; do [ -e "$f" ] && why="$why; $(basename "$f") left"; done
        [ -z "$why" ] && ok || bad "command ($what): allocation $n of $count on rank $r:${why#;}: $(head -c 300 "$TMP/err.txt")"
        rm -f "$out/p.json.gz"
    done
    echo "command sweep -n 2 ($what): $runs runs, $crashes crashes, $hangs hangs"
}
# One process without MPI, which reads a many-row run's next blocks in a helper thread
# (json_doc.c) when it may run on two CPUs: an allocation failing in either thread.
alone_sweep() {
    local h5="$TMP/rows.h5" out="$TMP/alone" ref="$TMP/alone.ref.json" count rc why
    "$BIN/scope-export-synth" --ranks 300 --regions 24 --events 30000 --zero-rows \
        --columns all --seed 11 "$h5" >/dev/null || { bad "cannot make the many-row run"; return; }
    "$X" export "$h5" -o "$ref" -q --block-size 16384 || { bad "the normal run failed"; return; }
    rm -rf "$TMP/count" "$out" && mkdir -p "$TMP/count" "$out"
    mpi 0 env LD_PRELOAD="$SHIM" SX_FAILMALLOC_OUT="$TMP/count" SX_FAILMALLOC_MATCH=scope-export \
        "$X" export "$h5" -o "$out/p.json" -q --block-size 16384 || bad "the counting run failed"
    count=$(cut -d' ' -f1 "$TMP/count/count.0" 2>/dev/null)
    [ -n "$count" ] && [ "$count" -gt 100 ] || { bad "no count of the one-process run"; return; }
    runs=0
    for ((i = 1; i <= 40; i++)); do
        n=$((1 + (i * 7919) % count))
        rm -f "$out/p.json"
        rc=0
        mpi 0 env LD_PRELOAD="$SHIM" SX_FAILMALLOC_MATCH=scope-export SX_FAILMALLOC=$n \
            "$X" export "$h5" -o "$out/p.json" -q --block-size 16384 >/dev/null \
            2>"$TMP/err.txt" || rc=$?
        runs=$((runs + 1))
        why=""
        case $rc in
        0) cmp -s "$out/p.json" "$ref" || why="; status 0 but not the normal output" ;;
        1) [ ! -e "$out/p.json" ] || why="; an output after a failure"
           [ "$(grep -c '' "$TMP/err.txt")" = 1 ] || why="$why; $(grep -c '' "$TMP/err.txt") lines on stderr"
           grep -q 'out of memory' "$TMP/err.txt" || why="$why; not called out of memory" ;;
        124 | 137) why="; a hang" ;;
        *) why="; exit status $rc" ;;
        esac
        for f in "$out"/.[!.]*; do [ -e "$f" ] && why="$why; $(basename "$f") left"; done
        [ -z "$why" ] && ok || bad "one process: allocation $n of $count:${why#;}: $(head -c 300 "$TMP/err.txt")"
    done
    echo "command sweep, one process (read-ahead thread): $runs runs of $count allocations"
}
alone_sweep

command_sweep golden "$G"
"$BIN/scope-export-synth" --ranks 3 --regions 4 --events 30000 --chunk 1000 --deflate 3 \
    --seed 4 "$TMP/zip.h5" >/dev/null || bad "cannot make the deflated run"
command_sweep "deflated columns" "$TMP/zip.h5"
finish
