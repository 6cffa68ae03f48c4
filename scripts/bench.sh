#!/usr/bin/env bash
# bench.sh - time scope-export against cat, gzip and pigz on synthetic runs, check the targets
#
#   scripts/bench.sh [--quick] [--reps N] [--out DIR] [--no-build]
#
#   --quick      runs of 100k and 1M events (default: 1M and 10M), plus the skewed large run
#   --reps N     repetitions per command; the table shows medians (default 3)
#   --out DIR    where bench.txt (the table) and raw.tsv (every repetition) go
#                (default: ${TMPDIR:-/tmp}/scope-export-bench)
#   --no-build   use the binaries in $BUILD_DIR as they are (fail if they are missing)
#
# BUILD_DIR (default build/) is built with scripts/build.sh when its binaries are missing or
# older than the sources. Runs and outputs go to a temporary directory under ${TMPDIR:-/tmp},
# removed at the end. Exit status: 0 when everything ran and every output verified, whether
# or not the targets were met (the table says); 1 when something broke; 2 on a usage error.
# SX_MPIEXEC names mpiexec (default: mpiexec); SX_BENCH_TIMEOUT bounds each command (s).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
reps=3
mode=full
outdir=${TMPDIR:-/tmp}/scope-export-bench
do_build=1

usage() { sed -n '2,16s/^# \{0,1\}//p' "$0"; }
die() { echo "bench: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
    case $1 in
        --quick) [ "$mode" = tiny ] || mode=quick ;;
        --tiny) mode=tiny ;;   # hidden: 10k and 100k events, for the smoke test
        --reps) [ $# -ge 2 ] || { usage >&2; exit 2; }; reps=$2; shift ;;
        --reps=*) reps=${1#--reps=} ;;
        --out) [ $# -ge 2 ] || { usage >&2; exit 2; }; outdir=$2; shift ;;
        --out=*) outdir=${1#--out=} ;;
        --no-build) do_build=0 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
case $reps in ''|*[!0-9]*|0) echo "bench: --reps takes a positive integer" >&2; exit 2 ;; esac

case $mode in
    full)  small=1000000 large=10000000 ;;
    quick) small=100000  large=1000000 ;;
    tiny)  small=10000   large=100000 ;;
esac

# ---------------------------------------------------------------- tools and binaries
MPIEXEC=${SX_MPIEXEC:-mpiexec}
for t in "$MPIEXEC" gzip pigz; do
    command -v "$t" >/dev/null 2>&1 || die "$t not found (scripts/setup.sh installs it)"
done
[ -x /usr/bin/time ] || die "/usr/bin/time not found (install the 'time' package)"
X=$build/scope-export
SYNTH=$build/scope-export-synth
if [ "$do_build" = 1 ]; then
    stale=0
    if [ ! -x "$X" ] || [ ! -x "$SYNTH" ]; then
        stale=1
    elif [ -n "$(find "$top/src" "$top/include" "$top/tools" "$top/CMakeLists.txt" \
                 -newer "$X" -type f 2>/dev/null | head -1)" ]; then
        stale=1
    fi
    if [ "$stale" = 1 ]; then
        echo "bench: building $build" >&2
        BUILD_DIR=$build "$top/scripts/build.sh" >&2 || die "build failed"
    fi
fi
[ -x "$X" ] && [ -x "$SYNTH" ] || die "$X or $SYNTH is not built"
mkdir -p "$outdir" || die "cannot create $outdir"
outdir=$(cd "$outdir" && pwd)

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
W=$(mktemp -d "${TMPDIR:-/tmp}/sx-bench.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT TERM
TO=${SX_BENCH_TIMEOUT:-1800}   # seconds per command: a hang is a failure

# Rank 0 runs under /usr/bin/time, the other ranks bare: rank 0's own wall and peak RSS.
cat >"$W/r0" <<'EOF'
#!/bin/sh
f=$1
shift
if [ "${OMPI_COMM_WORLD_RANK:-0}" = 0 ]; then
    exec /usr/bin/time -f "%e %M" -o "$f" "$@"
fi
exec "$@"
EOF
chmod +x "$W/r0"

broke=0
raw=$outdir/raw.tsv
printf 'run\tcase\trep\twall_s\ttime_e_s\tmaxrss_kib\tr0_wall_s\tr0_maxrss_kib\tout_bytes\n' >"$raw"

# ---------------------------------------------------------------- helpers
median() {
    printf '%s\n' "$@" | sort -g |
        awk '{a[NR] = $1} END {
            if (NR == 0) print "nan"
            else if (NR % 2) printf "%.3f\n", a[(NR + 1) / 2]
            else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
maxof() { printf '%s\n' "$@" | sort -g | tail -1; }
calc() { awk "BEGIN { printf \"%.${1}f\", $2 }"; }
now_us() { local t=${EPOCHREALTIME/./}; echo "${t#0}"; }
human() {   # 10000000 -> 10M
    awk -v n="$1" 'BEGIN {
        if (n >= 1e6 && n % 1e6 == 0) printf "%dM", n / 1e6
        else if (n >= 1e3 && n % 1e3 == 0) printf "%dk", n / 1e3
        else printf "%d", n }'
}
lastline() { [ -s "$1" ] && tail -1 "$1"; }
fsize() { stat -c %s "$1" 2>/dev/null || echo 0; }

# ---------------------------------------------------------------- ISA-L: try and skip
have_isal=0
isal_note="not tried"
if "$SYNTH" --events 100 "$W/probe.h5" >/dev/null 2>"$W/probe.err"; then
    if "$X" export "$W/probe.h5" -o "$W/probe.json.gz" --deflate isal --quiet 2>"$W/probe.err"; then
        have_isal=1
        isal_note="yes"
    else
        isal_note="no ($(head -1 "$W/probe.err"))"
    fi
else
    die "scope-export-synth failed: $(head -1 "$W/probe.err")"
fi
rm -f "$W"/probe.*

# ---------------------------------------------------------------- the cases
# name|kind|ranks|yardstick of the ratio|extra options
cases=(
    "json.1|sx|1|cat|"
    "json.2|sx|2|cat|"
    "gz.1|sx|1|pigz.1|"
    "gz.2|sx|2|pigz.2|"
)
[ "$have_isal" = 1 ] && cases+=("isal.1|sx|1|pigz.1|--deflate isal" "isal.2|sx|2|pigz.2|--deflate isal")
cases+=("cat|y|1||" "gzip|y|1||" "pigz.1|y|1||" "pigz.2|y|2||")

case_cmd() {   # the command line shown in the table
    case $1 in
        json.*) echo "mpiexec -n ${1#json.} scope-export export run.h5 -o out.json" ;;
        gz.*)   echo "mpiexec -n ${1#gz.} scope-export export run.h5 -o out.json.gz" ;;
        isal.*) echo "mpiexec -n ${1#isal.} scope-export export run.h5 -o out.json.gz --deflate isal" ;;
        cat)    echo "cat doc.json > out" ;;
        gzip)   echo "gzip -6 < doc.json > out.gz" ;;
        pigz.*) echo "pigz -p ${1#pigz.} -6 < doc.json > out.gz" ;;
    esac
}
case_out() {
    case $1 in json.*|cat) echo "$W/out.json" ;; *) echo "$W/out.json.gz" ;; esac
}

declare -A WALL R0WALL RSS SIZE JSONB H5B EVENTS ERR EXP
runs=(small large skew)
declare -A RUN_EVENTS=([small]=$small [large]=$large [skew]=$large)
declare -A RUN_LABEL=([small]=$(human "$small") [large]=$(human "$large")
                      [skew]="$(human "$large")-skew")
verified=0
verify_fail=0
vnote=()

# timed RUN SPEC REP: one repetition; prints "wall r0wall r0rss size", fails when the command did
timed() {
    local run=$1 c kind n opts out t0 t1 rc rep=$3
    IFS='|' read -r c kind n _ opts <<<"$2"
    out=$(case_out "$c")
    rm -f "$out" "$W/time.outer" "$W/time.r0"
    t0=$(now_us)
    if [ "$kind" = sx ]; then
        # shellcheck disable=SC2086
        timeout "$TO" /usr/bin/time -f "%e %M" -o "$W/time.outer" \
            "$MPIEXEC" --oversubscribe -n "$n" "$W/r0" "$W/time.r0" \
            "$X" export "$W/run.h5" -o "$out" --quiet --stats $opts 2>"$W/err"
        rc=$?
    else
        case $c in
            cat)    timeout "$TO" /usr/bin/time -f "%e %M" -o "$W/time.outer" \
                        cat "$W/doc.json" >"$out" 2>"$W/err" ;;
            gzip)   timeout "$TO" /usr/bin/time -f "%e %M" -o "$W/time.outer" \
                        gzip -6 <"$W/doc.json" >"$out" 2>"$W/err" ;;
            pigz.*) timeout "$TO" /usr/bin/time -f "%e %M" -o "$W/time.outer" \
                        pigz -p "$n" -6 <"$W/doc.json" >"$out" 2>"$W/err" ;;
        esac
        rc=$?
    fi
    t1=$(now_us)
    if [ "$rc" -ne 0 ]; then
        echo "bench: ${RUN_LABEL[$run]} $c failed (status $rc): $(grep -v -e '^-*$' -e '^ *$' "$W/err" | head -2 | tr '\n' ' ')" >&2
        return 1
    fi
    local wall te rss r0w r0m sz exp=nan
    wall=$(calc 3 "($t1 - $t0) / 1e6")
    if [ "$kind" = sx ]; then   # the export's own time (--stats), without start-up
        exp=$(sed -n 's/.* bytes in \([0-9.]*\) s .*/\1/p' "$W/err" | tail -1)
        [ -n "$exp" ] || exp=nan
    fi
    read -r te rss <<<"$(lastline "$W/time.outer")"
    if [ "$kind" = sx ]; then
        read -r r0w r0m <<<"$(lastline "$W/time.r0")"
    else
        r0w=$te r0m=$rss
    fi
    sz=$(fsize "$out")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${RUN_LABEL[$run]}" "$c" "$rep" "$wall" \
        "${te:-}" "${rss:-}" "${r0w:-}" "${r0m:-}" "$sz" >>"$raw"
    echo "$wall ${r0w:-nan} ${r0m:-0} $sz $exp"
}

# check_output RUN CASE: the output of the first repetition against doc.json
check_output() {
    local run=$1 c=$2 out what
    out=$(case_out "$c")
    case $c in
        json.1) return 0 ;;   # it is doc.json
        json.*)
            what="${RUN_LABEL[$run]} $c"
            if cmp -s "$out" "$W/doc.json"; then
                verified=$((verified + 1))
            else
                verify_fail=$((verify_fail + 1)); vnote+=("$what: text differs from 1 rank")
            fi ;;
        gz.*|isal.*)
            what="${RUN_LABEL[$run]} $c"
            if ! gzip -t "$out" 2>/dev/null; then
                verify_fail=$((verify_fail + 1)); vnote+=("$what: gzip -t fails")
            elif ! gzip -dc "$out" | cmp -s - "$W/doc.json"; then
                verify_fail=$((verify_fail + 1)); vnote+=("$what: decompressed text differs from json.1")
            else
                verified=$((verified + 1))
            fi ;;
    esac
}

# ---------------------------------------------------------------- run the benchmark
start_load=$(cut -d' ' -f1-3 /proc/loadavg)
start_time=$(date '+%Y-%m-%d %H:%M:%S')
for run in "${runs[@]}"; do
    ev=${RUN_EVENTS[$run]}
    label=${RUN_LABEL[$run]}
    skewopt=()
    [ "$run" = skew ] && skewopt=(--skew 0.5)
    echo "bench: $label: generating $ev events" >&2
    rm -f "$W"/*.json "$W"/*.gz "$W/run.h5"
    if ! "$SYNTH" --ranks 8 --regions 20 --events "$ev" "${skewopt[@]}" "$W/run.h5" \
        >/dev/null 2>"$W/err"; then
        echo "bench: scope-export-synth failed: $(head -1 "$W/err")" >&2
        broke=1
        continue
    fi
    H5B[$run]=$(fsize "$W/run.h5")
    EVENTS[$run]=$ev
    for spec in "${cases[@]}"; do
        IFS='|' read -r c kind _ <<<"$spec"
        if [ "$kind" = y ] && [ ! -s "$W/doc.json" ]; then
            ERR[$run:$c]="no doc.json"; continue   # json.1 failed: no yardstick input
        fi
        walls=() r0walls=() rsss=() exps=() sz=0
        for ((rep = 1; rep <= reps; rep++)); do
            echo "bench: $label $c rep $rep/$reps" >&2
            if ! res=$(timed "$run" "$spec" "$rep"); then
                ERR[$run:$c]=failed
                broke=1
                break
            fi
            read -r w r0w r0m sz ex <<<"$res"
            walls+=("$w") r0walls+=("$r0w") rsss+=("$r0m") exps+=("$ex")
            if [ "$rep" = 1 ]; then
                [ "$c" = json.1 ] && mv "$W/out.json" "$W/doc.json"
                check_output "$run" "$c"
            fi
        done
        [ -n "${ERR[$run:$c]:-}" ] && continue
        WALL[$run:$c]=$(median "${walls[@]}")
        R0WALL[$run:$c]=$(median "${r0walls[@]}")
        [ "$kind" = sx ] && EXP[$run:$c]=$(median "${exps[@]}")
        RSS[$run:$c]=$(maxof "${rsss[@]}")   # KiB, the largest over the repetitions
        SIZE[$run:$c]=$sz
    done
    JSONB[$run]=$(fsize "$W/doc.json")
    rm -f "$W"/*.json "$W"/*.gz "$W/run.h5"
done
end_load=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- the table
have() { [ -n "${WALL[$1]:-}" ]; }
ratio_of() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }'; }

report() {
    local run c spec yard kind w mbs ratio sz r0
    echo "scope-export benchmark ($mode, medians of $reps, $start_time)"
    echo "host: $(hostname), $(nproc) cores, load $start_load at start, $end_load at end;" \
        "ISA-L: $isal_note"
    echo "commit: $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
        "$(git -C "$top" status --porcelain 2>/dev/null | grep -q . && echo '(with local changes)')"
    echo "wall: whole command (mpiexec included), median; MB/s: JSON text MB (1e6) per wall s;"
    echo "ratio: json vs cat, gz with N ranks vs pigz -p N -6; r0 MiB: peak RSS of rank 0"
    echo "(of the process itself for the yardsticks), the largest over the repetitions; r0 s: rank 0's"
    echo "own wall (/usr/bin/time %e, MPI_Init included, mpiexec's launch not), median;"
    echo "exp s: the export's own time as --stats reports it (no process or MPI start-up), median."
    echo "NOTE: timings on a shared machine are noisy; compare within one session only."
    for run in "${runs[@]}"; do
        [ -n "${EVENTS[$run]:-}" ] || continue
        echo
        printf '== %s: %s events, 8 file ranks, 20 regions%s; HDF5 %.1f MB, JSON %.1f MB\n' \
            "${RUN_LABEL[$run]}" "${EVENTS[$run]}" "$([ "$run" = skew ] && echo ', --skew 0.5')" \
            "$(calc 1 "${H5B[$run]} / 1e6")" "$(calc 1 "${JSONB[$run]:-0} / 1e6")"
        printf '%-7s %-70s %7s %6s %13s %8s %7s %6s %6s\n' case command "wall s" "MB/s" ratio \
            "size MB" "r0 MiB" "r0 s" "exp s"
        for spec in "${cases[@]}"; do
            IFS='|' read -r c kind _ yard _ <<<"$spec"
            if ! have "$run:$c"; then
                printf '%-7s %-70s %s\n' "$c" "$(case_cmd "$c")" "ERROR (${ERR[$run:$c]:-})"
                continue
            fi
            w=${WALL[$run:$c]}
            mbs=$(awk -v b="${JSONB[$run]}" -v w="$w" 'BEGIN { printf "%.0f", (w > 0 ? b / 1e6 / w : 0) }')
            ratio=-
            [ -n "$yard" ] && have "$run:$yard" && ratio="$(ratio_of "$w" "${WALL[$run:$yard]}")x $yard"
            sz=-
            case $c in gz.*|isal.*|gzip|pigz.*) sz=$(calc 1 "${SIZE[$run:$c]} / 1e6") ;; esac
            r0=$(calc 1 "${RSS[$run:$c]:-0} / 1024")
            printf '%-7s %-70s %7.3f %6s %13s %8s %7s %6s %6s\n' "$c" "$(case_cmd "$c")" "$w" \
                "$mbs" "$ratio" "$sz" "$r0" "$(calc 2 "${R0WALL[$run:$c]}")" "${EXP[$run:$c]:--}"
        done
    done
}

npass=0 nmiss=0 nskip=0
verdict() {   # verdict OK|MISS|SKIP TEXT
    case $1 in
        OK) npass=$((npass + 1)); printf 'PASS  %s\n' "$2" ;;
        MISS) nmiss=$((nmiss + 1)); printf 'FAIL  %s\n' "$2" ;;
        *) nskip=$((nskip + 1)); printf 'SKIP  %s\n' "$2" ;;
    esac
}
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }' && echo OK || echo MISS; }

targets() {
    local run c n r a b peak growth worst list
    echo
    echo "== targets"
    for run in "${runs[@]}"; do
        local L=${RUN_LABEL[$run]}
        for n in 1 2; do
            if have "$run:gz.$n" && have "$run:pigz.$n"; then
                r=$(ratio_of "${WALL[$run:gz.$n]}" "${WALL[$run:pigz.$n]}")
                verdict "$(le "$r" 1.25)" "$L: .json.gz $n rank(s) ${WALL[$run:gz.$n]} s = ${r}x pigz -p $n -6 (${WALL[$run:pigz.$n]} s); target <= 1.25x"
                echo "INFO  $L: ... the export's own time ${EXP[$run:gz.$n]} s = $(ratio_of "${EXP[$run:gz.$n]}" "${WALL[$run:pigz.$n]}")x pigz -p $n (no MPI start-up)"
            else verdict SKIP "$L: .json.gz $n rank(s) vs pigz: missing measurement"; fi
        done
        if have "$run:gz.1" && have "$run:gz.2"; then
            r=$(ratio_of "${WALL[$run:gz.1]}" "${WALL[$run:gz.2]}")
            verdict "$(le 1.7 "$r")" "$L: .json.gz 1 -> 2 ranks ${WALL[$run:gz.1]} s -> ${WALL[$run:gz.2]} s = ${r}x faster; target >= 1.7x"
            echo "INFO  $L: ... the export's own time ${EXP[$run:gz.1]} s -> ${EXP[$run:gz.2]} s = $(ratio_of "${EXP[$run:gz.1]}" "${EXP[$run:gz.2]}")x faster"
        else verdict SKIP "$L: .json.gz 1 -> 2 ranks: missing measurement"; fi
        if have "$run:json.2" && have "$run:cat"; then
            r=$(ratio_of "${WALL[$run:json.2]}" "${WALL[$run:cat]}")
            verdict "$(le "$r" 3)" "$L: .json 2 ranks ${WALL[$run:json.2]} s = ${r}x cat (${WALL[$run:cat]} s); target <= 3x"
            echo "INFO  $L: ... the export's own time ${EXP[$run:json.2]} s = $(ratio_of "${EXP[$run:json.2]}" "${WALL[$run:cat]}")x cat (no MPI start-up)"
        else verdict SKIP "$L: .json 2 ranks vs cat: missing measurement"; fi
    done

    # rank 0 memory: bounded on the large runs, flat from the small to the large run
    local sxcases=()
    for spec in "${cases[@]}"; do [ "$(cut -d'|' -f2 <<<"$spec")" = sx ] && sxcases+=("${spec%%|*}"); done
    local S=${RUN_LABEL[small]}
    for run in large skew; do
        local L=${RUN_LABEL[$run]}
        peak=0 growth=-1e9 worst="" list=""
        for c in "${sxcases[@]}"; do
            have "$run:$c" || continue
            a=${RSS[$run:$c]}
            [ "$a" -gt "$peak" ] && { peak=$a; worst=$c; }
            if have "small:$c"; then
                b=$((a - ${RSS[small:$c]}))
                awk -v g="$b" -v m="$growth" 'BEGIN { exit !(g > m) }' && growth=$b
                list+=" $c $(calc 1 "$b / 1024")"
            fi
        done
        if [ "$peak" -gt 0 ]; then
            verdict "$(le "$peak" $((128 * 1024 - 1)))" "$L: rank 0 peak $(calc 1 "$peak / 1024") MiB ($worst); target < 128 MiB"
        else verdict SKIP "$L: rank 0 peak: missing measurement"; fi
        if [ -n "$list" ]; then
            verdict "$(le "$growth" $((8 * 1024)))" "$L vs $S: rank 0 peak grows at most $(calc 1 "$growth / 1024") MiB (MiB:$list); target <= 8 MiB"
        else verdict SKIP "$L vs $S: rank 0 growth: missing measurement"; fi
    done

    # scaling: 10x the events in <= 11x the time, for every export
    for run in large skew; do
        local L=${RUN_LABEL[$run]}
        worst=0 list=""
        for c in "${sxcases[@]}"; do
            have "$run:$c" && have "small:$c" || continue
            r=$(ratio_of "${WALL[$run:$c]}" "${WALL[small:$c]}")
            list+=" $c ${r}x"
            awk -v r="$r" -v m="$worst" 'BEGIN { exit !(r > m) }' && worst=$r
        done
        if [ -n "$list" ]; then
            verdict "$(le "$worst" 11)" "$L vs $S time: worst ${worst}x (${list# }); target <= 11x"
        else verdict SKIP "$L vs $S time: missing measurement"; fi
    done

    # against scope-profiler's Python export of a 10M-event run (fixed figures, not measured here)
    for run in large skew; do
        local L=${RUN_LABEL[$run]}
        if [ "${EVENTS[$run]:-0}" != 10000000 ]; then
            verdict SKIP "$L: Python comparison needs the 10M-event run (full mode, not --quick)"
            continue
        fi
        # Python's figures time its export call, not the interpreter's start: compare the
        # export's own time (--stats); the whole command's ratio is printed beside it
        if have "$run:json.1"; then
            r=$(ratio_of 15 "${EXP[$run:json.1]}")
            verdict "$(le 30 "$r")" "$L: .json 1 rank ${EXP[$run:json.1]} s = ${r}x faster than Python's 15 s (whole command ${WALL[$run:json.1]} s: $(ratio_of 15 "${WALL[$run:json.1]}")x); target >= 30x"
        else verdict SKIP "$L: .json 1 rank vs Python: missing measurement"; fi
        if have "$run:gz.2"; then
            r=$(ratio_of 117 "${EXP[$run:gz.2]}")
            verdict "$(le 12 "$r")" "$L: .json.gz 2 ranks zlib ${EXP[$run:gz.2]} s = ${r}x faster than Python's 117 s (whole command ${WALL[$run:gz.2]} s: $(ratio_of 117 "${WALL[$run:gz.2]}")x); target >= 12x"
        else verdict SKIP "$L: .json.gz 2 ranks vs Python: missing measurement"; fi
        if [ "$have_isal" != 1 ]; then
            verdict SKIP "$L: .json.gz 2 ranks ISA-L vs Python: not built with ISA-L"
        elif have "$run:isal.2"; then
            r=$(ratio_of 117 "${EXP[$run:isal.2]}")
            verdict "$(le 100 "$r")" "$L: .json.gz 2 ranks ISA-L ${EXP[$run:isal.2]} s = ${r}x faster than Python's 117 s (whole command ${WALL[$run:isal.2]} s: $(ratio_of 117 "${WALL[$run:isal.2]}")x); target >= 100x"
        else verdict SKIP "$L: .json.gz 2 ranks ISA-L vs Python: missing measurement"; fi
        peak=0
        for c in "${sxcases[@]}"; do
            have "$run:$c" && [ "${RSS[$run:$c]}" -gt "$peak" ] && peak=${RSS[$run:$c]}
        done
        [ "$peak" -gt 0 ] && echo "INFO  $L: rank 0 peak $(calc 1 "$peak / 1024") MiB against Python's 3.6-3.9 GB ($(calc 0 "3.6e9 / ($peak * 1024)")x less)"
    done
    echo "(Python figures are fixed references for a 10M-event run: 15-18 s .json, 117-124 s"
    echo " .json.gz at zlib level 9, 3.6-3.9 GB; the lower times are used; here .gz is level 6.)"
    echo
    echo "targets: $npass passed, $nmiss missed, $nskip skipped"
    if [ "$verify_fail" -eq 0 ]; then
        echo "outputs verified: $verified OK (text equal across ranks and deflate engines, gzip -t)"
    else
        echo "outputs NOT verified: $verify_fail failed, $verified OK"
        printf '  %s\n' "${vnote[@]}"
    fi
    [ "$broke" = 0 ] || echo "ERRORS: some commands failed (see above and stderr)"
}

{ report; targets; } | tee "$outdir/bench.txt"
echo "bench: table in $outdir/bench.txt, every repetition in $raw" >&2
[ "$broke" = 0 ] && [ "$verify_fail" = 0 ]
