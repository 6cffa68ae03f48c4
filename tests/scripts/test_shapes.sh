#!/usr/bin/env bash
# test_shapes.sh - synthetic runs of many shapes export to the same text at 1, 2, 3, 4 ranks
# (one huge row split over blocks and ranks, blocks larger than rank 0 receives at once,
# many tiny rows, more or fewer file ranks than exporter ranks, empty ranks, every optional
# column, fixed-length strings, aggregate layout).
# The reference goes through the page cache (SCOPE_EXPORT_DIRECT_WRITES=0), the others around
# it where they are larger than a stage (8 MiB: the first two shapes, 21 MB of text).
. "$(dirname "$0")/lib.sh"
SYNTH="$BIN/scope-export-synth"

shape() { # name block-size synth-options...
    local name=$1 bs=$2
    shift 2
    "$SYNTH" "$@" --seed 5 "$TMP/$name.h5" >/dev/null || { bad "$name: generator failed"; return; }
    SCOPE_EXPORT_DIRECT_WRITES=0 "$X" export "$TMP/$name.h5" -o "$TMP/$name.ref.json" -q ||
        { bad "$name: export -n 1"; return; }
    for np in 1 2 3 4; do
        for ext in json json.gz; do
            sx_sample 3 || continue
            out="$TMP/$name.$np.$ext"
            if run_np "$np" "$X" export "$TMP/$name.h5" -o "$out" -q --block-size "$bs" &&
                "$CMP" "$out" "$TMP/$name.ref.json"; then
                ok
            else
                bad "$name -n $np $ext (blocks of $bs)"
            fi
        done
    done
    rm -f "$TMP/$name".*
}

shape one-huge-row 65536 --ranks 1 --regions 1 --events 400000 --columns call,parent
# blocks larger than rank 0 takes from a worker at once (16 MiB): it writes them in runs
shape huge-blocks 40000000 --ranks 2 --regions 3 --events 2000000
shape skewed 32768 --ranks 4 --regions 6 --events 300000 --skew 0.9 --columns all
shape tiny-rows 4096 --ranks 64 --regions 40 --events 6000
shape more-file-ranks 16384 --ranks 16 --regions 5 --events 50000 --lanes --likwid --lineprof
shape fewer-file-ranks 16384 --ranks 1 --regions 30 --events 50000 --columns gpu,meta
shape empty-ranks 8192 --ranks 7 --regions 4 --events 20000 --empty-ranks --columns all
shape fixed-strings 8192 --ranks 3 --regions 5 --events 20000 --strings fixed --unicode
shape chunked-deflate 16384 --ranks 4 --regions 4 --events 80000 --chunk 1000 --deflate 3
shape aggregate 1024 --ranks 9 --regions 7 --aggregate
finish
