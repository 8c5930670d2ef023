! test_weft_f.F90 - module weft from Fortran, under `weftrun -n 3`
! (test/tools/test_fortran.c runs it; mk/fortran.mk builds it).
!
! Every collective on arrays of each of the four types, 2-D and 3-D, and
! point-to-point, split and dup.  Element i (1-based, in array element
! order) of rank r's input is r*100 + i, small enough to be exact in every
! type, so each result is checked against the value the rank formula gives
! for it, computed here without weft.  One line per failed check names the
! rank and the check; rank 0 prints "fortran: N checks passed" when no
! rank failed, and any failure makes the program exit 1.
!
! The checks of one type and shape are in test_weft_f_typed.inc,
! included by test_weft_f_types.inc once per type, which this file
! includes once per shape: SHAPE (2d, 3d), SNAME (the same as a
! string), DIMS (the rank spec), SHP and
! BIG (the shape of an n-element array and of a 3n-element one: the rank
! count is 3).
module checks
  implicit none
  integer :: passed = 0, failed = 0, me = -1

contains

  subroutine check(ok, name)
    logical, intent(in) :: ok
    character(*), intent(in) :: name
    if (ok) then
      passed = passed + 1
    else
      failed = failed + 1
      write(*, '(a, i0, a, a)') 'fortran: rank ', me, ': FAILED ', name
    end if
  end subroutine check

  ! A check that a call returned WEFT_OK, naming the status otherwise.
  subroutine check_ok(ierr, name)
    use weft, only: WEFT_OK, weft_strerror
    integer, intent(in) :: ierr
    character(*), intent(in) :: name
    call check(ierr == WEFT_OK, name // ' returned ' // weft_strerror(ierr))
  end subroutine check_ok
end module checks

module typed_tests
  use, intrinsic :: iso_c_binding
  use weft
  use checks
  implicit none
  integer, parameter :: NRANKS = 3

contains

  ! run_r4_2d .. run_i8_3d: each shape with each of the four types.
#define SHAPE 2d
#define SNAME '2d'
#define DIMS :,:
#define SHP [4, 3]
#define BIG [4, 9]
#include "test_weft_f_types.inc"

#define SHAPE 3d
#define SNAME '3d'
#define DIMS :,:,:
#define SHP [2, 3, 3]
#define BIG [2, 3, 9]
#include "test_weft_f_types.inc"

end module typed_tests

program test_weft_f
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: output_unit
  use weft
  use checks
  use typed_tests
  implicit none
  type(weft_comm) :: world, half, twin
  integer :: ierr, world_size, r, n, i
  integer(c_int32_t) :: v(5), expect(5)
  real(c_float) :: f(4)
  integer(c_int64_t) :: total(2)

  call weft_comm_init(world, ierr)
  if (ierr /= WEFT_OK) then
    write(*, '(a, a)') 'fortran: weft_comm_init failed: ', weft_strerror(ierr)
    stop 1
  end if
  call weft_comm_rank(world, me, ierr)
  call check_ok(ierr, 'weft_comm_rank')
  call weft_comm_size(world, world_size, ierr)
  call check_ok(ierr, 'weft_comm_size')
  if (world_size /= NRANKS) then
    write(*, '(a, i0)') 'fortran: run me with weftrun -n 3, not ', world_size
    stop 1
  end if

  call weft_barrier(world, ierr)
  call check_ok(ierr, 'weft_barrier')

  call run_r4_2d(world)
  call run_r4_3d(world)
  call run_r8_2d(world)
  call run_r8_3d(world)
  call run_i4_2d(world)
  call run_i4_3d(world)
  call run_i8_2d(world)
  call run_i8_3d(world)

  ! A bitwise op on floats is refused on every rank before anything is
  ! sent.
  f = 1.0
  call weft_allreduce_inplace(f, WEFT_BAND, world, ierr)
  call check(ierr == WEFT_ERR_INVALID_ARG, 'float allreduce with WEFT_BAND')
  call check(weft_strerror(WEFT_ERR_INVALID_ARG) == 'invalid argument', &
             'weft_strerror(WEFT_ERR_INVALID_ARG)')
  ! ierr may be left out, as mpi_f08's ierror.
  v = me
  call weft_allreduce_inplace(v, WEFT_SUM, world)
  call check(all(v == 0 + 1 + 2), 'allreduce without ierr')
  ! A rank-0 (scalar) buffer is an assumed-rank array too.
  total(1) = me + 1
  call weft_allreduce_inplace(total(1), WEFT_PROD, world, ierr)
  call check_ok(ierr, 'scalar allreduce')
  call check(total(1) == 1 * 2 * 3, 'scalar allreduce prod')

  ! Split by parity: ranks 0 and 2 (ranked 0, 1 by key = rank) and rank 1
  ! alone.
  call weft_comm_split(world, mod(me, 2), me, half, ierr)
  call check_ok(ierr, 'weft_comm_split')
  call check(.not. weft_comm_is_null(half), 'split gives a communicator')
  call weft_comm_size(half, n, ierr)
  call check(n == merge(2, 1, mod(me, 2) == 0), 'split size')
  call weft_comm_rank(half, r, ierr)
  call check(r == me / 2, 'split rank')
  v = [(me * 10 + i, i = 1, 5)]
  call weft_allreduce_inplace(v, WEFT_SUM, half, ierr)
  call check_ok(ierr, 'allreduce on split')
  if (mod(me, 2) == 0) then
    expect = [(0 * 10 + i + 2 * 10 + i, i = 1, 5)]
  else
    expect = [(1 * 10 + i, i = 1, 5)]
  end if
  call check(all(v == expect), 'allreduce on split values')
  call weft_comm_destroy(half, ierr)
  call check_ok(ierr, 'weft_comm_destroy split')
  call check(weft_comm_is_null(half), 'destroy nulls the handle')

  ! A rank that passes WEFT_UNDEFINED takes part and gets no communicator;
  ! the others get one of their own.
  call weft_comm_split(world, merge(WEFT_UNDEFINED, 0, me == 2), 0, half, ierr)
  call check_ok(ierr, 'weft_comm_split undefined')
  call check(weft_comm_is_null(half) .eqv. (me == 2), 'split undefined handle')
  if (me /= 2) then
    call weft_comm_size(half, n, ierr)
    call check(n == 2, 'split undefined size')
    call weft_comm_destroy(half, ierr)
    call check_ok(ierr, 'weft_comm_destroy split undefined')
  end if

  ! Dup: the same ranks in the same order, and a working communicator.
  call weft_comm_dup(world, twin, ierr)
  call check_ok(ierr, 'weft_comm_dup')
  call weft_comm_rank(twin, r, ierr)
  call check(r == me, 'dup rank')
  call weft_comm_size(twin, n, ierr)
  call check(n == NRANKS, 'dup size')
  v = [(me * 10 + i, i = 1, 5)]
  call weft_allreduce_inplace(v, WEFT_MAX, twin, ierr)
  call check_ok(ierr, 'allreduce on dup')
  call check(all(v == [(2 * 10 + i, i = 1, 5)]), 'allreduce on dup values')
  call weft_comm_destroy(twin, ierr)
  call check_ok(ierr, 'weft_comm_destroy dup')

  ! Every rank learns the totals, so that rank 0 speaks for all.
  total = [int(passed, c_int64_t), int(failed, c_int64_t)]
  call weft_allreduce_inplace(total, WEFT_SUM, world, ierr)
  if (ierr /= WEFT_OK) then
    write(*, '(a, i0, a, a)') 'fortran: rank ', me, &
      ': allreduce of the totals: ', weft_strerror(ierr)
    total(2) = total(2) + 1
  end if
  if (me == 0) then
    if (total(2) == 0) then
      write(*, '(a, i0, a)') 'fortran: ', total(1), ' checks passed'
    else
      write(*, '(a, i0, a, i0, a)') 'fortran: ', total(2), ' of ', &
        total(1) + total(2), ' checks failed'
    end if
    flush(output_unit)
  end if
  ! weftrun stops the other ranks when one exits nonzero: none leaves
  ! before rank 0 has printed the totals.
  call weft_barrier(world, ierr)
  call weft_comm_destroy(world, ierr)
  if (failed > 0 .or. total(2) > 0) stop 1
end program test_weft_f
