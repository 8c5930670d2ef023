#!/bin/bash
# Measures every algorithm of a collective, and auto-selection, with
# weft-bench on local ranks, and prints a markdown table of bus bandwidth
# per size with auto's ratio to the best forced algorithm.
#
#   scripts/algo-sweep.sh COLLECTIVE "RANKS..." [MIN] [MAX] [FACTOR]
#   e.g. scripts/algo-sweep.sh allreduce "2 4" 8 64M 8
#
# Environment: BUILD (default build), WARMUP (2), ITERS (5), ROUNDS (1).
# Each cell is the median (p50) iteration time; with ROUNDS > 1 the whole
# set of runs repeats, interleaved, and each cell keeps its best round, so
# a burst of someone else's load spoils one round of every algorithm
# rather than every round of one.
set -eu
coll=$1
ranks=$2
min=${3:-8}
max=${4:-64M}
factor=${5:-8}
build=${BUILD:-build}
warmup=${WARMUP:-2}
iters=${ITERS:-5}
rounds=${ROUNDS:-1}
bench="$build/bin/weft-bench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The algorithm names come from the library itself.
algos=$("$build/bin/weft-info" --simulate "$coll" --ranks 4 --bytes 1024 |
        awk '!/^#/ {print $1}')
for ((round = 0; round < rounds; round++)); do
for n in $ranks; do
    for a in $algos auto; do
        # Fields of --csv: 14 variant, 15 size, 18 p50_us, 21 busbw.
        "$bench" "$coll" -n "$n" -a "$a" -b "$min" -e "$max" -f "$factor" \
            -w "$warmup" -r "$iters" -c 0 --percentiles --csv |
            awk -F, -v n="$n" -v a="$a" \
                'NR > 1 && $14 == "out-of-place" {print n "," a "," $15 "," $18 "," $21}' \
            >> "$tmp/rows.csv"
    done
done
done
python3 - "$tmp/rows.csv" "$coll" <<'PY'
import collections, sys
rows = collections.defaultdict(dict)
algos = []
for line in open(sys.argv[1]):
    n, a, size, t, bw = line.strip().split(",")
    cell = rows[(int(n), int(size))]
    cell[a] = min(float(t), cell.get(a, float("inf")))
    if a not in algos:
        algos.append(a)
forced = [a for a in algos if a != "auto"]
print(f"### {sys.argv[2]}: median time per operation (us), best round; ratio = auto / best forced")
print()
print("| ranks | size (B) | " + " | ".join(algos) + " | best | auto/best |")
print("|---" * (len(algos) + 4) + "|")
worst = 0.0
for (n, size), t in sorted(rows.items()):
    best = min(forced, key=lambda a: t.get(a, float("inf")))
    ratio = t["auto"] / t[best] if t.get(best) else float("nan")
    worst = max(worst, ratio)
    cells = " | ".join(f"{t[a]:.1f}" if a in t else "-" for a in algos)
    print(f"| {n} | {size} | {cells} | {best} | {ratio:.2f} |")
print()
print(f"worst auto/best ratio: {worst:.2f}")
PY
