#!/bin/bash
# bench-netns.sh - `make bench-netns`: weft across several "hosts" on one
# box.  Each host is a network namespace with one veth link to a bridge in
# a switch namespace; each host's link is shaped with tc tbf to a link
# rate, both ways (NETNS_INGRESS), so the ranks see a multi-host network
# with a known physical limit.
# Every algorithm of each collective, and auto-selection, runs over it and
# the table gives bus bandwidth as a fraction of the link rate, from the
# slowest rank's timed loop (bench-netns-table.py says why not a median).
#
# Everything lives inside namespaces created here: no address or route is
# added to the host's own namespace, and an EXIT trap kills the ranks and
# deletes the namespaces (which deletes their links) however the run ends.
# The one host-wide change, a congestion control added to the host's
# allowed list (NETNS_CC below), is undone by the same trap.
# Needs root and `ip netns`; otherwise it prints why and exits 0 (skipped).
#
# usage: bench-netns.sh BUILD_DIR
# environment:
#   NETNS_HOSTS   number of hosts (4)
#   NETNS_RANKS_PER_HOST  ranks on each host (1); with several, weft
#                 reaches the ranks of its own host by shared memory
#   NETNS_RATES   tbf rates, one table set per rate ("1gbit 5gbit")
#   NETNS_BURST   tbf burst; below ~256kb tbf itself limits (256kb)
#   NETNS_MTU     link MTU (1500)
#   NETNS_COLLS   collectives ("allreduce broadcast")
#   NETNS_SIZES   weft-bench size options ("-b 64K -e 64M -f 4")
#   NETNS_ITERS   weft-bench iteration options ("-w 2 -r 5")
#   NETNS_ROUNDS  rounds (1): each round runs every algorithm, auto and
#                 Open MPI once, in turn, so the machine's drift falls on
#                 all of them alike; the table gives each cell's median
#                 over the rounds and the ratios of those medians
#   NETNS_LOOP_BYTES  at least this much per size's timed loop (32M): each
#                 host's tbf bucket (NETNS_BURST) is full when a loop starts
#                 and lets that much through at the veth's own speed, so a
#                 loop 100 times longer keeps it to about 1% of the time
#   NETNS_ALGOS   algorithms to force (default: every one the library has
#                 for the collective), auto is always added
#   NETNS_OUT     directory for the raw CSV (BUILD_DIR/bench-netns)
#   NETNS_INGRESS 1 (default): shape each host's ingress as well, with the
#                 same tbf on its switch port, as a full-duplex NIC carries
#                 the link rate each way; 0: egress only, where a rank that
#                 receives from several hosts at once (a binomial reduce's
#                 root) gets several links' worth
#   NETNS_MPI     1 (default): Open MPI's run of each collective on the same
#                 namespaces (vader inside a host, tcp across, launched by
#                 scripts/netns-rsh.sh), the table's "mpi" column; 0: none
#   NETNS_MPI_ITERS  its iteration options ("-w 2 -r 10")
#   NETNS_SIM_ALPHA  per-message latency in us that the table's check of
#                 weft-info --simulate against the measured times uses (2);
#                 its beta is the link rate
#   NETNS_CC      the hosts' TCP congestion control (cubic, the kernel's
#                 own default; added to the host's allowed list for the
#                 run); "host" keeps this machine's choice
set -euo pipefail
# The namespaces stand for hosts but share one kernel, where weft would
# copy large messages straight between the processes (WEFT_TCP_CMA_MIN)
# instead of sending them over the veths under test.
export WEFT_TCP_CMA_MIN=0
# shellcheck source=scripts/netns-lib.sh
. "$(dirname "$0")/netns-lib.sh"

build=${1:?usage: bench-netns.sh BUILD_DIR}
hosts=${NETNS_HOSTS:-4}
per_host=${NETNS_RANKS_PER_HOST:-1}
nranks=$((hosts * per_host))
rates=${NETNS_RATES:-1gbit 5gbit}
burst=${NETNS_BURST:-256kb}
mtu=${NETNS_MTU:-1500}
colls=${NETNS_COLLS:-allreduce broadcast}
sizes=${NETNS_SIZES:--b 64K -e 64M -f 4}
iters="${NETNS_ITERS:--w 2 -r 5} --loop-bytes ${NETNS_LOOP_BYTES:-32M}"
rounds=${NETNS_ROUNDS:-1}
sim_alpha=${NETNS_SIM_ALPHA:-2}
out=${NETNS_OUT:-$build/bench-netns}
cc=${NETNS_CC:-cubic}
ingress=${NETNS_INGRESS:-1}
bench=$build/bin/weft-bench
with_mpi=${NETNS_MPI:-1}
mpi_iters=${NETNS_MPI_ITERS:--w 2 -r 10}
agent=$(cd "$(dirname "$0")" && pwd)/netns-rsh.sh

skip() {
    echo "bench-netns: skipped: $*"
    exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "ip (iproute2) is not installed"
command -v tc >/dev/null || skip "tc (iproute2) is not installed"
[ -x "$bench" ] || { echo "bench-netns: $bench not built" >&2; exit 1; }

prefix="wfnb$$"
switch="$prefix-sw"
subnet="10.77.0"
port=29400
pids=()

allowed_cc_key=net.ipv4.tcp_allowed_congestion_control
allowed_cc_before=""

cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    wf_netns_delete "$prefix"
    if [ -n "$allowed_cc_before" ]; then
        sysctl -qw "$allowed_cc_key=$allowed_cc_before" ||
            echo "bench-netns: could not restore $allowed_cc_key to" \
                 "'$allowed_cc_before'" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

host_ns() { echo "$prefix-h$1"; }
host_ip() { echo "$subnet.$(($1 + 1))"; }

# The switch's namespace first: where none can be made the run is skipped
# before anything else changes.
ip netns add "$switch" || skip "cannot create network namespaces here"

# A namespace other than the host's may only choose a congestion control
# the host lists as allowed (the kernel answers EPERM otherwise), and after
# a boot that list holds only the host's default and reno.  Allow ours for
# the run; cleanup restores the list.
if [ "$cc" != host ]; then
    allowed=$(sysctl -n "$allowed_cc_key")
    if [[ " $allowed " != *" $cc "* ]]; then
        allowed_cc_before=$allowed
        sysctl -qw "$allowed_cc_key=$allowed $cc" ||
            { echo "bench-netns: cannot allow congestion control '$cc'" \
                   "(available: $(sysctl -n net.ipv4.tcp_available_congestion_control))" >&2
              allowed_cc_before=""; exit 1; }
    fi
fi

# The switch: a bridge in its own namespace, one port per host.
ip -n "$switch" link add br0 type bridge
ip -n "$switch" link set br0 up
for ((h = 0; h < hosts; h++)); do
    ns=$(host_ns $h)
    ip netns add "$ns"
    ip -n "$switch" link add "p$h" mtu "$mtu" type veth peer name eth0 \
        netns "$ns" mtu "$mtu"
    ip -n "$switch" link set "p$h" master br0 up
    ip -n "$ns" addr add "$(host_ip $h)/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    # Each namespace starts with this machine's congestion control.  A
    # host of a cluster has its own, CUBIC unless its administrator chose
    # otherwise; this VM's BBR let the ring's lockstep flows settle below
    # the link rate in some runs and not in others
    # (bench/results/2026-11-27-shaped-links.md).
    if [ "$cc" != host ]; then
        ip netns exec "$ns" sysctl -qw net.ipv4.tcp_congestion_control="$cc" ||
            { echo "bench-netns: no congestion control '$cc' here" >&2; exit 1; }
    fi
done
cc_used=$(ip netns exec "$(host_ns 0)" sysctl -n net.ipv4.tcp_congestion_control)

# A tc rate ("1gbit", "500mbit", "5gbit") in Mbit/s.
rate_mbps() {
    local r=${1,,}
    case $r in
        *gbit) echo $(( ${r%gbit} * 1000 )) ;;
        *mbit) echo "${r%mbit}" ;;
        *kbit) echo $(( ${r%kbit} / 1000 > 0 ? ${r%kbit} / 1000 : 1 )) ;;
        *) echo 0 ;;
    esac
}

# Starts NETNS_RANKS_PER_HOST ranks per host, consecutive ranks on one
# host; rank 0's CSV goes to $1, the others' output to files beside it
# (shown when a run fails).  Each host's ranks get its name as their host
# name (a UTS namespace): weft tells machines apart by host name and boot
# id, and with one name for all it would take the hosts for one machine
# (its shared segment across them, no node-aware algorithms).
run_job() { # csv coll algo job_id
    local csv=$1 coll=$2 algo=$3 job=$4 rank_pids=() status=0 h k r
    for ((h = 0; h < hosts; h++)); do
        for ((k = 0; k < per_host; k++)); do
            r=$((h * per_host + k))
            # shellcheck disable=SC2086
            ip netns exec "$(host_ns $h)" unshare --uts sh -c \
                'hostname "$0" && exec "$@"' "$(host_ns $h)" \
                env WEFT_RANK=$r \
                WEFT_WORLD_SIZE=$nranks \
                WEFT_RENDEZVOUS="$(host_ip 0):$port" WEFT_JOB_ID="$job" \
                WEFT_SOCKET_IFNAME=eth0 WEFT_LINK_MBPS="$link_mbps" \
                "$bench" "$coll" -a "$algo" $sizes $iters -c 1 --percentiles \
                --csv > "$out/rank$r.out" 2>&1 &
            rank_pids+=($!)
        done
    done
    for pid in "${rank_pids[@]}"; do
        wait "$pid" || status=$?
    done
    if [ "$status" != 0 ]; then
        echo "bench-netns: $coll -a $algo failed (exit $status):" >&2
        tail -n 5 "$out"/rank*.out >&2
        return "$status"
    fi
    grep -v '^#' "$out/rank0.out" > "$csv"
}

# Open MPI on the same hosts, its output in weft-bench's CSV columns.
run_mpi_job() { # csv coll
    local csv=$1 coll=$2 hostlist="" h
    for ((h = 0; h < hosts; h++)); do
        hostlist+="${hostlist:+,}$(host_ns $h):$per_host"
    done
    # mpirun itself runs on host 0, named like its namespace (netns-rsh.sh).
    if ! ip netns exec "$(host_ns 0)" unshare --uts sh -c \
        "hostname '$(host_ns 0)' && exec mpirun --allow-run-as-root \
         --oversubscribe --bind-to none --mca plm_rsh_agent '$agent' \
         --host '$hostlist' -np $nranks --mca pml ob1 \
         --mca btl self,vader,tcp --mca btl_tcp_if_include eth0 \
         --mca oob_tcp_if_include eth0 '$build/compare/mpi_allreduce' \
         -c $coll $sizes $mpi_iters" > "$out/mpi.out" 2>&1; then
        echo "bench-netns: Open MPI's $coll failed:" >&2
        tail -n 5 "$out/mpi.out" >&2
        return 1
    fi
    awk -v n="$nranks" 'BEGIN { print "variant,size,time_us,busbw_gbs,wrong,ranks" }
        !/^#/ { printf "out-of-place,%s,%s,%s,%s,%d\n", $1, $3, $5, $6, n }' \
        "$out/mpi.out" > "$csv"
}

mkdir -p "$out"
ip netns exec "$(host_ns 0)" "$build/bin/weft-rendezvous" \
    --listen "$(host_ip 0):$port" > "$out/rendezvous.log" 2>&1 &
pids+=($!)
sleep 0.5

shaped="egress"
[ "$ingress" = 0 ] || shaped="egress and ingress"
echo "# $hosts hosts (network namespaces) x $per_host ranks on a bridge, $shaped tbf burst $burst, MTU $mtu, TCP $cc_used"
echo "# weft-bench $sizes $iters; $rounds round(s), medians; busbw as % of the link rate"
status=0
for rate in $rates; do
    # The cost model is told the shaped rate: the namespaces share one
    # kernel, so weft would otherwise take their links for memory copies.
    link_mbps=$(rate_mbps "$rate")
    for ((h = 0; h < hosts; h++)); do
        ip netns exec "$(host_ns $h)" tc qdisc replace dev eth0 root tbf \
            rate "$rate" burst "$burst" latency 50ms
        # The switch port's egress is the host's ingress.
        [ "$ingress" = 0 ] ||
            ip netns exec "$switch" tc qdisc replace dev "p$h" root tbf \
                rate "$rate" burst "$burst" latency 50ms
    done
    for coll in $colls; do
        algos=${NETNS_ALGOS:-$("$build/bin/weft-info" --simulate "$coll" \
            --ranks "$nranks" --ranks-per-node "$per_host" --bytes 1024 |
            awk '!/^#/ {print $1}')}
        peer=
        for ((round = 1; round <= rounds; round++)); do
            for algo in $algos auto; do
                csv="$out/$coll-$rate-$algo.$round.csv"
                run_job "$csv" "$coll" "$algo" "nb-$coll-$rate-$algo-$round" ||
                    status=1
            done
            if [ "$with_mpi" = 1 ] && [ -x "$build/compare/mpi_allreduce" ]; then
                run_mpi_job "$out/$coll-$rate-mpi.$round.csv" "$coll" &&
                    peer=mpi || status=1
            fi
        done
        # shellcheck disable=SC2086
        python3 "$(dirname "$0")/bench-netns-table.py" \
            --simulate "$build/bin/weft-info" --ranks "$nranks" \
            --ranks-per-node "$per_host" --alpha "$sim_alpha" \
            "$out" "$coll" "$rate" $algos $peer auto || status=1
    done
done
exit "$status"
