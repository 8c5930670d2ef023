"""DistributedDataParallel training with weft, compared with the same run
on gloo in the same processes.

The default process group is weft; a gloo group over the same ranks runs
the identical job (same seeds, same data), so the two runs differ only in
the backend.  Each rank starts from its own random initialisation (seed
1000 + rank): only DDP's initial broadcast makes the replicas equal.

Usage (once per rank, or under torchrun):
    torch_ddp.py [--steps 50] [--configs cnn,mlp_bn,unused,fp16]
Rank 0 reports, per config, the loss curves of both runs and the largest
absolute/relative parameter difference between them.
"""
import argparse
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

import weft.torch  # noqa: F401
from common import Report


class LeNet(nn.Module):
    """LeNet-5-like CNN for 1x28x28 inputs (44k parameters)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc3(F.relu(self.fc2(x)))


class MLPBN(nn.Module):
    """MLP with BatchNorm (running stats are buffers DDP broadcasts)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(32, 64), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Linear(64, 10))

    def forward(self, x):
        return self.net(x)


class Branchy(nn.Module):
    """A head that is used on odd steps only (find_unused_parameters)."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(32, 48)
        self.head_a = nn.Linear(48, 10)
        self.head_b = nn.Linear(48, 10)
        self.step = 0

    def forward(self, x):
        self.step += 1
        h = F.relu(self.trunk(x))
        return self.head_b(h) if self.step % 2 else self.head_a(h)


# name: (model, input shape, DDP keyword arguments, use fp16 hook)
CONFIGS = {
    "cnn": (LeNet, (16, 1, 28, 28), {"bucket_cap_mb": 0.05}, False),
    "mlp_bn": (MLPBN, (32, 32), {}, False),
    "unused": (Branchy, (32, 32), {"find_unused_parameters": True}, False),
    "fp16": (LeNet, (16, 1, 28, 28), {}, True),
}


def train(name, group, steps, rank):
    make, shape, kwargs, fp16 = CONFIGS[name]
    torch.manual_seed(1000 + rank)
    model = DDP(make(), process_group=group, **kwargs)
    if fp16:
        model.register_comm_hook(group, default_hooks.fp16_compress_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(7 + rank)  # this rank's shard
    # a learnable synthetic task: each class has a fixed random template,
    # a sample is its class's template plus unit noise
    templates = torch.randn((10,) + tuple(shape[1:]),
                            generator=torch.Generator().manual_seed(99))
    losses, first = [], None
    for _ in range(steps):
        y = torch.randint(0, 10, (shape[0],), generator=data)
        x = torch.randn(shape, generator=data) + templates[y]
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if first is None:   # after one step: one allreduce apart at most
            first = flat_params(model)
    state = torch.cat([t.detach().reshape(-1).double() for t in
                       model.module.state_dict().values()])
    return losses, state, flat_params(model), first


def flat_params(model):
    return torch.cat([p.detach().reshape(-1) for p in
                      model.module.parameters()])


def rel_diff(a, b):
    """|a - b| / |b| over all parameters (elementwise relative
    differences blow up on parameters that are nearly zero)."""
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def compare(rep, name, steps, gloo, world):
    rank = dist.get_rank()
    lw, sw, pw, fw = train(name, None, steps, rank)      # weft (default)
    lg, sg, pg, fg = train(name, gloo, steps, rank)
    # every replica ends identical on each backend
    for tag, p, grp in (("weft", pw, None), ("gloo", pg, gloo)):
        all_p = [torch.empty_like(p) for _ in range(world)]
        dist.all_gather(all_p, p, group=gloo)
        rep.check("%s %s: replicas bitwise equal" % (name, tag),
                  all(torch.equal(q, p) for q in all_p))
    # the curves printed are the mean over ranks of each step's local loss
    curves = torch.tensor([lw, lg], dtype=torch.float64)
    dist.all_reduce(curves, group=gloo)
    lw, lg = (curves / world).tolist()
    diff = (pw.double() - pg.double()).abs()
    bitwise = torch.equal(pw, pg)
    rep.data[name] = {
        "weft_loss": lw, "gloo_loss": lg, "bitwise": bitwise,
        "max_abs": diff.max().item(), "rel_norm": rel_diff(pw, pg),
        "first_rel": rel_diff(fw, fg),
        "state_max_abs": (sw - sg).abs().max().item(),
        "params": pw.numel(),
    }
    k = max(1, steps // 5)
    for tag, curve in (("weft", lw), ("gloo", lg)):
        rep.check("%s %s: loss at least halved" % (name, tag),
                  sum(curve[-k:]) < 0.5 * sum(curve[:k]),
                  (curve[:k], curve[-k:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    args = ap.parse_args()
    torch.set_num_threads(1)
    rep = Report()
    with rep:
        dist.init_process_group("weft", timeout=timedelta(seconds=120))
        world = dist.get_world_size()
        gloo = dist.new_group(backend="gloo")
        rep.data["world"] = world
        for name in args.configs.split(","):
            with rep.case("ddp " + name):
                compare(rep, name, args.steps, gloo, world)
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
