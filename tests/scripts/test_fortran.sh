#!/usr/bin/env bash
# test_fortran.sh - the Fortran module under mpirun -n 2: the example (use mpi_f08) and a
# `use mpi` program on a split communicator export scope-profiler's text, with options
# by name; a failure is one line on rank 0 and the same exit status on every rank
. "$(dirname "$0")/lib.sh"

EX="$BIN/example_fortran_export"
if [ ! -x "$EX" ]; then
    if command -v gfortran >/dev/null && command -v mpif90 >/dev/null; then
        echo "FAIL: gfortran and mpif90 are here but $EX was not built" >&2
        exit 1
    fi
    echo "skip: no Fortran compiler (gfortran, see scripts/setup.sh): module not built"
    exit 77
fi
G="$SHARED/golden"

# the example, use mpi_f08
check() { # case golden out [options...]
    local c=$1 want=$2 out=$3
    shift 3
    if run_np 2 "$EX" "$G/$c/run.h5" "$out" "$@" >"$TMP/ex.out" 2>"$TMP/ex.err"; then
        "$CMP" "$out" "$G/$c/$want" && ok || bad "example $c $*: text differs"
        [ "$(cat "$TMP/ex.out")" = "exported $G/$c/run.h5 to $out" ] && ok ||
            bad "example $c: stdout: $(cat "$TMP/ex.out")"
    else
        bad "example $c $* failed: $(cat "$TMP/ex.err")"
    fi
}
check mpi4_parallel run.json "$TMP/m.json.gz"
check basic_nested run.indent2.json "$TMP/i2.json" indent=2 block-size=2048
check basic_nested run.summary.json "$TMP/s.json.gz" summary gzip-level=9

run_np 2 "$EX" "$TMP/missing.h5" "$TMP/x.json" >"$TMP/ex.out" 2>"$TMP/ex.err"
rc=$?
[ "$rc" -eq 1 ] && ok || bad "missing input: exit $rc, not 1"
[ "$(grep -c '^export failed: .*missing.h5.*\[rank 0' "$TMP/ex.err")" -eq 1 ] && ok ||
    bad "missing input: not one error line naming the file and rank: $(cat "$TMP/ex.err")"
run_np 2 "$EX" "$G/basic_nested/run.h5" "$TMP/x.json" ranks=1- >/dev/null 2>"$TMP/ex.err"
rc=$?
[ "$rc" -eq 2 ] && grep -q 'option ranks takes' "$TMP/ex.err" && ok ||
    bad "bad option: exit $rc: $(cat "$TMP/ex.err")"
[ ! -e "$TMP/x.json" ] && ok || bad "a failed export left its output"

# a `use mpi` code, with its own communicator, built against the build tree
cat >"$TMP/use_mpi.f90" <<'F90'
program use_mpi
    use mpi
    use scope_export
    implicit none
    integer :: ierr, rank, size, comm, status
    type(sx_args) :: opts
    character(len=4096) :: input, output
    character(len=1100) :: msg
    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
    call MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, comm, ierr)
    call get_command_argument(1, input)
    call get_command_argument(2, output)
    status = sx_args_set_f(opts, "include", "compute")
    if (status == SX_OK) status = sx_args_set_f(opts, "include", "rank[12]")
    if (status == SX_OK) status = sx_args_set_f(opts, "ranks", "1-3")
    if (status == SX_OK) status = sx_export_f(comm, input, output, opts, msg)
    if (status /= SX_OK .and. rank == 0) print "(a)", trim(msg)
    call sx_args_free_f(opts)
    call MPI_Comm_free(comm, ierr)
    call MPI_Finalize(ierr)
    if (status /= SX_OK) stop 1
end program use_mpi
F90
if mpif90 $SX_SAN_FLAGS -o "$TMP/use_mpi" "$TMP/use_mpi.f90" -I"$BIN/fortran" -L"$BIN" \
    -lscope_export_fortran -Wl,-rpath,"$BIN" 2>"$TMP/cc.err"; then
    run_np 2 "$TMP/use_mpi" "$G/mpi4_parallel/run.h5" "$TMP/u.json.gz" >"$TMP/u.out" 2>&1 &&
        "$X" export "$G/mpi4_parallel/run.h5" -o "$TMP/u1.json" -q --include compute \
            --include 'rank[12]' --ranks 1-3 &&
        gzip -dc "$TMP/u.json.gz" | cmp - "$TMP/u1.json" && ok ||
        bad "use mpi: differs from the command's export: $(cat "$TMP/u.out")"
else
    bad "use mpi program does not build: $(cat "$TMP/cc.err")"
fi
finish
