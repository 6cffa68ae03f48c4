#!/usr/bin/env bash
# test_golden.sh - every golden run and compat fixture exports to scope-profiler's text,
# at 1, 2, 3 and 4 ranks, as .json and .json.gz, in one block and in many small ones
. "$(dirname "$0")/lib.sh"

[ -d "$SHARED/golden" ] || { echo "skip: no golden runs at $SHARED/golden"; exit 77; }
for dir in "$SHARED"/golden/*/; do
    case=$(basename "$dir")
    # every rank count with both block sizes and both suffixes, and every block size with
    # both suffixes (all pairs of the three, in 8 runs rather than 16)
    for combo in 1:4194304:json 1:2048:json.gz 2:4194304:json.gz 2:2048:json \
        3:4194304:json 3:2048:json.gz 4:2048:json 4:4194304:json.gz; do
        IFS=: read -r np bs ext <<<"$combo"
        sx_np_wanted "$np" || continue
        sx_sample 3 || continue
        out="$TMP/$case.$np.$bs.$ext"
        if ! run_np "$np" "$X" export "$dir/run.h5" -o "$out" -q --block-size "$bs"; then
            bad "$case: export failed at -n $np ($ext, blocks of $bs)"
            continue
        fi
        if "$CMP" "$out" "$dir/run.json"; then ok; else bad "$case -n $np $ext $bs"; fi
    done
    if [ -f "$dir/run.indent2.json" ]; then
        for np in 1 3; do
            sx_np_wanted "$np" || continue
            run_np "$np" "$X" export "$dir/run.h5" -o "$TMP/$case.i2.json" -q --indent 2 \
                --block-size 2048 &&
                "$CMP" "$TMP/$case.i2.json" "$dir/run.indent2.json" && ok ||
                bad "$case --indent 2 -n $np"
        done
    fi
    if [ -f "$dir/run.summary.json" ]; then
        for np in 1 2; do
            sx_np_wanted "$np" || continue
            run_np "$np" "$X" export "$dir/run.h5" -o "$TMP/$case.s.json.gz" -q --summary &&
                "$CMP" "$TMP/$case.s.json.gz" "$dir/run.summary.json" && ok ||
                bad "$case --summary -n $np"
        done
    fi
done

# Run bare (no mpiexec), the command works on one process without starting MPI, to the
# same text; under a launcher it uses MPI. --stats says which.
for case in basic_nested mpi4_parallel gen_likwid_lineprof aggregation; do
    d="$SHARED/golden/$case"
    for ext in json json.gz; do
        if env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u PMI_FD \
            timeout 120 "$X" export "$d/run.h5" -o "$TMP/bare.$ext" -q --stats \
            2>"$TMP/bare.err" && "$CMP" "$TMP/bare.$ext" "$d/run.json"; then
            grep -q 'stats: .*(.*, 1 process, no MPI)$' "$TMP/bare.err" && ok ||
                bad "$case bare: --stats does not say it ran without MPI: $(cat "$TMP/bare.err")"
        else
            bad "$case bare $ext"
        fi
    done
done
d="$SHARED/golden/basic_nested"
run_np 2 "$X" export "$d/run.h5" -o "$TMP/np2.json" -q --stats 2>"$TMP/np2.err" &&
    grep -q 'stats: .*(.*, 2 ranks)$' "$TMP/np2.err" && ok || bad "-n 2 --stats: $(cat "$TMP/np2.err")"
SCOPE_EXPORT_MPI=1 timeout 120 "$X" export "$d/run.h5" -o "$TMP/single.json" -q --stats \
    2>"$TMP/single.err" && "$CMP" "$TMP/single.json" "$d/run.json" &&
    grep -q 'stats: .*(.*, 1 rank)$' "$TMP/single.err" && ok ||
    bad "SCOPE_EXPORT_MPI=1 (singleton MPI): $(cat "$TMP/single.err")"

# Our .gz output is deterministic: the same bytes run after run, and for any rank count
# (the blocks, and so the deflate segments, depend on the file and options alone): a
# checksum of the output does not change with how it was made.
d="$SHARED/golden/gen_schema3_allcols"
for np in 1 3; do
    run_np "$np" "$X" export "$d/run.h5" -o "$TMP/a$np.json.gz" -q --block-size 8192 &&
        run_np "$np" "$X" export "$d/run.h5" -o "$TMP/b.json.gz" -q --block-size 8192 &&
        cmp -s "$TMP/a$np.json.gz" "$TMP/b.json.gz" && ok || bad "gzip output not deterministic -n $np"
done
timeout 120 "$X" export "$d/run.h5" -o "$TMP/bare.json.gz" -q --block-size 8192 || bad "bare .gz"
for f in a3 bare; do
    cmp -s "$TMP/a1.json.gz" "$TMP/$f.json.gz" && ok || bad "gzip bytes of $f differ from -n 1"
done

# The three compat fixtures give the document worked out in the spec (section 3.7).
expected='{"format": "scope-profiler-profile", "format_version": 1, "exporter": "scope-export@X", "time_unit": "nanoseconds", "num_ranks": 1, "event_data_available": true, "metadata": {"mpi_size": 1}, "regions": [{"name": "solve", "rank": 0, "source_file": "solver.py", "source_lineno": 7, "tags": ["golden"], "start_times_ns": [10, 20, 40], "end_times_ns": [15, 33, 55]}]}'
printf '%s' "$expected" >"$TMP/compat.expected.json"
for f in "$SHARED"/fixtures/compat/hdf5-schema-*.h5; do
    for np in 1 2; do
        sx_np_wanted "$np" || continue
        run_np "$np" "$X" export "$f" -o "$TMP/compat.json" -q &&
            "$CMP" "$TMP/compat.json" "$TMP/compat.expected.json" && ok ||
            bad "compat $(basename "$f") -n $np"
    done
done
finish
