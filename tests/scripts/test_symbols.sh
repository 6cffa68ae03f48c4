#!/usr/bin/env bash
# test_symbols.sh - the installed libscope_export.a and libscope_export.so make global
# exactly the functions the public header declares with SX_API: no internal sx_ name and
# no h5_ name (HDF5's own tools and tests use that prefix). A program that defines a name
# of the library's internals links with the static library; with the internal one (every
# function global, for the command and the tests) it must not, which shows the check can
# see a clash. And the header's version macros agree with sx_version(), and a dropped
# status is a warning.
. "$(dirname "$0")/lib.sh"

P="$TMP/prefix"
if ! cmake --install "$BIN" --prefix "$P" >"$TMP/install.log" 2>&1; then
    echo "FAIL: cmake --install: $(cat "$TMP/install.log")" >&2
    exit 1
fi
H="$P/include/scope_export.h"
A="$P/lib/libscope_export.a"
SO="$P/lib/libscope_export.so"
INTERNAL="$BIN/libscope_export_internal.a"
for f in "$H" "$A" "$SO" "$INTERNAL"; do
    [ -e "$f" ] || { echo "FAIL: $f is not there" >&2; exit 1; }
done
sx_api_names "$H" >"$TMP/declared"
[ "$(wc -l <"$TMP/declared")" -ge 10 ] && ok ||
    bad "the header's SX_API declarations are not found: $(cat "$TMP/declared")"

# globals NM_OUTPUT: the names of the defined global symbols in nm's output, sorted
globals() { awk 'NF == 3 && $2 ~ /^[A-Z]$/ { print $3 }' "$1" | sort -u; }
nm -g --defined-only "$A" >"$TMP/a.nm" 2>&1 || bad "nm $A: $(cat "$TMP/a.nm")"
nm -D --defined-only "$SO" >"$TMP/so.nm" 2>&1 || bad "nm -D $SO: $(cat "$TMP/so.nm")"
nm -g --defined-only "$INTERNAL" >"$TMP/internal.nm" 2>&1 || bad "nm $INTERNAL"
globals "$TMP/a.nm" >"$TMP/a.globals"
globals "$TMP/so.nm" >"$TMP/so.globals"
globals "$TMP/internal.nm" >"$TMP/internal.globals"
echo "global symbols: libscope_export.a $(wc -l <"$TMP/a.globals")," \
    "libscope_export.so $(wc -l <"$TMP/so.globals"), the internal library" \
    "$(wc -l <"$TMP/internal.globals"), the header declares $(wc -l <"$TMP/declared")"
for lib in a so; do
    extra=$(comm -13 "$TMP/declared" "$TMP/$lib.globals" | tr '\n' ' ')
    missing=$(comm -23 "$TMP/declared" "$TMP/$lib.globals" | tr '\n' ' ')
    [ -z "$extra" ] && ok || bad "libscope_export.$lib: global but not in the header: $extra"
    [ -z "$missing" ] && ok || bad "libscope_export.$lib: declared but not global: $missing"
    ! grep -q '^h5_' "$TMP/$lib.globals" && ok ||
        bad "libscope_export.$lib: global h5_ names: $(grep '^h5_' "$TMP/$lib.globals" | tr '\n' ' ')"
done

# the internal library names no h5_ function either: the command and the tests link it
# with HDF5
! grep -q '^h5_' "$TMP/internal.globals" && ok ||
    bad "the internal library: global h5_ names: $(grep '^h5_' "$TMP/internal.globals" | tr '\n' ' ')"

# A user's program with a function named as one of the library's internal ones, linked
# statically: one of the object that defines sx_version() in the internal library, so that
# the link pulls that object in there.
# (nm -A: "ARCHIVE:MEMBER:ADDRESS TYPE NAME")
nm -A -g --defined-only "$INTERNAL" | awk 'NF == 3 { sub(/:[^:]*$/, "", $1); print }' \
    >"$TMP/internal.members"
member=$(awk '$3 == "sx_version" { print $1; exit }' "$TMP/internal.members")
inner=$(awk -v m="$member" '$1 == m && $2 ~ /^[TDBR]$/ && $3 ~ /^sx_/ { print $3 }' \
    "$TMP/internal.members" |
    sort | comm -23 - "$TMP/declared" | head -1)
cat >"$TMP/clash.c" <<EOF
#include <scope_export.h>
#include <stdio.h>
void $inner(void);
void $inner(void) { puts("the program's own $inner"); }
int main(void) {
    $inner();
    puts(sx_version());
    return sx_has_isal() < 0;
}
EOF
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
static_libs=$(pkg-config --static --libs scope_export)
cc_static() { # OUTPUT ARCHIVE: the clash program against ARCHIVE, statically
    mpicc $SX_SAN_FLAGS -o "$1" "$TMP/clash.c" -I"$P/include" "$2" \
        ${static_libs//-lscope_export/} >"$TMP/cc.log" 2>&1
}
if [ -z "$inner" ]; then
    bad "the internal library has no internal global function to test a clash with"
elif cc_static "$TMP/clash" "$A"; then
    "$TMP/clash" | grep -qx "the program's own $inner" && ok ||
        bad "the program calling its own $inner did not run as written"
    # the control: the same program against the internal library is a clash
    ! cc_static "$TMP/clash_internal" "$INTERNAL" && grep -q "multiple definition" "$TMP/cc.log" &&
        ok || bad "a program defining $inner links with the internal library too (the test cannot see a clash)"
else
    bad "a program defining its own $inner does not link with libscope_export.a: $(tail -5 "$TMP/cc.log")"
fi

# The version macros: SX_VERSION_NUMBER from the parts, the string sx_version() returns
cat >"$TMP/version.c" <<'EOF'
#include <scope_export.h>
#include <stdio.h>
#include <string.h>
#if SX_VERSION_NUMBER != SX_VERSION_MAJOR * 10000 + SX_VERSION_MINOR * 100 + SX_VERSION_PATCH
#error "SX_VERSION_NUMBER is not major * 10000 + minor * 100 + patch"
#endif
int main(void) {
    char s[64];
    snprintf(s, sizeof s, "%d.%d.%d", SX_VERSION_NUMBER / 10000, SX_VERSION_NUMBER / 100 % 100,
             SX_VERSION_NUMBER % 100);
    printf("%s\n", s);
    return strcmp(s, SX_VERSION_STRING) != 0 || strcmp(sx_version(), SX_VERSION_STRING) != 0;
}
EOF
if mpicc $SX_SAN_FLAGS -o "$TMP/version" "$TMP/version.c" -I"$P/include" -L"$P/lib" \
    -lscope_export >"$TMP/cc.log" 2>&1; then
    v=$(LD_LIBRARY_PATH="$P/lib" "$TMP/version") && ok ||
        bad "SX_VERSION_NUMBER, SX_VERSION_STRING and sx_version() disagree: $v"
    [ "$v" = "$(pkg-config --modversion scope_export)" ] && ok ||
        bad "the header's version $v is not the package's $(pkg-config --modversion scope_export)"
else
    bad "the version program does not build: $(tail -5 "$TMP/cc.log")"
fi

# SX_WARN_UNUSED: a status dropped is a warning (an error with -Werror)
cat >"$TMP/dropped.c" <<'EOF'
#include <scope_export.h>
int main(void) {
    sx_validate("run.h5", NULL);
    return 0;
}
EOF
! mpicc -c -Werror -o "$TMP/dropped.o" "$TMP/dropped.c" -I"$P/include" >"$TMP/cc.log" 2>&1 &&
    grep -q 'unused-result' "$TMP/cc.log" && ok ||
    bad "a dropped status of sx_validate is no warning: $(cat "$TMP/cc.log")"
finish
