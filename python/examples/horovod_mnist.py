"""Horovod's MNIST recipe on weft, on synthetic MNIST-shaped data.

The four Horovod steps, with `import weft.horovod.torch as hvd` as the
only change from a Horovod script:
  1. hvd.init()
  2. one thread per rank on the CPU (on GPUs: pin one per local rank)
  3. wrap the optimizer in hvd.DistributedOptimizer (learning rate scaled
     by the number of ranks)
  4. broadcast the initial parameters and optimizer state from rank 0

Run it with any launcher, nothing to set (docs/horovod.md):
  build/bin/weftrun -n 2 .venv/bin/python python/examples/horovod_mnist.py
  .venv/bin/torchrun --nproc_per_node=2 python/examples/horovod_mnist.py
  mpirun -np 2 .venv/bin/python python/examples/horovod_mnist.py

The data are 28x28 images of 10 classes: a fixed random pattern per class
plus noise, generated from a seed (no download).  Each rank trains on its
share (DistributedSampler) and the test metrics are averaged over the
ranks with hvd.allreduce.  The script ends by checking that every rank
holds the same parameters, and exits 1 if not.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import weft.horovod.torch as hvd


def synthetic_mnist(n, seed, sample_seed):
    """n images: the pattern of their class (the same for a given `seed`)
    plus noise drawn from `sample_seed`."""
    patterns = (torch.rand(10, 1, 28, 28, generator=torch.Generator()
                           .manual_seed(seed)) > 0.5).float()
    g = torch.Generator().manual_seed(sample_seed)
    labels = torch.randint(0, 10, (n,), generator=g)
    images = patterns[labels] + 0.5 * torch.randn(n, 1, 28, 28, generator=g)
    return TensorDataset(images, labels)


class Net(nn.Module):
    """Horovod's MNIST network."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        return F.log_softmax(self.fc2(x), dim=1)


def metric_average(value, name):
    return hvd.allreduce(torch.tensor(value), name=name).item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--train-samples", type=int, default=2048)
    p.add_argument("--test-samples", type=int, default=512)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.5)
    p.add_argument("--fp16-allreduce", action="store_true")
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args()

    hvd.init()                                          # step 1
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)                            # step 2 (CPU)

    train = synthetic_mnist(args.train_samples, args.seed, args.seed + 1)
    test = synthetic_mnist(args.test_samples, args.seed, args.seed + 2)
    train_sampler = DistributedSampler(train, num_replicas=hvd.size(),
                                       rank=hvd.rank())
    test_sampler = DistributedSampler(test, num_replicas=hvd.size(),
                                      rank=hvd.rank(), shuffle=False)
    train_loader = DataLoader(train, batch_size=args.batch_size,
                              sampler=train_sampler)
    test_loader = DataLoader(test, batch_size=args.batch_size,
                             sampler=test_sampler)

    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(),
                                momentum=args.momentum)
    compression = hvd.Compression.fp16 if args.fp16_allreduce \
        else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(                 # step 3
        optimizer, named_parameters=model.named_parameters(),
        compression=compression, op=hvd.Average)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)  # step 4
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    for epoch in range(1, args.epochs + 1):
        model.train()
        train_sampler.set_epoch(epoch)
        for batch, (data, target) in enumerate(train_loader):
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
        model.eval()
        test_loss = correct = 0.0
        with torch.no_grad():
            for data, target in test_loader:
                output = model(data)
                test_loss += F.nll_loss(output, target, reduction="sum").item()
                correct += output.argmax(1).eq(target).sum().item()
        n = len(test_sampler)
        test_loss = metric_average(test_loss / n, "avg_loss")
        accuracy = metric_average(correct / n, "avg_accuracy")
        if hvd.rank() == 0:
            print("epoch %d: train loss %.4f, test loss %.4f, accuracy "
                  "%.1f%%" % (epoch, loss.item(), test_loss,
                              100 * accuracy), flush=True)

    flat = torch.cat([q.detach().reshape(-1) for q in model.parameters()])
    same = hvd.allreduce(flat, op=hvd.Max).equal(
        hvd.allreduce(flat, op=hvd.Min))
    print("rank %d of %d (local %d of %d): test accuracy %.1f%%, replicas "
          "%s" % (hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size(),
                  100 * accuracy, "identical" if same else "DIFFER"),
          flush=True)
    hvd.shutdown()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
