"""Per-call time of a blocking torch.distributed.all_reduce (run by
bench_overhead.py): float32, in place, back to back, as weft-bench times
its in-place rows.

Usage: bench_percall.py BACKEND SIZES WARMUP ITERS
Reports per size the slowest rank's mean time per call in microseconds,
through torch.distributed.all_reduce ("api") and through the ProcessGroup
object's own allreduce([t]).wait() ("pg"), which leaves out
torch.distributed's Python layer (argument checks, group lookup, logging
decorators) and keeps the dispatcher, the backend and weft.

BACKEND "fake" is torch's own FakeProcessGroup, which completes every call
at once without communicating: what torch itself costs per call, the
floor under any backend (each rank reports its own time then).
"""
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import weft.torch  # noqa: F401
from common import RANK, WORLD, Report


def main():
    backend, sizes = sys.argv[1], sys.argv[2]
    warmup, iters = int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(1)
    rep = Report()
    with rep:
        if backend == "fake":
            from torch.testing._internal.distributed.fake_pg import FakeStore
            dist.init_process_group("fake", store=FakeStore(), rank=RANK,
                                    world_size=WORLD)
        else:
            dist.init_process_group(backend,
                                    timeout=timedelta(seconds=300))
        pg = dist.group.WORLD
        calls = {"api": lambda t: dist.all_reduce(t),
                 "pg": lambda t: pg.allreduce([t]).wait()}
        for name, call in calls.items():
            rows = {}
            for nbytes in (int(s) for s in sizes.split(",")):
                t = torch.ones(nbytes // 4)
                for _ in range(warmup):
                    call(t)
                dist.barrier()
                start = time.perf_counter()
                for _ in range(iters):
                    call(t)
                took = torch.tensor([(time.perf_counter() - start) / iters])
                dist.all_reduce(took, op=dist.ReduceOp.MAX)
                rows[str(nbytes)] = took.item() * 1e6
            rep.data[name] = rows
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
