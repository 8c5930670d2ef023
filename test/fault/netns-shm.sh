#!/usr/bin/env bash
# netns-shm.sh - one communicator over two kinds of link: 2 "hosts"
# (network namespaces joined by veths) x 2 ranks, WEFT_TRANSPORT=auto.
# Ranks of one namespace must reach each other by shared memory and the
# ranks of the other by tcp (the info log's "reaches peer P by T" lines
# for every pair a collective used), with weft-bench's element-wise check
# passing for allreduce and alltoall (which connects every pair) and
# bytes crossing the veth.  Each namespace gets a hostname of its own (a
# UTS namespace), so weft also counts two machines: each rank's join line
# must say local rank r % 2 of 2 on node r / 2 of 2.  The node-aware
# algorithms (WEFT_ALGO=hier) run every collective that has one over
# those two machines, checked the same way.  Namespaces are
# created here and deleted by an EXIT trap.  Exits 0 when all pass, 1 on
# a failure, 77 (skip) without root, ip or namespaces.
#
# usage: netns-shm.sh BUILD_DIR
set -uo pipefail
# shellcheck source=scripts/netns-lib.sh
. "$(dirname "$0")/../../scripts/netns-lib.sh"

build=${1:?usage: netns-shm.sh BUILD_DIR}
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "ip (iproute2) is not installed"
prefix="wfsh$$"
out=$(mktemp -d)
trap 'wf_netns_delete "$prefix"; rm -rf "$out"' EXIT
trap 'exit 130' INT TERM
wf_netns_two_hosts "$prefix" "$build" || skip "cannot create namespaces"

# The node-aware algorithms, forced, each with weft-bench's check: shm
# inside each namespace, tcp across.
hier_colls="allreduce broadcast reduce allgather reducescatter barrier"
before=$(ip netns exec "$prefix-a" cat /sys/class/net/eth0/statistics/tx_bytes)
fail=0
pids=()
# Each run has a job of its own: a rank that starts the second while a
# slower one still leaves the first would find its rank of the first job
# still claimed on the server.
for r in 0 1 2 3; do
    host=$([ $r -lt 2 ] && echo a || echo b)
    ip netns exec "$prefix-$host" env WEFT_RANK=$r WEFT_WORLD_SIZE=4 \
        WEFT_RENDEZVOUS=10.79.0.1:29500 \
        WEFT_SOCKET_IFNAME=eth0 WEFT_TIMEOUT=30s WEFT_LOG=info \
        WEFT_LOG_SUBSYS=net,init,coll timeout 240 unshare --uts sh -c \
        "hostname '$prefix-$host' &&
         WEFT_JOB_ID=shm2x2-allreduce '$build/bin/weft-bench' allreduce \
             -b 8 -e 4M -f 8 -w 1 -r 5 -c 1 &&
         WEFT_JOB_ID=shm2x2-alltoall '$build/bin/weft-bench' alltoall \
             -b 64 -e 1M -f 16 -w 1 -r 3 -c 1 &&
         for c in $hier_colls; do
             WEFT_JOB_ID=shm2x2-hier-\$c WEFT_ALGO=hier \
                 '$build/bin/weft-bench' \$c -b 8 -e 1M -f 16 -w 1 -r 3 \
                 -c 1 || exit 1
         done" \
        > "$out/$r" 2>&1 &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail=1; done
if [ $fail != 0 ]; then
    echo "FAIL: a rank exited with an error"
    grep -h -v ' info ' "$out"/* | head -n 30
    exit 1
fi
# Every "rank R reaches peer P by T": shm exactly when R and P share a
# namespace (ranks 0,1 on a; 2,3 on b).
pairs=$(grep -h -o 'rank [0-9]* reaches peer [0-9]* by [a-z]*' "$out"/* |
    awk '{ same = int($2 / 2) == int($5 / 2)
           want = same ? "shm" : "tcp"
           n++
           if ($7 != want) { print "FAIL: " $0 " (want " want ")"; bad++ } }
         END { printf "%d pairs\n", n; exit bad > 0 || n < 12 }') || {
    echo "$pairs"
    echo "FAIL: a pair used the wrong transport, or fewer than 12 choices logged"
    exit 1
}
echo "$pairs"
# Each rank's place: local rank r % 2 of 2 on node r / 2 of 2.
for r in 0 1 2 3; do
    grep -q "rank $r of 4 joined .*local rank $((r % 2)) of 2 on host .*, node $((r / 2)) of 2" "$out/$r" || {
        echo "FAIL: rank $r's join line does not give local rank $((r % 2)) of 2, node $((r / 2)) of 2:"
        grep -h 'joined job' "$out/$r" | head -n 2
        exit 1
    }
done
for c in $hier_colls; do
    grep -q "weft info coll: $c of .* algorithm hier (WEFT_ALGO" "$out/0" || {
        echo "FAIL: rank 0 logged no $c through the node-aware algorithm"
        exit 1
    }
done
grep -h '#wrong\|Out of bounds' "$out/0"
if grep -h 'Out of bounds values' "$out"/* | grep -qv ': 0 OK'; then
    echo "FAIL: wrong results"
    exit 1
fi
sent=$(( ($(ip netns exec "$prefix-a" cat /sys/class/net/eth0/statistics/tx_bytes) - before) >> 10 ))
[ "$sent" -gt 64 ] || { echo "FAIL: only $sent KiB crossed the veth"; exit 1; }
echo "PASS: shm inside each namespace, tcp across ($sent KiB over eth0)"
