"""What one small allreduce costs through each layer, in the same
processes, round by round with the order rotated:

  c_blocking       weft_allreduce through ctypes, nothing else (the floor
                   of any Python call)
  hvd_allreduce_   hvd.allreduce_(t, op=Sum): in place, blocking
  hvd_allreduce    hvd.allreduce(t, op=Sum): a new output tensor
  hvd_async        hvd.synchronize(hvd.allreduce_async_(t, op=Sum))
  dist_all_reduce  torch.distributed.all_reduce on the "weft" backend

A way's time in a round is the slowest rank's mean over CALLS calls.

Usage: bench_hvd_percall.py ELEMENTS ROUNDS CALLS
"""
import sys
import time

import torch
import torch.distributed as dist

import weft.horovod.torch as hvd
import weft.torch  # noqa: F401
from common import Report
from weft import _lib
from weft._lib import lib
from weft.horovod.common import basics

ELEMENTS, ROUNDS, CALLS = (int(a) for a in sys.argv[1:4])


def main():
    torch.set_num_threads(1)
    with Report() as rep:
        hvd.init()
        dist.init_process_group("weft")
        t = torch.ones(ELEMENTS)
        h = basics.state().channel._h
        p = t.data_ptr()
        ways = {
            "c_blocking": lambda: lib.weft_allreduce(p, p, ELEMENTS,
                                                     _lib.FLOAT32, _lib.SUM,
                                                     h),
            "hvd_allreduce_": lambda: hvd.allreduce_(t, op=hvd.Sum),
            "hvd_allreduce": lambda: hvd.allreduce(t, op=hvd.Sum),
            "hvd_async": lambda: hvd.synchronize(
                hvd.allreduce_async_(t, op=hvd.Sum)),
            "dist_all_reduce": lambda: dist.all_reduce(t),
        }
        names = list(ways)
        rounds = []
        for r in range(ROUNDS):
            times = {}
            for name in names[r % len(names):] + names[:r % len(names)]:
                fn = ways[name]
                for _ in range(CALLS // 10):
                    fn()
                hvd.barrier()
                t0 = time.perf_counter()
                for _ in range(CALLS):
                    fn()
                mine = (time.perf_counter() - t0) / CALLS
                times[name] = hvd.allreduce(
                    torch.tensor([mine], dtype=torch.float64),
                    op=hvd.Max).item()
            rounds.append(times)
        rep.data["rounds"] = rounds
        rep.check("ran", True)
        dist.destroy_process_group()
        hvd.shutdown()


if __name__ == "__main__":
    main()
