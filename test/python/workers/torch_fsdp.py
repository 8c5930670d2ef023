"""FSDP (torch.distributed.fsdp.fully_shard) on CPU: the same model, data
and optimiser trained on a weft mesh and on a gloo mesh in the same
processes; the full parameters must end equal (bitwise on 2 ranks, where
a sum of two terms does not depend on the order; within 1e-6 relative
otherwise), and both runs must lower the loss.

Usage: run once per rank (see harness.launch); argv: [steps].
"""
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import fully_shard

import weft.torch  # noqa: F401  (registers the backend)
from common import RANK, WORLD, Report


def make_model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 10))


def train(group, steps):
    mesh = DeviceMesh.from_group(group, "cpu")
    model = make_model()
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(100 + RANK)
    teacher = torch.randn(32, 10, generator=torch.Generator().manual_seed(3))
    losses = []
    for _ in range(steps):
        x = torch.randn(16, 32, generator=gen)
        y = (x @ teacher).argmax(1)     # a rule the model can learn
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    full = [p.full_tensor().detach().clone() for p in model.parameters()]
    return full, losses


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rep = Report()
    with rep:
        dist.init_process_group("weft")
        gloo = dist.new_group(backend="gloo")
        mine, mine_loss = train(dist.group.WORLD, steps)
        ref, ref_loss = train(gloo, steps)
        worst = max(((a - b).abs().max() / b.abs().max().clamp(min=1e-30))
                    .item() for a, b in zip(mine, ref))
        rep.data["relative difference"] = worst
        rep.data["losses"] = [mine_loss[0], mine_loss[-1], ref_loss[0],
                              ref_loss[-1]]
        if WORLD == 2:
            rep.check("fsdp weft == gloo bitwise",
                      all(torch.equal(a, b) for a, b in zip(mine, ref)),
                      worst)
        else:
            rep.check("fsdp weft ~ gloo", worst < 1e-6, worst)
        rep.check("fsdp loss falls (weft)", mine_loss[-1] < mine_loss[0],
                  mine_loss)
        rep.check("fsdp loss falls (gloo)", ref_loss[-1] < ref_loss[0],
                  ref_loss)
        dist.barrier(gloo)


if __name__ == "__main__":
    main()
