! fortran_export.f90 - example: a Fortran code (use mpi_f08) exports its profiler run
!
! What a Fortran application does at the end of its run, once its profiler has
! closed the HDF5 file: one collective call over its communicator.
!
! Usage: mpirun -n 2 example_fortran_export IN.h5 OUT.json[.gz] [KEY=VALUE | KEY ...]
! with the command's long option names as keys, e.g. indent=2 gzip-level=9
! include=solve summary. Rank 0 prints one line; the exit status is 0 on
! success, 1 on a failure (every rank agrees), 2 on a usage error.
program fortran_export
    use, intrinsic :: iso_fortran_env, only: error_unit
    use mpi_f08
    use scope_export
    implicit none
    type(sx_args) :: opts
    character(len=4096) :: input, output, arg
    character(len=1100) :: msg
    integer :: rank, status, i, eq, nargs, rc

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    nargs = command_argument_count()
    if (nargs < 2) then
        if (rank == 0) write (error_unit, "(a)") &
            "usage: example_fortran_export IN.h5 OUT.json[.gz] [KEY=VALUE | KEY ...]"
        call MPI_Finalize()
        stop 2
    end if
    call get_command_argument(1, input)
    call get_command_argument(2, output)

    ! Options by name: a bad key or value is a usage error on every rank alike.
    status = SX_OK
    do i = 3, nargs
        call get_command_argument(i, arg)
        eq = index(arg, "=")
        if (eq == 0) then
            status = sx_args_set_f(opts, arg, "1", msg) ! a switch, such as summary
        else
            status = sx_args_set_f(opts, arg(:eq - 1), arg(eq + 1:), msg)
        end if
        if (status /= SX_OK) exit
    end do

    ! NOTE: collective. Every rank gets the same status and message.
    if (status == SX_OK) status = sx_export_f(MPI_COMM_WORLD, input, output, opts, msg)
    if (rank == 0) then
        if (status == SX_OK) then
            write (*, "(a)") "exported "//trim(input)//" to "//trim(output)
        else
            write (error_unit, "(a)") "export failed: "//trim(msg)//" ("// &
                sx_strerror_f(status)//")"
        end if
    end if
    call sx_args_free_f(opts)
    call MPI_Finalize()
    rc = 0
    if (status == SX_ERR_USAGE) then
        rc = 2
    else if (status /= SX_OK) then
        rc = 1
    end if
    if (rc == 1) stop 1
    if (rc == 2) stop 2
end program fortran_export
