#!/usr/bin/env bash
# run.sh - `make test-rdma`: boots one QEMU guest with Soft-RoCE (rxe-vm.sh)
# and runs the verbs suite (guest-suite.sh) inside it, then, unless
# RDMA_TWO_GUESTS=0, allreduce and broadcast across two guests joined by a
# virtual wire.  Ends with "N passed, N failed, N skipped" and exits
# non-zero when something failed.  Where no guest can run (not root, no
# QEMU and no way to install it, no kernel package) it prints the reason
# and counts one skip: the suite needs a real kernel RDMA stack, which this
# host may lack.
#
#   test/rdma-vm/run.sh BUILD_DIR [PART...]     (parts: guest-suite.sh)
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
B=${1:?usage: run.sh BUILD_DIR [PART...]}
shift
PARTS=${*:-conformance colls errors}
T0=$SECONDS

skip() {
    echo "test-rdma skipped: $*"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
}

[[ $(id -u) == 0 ]] || skip "needs root (QEMU shares / over 9p; packages)"
[[ -e /usr/include/infiniband/verbs.h && -f $B/obj/transport/ib/ib_init.o ]] ||
    skip "weft was built without the verbs transport (libibverbs-dev missing, or IB=0)"
if ! "$HERE/rxe-vm.sh" --prepare >"$B/rdma-vm-prepare.log" 2>&1; then
    skip "cannot prepare the guest: $(tail -1 "$B/rdma-vm-prepare.log")"
fi

PASS=0 FAIL=0 SKIP=0
add_counts() { # adds the last summary line of file $1
    local line
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$1" | tail -1)
    if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped ]]; then
        PASS=$((PASS + BASH_REMATCH[1]))
        FAIL=$((FAIL + BASH_REMATCH[2]))
        SKIP=$((SKIP + BASH_REMATCH[3]))
    else
        echo "FAIL  $2 (no summary line)"
        FAIL=$((FAIL + 1))
    fi
}

LOG1=$B/rdma-vm-guest.log
echo "== one guest (rxe0 on a dummy netdev): $PARTS"
"$HERE/rxe-vm.sh" "$HERE/guest-suite.sh" "$B" $PARTS 2>&1 | tee "$LOG1"
add_counts "$LOG1" "one-guest suite"

if [[ ${RDMA_TWO_GUESTS:-1} != 0 ]]; then
    echo "== two guests (e1000 over UDP on 127.0.0.1)"
    PA=$((41000 + RANDOM % 1000)) PB=$((42000 + RANDOM % 1000))
    ROLE=0 PEER_IP=10.77.1.2 "$HERE/rxe-vm.sh" --cpus 1 --mem 1536 --timeout 600 \
        --link $PA:$PB --ip 10.77.1.1/24 "$HERE/guest-suite.sh" "$B" two-guest \
        >"$B/rdma-vm-guest-a.log" 2>&1 &
    pa=$!
    ROLE=1 PEER_IP=10.77.1.1 "$HERE/rxe-vm.sh" --cpus 1 --mem 1536 --timeout 600 \
        --link $PB:$PA --ip 10.77.1.2/24 "$HERE/guest-suite.sh" "$B" two-guest \
        >"$B/rdma-vm-guest-b.log" 2>&1
    wait $pa
    for g in a b; do
        sed "s/^/[guest $g] /" "$B/rdma-vm-guest-$g.log" | grep -v '^\[guest .\] *$'
        add_counts "$B/rdma-vm-guest-$g.log" "two-guest ($g)"
    done
fi

echo "test-rdma took $((SECONDS - T0)) s"
echo "$PASS passed, $FAIL failed, $SKIP skipped"
[[ $FAIL == 0 ]]
