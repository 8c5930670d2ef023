#!/bin/bash
# compare.sh - `make compare`: weft-bench allreduce and broadcast against
# Open MPI (TCP on loopback, and its shared-memory path) and, for
# allreduce, Gloo's ring, ring-chunked and halving-doubling (TCP on
# 127.0.0.1), on the same sizes, iterations and rank counts, run back to
# back.  weft runs three ways: weft-shm, its default on one machine
# (shared memory), the counterpart of Open MPI's shared-memory path; and
# forced onto TCP, weft-tcp with every byte through its sockets
# (WEFT_TCP_CMA_MIN=0), the same wire as the TCP peers, and weft-cma
# with TCP's single copy.  Prints one table per collective and rank
# count: busbw (GB/s) of each, weft-tcp's ratio to the best peer over TCP
# and weft-shm's to mpi-shm, and draws each table as a plot
# (compare-COLL-N.png beside the raw outputs; needs gnuplot).
#
# The whole round (every harness on every rank count) runs COMPARE_REPEAT
# times, interleaved, each round starting with the next harness, and each
# cell is the best of its rounds: on a small
# shared machine a burst of someone else's load then spoils one round of
# everybody rather than every run of one harness.
#
# usage: compare.sh BUILD_DIR
# environment: COMPARE_COLLS ("allreduce broadcast"), COMPARE_RANKS ("2 4"),
#              COMPARE_SIZES ("-b 8 -e 64M -f 4"),
#              COMPARE_ITERS ("-w 5 -r 20"), COMPARE_REPEAT (3),
#              COMPARE_OUT (raw outputs, default BUILD_DIR/compare/results)
set -euo pipefail

build=${1:?usage: compare.sh BUILD_DIR}
ranks=${COMPARE_RANKS:-2 4}
colls=${COMPARE_COLLS:-allreduce broadcast}
sizes=${COMPARE_SIZES:--b 8 -e 64M -f 4}
iters=${COMPARE_ITERS:--w 5 -r 20}
repeat=${COMPARE_REPEAT:-3}
out=${COMPARE_OUT:-$build/compare/results}
mkdir -p "$out"

# shellcheck source=bench/compare/runners.sh
. "$(dirname "$0")/runners.sh"

# The harnesses of collective $1: weft's three paths and the peers that
# have it (the Gloo harness is allreduce only).
harnesses_of() {
    if [ "$1" = allreduce ]; then
        echo "weft-tcp weft-cma weft-shm $peers"
    else
        echo "weft-tcp weft-cma weft-shm mpi-tcp mpi-shm"
    fi
}

# Joins the per-runner files on size into one markdown table, the best
# busbw of every (runner, size).
table() { # collective N
    awk -v c="$1" -v n="$2" -v names_s="$(harnesses_of "$1")" -v dir="$out" '
    BEGIN {
        np = split(names_s, names, " ")
        for (i = 1; i <= np; i++) {
            f = dir "/" names[i] "-" c "-" n ".txt"
            while ((getline line < f) > 0) {
                split(line, v, " ")
                k = names[i] SUBSEP v[1]
                if (!(k in bw) || v[2] + 0 > bw[k] + 0) bw[k] = v[2]
                if (v[3] != 0) bad[names[i]] = 1
                if (!(v[1] in seen)) { seen[v[1]] = 1; sizes[++ns] = v[1] }
            }
            close(f)
        }
        printf "| %s | ranks | size (B) |", c
        for (i = 1; i <= np; i++) printf " %s |", names[i]
        printf " weft-tcp / best tcp | weft-shm / mpi-shm |\n|---|---|---:|"
        for (i = 1; i <= np + 2; i++) printf "---:|"
        printf "\n"
        for (s = 1; s <= ns; s++) {
            size = sizes[s]; btcp = 0
            printf "| %s | %d | %d |", c, n, size
            for (i = 1; i <= np; i++) {
                k = names[i] SUBSEP size
                fmt = (k in bw) ? " %.3g |" : " - |"
                printf fmt, bw[k]
                if (names[i] ~ /^weft-/ || !(k in bw)) continue
                if (names[i] != "mpi-shm" && bw[k] + 0 > btcp) btcp = bw[k]
            }
            w = bw["weft-tcp" SUBSEP size]
            fmt = (btcp > 0) ? " %.2f |" : " - |"
            printf fmt, w / (btcp > 0 ? btcp : 1)
            m = bw["mpi-shm" SUBSEP size] + 0
            w = bw["weft-shm" SUBSEP size]
            fmt = (m > 0) ? " %.2f |\n" : " - |\n"
            printf fmt, w / (m > 0 ? m : 1)
        }
        for (i = 1; i <= np; i++)
            if (names[i] in bad)
                printf "WARNING: %s reported wrong results\n", names[i]
    }'
}

echo "# make compare: $colls float32 (allreduce: sum), $sizes $iters," \
    "ranks: $ranks, best of $repeat rounds"
echo "# $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 |
    sed 's/^ *//'), kernel $(uname -r)"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# raw outputs in $out"
for c in $colls; do
    for n in $ranks; do
        for name in $(harnesses_of "$c"); do
            : > "$out/$name-$c-$n.txt"
        done
    done
done
# Each round starts with another harness: whichever runs first after the
# previous rank count's last one is slower at small sizes
# (bench/results/README.md lists the record).
for c in $colls; do
    read -ra harnesses <<< "$(harnesses_of "$c")"
    for round in $(seq "$repeat"); do
        first=$(( (round - 1) % ${#harnesses[@]} ))
        order=("${harnesses[@]:first}" "${harnesses[@]:0:first}")
        for n in $ranks; do
            for name in "${order[@]}"; do
                echo "# round $round: $c, $name on $n ranks" >&2
                if ! coll=$c run_one "$name" "$n" >> "$out/$name-$c-$n.txt"
                then
                    echo "# $c, $name on $n ranks failed in round $round" >&2
                fi
            done
        done
    done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
for c in $colls; do
    for n in $ranks; do
        table "$c" "$n"
        echo
    done
done
echo "busbw in GB/s (nccl-tests definitions: allreduce algbw * 2(n-1)/n,"
echo "broadcast algbw), best of $repeat rounds; weft is out-of-place, Gloo in"
echo "place, broadcast from rank 0.  weft-shm is weft's default on one machine,"
echo "shared memory (WEFT_TRANSPORT=auto); mpi-shm is Open MPI's shared-memory"
echo "path; weft-tcp and weft-cma are weft forced onto TCP (WEFT_TRANSPORT=tcp),"
echo "every byte through its sockets and with its single copy"
echo "(WEFT_TCP_CMA_MIN) respectively; the other peers are on TCP."

# One plot per collective and rank count, every harness's best round.
for c in $colls; do
    for n in $ranks; do
        series=()
        for name in $(harnesses_of "$c"); do
            series+=("$name=$out/$name-$c-$n.txt")
        done
        png="$out/compare-$c-$n.png"
        if python3 "$(dirname "$0")/../../scripts/plotlines.py" --out "$png" \
            --ylog --bold weft-shm --ylabel "bus bandwidth (GB/s), best of $repeat rounds" \
            --title "make compare: $c float32, $n ranks, $(nproc) cores" \
            "${series[@]}"; then
            echo "plot: $png"
        fi
    done
done
