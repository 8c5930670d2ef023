#!/bin/bash
# stalls.sh - `make bench-stalls`: does the time of an allreduce grow
# smoothly with its size?  Issue 5: Gloo stalls for tens of milliseconds
# around 64 KiB on loopback (delayed ACKs near the 65483-byte loopback
# MSS), and weft must not.  Every power of two from 4 KiB to 4 MiB, plus
# one float32 either side of 64 KiB and of the MSS, one size per run, for
# weft over its sockets (weft-tcp, WEFT_TCP_CMA_MIN=0) and the TCP peers
# of `make compare`, run by the same runners (runners.sh).  Prints the average time per call of each (µs) and
# each harness's worst stall: the largest time at a size over the
# smallest time at any larger size (a time that falls as the size grows
# is a stall of the smaller size; 1.00 is smooth).  Draws the times as
# BUILD_DIR/compare/stalls-N.png when gnuplot is installed.  Exits 1 when
# weft-tcp's worst stall exceeds STALLS_MAX (default 2.0): a regression
# guard, not a unit test.
#
# usage: stalls.sh BUILD_DIR
# environment: STALLS_RANKS ("2 4"), STALLS_ITERS ("-w 5 -r 50"),
#              STALLS_MAX (2.0), STALLS_HARNESSES (weft-tcp and the TCP
#              peers)
set -euo pipefail

build=${1:?usage: stalls.sh BUILD_DIR}
ranks=${STALLS_RANKS:-2 4}
iters=${STALLS_ITERS:--w 5 -r 50}
max=${STALLS_MAX:-2.0}
harnesses=${STALLS_HARNESSES:-weft-tcp mpi-tcp gloo-ring gloo-ringchunked gloo-hd}
out=$build/compare/stalls
mkdir -p "$out"

# shellcheck source=bench/compare/runners.sh
. "$(dirname "$0")/runners.sh"

size_list=()
for ((s = 4096; s <= 4194304; s *= 2)); do
    size_list+=("$s")
done
# 64 KiB and the loopback MSS (65483 bytes), one float32 either side.
size_list+=(65532 65540 65480 65484)
mapfile -t size_list < <(printf '%s\n' "${size_list[@]}" | sort -n)

echo "# make bench-stalls: allreduce float32 sum, one size per run, $iters;" \
    "average time per call (us)"
echo "# $(nproc) cores, kernel $(uname -r), load average before:" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
status=0
for n in $ranks; do
    for name in $harnesses; do
        : > "$out/$name-$n.txt"
        for s in "${size_list[@]}"; do
            # One size per run (runners.sh reads `sizes`); it prints
            # "size busbw wrong time_us", kept as "size time_us wrong".
            sizes="-b $s -e $s"
            run_one "$name" "$n" | awk '{ print $1, $4, $3 }' \
                >> "$out/$name-$n.txt" ||
                echo "# $name on $n ranks at $s bytes failed" >&2
        done
    done
    # The table, and each harness's worst stall.
    awk -v n="$n" -v names="$harnesses" -v dir="$out" -v max="$max" '
    BEGIN {
        nh = split(names, h, " ")
        for (i = 1; i <= nh; i++) {
            f = dir "/" h[i] "-" n ".txt"
            while ((getline line < f) > 0) {
                split(line, v, " ")
                t[h[i], v[1]] = v[2]
                if (v[3] != 0) bad_result[h[i]] = 1
                if (!(v[1] in seen)) { seen[v[1]] = 1; sz[++ns] = v[1] }
            }
            close(f)
        }
        # sort the sizes
        for (a = 1; a <= ns; a++)
            for (b = a + 1; b <= ns; b++)
                if (sz[b] + 0 < sz[a] + 0) { x = sz[a]; sz[a] = sz[b]; sz[b] = x }
        printf "\n| ranks | size (B) |"
        for (i = 1; i <= nh; i++) printf " %s |", h[i]
        printf "\n|---|---:|"
        for (i = 1; i <= nh; i++) printf "---:|"
        printf "\n"
        for (a = 1; a <= ns; a++) {
            printf "| %d | %d |", n, sz[a]
            for (i = 1; i <= nh; i++)
                printf((h[i], sz[a]) in t ? " %.1f |" : " - |", t[h[i], sz[a]])
            printf "\n"
        }
        printf "| %d | worst stall |", n
        for (i = 1; i <= nh; i++) {
            worst[i] = 1; at[i] = "-"
            for (a = 1; a <= ns; a++) {
                if (!((h[i], sz[a]) in t)) continue
                low = 0
                for (b = a + 1; b <= ns; b++)
                    if ((h[i], sz[b]) in t && (low == 0 || t[h[i], sz[b]] + 0 < low))
                        low = t[h[i], sz[b]] + 0
                if (low > 0 && t[h[i], sz[a]] / low > worst[i]) {
                    worst[i] = t[h[i], sz[a]] / low; at[i] = sz[a]
                }
            }
            printf " %.2f (at %s) |", worst[i], at[i]
        }
        printf "\n"
        for (i = 1; i <= nh; i++)
            if (h[i] in bad_result)
                printf "WARNING: %s reported wrong results\n", h[i]
        for (i = 1; i <= nh; i++)
            if (h[i] == "weft-tcp" && worst[i] > max + 0) {
                printf "bench-stalls: FAIL: weft-tcp on %d ranks: %.2f at %s " \
                       "bytes (more than %s)\n", n, worst[i], at[i], max
                bad = 1
            }
        exit bad
    }' || status=1
    series=()
    for name in $harnesses; do
        series+=("$name=$out/$name-$n.txt")
    done
    if python3 "$(dirname "$0")/../../scripts/plotlines.py" \
        --out "$build/compare/stalls-$n.png" --ylog --bold weft-tcp \
        --ylabel "average time per call (us)" \
        --title "make bench-stalls: allreduce float32 sum, $n ranks, $(nproc) cores" \
        "${series[@]}"; then
        echo "plot: $build/compare/stalls-$n.png"
    fi
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$status"
