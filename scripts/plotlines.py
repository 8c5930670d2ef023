#!/usr/bin/env python3
"""Lines against message size, drawn by gnuplot: the plots of `make
compare` (busbw of weft and every peer) and `make bench-netns` (every
algorithm's share of the link).  weft-bench --plot draws one run of weft;
these put several side by side.

    plotlines.py --out FILE.png --title TEXT --ylabel TEXT [--ylog]
                 [--bold NAME]... NAME=DATA...

DATA holds lines "size value [...]"; lines starting with "#" are skipped.
A size that appears more than once (several rounds) keeps its largest
value, as the tables beside these plots keep each cell's best round.
--bold draws a series (weft's own, auto-selection) with a heavy black
line, so that it stands out among the peers or the forced algorithms.
Exits 2 with a message when gnuplot is missing or fails.

bench-netns-table.py imports draw() and passes its series directly.  The
script goes to a temporary directory and gnuplot runs without a shell, so
names cannot inject commands; strings are gnuplot single-quoted.
"""
import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile


def quote(text):
    """A gnuplot single-quoted string (a quote is doubled)."""
    return "'" + str(text).replace("\n", " ").replace("'", "''") + "'"


def size_label(v):
    """8, 4K, 1M, 2G: the sizes as weft-bench -b and -e take them."""
    units = ["", "K", "M", "G", "T"]
    u = 0
    while v >= 1024 and u < len(units) - 1:
        v /= 1024
        u += 1
    return f"{v:g}{units[u]}"


def read_series(path):
    """[(size, value)] sorted by size, each size's largest value."""
    best = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            try:
                size, value = float(fields[0]), float(fields[1])
            except (ValueError, IndexError):
                continue
            if size > 0 and value > best.get(size, -math.inf):
                best[size] = value
    return sorted(best.items())


def xtics(sizes):
    """Labelled ticks at powers of two, about ten across the sizes."""
    lo, hi = min(sizes), max(sizes)
    first = 2 ** math.floor(math.log2(lo))
    span = math.log2(hi / first)
    step = 2 ** (math.ceil(span / 10) if span > 10 else 1)
    ticks, t = [], first
    while t <= hi * 1.0001:
        ticks.append(f"{quote(size_label(t))} {t:.0f}")
        t *= step
    return (f"set xtics ({', '.join(ticks)})\n"
            f"set xrange [{lo / 1.25:.6g}:{hi * 1.25:.6g}]\n")


def draw(out, title, ylabel, series, ylog=False, bold=()):
    """series: [(name, [(size, value)])]; bold: names drawn heavy.
    Returns None, or why not."""
    series = [(n, pts) for n, pts in series if pts]
    if not series:
        return "no data to plot"
    if shutil.which("gnuplot") is None:
        return "gnuplot is not installed (make deps installs gnuplot-nox)"
    with tempfile.TemporaryDirectory(prefix="weft-plot-") as tmp:
        plots = []
        for i, (name, pts) in enumerate(series):
            data = os.path.join(tmp, f"{i}.dat")
            with open(data, "w") as f:
                f.writelines(f"{s:.0f} {v:.6g}\n" for s, v in pts)
            style = " lw 3 lc rgb 'black'" if name in bold else ""
            plots.append(f"{quote(data)} using 1:2 with linespoints pt 7 "
                         f"ps 0.6{style} title {quote(name)}")
        script = os.path.join(tmp, "plot.gp")
        with open(script, "w") as f:
            f.write("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
                    "  set terminal pngcairo noenhanced size 1100,600 "
                    "font 'sans,10'\n} else {\n"
                    "  set terminal png noenhanced size 1100,600\n}\n")
            f.write(f"set output {quote(os.path.abspath(out))}\n")
            f.write(f"set title {quote(title)}\nset ylabel {quote(ylabel)}\n")
            f.write("set xlabel 'message size (bytes)'\nset logscale x 2\n"
                    "set grid\nset key outside right top\n")
            f.write("set logscale y 10\nset format y '%g'\n" if ylog
                    else "set yrange [0:*]\n")
            f.write(xtics([s for _, pts in series for s, _ in pts]))
            f.write("plot " + ", ".join(plots) + "\n")
        run = subprocess.run(["gnuplot", script], capture_output=True,
                             text=True)
        if run.returncode != 0:
            return f"gnuplot failed: {run.stderr.strip()[-300:]}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="")
    ap.add_argument("--ylabel", default="")
    ap.add_argument("--ylog", action="store_true")
    ap.add_argument("--bold", action="append", default=[], metavar="NAME")
    ap.add_argument("series", nargs="+", metavar="NAME=DATA")
    args = ap.parse_args()
    series = []
    for arg in args.series:
        name, sep, path = arg.partition("=")
        if not sep:
            ap.error(f"{arg!r} is not NAME=DATA")
        try:
            series.append((name, read_series(path)))
        except OSError as e:
            print(f"plotlines: {path}: {e.strerror}", file=sys.stderr)
            return 2
    why = draw(args.out, args.title, args.ylabel, series, args.ylog,
               args.bold)
    if why:
        print(f"plotlines: {args.out}: {why}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
