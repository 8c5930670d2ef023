#!/bin/bash
# netns.sh - multi-host on one box: 4 network namespaces as hosts, each
# with its own hostname (a UTS namespace per rank process) and one veth
# link to a bridge in a switch namespace (10.77.0.1-4/24), plus a decoy
# interface that cannot reach the peers (decoy0, 10.78.H.1/24, created
# first so it comes first in the interface list).  One weft-rendezvous on
# host 0; 8 ranks, 2 per host.  Checks:
#   netns_<coll>           every collective, weft-bench's element-wise
#                          check, interface chosen automatically
#   netns_auto_interface   the automatic choice took eth0 on every rank
#                          (the interface that reaches the rendezvous),
#                          never the decoy
#   netns_ifname           WEFT_SOCKET_IFNAME=eth0 given explicitly
#   netns_ifname_unreachable  WEFT_SOCKET_IFNAME=decoy0 fails within the
#                          timeout, on every rank, naming the peer
#   netns_local_rank       each rank's local rank and local size come out
#                          per host (0/1 of 2), from hostname + boot id
#   netns_rendezvous_drops_vanished_host  a client's link cut: TCP
#                          keepalive (WEFT_RDV_KEEPALIVE) ends its job on
#                          the rendezvous server
# Addresses exist only inside the namespaces; an EXIT trap kills the ranks
# and deletes the namespaces.  Needs root and iproute2.
set -uo pipefail
# The namespaces stand for hosts but share one kernel, where weft would
# copy large messages straight between the processes (WEFT_TCP_CMA_MIN)
# instead of sending them over the veths under test.
export WEFT_TCP_CMA_MIN=0
here=$(dirname "$(readlink -f "$0")")
. "$here/lib.sh"

part=netns
[ "$(id -u)" = 0 ] || { wf_skip $part "needs root to create network namespaces"; exit 0; }
command -v ip >/dev/null || { wf_skip $part "ip (iproute2) is not installed"; exit 0; }
command -v unshare >/dev/null || { wf_skip $part "unshare (util-linux) is not installed"; exit 0; }

hosts=4
per_host=2
size=$((hosts * per_host))
prefix="wfl$$"
switch="$prefix-sw"
port=29500
rdv_pid=""

cleanup() {
    [ -n "$rdv_pid" ] && kill "$rdv_pid" 2>/dev/null
    for ns in $(ip netns list | awk -v p="$prefix-" 'index($1, p) == 1 {print $1}'); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -9 "$pid" 2>/dev/null
        done
        ip netns del "$ns" 2>/dev/null
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

host_ns() { echo "$prefix-h$1"; }
host_ip() { echo "10.77.0.$(($1 + 1))"; }

ip netns add "$switch" || { wf_skip $part "cannot create network namespaces here"; exit 0; }
ip -n "$switch" link add br0 type bridge
ip -n "$switch" link set br0 up
for ((h = 0; h < hosts; h++)); do
    ns=$(host_ns $h)
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # The decoy first: the lowest index after lo, the first candidate of a
    # naive "first interface that is up" choice.
    # (A veth pair whose other end leads nowhere: the kernel here has no
    # dummy module.)
    ip -n "$ns" link add decoy0 type veth peer name decoy1
    ip -n "$ns" addr add "10.78.$h.1/24" dev decoy0
    ip -n "$ns" link set decoy1 up
    ip -n "$ns" link set decoy0 up
    ip -n "$switch" link add "p$h" type veth peer name eth0 netns "$ns"
    ip -n "$switch" link set "p$h" master br0 up
    ip -n "$ns" addr add "$(host_ip $h)/24" dev eth0
    ip -n "$ns" link set eth0 up
done

ip netns exec "$(host_ns 0)" "$RDV" --listen "$(host_ip 0):$port" \
    > "$WF_LOGDIR/netns-rendezvous.log" 2>&1 &
rdv_pid=$!
for _ in $(seq 1 50); do
    grep -qs listening "$WF_LOGDIR/netns-rendezvous.log" && break
    sleep 0.1
done

# run_job NAME "ENV..." BENCH-ARGS...: 8 ranks, rank r on host r/2 with
# hostname hostH; rank r's output in NAME.rank<r>; returns the first
# non-zero exit status.
run_job() {
    local name=$1 extra=$2 pids=() status=0 rc
    shift 2
    for ((r = 0; r < size; r++)); do
        local h=$((r / per_host))
        # shellcheck disable=SC2086
        timeout 120 ip netns exec "$(host_ns $h)" unshare --uts sh -c \
            'hostname "$0" && exec "$@"' "host$h" \
            env WEFT_RANK=$r WEFT_WORLD_SIZE=$size \
            WEFT_RENDEZVOUS="$(host_ip 0):$port" WEFT_JOB_ID="$name" \
            WEFT_LOG=info WEFT_LOG_SUBSYS=init,net $extra \
            "$BENCH" "$@" > "$WF_LOGDIR/$name.rank$r" 2>&1 &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || { rc=$?; [ $status != 0 ] || status=$rc; }
    done
    return $status
}

bench_ok() { # NAME "ENV" ARGS...: exit 0 on all ranks and a clean check
    local name=$1
    run_job "$@" || { tail -n 5 "$WF_LOGDIR/$name".rank*; return 1; }
    cat "$WF_LOGDIR/$name.rank0"
    wf_bench_clean "$WF_LOGDIR/$name.rank0"
}

args=(-b 8 -e 1M -f 32 -w 1 -r 2 -c 1)
for coll in allreduce broadcast reduce allgather reducescatter alltoall \
            gather scatter sendrecv barrier; do
    wf_check "netns_$coll" bench_ok "netns_$coll" "" "$coll" "${args[@]}"
done

# Every rank of the allreduce run chose eth0 and its own 10.77.0.x.
auto_interface() {
    local r h ok=0
    for ((r = 0; r < size; r++)); do
        h=$((r / per_host))
        grep -q "tcp: rank $r listening on $(host_ip $h):[0-9]* (eth0)" \
            "$WF_LOGDIR/netns_allreduce.rank$r" || { echo "rank $r:"; grep 'listening' "$WF_LOGDIR/netns_allreduce.rank$r"; ok=1; }
    done
    return $ok
}
wf_check netns_auto_interface auto_interface

# Each rank: local rank r%2 of 2 on host r/2, machine r/2 of 4 (hostname +
# boot id; the boot id is the same for all, so the hostnames alone tell the
# hosts apart).
local_rank() {
    local r ok=0
    for ((r = 0; r < size; r++)); do
        grep -q "rank $r of $size joined job netns_allreduce .*local rank $((r % per_host)) of $per_host on host host$((r / per_host)), node $((r / per_host)) of $hosts\$" \
            "$WF_LOGDIR/netns_allreduce.rank$r" || { echo "rank $r:"; grep 'joined job' "$WF_LOGDIR/netns_allreduce.rank$r"; ok=1; }
    done
    return $ok
}
wf_check netns_local_rank local_rank

wf_check netns_ifname bench_ok netns_ifname WEFT_SOCKET_IFNAME=eth0 \
    allreduce "${args[@]}"

# The decoy named explicitly: no peer can reach 10.78.H.1, so every rank
# must fail with a message (not hang) within a few 5 s timeouts, well before the 120 s
# guard of run_job.
unreachable() {
    local start=$SECONDS r
    if run_job netns_unreach "WEFT_SOCKET_IFNAME=decoy0 WEFT_TIMEOUT=5s" \
        allreduce -b 8 -e 8 -w 0 -r 1; then
        echo "the job succeeded over an interface that reaches no peer"
        return 1
    fi
    echo "failed after $((SECONDS - start)) s"
    [ $((SECONDS - start)) -lt 50 ] || return 1
    for ((r = 0; r < size; r++)); do
        grep -q 'listening on 10.78' "$WF_LOGDIR/netns_unreach.rank$r" || return 1
        grep -q "^weft-bench: rank $r: .*failed" "$WF_LOGDIR/netns_unreach.rank$r" || return 1
    done
    cat "$WF_LOGDIR/netns_unreach.rank0"
}
wf_check netns_ifname_unreachable unreachable

# A client host that vanishes (its link cut, no FIN, no RST) must not
# leave its job on the server: a second weft-rendezvous with
# WEFT_RDV_KEEPALIVE=2s must log conn_lost and job_end for the job within
# about twice that (20 s allowed).
vanished_host() {
    local log=$WF_LOGDIR/netns-keepalive-rdv.log client t0
    ip netns exec "$(host_ns 0)" env WEFT_RDV_KEEPALIVE=2s \
        "$RDV" --listen "$(host_ip 0):$((port + 1))" > "$log" 2>&1 &
    local ka_pid=$!
    # Rank 1 of 2 whose rank 0 never comes: it waits on the server.
    ip netns exec "$(host_ns 3)" env WEFT_RANK=1 WEFT_WORLD_SIZE=2 \
        WEFT_RENDEZVOUS="$(host_ip 0):$((port + 1))" WEFT_JOB_ID=vanishing \
        WEFT_TIMEOUT=120s "$BENCH" allreduce -b 8 -e 8 \
        > "$WF_LOGDIR/netns-keepalive-client.log" 2>&1 &
    client=$!
    for _ in $(seq 1 100); do
        grep -qs 'event=job_start job=vanishing' "$log" && break
        sleep 0.1
    done
    grep -q 'event=job_start job=vanishing' "$log" || { cat "$log"; kill $ka_pid $client; return 1; }
    ip -n "$(host_ns 3)" link set eth0 down
    t0=$SECONDS
    while [ $((SECONDS - t0)) -lt 20 ] &&
          ! grep -q 'event=job_end job=vanishing .*jobs=0' "$log"; do
        sleep 0.5
    done
    echo "job state gone after $((SECONDS - t0)) s"
    kill $ka_pid $client 2>/dev/null
    wait $ka_pid $client 2>/dev/null
    ip -n "$(host_ns 3)" link set eth0 up
    cat "$log"
    grep -q "event=conn_lost peer=$(host_ip 3):[0-9]* job=vanishing" "$log" &&
        grep -q 'event=job_end job=vanishing .*jobs=0' "$log"
}
wf_check netns_rendezvous_drops_vanished_host vanished_host
exit 0
