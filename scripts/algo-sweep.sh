#!/bin/bash
# Measures every algorithm of a collective, and auto-selection, with
# weft-bench on local ranks, and prints a markdown table of the time per
# operation per size with auto's ratio to the best forced algorithm.
#
#   scripts/algo-sweep.sh COLLECTIVE "RANKS..." [MIN] [MAX] [FACTOR]
#   e.g. scripts/algo-sweep.sh allreduce "2 4" 8 64M 8
#
# Environment: BUILD (default build), WARMUP (2), ITERS (5), ROUNDS (1),
# EXTRA_SIZES (sizes to add to MIN * FACTOR^k, e.g. "256M"), INTERLEAVE
# (0; 1: one job per size runs every algorithm with weft-bench --algos,
# their calls taking turns, instead of one job per algorithm).
# Rooted collectives (broadcast, reduce, gather, scatter) run with
# weft-bench --sync, a barrier before every timed call: back to back their
# calls overlap, and the time would be a pipeline's throughput, which the
# cost model (one call) does not estimate (docs/bench.md, Timing).
# Each cell is the median (p50) iteration time.  Every size runs every
# algorithm, auto last, before the next size starts, so a burst of someone
# else's load lands on neighbouring cells of one size rather than on every
# size of one algorithm; with ROUNDS > 1 the whole sweep repeats and each
# cell keeps its best round.  Above 1 MiB the iterations shrink with the
# size (at least 3 timed, 1 warm-up) so that 256 MiB stays affordable.
# The "pick" column is what auto ran (weft's info log); "auto/best"
# compares auto's own measured time with the best forced one, and
# "pick/best" the picked algorithm's forced time with it, which leaves out
# the noise between two runs of the same algorithm.  With INTERLEAVE=1 the
# algorithms share one job's processes and moments, so the noise between
# launches (placement, other load) drops out of the ratios as well.
set -eu
coll=$1
ranks=$2
min=${3:-8}
max=${4:-64M}
factor=${5:-8}
extra=${EXTRA_SIZES:-} # more sizes off the geometric series, e.g. 256M
build=${BUILD:-build}
warmup=${WARMUP:-2}
iters=${ITERS:-5}
rounds=${ROUNDS:-1}
interleave=${INTERLEAVE:-0}
bench="$build/bin/weft-bench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bytes() { numfmt --from=iec "$1"; }
sizes=()
for ((s = $(bytes "$min"); s <= $(bytes "$max"); s *= factor)); do
    sizes+=("$s")
done
for s in $extra; do
    sizes+=("$(bytes "$s")")
done

# The algorithms auto chose for $coll of $logged bytes of type $1 (a grep
# pattern) on $n ranks, as weft's info log names them, joined by "+".
logged_picks() {
    grep -o "$coll of $logged bytes ($1) on $n ranks: algorithm [a-z_]* (cost model" \
        "$tmp/log" | awk '{print $(NF-2)}' | sort -u | tr '\n' '+'
}

case $coll in
    broadcast|reduce|gather|scatter) sync=--sync ;;
    *) sync= ;;
esac

# The algorithm names come from the library itself.
algos=$("$build/bin/weft-info" --simulate "$coll" --ranks 4 --bytes 1024 |
        awk '!/^#/ {print $1}')
for ((round = 0; round < rounds; round++)); do
for n in $ranks; do
    for s in "${sizes[@]}"; do
        scale=$(( s > 1048576 ? s / 1048576 : 1 ))
        r=$(( iters / scale > 3 ? iters / scale : 3 ))
        w=$(( warmup / scale > 1 ? warmup / scale : 1 ))
        if [ "$interleave" = 1 ]; then
            # shellcheck disable=SC2086 # one name per word
            runs=("--algos $(printf '%s,' $algos)auto")
        else
            runs=()
            for a in $algos auto; do runs+=("-a $a"); done
        fi
        for run in "${runs[@]}"; do
            # Fields of --csv: 3 algorithm, 14 variant, 15 size, 18 p50_us.
            # shellcheck disable=SC2086 # $run is an option and its value
            WEFT_LOG=info "$bench" "$coll" -n "$n" $run -b "$s" -e "$s" \
                -w "$w" -r "$r" -c 0 --percentiles --csv $sync \
                2> "$tmp/log" |
                awk -F, -v n="$n" \
                    'NR > 1 && $14 == "out-of-place" {print n "," $3 "," $15 "," $18}' \
                >> "$tmp/rows.csv"
            if [[ $run == *auto ]]; then
                # weft-bench rounds a blocked collective's size down to a
                # multiple of the ranks (and the element size); the row it
                # printed has the size it ran, and the log its per-rank
                # block.
                ran=$(tail -n 1 "$tmp/rows.csv" | cut -d, -f3)
                case $coll in
                    allgather|reducescatter|alltoall|gather|scatter)
                        logged=$((ran / n)) ;;
                    *) logged=$ran ;;
                esac
                # The log names each choice once per size class and
                # algorithm; weft-bench's own small float64 and int
                # reductions share the class of the smallest sizes.
                pick=$(logged_picks float32)
                [ -n "$pick" ] || pick=$(logged_picks '[a-z0-9]*')
                echo "$n,$ran,${pick%+}" >> "$tmp/picks.csv"
            fi
        done
    done
done
done
python3 - "$tmp/rows.csv" "$tmp/picks.csv" "$coll" <<'PY'
import collections, sys
rows = collections.defaultdict(dict)
algos = []
for line in open(sys.argv[1]):
    n, a, size, t = line.strip().split(",")
    cell = rows[(int(n), int(size))]
    cell[a] = min(float(t), cell.get(a, float("inf")))
    if a not in algos:
        algos.append(a)
picks = {}
for line in open(sys.argv[2]):
    n, size, pick = line.strip().split(",")
    picks[(int(n), int(size))] = pick
forced = [a for a in algos if a != "auto"]
print(f"### {sys.argv[3]}: median time per operation (us), best round; ratio = auto / best forced")
print()
print("| ranks | size (B) | " + " | ".join(algos) +
      " | pick | best | auto/best | pick/best |")
print("|---" * (len(algos) + 6) + "|")
worst = worst_pick = 0.0
within = within_pick = 0
same = []  # auto / its pick's forced run: one algorithm measured twice
for (n, size), t in sorted(rows.items()):
    best = min(forced, key=lambda a: t.get(a, float("inf")))
    ratio = t["auto"] / t[best] if t.get(best) else float("nan")
    worst = max(worst, ratio)
    within += ratio <= 1.10
    pick = picks.get((n, size), "?")
    pick_ratio = t[pick] / t[best] if pick in t and t.get(best) else float("nan")
    worst_pick = max(worst_pick, pick_ratio)
    within_pick += pick_ratio <= 1.10
    if pick in t and t[pick] > 0:
        same.append(t["auto"] / t[pick])
    cells = " | ".join(f"{t[a]:.1f}" if a in t else "-" for a in algos)
    print(f"| {n} | {size} | {cells} | {pick} | {best} | {ratio:.2f} | "
          f"{pick_ratio:.2f} |")
print()
print(f"auto/best: worst {worst:.2f}, within 1.10 in {within} of {len(rows)}; "
      f"pick/best: worst {worst_pick:.2f}, within 1.10 in {within_pick} of {len(rows)}")
if same:
    print(f"auto / its pick forced (the same algorithm, two runs): "
          f"{min(same):.2f}-{max(same):.2f}, within 0.91-1.10 in "
          f"{sum(0.91 <= r <= 1.10 for r in same)} of {len(same)}")
PY
