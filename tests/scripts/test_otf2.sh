#!/usr/bin/env bash
# test_otf2.sh - the OTF2 archive of every golden run with calls, at 1, 2 and 3 ranks, is
# read by otf2-print and OTF2's Python reader, and its Enter/Leave events are exactly the
# run's calls on the right location group and location; the archive holds the same
# events at any rank count; JSON profiles and native runs too; calls that do not nest
# fail with speedscope's error; a failed export leaves nothing and keeps an old archive
. "$(dirname "$0")/lib.sh"

[ -d "$SHARED/golden" ] || { echo "skip: no golden runs at $SHARED/golden"; exit 77; }
command -v otf2-print >/dev/null ||
    { echo "skip: no otf2-print (scripts/setup.sh installs otf2-tools)"; exit 77; }
PY=""
for p in /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
    [ -n "$p" ] && [ -x "$p" ] && "$p" -c 'import otf2' 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || { echo "skip: no OTF2 Python reader (scripts/setup.sh installs python3-otf2)"; exit 77; }
CHECK="$(cd "$(dirname "$0")/../otf2" && pwd)/check_otf2.py"

golden() { if [ -f "$1/$2" ]; then echo "$1/$2"; else echo "$1/$2.gz"; fi; }
bare() {
    env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u PMI_FD \
        timeout 120 "$X" "$@"
}
# mpiexec quiet about a failed rank: the command's own error alone on stderr
run_q() {
    local np=$1
    shift
    timeout 120 "$MPIEXEC" --quiet --oversubscribe -n "$np" "$@" </dev/null
}
# otf2-print of ARCHIVE (events, then with -G the definitions) into ARCHIVE.txt: fails
# on a reader's error, which OTF2 prints as "[OTF2] ..." on stderr.
print_archive() { # (and its warnings: definitions out of order)
    otf2-print "$1" >"$1.txt" 2>"$1.err" && otf2-print -G "$1" >>"$1.txt" 2>>"$1.err" &&
        ! grep -q . "$1.err" && grep -q '^ENTER' "$1.txt"
}
# The files of the archive OUT.otf2: its anchor, definitions and directory, nothing else.
archive_only() { # DIR NAME
    [ "$(cd "$1" && ls -A | grep -v '\.txt$\|\.err$' | tr '\n' ' ')" = "$2 $2.def $2.otf2 " ]
}

ncases=0
for dir in "$SHARED"/golden/*/; do
    dir=${dir%/}
    case=$(basename "$dir")
    grep -q '"start_times_ns"' "$dir/run.json" || continue # no calls: nothing to trace
    ncases=$((ncases + 1))
    chrome=$(golden "$dir" run.chrome.json)
    for np in 1 2 3; do
        sx_np_wanted "$np" || continue
        # (under the sanitizers -n 1, the reference of the others, and one of 2 and 3)
        [ "$np" = 1 ] || sx_sample 2 || continue
        o="$TMP/$case.$np"
        mkdir -p "$o"
        if [ "$np" = 1 ]; then
            bare export "$dir/run.h5" -o "$o/t.otf2" -q --format otf2
        else
            run_np "$np" "$X" export "$dir/run.h5" -o "$o/t.otf2" -q --format otf2
        fi || { bad "$case -n $np: export failed"; continue; }
        archive_only "$o" t && ok || bad "$case -n $np: the files are $(ls -A "$o")"
        print_archive "$o/t.otf2" && ok || bad "$case -n $np: otf2-print: $(head -3 "$o/t.otf2.err")"
        "$PY" "$CHECK" "$o/t.otf2" "$dir/run.json" "$chrome" && ok ||
            bad "$case -n $np: the archive's events are not the run's calls"
        if [ "$np" != 1 ] && [ -f "$TMP/$case.1/t.otf2.txt" ]; then
            cmp -s "$o/t.otf2.txt" "$TMP/$case.1/t.otf2.txt" && ok ||
                bad "$case: the archive from -n $np differs from -n 1's"
        fi
    done
done
[ "$ncases" -ge 8 ] && ok || bad "only $ncases golden cases with calls"

d="$SHARED/golden/mpi4_parallel"

# Sorted a few calls at a time (runs in files, merged): the same archive.
for case in threads asyncio_tasks mpi4_parallel; do
    [ -f "$TMP/$case.1/t.otf2.txt" ] || continue
    mkdir -p "$TMP/$case.sort"
    SCOPE_EXPORT_OTF2_SORT_CALLS=7 run_np 2 "$X" export "$SHARED/golden/$case/run.h5" \
        -o "$TMP/$case.sort/t.otf2" -q --format otf2 && archive_only "$TMP/$case.sort" t &&
        print_archive "$TMP/$case.sort/t.otf2" &&
        cmp -s "$TMP/$case.sort/t.otf2.txt" "$TMP/$case.1/t.otf2.txt" && ok ||
        bad "$case: sorted 7 calls at a time, the archive differs"
done

# A location of 600000 events: OTF2's chunks flushed several times (no BufferFlush
# events), its 300000 calls sorted in two runs and merged.
g="$TMP/big"
mkdir -p "$g"
if "$BIN/scope-export-synth" --ranks 1 --regions 5 --events 300000 --nest "$g/run.h5" &&
    bare export "$g/run.h5" -o "$g/run.json" -q &&
    bare export "$g/run.h5" -o "$g/run.chrome.json" -q --format chrome-trace &&
    run_np 2 "$X" export "$g/run.h5" -o "$g/t.otf2" -q --format otf2 &&
    [ "$(stat -c %s "$g/t/0.evt")" -gt 4000000 ]; then
    "$PY" "$CHECK" "$g/t.otf2" "$g/run.json" "$g/run.chrome.json" && ok ||
        bad "a large location's events"
else
    bad "a run of 300000 calls on one rank"
fi

# A JSON profile gives the same archive; --ranks and --include filter it; an output
# without .otf2 gets it.
d="$SHARED/golden/mpi4_parallel"
mkdir -p "$TMP/j"
cp "$d/run.json" "$TMP/j/run.json"
bare export "$TMP/j/run.json" -o "$TMP/j/t" -q --format otf2 && print_archive "$TMP/j/t.otf2" &&
    cmp -s <(grep -v 'INPUT\|^Property value' "$TMP/j/t.otf2.txt") \
        <(grep -v 'INPUT\|^Property value' "$TMP/mpi4_parallel.1/t.otf2.txt") && ok ||
    bad "otf2 from run.json differs from the HDF5 run's"
mkdir -p "$TMP/r"
run_np 2 "$X" export "$d/run.h5" -o "$TMP/r/t.otf2" -q --format otf2 --ranks 2,0,2 \
    --include 'compute|rank' && print_archive "$TMP/r/t.otf2" &&
    "$PY" "$CHECK" "$TMP/r/t.otf2" "$d/run.json" "$(golden "$d" run.chrome.json)" \
        --ranks 2,0 --include 'compute|rank' && ok || bad "otf2 --ranks 2,0,2 --include"

# The Python module (comm=None and mpi4py at -n 2) and the Fortran example (use mpi_f08,
# -n 2) write the command's archive.
ref="$TMP/mpi4_parallel.1/t.otf2.txt"
PYM=$(sx_python)
if [ -n "$PYM" ] && [ -f "$BIN/libscope_export.so" ] && "$PYM" -c 'import otf2' 2>/dev/null; then
    mkdir -p "$TMP/py"
    cat >"$TMP/py/app.py" <<'PYEOF'
import sys
import scope_export as sx
if sys.argv[3] == "none":
    sx.export(None, sys.argv[1], sys.argv[2], format="otf2")
else:
    from mpi4py import MPI
    sx.export(MPI.COMM_WORLD, sys.argv[1], sys.argv[2], format="otf2")
PYEOF
    export PYTHONDONTWRITEBYTECODE=1
    for how in none mpi; do
        np=$([ "$how" = none ] && echo 1 || echo 2)
        mkdir -p "$TMP/py/$how"
        PYTHONPATH="$(cd "$(dirname "$0")/../../src/python" && pwd)" \
            SCOPE_EXPORT_LIBRARY="$BIN/libscope_export.so" \
            run_np "$np" "${SX_SAN_ENV[@]}" "$PYM" "$TMP/py/app.py" "$d/run.h5" \
            "$TMP/py/$how/t.otf2" "$how" && print_archive "$TMP/py/$how/t.otf2" &&
            cmp -s <(grep -v 'INPUT' "$TMP/py/$how/t.otf2.txt") <(grep -v 'INPUT' "$ref") &&
            ok || bad "python format=\"otf2\" ($how)"
    done
else
    echo "note: no python3 with mpi4py and the OTF2 reader: the Python module's archive untested"
fi
if [ -x "$BIN/example_fortran_export" ]; then
    mkdir -p "$TMP/f90"
    run_np 2 "$BIN/example_fortran_export" "$d/run.h5" "$TMP/f90/t.otf2" format=otf2 \
        >/dev/null && print_archive "$TMP/f90/t.otf2" &&
        cmp -s <(grep -v 'INPUT' "$TMP/f90/t.otf2.txt") <(grep -v 'INPUT' "$ref") && ok ||
        bad "fortran format=otf2"
else
    echo "note: no Fortran example built: the Fortran module's archive untested"
fi

# A native run: its files read in place.
for n in h5_2ranks_basic spt_4ranks; do
    nd="$SHARED/golden-native/$n"
    [ -d "$nd" ] || { bad "no native run $n"; continue; }
    mkdir -p "$TMP/nat.$n"
    (cd "$nd" && run_np 3 "$X" export --native ranks -o "$TMP/nat.$n/t.otf2" -q \
        --format otf2 --label merged) && print_archive "$TMP/nat.$n/t.otf2" &&
        "$PY" "$CHECK" "$TMP/nat.$n/t.otf2" "$nd/run.json" "$nd/run.chrome.json" && ok ||
        bad "native run $n"
done

# Perf counter totals: a metric per perf region on the rank's first location, as the
# Chrome trace's counters (scope-export-synth --perf: rank i has, for its regions j = 0,
# 1, cycles 1000000 (i+1) + j, instructions 2000000 (i+1) + j, calls 10 i + j + 1).
g="$TMP/perf"
mkdir -p "$g"
if "$BIN/scope-export-synth" --ranks 3 --regions 3 --events 300 --nest --perf "$g/run.h5" &&
    bare export "$g/run.h5" -o "$g/run.json" -q &&
    bare export "$g/run.h5" -o "$g/run.chrome.json" -q --format chrome-trace --ranks 0,1,2 &&
    run_np 2 "$X" export "$g/run.h5" -o "$g/t.otf2" -q --format otf2 &&
    print_archive "$g/t.otf2" &&
    "$PY" "$CHECK" "$g/t.otf2" "$g/run.json" "$g/run.chrome.json" --counters "$g/c.json"; then
    ok
    "$PY" - "$g/run.chrome.json" "$g/c.json" <<'PYEOF' && ok || bad "perf counters"
import json, sys
chrome = json.load(open(sys.argv[1]))
got = json.load(open(sys.argv[2]))
want = []
for e in chrome["traceEvents"]:
    if e.get("ph") == "C":
        for k, v in e["args"].items():
            want.append(["rank %d" % e["pid"], e["name"] + ": " + k, v])
assert len(want) >= 12, want
assert sorted(got) == sorted(want), (got, want)
PYEOF
else
    bad "a run with perf counters"
fi

# Calls that do not nest: speedscope's error, one line, status 1, and no archive; an
# existing archive is kept as it was.
o="$TMP/nest"
mkdir -p "$o"
"$BIN/scope-export-synth" --ranks 2 --regions 3 --events 200 --columns all --lanes \
    "$o/run.h5" || bad "scope-export-synth"
bare export "$o/run.h5" -o "$o/s.speedscope.json" -q --format speedscope 2>"$o/ss.err"
run_q 2 "$X" export "$o/run.h5" -o "$o/out/t.otf2" -q --format otf2 2>"$o/err"
rc=$?
want=$(sed 's/^scope-export: error: //' "$o/ss.err")
[ "$rc" = 1 ] && [ "$(wc -l <"$o/err")" = 1 ] && grep -q 'not properly nested' "$o/err" &&
    grep -qF "$want" "$o/err" && ok || bad "nesting error (rc $rc): $(cat "$o/err")"
[ ! -e "$o/out" ] || [ -z "$(ls -A "$o/out")" ] && ok || bad "a failed export left $(ls -A "$o/out")"
# an existing archive (of another run) is kept, and nothing is left beside it
cp -r "$TMP/mpi4_parallel.1" "$o/keep"
rm -f "$o/keep"/*.txt "$o/keep"/*.err
(cd "$o/keep" && find . -type f | sort | xargs md5sum) >"$o/keep.md5"
run_q 3 "$X" export "$o/run.h5" -o "$o/keep/t.otf2" -q --format otf2 2>/dev/null &&
    bad "the nesting error did not fail"
archive_only "$o/keep" t && (cd "$o/keep" && find . -type f | sort | xargs md5sum |
    cmp -s - "$o/keep.md5") && ok || bad "a failed export changed the existing archive"
# a complete one replaces it: the old locations' files go
run_np 2 "$X" export "$d/run.h5" -o "$o/keep/t.otf2" -q --format otf2 --ranks 1 &&
    archive_only "$o/keep" t && [ "$(ls "$o/keep/t" | tr '\n' ' ')" = "4294967296.def 4294967296.evt " ] &&
    print_archive "$o/keep/t.otf2" && "$PY" "$CHECK" "$o/keep/t.otf2" "$d/run.json" \
        "$(golden "$d" run.chrome.json)" --ranks 1 && ok || bad "replacing an archive"
# OUT/ of the user's that is no archive's directory is refused and left as it was
mkdir -p "$o/mine/t"
echo data >"$o/mine/t/notes.txt"
run_q 2 "$X" export "$d/run.h5" -o "$o/mine/t.otf2" -q --format otf2 2>"$o/err" &&
    bad "an export over a directory of the user's"
grep -q 'is not an OTF2 archive' "$o/err" && [ "$(ls -A "$o/mine" | tr '\n' ' ')" = "t " ] &&
    [ "$(cat "$o/mine/t/notes.txt")" = data ] && ok || bad "the user's directory: $(cat "$o/err")"
# an unwritable directory: a clear error, nothing left
mkdir -p "$o/ro"
chmod 555 "$o/ro"
if [ "$(id -u)" != 0 ]; then
    run_q 2 "$X" export "$d/run.h5" -o "$o/ro/t.otf2" -q --format otf2 2>"$o/err" &&
        bad "an export into a read-only directory"
    [ -z "$(ls -A "$o/ro")" ] && ok || bad "read-only directory: $(ls -A "$o/ro")"
fi
# A full disk (a small tmpfs, where we may mount one): one error line naming the archive,
# status 1, nothing left beside the existing archive, which stays as it was.
m="$TMP/full"
mkdir -p "$m"
if [ -f "$TMP/big/run.h5" ] && mount -t tmpfs -o size=1m tmpfs "$m" 2>/dev/null; then
    trap 'umount "$m" 2>/dev/null; rm -rf "$TMP"' EXIT
    mkdir -p "$m/keep"
    cp -r "$TMP/mpi4_parallel.1/t" "$TMP/mpi4_parallel.1/t.def" "$TMP/mpi4_parallel.1/t.otf2" \
        "$m/keep/"
    (cd "$m/keep" && find . -type f | sort | xargs md5sum) >"$TMP/full.md5"
    # 300000 calls on a rank fill it with their sort; 80000 calls in two ranks (sorted in
    # memory) with their events, which OTF2 fails to write
    "$BIN/scope-export-synth" --ranks 2 --regions 5 --events 80000 --nest "$TMP/mid.h5" ||
        bad "scope-export-synth"
    for run in "$TMP/big/run.h5:sorting the calls" "$TMP/mid.h5:writing the OTF2 archive"; do
        run_q 2 "$X" export "${run%%:*}" -o "$m/keep/t.otf2" -q --format otf2 2>"$o/err"
        rc=$?
        [ "$rc" = 1 ] && [ "$(wc -l <"$o/err")" = 1 ] && grep -q "$m/keep/t.otf2" "$o/err" &&
            grep -q "${run#*:}.*No space left" "$o/err" && ok ||
            bad "a full disk (rc $rc): $(cat "$o/err")"
        [ "$(ls -A "$m/keep" | tr '\n' ' ')" = "t t.def t.otf2 " ] &&
            (cd "$m/keep" && find . -type f | sort | xargs md5sum | cmp -s - "$TMP/full.md5") &&
            ok || bad "a full disk changed the existing archive: $(ls -A "$m/keep")"
    done
    umount "$m"
else
    echo "note: no tmpfs mounted here: the full-disk case untested"
fi

# --summary has no events
bare export "$d/run.h5" -o "$o/s.otf2" -q --format otf2 --summary 2>"$o/err" &&
    bad "--summary export"
grep -q 'summary has no per-call events, which the OTF2 archive needs' "$o/err" && ok ||
    bad "--summary: $(cat "$o/err")"
finish
