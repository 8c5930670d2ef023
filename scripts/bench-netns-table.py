#!/usr/bin/env python3
"""Table of one bench-netns collective at one link rate.

usage: bench-netns-table.py OUT_DIR COLLECTIVE RATE ALGO... (auto last)

Reads OUT_DIR/COLL-RATE-ALGO.csv (weft-bench --csv --percentiles of rank
0; an ALGO "mpi" is Open MPI's run on the same namespaces, in the same
columns) and prints a markdown table: busbw of every algorithm as a
percentage of the link rate, the best forced algorithm, auto-selection's
time relative to it and, with an mpi column, to Open MPI's, and draws the same percentages as OUT_DIR/COLL-RATE.png
(scripts/plotlines.py; without gnuplot it says why and goes on).  Exits 1
when a run reported wrong results.

The time is weft-bench's own: the slowest rank's timed loop over its
iterations (nccl-tests' definition), not the median of the per-iteration
maxima over ranks.  Back to back, a broadcast's calls overlap and each
rank's per-call times swing around the loop's pace, so the maximum of four
ranks' times for one iteration overstates it: two runs of the same chain
at 1 MiB had loop times within 0.1% of each other and medians 11% apart.
bench-netns.sh runs enough iterations (--loop-bytes) that the tbf burst
each host starts the loop with weighs little in the loop's time.
"""
import csv
import re
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
    try:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["variant"] == "out-of-place":
                    rows[int(r["size"])] = r
    except FileNotFoundError:
        pass
    return rows


def main():
    out, coll, rate, *algos = sys.argv[1:]
    link = link_gbytes_per_s(rate)
    data = {a: read_rows(f"{out}/{coll}-{rate}-{a}.csv") for a in algos}
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
