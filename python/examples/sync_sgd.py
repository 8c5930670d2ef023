"""The classic synchronous SGD loop of PyTorch's "Writing Distributed
Applications" tutorial on weft: every rank trains on its partition of the
data and averages the gradients by hand, one dist.all_reduce per
parameter, before each step.  Synthetic data (no download).

It runs as it is under any launcher; weftrun and torchrun set torch's
env:// variables, and under mpirun (or mpiexec.hydra, srun) `import
weft.torch` fills them from the launcher's own (docs/pytorch.md):
  build/bin/weftrun -n 2 .venv/bin/python python/examples/sync_sgd.py
  .venv/bin/torchrun --nproc_per_node=2 python/examples/sync_sgd.py
  mpirun -np 2 .venv/bin/python python/examples/sync_sgd.py
--backend gloo runs the same loop on gloo.  The script ends by checking
that every rank holds the same parameters, and exits 1 if not.
"""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import weft.torch  # noqa: F401  registers the "weft" backend


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


def partition(rank, size, samples, seed):
    """This rank's share of one synthetic data set: a fixed pattern per
    class plus noise."""
    g = torch.Generator().manual_seed(seed)
    patterns = torch.randn(10, 64, generator=g)
    labels = torch.randint(0, 10, (samples,), generator=g)
    data = patterns[labels] + 0.8 * torch.randn(samples, 64, generator=g)
    share = samples // size
    return data[rank * share:(rank + 1) * share], \
        labels[rank * share:(rank + 1) * share]


def average_gradients(model):
    """The tutorial's gradient averaging: one all_reduce per parameter."""
    size = float(dist.get_world_size())
    for param in model.parameters():
        dist.all_reduce(param.grad.data, op=dist.ReduceOp.SUM)
        param.grad.data /= size


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", default="weft")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--samples", type=int, default=4096)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--seed", type=int, default=1234)
    args = p.parse_args()

    dist.init_process_group(args.backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    data, labels = partition(rank, size, args.samples, args.seed)
    model = Net()
    for q in model.parameters():        # every rank starts from rank 0's
        dist.broadcast(q.data, 0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    batches = len(data) // args.batch_size
    for epoch in range(args.epochs):
        epoch_loss = 0.0
        for b in range(batches):
            x = data[b * args.batch_size:(b + 1) * args.batch_size]
            y = labels[b * args.batch_size:(b + 1) * args.batch_size]
            optimizer.zero_grad()
            loss = F.nll_loss(model(x), y)
            epoch_loss += loss.item()
            loss.backward()
            average_gradients(model)
            optimizer.step()
        print("rank %d, epoch %d: loss %.4f" % (rank, epoch,
                                               epoch_loss / batches),
              flush=True)
    flat = torch.cat([q.detach().reshape(-1) for q in model.parameters()])
    lo, hi = flat.clone(), flat.clone()
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    same = lo.equal(hi)
    print("rank %d of %d on %s: replicas %s" %
          (rank, size, dist.get_backend(), "identical" if same else "DIFFER"),
          flush=True)
    dist.destroy_process_group()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
