#!/bin/bash
# mpi.sh - mpirun as a plain launcher, and weft inside an MPI code.
#   mpi_mpirun_<coll>     mpirun -np 4 weft-bench COLL: ranks from Open MPI's
#                         OMPI_COMM_WORLD_* (the INIT log line of each rank
#                         says so), one weft-rendezvous beside it
#   mpi_weft_not_linked   libweft.so and weft-bench need no MPI library
#   mpi_bootstrap_example docs/examples/mpi_bootstrap.c built with mpicc
#                         against an installed weft (make install +
#                         pkg-config, as the page says) and run on 4 ranks:
#                         rank 0's server address goes out over MPI_Bcast
#   mpi_hydra_pmi         mpiexec.hydra -n 4 weft-bench: ranks from MPICH's
#                         PMI_RANK/PMI_SIZE (each rank's log says so)
#   mpi_mpirun_no_setup,  a C program (comm_init_check.c) under mpirun and
#   mpi_hydra_no_setup    mpiexec.hydra with no weft variable at all: rank
#                         0 hosts the rendezvous, its address goes out
#                         through PMIx / hydra's PMI-1
#   mpi_*_torch_tutorial  the same for PyTorch's tutorial (tutorial.py:
#                         init_process_group("weft") with none of torch's
#                         variables; point-to-point, all_reduce, gradient
#                         averaging), where make python built the venv
# Needs Open MPI (openmpi-bin, libopenmpi-dev) and MPICH (mpich); what is
# missing is skipped with the reason.  Everything stays on loopback.
set -uo pipefail
here=$(dirname "$(readlink -f "$0")")
. "$here/lib.sh"
root=$(readlink -f "$here/../..")

command -v mpirun >/dev/null || { wf_skip mpi "mpirun is not installed (scripts/install-launcher-deps.sh)"; exit 0; }
# shellcheck disable=SC2054 # "self,tcp" is one MCA value
mpirun=(mpirun --oversubscribe -np 4 --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)

tmp=$(mktemp -d /tmp/weft-mpi-XXXXXX)
rdv_pid=""
cleanup() {
    [ -n "$rdv_pid" ] && kill "$rdv_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port=$(wf_free_port)
"$RDV" --listen "127.0.0.1:$port" > "$tmp/rdv.log" 2>&1 &
rdv_pid=$!

mpirun_bench() { # COLL
    local out=$WF_LOGDIR/mpi_mpirun_$1.out
    WEFT_RENDEZVOUS=127.0.0.1:$port WEFT_JOB_ID="mpirun-$1-$$" \
        WEFT_SOCKET_IFNAME=lo WEFT_LOG=info WEFT_LOG_SUBSYS=init \
        timeout 120 "${mpirun[@]}" -x WEFT_RENDEZVOUS -x WEFT_JOB_ID \
        -x WEFT_SOCKET_IFNAME -x WEFT_LOG -x WEFT_LOG_SUBSYS \
        "$BENCH" "$1" -b 8 -e 1M -f 32 -w 1 -r 2 -c 1 > "$out" 2>&1
    local status=$?
    cat "$out"
    [ $status = 0 ] && wf_bench_clean "$out" &&
        [ "$(grep -c 'launch environment: openmpi (rank [0-3] of 4)' "$out")" = 4 ]
}
for coll in allreduce broadcast alltoall; do
    wf_check "mpi_mpirun_$coll" mpirun_bench "$coll"
done

not_linked() {
    ldd "$WF_BUILD/lib/libweft.so" "$BENCH"
    ! ldd "$WF_BUILD/lib/libweft.so" "$BENCH" | grep -i 'libmpi'
}
wf_check mpi_weft_not_linked not_linked

bootstrap_example() {
    command -v mpicc >/dev/null || { echo "mpicc missing"; return 1; }
    make -C "$root" --no-print-directory install BUILD="$WF_BUILD" \
        PREFIX="$tmp/prefix" >/dev/null || return 1
    local pc=$tmp/prefix/lib/pkgconfig
    # shellcheck disable=SC2046
    mpicc -O2 -std=c11 -Wall -Wextra -Werror \
        "$root/docs/examples/mpi_bootstrap.c" -o "$tmp/mpi_bootstrap" \
        $(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs weft) \
        -Wl,-rpath,"$tmp/prefix/lib" || return 1
    WEFT_SOCKET_IFNAME=lo timeout 120 "${mpirun[@]}" -x WEFT_SOCKET_IFNAME \
        "$tmp/mpi_bootstrap" || return 1
}
bootstrap_example_checked() {
    bootstrap_example > "$tmp/boot.out" 2>&1
    local status=$?
    cat "$tmp/boot.out"
    [ $status = 0 ] &&
        grep -q '^mpi_bootstrap: 4 ranks, allreduce and broadcast correct$' "$tmp/boot.out"
}
wf_check mpi_bootstrap_example bootstrap_example_checked

hydra() {
    local out=$WF_LOGDIR/mpi_hydra_pmi.out
    WEFT_RENDEZVOUS=127.0.0.1:$port WEFT_JOB_ID="hydra-$$" \
        WEFT_SOCKET_IFNAME=lo WEFT_LOG=info WEFT_LOG_SUBSYS=init \
        timeout 120 mpiexec.hydra -n 4 "$BENCH" allreduce -b 8 -e 1M -f 32 \
        -w 1 -r 2 -c 1 > "$out" 2>&1
    local status=$?
    cat "$out"
    [ $status = 0 ] && wf_bench_clean "$out" &&
        [ "$(grep -c 'launch environment: pmi (rank [0-3] of 4)' "$out")" = 4 ]
}
# launcher COMMAND... with only WEFT_LOG set: 4 ranks of comm_init_check,
# each told its rank by the launcher's own variable (RANK_VAR).
no_setup() { # NAME INTERFACE RANK_VAR LAUNCHER...
    local name=$1 iface=$2 var=$3 out=$WF_LOGDIR/$1.out status
    shift 3
    env -u WEFT_RENDEZVOUS -u MASTER_ADDR -u MASTER_PORT WEFT_LOG=info \
        WEFT_LOG_SUBSYS=init,rdv timeout 120 "$@" \
        bash -c "exec $LAUNCH_CHECK \$$var 4" > "$out" 2>&1
    status=$?
    cat "$out"
    [ $status = 0 ] &&
        [ "$(wf_ranks_ok comm_init_check 4 "$out")" = 4 ] &&
        [ "$(grep -c "rendezvous through $iface:" "$out")" = 4 ]
}
wf_check mpi_mpirun_no_setup no_setup mpi_mpirun_no_setup PMIx \
    OMPI_COMM_WORLD_RANK "${mpirun[@]}" -x WEFT_LOG -x WEFT_LOG_SUBSYS

# The tutorial under a launcher: 4 ranks, each "ok".
tutorial() { # NAME LAUNCHER...
    local out=$WF_LOGDIR/$1.out status
    shift
    env -u MASTER_ADDR -u MASTER_PORT -u RANK -u WORLD_SIZE -u WEFT_RENDEZVOUS \
        timeout 300 "$@" "$WF_PY" "$TUTORIAL" 4 > "$out" 2>&1
    status=$?
    cat "$out"
    [ $status = 0 ] && [ "$(wf_ranks_ok tutorial 4 "$out")" = 4 ]
}
if why=$(wf_torch_ready); then
    wf_check mpi_mpirun_torch_tutorial tutorial mpi_mpirun_torch_tutorial \
        "${mpirun[@]}"
    if command -v mpiexec.hydra >/dev/null; then
        wf_check mpi_hydra_torch_tutorial tutorial mpi_hydra_torch_tutorial \
            mpiexec.hydra -n 4
    else
        wf_skip mpi_hydra_torch_tutorial "MPICH's mpiexec.hydra is not installed"
    fi
else
    wf_skip mpi_torch_tutorial "$why"
fi

if command -v mpiexec.hydra >/dev/null; then
    wf_check mpi_hydra_pmi hydra
    wf_check mpi_hydra_no_setup no_setup mpi_hydra_no_setup PMI-1 PMI_RANK \
        mpiexec.hydra -n 4
else
    wf_skip mpi_hydra_pmi "MPICH's mpiexec.hydra is not installed (Debian's mpich; scripts/install-launcher-deps.sh installs it)"
    wf_skip mpi_hydra_no_setup "MPICH's mpiexec.hydra is not installed"
fi
exit 0
