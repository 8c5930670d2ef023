#!/bin/bash
# netns-topo.sh - the topology's NIC choice steers the TCP transport, run
# by test/fault/test_netns.c: two "hosts" (network namespaces) joined by
# two veth pairs eth0 and eth1 (scripts/netns-lib.sh), WEFT_SOCKET_IFNAME
# unset, and WEFT_TOPO_FILE=test/topo/one-socket-2eth.xml, whose two
# equally near NICs are named eth0 and eth1, so the topology chooses both.
# The rendezvous server listens on host a's eth0, so eth0 is the bind hint.
#   both     eth1 10.79.1.0/24 on both hosts: with WEFT_TCP_STREAMS unset
#            (a stream per interface both hosts listen on) an allreduce of 1-16 MiB (weft-bench's element-wise check) puts
#            more than 16 MiB on eth0 AND eth1 of both hosts
#            (/sys/class/net/IF/statistics/tx_bytes), and the info log says
#            the topology chose both; then WEFT_SOCKET_IFNAME=eth0 wins over
#            the topology: eth1 stays idle;
#   unreach  host a's eth1 cannot reach host b: (subnet) host b's eth1 is
#            in a subnet host a has no route to (connect fails at once),
#            (down) host b's end of eth1 is down (no answer at all; run
#            with WEFT_TCP_STREAMS=2, since by default host b then offers
#            one address and the pair opens one stream).  The
#            job must still pass over eth0 within 15 s (its connect timeout
#            is 20 s) and the info log must say why ("cannot reach").
# Everything lives in namespaces created here and deleted by an EXIT trap.
# Exits 0 when all pass, 1 on a failure, 77 (skip) without root, ip,
# namespaces or hwloc.
#
# usage: netns-topo.sh BUILD_DIR both|unreach
set -uo pipefail
# The namespaces stand for hosts but share one kernel, where weft would
# copy large messages straight between the processes (WEFT_TCP_CMA_MIN)
# instead of sending them over the veths under test.
export WEFT_TCP_CMA_MIN=0
# shellcheck source=scripts/netns-lib.sh
. "$(dirname "$0")/../../scripts/netns-lib.sh"

build=${1:?usage: netns-topo.sh BUILD_DIR both|unreach}
mode=${2:?usage: netns-topo.sh BUILD_DIR both|unreach}
topo=$(cd "$(dirname "$0")/../topo" && pwd)/one-socket-2eth.xml
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "ip (iproute2) is not installed"
"$build/bin/weft-info" | grep -q 'topology: hwloc' ||
    skip "built without hwloc: no topology to steer the transport"

unset WEFT_SOCKET_IFNAME # the point: the topology chooses
prefix="wftp$$"
out=$(mktemp -d)
trap 'wf_netns_delete "$prefix"; rm -rf "$out"' EXIT
trap 'exit 130' INT TERM

fail=0
# Runs both ranks with the topology: tag $1, then extra environment.
run() {
    local status=0 tag=$1
    shift
    wf_netns_allreduce "$prefix" "$build" "$out/$tag" "$@" \
        WEFT_JOB_ID="topo$tag" WEFT_TOPO_FILE="$topo" \
        WEFT_TIMEOUT=20s WEFT_LOG=info || status=$?
    if [ "$status" != 0 ]; then
        echo "FAIL: $tag: a rank exited with $status after $WF_SECS s"
        grep -h -E 'tcp:|FAIL|error' "$out/$tag".* | head -n 20
        exit 1
    fi
    echo "$tag: $WF_SECS s; tx MiB host0 eth0 ${WF_TX[0,0]} eth1" \
        "${WF_TX[0,1]}, host1 eth0 ${WF_TX[1,0]} eth1 ${WF_TX[1,1]}"
    grep -h 'tcp:.*\(chosen\|reach\)' "$out/$tag".*
}
check_log() { # tag pattern what
    grep -q "$2" "$out/$1".* || { echo "FAIL: $1: no '$2' ($3)"; fail=1; }
}

case $mode in
both)
    wf_netns_two_hosts "$prefix" "$build" || skip "cannot create namespaces"
    run both
    for h in 0 1; do for i in 0 1; do
        [ "${WF_TX[$h,$i]}" -gt 16 ] ||
            { echo "FAIL: eth$i of host $h carried ${WF_TX[$h,$i]} MiB"; fail=1; }
    done; done
    check_log both "eth0 10.79.0.1, eth1 10.79.1.1 chosen: nearest NIC" \
        "host a's info line naming both NICs"
    run ifname WEFT_SOCKET_IFNAME=eth0
    for h in 0 1; do
        [ "${WF_TX[$h,0]}" -gt 16 ] && [ "${WF_TX[$h,1]}" -lt 1 ] ||
            { echo "FAIL: WEFT_SOCKET_IFNAME=eth0 did not win on host $h"; fail=1; }
    done
    ! grep -q "chosen:" "$out"/ifname.* ||
        { echo "FAIL: the topology chose with WEFT_SOCKET_IFNAME set"; fail=1; }
    ;;
unreach)
    for variant in subnet down; do
        net=1
        [ $variant = down ] || net=2
        wf_netns_two_hosts "$prefix" "$build" $net ||
            skip "cannot create namespaces"
        [ $variant = subnet ] || ip -n "$prefix-b" link set eth1 down
        # With eth1 down host b offers one address, and by default the
        # pair then opens one stream; two streams make host a try eth1.
        if [ $variant = down ]; then
            run $variant WEFT_TCP_STREAMS=2
        else
            run $variant
        fi
        [ "$WF_SECS" -lt 15 ] ||
            { echo "FAIL: $variant: took $WF_SECS s"; fail=1; }
        for h in 0 1; do
            [ "${WF_TX[$h,0]}" -gt 16 ] ||
                { echo "FAIL: $variant: eth0 of host $h idle"; fail=1; }
        done
        check_log $variant "cannot reach peer 1" "the fallback's reason"
    done
    ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
[ "$fail" = 0 ] && echo "PASS: $mode"
exit "$fail"
