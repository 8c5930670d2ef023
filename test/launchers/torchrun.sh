#!/bin/bash
# torchrun.sh - weft under torchrun (env://): RANK, WORLD_SIZE, LOCAL_RANK,
# MASTER_ADDR, MASTER_PORT; rank 0 hosts weft's rendezvous on
# MASTER_PORT+1 (torchrun's own store has MASTER_PORT).
#   torchrun_env_bench_<coll>  4 weft-bench processes started with exactly
#                              the variables torchrun sets, no WEFT_*
#   torchrun_env_c_program     4 processes of a C program using
#                              weft_comm_init (comm_init_check.c)
#   torchrun_real_bench        the real torchrun (--no-python) starting 4
#   torchrun_real_c_program    weft-bench and the C program, where torchrun
#                              is installed (make python's .venv, or PATH)
# Loopback only.
set -uo pipefail
here=$(dirname "$(readlink -f "$0")")
. "$here/lib.sh"
root=$(readlink -f "$here/../..")
CHECK=$(readlink -f "$WF_BUILD/test/comm_init_check")
size=4

# run_env NAME PORT CMD...: CMD once per rank with torchrun's variables;
# output in NAME.rank<r>.
run_env() {
    local name=$1 port=$2 pids=() status=0 rc r
    shift 2
    for ((r = 0; r < size; r++)); do
        # The C program takes the rank and size it should get as arguments.
        local expect=()
        [ "$1" = "$CHECK" ] && expect=("$r" "$size")
        env -u WEFT_RANK -u WEFT_WORLD_SIZE -u WEFT_RENDEZVOUS \
            RANK=$r WORLD_SIZE=$size LOCAL_RANK=$r LOCAL_WORLD_SIZE=$size \
            MASTER_ADDR=127.0.0.1 MASTER_PORT=$port TORCHELASTIC_RUN_ID="$name-$$" \
            WEFT_SOCKET_IFNAME=lo WEFT_LOG=info WEFT_LOG_SUBSYS=init \
            timeout 120 "$@" "${expect[@]}" \
            > "$WF_LOGDIR/$name.rank$r" 2>&1 &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || { rc=$?; [ $status != 0 ] || status=$rc; }
    done
    [ $status = 0 ] || tail -n 5 "$WF_LOGDIR/$name".rank*
    return $status
}

# Every rank says the torchrun variables gave its rank.
launched_by_torchrun() { # FILE...
    [ "$(cat "$@" | grep -c 'launch environment: torchrun (rank [0-3] of 4)')" = $size ]
}

env_bench() { # COLL
    local name=torchrun_env_bench_$1
    run_env "$name" "$(wf_free_port)" "$BENCH" "$1" -b 8 -e 1M -f 32 -w 1 -r 2 -c 1 || return 1
    cat "$WF_LOGDIR/$name.rank0"
    wf_bench_clean "$WF_LOGDIR/$name.rank0" && launched_by_torchrun "$WF_LOGDIR/$name".rank*
}
for coll in allreduce reducescatter; do
    wf_check "torchrun_env_bench_$coll" env_bench "$coll"
done

env_c_program() {
    local name=torchrun_env_c_program r
    run_env "$name" "$(wf_free_port)" "$CHECK" || return 1
    for ((r = 0; r < size; r++)); do
        grep -q "^comm_init_check: rank $r of $size ok" "$WF_LOGDIR/$name.rank$r" || return 1
    done
    launched_by_torchrun "$WF_LOGDIR/$name".rank*
}
wf_check torchrun_env_c_program env_c_program

torchrun=""
for t in "${WEFT_VENV:-$root/.venv}/bin/torchrun" "$(command -v torchrun)"; do
    [ -n "$t" ] && [ -x "$t" ] && { torchrun=$t; break; }
done
if [ -z "$torchrun" ]; then
    wf_skip torchrun_real "torchrun is not installed (make python builds .venv with PyTorch; or put torchrun on PATH)"
    exit 0
fi

# torchrun's static rendezvous on loopback, with MASTER_PORT chosen here
# (below the ephemeral range, P and P+1 free): with --standalone or c10d,
# torchrun picks MASTER_PORT itself as an ephemeral port, and its own
# outgoing connections may then hold MASTER_PORT+1, where weft's rank 0
# must listen (the likely cause of rank 0 failing once in three
# --standalone runs with "system call failed").
real() { # NAME CMD...
    local name=$1 out=$WF_LOGDIR/$1.out port
    shift
    port=$(wf_free_port_pair_low)
    WEFT_SOCKET_IFNAME=lo WEFT_LOG=info WEFT_LOG_SUBSYS=init,rdv \
        timeout 180 "$torchrun" --nnodes 1 --node-rank 0 \
        --master-addr 127.0.0.1 --master-port "$port" \
        --nproc-per-node $size --no-python "$@" > "$out" 2>&1
    local status=$?
    cat "$out"
    [ $status = 0 ] && launched_by_torchrun "$out" &&
        grep -q "joined job .* via 127.0.0.1:$((port + 1))," "$out"
}
real_bench() {
    real torchrun_real_bench "$BENCH" allreduce -b 8 -e 1M -f 32 -w 1 -r 2 -c 1 &&
        wf_bench_clean "$WF_LOGDIR/torchrun_real_bench.out"
}
wf_check torchrun_real_bench real_bench
# RANK and WORLD_SIZE as torchrun set them, passed as arguments: the
# program compares them with what weft_comm_init found.
real_c_program() {
    real torchrun_real_c_program sh -c 'exec "$0" "$RANK" "$WORLD_SIZE"' "$CHECK" &&
        [ "$(wf_ranks_ok comm_init_check 4 "$WF_LOGDIR/torchrun_real_c_program.out")" = $size ]
}
wf_check torchrun_real_c_program real_c_program
exit 0
