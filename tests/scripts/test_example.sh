#!/usr/bin/env bash
# test_example.sh - examples/finalize_export.c writes a schema-3 run in parallel and exports
# it; the document is valid and the same text as a one-process export of the same run.h5
. "$(dirname "$0")/lib.sh"

EX="$BIN/example_finalize_export"
if [ ! -x "$EX" ]; then
    echo "FAIL: $EX is not built" >&2
    exit 1
fi

for np in 2 3; do
    d="$TMP/np$np"
    if ! run_np "$np" "$EX" "$d" >"$TMP/out.$np" 2>"$TMP/err.$np"; then
        bad "example at -n $np failed: $(cat "$TMP/err.$np")"
        continue
    fi
    # one line, from rank 0 only
    [ "$(wc -l <"$TMP/out.$np")" -eq 1 ] && grep -q "run.json.gz" "$TMP/out.$np" && ok ||
        bad "-n $np: expected one line on stdout, got: $(cat "$TMP/out.$np")"
    [ -f "$d/run.h5" ] && [ -f "$d/run.json.gz" ] && ok || { bad "-n $np: no output"; continue; }
    "$X" validate "$d/run.json.gz" >"$TMP/v.$np" 2>&1 && ok ||
        bad "-n $np: validate: $(cat "$TMP/v.$np")"
    "$X" validate "$d/run.h5" >"$TMP/v.$np" 2>&1 && ok ||
        bad "-n $np: validate run.h5: $(cat "$TMP/v.$np")"
    gzip -dc "$d/run.json.gz" >"$d/par.json" || bad "-n $np: run.json.gz does not decompress"
    grep -q "\"num_ranks\": $np," "$d/par.json" && ok || bad "-n $np: num_ranks is not $np"
    grep -q "\"mpi_size\": $np}" "$d/par.json" && ok || bad "-n $np: mpi_size is not $np"

    # the same run exported by one process gives the same text
    if ! run_np 1 "$X" export "$d/run.h5" -o "$d/one.json" -q; then
        bad "-n $np: scope-export export at -n 1 failed"
        continue
    fi
    "$CMP" "$d/run.json.gz" "$d/one.json" && ok || bad "-n $np: golden_cmp differs"
    cmp "$d/par.json" "$d/one.json" && ok || bad "-n $np: text differs from the -n 1 export"
    # and so does a parallel CLI export of it
    run_np "$np" "$X" export "$d/run.h5" -o "$d/cli.json.gz" -q --block-size 1024 &&
        gzip -dc "$d/cli.json.gz" | cmp - "$d/one.json" && ok ||
        bad "-n $np: CLI export at -n $np differs"
done

# the rank count is in the file: -n 2 and -n 3 wrote different runs
if [ -f "$TMP/np2/one.json" ] && [ -f "$TMP/np3/one.json" ]; then
    ! cmp -s "$TMP/np2/one.json" "$TMP/np3/one.json" && ok || bad "-n 2 and -n 3 runs are equal"
fi

# without an argument it writes into a new directory under $TMPDIR
mkdir -p "$TMP/t"
if TMPDIR="$TMP/t" run_np 2 "$EX" >"$TMP/out.t" 2>"$TMP/err.t"; then
    n=$(find "$TMP/t" -name run.json.gz | wc -l)
    [ "$n" -eq 1 ] && ok || bad "default directory: found $n run.json.gz under \$TMPDIR"
else
    bad "example without arguments failed: $(cat "$TMP/err.t")"
fi
finish
