# shellcheck shell=bash
# lib.sh - shared by the test/launchers/ scripts (sourced, not run).
#
# Each part script records one line per check in $WF_RESULTS:
#   PASS name | FAIL name: why | SKIP name: reason
# and run.sh counts them.  A check's output goes to $WF_LOGDIR/NAME.log and
# is shown when it fails.

: "${WF_RESULTS:?run the parts through test/launchers/run.sh}"
: "${WF_BUILD:=build}"
: "${WF_LOGDIR:=$(mktemp -d /tmp/weft-launchers-XXXXXX)}"
BENCH=$(readlink -f "$WF_BUILD/bin/weft-bench")
RDV=$(readlink -f "$WF_BUILD/bin/weft-rendezvous")
# weft_comm_init from the environment alone, checked (comm_init_check.c).
LAUNCH_CHECK=$(readlink -f "$WF_BUILD/test/comm_init_check")
# PyTorch's tutorial on weft (tutorial.py), with make python's venv.
TUTORIAL=$(readlink -f "$(dirname "${BASH_SOURCE[0]}")/tutorial.py")
WF_PY=${WEFT_VENV:-$(readlink -f "$(dirname "${BASH_SOURCE[0]}")/../..")/.venv}/bin/python

# Whether WF_PY has torch and weft's native backend (else: why not).
wf_torch_ready() {
    [ -x "$WF_PY" ] || { echo "no $WF_PY (make python builds the venv with PyTorch)"; return 1; }
    "$WF_PY" -c 'import weft.torch' >/dev/null 2>&1 ||
        { echo "$WF_PY cannot import weft.torch (make python builds the native backend)"; return 1; }
}

# How many distinct ranks wrote "WHAT: rank R of N ok" to FILE.  Launchers
# forward every rank's output through one stream and can splice one rank's
# line into the middle of another's (mpirun did: "...ok (...)tutorial: rank
# 1 of 4 ok"), so the match is not anchored at a line's start.
wf_ranks_ok() { # WHAT N FILE
    grep -o "$1: rank [0-9]* of $2 ok" "$3" | sort -u | wc -l
}

wf_pass() { echo "PASS $1" | tee -a "$WF_RESULTS"; }
wf_skip() { echo "SKIP $1: $2" | tee -a "$WF_RESULTS"; }
wf_fail() {
    echo "FAIL $1: $2" | tee -a "$WF_RESULTS"
    if [ -f "$WF_LOGDIR/$1.log" ]; then
        echo "---- last lines of $WF_LOGDIR/$1.log"
        tail -n 25 "$WF_LOGDIR/$1.log"
        echo "----"
    fi
}

# wf_check NAME CMD...: runs CMD with its output in NAME.log; passes when
# it exits 0.
wf_check() {
    local name=$1
    shift
    if "$@" > "$WF_LOGDIR/$name.log" 2>&1; then
        wf_pass "$name"
    else
        wf_fail "$name" "exit status $? ($*)"
    fi
}

# wf_bench_clean FILE: weft-bench's own element-wise check found nothing
# wrong and every row ran (the footer is printed only by rank 0).
wf_bench_clean() {
    grep -q '^# Out of bounds values : 0 OK' "$1"
}

# A free TCP port on 127.0.0.1 (free a moment ago).
wf_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# A port P, below Linux's ephemeral range (32768-60999) so no outgoing
# connection takes P or P+1 meanwhile, with P and P+1 free a moment ago:
# for torchrun, whose rank 0 hosts weft's rendezvous on MASTER_PORT+1.
wf_free_port_pair_low() {
    python3 - <<'PY'
import random, socket
for _ in range(200):
    p = random.randrange(20000, 32000)
    socks = []
    try:
        for q in (p, p + 1):
            s = socket.socket()
            s.bind(("127.0.0.1", q))
            socks.append(s)
        print(p)
        break
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
PY
}
