#!/usr/bin/env bash
# test.sh - install dependencies, build with -Werror, run the whole test suite (ctest)
#   scripts/test.sh              the suite
#   scripts/test.sh --sanitize   the suite under AddressSanitizer + UndefinedBehaviorSanitizer
# The suite starts mpiexec hundreds of times: it first checks that one start is quick
# (SX_MPIEXEC names the launcher, default mpiexec; SX_LAUNCH_LIMIT the seconds allowed,
# default 3) and stops at once, saying why, when it is not.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

launcher=${SX_MPIEXEC:-mpiexec}
limit=${SX_LAUNCH_LIMIT:-3}
t0=$(date +%s%N)
if ! timeout 60 "$launcher" --oversubscribe -n 1 true </dev/null >/dev/null 2>&1; then
    echo "test.sh: '$launcher --oversubscribe -n 1 true' fails or takes over 60 s: MPI cannot start here" >&2
    exit 1
fi
took=$((($(date +%s%N) - t0) / 1000000)) # ms
if [ "$took" -gt $((limit * 1000)) ]; then
    secs=$(printf '%d.%d' $((took / 1000)) $((took % 1000 / 100)))
    host=$(hostname)
    if ! getent hosts "$host" >/dev/null 2>&1; then
        echo "test.sh: $(basename "$launcher") takes $secs s to start: the host name '$host' does not resolve;" \
            "add it to /etc/hosts (e.g. '127.0.1.1 $host'), or the suite runs for hours" >&2
    else
        echo "test.sh: $(basename "$launcher") takes $secs s to start (over $limit s): the suite starts it" \
            "hundreds of times and would run for hours; find out why first (a slow name" \
            "service, a network interface Open MPI waits for, a loaded machine)" >&2
    fi
    exit 1
fi
if [ "${1:-}" = "--sanitize" ]; then
    export BUILD_DIR=${BUILD_DIR:-$top/build-sanitize}
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
    # the slow unwinder sees through Open MPI's frames, so the suppressions can match
    export LSAN_OPTIONS=suppressions=$top/tests/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    "$top/scripts/build.sh" -DSX_WERROR=ON -DSX_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
else
    export BUILD_DIR=${BUILD_DIR:-$top/build}
    "$top/scripts/build.sh" -DSX_WERROR=ON
fi
cd "$BUILD_DIR"
ctest --output-on-failure -j 2 --timeout 900
