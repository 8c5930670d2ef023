"""50 steps of training with hvd.DistributedOptimizer on weft against the
same training with DistributedDataParallel on gloo, in the same processes:
the same model and initial weights, each rank its own data, SGD with
momentum.

DDP scales each gradient by 1/size before gloo sums them; weft's Average
sums, then divides.  With 2 or 4 ranks both scalings are exact (powers of
two), so on 2 ranks, where every sum is a + b, the runs agree bitwise;
on more ranks the sums may associate differently and agree within float
rounding.  A second weft run with fusion off (HOROVOD_FUSION_THRESHOLD=0)
must agree with the fused one the same way.

Usage: hvd_train.py [STEPS]
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

import weft.horovod.torch as hvd
from common import Report

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 50


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 32),
                         nn.Tanh(), nn.Linear(32, 5))


def data(step, rank):
    g = torch.Generator().manual_seed(10000 * rank + step)
    x = torch.randn(16, 16, generator=g)
    return x, x[:, :5].argmax(1)


def train(wrap):
    model = make_model()
    model, opt = wrap(model)
    losses = []
    for step in range(STEPS):
        x, y = data(step, dist.get_rank())
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    module = model.module if hasattr(model, "module") else model
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()]), \
        losses


def with_hvd(threshold):
    def wrap(model):
        os.environ["HOROVOD_FUSION_THRESHOLD"] = str(threshold)
        try:
            opt = hvd.DistributedOptimizer(
                torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                named_parameters=model.named_parameters())
        finally:
            del os.environ["HOROVOD_FUSION_THRESHOLD"]
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(opt, root_rank=0)
        return model, opt
    return wrap


def with_ddp(model):
    ddp = nn.parallel.DistributedDataParallel(model)
    return ddp, torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)


def main():
    torch.set_num_threads(1)
    with Report() as rep:
        hvd.init()
        dist.init_process_group("gloo")
        n = dist.get_world_size()
        ddp, ddp_loss = train(with_ddp)
        fused, hvd_loss = train(with_hvd(128 << 20))
        unfused, _ = train(with_hvd(0))
        rel = ((fused - ddp).norm() / ddp.norm()).item()
        rep.data.update(relative=rel, bitwise=torch.equal(fused, ddp),
                        max_abs=(fused - ddp).abs().max().item(),
                        first_loss=hvd_loss[0], last_loss=hvd_loss[-1],
                        ddp_last_loss=ddp_loss[-1])
        if n <= 2:
            rep.check("DistributedOptimizer equals DDP on gloo bitwise",
                      torch.equal(fused, ddp), rel)
            rep.check("fused equals unfused bitwise",
                      torch.equal(fused, unfused))
        else:
            rep.check("DistributedOptimizer within 1e-6 of DDP on gloo",
                      rel < 1e-6, rel)
            rep.check("fused within 1e-6 of unfused",
                      ((fused - unfused).norm() / fused.norm()).item() < 1e-6)
        rep.check("the loss fell by half", hvd_loss[-1] < hvd_loss[0] / 2,
                  (hvd_loss[0], hvd_loss[-1]))
        gathered = hvd.allgather(fused.unsqueeze(0))
        rep.check("every rank ends with the same parameters",
                  all(torch.equal(gathered[0], g) for g in gathered))
        dist.destroy_process_group()
        hvd.shutdown()


if __name__ == "__main__":
    main()
