#!/usr/bin/env python3
"""Table of one bench-netns collective at one link rate.

usage: bench-netns-table.py [--simulate WEFT_INFO --ranks N
                             --ranks-per-node K [--alpha US]]
                            OUT_DIR COLLECTIVE RATE ALGO... (auto last)

Reads OUT_DIR/COLL-RATE-ALGO.ROUND.csv, one file per round (weft-bench
--csv --percentiles of rank 0; an ALGO "mpi" is Open MPI's run on the same
namespaces, in the same columns), takes each size's median time over the
rounds and prints a markdown table: busbw of every algorithm as a
percentage of the link rate, the best forced algorithm, auto-selection's
time relative to it and, with an mpi column, to Open MPI's, and draws the same percentages as OUT_DIR/COLL-RATE.png
(scripts/plotlines.py; without gnuplot it says why and goes on).  Exits 1
when a run reported wrong results.

With --simulate, a second table sets each forced algorithm's measured
median time against weft-info --simulate's prediction for the same
layout, the link rate as its beta and --alpha as its per-message latency:
how far the cost model that auto-selection uses is from these links.

The time is weft-bench's own: the slowest rank's timed loop over its
iterations (nccl-tests' definition), not the median of the per-iteration
maxima over ranks.  Back to back, a broadcast's calls overlap and each
rank's per-call times swing around the loop's pace, so the maximum of four
ranks' times for one iteration overstates it: two runs of the same chain
at 1 MiB had loop times within 0.1% of each other and medians 11% apart.
bench-netns.sh runs enough iterations (--loop-bytes) that the tbf burst
each host starts the loop with weighs little in the loop's time.
"""
import argparse
import csv
import glob
import re
import statistics
import subprocess
import sys

from plotlines import draw

UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}


def link_gbytes_per_s(rate):
    m = re.fullmatch(r"([0-9.]+)([a-z]+)", rate.lower())
    if not m or m.group(2) not in UNITS:
        sys.exit(f"bench-netns-table: cannot read the rate {rate!r}")
    return float(m.group(1)) * UNITS[m.group(2)] / 8 / 1e9


def read_rows(path):
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["variant"] == "out-of-place":
                rows[int(r["size"])] = r
    return rows


def read_rounds(out, coll, rate, algo):
    """Each size's median over the rounds' files, as one row: the median
    time, the busbw that time gives, and the wrong elements of every round."""
    rounds = [read_rows(p) for p in
              sorted(glob.glob(f"{glob.escape(out)}/{coll}-{rate}-{algo}.*.csv"))]
    rows = {}
    for size in sorted({s for r in rounds for s in r}):
        runs = [r[size] for r in rounds if size in r]
        time = statistics.median(float(r["time_us"]) for r in runs)
        # busbw is bytes moved over time: the same numerator in every round.
        moved = float(runs[0]["busbw_gbs"]) * float(runs[0]["time_us"])
        rows[size] = {"time_us": time, "busbw_gbs": moved / time,
                      "wrong": sum(int(r["wrong"]) for r in runs),
                      "ranks": runs[0]["ranks"], "rounds": len(runs)}
    return rows


def predicted_us(args, coll, size, beta):
    """weft-info --simulate's time of every algorithm, by name."""
    text = subprocess.run(
        [args.simulate, "--simulate", coll, "--ranks", str(args.ranks),
         "--ranks-per-node", str(args.ranks_per_node), "--bytes", str(size),
         "--beta", f"{beta:.6f}", "--alpha", str(args.alpha)],
        check=True, capture_output=True, text=True).stdout
    return {f[0]: float(f[1]) for f in
            (line.split() for line in text.splitlines() if not line.startswith("#"))
            if len(f) > 1}


def print_simulated(args, coll, link, data, forced, sizes):
    print(f"\n#### measured / simulated time (weft-info --simulate, alpha "
          f"{args.alpha} us, beta {link:.3f} GB/s, {args.ranks} ranks, "
          f"{args.ranks_per_node} per machine)\n")
    print("| size (B) | " + " | ".join(forced) + " |")
    print("|---:" * (len(forced) + 1) + "|")
    errors = {}
    for size in sizes:
        sim = predicted_us(args, coll, size, link)
        cells = []
        for a in forced:
            r = data[a].get(size)
            if r is None or a not in sim:
                cells.append("-")
                continue
            ratio = r["time_us"] / sim[a]
            errors.setdefault(size >= 65536, []).append(abs(ratio - 1))
            cells.append(f"{ratio:.2f}")
        print(f"| {size} | " + " | ".join(cells) + " |")
    for large, label in ((True, "from 64 KiB"), (False, "below 64 KiB")):
        e = errors.get(large)
        if e:
            print(f"\nsimulator error {label}: median {100 * statistics.median(e):.0f}%,"
                  f" largest {100 * max(e):.0f}% over {len(e)} cells")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--simulate", metavar="WEFT_INFO")
    ap.add_argument("--ranks", type=int, default=0)
    ap.add_argument("--ranks-per-node", type=int, default=1)
    ap.add_argument("--alpha", type=float, default=2.0)
    ap.add_argument("out")
    ap.add_argument("coll")
    ap.add_argument("rate")
    ap.add_argument("algos", nargs="+")
    args = ap.parse_args()
    out, coll, rate, algos = args.out, args.coll, args.rate, args.algos
    link = link_gbytes_per_s(rate)
    data = {a: read_rounds(out, coll, rate, a) for a in algos}
    sizes = sorted({s for rows in data.values() for s in rows})
    forced = [a for a in algos if a not in ("auto", "mpi")]
    mpi = "mpi" in algos
    wrong = 0
    percent = {a: [] for a in algos}
    print(f"\n### {coll}, link {rate} ({link:.3f} GB/s): busbw as % of the link")
    print()
    print("| size (B) | " + " | ".join(algos) + " | best forced | auto / best (time) |"
          + (" auto / mpi (time) |" if mpi else ""))
    print("|---:" * (len(algos) + 3 + mpi) + "|")
    for size in sizes:
        cells, times = [], {}
        for a in algos:
            r = data[a].get(size)
            if r is None:
                cells.append("-")
                continue
            wrong += int(r["wrong"])
            times[a] = float(r["time_us"])
            busbw = float(r["busbw_gbs"])
            cells.append(f"{100 * busbw / link:.0f}%")
            percent[a].append((size, 100 * busbw / link))
        best = min((a for a in forced if a in times), key=times.get, default=None)
        ratio = (f"{times['auto'] / times[best]:.2f}"
                 if best and "auto" in times else "-")
        vs_mpi = (f" {times['auto'] / times['mpi']:.2f} |"
                  if "auto" in times and "mpi" in times else " - |")
        print(f"| {size} | " + " | ".join(cells) + f" | {best or '-'} | {ratio} |"
              + (vs_mpi if mpi else ""))
    if args.simulate and forced:
        print_simulated(args, coll, link, data, forced, sizes)
    png = f"{out}/{coll}-{rate}.png"
    hosts = next((r["ranks"] for rows in data.values()
                  for r in rows.values()), "?")
    why = draw(png, f"make bench-netns: {coll}, {hosts} hosts on a bridge, "
               f"each link shaped to {rate}",
               "busbw, % of the link rate",
               [(a, percent[a]) for a in algos], bold=("auto",))
    print(f"\nplot: {png}" if why is None else f"\nplot skipped: {why}")
    if wrong:
        print(f"\nbench-netns: {wrong} wrong elements in {coll} at {rate}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
