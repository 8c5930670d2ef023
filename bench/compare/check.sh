#!/bin/bash
# check.sh - `make bench-check`: a short `make compare` at 64 MiB on 2 and
# 4 ranks, failing when weft's allreduce busbw over TCP (weft-tcp, every
# byte through the sockets) falls below the best peer over loopback TCP
# (Open MPI's TCP path and Gloo's three algorithms; Open MPI's
# shared-memory path and weft's single copy are shown but not counted,
# they are not TCP).
# A regression guard for the TCP transport, not a unit test: on a shared
# machine a burst of load can fail it, so it takes the best of
# COMPARE_REPEAT rounds (default 3).
#
# usage: check.sh BUILD_DIR      (BENCH_CHECK_MIN: the ratio, default 1.0;
#        BENCH_CHECK_REPORT=FILE checks an earlier run's output instead)
set -euo pipefail

build=${1:?usage: check.sh BUILD_DIR}
min=${BENCH_CHECK_MIN:-1.0}
report=${BENCH_CHECK_REPORT:-}
if [ -z "$report" ]; then
    report=$build/compare/bench-check.md
    mkdir -p "$build/compare"
    COMPARE_RANKS=${COMPARE_RANKS:-2 4} COMPARE_SIZES="-b 64M -e 64M -f 2" \
    COMPARE_ITERS=${COMPARE_ITERS:--w 2 -r 10} \
    COMPARE_REPEAT=${COMPARE_REPEAT:-3} \
        "$(dirname "$0")/compare.sh" "$build" | tee "$report"
fi

# Table rows: | ranks | size | weft-tcp | weft-cma | peers... |
#             weft-tcp / best tcp | weft-cma / best |
awk -F'|' -v min="$min" '
    /^\| [0-9]+ \| 67108864 \|/ {
        ranks = $2 + 0; ratio = $(NF - 2)
        gsub(/ /, "", ratio)
        rows++
        if (ratio == "-" || ratio + 0 < min + 0) {
            printf "bench-check: FAIL: %d ranks, 64 MiB: weft-tcp / best TCP " \
                   "peer = %s (needs >= %s)\n", ranks, ratio, min
            bad++
        } else
            printf "bench-check: ok: %d ranks, 64 MiB: weft-tcp / best TCP " \
                   "peer = %s\n", ranks, ratio
    }
    /^WARNING/ { print "bench-check: FAIL: " $0; bad++ }
    END {
        if (rows == 0) { print "bench-check: FAIL: no 64 MiB rows"; exit 1 }
        exit bad > 0
    }' "$report"
