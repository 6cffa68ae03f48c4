#!/usr/bin/env bash
# test_roundtrip.sh - export(import(export(h5))) == export(h5), and the files import writes
# are read by HDF5's own tools with scope-profiler's schema-3 layout
. "$(dirname "$0")/lib.sh"
SYNTH="$BIN/scope-export-synth"

roundtrip() { # name h5 [export options]
    local name=$1 h5=$2
    shift 2
    "$X" export "$h5" -o "$TMP/$name.a.json.gz" -q "$@" || { bad "$name: export"; return; }
    "$X" import "$TMP/$name.a.json.gz" -o "$TMP/$name.b.h5" >/dev/null || {
        bad "$name: import"
        return
    }
    "$X" validate "$TMP/$name.b.h5" >/dev/null || bad "$name: validate of the imported run"
    run_np 2 "$X" export "$TMP/$name.b.h5" -o "$TMP/$name.c.json" -q "$@" || {
        bad "$name: export of the imported run"
        return
    }
    if "$CMP" "$TMP/$name.c.json" "$TMP/$name.a.json.gz"; then ok; else bad "$name: round trip differs"; fi
}

for dir in "$SHARED"/golden/*/; do
    case=$(basename "$dir")
    # Schema 1 keeps columns per row and GPU columns of only -1; schema 3 cannot say either,
    # so that run is compared as a run (unit test) rather than as text here.
    [ "$case" = gen_schema1 ] && continue
    roundtrip "$case" "$dir/run.h5"
    [ -f "$dir/run.indent2.json" ] && roundtrip "$case.i2" "$dir/run.h5" --indent 2
done
for f in "$SHARED"/fixtures/compat/hdf5-schema-*.h5; do
    roundtrip "compat-$(basename "$f" .h5)" "$f"
done
# generated runs with every optional part, both string kinds, aggregate layout
"$SYNTH" --ranks 4 --regions 6 --events 20000 --columns all --lanes --likwid --lineprof \
    --unicode --seed 11 "$TMP/all.h5" && roundtrip synth-all "$TMP/all.h5"
"$SYNTH" --ranks 3 --regions 5 --events 5000 --columns all --strings fixed --empty-ranks \
    --seed 12 "$TMP/fixed.h5" && roundtrip synth-fixed "$TMP/fixed.h5"
"$SYNTH" --ranks 5 --regions 4 --aggregate --seed 13 "$TMP/agg.h5" && roundtrip synth-agg "$TMP/agg.h5"
"$SYNTH" --ranks 2 --regions 3 --events 3000 --skew 0.9 --chunk 512 --deflate 4 --seed 14 \
    "$TMP/chunk.h5" && roundtrip synth-chunked "$TMP/chunk.h5"

# A bad document: import fails with one line, leaves no output and keeps an existing one.
head -c 3000 "$SHARED/golden/basic_nested/run.json.gz" >"$TMP/trunc.json.gz"
printf '{"format": "scope-profiler-profile", "regions": [{"rank": 0}]}' >"$TMP/noname.json"
printf '{"format": "other"}' >"$TMP/other.json"
for doc in trunc.json.gz noname.json other.json; do
    rm -f "$TMP/bad.h5"
    if "$X" import "$TMP/$doc" -o "$TMP/bad.h5" 2>"$TMP/err"; then
        bad "import of $doc succeeded"
    else
        [ ! -e "$TMP/bad.h5" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "$doc" "$TMP/err" &&
            ok || bad "import of $doc: output left or unclear error: $(cat "$TMP/err")"
    fi
    echo keep >"$TMP/keep.h5"
    "$X" import "$TMP/$doc" -o "$TMP/keep.h5" 2>/dev/null
    [ "$(cat "$TMP/keep.h5")" = keep ] && ok || bad "import of $doc destroyed an existing file"
    [ -z "$(ls -A "$TMP" | grep '^\.')" ] && ok || bad "import of $doc left a temporary file"
    "$X" validate "$TMP/$doc" >/dev/null && bad "validate accepted $doc" || ok
done

# HDF5's own tools read what import writes, with the spec's layout.
if command -v h5dump >/dev/null; then
    "$X" import "$SHARED/golden/gen_schema3_allcols/run.json.gz" -o "$TMP/imp.h5" >/dev/null
    hdr=$(h5dump -H "$TMP/imp.h5") || bad "h5dump cannot read the imported file"
    for obj in 'ATTRIBUTE "scope_profiler_schema"' 'ATTRIBUTE "storage_layout"' \
        'DATASET "names"' 'DATASET "region_ids"' 'DATASET "event_offsets"' \
        'DATASET "event_counts"' 'DATASET "start_deltas"' 'DATASET "durations"' \
        'DATASET "event_metadata"' 'DATASET "summary_statistics"' 'GROUP "thread_table"' \
        'GROUP "task_table"' 'DATASET "await_ns"'; do
        if grep -q "$obj" <<<"$hdr"; then ok; else bad "imported file lacks $obj"; fi
    done
    v=$(h5dump -a /scope_profiler_schema "$TMP/imp.h5" | grep -A1 DATA | tail -1 | tr -d ' ')
    [ "$v" = "(0):3" ] && ok || bad "scope_profiler_schema is '$v', not 3"
    h5dump -d /events/start_deltas -s 0 -c 2 "$TMP/imp.h5" >/dev/null && ok || bad "h5dump start_deltas"
else
    echo "note: h5dump missing, layout checks skipped"
fi
finish
