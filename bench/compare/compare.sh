#!/bin/bash
# compare.sh - `make compare`: weft-bench allreduce against Open MPI's
# MPI_Allreduce (TCP on loopback, and its default shared-memory path) and
# Gloo's ring, ring-chunked and halving-doubling allreduce (TCP on
# 127.0.0.1), on the same sizes, iterations and rank counts, run back to
# back.  weft runs twice: weft-tcp with every byte through its TCP sockets
# (WEFT_TCP_CMA_MIN=0), the same wire as the TCP peers, and weft-cma with
# its default single copy between ranks on one machine, the counterpart
# of Open MPI's shared-memory path.  Prints one table per rank count:
# busbw (GB/s) of each, weft-tcp's ratio to the best peer over TCP and
# weft-cma's to the best peer of all, and draws each table as a plot
# (compare-N.png beside the raw outputs; needs gnuplot).
#
# The whole round (every harness on every rank count) runs COMPARE_REPEAT
# times, interleaved, each round starting with the next harness, and each
# cell is the best of its rounds: on a small
# shared machine a burst of someone else's load then spoils one round of
# everybody rather than every run of one harness.
#
# usage: compare.sh BUILD_DIR
# environment: COMPARE_RANKS ("2 4"), COMPARE_SIZES ("-b 8 -e 64M -f 4"),
#              COMPARE_ITERS ("-w 5 -r 20"), COMPARE_REPEAT (3),
#              COMPARE_OUT (raw outputs, default BUILD_DIR/compare/results)
set -euo pipefail

build=${1:?usage: compare.sh BUILD_DIR}
ranks=${COMPARE_RANKS:-2 4}
sizes=${COMPARE_SIZES:--b 8 -e 64M -f 4}
iters=${COMPARE_ITERS:--w 5 -r 20}
repeat=${COMPARE_REPEAT:-3}
out=${COMPARE_OUT:-$build/compare/results}
mkdir -p "$out"

# shellcheck source=bench/compare/runners.sh
. "$(dirname "$0")/runners.sh"

# Joins the per-runner files on size into one markdown table, the best
# busbw of every (runner, size).
table() { # N
    awk -v n="$1" -v peers="$peers" -v dir="$out" '
    BEGIN {
        np = split("weft-tcp weft-cma " peers, names, " ")
        for (i = 1; i <= np; i++) {
            f = dir "/" names[i] "-" n ".txt"
            while ((getline line < f) > 0) {
                split(line, v, " ")
                k = names[i] SUBSEP v[1]
                if (!(k in bw) || v[2] + 0 > bw[k] + 0) bw[k] = v[2]
                if (v[3] != 0) bad[names[i]] = 1
                if (!(v[1] in seen)) { seen[v[1]] = 1; sizes[++ns] = v[1] }
            }
            close(f)
        }
        printf "| ranks | size (B) |"
        for (i = 1; i <= np; i++) printf " %s |", names[i]
        printf " weft-tcp / best tcp | weft-cma / best |\n|---|---:|"
        for (i = 1; i <= np + 2; i++) printf "---:|"
        printf "\n"
        for (s = 1; s <= ns; s++) {
            size = sizes[s]; best = 0; btcp = 0
            printf "| %d | %d |", n, size
            for (i = 1; i <= np; i++) {
                k = names[i] SUBSEP size
                fmt = (k in bw) ? " %.3g |" : " - |"
                printf fmt, bw[k]
                if (i <= 2 || !(k in bw)) continue
                if (bw[k] + 0 > best) best = bw[k]
                if (names[i] != "mpi-shm" && bw[k] + 0 > btcp) btcp = bw[k]
            }
            w = bw["weft-tcp" SUBSEP size]
            fmt = (btcp > 0) ? " %.2f |" : " - |"
            printf fmt, w / (btcp > 0 ? btcp : 1)
            w = bw["weft-cma" SUBSEP size]
            fmt = (best > 0) ? " %.2f |\n" : " - |\n"
            printf fmt, w / (best > 0 ? best : 1)
        }
        for (i = 1; i <= np; i++)
            if (names[i] in bad)
                printf "WARNING: %s reported wrong results\n", names[i]
    }'
}

echo "# make compare: allreduce float32 sum, $sizes $iters, ranks: $ranks," \
    "best of $repeat rounds"
echo "# $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 |
    sed 's/^ *//'), kernel $(uname -r)"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# raw outputs in $out"
for n in $ranks; do
    for name in weft-tcp weft-cma $peers; do
        : > "$out/$name-$n.txt"
    done
done
# Each round starts with another harness: whichever runs first after the
# previous rank count's last one is slower at small sizes (measured: weft
# over TCP, always first, was 0.7-0.8 of Open MPI up to 2 KiB in 20
# calls, where 2,000 calls put it level with the same path run second).
read -ra peer_list <<< "$peers"
harnesses=(weft-tcp weft-cma "${peer_list[@]}")
for round in $(seq "$repeat"); do
    first=$(( (round - 1) % ${#harnesses[@]} ))
    order=("${harnesses[@]:first}" "${harnesses[@]:0:first}")
    for n in $ranks; do
        for name in "${order[@]}"; do
            echo "# round $round: $name on $n ranks" >&2
            if ! run_one "$name" "$n" >> "$out/$name-$n.txt"; then
                echo "# $name on $n ranks failed in round $round" >&2
            fi
        done
    done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
for n in $ranks; do
    table "$n"
    echo
done
echo "busbw in GB/s (nccl-tests definition: algbw * 2(n-1)/n), best of"
echo "$repeat rounds; weft is out-of-place, Gloo in place; mpi-shm is Open"
echo "MPI's shared-memory path, the only peer not on TCP; weft-cma is weft"
echo "with its single copy between ranks on one machine (WEFT_TCP_CMA_MIN),"
echo "weft-tcp the same with every byte through its sockets."

# One plot per rank count, every harness's best round at each size.
for n in $ranks; do
    series=()
    for name in "${harnesses[@]}"; do
        series+=("$name=$out/$name-$n.txt")
    done
    png="$out/compare-$n.png"
    if python3 "$(dirname "$0")/../../scripts/plotlines.py" --out "$png" \
        --ylog --bold weft-tcp --ylabel "bus bandwidth (GB/s), best of $repeat rounds" \
        --title "make compare: allreduce float32 sum, $n ranks, $(nproc) cores" \
        "${series[@]}"; then
        echo "plot: $png"
    fi
done
