"""Every torch.distributed operation through the weft backend, checked
against values computed locally.  Inputs are small integers, so sums,
products, minima and maxima are exact in every dtype whatever order the
ranks reduce in, and results must match bitwise (AVG allows rounding).

Usage: run once per rank (see harness.launch); argv: nothing.
"""
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import weft.torch  # noqa: F401  (registers the backend)
from common import RANK, WORLD, Report

R, N = RANK, WORLD
RO = dist.ReduceOp
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int32, torch.int64, torch.int8, torch.uint8, torch.int16]


def value(rank, numel, dtype):
    """Rank `rank`'s input: small values, exact everywhere."""
    base = (torch.arange(numel, dtype=torch.int64) % 3) + rank + 1
    return base.to(dtype)


def reference(op, numel, dtype):
    vals = [value(r, numel, torch.float64) for r in range(N)]
    if op == RO.SUM:
        out = sum(vals)
    elif op == RO.PRODUCT:
        out = torch.stack(vals).prod(0)
    elif op == RO.MIN:
        out = torch.stack(vals).min(0).values
    elif op == RO.MAX:
        out = torch.stack(vals).max(0).values
    else:  # AVG
        out = sum(vals) / N
    return out.to(dtype)


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def close(a, b):
    return a.dtype == b.dtype and torch.allclose(
        a.double(), b.double(), rtol=1e-2 if a.element_size() == 2 else 1e-6)


def check_allreduce(rep):
    for dtype in FLOATS + INTS:
        ops = [RO.SUM, RO.MIN, RO.MAX, RO.PRODUCT]
        if dtype in FLOATS:
            ops.append(RO.AVG)
        for op in ops:
            numel = 1000 if op != RO.PRODUCT else 7
            t = value(R, numel, dtype)
            dist.all_reduce(t, op=op)
            want = reference(op, numel, dtype)
            ok = close(t, want) if op == RO.AVG else same(t, want)
            rep.check("all_reduce %s %s" % (str(dtype)[6:], op), ok,
                      "got %s want %s" % (t[:4].tolist(), want[:4].tolist()))
    # bool: SUM/MAX are logical or, MIN/PRODUCT logical and
    b = torch.tensor([R == 0, True, False])
    dist.all_reduce(b, op=RO.MAX)
    rep.check("all_reduce bool or", b.tolist() == [True, True, False], b)
    b = torch.tensor([R == 0, True, False])
    dist.all_reduce(b, op=RO.MIN)
    rep.check("all_reduce bool and", b.tolist() == [N == 1, True, False], b)
    c = torch.tensor([1 + 2j, R * 1j], dtype=torch.complex64)
    dist.all_reduce(c)
    rep.check("all_reduce complex64", c.tolist() == [N + 2 * N * 1j,
                                                     sum(range(N)) * 1j], c)
    # empty and scalar tensors
    e = torch.empty(0)
    dist.all_reduce(e)
    s = torch.tensor(float(R))
    dist.all_reduce(s)
    rep.check("all_reduce empty and 0-d", e.numel() == 0 and
              s.item() == sum(range(N)), s)


def check_noncontiguous(rep):
    base = value(R, 24, torch.float32).reshape(4, 6)
    t = base.t()                                  # a transposed view
    dist.all_reduce(t)
    want = reference(RO.SUM, 24, torch.float32).reshape(4, 6).t()
    rep.check("all_reduce transposed view", same(t, want) and
              same(base, want.t()), t)
    big = torch.zeros(10)
    strided = big[::2]                            # every other element
    if R == 0:
        strided.copy_(torch.arange(5.0) + 1)
    dist.broadcast(strided, src=0)
    rep.check("broadcast strided view", strided.tolist() ==
              [1., 2., 3., 4., 5.] and big[1::2].abs().sum() == 0, big)
    outs = [torch.zeros(3, 2).t() for _ in range(N)]   # non-contiguous
    dist.all_gather(outs, torch.full((2, 3), float(R)))
    rep.check("all_gather into transposed outputs",
              all(torch.equal(o, torch.full((2, 3), float(r)))
                  for r, o in enumerate(outs)), outs)
    out = torch.zeros(N * 2, 2).t()               # 2 x 2N, non-contiguous
    inp = (torch.arange(4.0) + 10 * R).reshape(2, 2).t()
    dist.all_gather_into_tensor(out, inp)
    want = torch.cat([((torch.arange(4.0) + 10 * r).reshape(2, 2).t())
                      .reshape(-1) for r in range(N)]).reshape(out.shape)
    rep.check("all_gather_into_tensor non-contiguous (logical order)",
              same(out, want), out)


def check_async(rep):
    works = []
    for i in range(8):
        t = torch.full((100,), float(R + i))
        works.append((dist.all_reduce(t, async_op=True), t, i))
    for w, t, i in reversed(works):               # wait out of order
        w.wait()
        want = float(sum(range(N)) + N * i)
        rep.check("async all_reduce #%d wait" % i, t[0].item() == want, t[0])
    t = torch.ones(5)
    fut = dist.all_reduce(t, async_op=True).get_future()
    chained = fut.then(lambda f: f.value()[0] * 2)
    rep.check("get_future value", fut.wait()[0].tolist() == [float(N)] * 5,
              fut.wait())
    rep.check("future then()", chained.wait().tolist() == [2.0 * N] * 5,
              chained.wait())
    w = dist.broadcast(torch.ones(3), src=N - 1, async_op=True)
    w.wait()
    rep.check("async broadcast future done", w.get_future().done())
    t = torch.ones(4)
    w = dist.all_reduce(t, async_op=True)
    rep.check("wait(timeout)", w.wait(timedelta(seconds=30)) and
              t.tolist() == [float(N)] * 4, t)
    t = torch.ones(4)
    dist.all_reduce(t, async_op=True)       # dropped: never waited for
    dist.barrier()
    deadline = time.monotonic() + 10
    while t.tolist() != [float(N)] * 4 and time.monotonic() < deadline:
        time.sleep(0.01)             # its segments land one by one
    rep.check("dropped work still completes", t.tolist() == [float(N)] * 4,
              t)
    outs = [torch.empty(2) for _ in range(N)]
    w = dist.all_gather(outs, torch.full((2,), float(R)), async_op=True)
    w.get_future().wait()
    rep.check("async all_gather via future",
              [o[0].item() for o in outs] == [float(r) for r in range(N)],
              outs)


def check_broadcast(rep):
    for root in range(N):
        for dtype in [torch.float32, torch.int64, torch.bool,
                      torch.complex128, torch.float16]:
            t = (value(root, 17, torch.int64) % 2).to(dtype) if R == root \
                else torch.zeros(17, dtype=dtype)
            dist.broadcast(t, src=root)
            rep.check("broadcast root %d %s" % (root, dtype),
                      same(t, (value(root, 17, torch.int64) % 2).to(dtype)),
                      t)
    obj = [{"rank": R, "payload": list(range(R + 3))}]
    dist.broadcast_object_list(obj, src=N - 1)
    rep.check("broadcast_object_list", obj[0]["rank"] == N - 1, obj)


def check_allgather(rep):
    for dtype in [torch.float32, torch.bfloat16, torch.int8]:
        inp = value(R, 5, dtype)
        outs = [torch.empty(5, dtype=dtype) for _ in range(N)]
        dist.all_gather(outs, inp)
        rep.check("all_gather %s" % dtype, all(
            same(o, value(r, 5, dtype)) for r, o in enumerate(outs)), outs)
        out = torch.empty(N * 5, dtype=dtype)
        dist.all_gather_into_tensor(out, inp)
        want = torch.cat([value(r, 5, dtype) for r in range(N)])
        rep.check("all_gather_into_tensor %s" % dtype, same(out, want), out)
    out = torch.empty(N, 2, 3)
    dist.all_gather_into_tensor(out, torch.full((2, 3), float(R)))
    rep.check("all_gather_into_tensor stacked",
              all(out[r].eq(r).all() for r in range(N)), out)
    objs = [None] * N
    dist.all_gather_object(objs, ("rank", R))
    rep.check("all_gather_object", objs == [("rank", r) for r in range(N)],
              objs)


def check_reduce_scatter(rep):
    for dtype in [torch.float32, torch.int64, torch.float16]:
        for op in [RO.SUM, RO.MAX]:
            full = [value(R, 4, dtype) * (p + 1) for p in range(N)]
            out = torch.empty(4, dtype=dtype)
            dist.reduce_scatter(out, full, op=op)
            want = torch.stack([value(r, 4, dtype) * (R + 1)
                                for r in range(N)]).double()
            want = (want.sum(0) if op == RO.SUM else want.max(0).values)
            rep.check("reduce_scatter %s %s" % (dtype, op),
                      same(out, want.to(dtype)), out)
            out2 = torch.empty(4, dtype=dtype)
            dist.reduce_scatter_tensor(out2, torch.cat(full), op=op)
            rep.check("reduce_scatter_tensor %s %s" % (dtype, op),
                      same(out2, want.to(dtype)), out2)


def check_float8(rep):
    """fp8 tensors reduce natively: -1, 0 and 1 keep every partial sum
    exact on up to 8 ranks, so the reference is the float64 result
    converted by torch; a sum past the largest finite value saturates to
    it (448, 57344), where torch's own e5m2 conversion gives infinity."""
    top = {torch.float8_e4m3fn: 448.0, torch.float8_e5m2: 57344.0}
    for dtype in top:
        vals = [((torch.arange(50) + 2 * r) % 3 - 1).double()
                for r in range(N)]
        for op in [RO.SUM, RO.MAX, RO.MIN]:
            t = vals[R].to(dtype)
            dist.all_reduce(t, op=op)
            st = torch.stack(vals)
            want = (st.sum(0) if op == RO.SUM else st.max(0).values
                    if op == RO.MAX else st.min(0).values).to(dtype)
            rep.check("all_reduce %s %s" % (dtype, op),
                      same(t.view(torch.uint8), want.view(torch.uint8)), t)
        full = [vals[R][:4].to(dtype) for _ in range(N)]
        out = torch.empty(4, dtype=dtype)
        dist.reduce_scatter(out, full, op=RO.SUM)
        want = torch.stack([vals[r][:4] for r in range(N)]).sum(0).to(dtype)
        rep.check("reduce_scatter %s" % dtype,
                  same(out.view(torch.uint8), want.view(torch.uint8)), out)
        # PREMUL_SUM scales in float32 (torch has no fp8 arithmetic): 2s
        # times 0.5 are 1s, summed exactly
        t = torch.full((5,), 2.0).to(dtype)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
        rep.check("all_reduce %s PREMUL_SUM" % dtype,
                  bool((t.float() == N).all()), t)
        big = torch.full((3,), top[dtype] * 0.75).to(dtype)
        dist.all_reduce(big)
        rep.check("all_reduce %s saturates" % dtype,
                  N == 1 or bool((big.float() == top[dtype]).all()), big)


def check_alltoall(rep):
    inp = torch.arange(N * 3, dtype=torch.float32) + 100 * R
    out = torch.empty(N * 3)
    dist.all_to_all_single(out, inp)
    want = torch.cat([torch.arange(3.0) + 3 * R + 100 * p
                      for p in range(N)])
    rep.check("all_to_all_single even", same(out, want), out)
    # uneven: rank r sends p+1 rows to rank p, each row [r, p]
    in_splits = [p + 1 for p in range(N)]
    out_splits = [R + 1] * N
    inp = torch.cat([torch.tensor([[R, p]] * (p + 1)) for p in range(N)])
    out = torch.empty(sum(out_splits), 2, dtype=torch.int64)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    want = torch.cat([torch.tensor([[p, R]] * (R + 1)) for p in range(N)])
    rep.check("all_to_all_single uneven splits", same(out, want), out)
    # empty blocks: nobody sends anything to rank 0
    in_splits = [0 if p == 0 else 1 for p in range(N)]
    out_splits = [0 if R == 0 else 1] * N
    inp = torch.full((sum(in_splits),), float(R))
    out = torch.full((sum(out_splits),), -1.0)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    rep.check("all_to_all_single empty blocks",
              out.tolist() == ([] if R == 0 else
                               [float(p) for p in range(N)]), out)
    ins = [torch.full((2,), float(R * 10 + p)) for p in range(N)]
    outs = [torch.empty(2) for _ in range(N)]
    dist.all_to_all(outs, ins)
    rep.check("all_to_all list", all(o[0].item() == p * 10 + R
                                     for p, o in enumerate(outs)), outs)


def check_rooted(rep):
    for root in range(N):
        t = value(R, 6, torch.float64)
        dist.reduce(t, dst=root, op=RO.SUM)
        if R == root:
            rep.check("reduce to %d" % root,
                      same(t, reference(RO.SUM, 6, torch.float64)), t)
        else:
            rep.check("reduce leaves non-root %d" % root,
                      same(t, value(R, 6, torch.float64)), t)
        gl = [torch.empty(3) for _ in range(N)] if R == root else None
        dist.gather(torch.full((3,), float(R)), gl, dst=root)
        if R == root:
            rep.check("gather to %d" % root, all(
                g.eq(r).all() for r, g in enumerate(gl)), gl)
        s = torch.empty(2, dtype=torch.int32)
        sl = [torch.full((2,), p * 7, dtype=torch.int32) for p in range(N)] \
            if R == root else None
        dist.scatter(s, sl, src=root)
        rep.check("scatter from %d" % root, s.tolist() == [R * 7] * 2, s)


def check_p2p(rep):
    if N < 2:
        return
    nxt, prv = (R + 1) % N, (R - 1) % N
    # ring: even ranks send first, so blocking calls cannot deadlock
    send = torch.full((1000,), float(R))
    recv = torch.empty(1000)
    if R % 2 == 0:
        dist.send(send, nxt)
        dist.recv(recv, prv)
    else:
        dist.recv(recv, prv)
        dist.send(send, nxt)
    rep.check("send/recv ring", recv.eq(prv).all(), recv[:3])
    reqs = [dist.isend(torch.tensor([R, 1]), nxt),
            dist.irecv(r2 := torch.empty(2, dtype=torch.int64), prv)]
    for q in reqs:
        q.wait()
    rep.check("isend/irecv", r2.tolist() == [prv, 1], r2)
    ops = [dist.P2POp(dist.isend, torch.full((4,), R * 1.0), nxt),
           dist.P2POp(dist.irecv, r3 := torch.empty(4), prv)]
    for q in dist.batch_isend_irecv(ops):
        q.wait()
    rep.check("batch_isend_irecv", r3.eq(prv).all(), r3)
    nc = torch.zeros(4, 4)
    col = nc[:, 1]                            # non-contiguous receive
    if R == 0:
        dist.send(torch.arange(4.0), N - 1)
    elif R == N - 1:
        dist.recv(col, 0)
        rep.check("recv into non-contiguous view",
                  col.tolist() == [0., 1., 2., 3.] and nc.sum() == 6, nc)


def check_barrier(rep):
    for _ in range(3):
        dist.barrier()
    rep.check("barrier x3", True)


def check_subgroups(rep):
    evens = list(range(0, N, 2))
    odds = list(range(1, N, 2))
    g_even = dist.new_group(evens, backend="weft")
    g_odd = dist.new_group(odds, backend="weft") if odds else None
    ends = dist.new_group([0, N - 1], backend="weft")
    mine, members = (g_even, evens) if R % 2 == 0 else (g_odd, odds)
    t = torch.tensor([float(R)])
    dist.all_reduce(t, group=mine)
    rep.check("new_group all_reduce", t.item() == sum(members), t)
    w = torch.tensor([1.0])
    dist.all_reduce(w)                 # the world in between
    rep.check("world after subgroup", w.item() == N, w)
    if R in (0, N - 1):
        e = torch.tensor([R + 1.0])
        dist.broadcast(e, src=N - 1, group=ends)
        rep.check("subgroup broadcast (global src)", e.item() == N, e)
        outs = [torch.empty(1) for _ in range(dist.get_world_size(ends))]
        dist.all_gather(outs, torch.tensor([float(R)]), group=ends)
        rep.check("subgroup all_gather", [o.item() for o in outs] ==
                  sorted({0.0, float(N - 1)}), outs)
    rep.check("subgroup backend name", dist.get_backend(mine) == "weft",
              dist.get_backend(mine))
    # a gloo group beside weft ones: both backends in one process
    gloo = dist.new_group(backend="gloo")
    g = torch.tensor([1.0])
    dist.all_reduce(g, group=gloo)
    rep.check("gloo group beside weft", g.item() == N, g)


def check_errors(rep):
    try:
        dist.all_reduce(torch.ones(2, dtype=torch.float32), op=RO.BXOR)
        rep.check("BXOR raises", False, "no exception")
    except weft.torch.WeftError as e:
        rep.check("BXOR raises ERR_UNSUPPORTED", e.name == "ERR_UNSUPPORTED",
                  e)
        rep.check("WeftError is a DistBackendError",
                  isinstance(e, dist.DistBackendError), type(e))
    t = torch.ones(3)
    dist.all_reduce(t)                 # the communicator is still usable
    rep.check("usable after argument error", t[0].item() == N, t)


def main():
    rep = Report()
    with rep:
        dist.init_process_group("weft", timeout=timedelta(seconds=60))
        rep.check("backend is weft", dist.get_backend() == "weft",
                  dist.get_backend())
        for fn in (check_allreduce, check_noncontiguous, check_async,
                   check_broadcast, check_allgather, check_reduce_scatter,
                   check_float8, check_alltoall, check_rooted, check_p2p,
                   check_barrier, check_subgroups, check_errors):
            with rep.case(fn.__name__):
                fn(rep)
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
