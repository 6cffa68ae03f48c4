#!/usr/bin/env bash
# demo.sh - install, build, and export the bundled example run with 2 MPI ranks
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
BUILD_DIR=${BUILD_DIR:-$top/build} "$top/scripts/build.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=${1:-$top/out}
mpiexec --oversubscribe -n 2 "${BUILD_DIR:-$top/build}/scope-export" export \
    "$top/examples/data/example_run.h5" -o "$out/example_run.json"
mpiexec --oversubscribe -n 2 "${BUILD_DIR:-$top/build}/scope-export" export \
    "$top/examples/data/example_run.h5" -o "$out/example_run.json.gz"
echo "first 400 bytes of $out/example_run.json:"
head -c 400 "$out/example_run.json"
echo
