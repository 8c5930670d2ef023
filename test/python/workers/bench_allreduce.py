"""torch.distributed.all_reduce speed on one backend (run by bench.py).

Usage: bench_allreduce.py BACKEND SIZES ITERS
  SIZES  comma-separated message sizes in bytes (float32 tensors)
Reports per size the slowest rank's mean time per call, algbw and busbw
(busbw = algbw * 2(n-1)/n, as nccl-tests and weft-bench define it).
"""
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import weft.torch  # noqa: F401
from common import Report


def main():
    backend, sizes, iters = sys.argv[1], sys.argv[2], int(sys.argv[3])
    torch.set_num_threads(1)
    rep = Report()
    with rep:
        dist.init_process_group(backend, timeout=timedelta(seconds=300))
        n = dist.get_world_size()
        rows = []
        for nbytes in (int(s) for s in sizes.split(",")):
            t = torch.ones(nbytes // 4)
            for _ in range(3):                     # warm-up, connections
                dist.all_reduce(t)
            dist.barrier()
            start = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(t)
            took = torch.tensor([(time.perf_counter() - start) / iters])
            dist.all_reduce(took, op=dist.ReduceOp.MAX)
            sec = took.item()
            algbw = nbytes / sec / 1e9
            rows.append({"bytes": nbytes, "us": sec * 1e6, "algbw": algbw,
                         "busbw": algbw * 2 * (n - 1) / n})
        rep.data["rows"] = rows
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
