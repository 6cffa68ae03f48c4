#!/usr/bin/env bash
# test_many_rows.sh - runs of thousands of rows (empty ranks, rows without calls) export to
# the same text at 1, 2 and 3 ranks, with the reads around libhdf5 on and off and the
# read-ahead thread on and off, and that text holds the rows the generator wrote; imported
# back, with the event writes around libhdf5 on and off, it exports to the same text; and
# the same of their summaries (--summary)
. "$(dirname "$0")/lib.sh"
SYNTH="$BIN/scope-export-synth"

# The event counts of the index, one a line, as the generator wrote them.
index_counts() {
    h5dump -d /rank_region_index/event_counts -y -w 0 "$1" |
        sed -n '/DATA {/,/}/p' | sed '1d;$d' | tr -s ', ' '\n\n' | sed '/^$/d'
}

# The document's rows: "name<TAB>rank<TAB>calls" sorted, and how many have no calls.
doc_rows() {
    python3 - "$1" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
rows = doc["regions"]
for r in rows:
    n = len(r["start_times_ns"])
    assert len(r["end_times_ns"]) == n, r["name"]
    print("%s\t%d\t%d" % (r["name"], r["rank"], n))
EOF
}

shape() { # name block-size synth-options...
    local name=$1 bs=$2
    shift 2
    # SX_TEST_SHAPES ("every-column"): only these, for a cheap second run (tests/CMakeLists.txt)
    [ -z "${SX_TEST_SHAPES:-}" ] || [[ " $SX_TEST_SHAPES " == *" $name "* ]] || return 0
    local h5=$TMP/$name.h5 ref=$TMP/$name.ref.json
    "$SYNTH" "$@" --seed 11 "$h5" >/dev/null || { bad "$name: generator failed"; return; }
    "$X" export "$h5" -o "$ref" -q --block-size "$bs" || { bad "$name: bare export"; return; }

    # the structure: one document row per index row, the same calls, zero-count ones too
    local want got zeros_want zeros_got
    want=$(index_counts "$h5" | sort -n | tr '\n' ' ')
    got=$(doc_rows "$ref" | cut -f3 | sort -n | tr '\n' ' ')
    zeros_want=$(index_counts "$h5" | grep -cx 0)
    zeros_got=$(doc_rows "$ref" | cut -f3 | grep -cx 0)
    if [ -n "$want" ] && [ "$want" = "$got" ] && [ "$zeros_want" -gt 0 ]; then
        ok
    else
        bad "$name: the document's rows are not the index's ($(echo "$got" | wc -w) rows," \
            "$zeros_got without calls; the index: $(echo "$want" | wc -w), $zeros_want)"
    fi
    [ "$(doc_rows "$ref" | wc -l)" -ge 4000 ] && ok || bad "$name: fewer rows than meant"
    # and every row's values, against the run read in full by the non-streaming reader
    if "$BIN/tests/same_run" "$ref" "$h5" 2>"$TMP/err"; then
        ok
    else
        bad "$name: $(head -1 "$TMP/err")"
    fi

    # the reads around libhdf5 (h5_direct.h) and HDF5's own give the same bytes
    if SCOPE_EXPORT_DIRECT_READS=1 "$X" export "$h5" -o "$TMP/$name.on.json" -q \
        --block-size "$bs" && SCOPE_EXPORT_DIRECT_READS=0 "$X" export "$h5" \
        -o "$TMP/$name.off.json" -q --block-size "$bs" &&
        cmp -s "$TMP/$name.on.json" "$TMP/$name.off.json"; then
        ok
    else
        bad "$name: SCOPE_EXPORT_DIRECT_READS=1 and =0 give different documents"
    fi

    # the document imported back: its events staged around libhdf5 (h5_write_direct.h)
    # and through H5Dwrite give runs that export to it again, and the same file byte for
    # byte (both at one fixed second: HDF5 records the objects' modification times)
    local imp
    for imp in 1 0; do
        if SCOPE_EXPORT_DIRECT_EVENT_WRITES=$imp LD_PRELOAD="$FIXTIME" "$X" import "$ref" \
            -o "$TMP/$name.imp$imp.h5" -q &&
            "$X" export "$TMP/$name.imp$imp.h5" -o "$TMP/$name.imp$imp.json" -q &&
            "$CMP" "$TMP/$name.imp$imp.json" "$ref"; then
            ok
        else
            bad "$name: imported with SCOPE_EXPORT_DIRECT_EVENT_WRITES=$imp, not the document"
        fi
    done
    if [ -n "$FIXTIME" ]; then
        cmp -s "$TMP/$name.imp1.h5" "$TMP/$name.imp0.h5" && ok ||
            bad "$name: the events staged around libhdf5 and HDF5's own writes: other files"
    fi

    # the reads in batches through io_uring (read_batch.h) and a pread each give the same
    # bytes (the spans of the event columns, the metadata's elements and strings)
    if SCOPE_EXPORT_URING=0 "$X" export "$h5" -o "$TMP/$name.pread.json" -q \
        --block-size "$bs" && cmp -s "$TMP/$name.pread.json" "$ref"; then
        ok
    else
        bad "$name: SCOPE_EXPORT_URING=0 and the default give different documents"
    fi

    # the reads from a mapping of the file (read_batch.h: a local file system, as this
    # test's) and the reads give the same bytes
    if SCOPE_EXPORT_MAPPED_READS=0 "$X" export "$h5" -o "$TMP/$name.read.json" -q \
        --block-size "$bs" && cmp -s "$TMP/$name.read.json" "$ref"; then
        ok
    else
        bad "$name: SCOPE_EXPORT_MAPPED_READS=0 and the default give different documents"
    fi

    # a process on more than one CPU reads its next blocks in a helper thread (json_doc.c):
    # the same bytes as the caller's thread alone
    if SCOPE_EXPORT_THREADS=1 "$X" export "$h5" -o "$TMP/$name.t1.json" -q --block-size "$bs" &&
        cmp -s "$TMP/$name.t1.json" "$ref"; then
        ok
    else
        bad "$name: SCOPE_EXPORT_THREADS=1 and the default give different documents"
    fi

    # --summary: the rows made of the statistics block by block (h5_summary.c) are those
    # of the run read in full; and the same bytes in the caller's thread alone and at 2
    # and 3 ranks
    local sum=$TMP/$name.sum.json
    if "$X" export "$h5" -o "$sum" -q --summary --block-size "$bs" &&
        "$BIN/tests/same_run" --summary "$sum" "$h5" 2>"$TMP/err"; then
        ok
    else
        bad "$name --summary: $(head -1 "$TMP/err")"
    fi
    if SCOPE_EXPORT_THREADS=1 "$X" export "$h5" -o "$TMP/$name.sum1.json" -q --summary \
        --block-size "$bs" && cmp -s "$TMP/$name.sum1.json" "$sum"; then
        ok
    else
        bad "$name --summary: SCOPE_EXPORT_THREADS=1 and the default give different documents"
    fi

    for np in 1 2 3; do
        sx_np_wanted "$np" || continue
        if [ "$np" -gt 1 ] && sx_sample 2; then
            out="$TMP/$name.$np.sum.json"
            if run_np "$np" "$X" export "$h5" -o "$out" -q --summary --block-size "$bs" &&
                cmp -s "$out" "$sum"; then
                ok
            else
                bad "$name --summary -n $np (blocks of $bs)"
            fi
        fi
        for ext in json json.gz; do
            sx_sample 2 || continue
            out="$TMP/$name.$np.$ext"
            if run_np "$np" "$X" export "$h5" -o "$out" -q --block-size "$bs" &&
                "$CMP" "$out" "$ref"; then
                ok
            else
                bad "$name -n $np $ext (blocks of $bs)"
            fi
        done
    done
    rm -f "$TMP/$name".*
}

# a shim that fixes the clock (the import's files compared byte for byte); not under the
# sanitizers, whose runtime must come first
FIXTIME=
if [ "$SX_SAN" = 0 ]; then
    FIXTIME=$TMP/fixtime.so
    gcc -shared -fPIC -O1 -o "$FIXTIME" "$(dirname "$0")/../support/sx_fixtime.c" \
        2>"$TMP/cc.err" || {
        echo "cannot build the time shim: $(head -1 "$TMP/cc.err")"
        FIXTIME=
    }
fi

# small blocks: rows of one block spread over the whole index, many blocks per rank
shape every-column 16384 --ranks 300 --regions 24 --events 30000 --empty-ranks --zero-rows \
    --columns all
# event columns over the mapping's budget: read-aheads drop its frames and fault them in again
shape mapped-sweeps 4194304 --ranks 2000 --regions 8 --events 600000 --skew 0.3 --zero-rows \
    --columns call,parent,meta
# the default block size: blocks cut by their number of rows
shape chunked-fixed 4194304 --ranks 1100 --regions 6 --events 20000 --zero-rows \
    --strings fixed --chunk 512 --deflate 2 --unicode
finish
