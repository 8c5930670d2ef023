"""DistributedDataParallel on weft, started by Ray Train's TorchTrainer.

    python ray_ddp.py model.pt [env|tcp]

ray.init() joins the cluster of RAY_ADDRESS (or `ray start`'s on this
host), else starts one on this host.  Every Ray node needs the same
Python environment as the driver: torch, weft (installed with pip, so that
torch finds the "weft" backend by its entry point) and ray[train].
docs/launchers.md ("Ray") explains it; `make test-launchers` runs this
file unchanged on a local Ray cluster, with init_method "env" (TorchConfig's
default) and "tcp", and compares model.pt with the same training under
torchrun.
"""
import sys

import ray
import torch
from ray.train import ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer

CONFIG = {"steps": 30, "lr": 0.05}


def train(config):
    """Runs in each of the num_workers Ray Train workers.  TorchConfig(
    backend="weft") has made the process group before this starts."""
    import sys

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    import weft.torch  # noqa: F401  (torch loaded it already, by its entry point)

    rank, size = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank} of {size}: backend {dist.get_backend()}, "
          f"python {sys.executable}", flush=True)

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 64), nn.ReLU(),
                              nn.Linear(64, 64), nn.ReLU(),
                              nn.Linear(64, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=0.9)
    gen = torch.Generator().manual_seed(rank)  # each rank its own batches
    for _ in range(config["steps"]):
        x = torch.randn(32, 16, generator=gen)
        y = (x[:, :8].sum(1) > x[:, 8:].sum(1)).long()
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    print(f"rank {rank}: final loss {loss.item():.4f}", flush=True)

    # Ray returns no torch tensors from a training function: numpy.
    state = {k: v.detach().numpy().copy()
             for k, v in model.module.state_dict().items()}
    return state if rank == 0 else None  # fit().return_value is rank 0's


if __name__ == "__main__":
    init_method = sys.argv[2] if len(sys.argv) > 2 else "env"
    ray.init()
    trainer = TorchTrainer(
        train,
        train_loop_config=CONFIG,
        torch_config=TorchConfig(backend="weft", init_method=init_method),
        scaling_config=ScalingConfig(num_workers=2, use_gpu=False))
    state = trainer.fit().return_value
    torch.save({k: torch.from_numpy(v) for k, v in state.items()},
               sys.argv[1])
    ray.shutdown()
