#!/bin/bash
# latency.sh - `make bench-latency`: the 8-byte allreduce of weft over its
# sockets (WEFT_TCP_CMA_MIN=0) against Open MPI over TCP, and on 2 ranks
# against the bare floor (bench/floor/tcp_floor.c: two processes
# exchanging a 48-byte frame in a recv() loop, no library), interleaved
# round by round.  weft is timed twice: by weft_allreduce.c, the twin of
# Open MPI's harness (the same loop, timed as a whole; the ratio is taken
# from it), and by weft-bench, which times every call on its own.
# Issue 5 asks for at most 0.8x Open MPI's time; on this shared VM the
# speed of everything moves by a third within minutes, so each round runs
# them all back to back and the verdict is the median of the rounds' own
# ratios, not a ratio of two best cases.
#
# Prints one line per round (µs per call) and, per rank count, the medians
# and the median of weft-tcp / mpi-tcp over the rounds.
#
# usage: latency.sh BUILD_DIR
# environment: LATENCY_RANKS ("2 4"), LATENCY_ROUNDS (10),
#              LATENCY_ITERS ("-w 2000 -r 20000")
set -euo pipefail

build=${1:?usage: latency.sh BUILD_DIR}
ranks=${LATENCY_RANKS:-2 4}
rounds=${LATENCY_ROUNDS:-10}
iters=${LATENCY_ITERS:--w 2000 -r 20000}
# shellcheck disable=SC2034 # read by the runners (runners.sh)
sizes="-b 8 -e 8"

# shellcheck source=bench/compare/runners.sh
. "$(dirname "$0")/runners.sh"

# Field 4 of the runners' lines: the average time per call in µs.
time_of() { # name N
    run_one "$1" "$2" | awk 'NR == 1 { print $4 }'
}

# The floor's time per round with the recv() loop, the way weft waits.
floor_time() {
    "$build/bin/tcp-floor" 20000 48 | awk '$1 == "recv" { print $2 }'
}

median() { # values...
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
        END { printf "%.2f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "# make bench-latency: allreduce of 8 bytes (float32 sum), $iters," \
    "$rounds rounds, each round weft-tcp, mpi-tcp, weft-bench and" \
    "(2 ranks) the floor"
echo "# weft-tcp: bench/compare/weft_allreduce, timed as Open MPI's" \
    "harness times mpi-tcp; weft-bench: the same library, timed per call"
echo "# $(nproc) cores, kernel $(uname -r), load average before:" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
for n in $ranks; do
    echo
    echo "| ranks | round | weft-tcp (µs) | mpi-tcp (µs) | floor (µs) | weft-tcp / mpi-tcp | weft-bench (µs) |"
    echo "|---:|---:|---:|---:|---:|---:|---:|"
    w_all=() m_all=() f_all=() r_all=() b_all=()
    for r in $(seq "$rounds"); do
        w=$(time_of weft-tcp-harness "$n")
        m=$(time_of mpi-tcp "$n")
        b=$(time_of weft-tcp "$n")
        f=-
        if [ "$n" = 2 ]; then
            f=$(floor_time)
            f_all+=("$f")
        fi
        ratio=$(awk -v w="$w" -v m="$m" 'BEGIN { printf "%.2f", w / m }')
        w_all+=("$w") m_all+=("$m") r_all+=("$ratio") b_all+=("$b")
        echo "| $n | $r | $w | $m | $f | $ratio | $b |"
    done
    fm=-
    [ "${#f_all[@]}" -gt 0 ] && fm=$(median "${f_all[@]}")
    echo "| $n | median | $(median "${w_all[@]}") | $(median "${m_all[@]}") |" \
        "$fm | $(median "${r_all[@]}") | $(median "${b_all[@]}") |"
done
echo
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
