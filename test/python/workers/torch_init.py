"""init_process_group("weft") through each kind of Store torch offers.

Usage: torch_init.py MODE (any number of ranks)
  tcp     init_method="tcp://127.0.0.1:PORT"
  file    init_method="file://<shared file>"
  reinit  an explicit TCPStore, used by two process groups one after the
          other (destroy, then init again on the same store: the bootstrap
          keys of the two must not mix)
"""
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import weft.torch  # noqa: F401
from common import RANK as R, WORLD as N, Report

T = timedelta(seconds=60)


def one_allreduce(rep, tag):
    t = torch.tensor([R + 1.0])
    dist.all_reduce(t)
    rep.check("%s all_reduce" % tag, t.item() == N * (N + 1) / 2, t)


def main():
    mode = sys.argv[1]
    port = int(os.environ["MASTER_PORT"])
    rep = Report()
    with rep:
        if mode == "tcp":
            dist.init_process_group("weft", init_method="tcp://127.0.0.1:%d"
                                    % port, rank=R, world_size=N, timeout=T)
            one_allreduce(rep, "tcp://")
        elif mode == "file":
            path = os.path.join(os.environ["WEFTPY_RESULT_DIR"], "store")
            dist.init_process_group("weft", init_method="file://" + path,
                                    rank=R, world_size=N, timeout=T)
            one_allreduce(rep, "file://")
        else:
            store = dist.TCPStore("127.0.0.1", port, N, R == 0, timeout=T)
            for round_ in range(2):
                dist.init_process_group("weft", store=store, rank=R,
                                        world_size=N, timeout=T)
                one_allreduce(rep, "store round %d" % round_)
                dist.destroy_process_group()
            return
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
