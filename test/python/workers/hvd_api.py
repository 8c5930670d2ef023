"""weft.horovod.torch's collectives against values computed here.

Every rank can build every rank's input (inputs depend only on the rank),
so each expected result is computed locally with plain torch, in float64
or int64, and compared with what the collective returned: exactly where
the values are small integers, within the dtype's rounding for averages.

Usage: hvd_api.py PART... (PARTS below; "all" for every part); the
dtypes part takes every dtype Horovod supports on CPU plus bfloat16 and
bool, "core" float32, int16 and bool only.
"""
import os
import shutil
import sys
import time

import torch

import weft.horovod.torch as hvd
from common import Report

HOROVOD_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32,
                  torch.int64, torch.float16, torch.float32, torch.float64]
EXTRA_DTYPES = [torch.bfloat16]
LOOSE = {torch.float16: 2e-3, torch.bfloat16: 1e-2, torch.float32: 1e-6,
         torch.float64: 1e-12}


def value(r, dtype, shape, mod=7):
    """Rank r's input: small integers, so that sums are exact in every
    dtype (at most 4 ranks * 10 = 40, inside int8)."""
    n = 1
    for d in shape:
        n *= d
    v = (torch.arange(n, dtype=torch.int64).reshape(shape) % mod) + r + 1
    return v.to(dtype)


def equal(got, want):
    return got.dtype == want.dtype and got.shape == want.shape and \
        torch.equal(got, want)


def close(got, want, dtype):
    return got.dtype == want.dtype and got.shape == want.shape and \
        torch.allclose(got.double(), want.double(), rtol=LOOSE[dtype],
                       atol=0)


def expect(rep, name, ok, got, want):
    rep.check(name, ok, "got %s, expected %s" % (got, want))


def reductions_of(rep, dtypes, R, N):
    shape = (3, 5)
    for dt in dtypes:
        every = [value(r, dt, shape).to(torch.float64 if dt.is_floating_point
                                        else torch.int64) for r in range(N)]
        total = sum(every)
        x = value(R, dt, shape)
        got = hvd.allreduce(x, op=hvd.Sum)
        expect(rep, "allreduce Sum %s" % dt, equal(got, total.to(dt)), got,
               total)
        rep.check("allreduce leaves its input %s" % dt,
                  equal(x, value(R, dt, shape)))
        got = hvd.allreduce(x)                       # Average, the default
        if dt.is_floating_point:
            want = (total / N).to(dt)
            expect(rep, "allreduce Average %s" % dt, close(got, want, dt),
                   got, want)
        else:
            want = torch.div(total, N, rounding_mode="trunc").to(dt)
            expect(rep, "allreduce Average %s (truncated)" % dt,
                   equal(got, want), got, want)
        for op, fn in ((hvd.Min, torch.minimum), (hvd.Max, torch.maximum)):
            want = every[0]
            for e in every[1:]:
                want = fn(want, e)
            got = hvd.allreduce(x, op=op)
            expect(rep, "allreduce %s %s" % (op, dt), equal(got, want.to(dt)),
                   got, want)
        small = [value(r, dt, shape, mod=2) for r in range(N)]
        want = small[0].to(torch.float64 if dt.is_floating_point
                           else torch.int64)
        for s in small[1:]:
            want = want * s.to(want.dtype)
        # Product of values r+1..r+2: up to 4*5*6*7 = 840 for 4 ranks,
        # beyond int8/uint8: those wrap, as in the dtype's own arithmetic
        want = want.to(dt) if dt not in (torch.int8, torch.uint8) else \
            _wrap(want, dt)
        got = hvd.allreduce(small[R], op=hvd.Product)
        expect(rep, "allreduce Product %s" % dt, equal(got, want), got, want)
        y = value(R, dt, shape).clone()
        hvd.allreduce_(y, op=hvd.Sum)
        expect(rep, "allreduce_ Sum %s" % dt, equal(y, total.to(dt)), y,
               total)
        h = hvd.allreduce_async(x, op=hvd.Max)
        got = hvd.synchronize(h)
        want = every[0]
        for e in every[1:]:
            want = torch.maximum(want, e)
        expect(rep, "allreduce_async Max %s" % dt, equal(got, want.to(dt)),
               got, want)


def _wrap(v, dt):
    """int64 values as int8/uint8 arithmetic would leave them."""
    bits = v & 0xFF
    if dt == torch.int8:
        bits = torch.where(bits > 127, bits - 256, bits)
    return bits.to(dt)


def part_dtypes(rep, R, N, dtypes=None):
    reductions_of(rep, dtypes or HOROVOD_DTYPES + EXTRA_DTYPES, R, N)
    bools = [torch.tensor([r == 0, False, True]) for r in range(N)]
    got = hvd.allreduce(bools[R], op=hvd.Sum)
    want = torch.tensor([True, False, True])
    expect(rep, "allreduce Sum bool (or)", equal(got, want), got, want)
    got = hvd.allreduce(bools[R], op=hvd.Min)
    want = torch.tensor([N == 1, False, True])
    expect(rep, "allreduce Min bool (and)", equal(got, want), got, want)


def part_core(rep, R, N):
    part_dtypes(rep, R, N, [torch.float32, torch.int16])


def part_scaling(rep, R, N):
    x = value(R, torch.float64, (4,))
    total = sum(value(r, torch.float64, (4,)) for r in range(N))
    got = hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0,
                        postscale_factor=0.25)
    expect(rep, "Sum prescale 2 postscale 0.25", equal(got, total * 0.5),
           got, total * 0.5)
    got = hvd.allreduce(x, op=hvd.Average, prescale_factor=3.0,
                        postscale_factor=0.5)
    want = total * 1.5 / N
    expect(rep, "Average prescale 3 postscale 0.5",
           close(got, want, torch.float64), got, want)
    got = hvd.allreduce(x, average=False)
    expect(rep, "legacy average=False is Sum", equal(got, total), got, total)
    got = hvd.allreduce(x, average=True)
    expect(rep, "legacy average=True is Average",
           close(got, total / N, torch.float64), got, total / N)
    xi = value(R, torch.int32, (4,))
    got = hvd.allreduce(xi, op=hvd.Sum, postscale_factor=0.5)
    want = (sum(value(r, torch.int64, (4,)) for r in range(N)) * 0.5) \
        .to(torch.int32)
    expect(rep, "int32 postscale 0.5 truncates", equal(got, want), got, want)
    nc = value(R, torch.float32, (4, 6)).t()       # not contiguous
    got = hvd.allreduce(nc, op=hvd.Sum)
    want = sum(value(r, torch.float32, (4, 6)) for r in range(N)).t()
    expect(rep, "allreduce of a transposed tensor", torch.equal(got, want),
           got, want)
    y = value(R, torch.float32, (4, 6)).t()
    hvd.allreduce_(y, op=hvd.Sum)
    expect(rep, "allreduce_ of a transposed tensor", torch.equal(y, want),
           y, want)


def part_gather(rep, R, N):
    dtypes = HOROVOD_DTYPES + EXTRA_DTYPES + [torch.bool]
    for dt in dtypes:
        for tail in ((), (3,), (2, 2)):
            def make(r):
                shape = (r,) + tail         # rank 0 sends no rows
                n = 1
                for d in shape:
                    n *= d
                return ((torch.arange(n) + 10 * r) % 100).reshape(shape) \
                    .to(dt) if dt != torch.bool else \
                    (torch.arange(n) % (r + 2) == 0).reshape(shape)
            got = hvd.allgather(make(R))
            want = torch.cat([make(r) for r in range(N)])
            expect(rep, "allgather uneven %s %s" % (dt, tail),
                   equal(got, want), got.shape, want.shape)
    even = [torch.full((2, 3), float(r)) for r in range(N)]
    got = hvd.synchronize(hvd.allgather_async(even[R]))
    expect(rep, "allgather_async even", equal(got, torch.cat(even)), got,
           torch.cat(even))
    a = [value(r, torch.int32, (r + 1, 2)) for r in range(N)]
    b = [value(r, torch.float64, (N - r,)) for r in range(N)]
    got = hvd.grouped_allgather([a[R], b[R]])
    rep.check("grouped_allgather", equal(got[0], torch.cat(a)) and
              equal(got[1], torch.cat(b)), got)
    got = hvd.synchronize(hvd.grouped_allgather_async([a[R], b[R]]))
    rep.check("grouped_allgather_async", equal(got[0], torch.cat(a)) and
              equal(got[1], torch.cat(b)), got)


def part_broadcast(rep, R, N):
    for dt in HOROVOD_DTYPES + EXTRA_DTYPES + [torch.bool]:
        for root in range(N):
            mine = value(R, dt, (2, 3)) if dt != torch.bool else \
                torch.full((2, 3), R % 2 == 0)
            want = value(root, dt, (2, 3)) if dt != torch.bool else \
                torch.full((2, 3), root % 2 == 0)
            got = hvd.broadcast(mine, root)
            rep.check("broadcast %s from %d" % (dt, root),
                      equal(got, want) and equal(
                          mine, value(R, dt, (2, 3)) if dt != torch.bool
                          else torch.full((2, 3), R % 2 == 0)), got)
    for root in range(N):
        t = value(R, torch.float32, (5,))
        hvd.broadcast_(t, root)
        rep.check("broadcast_ from %d" % root,
                  equal(t, value(root, torch.float32, (5,))), t)
        t = value(R, torch.float32, (5,))
        hvd.synchronize(hvd.broadcast_async_(t, root))
        rep.check("broadcast_async_ from %d" % root,
                  equal(t, value(root, torch.float32, (5,))), t)
        got = hvd.synchronize(hvd.broadcast_async(
            value(R, torch.int64, (3,)), root))
        rep.check("broadcast_async from %d" % root,
                  equal(got, value(root, torch.int64, (3,))), got)


def splits_of(r, N):
    return [(r + 2 * d) % 3 for d in range(N)]


def a2a_input(r, N, dt):
    """Rank r's rows, in destination order; row content names (r, d)."""
    rows = []
    for d, k in enumerate(splits_of(r, N)):
        rows += [[r * 10 + d, k]] * k
    return torch.tensor(rows, dtype=torch.int64).reshape(-1, 2).to(dt)


def part_alltoall(rep, R, N):
    for dt in (torch.float32, torch.int8, torch.float16, torch.int64):
        got, received = hvd.alltoall(a2a_input(R, N, dt),
                                     splits=splits_of(R, N))
        want = torch.cat([a2a_input(r, N, dt)[sum(splits_of(r, N)[:R]):
                                               sum(splits_of(r, N)[:R + 1])]
                          for r in range(N)])
        want_splits = torch.tensor([splits_of(r, N)[R] for r in range(N)],
                                   dtype=torch.int32)
        rep.check("alltoall splits %s" % dt, equal(got, want) and
                  equal(received, want_splits), (got, received))
    x = torch.arange(2 * N * 3).reshape(2 * N, 3) + 1000 * R
    got = hvd.alltoall(x)
    want = torch.cat([(torch.arange(2 * N * 3).reshape(2 * N, 3) +
                       1000 * r)[2 * R:2 * R + 2] for r in range(N)])
    rep.check("alltoall equal shares", equal(got, want), got)
    spl = torch.tensor(splits_of(R, N), dtype=torch.int32)
    got, received = hvd.synchronize(hvd.alltoall_async(
        a2a_input(R, N, torch.float64), splits=spl))
    rep.check("alltoall_async with a splits tensor",
              got.shape[0] == sum(splits_of(r, N)[R] for r in range(N)) and
              received.tolist() == [splits_of(r, N)[R] for r in range(N)],
              (got, received))


def part_reducescatter(rep, R, N):
    rows = 2 * N + 1
    share = [rows // N + (1 if r < rows % N else 0) for r in range(N)]
    first = sum(share[:R])
    for dt in (torch.float32, torch.float64, torch.int32, torch.float16):
        total = sum(value(r, torch.float64, (rows, 2)) for r in range(N))
        got = hvd.reducescatter(value(R, dt, (rows, 2)), op=hvd.Sum)
        want = total[first:first + share[R]].to(dt)
        expect(rep, "reducescatter Sum %s" % dt, equal(got, want), got, want)
        if dt.is_floating_point:
            got = hvd.reducescatter(value(R, dt, (rows, 2)))
            want = (total / N)[first:first + share[R]].to(dt)
            expect(rep, "reducescatter Average %s" % dt,
                   close(got, want, dt), got, want)
    even = sum(value(r, torch.float32, (2 * N, 3)) for r in range(N))
    got = hvd.synchronize(hvd.reducescatter_async(
        value(R, torch.float32, (2 * N, 3)), op=hvd.Sum))
    rep.check("reducescatter_async even", equal(got, even[2 * R:2 * R + 2]),
              got)
    a = [value(r, torch.float32, (rows, 2)) for r in range(N)]
    b = [value(r, torch.int64, (N,)) for r in range(N)]
    got = hvd.grouped_reducescatter([a[R], b[R]], op=hvd.Sum)
    rep.check("grouped_reducescatter",
              equal(got[0], sum(a)[first:first + share[R]]) and
              equal(got[1], sum(b)[R:R + 1]), got)
    got = hvd.synchronize(hvd.grouped_reducescatter_async([a[R], b[R]],
                                                          op=hvd.Sum))
    rep.check("grouped_reducescatter_async",
              equal(got[0], sum(a)[first:first + share[R]]), got)


def part_grouped(rep, R, N):
    ts = [value(R, torch.float32, (3,)), value(R, torch.int64, (2, 2)),
          value(R, torch.float32, (4,)), value(R, torch.int16, (2,))]
    want = [sum(value(r, t.dtype, t.shape).to(torch.float64 if
                                               t.is_floating_point() else
                                               torch.int64)
                for r in range(N)).to(t.dtype) for t in ts]
    got = hvd.grouped_allreduce(ts, op=hvd.Sum)
    rep.check("grouped_allreduce, 3 dtypes", all(
        equal(g, w) for g, w in zip(got, want)), got)
    got = hvd.synchronize(hvd.grouped_allreduce_async(ts, op=hvd.Sum))
    rep.check("grouped_allreduce_async", all(
        equal(g, w) for g, w in zip(got, want)), got)
    own = [t.clone() for t in ts]
    hvd.grouped_allreduce_(own, op=hvd.Sum)
    rep.check("grouped_allreduce_", all(
        equal(g, w) for g, w in zip(own, want)), own)
    own = [t.clone() for t in ts]
    hvd.synchronize(hvd.grouped_allreduce_async_(own, op=hvd.Max))
    rep.check("grouped_allreduce_async_ Max", all(
        equal(g, value(N - 1, t.dtype, t.shape)) for g, t in zip(own, ts)),
        own)


def part_async(rep, R, N):
    """poll() is false while an operation cannot have completed: rank 0
    starts its part 0.3 s after the others, which poll at once."""
    big = torch.full((1 << 21,), float(R + 1))
    if R == 0:
        time.sleep(0.3)
    h = hvd.allreduce_async(big, op=hvd.Sum)
    first = hvd.poll(h)
    if N > 1 and R != 0:
        rep.check("poll is false while rank 0 has not started", not first)
    polls = 1
    while not hvd.poll(h):
        polls += 1
        time.sleep(0.001)
    rep.data["polls"] = polls
    got = hvd.synchronize(h)
    want = float(N * (N + 1) // 2)
    rep.check("result after poll", bool((got == want).all()), got[:3])
    rep.check("synchronize of a finished handle returns None",
              hvd.synchronize(h) is None)
    a = hvd.allreduce_async(torch.ones(5), op=hvd.Sum)
    b = hvd.allgather_async(torch.full((1,), R))
    c = hvd.broadcast_async(torch.full((2,), float(R)), N - 1)
    gc, gb, ga = hvd.synchronize(c), hvd.synchronize(b), hvd.synchronize(a)
    rep.check("three handles waited in reverse order",
              equal(ga, torch.full((5,), float(N))) and
              equal(gb, torch.arange(N)) and
              equal(gc, torch.full((2,), float(N - 1))), (ga, gb, gc))
    try:
        hvd.poll(h)
    except ValueError as e:
        rep.check("poll of a synchronized handle names it",
                  "not an operation in flight" in str(e), e)
    else:
        rep.check("poll of a synchronized handle raises", False)


def part_objects(rep, R, N):
    obj = {"rank": R, "data": list(range(R * 3)), "name": "r%d" % R}
    got = hvd.broadcast_object(obj, root_rank=N - 1)
    want = {"rank": N - 1, "data": list(range((N - 1) * 3)),
            "name": "r%d" % (N - 1)}
    rep.check("broadcast_object", got == want, got)
    got = hvd.allgather_object(obj)
    want = [{"rank": r, "data": list(range(r * 3)), "name": "r%d" % r}
            for r in range(N)]
    rep.check("allgather_object of different sizes", got == want, got)


def part_process_sets(rep, R, N):
    if N == 1:
        rep.check("process sets need 2 ranks (N=1 only checks the global "
                  "set)", hvd.global_process_set.size() == 1)
        return
    evens = hvd.add_process_set(list(range(0, N, 2)))
    odds = hvd.ProcessSet(list(range(1, N, 2)))
    hvd.add_process_set(odds)
    mine = evens if R % 2 == 0 else odds
    other = odds if R % 2 == 0 else evens
    rep.check("included", mine.included() and not other.included())
    rep.check("size and rank in the set", mine.size() == len(mine.ranks) and
              mine.rank() == mine.ranks.index(R), (mine.size(), mine.rank()))
    got = hvd.allreduce(torch.full((3,), float(R)), op=hvd.Sum,
                        process_set=mine)
    want = float(sum(mine.ranks))
    rep.check("allreduce in a process set", bool((got == want).all()), got)
    root = mine.ranks[-1]
    got = hvd.broadcast(torch.full((2,), R), root, process_set=mine)
    rep.check("broadcast from a global root rank in a set",
              equal(got, torch.full((2,), root)), got)
    got = hvd.allgather(torch.full((1,), R), process_set=mine)
    rep.check("allgather in a set, in set order",
              equal(got, torch.tensor(mine.ranks)), got)
    got = hvd.synchronize(hvd.allreduce_async(torch.ones(2), op=hvd.Sum,
                                              process_set=mine))
    rep.check("allreduce_async in a set",
              equal(got, torch.full((2,), float(len(mine.ranks)))), got)
    hvd.barrier(process_set=mine)
    try:
        hvd.allreduce(torch.ones(1), process_set=other)
    except ValueError as e:
        rep.check("a collective of a set this rank is not in: ValueError",
                  "not in" in str(e), e)
    else:
        rep.check("a collective of a set this rank is not in raises", False)
    try:
        hvd.add_process_set(list(mine.ranks))
    except ValueError as e:
        rep.check("a duplicate set: ValueError", "duplicate" in str(e), e)
    else:
        rep.check("a duplicate set raises", False)
    rep.check("remove_process_set", hvd.remove_process_set(evens) and
              hvd.remove_process_set(odds) and evens.process_set_id is None)
    rep.check("the global set is not removed",
              not hvd.remove_process_set(hvd.global_process_set))
    try:
        hvd.allreduce(torch.ones(1), process_set=mine)
    except ValueError as e:
        rep.check("a removed set: ValueError", "not registered" in str(e), e)
    else:
        rep.check("a removed set raises", False)
    got = hvd.allreduce(torch.ones(1), op=hvd.Sum)
    rep.check("the global set works after", got.item() == N, got)


def part_errors(rep, R, N):
    """Argument errors are raised before anything starts, on every rank,
    and leave the communicator usable."""
    cases = [
        ("an unknown op", ValueError, "unknown reduction op",
         lambda: hvd.allreduce(torch.ones(2), op="Mean")),
        ("Adasum", NotImplementedError, "Adasum",
         lambda: hvd.allreduce(torch.ones(2), op=hvd.Adasum)),
        ("op and average", ValueError, "supersedes",
         lambda: hvd.allreduce(torch.ones(2), op=hvd.Sum, average=True)),
        ("a complex reduction", ValueError, "not supported",
         lambda: hvd.allreduce(torch.ones(2, dtype=torch.complex64))),
        ("Average of bool", ValueError, "bool",
         lambda: hvd.allreduce(torch.ones(2, dtype=torch.bool))),
        ("reducescatter Max", ValueError, "Sum and hvd.Average",
         lambda: hvd.reducescatter(torch.ones(2), op=hvd.Max)),
        ("alltoall splits that do not add up", ValueError, "sum",
         lambda: hvd.alltoall(torch.ones(3), splits=[5] * N)),
        ("allgather of a 0-d tensor", ValueError, "0-d",
         lambda: hvd.allgather(torch.tensor(1.0))),
        ("a root outside the set", ValueError, "not in this process set",
         lambda: hvd.broadcast(torch.ones(1), N + 3)),
        ("not a tensor", ValueError, "torch.Tensor",
         lambda: hvd.allreduce([1.0, 2.0])),
    ]
    for name, cls, words, fn in cases:
        try:
            fn()
        except cls as e:
            rep.check("%s: %s naming it" % (name, cls.__name__),
                      words in str(e), e)
        except Exception as e:      # the wrong class
            rep.check("%s raises %s" % (name, cls.__name__), False, repr(e))
        else:
            rep.check("%s raises" % name, False)
    shape = (R + 1, 3) if R != N - 1 else (R + 1, 4)
    try:
        hvd.allgather(torch.ones(shape))
    except ValueError as e:
        rep.check("allgather of different trailing shapes: ValueError on "
                  "every rank", N == 1 or "only the first dimension" in str(e),
                  e)
    else:
        rep.check("allgather of different trailing shapes raises", N == 1)
    got = hvd.allreduce(torch.ones(2), op=hvd.Sum)
    rep.check("usable after argument errors", got.tolist() == [N, N], got)


def part_autograd(rep, R, N):
    x = value(R, torch.float64, (3,)).requires_grad_()
    hvd.allreduce(x, op=hvd.Sum).sum().backward()
    rep.check("allreduce backward: the gradients allreduced",
              equal(x.grad, torch.full((3,), float(N), dtype=torch.float64)),
              x.grad)
    x = torch.full((R + 1, 2), float(R), requires_grad=True)
    y = hvd.allgather(x)
    weights = torch.arange(y.shape[0] * 2, dtype=torch.float32).view(-1, 2)
    (y * weights).sum().backward()
    first = sum(r + 1 for r in range(R))
    rep.check("allgather backward: this rank's rows of the averaged "
              "gradient", equal(x.grad, weights[first:first + R + 1]),
              x.grad)
    x = torch.ones(2, requires_grad=True)
    (hvd.broadcast(x, 0) * (R + 1)).sum().backward()
    want = torch.full((2,), (N + 1) / 2 if R == 0 else 0.0)
    rep.check("broadcast backward: the averaged gradient, at the root",
              torch.allclose(x.grad, want), x.grad)
    x = torch.ones(4 * N, 1, requires_grad=True)
    hvd.reducescatter(x, op=hvd.Sum).sum().backward()
    rep.check("reducescatter backward (Horovod's: Sum scales by the size)",
              equal(x.grad, torch.full((4 * N, 1), float(N))), x.grad)
    x = a2a_input(R, N, torch.float32).requires_grad_()
    out, _ = hvd.alltoall(x, splits=splits_of(R, N))
    (out * 2).sum().backward()
    rep.check("alltoall backward", equal(x.grad, torch.full_like(x, 2.0)),
              x.grad)
    xs = [torch.ones(2, requires_grad=True), torch.ones(3,
                                                       requires_grad=True)]
    sum(o.sum() for o in hvd.grouped_allreduce(xs, op=hvd.Sum)).backward()
    rep.check("grouped_allreduce backward", all(
        equal(t.grad, torch.full_like(t, float(N))) for t in xs))


def part_sync_bn(rep, R, N):
    """SyncBatchNorm on each rank's batch against BatchNorm on the batch of
    every rank together."""
    torch.manual_seed(7)
    xs = [torch.randn(R2 + 2, 3, 4, dtype=torch.float64) * (R2 + 1) + R2
          for R2 in range(N)]
    coef = [torch.randn(R2 + 2, 3, 4, dtype=torch.float64) for R2 in range(N)]
    ref = torch.nn.BatchNorm1d(3).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor([1.0, 2.0, 0.5]))
        ref.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    sbn = hvd.SyncBatchNorm(3).double()
    sbn.load_state_dict(ref.state_dict())
    big = torch.cat(xs).requires_grad_()
    yref = ref(big)
    (yref * torch.cat(coef)).sum().backward()
    first = sum(x.shape[0] for x in xs[:R])
    mine = xs[R].clone().requires_grad_()
    y = sbn(mine)
    (y * coef[R]).sum().backward()
    rows = slice(first, first + xs[R].shape[0])
    rep.check("SyncBatchNorm output", torch.allclose(y, yref[rows],
                                                     rtol=1e-9, atol=1e-9))
    rep.check("SyncBatchNorm input gradient", torch.allclose(
        mine.grad, big.grad[rows], rtol=1e-9, atol=1e-9),
        (mine.grad - big.grad[rows]).abs().max())
    rep.check("SyncBatchNorm running statistics",
              torch.allclose(sbn.running_mean, ref.running_mean) and
              torch.allclose(sbn.running_var, ref.running_var),
              (sbn.running_var, ref.running_var))
    wsum = hvd.allreduce(sbn.weight.grad, op=hvd.Sum)
    rep.check("SyncBatchNorm weight gradient summed over ranks",
              torch.allclose(wsum, ref.weight.grad, rtol=1e-9), wsum)
    sbn.eval()
    rep.check("SyncBatchNorm in eval uses the running statistics",
              torch.allclose(sbn(xs[R]), ref.eval()(xs[R])))


def part_basics(rep, R, N):
    rep.check("rank and size", hvd.rank() == R and hvd.size() == N,
              (hvd.rank(), hvd.size()))
    rep.check("one machine: local rank and size, cross size 1",
              hvd.local_rank() == R and hvd.local_size() == N and
              hvd.cross_rank() == 0 and hvd.cross_size() == 1 and
              hvd.is_homogeneous())
    rep.check("build queries say what weft has",
              not hvd.mpi_built() and not hvd.gloo_built() and
              hvd.nccl_built() == 0 and not hvd.cuda_built() and
              not hvd.mpi_enabled() and not hvd.ccl_built() and
              not hvd.ddl_built() and not hvd.rocm_built() and
              hvd.weft_built())
    rep.check("is_initialized", hvd.is_initialized())
    hvd.init()                      # a second init does nothing
    rep.check("a second init keeps the communicator", hvd.size() == N)
    hvd.barrier()


def part_timeline(rep, R, N):
    """start_timeline/stop_timeline drive weft's own timeline: the file
    is a JSON array with one event per operation while it ran."""
    import json
    import tempfile
    d = tempfile.mkdtemp(prefix="hvd-timeline-") if R == 0 else None
    d = hvd.broadcast_object(d, 0)
    path = os.path.join(d, "tl-%r.json")
    hvd.start_timeline(path)
    try:
        hvd.start_timeline(path)
    except ValueError as e:
        rep.check("a second start_timeline: ValueError", "already" in str(e),
                  e)
    for _ in range(3):
        hvd.allreduce(torch.ones(5), op=hvd.Sum)
    hvd.stop_timeline()
    events = json.load(open(path.replace("%r", str(R))))
    mine = [e for e in events if e.get("name") == "allreduce" and
            e.get("args", {}).get("bytes") == 20]
    rep.check("three 20-byte allreduces in this rank's timeline",
              len(mine) == 3, [e.get("args") for e in events])
    hvd.barrier()
    if R == 0:
        shutil.rmtree(d)


def part_internal_error(rep, R, N):
    """Ranks that call the same collective with different counts: weft's
    ERR_MISMATCH becomes HorovodInternalError on every rank, and the
    communicator stays failed (weft's errors are sticky).  Run it last."""
    if N == 1:
        rep.check("a mismatch needs 2 ranks", True)
        return
    try:
        hvd.allreduce(torch.ones(3 + R), op=hvd.Sum)
    except hvd.HorovodInternalError as e:
        rep.check("different counts: HorovodInternalError carrying weft's "
                  "ERR_MISMATCH", e.weft_error is not None and
                  e.weft_error.name == "ERR_MISMATCH" and
                  "ERR_MISMATCH" in str(e), e)
    else:
        rep.check("different counts raise HorovodInternalError", False)
    try:
        hvd.synchronize(hvd.allreduce_async(torch.ones(2)))
    except hvd.HorovodInternalError as e:
        rep.check("the next operation fails too (sticky)",
                  e.weft_error is not None, e)
    else:
        rep.check("the next operation fails too", False)


PARTS = {"basics": part_basics, "core": part_core, "dtypes": part_dtypes,
         "scaling": part_scaling, "gather": part_gather,
         "broadcast": part_broadcast, "alltoall": part_alltoall,
         "reducescatter": part_reducescatter, "grouped": part_grouped,
         "async": part_async, "objects": part_objects,
         "process_sets": part_process_sets, "errors": part_errors,
         "autograd": part_autograd, "sync_bn": part_sync_bn,
         "timeline": part_timeline, "internal_error": part_internal_error}


def main(parts):
    if parts == ["all"]:
        parts = [p for p in PARTS if p not in ("core", "internal_error")]
    with Report() as rep:
        hvd.init()
        R, N = hvd.rank(), hvd.size()
        for name in parts:
            with rep.case(name):
                PARTS[name](rep, R, N)
        hvd.shutdown()
        rep.check("shutdown", not hvd.is_initialized())


if __name__ == "__main__":
    main(sys.argv[1:])
