"""weft vs gloo through torch.distributed, on local processes (loopback).

    .venv/bin/python test/python/bench.py [--ranks 2,4] [--repeat 3]
        [--sizes 1024,1048576,67108864] [--iters 10] [--steps 10]
        [--width 4096] [--only allreduce|ddp]

Prints, per world size and backend, all_reduce time/algbw/busbw per size
and the DDP step time of a 25M-parameter MLP; every number is the median
of --repeat runs (each run a fresh set of processes).  Not part of
`make test`; docs/pytorch.md records what it printed.
"""
import argparse
import os
import statistics

import harness


def median_rows(runs):
    rows = []
    for i, r0 in enumerate(runs[0]):
        rows.append({k: statistics.median(run[i][k] for run in runs)
                     for k in r0})
    return rows


def bench_allreduce(args, n):
    print("\nall_reduce float32, %d ranks (median of %d runs, %d iters each)"
          % (n, args.repeat, args.iters))
    print("%12s %8s %12s %10s %10s" % ("bytes", "backend", "time(us)",
                                       "algbw GB/s", "busbw GB/s"))
    for size_row in range(len(args.sizes.split(","))):
        for backend in ("weft", "gloo"):
            rows = BENCH[(n, backend)]
            r = rows[size_row]
            print("%12d %8s %12.1f %10.3f %10.3f" % (
                r["bytes"], backend, r["us"], r["algbw"], r["busbw"]))


BENCH = {}


def run_allreduce(args, n):
    for backend in ("weft", "gloo"):
        runs = []
        for _ in range(args.repeat):
            res, _ = harness.launch("bench_allreduce.py", n,
                                    args=[backend, args.sizes, args.iters],
                                    timeout=900)
            runs.append(res[0]["data"]["rows"])
        BENCH[(n, backend)] = median_rows(runs)
    bench_allreduce(args, n)


def run_ddp(args, n):
    print("\nDDP step, MLP width %d, batch 32/rank, %d ranks (median of %d "
          "runs, %d steps each)" % (args.width, n, args.repeat, args.steps))
    for backend in ("weft", "gloo"):
        runs = []
        for _ in range(args.repeat):
            res, _ = harness.launch("bench_ddp.py", n,
                                    args=[backend, args.steps, args.width],
                                    timeout=900)
            runs.append(res[0]["data"])
        d = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print("  %-5s %.1fM params: step %.3f s (without DDP %.3f s, "
              "communication and overlap cost %.3f s)" % (
                  backend, d["params"] / 1e6, d["step_s"],
                  d["local_step_s"], d["step_s"] - d["local_step_s"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="1024,1048576,67108864")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--width", type=int, default=4096)
    ap.add_argument("--only", choices=["allreduce", "ddp"])
    args = ap.parse_args()
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    for n in (int(x) for x in args.ranks.split(",")):
        if args.only in (None, "allreduce"):
            run_allreduce(args, n)
        if args.only in (None, "ddp"):
            run_ddp(args, n)
    print("\nload average after: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
