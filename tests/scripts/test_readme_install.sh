#!/usr/bin/env bash
# test_readme_install.sh - the README's lines, as written, in a clean environment: its
# install and `export` lines (HOME a new directory, so "$HOME/.local" is a new prefix),
# then its lines that build and run the installed C and Fortran examples with pkg-config,
# the CMake project of its `cmake` block with find_package, and its Python block under
# mpirun. No variable but PATH, HOME and what the README tells root to set comes in.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
R="$top/README.md"
if [ -n "$SX_SAN_FLAGS" ]; then # its programs would need the sanitizers' runtime flags
    echo "skip: a sanitizer build (test_install covers the installation there)"
    exit 77
fi
PY=$(sx_python)
if [ "$PY" != /usr/bin/python3 ] || ! command -v gfortran >/dev/null; then
    echo "skip: no /usr/bin/python3 with mpi4py or no gfortran: the README's lines need both"
    exit 77
fi

# block PHRASE: the indented lines of the first code block after the line holding PHRASE
block() {
    awk -v p="$1" 'f && /^    / { print substr($0, 5); b = 1; next }
                   f && b { exit }
                   !f && index($0, p) { f = 1 }' "$R"
}
# fenced LANG: the lines of the first ```LANG block
fenced() { awk -v l="$1" 'f && /^```/ { exit } f { print } $0 == "```" l { f = 1 }' "$R"; }

block "To install the" >"$TMP/install.sh"
block "After the install and" >"$TMP/build.sh"
block "Those three lines alone" >"$TMP/run_py.sh"
fenced cmake >"$TMP/CMakeLists.txt"
# the one-line build commands of the text, for a program app.c or app.f90
grep -o '`mpicc app\.c [^`]*`' "$R" | head -1 | tr -d '`' >"$TMP/cc_line"
grep -o '`mpif90 app\.f90 [^`]*`' "$R" | head -1 | tr -d '`' >"$TMP/fc_line"
[ -s "$TMP/cc_line" ] && [ -s "$TMP/fc_line" ] && ok ||
    bad "the README's 'mpicc app.c ...' and 'mpif90 app.f90 ...' lines are not found"
fenced python >"$TMP/app.py"
grep -q '^cmake --install build' "$TMP/install.sh" && grep -q PKG_CONFIG_PATH "$TMP/install.sh" &&
    grep -q CMAKE_PREFIX_PATH "$TMP/install.sh" && ok ||
    bad "the README's install lines are not found, or set no PKG_CONFIG_PATH and CMAKE_PREFIX_PATH: $(cat "$TMP/install.sh")"
for w in 'mpicc ' 'mpif90 ' 'cmake -S' 'native_finalize'; do
    grep -qF -- "$w" "$TMP/build.sh" && ok || bad "the README's build lines have no '$w'"
done
grep -q find_package "$TMP/CMakeLists.txt" && grep -q scope_export "$TMP/app.py" &&
    grep -q 'python3 app.py' "$TMP/run_py.sh" && ok ||
    bad "the README's cmake and python blocks and the line that runs the latter are not found"

# The working directory: the build tree as `build` (the README's install line names it),
# the CMake block, the Python block, a run.h5 and a native run's ranks/ as the text says.
w="$TMP/work"
mkdir -p "$w" "$TMP/home"
ln -s "$BIN" "$w/build"
cp "$TMP/CMakeLists.txt" "$TMP/app.py" "$w/"
cp "$SHARED/golden/mpi4_parallel/run.h5" "$w/run.h5"
cp -r "$SHARED/golden-native/h5_2ranks_basic/ranks" "$w/ranks"
{
    echo 'set -ex'
    echo "cd '$w'"
    cat "$TMP/install.sh" "$TMP/build.sh" "$TMP/run_py.sh"
    echo 'mkdir c f && cp "$ex/native_finalize.c" c/app.c && cp "$ex/fortran_export.f90" f/app.f90'
    echo "cd c && $(cat "$TMP/cc_line") && cd .."
    echo "cd f && $(cat "$TMP/fc_line") && cd .."
} >"$TMP/readme.sh"
# As root (the tests run so), Open MPI needs what the README says; more ranks than cores
# need --oversubscribe, here from the environment.
rootenv=()
[ "$(id -u)" = 0 ] && rootenv=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
if env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$TMP/home" LANG=C.UTF-8 "${rootenv[@]}" \
    OMPI_MCA_rmaps_base_oversubscribe=1 timeout -k 5 600 bash "$TMP/readme.sh" \
    >"$TMP/readme.log" 2>&1 </dev/null; then
    ok
else
    bad "the README's lines fail as written; the last of them: $(tail -25 "$TMP/readme.log")"
fi

# What they made: from the new prefix, documents that validate and agree
P="$TMP/home/.local"
V="$P/bin/scope-export"
for f in out/run.json.gz out/fortran.json.gz native.json.gz profile.json.gz; do
    [ -s "$w/$f" ] && "$V" validate "$w/$f" >/dev/null 2>&1 && ok || bad "$f: missing or invalid"
done
cmp -s <(zcat "$w/out/run.json.gz" 2>/dev/null) <(zcat "$w/out/fortran.json.gz" 2>/dev/null) && ok ||
    bad "the Fortran example's document differs from the C example's of the same run"
for p in finalize_export fortran_export build-app/native_finalize c/a.out f/a.out; do
    [ -x "$w/$p" ] && LD_LIBRARY_PATH="$P/lib" ldd "$w/$p" | grep -q "libscope_export.so.* => $P/lib/" && ok ||
        bad "$p does not use the new prefix's library: $(LD_LIBRARY_PATH="$P/lib" ldd "$w/$p" 2>&1 | grep scope_export)"
done
finish
