#!/bin/bash
# ab.sh - `make bench-ab BASE=DIR`: two builds of weft, interleaved round
# by round, to tell whether a change moved the speed.  Each round runs,
# for each rank count, the 8-byte allreduce (weft's twin of Open MPI's
# harness, as make bench-latency does) and the 64 MiB allreduce over weft's
# sockets (weft-bench, as make bench-check does), base first in odd
# rounds and new first in even ones, so that the machine's drift within a
# round falls on both sides alike.  Open MPI over TCP runs in every round
# too, as a yardstick of how fast the machine was.
#
# Prints one line per round and measurement, then per measurement the
# medians and the median of the rounds' own new / base ratios: of times
# for 8 B (below 1: new is faster), of busbw for 64 MiB (above 1: new is
# faster).
#
# usage: ab.sh BASE_BUILD NEW_BUILD
# environment: AB_RANKS ("2 4"), AB_ROUNDS (8),
#              AB_SMALL_ITERS ("-w 2000 -r 20000"), AB_LARGE_ITERS ("-w 2 -r 10")
set -euo pipefail

base=${1:?usage: ab.sh BASE_BUILD NEW_BUILD}
new=${2:?usage: ab.sh BASE_BUILD NEW_BUILD}
ranks=${AB_RANKS:-2 4}
rounds=${AB_ROUNDS:-8}
small_iters=${AB_SMALL_ITERS:--w 2000 -r 20000}
large_iters=${AB_LARGE_ITERS:--w 2 -r 10}

# shellcheck source=bench/compare/runners.sh
. "$(dirname "$0")/runners.sh"

# run BUILD NAME N SIZES ITERS FIELD: one runner's field (2 busbw, 4 time).
run() {
    # shellcheck disable=SC2034 # read by the runners
    local build=$1 sizes=$4 iters=$5
    run_one "$2" "$3" | awk -v f="$6" 'NR == 1 { print $f }'
}

median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
        END { printf "%.4g\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

for b in "$base" "$new"; do
    for f in bin/weft-bench bin/weftrun compare/weft_allreduce; do
        [ -x "$b/$f" ] || { echo "ab.sh: $b/$f is missing (make all $b/compare/weft_allreduce)" >&2; exit 2; }
    done
done
[ -x "$new/compare/mpi_allreduce" ] ||
    { echo "ab.sh: $new/compare/mpi_allreduce is missing" >&2; exit 2; }

echo "# make bench-ab: base $base, new $new, $rounds rounds, ranks $ranks"
echo "# small: 8-byte allreduce, µs per call (weft_allreduce $small_iters)"
echo "# large: 64 MiB allreduce busbw GB/s (weft-bench, WEFT_TCP_CMA_MIN=0, $large_iters)"
echo "# round ranks what base new mpi-tcp"
declare -A ratios base_vals new_vals mpi_vals
for ((r = 1; r <= rounds; r++)); do
    for n in $ranks; do
        for what in small large; do
            if [ $what = small ]; then
                args=("weft-tcp-harness" "$n" "-b 8 -e 8" "$small_iters" 4)
            else
                args=("weft-tcp" "$n" "-b 64M -e 64M" "$large_iters" 2)
            fi
            if ((r % 2)); then
                a=$(run "$base" "${args[@]}"); b=$(run "$new" "${args[@]}")
            else
                b=$(run "$new" "${args[@]}"); a=$(run "$base" "${args[@]}")
            fi
            m=$(run "$new" mpi-tcp "$n" "${args[2]}" "${args[3]}" "${args[4]}")
            echo "$r $n $what $a $b $m"
            key="$n $what"
            base_vals[$key]+="$a "
            new_vals[$key]+="$b "
            mpi_vals[$key]+="$m "
            ratios[$key]+="$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }') "
        done
    done
done
echo
echo "| ranks | what | base (median) | new (median) | mpi-tcp (median) | new / base (median of rounds) | range |"
echo "# small: µs per call, a ratio below 1 is new faster; large: busbw GB/s, above 1 is new faster" >&2
echo "|---:|---|---:|---:|---:|---:|---|"
for n in $ranks; do
    for what in small large; do
        key="$n $what"
        # shellcheck disable=SC2086
        lo=$(printf '%s\n' ${ratios[$key]} | sort -g | head -1)
        # shellcheck disable=SC2086
        hi=$(printf '%s\n' ${ratios[$key]} | sort -g | tail -1)
        # shellcheck disable=SC2086
        echo "| $n | $what | $(median ${base_vals[$key]}) | $(median ${new_vals[$key]}) | $(median ${mpi_vals[$key]}) | $(median ${ratios[$key]}) | $lo-$hi |"
    done
done
