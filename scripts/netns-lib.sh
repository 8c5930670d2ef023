# netns-lib.sh - sourced by the scripts that build "hosts" out of network
# namespaces (scripts/bench-netns.sh, test/fault/netns-*.sh).

# Kills every process in, and deletes, each namespace whose name starts
# with "$1-" (deleting a namespace deletes its links).
wf_netns_delete() {
    local ns pid
    for ns in $(ip netns list | awk -v p="$1-" 'index($1, p) == 1 {print $1}'); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -9 "$pid" 2>/dev/null || true
        done
        ip netns del "$ns" 2>/dev/null || true
    done
}

# Two "hosts", namespaces "$1-a" and "$1-b", joined by two veth pairs eth0
# (10.79.0.0/24) and eth1 (10.79.1.0/24, or host b's end in 10.79.$3.0/24
# when $3 is given: a subnet host a has no route to), everything up, and a
# weft-rendezvous from build dir $2 on host a's eth0, 10.79.0.1:29500.
# Deletes namespaces of that prefix first; returns 1 when it cannot create
# namespaces.
wf_netns_two_hosts() {
    local a="$1-a" b="$1-b" i h net
    wf_netns_delete "$1"
    ip netns add "$a" 2>/dev/null || return 1
    ip netns add "$b"
    for i in 0 1; do
        ip -n "$a" link add "eth$i" type veth peer name "eth$i" netns "$b"
        for h in a b; do
            net=$i
            [ "$i$h" != 1b ] || net=${3:-1}
            ip -n "$1-$h" addr add "10.79.$net.$([ $h = a ] && echo 1 || echo 2)/24" \
                dev "eth$i"
            ip -n "$1-$h" link set "eth$i" up
        done
    done
    for h in a b; do ip -n "$1-$h" link set lo up; done
    ip netns exec "$a" "$2/bin/weft-rendezvous" --listen 10.79.0.1:29500 \
        > /dev/null 2>&1 &
    disown $! # killed with the namespace; no job-control notice
    sleep 0.5
}

# Runs rank 0 on host a and rank 1 on host b of prefix $1: weft-bench
# (build dir $2) allreduce 1-16 MiB with its element-wise check, output in
# $3.0 and $3.1, the remaining arguments as extra environment.  Sets
# WF_TX[h,i] (h 0 for host a, 1 for b; i the eth index) to the MiB each
# interface sent, and WF_SECS; returns nonzero when a rank failed.
declare -A WF_TX
wf_netns_allreduce() {
    local pfx=$1 build=$2 log=$3 status=0 pids=() before=() h i k=0 t0
    shift 3
    local hosts=("$pfx-a" "$pfx-b")
    for h in 0 1; do for i in 0 1; do
        before+=("$(ip netns exec "${hosts[$h]}" cat /sys/class/net/eth$i/statistics/tx_bytes)")
    done; done
    t0=$(date +%s)
    for h in 0 1; do
        ip netns exec "${hosts[$h]}" env WEFT_RANK=$h WEFT_WORLD_SIZE=2 \
            WEFT_RENDEZVOUS=10.79.0.1:29500 "$@" timeout 120 \
            "$build/bin/weft-bench" allreduce -b 1M -e 16M -f 4 -w 1 -r 5 \
            -c 1 > "$log.$h" 2>&1 &
        pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || status=$?; done
    WF_SECS=$(($(date +%s) - t0))
    for h in 0 1; do for i in 0 1; do
        WF_TX[$h,$i]=$((($(ip netns exec "${hosts[$h]}" cat /sys/class/net/eth$i/statistics/tx_bytes) - before[k]) >> 20))
        k=$((k + 1))
    done; done
    return "$status"
}
