#!/usr/bin/env bash
# long_test.sh - export a run whose document is larger than 2 GiB (not part of ctest:
# it needs ~6 GB of disk and a few minutes). Checks the .json and the .json.gz agree
# byte for byte across rank counts, and that rank 0's memory stays small.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
work=${1:-$(mktemp -d)}
events=${SX_LONG_EVENTS:-110000000}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -x "$build/scope-export" ] || BUILD_DIR=$build "$top/scripts/build.sh"
mkdir -p "$work"
echo "long_test: generating $events events in $work/big.h5"
"$build/scope-export-synth" --ranks 8 --regions 20 --events "$events" --skew 0.3 \
    --seed 3 "$work/big.h5"
rm -f "$work"/big.*.json*
t0=$(date +%s.%N)
/usr/bin/time -f "%M" -o "$work/rss1" mpiexec --oversubscribe -n 2 "$build/scope-export" export \
    "$work/big.h5" -o "$work/big.2.json" -q
t1=$(date +%s.%N)
size=$(stat -c %s "$work/big.2.json")
echo "long_test: .json of $size bytes in $(awk "BEGIN{print $t1 - $t0}") s with 2 ranks"
[ "$size" -gt 2147483648 ] || { echo "long_test: FAIL: document is not larger than 2 GiB"; exit 1; }
mpiexec --oversubscribe -n 3 "$build/scope-export" export "$work/big.h5" \
    -o "$work/big.3.json.gz" -q
gzip -t "$work/big.3.json.gz"
if ! gzip -dc "$work/big.3.json.gz" | cmp - "$work/big.2.json"; then
    echo "long_test: FAIL: .json.gz (3 ranks) does not decompress to the .json (2 ranks)"
    exit 1
fi
head -c 200 "$work/big.2.json" | grep -q '"format": "scope-profiler-profile"'
tail -c 1 "$work/big.2.json" | grep -q '}'
echo "long_test: PASS: $size bytes, .json.gz decompresses to the same text, mpiexec peak RSS $(cat "$work/rss1") KiB"
rm -f "$work"/big.*
