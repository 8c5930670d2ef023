#!/bin/bash
# slurm.sh - weft under a real Slurm: starts munged, slurmctld and slurmd
# on this host from a slurm.conf generated into a temporary directory (one
# node named after `hostname -s`, this machine's CPUs, oversubscribed so 4
# tasks run on 2 cores), then
#   slurm_srun_bench    srun -n 4 weft-bench allreduce: ranks from
#                       SLURM_PROCID/SLURM_NTASKS, the rendezvous a
#                       weft-rendezvous started beside it
#   slurm_sbatch        docs/examples/weft.sbatch through sbatch: the batch
#                       script starts weft-rendezvous on the allocation's
#                       first node and the ranks with srun; every collective
#   slurm_srun_pmix_tensorflow  weft.horovod.tensorflow's example, 2 ranks
#                       through PMIx (where make tf built .venv-tf)
# A trap stops the daemons and removes the directory however the run ends.
# Needs root (slurmd runs jobs as root here) and the Debian packages
# slurm-wlm and munge (scripts/install-launcher-deps.sh).
set -uo pipefail
here=$(dirname "$(readlink -f "$0")")
. "$here/lib.sh"

part=slurm
[ "$(id -u)" = 0 ] || { wf_skip $part "needs root to run slurmd and munged"; exit 0; }
for b in munged slurmctld slurmd srun sbatch scontrol; do
    command -v $b >/dev/null || { wf_skip $part "$b is not installed (scripts/install-launcher-deps.sh)"; exit 0; }
done

dir=$(mktemp -d /tmp/weft-slurm-XXXXXX)
chmod 700 "$dir"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    sleep 0.5
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    [ -n "${KEEP_SLURM_DIR:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

node=$(hostname -s)
cpus=$(nproc)
# Ports of our own, so a Slurm elsewhere on the host (or a second run) is
# not disturbed.
ctld_port=$(wf_free_port)
slurmd_port=$(wf_free_port)
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
export SLURM_CONF=$dir/slurm.conf
cat > "$SLURM_CONF" <<CONF
ClusterName=weft-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
SchedulerType=sched/builtin
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=weft Nodes=$node Default=YES MaxTime=30 State=UP OverSubscribe=FORCE:8
CONF

# All three in the foreground (munged -F, slurmctld/slurmd -D): children
# of this script, so the trap stops them and reaps them.
munged -F --force --key-file="$dir/munge/munge.key" \
    --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/seed" \
    >"$dir/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do
    [ -S "$dir/munge/munge.socket" ] && break
    kill -0 "${pids[0]}" 2>/dev/null || break
    sleep 0.1
done
[ -S "$dir/munge/munge.socket" ] ||
    { wf_fail $part "munged did not start: $(tail -2 "$dir/munged.out" "$dir/munge/munged.log" 2>/dev/null)"; exit 0; }
slurmctld -D -f "$SLURM_CONF" >"$dir/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >"$dir/slurmd.out" 2>&1 &
pids+=($!)

ready=""
for _ in $(seq 1 60); do
    if sinfo -h -N -o '%T' 2>/dev/null | grep -Eq '^(idle|mixed|allocated)'; then
        ready=1
        break
    fi
    sleep 0.5
done
if [ -z "$ready" ]; then
    wf_fail $part "the node did not come up in 30 s"
    tail -n 15 "$dir/slurmctld.log" "$dir/slurmd.log" "$dir"/*.out 2>/dev/null
    exit 0
fi

# srun -n 4 weft-bench: ranks from SLURM_PROCID/SLURM_NTASKS (the INIT log
# line says so for each of the 4), the rendezvous named by WEFT_RENDEZVOUS
# (srun passes the environment on).
srun_bench() {
    local out=$WF_LOGDIR/slurm_srun_bench.out port rdv_pid status
    port=$(wf_free_port)
    "$RDV" --listen "127.0.0.1:$port" &
    rdv_pid=$!
    WEFT_RENDEZVOUS=127.0.0.1:$port WEFT_SOCKET_IFNAME=lo WEFT_LOG=info \
        WEFT_LOG_SUBSYS=init timeout 120 srun -n 4 --overcommit -t 5 \
        "$BENCH" allreduce -b 8 -e 1M -f 8 -w 1 -r 3 -c 1 > "$out" 2>&1
    status=$?
    kill "$rdv_pid"
    wait "$rdv_pid"
    cat "$out"
    [ $status = 0 ] && wf_bench_clean "$out" &&
        [ "$(grep -c 'launch environment: slurm (rank [0-3] of 4)' "$out")" = 4 ]
}
wf_check slurm_srun_bench srun_bench

# srun --mpi=pmi2 / --mpi=pmix with no weft variable at all: rank 0 hosts
# the rendezvous and its address reaches the others through Slurm's PMI-2
# or PMIx (src/rdv/launch_pmi.c); comm_init_check checks rank, size and
# three collectives.
srun_no_setup() { # pmi2|pmix INTERFACE
    local out=$WF_LOGDIR/slurm_srun_$1.out status
    env -u WEFT_RENDEZVOUS -u MASTER_ADDR -u MASTER_PORT WEFT_LOG=info \
        WEFT_LOG_SUBSYS=init,rdv timeout 120 srun -n 4 --overcommit -t 5 \
        --mpi="$1" bash -c "exec $LAUNCH_CHECK \$SLURM_PROCID 4" > "$out" 2>&1
    status=$?
    cat "$out"
    [ $status = 0 ] &&
        [ "$(wf_ranks_ok comm_init_check 4 "$out")" = 4 ] &&
        [ "$(grep -c "rendezvous through $2:" "$out")" = 4 ]
}
# PyTorch's tutorial (tutorial.py) the same way: init_process_group("weft")
# with none of torch's variables.
srun_tutorial() { # pmi2|pmix
    local out=$WF_LOGDIR/slurm_srun_$1_torch_tutorial.out status
    env -u MASTER_ADDR -u MASTER_PORT -u RANK -u WORLD_SIZE \
        -u WEFT_RENDEZVOUS timeout 300 srun -n 4 --overcommit -t 5 \
        --mpi="$1" "$WF_PY" "$TUTORIAL" 4 > "$out" 2>&1
    status=$?
    cat "$out"
    [ $status = 0 ] && [ "$(wf_ranks_ok tutorial 4 "$out")" = 4 ]
}
torch_why=$(wf_torch_ready) && torch_ok=1 || torch_ok=""
for mpi in pmi2:PMI-2 pmix:PMIx; do
    m=${mpi%%:*}
    if srun --mpi=list 2>&1 | grep -qw "$m"; then
        wf_check "slurm_srun_${m}_no_setup" srun_no_setup "$m" "${mpi#*:}"
        if [ -n "$torch_ok" ]; then
            wf_check "slurm_srun_${m}_torch_tutorial" srun_tutorial "$m"
        else
            wf_skip "slurm_srun_${m}_torch_tutorial" "$torch_why"
        fi
    else
        wf_skip "slurm_srun_${m}_no_setup" "this Slurm has no --mpi=$m plugin"
    fi
done

# Horovod's TensorFlow recipe (python/examples/horovod_tensorflow.py, the
# tf.function loop over DistributedGradientTape) with srun --mpi=pmix and
# none of weft's variables: hvd.init() meets through PMIx as above.  Needs
# make tf's venv (.venv-tf, or WEFT_VENV_TF).
WF_PY_TF=${WEFT_VENV_TF:-$(readlink -f "$here/../..")/.venv-tf}/bin/python
srun_tensorflow() {
    local out=$WF_LOGDIR/slurm_srun_pmix_tensorflow.out status
    env -u MASTER_ADDR -u MASTER_PORT -u RANK -u WORLD_SIZE \
        -u WEFT_RENDEZVOUS TF_CPP_MIN_LOG_LEVEL=3 timeout 300 \
        srun -n 2 --overcommit -t 5 --mpi=pmix "$WF_PY_TF" \
        "$here/../../python/examples/horovod_tensorflow.py" --loop tape \
        --epochs 1 > "$out" 2>&1
    status=$?
    cat "$out"
    [ $status = 0 ] && [ "$(grep -c 'replicas identical' "$out")" = 2 ]
}
if ! srun --mpi=list 2>&1 | grep -qw pmix; then
    wf_skip slurm_srun_pmix_tensorflow "this Slurm has no --mpi=pmix plugin"
elif ! "$WF_PY_TF" -c 'import tensorflow, weft' >/dev/null 2>&1; then
    wf_skip slurm_srun_pmix_tensorflow "no TensorFlow venv at $WF_PY_TF (make tf builds it)"
else
    wf_check slurm_srun_pmix_tensorflow srun_tensorflow
fi

# The shipped batch script, unchanged, through sbatch: it starts its own
# weft-rendezvous on the first node (hostname from SLURM_JOB_NODELIST) and
# runs every collective with srun; each must report 0 wrong values.
sbatch_example() {
    local out=$WF_LOGDIR/slurm_sbatch.out ncolls=6
    rm -f "$out"
    WEFT_BIN=$(dirname "$BENCH") WEFT_RDV_LISTEN=127.0.0.1 \
        WEFT_SOCKET_IFNAME=lo WEFT_BENCH_ARGS="-b 8 -e 256K -f 16 -w 1 -r 2 -c 1" \
        timeout 240 sbatch --wait -n 4 --overcommit -t 5 -o "$out" \
        "$here/../../docs/examples/weft.sbatch"
    local status=$?
    cat "$out"
    [ $status = 0 ] &&
        [ "$(grep -c '^# Out of bounds values : 0 OK' "$out")" = $ncolls ] &&
        grep -q "^weft: rendezvous $node:[0-9]*, 4 ranks on $node" "$out"
}
wf_check slurm_sbatch sbatch_example

exit 0
