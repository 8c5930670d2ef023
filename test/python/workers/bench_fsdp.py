"""FSDP (fully_shard, CPU) step time on one backend (run by
bench_overhead.py): an MLP of DEPTH layers WIDTH wide, every layer its own
FSDP unit, so each step all-gathers and reduce-scatters DEPTH times.

Usage: bench_fsdp.py BACKEND STEPS WIDTH DEPTH
Reports the slowest rank's mean step time after 3 warm-up steps.
"""
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import weft.torch  # noqa: F401
from bench_ddp import timed_steps
from common import Report


def main():
    backend, steps = sys.argv[1], int(sys.argv[2])
    width, depth = int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(1)
    rep = Report()
    with rep:
        dist.init_process_group(backend, timeout=timedelta(seconds=600))
        mesh = init_device_mesh("cpu", (dist.get_world_size(),))
        torch.manual_seed(0)
        net = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])
        for layer in net:
            fully_shard(layer, mesh=mesh)
        fully_shard(net, mesh=mesh)
        step = timed_steps(net, steps, dim=width)
        t = torch.tensor([step], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        rep.data["step_s"] = t.item()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
