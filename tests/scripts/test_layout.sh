#!/usr/bin/env bash
# test_layout.sh - the README's layout section names every file of the library, the command,
# the bindings, the tools and the tests, and names nothing that is not in the tree
source "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1

# The path column of the layout's indented lines ("src/a.h, .c" and "src/a.h, a.c" name two
# files), one path or glob a line; a name ending in / stands for a whole folder.
awk '/^## Layout/ { on = 1; next } /^## / { on = 0 }
     on && /^    [^ ]/ {
         line = substr($0, 5)
         sub(/  .*/, "", line)             # the description starts after two spaces
         n = split(line, part, /, /)
         dir = part[1]; sub(/[^\/]*$/, "", dir)
         base = part[1]; sub(/^.*\//, "", base); sub(/\.[^.]*$/, "", base)
         print part[1]
         for (i = 2; i <= n; i++)
             print (part[i] ~ /^\./ ? dir base part[i] : dir part[i])
     }' README.md >"$TMP/listed"
[ -s "$TMP/listed" ] || { bad "no layout section found in README.md"; finish; exit; }

# every listed path exists
while read -r p; do
    case $p in
        */) [ -d "$p" ] && ok || bad "README layout names $p, which is not a folder of the tree" ;;
        *) if compgen -G "$p" >/dev/null; then ok; else
               bad "README layout names $p, which is not in the tree"; fi ;;
    esac
done <"$TMP/listed"

# every file of these folders is listed, by its path, a glob or its folder
covered() {
    local f=$1 p
    while read -r p; do
        case $p in
            */) [ "${f#"$p"}" != "$f" ] && return 0 ;;
            *) # shellcheck disable=SC2053
               [[ $f == $p ]] && return 0 ;;
        esac
    done <"$TMP/listed"
    return 1
}
while read -r f; do
    if covered "$f"; then ok; else bad "$f is not in the README's layout section"; fi
done < <({ git ls-files include src tools examples cmake scripts tests 2>/dev/null ||
           find include src tools examples cmake scripts tests -type f; } \
             | grep -E '\.(c|h|in|py|F90|f90|sh|cmake)$' \
             | grep -v -E '^tests/(CMakeLists|fuzz/regressions|fuzz/hdf5_known)')
finish
