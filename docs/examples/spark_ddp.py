"""DistributedDataParallel on weft, started by Spark's TorchDistributor.

    spark-submit --master spark://head:7077 \
        --conf spark.pyspark.python=/opt/venv/bin/python spark_ddp.py model.pt

Every Spark worker host needs the same venv at the same path (torch, weft,
pyspark, pandas, pyarrow) and Java 17 or later.  docs/launchers.md
("Spark") explains it; `make test-launchers` runs this file unchanged on a
local Spark cluster and compares model.pt with the same training under
torchrun.
"""
import sys

import torch
from pyspark.ml.torch.distributor import TorchDistributor
from pyspark.sql import SparkSession


def train(steps=30, lr=0.05):
    """Runs in each of the num_processes training processes, which
    TorchDistributor starts with torchrun on the executors: everything it
    uses is imported here."""
    import sys

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    import weft.torch  # noqa: F401  registers the "weft" backend

    dist.init_process_group("weft")  # torchrun's RANK, MASTER_ADDR, ...
    rank, size = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank} of {size}: backend {dist.get_backend()}, "
          f"python {sys.executable}", flush=True)

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 64), nn.ReLU(),
                              nn.Linear(64, 64), nn.ReLU(),
                              nn.Linear(64, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    gen = torch.Generator().manual_seed(rank)  # each rank its own batches
    for _ in range(steps):
        x = torch.randn(32, 16, generator=gen)
        y = (x[:, :8].sum(1) > x[:, 8:].sum(1)).long()
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    print(f"rank {rank}: final loss {loss.item():.4f}", flush=True)

    state = {k: v.detach().clone()
             for k, v in model.module.state_dict().items()}
    dist.destroy_process_group()
    return state if rank == 0 else None  # run() returns rank 0's


if __name__ == "__main__":
    spark = SparkSession.builder.appName("weft-ddp").getOrCreate()
    state = TorchDistributor(num_processes=2, local_mode=False,
                             use_gpu=False).run(train)
    torch.save(state, sys.argv[1])
    spark.stop()
