#!/usr/bin/env bash
# test_viewer_warning.sh - a Chrome trace or speedscope document larger than the viewers
# open gets one line on stderr with its JSON size and the format they open (perfetto), its
# .gz too (the size of the JSON inside), not under -q, and not below the limit; the limit is
# SCOPE_EXPORT_VIEWER_LIMIT bytes where set (the default, 500 MB, is too large to test)
. "$(dirname "$0")/lib.sh"

[ -d "$SHARED/golden" ] || { echo "skip: no golden runs at $SHARED/golden"; exit 77; }
run="$SHARED/golden/basic_nested/run.h5"

# EXPORT OUT FORMAT LIMIT [ARGS...]: the export's stderr in $TMP/err
export_with() {
    local out=$1 fmt=$2 limit=$3
    shift 3
    SCOPE_EXPORT_VIEWER_LIMIT=$limit "$X" export "$run" -o "$TMP/$out" --format "$fmt" "$@" \
        >/dev/null 2>"$TMP/err"
}
for fmt in chrome-trace speedscope; do
    for out in doc.json doc.json.gz; do
        export_with "$out" "$fmt" 1000 || { bad "$fmt $out failed"; continue; }
        if [ "${out%.gz}" = "$out" ]; then
            want=$(stat -c %s "$TMP/$out")
        else
            want=$(gzip -dc "$TMP/$out" | wc -c)
        fi
        [ "$(wc -l <"$TMP/err")" = 1 ] &&
            grep -q "warning: $TMP/$out is $want bytes (.* MB) of JSON, more than trace viewers open .*--format perfetto" "$TMP/err" &&
            ok || bad "$fmt $out over the limit: stderr is '$(cat "$TMP/err")', want one line of $want bytes"
        # at or under the limit: nothing
        export_with "$out" "$fmt" "$want" && [ ! -s "$TMP/err" ] && ok ||
            bad "$fmt $out at the limit warned: $(cat "$TMP/err")"
        # -q: nothing
        export_with "$out" "$fmt" 1000 -q && [ ! -s "$TMP/err" ] && ok ||
            bad "$fmt $out -q warned: $(cat "$TMP/err")"
    done
done
# the default limit: a small trace says nothing; other formats never do
export_with t.json chrome-trace "" && [ ! -s "$TMP/err" ] && ok || bad "default limit warned"
export_with p.pftrace perfetto 1000 && [ ! -s "$TMP/err" ] && ok || bad "perfetto warned"
export_with j.json json 1000 && [ ! -s "$TMP/err" ] && ok || bad "json profile warned"
# under MPI, once (rank 0)
SCOPE_EXPORT_VIEWER_LIMIT=1000 run_np 2 "$X" export "$run" -o "$TMP/m.json" \
    --format chrome-trace >/dev/null 2>"$TMP/err" &&
    [ "$(grep -c warning "$TMP/err")" = 1 ] && ok || bad "-n 2: $(cat "$TMP/err")"
finish
