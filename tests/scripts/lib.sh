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
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# mpirun with a timeout: a hang is a failure
run_np() { local np=$1; shift; timeout 120 "$MPIEXEC" --oversubscribe -n "$np" "$@"; }
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
if grep -q '^SX_SANITIZE:BOOL=ON' "$BIN/CMakeCache.txt" 2>/dev/null; then
    SX_SAN_FLAGS="-fsanitize=address,undefined"
    SX_SAN_ENV=(env "LD_PRELOAD=$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
        "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
fi
