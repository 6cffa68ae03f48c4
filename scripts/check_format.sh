#!/usr/bin/env bash
# check_format.sh - every C file is as clang-format (.clang-format) writes it
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check_format: clang-format missing"; exit 1; }
bad=0
for f in $(git ls-files '*.c' '*.h'); do
    if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
        echo "check_format: $f is not formatted (clang-format -i $f)"
        bad=1
    fi
done
[ "$bad" -eq 0 ] && echo "check_format: all files formatted"
exit "$bad"
