"""One training step (zero_grad, forward, backward, step) of a model of
many small layers, timed four ways in the same processes, round by round,
the order of the ways rotated each round:

  fused     hvd.DistributedOptimizer, fusion on (Horovod's default
            threshold: every gradient in one buffer)
  unfused   hvd.DistributedOptimizer, HOROVOD_FUSION_THRESHOLD=0 (one
            allreduce per gradient)
  ddp_weft  DistributedDataParallel on the "weft" process group
  ddp_gloo  DistributedDataParallel on a gloo group of the same ranks
  compute   the same step without any communication (the floor)

Each way has its own copy of the model (the same initial weights).  A
round times STEPS steps per way after WARMUP; a way's time in a round is
the slowest rank's mean step.  Reports every round's times in data.

Usage: bench_hvd_step.py LAYERS WIDTH BATCH ROUNDS STEPS WARMUP
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import weft.horovod.torch as hvd
import weft.torch  # noqa: F401  registers "weft"
from common import Report

LAYERS, WIDTH, BATCH, ROUNDS, STEPS, WARMUP = (int(a) for a in sys.argv[1:7])
WAYS = ("fused", "unfused", "ddp_weft", "ddp_gloo", "compute")


def make_model():
    torch.manual_seed(0)
    layers = []
    for _ in range(LAYERS):
        layers += [nn.Linear(WIDTH, WIDTH), nn.Tanh()]
    return nn.Sequential(*layers)


def optimizer_for(way, gloo):
    model = make_model()
    if way in ("fused", "unfused"):
        os.environ["HOROVOD_FUSION_THRESHOLD"] = \
            "0" if way == "unfused" else str(128 << 20)
        try:
            opt = hvd.DistributedOptimizer(
                torch.optim.SGD(model.parameters(), lr=1e-3),
                named_parameters=model.named_parameters())
        finally:
            del os.environ["HOROVOD_FUSION_THRESHOLD"]
        return model, opt
    if way == "compute":
        return model, torch.optim.SGD(model.parameters(), lr=1e-3)
    group = gloo if way == "ddp_gloo" else None
    ddp = nn.parallel.DistributedDataParallel(model, process_group=group)
    return ddp, torch.optim.SGD(ddp.parameters(), lr=1e-3)


def steps(model, opt, x, n):
    for _ in range(n):
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()


def main():
    torch.set_num_threads(1)
    with Report() as rep:
        hvd.init()
        dist.init_process_group("weft")
        gloo = dist.new_group(backend="gloo")
        x = torch.randn(BATCH, WIDTH, generator=torch.Generator()
                        .manual_seed(hvd.rank()))
        models = {w: optimizer_for(w, gloo) for w in WAYS}
        rounds = []
        for r in range(ROUNDS):
            order = WAYS[r % len(WAYS):] + WAYS[:r % len(WAYS)]
            times = {}
            for way in order:
                model, opt = models[way]
                steps(model, opt, x, WARMUP)
                hvd.barrier()
                t0 = time.perf_counter()
                steps(model, opt, x, STEPS)
                mine = (time.perf_counter() - t0) / STEPS
                times[way] = hvd.allreduce(torch.tensor([mine],
                                                        dtype=torch.float64),
                                           op=hvd.Max).item()
            rounds.append(times)
        rep.data["rounds"] = rounds
        rep.data["parameters"] = sum(p.numel() for p in make_model()
                                     .parameters())
        rep.data["tensors"] = len(list(make_model().parameters()))
        rep.data["buckets"] = {w: len(models[w][1]._hvd_buckets.buckets)
                               for w in ("fused", "unfused")}
        rep.check("ran", True)
        dist.destroy_process_group()
        hvd.shutdown()


if __name__ == "__main__":
    main()
