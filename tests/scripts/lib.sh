# lib.sh - shared helpers of the script tests (sourced, not run)
set -u
BIN=${SX_BIN_DIR:?SX_BIN_DIR not set}
SHARED=${SX_SHARED_DIR:?SX_SHARED_DIR not set}
X="$BIN/scope-export"
CMP="$BIN/tests/golden_cmp"
MPIEXEC=${SX_MPIEXEC:-mpiexec}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
passes=0

# ctest ends a test that runs past its TIMEOUT with SIGKILL (CMake before 3.27), which no
# trap sees: a test that prints only at its end would be killed without a word. So a
# watchdog (SX_TEST_TIMEOUT, which tests/CMakeLists.txt sets to the TIMEOUT) says on
# stderr, shortly before the limit, what the test is doing: the commands running under it
# and for how long, and (when the shell gets to it) the line of the script.
sx_watchdog_report() {
    local main=$1 limit=$2 elapsed=$3 p kids all=""
    kids=$main
    while [ -n "$kids" ]; do # every descendant of the test's shell
        local next=""
        for p in $kids; do
            [ "$p" = "$BASHPID" ] || next="$next $(pgrep -P "$p" | tr '\n' ' ')"
        done
        kids=$(echo $next)
        all="$all $kids"
    done
    all=" $all "
    all=${all/ $BASHPID / } # not the watchdog itself
    {
        echo "TIMEOUT SOON: $(basename "$0") still running after ${elapsed} s of its ${limit} s" \
            "(ctest will kill it without a word); running now:"
        # shellcheck disable=SC2086
        [ -n "${all// /}" ] && ps -o pid=,etimes=,args= -p "$(echo $all | tr ' ' ',')" |
            sed 's/^/    /' | cut -c1-300
    } >>"/proc/$main/fd/2" # the test's stderr, opened now: the watchdog holds no pipe open
    kill -USR1 "$main" 2>/dev/null # the shell prints its line when the command returns
}
sx_where() { echo "TIMEOUT SOON: $(basename "$0") at line ${BASH_LINENO[0]}: $BASH_COMMAND" >&2; }
if [ -n "${SX_TEST_TIMEOUT:-}" ] && [ "${SX_TEST_TIMEOUT:-0}" -gt 0 ]; then
    trap sx_where USR1
    sx_lead=$((SX_TEST_TIMEOUT / 10))
    [ "$sx_lead" -lt 3 ] && sx_lead=3
    [ "$sx_lead" -gt 60 ] && sx_lead=60
    (
        main=$$ start=$SECONDS
        while kill -0 "$main" 2>/dev/null; do
            if [ $((SECONDS - start)) -ge $((SX_TEST_TIMEOUT - sx_lead)) ]; then
                sx_watchdog_report "$main" "$SX_TEST_TIMEOUT" $((SECONDS - start))
                break
            fi
            sleep 1
        done
    ) </dev/null >/dev/null 2>/dev/null &
fi
# sx_api_names HEADER: the names of the functions HEADER declares with SX_API, one a line,
# sorted (a declaration may run over several lines: its name is the word before its first
# parenthesis)
sx_api_names() {
    awk '/^SX_API / { d = ""; on = 1 }
         on { d = d " " $0 }
         on && /;/ { sub(/\(.*/, "", d); n = split(d, w, /[ *]+/); print w[n]; on = 0 }' "$1" |
        sort
}
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# mpirun with a timeout: a hang is a failure
run_np() { local np=$1; shift; sx_leak_next; timeout 120 "$MPIEXEC" --oversubscribe -n "$np" "$@"; }
finish() {
    echo "$passes passed, $fails failed"
    [ "$fails" -eq 0 ]
}
# The Python with mpi4py: Debian's /usr/bin/python3 (python3-mpi4py) before any other
# python3 on PATH (a virtualenv or pyenv one may lack it). Empty when there is none.
sx_python() {
    local p
    for p in /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
        [ -n "$p" ] && [ -x "$p" ] && "$p" -c 'import mpi4py' 2>/dev/null && { echo "$p"; return; }
    done
}
# A sanitizer build's libraries need the sanitizers' runtime: programs a test builds
# against them take SX_SAN_FLAGS, and an interpreter (python3) runs after
# "${SX_SAN_ENV[@]}", which preloads the runtime and leaves the interpreter's own leaks.
SX_SAN_FLAGS=""
SX_SAN_ENV=()
SX_SAN=0
if grep -q '^SX_SANITIZE:BOOL=ON' "$BIN/CMakeCache.txt" 2>/dev/null; then
    SX_SAN=1
    SX_SAN_FLAGS="-fsanitize=address,undefined"
    SX_SAN_ENV=(env "LD_PRELOAD=$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
        "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
fi

# sx_sample N: true for every case of a long grid in a normal build; under the sanitizers
# (several times slower, and there to find memory errors, not wrong text) for one call in N,
# counted through the script: of each N calls in a row (calls 0..N-1, N..2N-1, ...) one,
# a different one from window to window, so a loop of N cases (1 and 3 ranks, say) runs one
# of them and the next such loop the next one, and a loop of 2N-1 cases or more runs at
# least one. Call it in the loop's own shell (not in a pipeline or a subshell), or the
# count does not move.
sx_count=0
sx_sample() {
    local c=$sx_count
    sx_count=$((sx_count + 1))
    [ "$SX_SAN" = 0 ] || [ $(((c + c / $1) % $1)) -eq 0 ]
}

# sx_np_wanted N: whether to run a case at N ranks: always, unless SX_TEST_NPS ("2", "1 3")
# picks some, for a cheap second run of a test under another setting (tests/CMakeLists.txt:
# the golden and many-rows tests with the direct reads switched off).
sx_np_wanted() { [ -z "${SX_TEST_NPS:-}" ] || [[ " $SX_TEST_NPS " == *" $1 "* ]]; }

# Leaks, under the sanitizers: LeakSanitizer records a whole stack for each of Open MPI's
# start-up allocations (tests/lsan.supp needs them whole, so the slow unwinder), which
# makes each mpiexec run of the command ~4 s instead of ~1. So the script tests check
# memory errors and undefined behaviour with leaks off and the fast unwinder (nothing to
# match against the suppressions), and leaks only where they call sx_leak_check: the tests
# of the command's error paths and formats that the library's own tests do not reach.
# Leaks of the library are checked by the unit, MPI and library sweep tests (every error
# path), and valgrind checks the command in the normal build.
SX_ASAN_BASE=${ASAN_OPTIONS:-}
SX_LSAN_BASE=${LSAN_OPTIONS:-}
sx_leak_every=0
sx_leak_runs=0
sx_leaks() { # sx_leaks 0|1: leaks checked (and whole stacks) or not, from here on
    [ "$SX_SAN" = 1 ] || return 0
    export ASAN_OPTIONS="${SX_ASAN_BASE:+$SX_ASAN_BASE:}detect_leaks=$1"
    export LSAN_OPTIONS="${SX_LSAN_BASE:+$SX_LSAN_BASE:}fast_unwind_on_malloc=$((1 - $1))"
}
sx_leaks 0
# sx_leak_check [N]: check leaks in one run of the command in N (default: every run), in
# turn: mpi_lib.sh's mpi calls sx_leak_next before each run. The runs between go ~4x
# faster; a leak on an error path shows in the runs that are checked, and the error paths
# of a long grid repeat their sites.
sx_leak_check() {
    sx_leak_every=${1:-1}
    sx_leak_runs=0
    [ "$SX_SAN" = 1 ] && sx_leaks 1
    return 0
}
sx_leak_next() {
    [ "$sx_leak_every" -gt 1 ] || return 0
    if [ $((sx_leak_runs % sx_leak_every)) -eq 0 ]; then sx_leaks 1; else sx_leaks 0; fi
    sx_leak_runs=$((sx_leak_runs + 1))
}

# sx_normal_build_only WHY: skip (status 77) under the sanitizers a test of what they add
# nothing to (packaging, the test generators, the launcher): the normal build runs it.
sx_normal_build_only() {
    if [ "$SX_SAN" = 1 ]; then
        echo "skip: a sanitizer build; $1 (the normal build runs this test)"
        exit 77
    fi
}
