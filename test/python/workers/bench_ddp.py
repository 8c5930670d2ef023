"""DDP step time on one backend with a model big enough that gradient
communication matters (run by bench.py).

Usage: bench_ddp.py BACKEND STEPS WIDTH
  an MLP 1024 -> WIDTH -> WIDTH -> 1024 (WIDTH 4096: 25.2M parameters,
  100 MB of float32 gradients per step), batch 32 per rank, SGD.
Reports the slowest rank's mean step time after 3 warm-up steps, and the
mean time of the same step without DDP (no communication) for reference.
"""
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import weft.torch  # noqa: F401
from common import Report


def model(width):
    return nn.Sequential(nn.Linear(1024, width), nn.ReLU(),
                         nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, 1024))


def timed_steps(net, steps, batch=32, dim=1024):
    """Mean time of `steps` SGD steps (MSE loss) after 3 warm-up steps."""
    opt = torch.optim.SGD(net.parameters(), lr=1e-4)
    x, y = torch.randn(batch, dim), torch.randn(batch, dim)
    times = []
    for i in range(steps + 3):
        start = time.perf_counter()
        opt.zero_grad()
        F.mse_loss(net(x), y).backward()
        opt.step()
        if i >= 3:
            times.append(time.perf_counter() - start)
    return sum(times) / len(times)


def main():
    backend, steps, width = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(1)
    rep = Report()
    with rep:
        dist.init_process_group(backend, timeout=timedelta(seconds=600))
        torch.manual_seed(0)
        net = model(width)
        params = sum(p.numel() for p in net.parameters())
        local = timed_steps(net, max(2, steps // 3))   # compute only
        dist.barrier()
        ddp = timed_steps(DDP(net), steps)
        t = torch.tensor([ddp, local], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        rep.data.update(params=params, step_s=t[0].item(),
                        local_step_s=t[1].item())
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
