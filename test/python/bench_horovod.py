"""DistributedOptimizer's step time, fused and unfused, against DDP on weft
and on gloo, on a model of many small layers; and what one small
allreduce costs through each layer (`make bench-horovod`; not a test).

    bench_horovod.py [--ranks 2] [--layers 100] [--width 64] [--batch 16]
                     [--rounds 7] [--steps 20] [--warmup 3]
                     [--only step|percall] [--calls 2000]

All ways run in the same processes (workers/bench_hvd_step.py,
workers/bench_hvd_percall.py), round by round with the order rotated
each round.  Prints each way's median and, per pair, the median over
rounds of the per-round ratio, so that a machine slowed for a while by
other work slows both sides of the ratios it affects.  Each rank runs one
thread.
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402

WAYS = ("fused", "unfused", "ddp_weft", "ddp_gloo", "compute")
RATIOS = (("fused", "unfused"), ("fused", "ddp_weft"), ("fused", "ddp_gloo"),
          ("ddp_weft", "ddp_gloo"))


def percall(a):
    for elements in (2, 1024):
        results, _ = harness.launch(
            "bench_hvd_percall.py", a.ranks,
            args=[elements, a.rounds, a.calls], timeout=3600)
        rounds = results[0]["data"]["rounds"]
        print()
        print("%d ranks, allreduce of %d bytes (float32 sum), %d calls per "
              "way per round, %d rounds" % (a.ranks, 4 * elements, a.calls,
                                            a.rounds))
        print()
        print("| way | median (us) | / c_blocking (median of the rounds' "
              "ratios) |")
        print("|---|---:|---:|")
        for w in rounds[0]:
            ts = [r[w] * 1e6 for r in rounds]
            rs = [r[w] / r["c_blocking"] for r in rounds]
            print("| %s | %.2f | %.2f |" % (w, statistics.median(ts),
                                           statistics.median(rs)))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--layers", type=int, default=100)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--only", choices=("step", "percall"))
    p.add_argument("--calls", type=int, default=2000)
    a = p.parse_args()
    if a.only != "step":
        percall(a)
        if a.only == "percall":
            return
        print()
    results, _ = harness.launch(
        "bench_hvd_step.py", a.ranks,
        args=[a.layers, a.width, a.batch, a.rounds, a.steps, a.warmup],
        timeout=3600)
    d = results[0]["data"]
    rounds = d["rounds"]
    print("%d ranks, %d Linear(%d, %d) layers: %d tensors, %d parameters; "
          "batch %d per rank; %d rounds of %d steps (+%d warm-up) per way" %
          (a.ranks, a.layers, a.width, a.width, d["tensors"],
           d["parameters"], a.batch, a.rounds, a.steps, a.warmup))
    print("fusion buffers: fused %(fused)d, unfused %(unfused)d" %
          d["buckets"])
    print()
    print("| way | median step (ms) | rounds (ms) |")
    print("|---|---:|---|")
    for w in WAYS:
        ts = [r[w] * 1e3 for r in rounds]
        print("| %s | %.2f | %s |" % (w, statistics.median(ts),
                                      " ".join("%.2f" % t for t in ts)))
    print()
    print("| ratio | median of the rounds' ratios | per round |")
    print("|---|---:|---|")
    for num, den in RATIOS:
        rs = [r[num] / r[den] for r in rounds]
        print("| %s / %s | %.3f | %s |" % (num, den, statistics.median(rs),
                                          " ".join("%.3f" % x for x in rs)))


if __name__ == "__main__":
    main()
