#!/usr/bin/env python3
"""Fits the cost model's one-host constants to measured sweeps.

    scripts/algo-fit.py --cost-terms build/bin/cost-terms
                        [--single-copy BYTES] SWEEP.md...

SWEEP.md are tables printed by scripts/algo-sweep.sh, of any collectives
that have more than one algorithm (each table under its "### COLLECTIVE"
heading; several files: a cell measured in more than one keeps its
fastest time).  The
terms of every algorithm (rounds, bytes on the critical path, and the work
of all ranks) come from the library through bench/cost/cost_terms.c, so
this script holds only the way src/algo/cost.h combines them
(wf_cost_terms_eval) and the search.  gamma stays fixed at the reduction
kernel's measured speed (--gamma, us per KB); wake, the CPU of a message
that waited for a receive, only with --single-copy (the sockets' set has
none); the others are searched at
random and then refined, minimising the sum over cells of log(time of the
algorithm the model picks / best time) plus a little of the prediction
error, so that a cell where the algorithms are within noise of each other
does not pull the constants into nonsense.  It prints the constants now in
the library and the fitted ones, each with the cells where its pick is not
the measured best.  The library has two one-host sets: --single-copy 65536
(WEFT_TCP_CMA_MIN, for sweeps taken with it, the default) compares with
and fits the set of the single copy, without it the set of the sockets.
"""
import argparse
import math
import os
import random
import re
import subprocess
import sys


def load_sweeps(paths):
    """{(collective, ranks, size): {algo: best time}}"""
    cells = {}
    for path in paths:
        header, coll = None, "allreduce"
        for line in open(path):
            cols = [c.strip() for c in line.strip().strip("|").split("|")]
            heading = re.match(r"#+ ([a-z]+)\b", line)
            if heading:
                coll = heading.group(1)
                continue
            if line.startswith("| ranks"):
                header = cols
                continue
            if not header or not re.match(r"\| \d", line):
                continue
            ranks, size = int(cols[0]), int(cols[1])
            cell = cells.setdefault((coll, ranks, size), {})
            for name, value in zip(header[2:], cols[2:]):
                if name in ("auto", "pick", "best") or "/" in name:
                    continue
                try:
                    t = float(value)
                except ValueError:
                    continue
                cell[name] = min(t, cell.get(name, float("inf")))
    return cells


def library_terms(tool, cells, single_copy=0):
    """{(collective, ranks, size): {algo: (rounds, path_sent, path_reduced,
    messages, bytes, reduced, waits, own_messages, own_bytes,
    own_reduced)}} and the library's one-host constants."""
    by_ranks = {}
    for coll, ranks, size in cells:
        by_ranks.setdefault((coll, ranks), []).append(size)
    terms, constants = {}, None
    for (coll, ranks), sizes in sorted(by_ranks.items()):
        out = subprocess.run([tool, "--coll", coll,
                              "--single-copy", str(single_copy), str(ranks)] +
                             [str(s) for s in sizes],
                             check=True, capture_output=True, text=True)
        for line in out.stdout.splitlines():
            f = line.split()
            if f[0] == "one_host":
                constants = tuple(float(x) for x in f[1:])
            elif f[0] == "terms":
                key = (coll, int(f[2]), int(f[3]))
                terms.setdefault(key, {})[f[1]] = tuple(float(x) for x in f[4:])
    return terms, constants


def estimate(c, t, ranks, cores):
    """src/algo/cost.h wf_cost_terms_eval with every rank on this machine.
    c: alpha, beta, gamma, host_msg, host_byte (us, us/byte), path_share,
    wake (us)."""
    alpha, beta, gamma, host_msg, host_byte, share, wake = c
    (rounds, path_sent, path_reduced, messages, sent, reduced, waits,
     own_messages, own_bytes, own_reduced) = t
    path = rounds * alpha + path_sent * beta + path_reduced * gamma
    host = ((messages * host_msg + waits * wake + sent * host_byte +
             reduced * gamma) / min(cores, ranks))
    est = host + share * path if host > path else path + share * host
    own = ((own_messages * host_msg + own_bytes * host_byte) / 2 +
           own_reduced * gamma)
    return max(own, est)


def priced(algo, ranks, cores):
    """Whether auto may pick `algo` here: the library prices the linear
    algorithms only where the ranks outnumber the cores
    (src/algo/allreduce_linear.c, bcast_linear.c, reduce_linear.c)."""
    return algo != "linear" or ranks > cores


def judge(c, cells, terms, cores):
    """(sum of log(pick / best), worst pick / best, rms log error, misses)"""
    total, worst, errs, misses = 0.0, 1.0, [], []
    for key in sorted(cells):
        measured, model = cells[key], terms.get(key, {})
        algos = [a for a in model if a in measured and
                 priced(a, key[1], cores)]
        if not algos:
            continue
        est = {a: estimate(c, model[a], key[1], cores) for a in algos}
        pick = min(algos, key=lambda a: est[a])
        best = min(algos, key=lambda a: measured[a])
        ratio = measured[pick] / measured[best]
        total += math.log(ratio)
        worst = max(worst, ratio)
        errs += [math.log(est[a] / measured[a]) for a in algos]
        if pick != best:
            misses.append((key, pick, best, ratio))
    rms = math.sqrt(sum(e * e for e in errs) / max(len(errs), 1))
    return total, worst, rms, misses


def fit(cells, terms, cores, gamma, seed, samples, weight=0.3, wake=True):
    rng = random.Random(seed)
    score = lambda c: (lambda j: j[0] + weight * j[2])(judge(c, cells, terms,
                                                          cores))
    best = None
    for _ in range(samples):
        c = (rng.uniform(2, 40), 10 ** rng.uniform(-5, -2.5), gamma,
             rng.uniform(2, 80), 10 ** rng.uniform(-5, -2.7),
             rng.uniform(0, 0.5), rng.uniform(0, 60) if wake else 0.0)
        s = score(c)
        if best is None or s < best[0]:
            best = (s, c)
    for _ in range(samples):
        c = tuple(x if i == 2 else x * math.exp(rng.gauss(0, 0.15))
                  for i, x in enumerate(best[1]))
        s = score(c)
        if s <= best[0]:
            best = (s, c)
    return best[1]


def report(title, c, cells, terms, cores):
    total, worst, rms, misses = judge(c, cells, terms, cores)
    print(f"{title}: alpha {c[0]:.1f} us, beta {c[1] * 1e3:.3f} us/KB, "
          f"gamma {c[2] * 1e3:.3f} us/KB, host_msg {c[3]:.1f} us, "
          f"host_byte {c[4] * 1e3:.3f} us/KB, path_share {c[5]:.3f}, "
          f"wake {c[6]:.1f} us")
    print(f"  picks the measured best in {len(cells) - len(misses)} of "
          f"{len(cells)} cells; worst pick/best {worst:.2f}; "
          f"rms prediction error {100 * (math.exp(rms) - 1):.0f}%")
    for coll in sorted({key[0] for key in cells}):
        n = sum(1 for key in cells if key[0] == coll)
        over = [m[3] for m in misses if m[0][0] == coll and m[3] > 1.10]
        print(f"  {coll}: pick/best within 1.10 in {n - len(over)} of {n}"
              f"{f', worst {max(over):.2f}' if over else ''}")
    for (coll, ranks, size), pick, best, ratio in misses:
        print(f"  {coll}, {ranks} ranks, {size} B: picks {pick}, "
              f"best {best}, {ratio:.2f}")


def tables(c, cells, terms, cores):
    """Markdown: per collective the measured times of every algorithm,
    the pick of the constants `c`, the best, and pick / best."""
    for coll in sorted({key[0] for key in cells}):
        keys = sorted(k for k in cells if k[0] == coll)
        algos = []
        for k in keys:
            algos += [a for a in terms.get(k, {}) if a not in algos]
        print(f"\n#### {coll}\n")
        print("| ranks | size (B) | " + " | ".join(algos) +
              " | pick | best | pick/best |")
        print("|---" * (len(algos) + 5) + "|")
        for key in keys:
            measured, model = cells[key], terms.get(key, {})
            have = [a for a in model if a in measured]
            if not have:
                continue
            pick = min((a for a in have if priced(a, key[1], cores)),
                       key=lambda a: estimate(c, model[a], key[1], cores))
            best = min(have, key=lambda a: measured[a])
            times = " | ".join(f"{measured[a]:.1f}" if a in measured else "-"
                               for a in algos)
            print(f"| {key[1]} | {key[2]} | {times} | {pick} | {best} | "
                  f"{measured[pick] / measured[best]:.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--cost-terms", default="build/bin/cost-terms")
    ap.add_argument("--cores", type=int, default=os.cpu_count())
    ap.add_argument("--single-copy", type=int, default=0, metavar="BYTES",
                    help="the sweeps' WEFT_TCP_CMA_MIN: the library's "
                    "constants of the single copy (default 0: of sockets)")
    ap.add_argument("--gamma", type=float, default=None,
                    help="reduction cost, us per KB (default: the library's)")
    ap.add_argument("--samples", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tables", action="store_true",
                    help="print, instead of fitting, the measured tables "
                    "with the library's picks")
    ap.add_argument("--error-weight", type=float, default=0.3,
                    help="weight of the rms prediction error against the "
                    "loss of wrong picks")
    args = ap.parse_args()
    cells = load_sweeps(args.sweeps)
    if not cells:
        sys.exit("algo-fit: no table rows in " + " ".join(args.sweeps))
    terms, now = library_terms(args.cost_terms, cells, args.single_copy)
    gamma = args.gamma / 1e3 if args.gamma else now[2]
    print(f"{len(cells)} cells, {args.cores} cores")
    report("library now", now, cells, terms, args.cores)
    if args.tables:
        tables(now, cells, terms, args.cores)
        return
    report("fitted", fit(cells, terms, args.cores, gamma, args.seed,
                         args.samples, args.error_weight,
                         args.single_copy > 0),
           cells, terms, args.cores)


if __name__ == "__main__":
    main()
