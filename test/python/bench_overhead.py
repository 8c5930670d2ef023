"""What torch.distributed on weft costs per call against weft itself, and
DDP and FSDP steps on weft against gloo (`make bench-python`).

    bench_overhead.py [--build build] [--rounds 5] [--ranks 2]
        [--sizes 8,64,512,4096] [--iters 2000] [--ddp-width 4096]
        [--fsdp-width 512] [--fsdp-depth 8] [--steps 10]
        [--only percall|ddp|fsdp]

Per call: a blocking torch.distributed.all_reduce of a float32 tensor,
in place, back to back (workers/bench_percall.py; also the ProcessGroup
object's allreduce, without torch.distributed's Python layer, and gloo's
dist.all_reduce for scale, and torch's own FakeProcessGroup, which
communicates nothing: torch's floor per call), against weft-bench's
in-place allreduce row of the same size (`weft-bench allreduce -n RANKS
... -c 0`), both on local ranks.  Each round runs weft-bench, then torch
on weft, then on gloo, fresh processes each; the ratio is taken per round and the
median over the rounds is reported (the machine's load moves both).
Target: <= 1.3 at every size.

Steps: DDP (workers/bench_ddp.py, an MLP 1024 -> W -> W -> 1024) and FSDP
(workers/bench_fsdp.py, DEPTH layers W wide, one FSDP unit each), weft and
gloo alternating per round; the median of the rounds' weft / gloo ratios.
Target: DDP <= 1.0.

Prints a table and the load average before and after.  Not part of
`make test`; bench/results records what it printed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))


def weft_bench(args, sizes):
    exe = os.path.join(ROOT, args.build, "bin", "weft-bench")
    out = subprocess.run(
        [exe, "allreduce", "-n", str(args.ranks), "-b", str(min(sizes)),
         "-e", str(max(sizes)), "-f", "2", "-w", "50", "-r",
         str(args.iters), "-c", "0", "--json", "-"],
        capture_output=True, text=True, timeout=600, check=True).stdout
    rows = json.loads(out)["rows"]
    return {r["size"]: r["time_us"] for r in rows
            if r["variant"] == "in-place" and r["size"] in sizes}


def torch_percall(args, sizes, backend):
    res, _ = harness.launch("bench_percall.py", args.ranks, args=[
        backend, ",".join(map(str, sizes)), 50, args.iters], timeout=600)
    d = res[0]["data"]
    return ({int(k): v for k, v in d["api"].items()},
            {int(k): v for k, v in d["pg"].items()})


def percall(args):
    sizes = [int(s) for s in args.sizes.split(",")]
    cols = ("bench", "api", "pg", "gloo", "fake")
    times = {s: {c: [] for c in cols} for s in sizes}
    ratios = {s: {"api": [], "pg": []} for s in sizes}
    for _ in range(args.rounds):
        c = weft_bench(args, sizes)
        api, pg = torch_percall(args, sizes, "weft")
        gloo, _ = torch_percall(args, sizes, "gloo")
        fake, _ = torch_percall(args, sizes, "fake")
        for s in sizes:
            for col, v in zip(cols, (c[s], api[s], pg[s], gloo[s], fake[s])):
                times[s][col].append(v)
            ratios[s]["api"].append(api[s] / c[s])
            ratios[s]["pg"].append(pg[s] / c[s])
    med = statistics.median
    print("\nall_reduce float32 in place, %d ranks, %d calls, medians of %d "
          "rounds (ratios taken per round)" % (args.ranks, args.iters,
                                               args.rounds))
    print("| bytes | weft-bench (C) | dist.all_reduce on weft | ratio | "
          "ProcessGroup.allreduce on weft | ratio | dist.all_reduce on "
          "gloo | dist.all_reduce on torch's fake backend |")
    print("|---|---|---|---|---|---|---|---|")
    for s in sizes:
        t = times[s]
        print("| %d | %.1f us | %.1f us | **%.2f** | %.1f us | **%.2f** | "
              "%.1f us | %.1f us |" % (
                  s, med(t["bench"]), med(t["api"]), med(ratios[s]["api"]),
                  med(t["pg"]), med(ratios[s]["pg"]), med(t["gloo"]),
                  med(t["fake"])))


def steps(args, worker, extra, label):
    vals = {"weft": [], "gloo": []}
    ratios = []
    for _ in range(args.rounds):
        got = {}
        for backend in ("weft", "gloo"):
            res, _ = harness.launch(worker, args.ranks,
                                    args=[backend, args.steps] + extra,
                                    timeout=900)
            got[backend] = res[0]["data"]["step_s"]
            vals[backend].append(got[backend])
        ratios.append(got["weft"] / got["gloo"])
    r = statistics.median(ratios)
    print("\n%s, %d ranks, %d steps, median of %d rounds: weft %.4f s, gloo "
          "%.4f s, weft / gloo **%.2f** (rounds: %s)" % (
              label, args.ranks, args.steps, args.rounds,
              statistics.median(vals["weft"]),
              statistics.median(vals["gloo"]), r,
              " ".join("%.2f" % x for x in ratios)))
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--sizes", default="8,64,512,4096")
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--ddp-width", type=int, default=4096)
    ap.add_argument("--fsdp-width", type=int, default=512)
    ap.add_argument("--fsdp-depth", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--only", choices=["percall", "ddp", "fsdp"])
    args = ap.parse_args()
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    if args.only in (None, "percall"):
        percall(args)
    if args.only in (None, "ddp"):
        steps(args, "bench_ddp.py", [args.ddp_width],
              "DDP step, MLP width %d" % args.ddp_width)
    if args.only in (None, "fsdp"):
        steps(args, "bench_fsdp.py", [args.fsdp_width, args.fsdp_depth],
              "FSDP step, %d layers of width %d" % (args.fsdp_depth,
                                                     args.fsdp_width))
    print("\nload average after: %.2f %.2f %.2f" % os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main())
