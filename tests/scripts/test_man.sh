#!/usr/bin/env bash
# test_man.sh - the manual page renders without warnings, and it and --help agree: every
# option --help lists is in the page's OPTIONS and every option there is in --help; every
# command of the usage is described
. "$(dirname "$0")/lib.sh"

PAGE="$BIN/scope-export.1"
[ -f "$PAGE" ] || { echo "FAIL: $PAGE is not configured" >&2; exit 1; }
if ! command -v man >/dev/null; then
    echo "skip: no man command (Debian: man-db, see scripts/setup.sh)"
    exit 77
fi

LC_ALL=C MANWIDTH=90 man --warnings -l "$PAGE" 2>"$TMP/man.err" | col -b >"$TMP/man.txt"
[ -s "$TMP/man.txt" ] && ok || bad "man -l rendered nothing"
[ ! -s "$TMP/man.err" ] && ok || bad "man -l warns: $(cat "$TMP/man.err")"
for h in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS "EXIT STATUS" ENVIRONMENT EXAMPLES; do
    grep -q "^$h\$" "$TMP/man.txt" && ok || bad "the page has no $h section"
done

"$X" --help >"$TMP/help.txt" 2>&1 || bad "--help failed"
# options: a dash or two, a letter, then letters, digits and dashes
opts() { grep -oE -- '(^|[^A-Za-z0-9-])--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^[^-]*//' | sort -u; }
opts <"$TMP/help.txt" >"$TMP/help.opts"
sed -n '/^OPTIONS$/,/^EXIT STATUS$/p' "$TMP/man.txt" | opts >"$TMP/man.opts"
[ "$(wc -l <"$TMP/help.opts")" -ge 15 ] && ok ||
    bad "found only $(wc -l <"$TMP/help.opts") options in --help"
missing=$(comm -23 "$TMP/help.opts" "$TMP/man.opts" | tr '\n' ' ')
[ -z "$missing" ] && ok || bad "--help lists options the man page does not: $missing"
extra=$(comm -13 "$TMP/help.opts" "$TMP/man.opts" | tr '\n' ' ')
[ -z "$extra" ] && ok || bad "the man page lists options --help does not: $extra"

# the commands of the usage lines, each described in COMMANDS
sed -n '/^COMMANDS$/,/^OPTIONS$/p' "$TMP/man.txt" >"$TMP/man.cmds"
for c in $(grep -oE '^ *(usage:)? +scope-export [a-z]+ ' "$TMP/help.txt" | awk '{print $NF}'); do
    grep -qE "^ +$c( |\$)" "$TMP/man.cmds" && ok || bad "command $c is not in COMMANDS"
done
grep -q 'IN.h5 -o OUT' "$TMP/man.cmds" && ok || bad "the bare form is not in COMMANDS"
# the exit statuses --help gives
for s in 0 1 2; do
    sed -n '/^EXIT STATUS$/,/^ENVIRONMENT$/p' "$TMP/man.txt" | grep -qE "^ +$s( |\$)" && ok ||
        bad "exit status $s is not described"
done
grep -q 'SCOPE_EXPORT_MPI' "$TMP/help.txt" && sed -n '/^ENVIRONMENT$/,/^SIGNALS$/p' \
    "$TMP/man.txt" | grep -q '^ *SCOPE_EXPORT_MPI' && ok || bad "SCOPE_EXPORT_MPI is not in ENVIRONMENT"
finish
