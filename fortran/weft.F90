! weft.F90 - the Fortran module over weft's C API (include/weft.h),
! docs/fortran.md.
!
! Built with gfortran -cpp (mk/fortran.mk): the collectives are written once
! in weft_typed.inc and included here once per element type, each time with
! SFX (the suffix of the specific procedures), FTYPE (the Fortran type) and
! DTYPE (the weft_dtype_t value) defined, which it undefines at its end.
! Users call the generic names.
!
! Every procedure ends with an optional `ierr`, as mpi_f08's ierror: the
! weft_status_t of the call (WEFT_OK = 0).  Left out, a failure goes
! unreported here; the library still logs it.
module weft
  use, intrinsic :: iso_c_binding
  implicit none
  private

  ! ---- Statuses: the values of WEFT_STATUS_LIST in include/weft.h.
  integer, parameter, public :: WEFT_OK = 0
  integer, parameter, public :: WEFT_INPROGRESS = 1
  integer, parameter, public :: WEFT_ERR_INVALID_ARG = -1
  integer, parameter, public :: WEFT_ERR_INVALID_USAGE = -2
  integer, parameter, public :: WEFT_ERR_NO_MEMORY = -3
  integer, parameter, public :: WEFT_ERR_SYSTEM = -4
  integer, parameter, public :: WEFT_ERR_TRANSPORT = -5
  integer, parameter, public :: WEFT_ERR_REMOTE = -6
  integer, parameter, public :: WEFT_ERR_TIMEOUT = -7
  integer, parameter, public :: WEFT_ERR_ABORTED = -8
  integer, parameter, public :: WEFT_ERR_MISMATCH = -9
  integer, parameter, public :: WEFT_ERR_UNSUPPORTED = -10
  integer, parameter, public :: WEFT_ERR_AUTH = -11
  integer, parameter, public :: WEFT_ERR_CUDA = -12
  integer, parameter, public :: WEFT_ERR_INTERNAL = -13
  integer, parameter, public :: WEFT_ERR_AGAIN = -14

  ! ---- Element types (weft_dtype_t).  The generic procedures pick theirs
  ! from the array's type; the constants are here for completeness and for
  ! code that talks about dtypes (logs, checks).
  integer, parameter, public :: WEFT_INT8 = 0
  integer, parameter, public :: WEFT_UINT8 = 1
  integer, parameter, public :: WEFT_INT32 = 2
  integer, parameter, public :: WEFT_UINT32 = 3
  integer, parameter, public :: WEFT_INT64 = 4
  integer, parameter, public :: WEFT_UINT64 = 5
  integer, parameter, public :: WEFT_FLOAT16 = 6
  integer, parameter, public :: WEFT_BFLOAT16 = 7
  integer, parameter, public :: WEFT_FLOAT32 = 8
  integer, parameter, public :: WEFT_FLOAT64 = 9
  integer, parameter, public :: WEFT_INT16 = 10
  integer, parameter, public :: WEFT_UINT16 = 11

  ! ---- Reduction operations (weft_op_t).  BAND..LOR take integer arrays
  ! only: with a real array the call fails with WEFT_ERR_INVALID_ARG.
  integer, parameter, public :: WEFT_SUM = 0
  integer, parameter, public :: WEFT_PROD = 1
  integer, parameter, public :: WEFT_MIN = 2
  integer, parameter, public :: WEFT_MAX = 3
  integer, parameter, public :: WEFT_AVG = 4
  integer, parameter, public :: WEFT_BAND = 5
  integer, parameter, public :: WEFT_BOR = 6
  integer, parameter, public :: WEFT_BXOR = 7
  integer, parameter, public :: WEFT_LAND = 8
  integer, parameter, public :: WEFT_LOR = 9

  ! The color that leaves a rank out of every communicator of a split, and
  ! the peer of a receive that takes a message from any rank.
  integer, parameter, public :: WEFT_UNDEFINED = -1
  integer, parameter, public :: WEFT_ANY_SOURCE = -2

  ! A communicator: weft_comm_t.  A null ptr is no communicator (what a
  ! split with WEFT_UNDEFINED gives): test it with weft_comm_is_null.
  type, public :: weft_comm
    type(c_ptr) :: ptr = c_null_ptr
  end type weft_comm

  public :: weft_comm_init, weft_comm_destroy, weft_comm_rank, &
            weft_comm_size, weft_comm_split, weft_comm_dup, &
            weft_comm_is_null, weft_strerror, weft_barrier
  public :: weft_allreduce, weft_allreduce_inplace, weft_broadcast, &
            weft_reduce, weft_allgather, weft_reduce_scatter, &
            weft_alltoall, weft_send, weft_recv

  ! ---- The C functions.  Their Fortran names carry a c_ prefix so that the
  ! module's own procedures can have the names users expect.  weft_comm_t
  ! is passed by value, weft_comm_t * by reference; size_t counts are
  ! c_size_t, enums and int are c_int.  The handles C writes are
  ! intent(inout): C writes them on success only, and the caller's null
  ! (weft_comm's default) must survive a failure.
  interface
    integer(c_int) function c_weft_comm_init(comm) &
        bind(C, name="weft_comm_init")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: comm
    end function
    integer(c_int) function c_weft_comm_destroy(comm) &
        bind(C, name="weft_comm_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
    end function
    integer(c_int) function c_weft_comm_rank(comm, rank) &
        bind(C, name="weft_comm_rank")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int), intent(out) :: rank
    end function
    integer(c_int) function c_weft_comm_size(comm, size) &
        bind(C, name="weft_comm_size")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int), intent(out) :: size
    end function
    integer(c_int) function c_weft_comm_split(comm, color, key, newcomm) &
        bind(C, name="weft_comm_split")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int), value :: color, key
      type(c_ptr), intent(inout) :: newcomm
    end function
    integer(c_int) function c_weft_comm_dup(comm, newcomm) &
        bind(C, name="weft_comm_dup")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      type(c_ptr), intent(inout) :: newcomm
    end function
    type(c_ptr) function c_weft_strerror(status) &
        bind(C, name="weft_strerror")
      import :: c_int, c_ptr
      integer(c_int), value :: status
    end function
    integer(c_size_t) function c_strlen(s) bind(C, name="strlen")
      import :: c_size_t, c_ptr
      type(c_ptr), value :: s
    end function
    integer(c_int) function c_weft_barrier(comm) &
        bind(C, name="weft_barrier")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
    end function
    integer(c_int) function c_weft_allreduce(sendbuf, recvbuf, count, &
        dtype, op, comm) bind(C, name="weft_allreduce")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op
    end function
    integer(c_int) function c_weft_broadcast(sendbuf, recvbuf, count, &
        dtype, root, comm) bind(C, name="weft_broadcast")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, root
    end function
    integer(c_int) function c_weft_reduce(sendbuf, recvbuf, count, &
        dtype, op, root, comm) bind(C, name="weft_reduce")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op, root
    end function
    integer(c_int) function c_weft_allgather(sendbuf, recvbuf, sendcount, &
        dtype, comm) bind(C, name="weft_allgather")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm
      integer(c_size_t), value :: sendcount
      integer(c_int), value :: dtype
    end function
    integer(c_int) function c_weft_reduce_scatter(sendbuf, recvbuf, &
        recvcount, dtype, op, comm) bind(C, name="weft_reduce_scatter")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm
      integer(c_size_t), value :: recvcount
      integer(c_int), value :: dtype, op
    end function
    integer(c_int) function c_weft_alltoall(sendbuf, recvbuf, count, &
        dtype, comm) bind(C, name="weft_alltoall")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: sendbuf, recvbuf, comm
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype
    end function
    integer(c_int) function c_weft_send_tag(buf, count, dtype, peer, tag, &
        comm) bind(C, name="weft_send_tag")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: buf, comm
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, peer, tag
    end function
    integer(c_int) function c_weft_recv_tag(buf, count, dtype, peer, tag, &
        comm, source) bind(C, name="weft_recv_tag")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: buf, comm, source
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, peer, tag
    end function
  end interface

  ! ---- The generic collectives, one specific procedure per element type:
  ! _r4 real(c_float), _r8 real(c_double), _i4 integer(c_int32_t),
  ! _i8 integer(c_int64_t).
  interface weft_allreduce
    module procedure weft_allreduce_r4, weft_allreduce_r8, &
                     weft_allreduce_i4, weft_allreduce_i8
  end interface
  interface weft_allreduce_inplace
    module procedure weft_allreduce_inplace_r4, weft_allreduce_inplace_r8, &
                     weft_allreduce_inplace_i4, weft_allreduce_inplace_i8
  end interface
  interface weft_broadcast
    module procedure weft_broadcast_r4, weft_broadcast_r8, &
                     weft_broadcast_i4, weft_broadcast_i8
  end interface
  interface weft_reduce
    module procedure weft_reduce_r4, weft_reduce_r8, &
                     weft_reduce_i4, weft_reduce_i8
  end interface
  interface weft_allgather
    module procedure weft_allgather_r4, weft_allgather_r8, &
                     weft_allgather_i4, weft_allgather_i8
  end interface
  interface weft_reduce_scatter
    module procedure weft_reduce_scatter_r4, weft_reduce_scatter_r8, &
                     weft_reduce_scatter_i4, weft_reduce_scatter_i8
  end interface
  interface weft_alltoall
    module procedure weft_alltoall_r4, weft_alltoall_r8, &
                     weft_alltoall_i4, weft_alltoall_i8
  end interface
  interface weft_send
    module procedure weft_send_r4, weft_send_r8, &
                     weft_send_i4, weft_send_i8
  end interface
  interface weft_recv
    module procedure weft_recv_r4, weft_recv_r8, &
                     weft_recv_i4, weft_recv_i8
  end interface

contains

  ! Stores a status in the caller's optional ierr.
  subroutine set_ierr(ierr, status)
    integer, intent(out), optional :: ierr
    integer(c_int), intent(in) :: status
    if (present(ierr)) ierr = int(status)
  end subroutine set_ierr

  ! The number of ranks of comm, for the size checks of the collectives
  ! whose buffers hold one block per rank; 0 (and the status in st) when
  ! comm is not a usable communicator.
  integer(c_size_t) function comm_ranks(comm, st)
    type(weft_comm), intent(in) :: comm
    integer(c_int), intent(out) :: st
    integer(c_int) :: n
    n = 0
    st = c_weft_comm_size(comm%ptr, n)
    comm_ranks = int(n, c_size_t)
  end function comm_ranks

  ! ---- Communicators

  ! A communicator from the launch environment (weftrun, torchrun, Slurm,
  ! Open MPI, PMI), as weft_comm_init in C.  Blocking and collective.
  subroutine weft_comm_init(comm, ierr)
    type(weft_comm), intent(out) :: comm
    integer, intent(out), optional :: ierr
    call set_ierr(ierr, c_weft_comm_init(comm%ptr))
  end subroutine weft_comm_init

  ! Waits for the pending operations, releases the communicator and sets
  ! comm to null.
  subroutine weft_comm_destroy(comm, ierr)
    type(weft_comm), intent(inout) :: comm
    integer, intent(out), optional :: ierr
    call set_ierr(ierr, c_weft_comm_destroy(comm%ptr))
    comm%ptr = c_null_ptr
  end subroutine weft_comm_destroy

  subroutine weft_comm_rank(comm, rank, ierr)
    type(weft_comm), intent(in) :: comm
    integer, intent(out) :: rank
    integer, intent(out), optional :: ierr
    integer(c_int) :: r
    r = -1
    call set_ierr(ierr, c_weft_comm_rank(comm%ptr, r))
    rank = int(r)
  end subroutine weft_comm_rank

  subroutine weft_comm_size(comm, size, ierr)
    type(weft_comm), intent(in) :: comm
    integer, intent(out) :: size
    integer, intent(out), optional :: ierr
    integer(c_int) :: n
    n = 0
    call set_ierr(ierr, c_weft_comm_size(comm%ptr, n))
    size = int(n)
  end subroutine weft_comm_size

  ! Ranks of the same color (>= 0) form a communicator, ordered by key and
  ! then by rank; color WEFT_UNDEFINED gives a null newcomm.  Blocking and
  ! collective over comm.
  subroutine weft_comm_split(comm, color, key, newcomm, ierr)
    type(weft_comm), intent(in) :: comm
    integer, intent(in) :: color, key
    type(weft_comm), intent(out) :: newcomm
    integer, intent(out), optional :: ierr
    call set_ierr(ierr, c_weft_comm_split(comm%ptr, int(color, c_int), &
                                          int(key, c_int), newcomm%ptr))
  end subroutine weft_comm_split

  ! The same ranks in the same order with a tag space of their own.
  ! Blocking and collective over comm.
  subroutine weft_comm_dup(comm, newcomm, ierr)
    type(weft_comm), intent(in) :: comm
    type(weft_comm), intent(out) :: newcomm
    integer, intent(out), optional :: ierr
    call set_ierr(ierr, c_weft_comm_dup(comm%ptr, newcomm%ptr))
  end subroutine weft_comm_dup

  logical function weft_comm_is_null(comm)
    type(weft_comm), intent(in) :: comm
    weft_comm_is_null = .not. c_associated(comm%ptr)
  end function weft_comm_is_null

  ! The description of a status, e.g. "invalid argument": a copy of the
  ! library's static string.
  function weft_strerror(status) result(text)
    integer, intent(in) :: status
    character(:), allocatable :: text
    type(c_ptr) :: p
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    p = c_weft_strerror(int(status, c_int))
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(n) :: text)
    do i = 1, n
      text(i:i) = chars(i)
    end do
  end function weft_strerror

  subroutine weft_barrier(comm, ierr)
    type(weft_comm), intent(in) :: comm
    integer, intent(out), optional :: ierr
    call set_ierr(ierr, c_weft_barrier(comm%ptr))
  end subroutine weft_barrier

  ! ---- The collectives and point-to-point, once per element type.
#define SFX r4
#define FTYPE real(c_float)
#define DTYPE WEFT_FLOAT32
#include "weft_typed.inc"

#define SFX r8
#define FTYPE real(c_double)
#define DTYPE WEFT_FLOAT64
#include "weft_typed.inc"

#define SFX i4
#define FTYPE integer(c_int32_t)
#define DTYPE WEFT_INT32
#include "weft_typed.inc"

#define SFX i8
#define FTYPE integer(c_int64_t)
#define DTYPE WEFT_INT64
#include "weft_typed.inc"

end module weft
