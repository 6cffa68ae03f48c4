#!/usr/bin/env bash
# test.sh - install dependencies, build with -Werror, run the whole test suite (ctest)
#   scripts/test.sh              the suite
#   scripts/test.sh --sanitize   the suite under AddressSanitizer + UndefinedBehaviorSanitizer
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
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
