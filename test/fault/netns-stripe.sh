#!/bin/bash
# netns-stripe.sh - TCP striping over two NICs, run by test/fault/
# test_netns.c: two "hosts" (network namespaces) joined by two veth pairs,
# eth0 (10.79.0.0/24) and eth1 (10.79.1.0/24).  Two ranks run allreduce
# 1 MiB..16 MiB with weft-bench's element-wise check and
# WEFT_SOCKET_IFNAME=eth0,eth1:
#   1. WEFT_TCP_STREAMS=1: only eth0 carries data (eth1 < 1 MiB each way),
#      which shows the counters tell the paths apart;
#   2. WEFT_TCP_STREAMS=2: eth0 AND eth1 each carry more than 16 MiB, read
#      from /sys/class/net/IF/statistics/tx_bytes in both namespaces;
#   3. WEFT_TCP_STREAMS unset: the same, since a pair then opens a stream
#      per interface both ends listen on.
# With RATE (e.g. 200mbit) every NIC's egress is shaped with tc tbf and the
# bus bandwidth of both runs is printed: two NICs should give about twice
# one (bench/results/2026-11-24-tcp-streams-and-two-nics.md).
# With RATE "uneven", eth0 is shaped to 200 Mbit/s and eth1 to 50 Mbit/s
# and only the default run is made: pieces in proportion to what each
# stream delivers must reach at least 60% of the 250 Mbit/s together
# (equal halves stop at 100 Mbit/s, twice the slower link; the same
# record, "Two NICs of different speed").
# Everything lives in namespaces created here and deleted by an EXIT trap.
# Exits 0 when all pass, 1 on a failure, 77 (skip) without root, ip or
# namespaces.
#
# usage: netns-stripe.sh BUILD_DIR [RATE|uneven]
set -uo pipefail
# The namespaces stand for hosts but share one kernel, where weft would
# copy large messages straight between the processes (WEFT_TCP_CMA_MIN)
# instead of sending them over the veths under test.
export WEFT_TCP_CMA_MIN=0
# shellcheck source=scripts/netns-lib.sh
. "$(dirname "$0")/../../scripts/netns-lib.sh"

build=${1:?usage: netns-stripe.sh BUILD_DIR [RATE|uneven]}
rate=${2:-}
rate1=$rate
if [ "$rate" = uneven ]; then
    rate=200mbit
    rate1=50mbit
fi
bench=$build/bin/weft-bench
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "ip (iproute2) is not installed"
[ -z "$rate" ] || command -v tc >/dev/null || skip "tc is not installed"

prefix="wfns$$"
out=$(mktemp -d)
cleanup() {
    wf_netns_delete "$prefix"
    rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wf_netns_two_hosts "$prefix" "$build" ||
    skip "cannot create network namespaces here"
for h in a b; do for i in 0 1; do
    r=$rate
    [ "$i" = 0 ] || r=$rate1
    [ -z "$r" ] || ip netns exec "$prefix-$h" tc qdisc replace \
        dev "eth$i" root tbf rate "$r" burst 256kb latency 50ms
done; done

# Runs both ranks with WEFT_TCP_STREAMS=$1 (unset for "unset");
# WF_TX[host,if] in MiB.
run() {
    local streams=$1 status=0 setting=()
    [ "$streams" = unset ] || setting=(WEFT_TCP_STREAMS="$streams")
    wf_netns_allreduce "$prefix" "$build" "$out/rank.$streams" \
        WEFT_JOB_ID="stripe$streams" WEFT_SOCKET_IFNAME=eth0,eth1 \
        "${setting[@]}" WEFT_TIMEOUT=30s || status=$?
    if [ "$status" != 0 ]; then
        echo "FAIL: WEFT_TCP_STREAMS=$streams: a rank exited with $status"
        tail -n 5 "$out"/rank."$streams".*
        return 1
    fi
    echo "WEFT_TCP_STREAMS=$streams: tx MiB host0 eth0 ${WF_TX[0,0]} eth1" \
        "${WF_TX[0,1]}, host1 eth0 ${WF_TX[1,0]} eth1 ${WF_TX[1,1]};" \
        "$(grep 'Avg bus bandwidth' "$out/rank.$streams.0")"
    grep -E '^ +[0-9]' "$out/rank.$streams.0"
}

fail=0
if [ "$rate1" != "$rate" ]; then
    run unset || exit 1
    busbw=$(awk '/Avg bus bandwidth/ { print $NF }' "$out/rank.unset.0")
    # GB/s against 60% of 250 Mbit/s (31.25 MB/s).
    if awk -v b="$busbw" 'BEGIN { exit !(b >= 0.6 * 0.03125) }'; then
        echo "PASS: $busbw GB/s over a $rate and a $rate1 link"
        exit 0
    fi
    echo "FAIL: $busbw GB/s over a $rate and a $rate1 link, below 60% of both"
    exit 1
fi
run 1 || exit 1
for h in 0 1; do
    [ "${WF_TX[$h,0]}" -gt 16 ] || { echo "FAIL: eth0 of host $h idle"; fail=1; }
    [ "${WF_TX[$h,1]}" -lt 1 ] || { echo "FAIL: eth1 of host $h used by one stream"; fail=1; }
done
for streams in 2 unset; do
    run "$streams" || exit 1
    for h in 0 1; do for i in 0 1; do
        [ "${WF_TX[$h,$i]}" -gt 16 ] || {
            echo "FAIL: WEFT_TCP_STREAMS=$streams: eth$i of host $h" \
                "carried ${WF_TX[$h,$i]} MiB"
            fail=1
        }
    done; done
done
[ "$fail" = 0 ] && echo "PASS: both NICs carried data with 2 streams and" \
    "with the default"
exit "$fail"
