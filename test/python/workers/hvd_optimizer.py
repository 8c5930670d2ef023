"""DistributedOptimizer, the broadcast helpers and join, against results
computed here.

Every rank can compute every rank's gradients (the data of rank r at step
k come from a generator seeded with (k, r), the model from seed 0), so the
expected averaged gradients, optimizer states and parameters are computed
locally with plain torch and compared with what weft.horovod produced.

Usage: hvd_optimizer.py PART... ("all" for every part).
"""
import os
import sys

import torch
import torch.nn as nn

import weft.horovod.torch as hvd
from common import Report

FEATURES, HIDDEN, CLASSES, BATCH = 6, 10, 4, 8


def make_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.Tanh(),
                         nn.Linear(HIDDEN, HIDDEN), nn.Tanh(),
                         nn.Linear(HIDDEN, CLASSES))


def batch(step, rank):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(BATCH, FEATURES, generator=g), \
        torch.randint(0, CLASSES, (BATCH,), generator=g)


def loss_of(model, step, rank):
    x, y = batch(step, rank)
    return nn.functional.cross_entropy(model(x), y)


def local_grads(model, steps, rank):
    """Rank `rank`'s gradients, summed over `steps`, computed here."""
    model.zero_grad()
    for s in steps:
        loss_of(model, s, rank).backward()
    return [p.grad.clone() for p in model.parameters()]


def expected_average(N, steps=(0,), seed=0):
    per_rank = [local_grads(make_model(seed), steps, r) for r in range(N)]
    return [sum(g[i].double() for g in per_rank) / N
            for i in range(len(per_rank[0]))]


def grads(model):
    return [p.grad.clone() for p in model.parameters()]


def close(a, b, rtol=1e-5, atol=1e-7):
    return all(torch.allclose(x.double(), y.double(), rtol=rtol, atol=atol)
               for x, y in zip(a, b))


def worst(a, b):
    return max((x.double() - y.double()).abs().max().item()
               for x, y in zip(a, b))


def distributed(model, threshold=None, **kw):
    """A DistributedOptimizer over SGD, built with the fusion threshold
    `threshold` (None: the default)."""
    old = os.environ.pop("HOROVOD_FUSION_THRESHOLD", None)
    if threshold is not None:
        os.environ["HOROVOD_FUSION_THRESHOLD"] = str(threshold)
    try:
        return hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1),
            named_parameters=model.named_parameters(), **kw)
    finally:
        os.environ.pop("HOROVOD_FUSION_THRESHOLD", None)
        if old is not None:
            os.environ["HOROVOD_FUSION_THRESHOLD"] = old


def one_backward(opt, model, R, steps=(0,)):
    opt.zero_grad()
    for s in steps:
        loss_of(model, s, R).backward()


def part_fusion(rep, R, N):
    """Fused and unfused reductions give the same gradients, both the
    average computed here; reductions start during backward."""
    want = expected_average(N)
    results = {}
    for label, threshold in (("fused", None), ("unfused", 0)):
        model = make_model()
        opt = distributed(model, threshold)
        buckets = len(opt._hvd_buckets.buckets)
        one_backward(opt, model, R)
        started = opt._hvd_buckets.next
        opt.synchronize()
        results[label] = grads(model)
        rep.check("%s: the averaged gradients" % label,
                  close(results[label], want), worst(results[label], want))
        rep.data["%s buckets" % label] = buckets
        rep.data["%s started in backward" % label] = started
    rep.check("fused: one fusion buffer", rep.data["fused buckets"] == 1,
              rep.data["fused buckets"])
    rep.check("HOROVOD_FUSION_THRESHOLD=0: one bucket per parameter",
              rep.data["unfused buckets"] == 6, rep.data["unfused buckets"])
    rep.check("unfused: every reduction started from a backward hook",
              rep.data["unfused started in backward"] == 6,
              rep.data["unfused started in backward"])
    rep.check("fused: the buffer started from the last backward hook",
              rep.data["fused started in backward"] == 1)
    same = all(torch.equal(a, b) for a, b in zip(results["fused"],
                                                  results["unfused"]))
    rep.data["fused equals unfused bitwise"] = same
    if N <= 2:
        # 2 ranks: a + b whatever the algorithm, so bitwise
        rep.check("fused equals unfused, bitwise", same,
                  worst(results["fused"], results["unfused"]))
    else:
        rep.check("fused equals unfused within rounding",
                  close(results["fused"], results["unfused"], 1e-6),
                  worst(results["fused"], results["unfused"]))
    os.environ["HOROVOD_FUSION_THRESHOLD"] = "0"
    os.environ["WEFTPY_HVD_FUSION_THRESHOLD"] = "512"
    try:
        model = make_model()
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(),
                                                       lr=0.1))
        n = len(opt._hvd_buckets.buckets)
    finally:
        del os.environ["HOROVOD_FUSION_THRESHOLD"]
        del os.environ["WEFTPY_HVD_FUSION_THRESHOLD"]
    # gradients of 240, 40, 400, 40, 160 and 16 bytes, packed from the
    # last into buckets of at most 512: [16 160 40], [400 40], [240]
    rep.check("WEFTPY_HVD_FUSION_THRESHOLD=512 wins over "
              "HOROVOD_FUSION_THRESHOLD=0: 3 buckets", n == 3, n)


def part_exact_fusion(rep, R, N):
    """Integer-valued gradients: sums are exact, so fused and unfused agree
    bitwise at any number of ranks."""
    outs = []
    for threshold in (None, 0):
        model = nn.Sequential(nn.Linear(4, 5), nn.Linear(5, 3))
        with torch.no_grad():
            for i, p in enumerate(model.parameters()):
                p.copy_((torch.arange(p.numel()).view(p.shape) % 5) - 2 + i)
        opt = distributed(model, threshold)
        opt.zero_grad()
        x = (torch.arange(8 * 4).view(8, 4) % 7 - 3 + R).float()
        (model(x).sum() * (R + 1)).backward()
        opt.synchronize()
        outs.append(grads(model))
    rep.check("integer gradients: fused equals unfused bitwise",
              all(torch.equal(a, b) for a, b in zip(*outs)),
              worst(outs[0], outs[1]))


def part_passes(rep, R, N):
    """backward_passes_per_step=2: two passes accumulate locally, then one
    reduction; a third pass before step() is refused."""
    model = make_model()
    opt = distributed(model, backward_passes_per_step=2)
    one_backward(opt, model, R, steps=(0,))
    rep.check("nothing reduced after the first of two passes",
              opt._hvd_buckets.next == 0, opt._hvd_buckets.next)
    loss_of(model, 1, R).backward()
    opt.synchronize()
    want = expected_average(N, steps=(0, 1))
    got = grads(model)
    rep.check("backward_passes_per_step=2: the average of the summed "
              "passes", close(got, want), worst(got, want))
    with opt.skip_synchronize():
        opt.step()
    opt.zero_grad()
    for s in (2, 3):
        loss_of(model, s, R).backward()
    try:
        loss_of(model, 4, R).backward()
    except AssertionError as e:
        rep.check("a third pass is refused, naming backward_passes_per_step",
                  "backward_passes_per_step" in str(e), e)
    else:
        rep.check("a third pass is refused", False)
    opt.synchronize()


def part_fp16(rep, R, N):
    model = make_model()
    opt = distributed(model, compression=hvd.Compression.fp16)
    one_backward(opt, model, R)
    opt.synchronize()
    got = grads(model)
    rep.check("fp16: gradients come back as float32",
              all(g.dtype == torch.float32 for g in got))
    rep.check("fp16: the bucket is float16",
              opt._hvd_buckets.buckets[0].dtype == torch.float16)
    per_rank = [local_grads(make_model(), (0,), r) for r in range(N)]
    if N == 2:
        # the sum of the two halves rounded to float16, then halved and
        # rounded once more: what weft's float16 sum and average do
        want = [((a.half().float() + b.half().float()).half().float() / 2)
                .half().float() for a, b in zip(*per_rank)]
        rep.check("fp16: float16 sum, halved, bitwise",
                  all(torch.equal(g, w) for g, w in zip(got, want)),
                  worst(got, want))
    want = expected_average(N)
    rep.check("fp16: within float16 rounding of the float32 average",
              close(got, want, rtol=2e-3, atol=2e-4), worst(got, want))


def part_ops(rep, R, N):
    want = expected_average(N)
    model = make_model()
    opt = distributed(model, gradient_predivide_factor=2.0)
    one_backward(opt, model, R)
    opt.synchronize()
    rep.check("gradient_predivide_factor=2: the same average",
              close(grads(model), want), worst(grads(model), want))
    model = make_model()
    opt = distributed(model, op=hvd.Sum)
    one_backward(opt, model, R)
    opt.synchronize()
    want_sum = [w * N for w in want]
    rep.check("op=Sum: the summed gradients", close(grads(model), want_sum),
              worst(grads(model), want_sum))
    model = make_model()
    params = list(model.parameters())
    opt = distributed(model, groups=[[params[0], params[1]],
                                     [params[4], params[5]]])
    rep.check("groups: two buckets of two, the rest alone",
              sorted(len(b.members) for b in opt._hvd_buckets.buckets) ==
              [1, 1, 2, 2])
    one_backward(opt, model, R)
    opt.synchronize()
    rep.check("groups: the averaged gradients", close(grads(model), want),
              worst(grads(model), want))
    model = make_model()
    opt = distributed(model, groups=2)
    rep.check("groups=2: two buckets", len(opt._hvd_buckets.buckets) == 2)
    try:
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1),
                                 op=hvd.Sum, gradient_predivide_factor=2.0)
    except ValueError as e:
        rep.check("predivide with Sum: ValueError", "op != Average" in str(e))
    try:
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1),
                                 named_parameters=[("a", params[0])])
    except ValueError as e:
        rep.check("unnamed parameters: ValueError", "not named" in str(e))


def part_protocol(rep, R, N):
    """zero_grad before step is refused; synchronize + skip_synchronize;
    a parameter without a gradient on this rank is reduced as zeros;
    step() trains."""
    model = make_model()
    extra = nn.Parameter(torch.ones(3))
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(list(model.parameters()) + [extra], lr=0.1))
    rep.check("still an instance of the wrapped class",
              isinstance(opt, torch.optim.SGD) and
              type(opt).__name__ == "SGD")
    loss_of(model, 0, R).backward()
    try:
        opt.zero_grad()
    except AssertionError as e:
        rep.check("zero_grad between backward and step: AssertionError",
                  "zero_grad" in str(e), e)
    else:
        rep.check("zero_grad between backward and step is refused", False)
    opt.synchronize()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1e6)
    before = [p.detach().clone() for p in model.parameters()]
    with opt.skip_synchronize():
        opt.step()
    want = expected_average(N)
    after = [p.detach() for p in model.parameters()]
    stepped = [b - 0.1 * w.float() for b, w in zip(before, want)]
    rep.check("step applied the averaged gradients", close(after, stepped),
              worst(after, stepped))
    rep.check("a parameter no rank used gets a zero gradient",
              extra.grad is not None and not extra.grad.any())
    opt.zero_grad()


def sgd_momentum(model, lr):
    return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)


def adam(model, lr):
    return torch.optim.Adam(model.parameters(), lr=lr, betas=(0.8, 0.95))


def state_after_steps(make_opt, r):
    """The optimizer state rank r reaches with its own learning rate and
    two steps on its own gradients, without hvd."""
    model = make_model()
    opt = make_opt(model, 0.1 * (r + 1))
    for s in range(2):
        opt.zero_grad()
        loss_of(model, s, r).backward()
        opt.step()
    return opt


def states(opt):
    out = []
    for group in opt.param_groups:
        for p in group["params"]:
            out.extend(v for _, v in sorted(opt.state[p].items()))
    return out


def part_optimizer_state(rep, R, N):
    root = N - 1
    for name, make_opt in (("SGD momentum", sgd_momentum), ("Adam", adam)):
        opt = state_after_steps(make_opt, R)
        hvd.broadcast_optimizer_state(opt, root_rank=root)
        want = state_after_steps(make_opt, root)
        got_s, want_s = states(opt), states(want)
        rep.check("%s: every state tensor is the root's" % name,
                  len(got_s) == len(want_s) and all(
                      torch.equal(a, b) for a, b in zip(got_s, want_s)),
                  (len(got_s), len(want_s)))
        rep.check("%s: the learning rate is the root's" % name,
                  opt.param_groups[0]["lr"] == want.param_groups[0]["lr"],
                  opt.param_groups[0]["lr"])
    model = make_model()
    before = [p.detach().clone() for p in model.parameters()]
    fresh = hvd.DistributedOptimizer(adam(model, 0.01),
                                     named_parameters=model.named_parameters())
    hvd.broadcast_optimizer_state(fresh, root_rank=0)
    steps = [fresh.state[p]["step"].item() for p in model.parameters()]
    rep.check("a fresh DistributedOptimizer(Adam): state made by one step "
              "on zero gradients, as Horovod", steps == [1.0] * 6 and all(
                  not fresh.state[p]["exp_avg"].any()
                  for p in model.parameters()), steps)
    rep.check("... and the parameters unchanged", all(
        torch.equal(a, b) for a, b in zip(before, model.parameters())))


def part_parameters(rep, R, N):
    root = N - 1
    model = make_model(seed=R)
    hvd.broadcast_parameters(model.state_dict(), root_rank=root)
    want = make_model(seed=root)
    rep.check("broadcast_parameters(state_dict())", all(
        torch.equal(a, b) for a, b in zip(model.state_dict().values(),
                                          want.state_dict().values())))
    model = make_model(seed=R + 10)
    hvd.broadcast_parameters(list(model.named_parameters()), root_rank=0)
    want = make_model(seed=10)
    rep.check("broadcast_parameters(named_parameters())", all(
        torch.equal(a, b) for a, b in zip(model.parameters(),
                                          want.parameters())))


def part_join(rep, R, N):
    """Rank r has 2 + r batches.  Ranks out of data join; the others' steps
    average with zeros from the joined ranks (divided by the job's size, as
    Horovod does), and a metric allreduce per step too."""
    steps = 2 + R
    model = make_model()
    opt = distributed(model)
    metric = None
    for s in range(steps):
        opt.zero_grad()
        loss = loss_of(model, s, R)
        loss.backward()
        opt.step()
        metric = hvd.allreduce(loss.detach(), op=hvd.Sum).item()
    last = hvd.join()
    rep.check("join returns the rank that joined last", last == N - 1, last)
    # this rank's parameters: its own steps, each the average over the
    # ranks still active (a joined rank no longer steps)
    ref = make_model()
    want_metric = None
    for s in range(steps):
        active = [r for r in range(N) if s < 2 + r]
        if s == steps - 1:      # the last step, before its update
            with torch.no_grad():
                want_metric = sum(loss_of(ref, s, r).item() for r in active)
        per_rank = [local_grads(ref, (s,), r) for r in active]
        with torch.no_grad():
            for i, p in enumerate(ref.parameters()):
                p -= 0.1 * (sum(g[i].double() for g in per_rank) / N).float()
    rep.check("a metric allreduced each step: joined ranks add nothing",
              abs(metric - want_metric) < 1e-5 * abs(want_metric),
              (metric, want_metric))
    got = [p.detach() for p in model.parameters()]
    want = [p.detach() for p in ref.parameters()]
    rep.check("parameters after join equal the simulated uneven run",
              close(got, want, rtol=1e-5, atol=1e-6), worst(got, want))
    after = hvd.allgather(torch.full((1,), R))
    rep.check("collectives work normally after join",
              torch.equal(after, torch.arange(N)), after)
    rep.check("a second join with even data returns the last rank",
              hvd.join() == N - 1)


def part_single(rep, R, N):
    """One rank: DistributedOptimizer is the wrapped optimizer, as in
    Horovod."""
    model, ref = make_model(), make_model()
    opt = distributed(model)
    plain = torch.optim.SGD(ref.parameters(), lr=0.1)
    for o, m in ((opt, model), (plain, ref)):
        o.zero_grad()
        loss_of(m, 0, 0).backward()
        o.step()
    rep.check("one rank: the same step as plain SGD", all(
        torch.equal(a, b) for a, b in zip(model.parameters(),
                                          ref.parameters())))


PARTS = {"fusion": part_fusion, "exact_fusion": part_exact_fusion,
         "passes": part_passes, "fp16": part_fp16, "ops": part_ops,
         "protocol": part_protocol, "optimizer_state": part_optimizer_state,
         "parameters": part_parameters, "join": part_join,
         "single": part_single}


# what applies to a job of one rank
SINGLE = ("single", "optimizer_state", "parameters", "join")


def main(parts):
    torch.set_num_threads(1)
    with Report() as rep:
        hvd.init()
        R, N = hvd.rank(), hvd.size()
        if parts == ["all"]:
            parts = [p for p in PARTS if (p in SINGLE) == (N == 1) or
                     p in SINGLE[1:]]
        for name in parts:
            with rep.case(name):
                PARTS[name](rep, R, N)
        hvd.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
