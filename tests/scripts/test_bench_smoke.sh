#!/usr/bin/env bash
# test_bench_smoke.sh - scripts/bench.sh runs end to end on tiny runs (10k, 100k events):
# it exits 0, prints its table for every run and case, checks its targets, and every output
# verifies. Timings are not judged here.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
bench=$top/scripts/bench.sh

if ! command -v pigz >/dev/null 2>&1; then
    echo "SKIP: pigz not found (scripts/setup.sh installs it); the benchmark's yardstick" >&2
    exit 77
fi
if [ ! -x /usr/bin/time ]; then
    echo "SKIP: /usr/bin/time not found (install the 'time' package); the benchmark needs it" >&2
    exit 77
fi
[ -x "$X" ] && [ -x "$BIN/scope-export-synth" ] || { echo "FAIL: $BIN is not built" >&2; exit 1; }
sx_normal_build_only "bench.sh times the normal build; its paths are tested elsewhere"

# 1. Usage errors exit 2 and run nothing.
BUILD_DIR=$BIN bash "$bench" --reps 0 --no-build >/dev/null 2>&1
[ $? = 2 ] && ok || bad "--reps 0 did not exit 2"
BUILD_DIR=$BIN bash "$bench" --no-such-option --no-build >/dev/null 2>&1
[ $? = 2 ] && ok || bad "an unknown option did not exit 2"
BUILD_DIR=$BIN bash "$bench" --only no-such-section --no-build >/dev/null 2>&1
[ $? = 2 ] && ok || bad "--only of an unknown section did not exit 2"

# 2. One repetition of everything on tiny runs, in $TMP, with the binaries under test.
t0=$SECONDS
limit=420 each=60 # ~170 s on a quiet 2-core machine; room for a loaded one
TMPDIR=$TMP BUILD_DIR=$BIN SX_MPIEXEC=$MPIEXEC SX_BENCH_TIMEOUT=$each \
    timeout "$limit" bash "$bench" --quick --tiny --reps 1 --no-build --out "$TMP/out" \
    >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
elapsed=$((SECONDS - t0))
echo "bench.sh --quick --tiny --reps 1: status $rc in ${elapsed} s"
if [ "$rc" -ne 0 ]; then
    bad "bench.sh exited $rc"
    tail -20 "$TMP/stderr" >&2
else
    ok
fi
out=$TMP/stdout

# The table: a section per run, a row per case with numbers, no errors.
isal=0
grep -q 'ISA-L: yes' "$out" && isal=1
# the kernel's prices in the head: both measured, in microseconds
grep -Eq '^kernel: a system call [0-9]+\.[0-9]{2} us .* fresh memory [0-9]+\.[0-9]{2} us a 4 KiB page, [0-9]+ MB/s' "$out" && ok ||
    bad "no kernel prices line: $(grep '^kernel:' "$out" || echo none)"
cases="json.1 json.s json.2 gz.1 gz.2 cat gzip pigz.1 pigz.2"
cases="$cases trace.1 trace.2 tracegz.1 tracegz.2 cat.t pigz.t1 pigz.t2 pf.1 pf.2"
[ "$isal" = 1 ] && cases="$cases isal.1 isal.2"
for run in 10k 100k 100k-skew; do
    sect=$(awk -v h="== $run:" 'index($0, h) == 1 { on = 1; next } /^==/ { on = 0 } on' "$out")
    if [ -z "$sect" ]; then
        bad "no table for the $run run"
        continue
    fi
    for c in $cases; do
        # case, command ..., then wall seconds and MB/s as numbers
        echo "$sect" | grep -Eq "^$c +.* [0-9]+\.[0-9]{3} +[0-9]+ " && ok ||
            bad "$run: no row with timings for $c"
    done
    # the launch yardsticks: wall seconds, and the net time of the exports is derived
    for c in start.1 start.2; do
        echo "$sect" | grep -Eq "^$c +mpiexec .* [0-9]+\.[0-9]{3} +- " && ok ||
            bad "$run: no launch row $c"
    done
    echo "$sect" | grep -Eq "^json.2 .* [0-9]+\.[0-9]{3}\s*$" && ok ||
        bad "$run: json.2 has no net time"
    # the bare command runs without MPI
    echo "$sect" | grep -Eq "^json.s +scope-export export .*no MPI" && ok ||
        bad "$run: no bare (no MPI) row"
    echo "$sect" | grep -q ERROR && bad "$run: a case failed: $(echo "$sect" | grep ERROR)"
done
# The shapes of real jobs: a table each, every rank's peak RSS, their targets checked.
for run in 64x16 256x16 1024x25 100k-gzip4; do
    sect=$(awk -v h="== $run:" 'index($0, h) == 1 { on = 1; next } /^==/ { on = 0 } on' "$out")
    echo "$sect" | grep -Eq "^json.2 .* [0-9]+/[0-9]+ .* [0-9]+\.[0-9]{3}\s*$" && ok ||
        bad "$run: no json.2 row with both ranks' peak RSS"
    echo "$sect" | grep -q ERROR && bad "$run: a case failed: $(echo "$sect" | grep ERROR)"
done
grep -Eq '^(PASS|FAIL)  64x16 -> 256x16: peak RSS at -n 2 grows' "$out" && ok ||
    bad "no growth-per-row target"
# The other paths: speedscope, native runs both ways and their traces, text rates.
for what in "speedscope .* MB: -n 2" "speedscope: 1 -> 2 ranks net" "speedscope formatter" \
    "native 256 files .* MB: bare .json" "native 256 files, Chrome trace of every rank" \
    "100k-gzip4: .json one process, bare" "100k-gzip4: .json 2 ranks net .*x cat"; do
    grep -Eq "^(PASS|FAIL)  $what" "$out" && ok || bad "no target line '$what'"
done
# the disk's yardsticks beside the goals it bounds: dd oflag=direct of the same bytes
for what in "100k-gzip4: .json -n 2 net .* the disk writes the same .* MB around" \
    "native Chrome trace .* MB: one process writes .* the disk takes .* MB/s"; do
    grep -Eq "^INFO  $what" "$out" && ok || bad "no yardstick line '$what'"
done
# --summary of the many-row run against cat of its bytes
grep -Eq '^INFO  [0-9]+x[0-9]+ --summary .* MB, one process: [0-9.]+ s = [0-9.]+x cat' "$out" &&
    ok || bad "no --summary line"
# the Perfetto trace's targets: its size against the Chrome trace's, 1 -> 2 ranks, rank 0
for t in "perfetto .* MB = .*x the Chrome trace" "perfetto 1 -> 2 ranks net" \
    "perfetto -n 2 rank 0 peak RSS"; do
    grep -Eq "^(PASS|FAIL|INFO)  100k: $t" "$out" && ok || bad "no target line '$t'"
done

# The targets are checked and summed up (pass or miss does not matter here).
grep -q '^== targets' "$out" && ok || bad "no targets section"
grep -Eq '^(PASS|FAIL)  ' "$out" && ok || bad "no PASS/FAIL lines"
grep -Eq '^targets: [0-9]+ passed, [0-9]+ missed, [0-9]+ skipped' "$out" && ok ||
    bad "no targets summary"

# The pstats and region statistics rows, at 1 and 2 ranks.
for c in prof0.1 prof0.2 profall.1 profall.2 stats.1 stats.2; do
    grep -Eq "^$c +mpiexec .* [0-9]+\.[0-9]{3} +[0-9.]+$" "$out" && ok ||
        bad "no pstats or statistics row with timings for $c"
done

# The native rows: export --native of 256 and 64 per-process files at 1 and 2 ranks.
for c in n256.gz.1 n256.gz.2 n64.gz.1 n64.gz.2; do
    grep -Eq "^$c +mpiexec .* [0-9]+\.[0-9]{3} +[0-9.]+ +[0-9.]+$" "$out" && ok ||
        bad "no native row with timings for $c"
done
# The read-back section: the launch of validate, a table per document with every case timed
# (the module's load timed, or SKIP while scope_export has no load), every rank's peak RSS
# at -n 2, and its targets.
for c in start.1 start.2; do
    grep -Eq "^$c +mpiexec -n [12] scope-export validate tiny.json +[0-9]+\.[0-9]{3} " "$out" &&
        ok || bad "no read-back launch row $c"
done
rbload=0
for d in a b c; do
    sect=$(awk -v h="== read-back $d:" 'index($0, h) == 1 { on = 1; next } /^==/ { on = 0 } on' "$out")
    if [ -z "$sect" ]; then
        bad "no read-back table for document $d"
        continue
    fi
    rbc="json.load val.1 val.2 import"
    [ "$d" = c ] || rbc="$rbc gzip.dc val.gz" # the .json.gz of a and b
    for c in $rbc; do
        echo "$sect" | grep -Eq "^$c +.* [0-9]+\.[0-9]{3} +[0-9]+ " && ok ||
            bad "read-back $d: no row with timings for $c"
    done
    echo "$sect" | grep -Eq "^val\.2 +.* [0-9]+\.[0-9]{3} +[0-9.]+ +[0-9]+/[0-9]+$" && ok ||
        bad "read-back $d: val.2 has no net time or not both ranks' peak RSS"
    if echo "$sect" | grep -Eq "^sx\.load +.* [0-9]+\.[0-9]{3} +[0-9]+ "; then
        rbload=$((rbload + 1))
        v="PASS|FAIL"
    else
        echo "$sect" | grep -q "^sx\.load .*SKIP (scope_export has no load)" && ok ||
            bad "read-back $d: no sx.load row"
        v=SKIP
    fi
    echo "$sect" | grep -q ERROR && bad "read-back $d: a case failed: $(echo "$sect" | grep ERROR)"
    for t in "(PASS|FAIL)  read-back $d .*: validate -n 1 net .* json.load" \
        "(PASS|FAIL)  read-back $d .*: import -n 1 net .* json.load" \
        "(PASS|FAIL)  read-back $d .*: validate 1 -> 2 ranks net" \
        "(PASS|FAIL)  read-back $d .*: validate peak RSS" \
        "(PASS|FAIL)  read-back $d .*: import peak RSS" \
        "($v)  read-back $d .*: scope_export.load"; do
        grep -Eq "^$t" "$out" && ok || bad "no target line '$t'"
    done
    if [ "$d" != c ]; then
        grep -Eq "^(PASS|FAIL)  read-back $d .*: validate .json.gz .* gzip -dc" "$out" && ok ||
            bad "read-back $d: no .json.gz target"
    fi
done
[ "$rbload" = 0 ] || [ "$rbload" = 3 ] || bad "scope_export.load timed on $rbload of 3 documents"
# Every output verified: on the three few-row runs and the many-row run json bare and 2
# ranks, gz 1 and 2 ranks, isal 1 and 2 ranks; on the other three (the compressed and the
# larger many-row runs, which time fewer cases) json 2 ranks; on the three few-row runs the
# Chrome trace at 2 ranks and its .gz at 1 and 2, the Perfetto trace at 2; the native runs
# at 2 ranks; the pstats files (rank 0, every rank) and the region statistics at 2 ranks;
# the bare run of the compressed one, speedscope at 2 ranks, the bare native .json against
# import-native + export, the native Chrome trace at 2 ranks; the OTF2 archives of the two
# nested runs at 2 ranks; the read-back of the three documents: validate at 1 and 2 ranks
# said OK and the import exports back to the document, on each, validate of the .json.gz
# of the first two, and the module's load of each where it has one; the largest many-row
# run's --summary at 2 ranks.
want=$((4 * (isal ? 6 : 4) + 3 + 3 * 4 + 2 + 3 + 4 + 2 + 3 * 3 + 2 + rbload + 1))
for c in otf2.100.1 otf2.100.2 otf2.10k.1 otf2.10k.2 otf2.100k.1 otf2.100k.2; do
    grep -Eq "^$c +mpiexec .* [0-9]+\.[0-9]{3} " "$out" && ok || bad "no OTF2 row for $c"
done
grep -q '^PASS  100k nested: OTF2 archive .* target <= 0.2x' "$out" && ok ||
    bad "no OTF2 size target"
grep -q "^outputs verified: $want OK" "$out" && ok ||
    bad "outputs not verified: $(grep -i 'outputs' "$out" || echo 'no verification line')"
grep -q '^ERRORS' "$out" && bad "bench reports errors"
grep -Eq "^(PASS|FAIL)  1024x25 --summary: -n 2 every rank's peak RSS [0-9]+/[0-9]+ MiB" "$out" &&
    ok || bad "no --summary memory target"
grep -Eq "^INFO  1024x25 --summary: 1 -> 2 ranks net" "$out" && ok || bad "no --summary INFO line"

# bench.txt is the table; raw.tsv has a line per repetition; the work directory is gone.
cmp -s "$out" "$TMP/out/bench.txt" && ok || bad "bench.txt differs from what was printed"
nraw=$(($(grep -vc '^paths' "$TMP/out/raw.tsv") - 1))
ncases=$(($(echo "$cases" | wc -w) + 2))   # and start.1, start.2
# every case on the few-row runs; all but the 9 trace cases (Chrome and Perfetto) on the
# first many-row run; 7 (with dd, the disk's yardstick), 3 and 6 (--summary at 1 and 2
# ranks, and the launch of one) on the others
nwant=$((3 * ncases + ncases - 9 + 16))
[ "$nraw" = "$nwant" ] && ok || bad "raw.tsv has $nraw repetitions, not $nwant"
# and a line per repetition of the other paths, each with its repetition and wall time
npaths=$(awk -F'\t' '$1 == "paths" && $3 ~ /^[0-9]+$/ && $4 > 0' "$TMP/out/raw.tsv" | wc -l)
nbare=$(awk -F'\t' '$1 == "paths" && $2 == "nat:bare"' "$TMP/out/raw.tsv" | wc -l)
[ "$npaths" -gt 0 ] && [ "$npaths" = "$(grep -c '^paths' "$TMP/out/raw.tsv")" ] &&
    [ "$nbare" = 1 ] && ok ||
    bad "raw.tsv: $npaths lines of the other paths ($nbare of the native bare export, not 1)"
left=$(find "$TMP" -maxdepth 1 -name 'sx-bench.*' | head -1)
[ -z "$left" ] && ok || bad "work directory left behind: $left"

[ "$elapsed" -lt 60 ] || echo "note: the smoke run took ${elapsed} s (meant to stay under 60 s)" >&2
finish
