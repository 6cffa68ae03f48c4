#!/usr/bin/env bash
# test_install.sh - cmake --install into a temporary prefix, then from the prefix alone:
# the command; a C program built with `pkg-config --cflags --libs scope_export` and mpicc
# (and the static library with --static); CMake's find_package, shared and static; the
# Fortran example built with `pkg-config scope_export_fortran` and mpif90; the Python
# module on PYTHONPATH; each export under mpirun -n 2 equal to scope-profiler's text;
# and the manual page rendered by man -l
. "$(dirname "$0")/lib.sh"
sx_normal_build_only "the installed layout and its consumers"

P="$TMP/prefix"
G="$SHARED/golden"
skipped=""
skip() { echo "skip: $*"; skipped="$skipped; $*"; }
if ! cmake --install "$BIN" --prefix "$P" >"$TMP/install.log" 2>&1; then
    echo "FAIL: cmake --install: $(cat "$TMP/install.log")" >&2
    exit 1
fi
# nothing of the build tree from here on
export PATH="$P/bin:$PATH" PKG_CONFIG_PATH="$P/lib/pkgconfig" LD_LIBRARY_PATH="$P/lib"
unset SCOPE_EXPORT_LIBRARY PYTHONPATH CMAKE_PREFIX_PATH
cd "$TMP" || exit 1
ex="$P/share/doc/scope_export/examples"

# What is installed, and what is not
for f in bin/scope-export include/scope_export.h \
    lib/libscope_export.a lib/libscope_export.so lib/pkgconfig/scope_export.pc \
    lib/cmake/scope_export/scope_exportConfig.cmake share/man/man1/scope-export.1 \
    lib/python3/dist-packages/scope_export/__init__.py "${ex#"$P/"}/finalize_export.c"; do
    [ -e "$P/$f" ] && ok || bad "not installed: $f"
done
# the generators of test input only when asked for, the damage tool never
for t in scope-export-synth scope-export-native-synth scope-export-damage; do
    [ ! -e "$P/bin/$t" ] && ok || bad "$t is installed by a plain cmake --install"
done
if cmake --install "$BIN" --prefix "$TMP/tools" --component tools >"$TMP/tools.log" 2>&1; then
    for t in scope-export-synth scope-export-native-synth; do
        "$TMP/tools/bin/$t" --help | grep -q 'generator of test and benchmark input' && ok ||
            bad "--component tools: $t is not installed or its --help does not say what it is"
    done
    [ "$(find "$TMP/tools" -type f | wc -l)" = 2 ] && ok ||
        bad "--component tools installs more than the two generators: $(find "$TMP/tools" -type f)"
else
    bad "cmake --install --component tools: $(cat "$TMP/tools.log")"
fi
soname=$(readelf -d "$P/lib/libscope_export.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[[ "$soname" =~ ^libscope_export\.so\.[0-9]+(\.[0-9]+)?$ ]] && [ -e "$P/lib/$soname" ] && ok ||
    bad "SONAME '$soname' is not versioned or not installed"
# exactly the functions the header declares are exported (a declaration without SX_API
# is hidden, and missing here)
nm -D --defined-only "$P/lib/libscope_export.so" | awk '$2 ~ /^[TDBR]$/ {print $3}' |
    sort >"$TMP/exported"
sx_api_names "$P/include/scope_export.h" >"$TMP/declared"
[ -s "$TMP/declared" ] && cmp -s "$TMP/exported" "$TMP/declared" && ok ||
    bad "exported symbols differ from the header's: $(diff "$TMP/declared" "$TMP/exported" | tr '\n' ' ')"

# The command
[ "$(command -v scope-export)" = "$P/bin/scope-export" ] && ok || bad "scope-export is not the prefix's"
scope-export --version | grep -q '^scope-export [0-9]' && ok || bad "--version"
scope-export export "$G/basic_nested/run.h5" -o "$TMP/cmd.json.gz" -q &&
    "$CMP" "$TMP/cmd.json.gz" "$G/basic_nested/run.json" && ok || bad "installed command, one process"
run_np 2 scope-export export "$G/mpi4_parallel/run.h5" -o "$TMP/cmd2.json" -q &&
    "$CMP" "$TMP/cmd2.json" "$G/mpi4_parallel/run.json" && ok || bad "installed command, -n 2"

# A C program: plain pkg-config and mpicc, the shared library and nothing more
cat >"$TMP/consumer.c" <<'EOF'
#include <scope_export.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    struct sx_args *a = sx_args_new();
    struct sx_error e;
    enum sx_status st = sx_args_set(a, "block-size", "2048", &e);
    if (st == SX_OK)
        st = sx_export_args(MPI_COMM_WORLD, argv[1], argv[2], a, &e);
    if (st != SX_OK)
        fprintf(stderr, "consumer: %s (rank %d)\n", e.text, e.rank);
    sx_args_free(a);
    MPI_Finalize();
    return st == SX_OK ? 0 : 1;
}
EOF
if mpicc $SX_SAN_FLAGS -o consumer consumer.c $(pkg-config --cflags --libs scope_export) 2>"$TMP/cc.err"; then
    ok
    ldd ./consumer | grep -q "libscope_export.so.* => $P/lib/" && ok ||
        bad "the C program does not use the prefix's shared library: $(ldd ./consumer)"
    ! readelf -d ./consumer | grep -qE 'NEEDED.*(hdf5|jansson|pcre2|libz|isal)' && ok ||
        bad "the C program links the library's private dependencies itself"
    run_np 2 ./consumer "$G/mpi4_parallel/run.h5" "$TMP/c.json.gz" &&
        "$CMP" "$TMP/c.json.gz" "$G/mpi4_parallel/run.json" && ok || bad "C program, -n 2"
else
    bad "mpicc with pkg-config --cflags --libs scope_export: $(cat "$TMP/cc.err")"
fi
# --static: everything the archive needs
static_libs=$(pkg-config --static --libs scope_export | sed 's/-lscope_export /-l:libscope_export.a /')
if mpicc $SX_SAN_FLAGS -o consumer_static consumer.c $(pkg-config --cflags scope_export) $static_libs \
    2>"$TMP/cc.err"; then
    ! ldd ./consumer_static | grep -q libscope_export && ok || bad "--static: still the .so"
    run_np 2 ./consumer_static "$G/basic_nested/run.h5" "$TMP/cs.json" &&
        "$CMP" "$TMP/cs.json" "$G/basic_nested/run.json" && ok || bad "static C program, -n 2"
else
    bad "pkg-config --static does not link the static library: $(cat "$TMP/cc.err")"
fi

# CMake: find_package(scope_export), shared by default, static on request
mkdir -p "$TMP/cm"
cat >"$TMP/cm/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.18)
project(consumer C)
if(WANT_STATIC)
  find_package(scope_export REQUIRED COMPONENTS static)
else()
  find_package(scope_export REQUIRED)
endif()
add_executable(consumer $TMP/consumer.c)
target_link_libraries(consumer PRIVATE scope_export::scope_export)
EOF
for kind in shared static; do
    w=OFF
    [ "$kind" = static ] && w=ON
    if cmake -S "$TMP/cm" -B "$TMP/cm/$kind" -DCMAKE_PREFIX_PATH="$P" -DWANT_STATIC=$w \
        -DCMAKE_C_FLAGS="$SX_SAN_FLAGS" -DCMAKE_EXE_LINKER_FLAGS="$SX_SAN_FLAGS" \
        >"$TMP/cm.log" 2>&1 && cmake --build "$TMP/cm/$kind" >>"$TMP/cm.log" 2>&1; then
        n=$(ldd "$TMP/cm/$kind/consumer" | grep -c libscope_export)
        [ "$kind:$n" = shared:1 ] || [ "$kind:$n" = static:0 ] && ok ||
            bad "find_package $kind: linked the wrong library"
        run_np 2 "$TMP/cm/$kind/consumer" "$G/basic_nested/run.h5" "$TMP/cm.$kind.json" &&
            "$CMP" "$TMP/cm.$kind.json" "$G/basic_nested/run.json" && ok ||
            bad "find_package $kind program, -n 2"
    else
        bad "find_package $kind: $(tail -20 "$TMP/cm.log")"
    fi
done

# Fortran: the installed example, built with pkg-config scope_export_fortran and mpif90
if [ ! -e "$P/lib/pkgconfig/scope_export_fortran.pc" ]; then
    if command -v gfortran >/dev/null; then
        bad "gfortran is here but the Fortran module is not installed"
    else
        skip "no Fortran compiler (gfortran): the Fortran module is not built"
    fi
elif mpif90 $SX_SAN_FLAGS -o fortran_export "$ex/fortran_export.f90" \
    $(pkg-config --cflags --libs scope_export_fortran) 2>"$TMP/fc.err"; then
    run_np 2 ./fortran_export "$G/basic_nested/run.h5" "$TMP/f.json.gz" indent=2 \
        >"$TMP/f.out" 2>&1 && "$CMP" "$TMP/f.json.gz" "$G/basic_nested/run.indent2.json" &&
        ok || bad "Fortran example, -n 2: $(cat "$TMP/f.out")"
else
    bad "mpif90 with pkg-config scope_export_fortran: $(cat "$TMP/fc.err")"
fi
# and find_package(scope_export COMPONENTS fortran) in a project of Fortran alone
if [ -e "$P/lib/pkgconfig/scope_export_fortran.pc" ]; then
    mkdir -p "$TMP/fcm"
    cat >"$TMP/fcm/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.18)
project(fconsumer Fortran)
find_package(scope_export REQUIRED COMPONENTS fortran)
add_executable(fortran_export $ex/fortran_export.f90)
target_link_libraries(fortran_export PRIVATE scope_export::scope_export_fortran)
EOF
    if cmake -S "$TMP/fcm" -B "$TMP/fcm/b" -DCMAKE_PREFIX_PATH="$P" \
        -DCMAKE_Fortran_FLAGS="$SX_SAN_FLAGS" -DCMAKE_EXE_LINKER_FLAGS="$SX_SAN_FLAGS" \
        >"$TMP/fcm.log" 2>&1 && cmake --build "$TMP/fcm/b" >>"$TMP/fcm.log" 2>&1; then
        run_np 2 "$TMP/fcm/b/fortran_export" "$G/basic_nested/run.h5" "$TMP/fcm.json" \
            summary >"$TMP/fcm.out" 2>&1 &&
            "$CMP" "$TMP/fcm.json" "$G/basic_nested/run.summary.json" && ok ||
            bad "find_package fortran program, -n 2: $(cat "$TMP/fcm.out")"
    else
        bad "find_package(scope_export COMPONENTS fortran): $(tail -20 "$TMP/fcm.log")"
    fi
fi

# Python: the prefix's site directory on PYTHONPATH, mpi4py's COMM_WORLD
PY=$(sx_python)
if [ -z "$PY" ]; then
    skip "no python3 with mpi4py (python3-mpi4py)"
else
    cat >"$TMP/finalize.py" <<'EOF'
import sys
from mpi4py import MPI
import scope_export
assert scope_export._lib._name.startswith(sys.argv[3]), scope_export._lib._name
scope_export.export(MPI.COMM_WORLD, sys.argv[1], sys.argv[2], gzip_level=9)
EOF
    PYTHONPATH="$P/lib/python3/dist-packages" run_np 2 "${SX_SAN_ENV[@]}" "$PY" "$TMP/finalize.py" \
        "$G/mpi4_parallel/run.h5" "$TMP/py.json.gz" "$P/" >"$TMP/py.out" 2>&1 &&
        "$CMP" "$TMP/py.json.gz" "$G/mpi4_parallel/run.json" && ok ||
        bad "Python module, -n 2: $(cat "$TMP/py.out")"
fi

# The manual page
if command -v man >/dev/null; then
    LC_ALL=C man -l "$P/share/man/man1/scope-export.1" 2>"$TMP/man.err" | col -b >"$TMP/man.txt"
    grep -q '^SCOPE-EXPORT(1)' "$TMP/man.txt" && grep -q -- '--gzip-level N' "$TMP/man.txt" &&
        [ ! -s "$TMP/man.err" ] && ok || bad "man -l: $(cat "$TMP/man.err")"
    LC_ALL=C man -M "$P/share/man" scope-export 2>/dev/null | grep -q '^NAME' && ok ||
        bad "man -M PREFIX/share/man scope-export finds no page"
else
    skip "no man command (man-db)"
fi

finish || exit 1
if [ -n "$skipped" ]; then
    echo "skip: the rest passed, but${skipped#;}"
    exit 77
fi
