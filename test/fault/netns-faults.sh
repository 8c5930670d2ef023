#!/bin/bash
# netns-faults.sh - network faults between 4 ranks on 4 "hosts" (network
# namespaces on a bridge), run by test/fault/test_netns.c.
#
# MODE loss (the default):
#   1. 1% and then 5% of TCP packets dropped on every host's egress
#      (nftables `numgen random`): allreduce from 8 B to 4 MiB must give
#      exactly the right results (weft-bench's element-wise check);
#   2. one host's link cut (`ip link set eth0 down`) in the middle of a
#      loop of allreduces: every rank must exit with an error within twice
#      WEFT_TIMEOUT, none may hang.
# MODE netem (needs sch_netem, which the build host's kernel lacks; `make
# test-rdma` runs it inside its Debian guest): every host's egress delayed
# with jitter (which reorders), reordered, duplicating and corrupting
# packets in turn; allreduce 8 B..4 MiB must stay exact.
# Everything lives in namespaces created here and deleted by an EXIT trap.
# Exits 0 when all pass, 1 on a failure, 77 (skip) without root, ip, nft
# (loss) or sch_netem (netem), or namespaces.
#
# usage: netns-faults.sh BUILD_DIR [loss|netem]
set -uo pipefail
# The namespaces stand for hosts but share one kernel, where weft would
# copy large messages straight between the processes (WEFT_TCP_CMA_MIN)
# instead of sending them over the veths under test.
export WEFT_TCP_CMA_MIN=0
# shellcheck source=scripts/netns-lib.sh
. "$(dirname "$0")/../../scripts/netns-lib.sh"

build=${1:?usage: netns-faults.sh BUILD_DIR [loss|netem]}
mode=${2:-loss}
bench=$build/bin/weft-bench
hosts=4
timeout_s=3
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "ip (iproute2) is not installed"
if [ "$mode" = loss ]; then
    command -v nft >/dev/null || skip "nft (nftables) is not installed"
else
    command -v tc >/dev/null || skip "tc (iproute2) is not installed"
fi

prefix="wfnf$$"
out=$(mktemp -d)
cleanup() {
    wf_netns_delete "$prefix"
    rm -rf "$out"
}
trap cleanup EXIT

ns() { echo "$prefix-h$1"; }
ip_of() { echo "10.78.0.$(($1 + 1))"; }

ip netns add "$prefix-sw" 2>/dev/null || skip "cannot create network namespaces"
ip -n "$prefix-sw" link add br0 type bridge
ip -n "$prefix-sw" link set br0 up
for ((h = 0; h < hosts; h++)); do
    ip netns add "$(ns $h)"
    ip -n "$prefix-sw" link add "p$h" type veth peer name eth0 netns "$(ns $h)"
    ip -n "$prefix-sw" link set "p$h" master br0 up
    ip -n "$(ns $h)" addr add "$(ip_of $h)/24" dev eth0
    ip -n "$(ns $h)" link set eth0 up
    ip -n "$(ns $h)" link set lo up
done
if [ "$mode" = loss ]; then
    ip netns exec "$(ns 0)" nft list tables >/dev/null 2>&1 ||
        skip "nftables does not work in a namespace on this kernel"
else
    modprobe sch_netem 2>/dev/null
    err=$(ip netns exec "$(ns 0)" tc qdisc add dev eth0 root netem delay 1ms 2>&1) ||
        skip "tc netem does not work on this kernel ($err)"
    ip netns exec "$(ns 0)" tc qdisc del dev eth0 root
fi

# Rank 0 hosts the rendezvous in-process (no extra server to clean up).
run_ranks() { # job extra-bench-args...
    local job=$1
    shift
    for ((h = 0; h < hosts; h++)); do
        ip netns exec "$(ns $h)" env WEFT_RANK=$h WEFT_WORLD_SIZE=$hosts \
            WEFT_RENDEZVOUS="$(ip_of 0):29511" WEFT_RENDEZVOUS_SERVE=1 \
            WEFT_JOB_ID="$job" WEFT_SOCKET_IFNAME=eth0 \
            WEFT_TIMEOUT=${run_timeout:-$timeout_s}s \
            "$bench" allreduce "$@" > "$out/$job.$h" 2>&1 &
        pids[h]=$!
    done
}

# Runs allreduce 8 B..4 MiB with element checks on every host; $1 names
# the case.  Faults make connections slow to start: a long timeout (these
# runs test results, not deadlines).
exact_run() {
    local name=$1 h ok=1
    pids=()
    run_timeout=60 run_ranks "$name" -b 8 -e 4M -f 8 -w 1 -r 3 -c 1
    for ((h = 0; h < hosts; h++)); do
        wait "${pids[h]}" || ok=0
    done
    [ $ok = 1 ] && grep -q "Out of bounds values : 0 OK" "$out/$name.0"
}

status=0
if [ "$mode" = netem ]; then
    i=0
    for fault in "delay 2ms 2ms" "delay 1ms reorder 25% 50%" "duplicate 5%" \
                 "corrupt 1%"; do
        for ((h = 0; h < hosts; h++)); do
            ip netns exec "$(ns $h)" tc qdisc replace dev eth0 root netem $fault
        done
        if exact_run "netem$i"; then
            echo "ok: netem $fault: allreduce 8 B..4 MiB exact on $hosts hosts"
        else
            echo "FAIL: netem $fault"
            tail -n 5 "$out"/netem$i.*
            status=1
        fi
        i=$((i + 1))
    done
    exit $status
fi

for loss in 1 5; do
    for ((h = 0; h < hosts; h++)); do
        ip netns exec "$(ns $h)" nft -f - <<EOF
table inet wfloss
delete table inet wfloss
table inet wfloss {
    chain out {
        type filter hook output priority 0;
        meta l4proto tcp numgen random mod 100 < $loss drop
    }
}
EOF
    done
    # Lost SYNs wait out 1 s retransmission timers.
    if exact_run "loss$loss"; then
        echo "ok: $loss% packet loss: allreduce 8 B..4 MiB exact on $hosts hosts"
    else
        echo "FAIL: $loss% packet loss"
        tail -n 5 "$out"/loss$loss.*
        status=1
    fi
done
for ((h = 0; h < hosts; h++)); do
    ip netns exec "$(ns $h)" nft delete table inet wfloss
done

# Link cut: a long loop, then host 2 loses its link.
pids=()
run_ranks cut -b 64K -e 64K -w 1 -r 1000000 -c 0
sleep 2
ip -n "$(ns 2)" link set eth0 down
cut_at=$(date +%s.%N)
deadline=$(awk -v t="$cut_at" -v s=$timeout_s 'BEGIN { printf "%.3f", t + 2 * s + 2 }')
before() { awk -v now="$(date +%s.%N)" -v d="$1" 'BEGIN { exit !(now < d) }'; }
for ((h = 0; h < hosts; h++)); do
    while kill -0 "${pids[h]}" 2>/dev/null &&
          before "$deadline"; do
        sleep 0.1
    done
    if kill -0 "${pids[h]}" 2>/dev/null; then
        echo "FAIL: link cut: rank $h still running $((2 * timeout_s + 2)) s after the cut"
        kill -9 "${pids[h]}" 2>/dev/null
        status=1
    elif wait "${pids[h]}"; then
        echo "FAIL: link cut: rank $h exited 0"
        status=1
    elif ! grep -Eq "ERR_TIMEOUT|ERR_REMOTE|timed out|lost peer" "$out/cut.$h"; then
        echo "FAIL: link cut: rank $h failed without naming a timeout or a lost peer:"
        tail -n 3 "$out/cut.$h"
        status=1
    else
        took=$(awk -v now="$(date +%s.%N)" -v t="$cut_at" 'BEGIN { printf "%.2f", now - t }')
        echo "ok: link cut: rank $h failed within $took s: $(grep -Em1 "ERR_|timed out|lost peer" "$out/cut.$h" | cut -c1-160)"
    fi
done
exit $status
