"""The run() functions of PyTorch's "Writing Distributed Applications"
tutorial with backend "weft", started by a launcher that sets none of
torch's variables (mpirun, mpiexec.hydra, srun): blocking point-to-point,
all_reduce SUM, and the synchronous SGD loop that averages gradients by
hand.  With --ddp, also a few steps of DistributedDataParallel.  Each
part checks its result against values computed here; prints
"tutorial: rank R of N ok" on success.

    python tutorial.py EXPECTED_SIZE [--ddp]
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import weft.torch  # noqa: F401  registers "weft"


def run_p2p(rank):
    tensor = torch.zeros(1)
    if rank == 0:
        tensor += 1
        dist.send(tensor=tensor, dst=1)
    elif rank == 1:
        dist.recv(tensor=tensor, src=0)
    assert rank > 1 or tensor.item() == 1.0, tensor


def run_all_reduce(rank, size):
    tensor = torch.ones(1) * (rank + 1)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    assert tensor.item() == size * (size + 1) / 2, tensor


def average_gradients(model):
    size = float(dist.get_world_size())
    for param in model.parameters():
        dist.all_reduce(param.grad.data, op=dist.ReduceOp.SUM)
        param.grad.data /= size


def run_sgd(rank, size):
    torch.manual_seed(1234)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    gen = torch.Generator().manual_seed(rank)  # each rank its own data
    for _ in range(5):
        data = torch.randn(16, 8, generator=gen)
        target = torch.randint(0, 4, (16,), generator=gen)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        average_gradients(model)
        optimizer.step()
    # The replicas agree: every rank's parameters equal rank 0's.
    for p in model.parameters():
        ref = p.data.clone()
        dist.broadcast(ref, src=0)
        assert torch.equal(ref, p.data), "replicas differ"


def run_ddp(rank):
    """DistributedDataParallel over weft: the replicas end equal."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(7)
    model = DDP(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(100 + rank)
    for _ in range(5):
        optimizer.zero_grad()
        out = model(torch.randn(16, 8, generator=gen))
        F.mse_loss(out, torch.zeros_like(out)).backward()
        optimizer.step()
    for p in model.parameters():
        ref = p.data.clone()
        dist.broadcast(ref, src=0)
        assert torch.equal(ref, p.data), "DDP replicas differ"


def main():
    dist.init_process_group("weft")
    rank, size = dist.get_rank(), dist.get_world_size()
    assert size == int(sys.argv[1]), (size, sys.argv[1])
    run_p2p(rank)
    run_all_reduce(rank, size)
    run_sgd(rank, size)
    if "--ddp" in sys.argv:
        run_ddp(rank)
    dist.destroy_process_group()
    print("tutorial: rank %d of %d ok (MASTER_ADDR %s)"
          % (rank, size, os.environ["MASTER_ADDR"]), flush=True)


if __name__ == "__main__":
    main()
