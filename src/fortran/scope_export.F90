! scope_export.F90 - the Fortran module scope_export: ISO_C_BINDING over the C API
!
! A profiler's finalize, in a `use mpi` or a `use mpi_f08` code:
!
!     use scope_export
!     type(sx_args) :: opts
!     character(len=600) :: msg
!     status = sx_args_set_f(opts, "gzip-level", "6")
!     status = sx_export_f(MPI_COMM_WORLD, "run.h5", "profile.json.gz", opts, msg)
!     call sx_args_free_f(opts)
!
! sx_export_f is collective over 'comm' (an INTEGER handle or a TYPE(MPI_Comm)),
! returns the same status on every rank (SX_OK is 0) and, given 'message', the
! library's error line (text, failing rank and source) on every rank. Options
! are the command's long option names as keys; see sx_args_set in
! scope_export.h ("format" = "otf2" writes an OTF2 trace archive, as the
! command's --format otf2). The communicator reaches C through MPI_Comm_f2c.
module scope_export
    use, intrinsic :: iso_c_binding, only: c_int, c_char, c_ptr, c_null_ptr, &
                                           c_null_char, c_associated
#ifdef SX_HAVE_MPI_F08
    use mpi_f08, only: MPI_Comm
#endif
    implicit none
    private

    public :: sx_args, sx_export_f, sx_args_set_f, sx_args_free_f, sx_strerror_f

    ! enum sx_status (values never renumbered)
    integer, parameter, public :: SX_OK = 0, SX_ERR_USAGE = 1, SX_ERR_NOT_FOUND = 2, &
        SX_ERR_OPEN = 3, SX_ERR_FORMAT = 4, SX_ERR_UNSUPPORTED = 5, SX_ERR_NOMEM = 6, &
        SX_ERR_IO = 7, SX_ERR_MPI = 8, SX_ERR_VALUE = 9, SX_ERR_INTERNAL = 10, &
        SX_ERR_INTERRUPTED = 11

    integer, parameter :: TEXT_LENGTH = 512 ! SX_ERROR_TEXT_LENGTH, SX_ERROR_SOURCE_LENGTH

    ! struct sx_error
    type, bind(C) :: sx_error_c
        integer(c_int) :: code
        integer(c_int) :: rank
        character(kind=c_char) :: text(TEXT_LENGTH)
        character(kind=c_char) :: source(TEXT_LENGTH)
    end type sx_error_c

    ! Options by name (struct sx_args); created by the first sx_args_set_f,
    ! freed by sx_args_free_f.
    type :: sx_args
        type(c_ptr) :: ptr = c_null_ptr
    end type sx_args

    interface sx_export_f
        module procedure export_int
#ifdef SX_HAVE_MPI_F08
        module procedure export_f08
#endif
    end interface sx_export_f

    interface
        function c_args_new() bind(C, name="sx_args_new") result(a)
            import :: c_ptr
            type(c_ptr) :: a
        end function c_args_new

        subroutine c_args_free(a) bind(C, name="sx_args_free")
            import :: c_ptr
            type(c_ptr), value :: a
        end subroutine c_args_free

        function c_args_set(a, key, val, err) bind(C, name="sx_args_set") result(st)
            import :: c_ptr, c_char, c_int, sx_error_c
            type(c_ptr), value :: a
            character(kind=c_char), intent(in) :: key(*), val(*)
            type(sx_error_c), intent(inout) :: err
            integer(c_int) :: st
        end function c_args_set

        ! 'fcomm' by reference: the MPI_Fint * of sx_export_args_f
        function c_export_args_f(fcomm, input, output, a, err) &
            bind(C, name="sx_export_args_f") result(st)
            import :: c_ptr, c_char, c_int, sx_error_c
            integer(c_int), intent(in) :: fcomm
            character(kind=c_char), intent(in) :: input(*), output(*)
            type(c_ptr), value :: a
            type(sx_error_c), intent(inout) :: err
            integer(c_int) :: st
        end function c_export_args_f

        function c_strerror(st) bind(C, name="sx_strerror") result(s)
            import :: c_int, c_ptr
            integer(c_int), value :: st
            type(c_ptr) :: s
        end function c_strerror
    end interface

contains

    ! Set option 'key' to 'value' (both trimmed) in 'args', creating it on first use.
    ! Returns SX_OK, or SX_ERR_USAGE for an unknown key or a bad value ('message'
    ! says which), or SX_ERR_NOMEM.
    function sx_args_set_f(args, key, value, message) result(status)
        type(sx_args), intent(inout) :: args
        character(len=*), intent(in) :: key, value
        character(len=*), intent(out), optional :: message
        integer :: status
        type(sx_error_c) :: err

        err%code = 0
        err%rank = -1
        err%text = c_null_char
        err%source = c_null_char
        if (.not. c_associated(args%ptr)) args%ptr = c_args_new()
        if (.not. c_associated(args%ptr)) then
            status = SX_ERR_NOMEM
            if (present(message)) message = "out of memory"
            return
        end if
        status = int(c_args_set(args%ptr, trim(key)//c_null_char, &
                                trim(value)//c_null_char, err))
        if (present(message)) call error_line(status, err, message)
    end function sx_args_set_f

    ! Free what 'args' holds; it may be used again afterwards (empty).
    subroutine sx_args_free_f(args)
        type(sx_args), intent(inout) :: args
        call c_args_free(args%ptr)
        args%ptr = c_null_ptr
    end subroutine sx_args_free_f

    ! A short English description of 'status'.
    function sx_strerror_f(status) result(text)
        integer, intent(in) :: status
        character(len=:), allocatable :: text
        character(kind=c_char), pointer :: p(:)
        integer :: n

        call c_f_string_ptr(c_strerror(int(status, c_int)), p, n)
        allocate (character(len=n) :: text)
        text = transfer(p(1:n), text)
    end function sx_strerror_f

    ! NOTE: collective. Export the run in 'input' to 'output' over the `use mpi`
    ! communicator 'comm'.
    function export_int(comm, input, output, options, message) result(status)
        integer, intent(in) :: comm
        character(len=*), intent(in) :: input, output
        type(sx_args), intent(in), optional :: options
        character(len=*), intent(out), optional :: message
        integer :: status

        status = export_fint(int(comm, c_int), input, output, options, message)
    end function export_int

#ifdef SX_HAVE_MPI_F08
    ! NOTE: collective. The same over a `use mpi_f08` TYPE(MPI_Comm).
    function export_f08(comm, input, output, options, message) result(status)
        type(MPI_Comm), intent(in) :: comm
        character(len=*), intent(in) :: input, output
        type(sx_args), intent(in), optional :: options
        character(len=*), intent(out), optional :: message
        integer :: status

        status = export_fint(int(comm%MPI_VAL, c_int), input, output, options, message)
    end function export_f08
#endif

    function export_fint(fcomm, input, output, options, message) result(status)
        integer(c_int), intent(in) :: fcomm
        character(len=*), intent(in) :: input, output
        type(sx_args), intent(in), optional :: options
        character(len=*), intent(out), optional :: message
        integer :: status
        type(sx_error_c) :: err
        type(c_ptr) :: a

        a = c_null_ptr
        if (present(options)) a = options%ptr
        err%code = 0
        err%rank = -1
        err%text = c_null_char
        err%source = c_null_char
        status = int(c_export_args_f(fcomm, trim(input)//c_null_char, &
                                     trim(output)//c_null_char, a, err))
        if (present(message)) call error_line(status, err, message)
    end function export_fint

    ! 'message': blank on success, else "text [rank R, source]" as the command prints it.
    subroutine error_line(status, err, message)
        integer, intent(in) :: status
        type(sx_error_c), intent(in) :: err
        character(len=*), intent(out) :: message
        character(len=TEXT_LENGTH) :: text, source
        character(len=16) :: r

        message = ""
        if (status == SX_OK) return
        text = from_c(err%text)
        source = from_c(err%source)
        if (len_trim(text) == 0) text = sx_strerror_f(status)
        if (err%rank >= 0) then
            write (r, "(i0)") err%rank
            if (len_trim(source) > 0 .and. index(text, trim(source)) == 0) then
                message = trim(text)//" [rank "//trim(r)//", "//trim(source)//"]"
            else
                message = trim(text)//" [rank "//trim(r)//"]"
            end if
        else if (len_trim(source) > 0 .and. index(text, trim(source)) == 0) then
            message = trim(text)//" ["//trim(source)//"]"
        else
            message = text
        end if
    end subroutine error_line

    function from_c(chars) result(s)
        character(kind=c_char), intent(in) :: chars(:)
        character(len=size(chars)) :: s
        integer :: i

        s = ""
        do i = 1, size(chars)
            if (chars(i) == c_null_char) exit
            s(i:i) = chars(i)
        end do
    end function from_c

    subroutine c_f_string_ptr(cp, p, n)
        use, intrinsic :: iso_c_binding, only: c_f_pointer
        type(c_ptr), intent(in) :: cp
        character(kind=c_char), pointer, intent(out) :: p(:)
        integer, intent(out) :: n
        character(kind=c_char), pointer :: all(:)

        call c_f_pointer(cp, all, [4096])
        n = 0
        do while (all(n + 1) /= c_null_char)
            n = n + 1
        end do
        p => all
    end subroutine c_f_string_ptr
end module scope_export
