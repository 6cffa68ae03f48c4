#!/usr/bin/env bash
# test_native.sh - native runs (per-process .spt and .h5 files) export to scope-profiler's
# run.json at 1, 2, 3 ranks and with more ranks than files, bare and as .gz, and to its
# run.chrome.json; import-native
# then export gives the same text; every crafted error case fails with the reference's
# message, one line, status 1 on every rank and no output
. "$(dirname "$0")/lib.sh"

G="$SHARED/golden-native"
[ -d "$G" ] || { echo "skip: no golden native runs at $G"; exit 77; }

# Every rank's exit status: a wrapper writes it to $RCDIR/rank<R>; mpi_rc NP CMD... returns
# their common status (99 when they differ or one is missing). NP 0 runs bare (no MPI).
RCDIR="$TMP/rc"
mkdir -p "$RCDIR"
printf '%s\n' '#!/bin/sh' '"$@"' 'rc=$?' 'echo "$rc" >"$SX_RC_DIR/rank$OMPI_COMM_WORLD_RANK"' \
    'exit "$rc"' >"$TMP/rankrc.sh"
mpi_rc() {
    local np=$1 r first=""
    shift
    if [ "$np" = 0 ]; then
        env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u PMI_FD \
            timeout 120 "$@" </dev/null
        return
    fi
    rm -f "$RCDIR"/rank*
    SX_RC_DIR="$RCDIR" OMPI_MCA_orte_abort_on_non_zero_status=0 \
        timeout --foreground 120 "$MPIEXEC" --quiet --oversubscribe -n "$np" \
        sh "$TMP/rankrc.sh" "$@" </dev/null
    for ((r = 0; r < np; r++)); do
        [ -f "$RCDIR/rank$r" ] || return 99
        [ -z "$first" ] && first=$(cat "$RCDIR/rank$r")
        [ "$(cat "$RCDIR/rank$r")" = "$first" ] || return 99
    done
    return "$first"
}

cases=()
for d in "$G"/*/ "$G"/crafted/*/; do
    [ -f "$d/run.json" ] && cases+=("${d%/}")
done
[ "${#cases[@]}" -ge 8 ] && ok || bad "only ${#cases[@]} golden native cases found"

for d in "${cases[@]}"; do
    c=${d#"$G"/}
    nfiles=$(find "$d/ranks" -maxdepth 1 -type f | wc -l)
    # from the case directory, so that paths print as the reference printed them
    # each rank count with one suffix, both at -n 2 (.gz in small blocks)
    for combo in 0:json 1:json.gz 2:json 2:json.gz 3:json.gz $((nfiles + 1)):json; do
        IFS=: read -r np ext <<<"$combo"
        [ "$np" -gt 4 ] && continue # the 13-rank case: 14 ranks on two cores is slow
        sx_sample 2 || continue
        bs=$([ "$ext" = json ] && echo 4194304 || echo 2048)
        out="$TMP/n.$np.$ext"
        rm -f "$out"
        if (cd "$d" && mpi_rc "$np" "$X" export --native ranks -o "$out" --label merged \
            -q --block-size "$bs"); then
            "$CMP" "$out" "$d/run.json" && ok || bad "$c -n $np $ext"
        else
            bad "$c: export --native failed at -n $np ($ext)"
        fi
    done
    # the Chrome trace of every rank (a run without ranks has no list to name them: an
    # empty --ranks is a usage error, so that a lost variable selects nothing silently)
    n=$(grep -o '"num_ranks": [0-9]*' "$d/run.json" | grep -o '[0-9]*$')
    ref=$d/run.chrome.json
    [ -f "$ref" ] || ref=$d/run.chrome.json.gz
    sel="0-$((n - 1))"
    [ "$n" -gt 0 ] || echo "skip: $c: chrome trace of every rank: the run has no rank"
    # bare, 1 to 3 ranks, and more ranks than files; the suffixes alternate
    for combo in 0:json 1:json.gz 2:json 3:json.gz 5:json; do
        [ "$n" -gt 0 ] || break
        IFS=: read -r np ext <<<"$combo"
        sx_sample 2 || continue
        rm -f "$TMP/c.$ext"
        (cd "$d" && mpi_rc "$np" "$X" export --native ranks -o "$TMP/c.$ext" --label merged \
            --format chrome-trace --ranks "$sel" -q) && "$CMP" "$TMP/c.$ext" "$ref" && ok ||
            bad "$c: chrome trace -n $np $ext"
    done
    # import-native, then the ordinary export of the merged file
    for np in 0 2; do
        rm -f "$TMP/merged.h5"
        if (cd "$d" && mpi_rc "$np" "$X" import-native ranks -o "$TMP/merged.h5" >/dev/null); then
            "$X" export "$TMP/merged.h5" -o "$TMP/i.json" -q &&
                "$CMP" "$TMP/i.json" "$d/run.json" && ok || bad "$c: import-native -n $np"
        else
            bad "$c: import-native failed at -n $np"
        fi
    done
done

# Options apply as to the reference's merged file; the label defaults to the output's stem.
d="$G/h5_2ranks_basic"
for opts in "--indent 2" "--ranks 1" "--include ma --include so" "--exclude f"; do
    # shellcheck disable=SC2086
    "$X" export "$d/merged.h5" -o "$TMP/ref.json" -q $opts || bad "reference export $opts"
    for np in 0 2; do
        # shellcheck disable=SC2086
        (cd "$d" && mpi_rc "$np" "$X" export --native ranks -o "$TMP/merged.json" -q $opts \
            --block-size 1024) && cmp -s "$TMP/merged.json" "$TMP/ref.json" && ok ||
            bad "native $opts -n $np differs from the export of merged.h5"
    done
done
(cd "$d" && "$X" export --native ranks/run_rank00001.h5 ./ranks/ ranks/run_rank00000.h5 \
    -o "$TMP/merged.json.gz" --label merged -q) && "$CMP" "$TMP/merged.json.gz" "$d/run.json" && ok ||
    bad "files named twice and beside their directory are read once"
# the default label is the output's name without its document suffix
for out_label in x.y.json:x.y profile.json.gz:profile t.trace.json:t s.speedscope.json.gz:s \
    p.gz:p p:p; do
    out=${out_label%%:*} want=${out_label#*:}
    (cd "$d" && "$X" export --native ranks -o "$TMP/$out" -q) &&
        zcat -f "$TMP/$out" | grep -q "\"label\": \"$want\"" && ok ||
        bad "-o $out: the default label is not '$want'"
done
(cd "$d" && "$X" import-native ranks -o "$TMP/lab.h5" --label L >/dev/null) &&
    "$X" export "$TMP/lab.h5" -o "$TMP/lab.json" -q && grep -q '"label": "L"' "$TMP/lab.json" &&
    ok || bad "import-native --label"

# Error cases: the reference's message, one line, status 1 on every rank, no output, an
# existing output untouched.
for d in "$G"/crafted/*/; do
    [ -f "$d/error.txt" ] || continue
    c=$(basename "$d")
    msg=$(sed 's/^[A-Za-z]*Error: //' "$d/error.txt")
    for np in 0 1 2 3; do
        for cmd in "export --native" import-native; do
            sx_sample 3 || continue
            out="$TMP/err.out"
            echo keep >"$out"
            # shellcheck disable=SC2086
            (cd "$d" && mpi_rc "$np" "$X" $cmd ranks -o "$out" 2>"$TMP/err.txt" >/dev/null)
            rc=$?
            [ "$rc" = 1 ] && ok || bad "$c ($cmd) -n $np: status $rc, not 1 on every rank"
            n=$(grep -c . "$TMP/err.txt")
            [ "$n" = 1 ] && grep -qF "scope-export: error: $msg" "$TMP/err.txt" && ok ||
                bad "$c ($cmd) -n $np: expected one line with '$msg', got: $(cat "$TMP/err.txt")"
            [ "$(cat "$out")" = keep ] && ok || bad "$c ($cmd) -n $np: the existing output changed"
            [ -z "$(find "$TMP" -maxdepth 1 -name 'err.out?*')" ] && ok ||
                bad "$c ($cmd) -n $np: a temporary file was left"
        done
    done
done
# Only the rank that reads the damaged file fails (at -n 2 and 3 the second file is rank
# 1's): every rank still exits 1, and the one line names the file and that rank.
mkdir -p "$TMP/dmg"
cp "$G/h5_2ranks_basic/ranks"/*.h5 "$TMP/dmg/"
chmod u+w "$TMP/dmg"/*.h5
head -c 3000 "$G/h5_2ranks_basic/ranks/run_rank00001.h5" >"$TMP/dmg/run_rank00001.h5"
for np in 2 3; do
    (cd "$TMP" && mpi_rc "$np" "$X" export --native dmg -o "$TMP/dmg.json" 2>"$TMP/err.txt")
    rc=$?
    [ "$rc" = 1 ] && [ "$(grep -c '^scope-export: error:' "$TMP/err.txt")" = 1 ] &&
        grep -q 'dmg/run_rank00001.h5.*\[rank 1' "$TMP/err.txt" && [ ! -e "$TMP/dmg.json" ] &&
        ok || bad "a damaged file of rank 1 at -n $np: status $rc: $(cat "$TMP/err.txt")"
done

# The other trace format through the same path: speedscope of the native run is that of
# the reference's merged file; so are both trace formats with the default rank selection.
d="$G/mixed_3ranks"
for fmt in speedscope chrome-trace; do
    "$X" export "$d/merged.h5" -o "$TMP/ref.$fmt.json" --format "$fmt" -q ||
        bad "export merged.h5 --format $fmt"
    for np in 0 2; do
        (cd "$d" && mpi_rc "$np" "$X" export --native ranks -o "$TMP/merged.json" --format "$fmt" \
            -q) && cmp -s "$TMP/merged.json" "$TMP/ref.$fmt.json" && ok ||
            bad "native --format $fmt -n $np differs from the export of merged.h5"
    done
done

(cd "$TMP" && "$X" export --native missing -o "$TMP/m.json" 2>"$TMP/err.txt")
[ $? = 1 ] && grep -qF "no such file or directory: missing" "$TMP/err.txt" && ok ||
    bad "a missing input: $(cat "$TMP/err.txt")"
finish
