#!/bin/bash
# cpu.sh - `make bench-cpu`: the CPU each library spends per GB of
# allreduce, all ranks together, for the harnesses of `make compare`
# (bench/compare/runners.sh) on the same message size.
#
# Each harness runs twice, with LO and then HI timed iterations, under
# bash's `time` (user + system seconds of every process it waited for,
# the ranks included); the difference between the two runs is the CPU of
# the extra iterations alone, without start-up (hwloc, MPI's launch,
# connection set-up).  weft-bench runs every iteration out of place and
# in place, so its extra operations are twice the extra iterations.
# CPU seconds per GB = extra CPU seconds / (extra operations x size).
#
# usage: cpu.sh BUILD_DIR
# environment: CPU_RANKS ("2 4"), CPU_SIZE (64M), CPU_ITERS ("5 25":
#              LO and HI)
set -euo pipefail

build=${1:?usage: cpu.sh BUILD_DIR}
ranks=${CPU_RANKS:-2 4}
size=${CPU_SIZE:-64M}
read -r lo hi <<< "${CPU_ITERS:-5 25}"
sizes="-b $size -e $size"
# shellcheck source=bench/compare/runners.sh
. "$(dirname "$0")/runners.sh"

# CPU seconds (user + system) of one run of harness $1 on $2 ranks with
# $3 timed iterations; its results go to $out_file.
cpu_of() {
    local t
    iters="-w 1 -r $3"
    t=$( { TIMEFORMAT='%3U %3S'; time run_one "$1" "$2" > "$out_file" \
             2> /dev/null; } 2>&1 )
    awk '{ printf "%.3f", $1 + $2 }' <<< "$t"
}

out_file=$(mktemp)
trap 'rm -f "$out_file"' EXIT
bytes=$(numfmt --from=iec "$size")
echo "# make bench-cpu: allreduce float32 sum of $size, ranks: $ranks," \
    "iterations $lo and $hi"
echo "# $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 |
    sed 's/^ *//'), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| ranks | harness | CPU s, $lo iterations | CPU s, $hi iterations |" \
    "CPU s per GB | / weft-cma |"
echo "|---|---|---:|---:|---:|---:|"
for n in $ranks; do
    base=
    for name in weft-cma weft-shm weft-tcp $peers; do
        a=$(cpu_of "$name" "$n" "$lo")
        b=$(cpu_of "$name" "$n" "$hi")
        if awk '$3 != 0 { bad = 1 } END { exit !bad }' "$out_file"; then
            echo "WARNING: $name on $n ranks reported wrong results" >&2
        fi
        case $name in weft-*) per_iter=2 ;; *) per_iter=1 ;; esac
        per_gb=$(awk -v a="$a" -v b="$b" -v ops=$(( (hi - lo) * per_iter )) \
            -v bytes="$bytes" 'BEGIN { printf "%.3f", (b - a) / (ops * bytes / 1e9) }')
        base=${base:-$per_gb}
        ratio=$(awk -v x="$per_gb" -v y="$base" 'BEGIN { printf "%.2f", x / y }')
        echo "| $n | $name | $a | $b | $per_gb | $ratio |"
    done
done
echo
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
