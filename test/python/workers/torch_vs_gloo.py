"""What the native weft backend adds, each result compared with gloo's for
the same call on the same inputs in the same processes (gloo is the
reference), or, where gloo refuses the call, with values computed here:

  all_gather_coalesced   torch's [rank][input] layout, inputs of different
                         shapes, one empty (the Python backend
                         returned [input][rank]: wrong values, no error)
  Work status            is_completed()/is_success() after wait(), and
                         is_completed() turning true without wait()
  bitwise / PREMUL_SUM   BAND, BOR, BXOR on integers; PREMUL_SUM
  uneven sizes           all_gather and reduce_scatter lists (against
                         gloo), and, against values computed here, with
                         empty blocks: all_gather of 2-D tensors with a
                         block that travels in chunks, reduce_scatter with
                         MAX and on complex, gather, scatter, all_to_all
                         lists and all_to_all_single split sizes, where a
                         rank whose own sizes are all equal meets one whose
                         sizes are not
  coalescing             _coalescing_manager all_reduce, batch_isend_irecv
  monitored_barrier      passes; names the rank that does not arrive;
                         with a zero timeout rank 0 times out; the ranks
                         that arrived hear that rank 0 failed (gloo's words)
  sparse all_reduce      SUM of sparse COO tensors
  tags, any source       send/recv tags matched out of order; recv()
                         without src names the sender, as gloo does
  names                  DDP's logging says "weft"; profiler titles, also
                         of weft registered under another name: that
                         name, as gloo's groups title theirs
  sequence numbers       count the group's operations

Usage: run once per rank (see harness.launch); argv: nothing.
"""
import functools
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import weft.torch  # noqa: F401  (registers the backend)
from common import RANK, WORLD, Report

R, N = RANK, WORLD
RO = dist.ReduceOp


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def both(fn):
    """fn(group) on weft's group and gloo's: (weft result, gloo result or
    the exception gloo raised)."""
    mine = fn(WEFT)
    try:
        ref = fn(GLOO)
    except Exception as e:  # gloo refuses it: the caller checks by hand
        ref = e
    return mine, ref


def inputs_for(rank):
    """Three inputs of different shapes (torch wants one dtype), values
    naming the rank and the position, one of them empty."""
    return [torch.arange(6, dtype=torch.float32).view(2, 3) + 100 * rank,
            torch.empty(0, dtype=torch.float32),
            torch.arange(4, dtype=torch.float32) * (rank + 1) - 7]


def check_all_gather_coalesced(rep):
    with rep.case("all_gather_coalesced"):
        def run(group):
            ins = inputs_for(R)
            outs = [[torch.full_like(t, -1) for t in ins] for _ in range(N)]
            dist.all_gather_coalesced(outs, ins, group=group)
            return outs
        mine, ref = both(run)
        for r in range(N):
            for i, want in enumerate(inputs_for(r)):
                assert same(mine[r][i], want), (r, i, mine[r][i], want)
                assert same(mine[r][i], ref[r][i]), (r, i, ref[r][i])
    with rep.case("all_gather_coalesced refuses a list per input"):
        ins = inputs_for(R)
        wrong = [[torch.empty_like(t) for _ in range(N)] for t in ins]
        try:
            dist.all_gather_coalesced(wrong, ins, group=WEFT)
        except weft.torch.WeftError as e:   # the count or a shape
            assert e.name == "ERR_INVALID_ARG" and "output" in str(e), e
        else:
            raise AssertionError("no error for [input][rank] lists")


def check_work_status(rep):
    with rep.case("is_completed after wait"):
        t = torch.ones(4)
        w = dist.all_reduce(t, group=WEFT, async_op=True)
        w.wait()
        assert w.is_completed() and w.is_success(), (w.is_completed(),
                                                    w.is_success())
        peer = (R + 1) % N
        src = (R - 1) % N
        s = dist.isend(torch.full((3,), float(R)), peer, group=WEFT)
        got = torch.zeros(3)
        q = dist.irecv(got, src, group=WEFT)
        s.wait()
        q.wait()
        assert s.is_completed() and q.is_completed()
        assert same(got, torch.full((3,), float(src))), got
    with rep.case("is_completed turns true without wait"):
        t = torch.ones(8)
        w = dist.all_reduce(t, group=WEFT, async_op=True)
        deadline = time.time() + 30
        while not w.is_completed() and time.time() < deadline:
            time.sleep(0.001)
        assert w.is_completed() and same(t, torch.full((8,), float(N)))
    with rep.case("future completes with the output"):
        t = torch.ones(5) * (R + 1)
        fut = dist.all_reduce(t, group=WEFT, async_op=True).get_future()
        out = fut.wait()
        assert same(out[0], torch.full((5,), float(N * (N + 1) // 2))), out


def check_reductions(rep):
    for dtype in (torch.int32, torch.int64, torch.uint8, torch.int8):
        for op in (RO.BAND, RO.BOR, RO.BXOR):
            with rep.case("all_reduce %s %s" % (op, dtype)):
                def run(group):
                    t = (torch.arange(16) * (R + 3) + R).to(dtype)
                    dist.all_reduce(t, op=op, group=group)
                    return t
                mine, ref = both(run)
                assert same(mine, ref), (mine, ref)
    with rep.case("all_reduce BAND/BOR/BXOR int16 (gloo has no int16)"):
        def inp(r):
            return (torch.arange(-8, 8) * (r + 3) + r * 257).to(torch.int16)
        for op, fn in ((RO.BAND, torch.bitwise_and),
                       (RO.BOR, torch.bitwise_or),
                       (RO.BXOR, torch.bitwise_xor)):
            t = inp(R)
            dist.all_reduce(t, op=op, group=WEFT)
            want = inp(0)
            for r in range(1, N):
                want = fn(want, inp(r))
            assert t.dtype == torch.int16 and same(t, want), (op, t, want)
    with rep.case("reduce BXOR int32 to root 0"):
        def run(group):
            t = (torch.arange(9) * (R + 5)).to(torch.int32)
            dist.reduce(t, 0, op=RO.BXOR, group=group)
            return t
        mine, ref = both(run)
        assert R != 0 or same(mine, ref), (mine, ref)
    with rep.case("all_reduce PREMUL_SUM"):
        t = torch.arange(6, dtype=torch.float32) + R
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5), group=WEFT)
        want = sum(torch.arange(6, dtype=torch.float32) + r
                   for r in range(N)) * 0.5
        assert same(t, want), (t, want)
    with rep.case("BXOR on float32 is refused, naming both"):
        try:
            dist.all_reduce(torch.ones(2), op=RO.BXOR, group=WEFT)
        except weft.torch.WeftError as e:
            assert e.name == "ERR_UNSUPPORTED" and "BXOR" in str(e) and \
                "Float" in str(e), e
        else:
            raise AssertionError("no error")


def check_uneven(rep):
    with rep.case("all_gather uneven"):
        outs = [torch.zeros(r + 1, dtype=torch.int64) for r in range(N)]
        dist.all_gather(outs, torch.arange(R + 1) + 10 * R, group=WEFT)
        for r in range(N):
            assert same(outs[r], torch.arange(r + 1) + 10 * r), outs
    with rep.case("reduce_scatter uneven"):
        def run(group):
            ins = [torch.arange(r + 2, dtype=torch.float32) + R
                   for r in range(N)]
            out = torch.zeros(R + 2)
            dist.reduce_scatter(out, ins, group=group)
            return out
        mine, _ = both(run)
        want = sum(torch.arange(R + 2, dtype=torch.float32) + r
                   for r in range(N))
        assert same(mine, want), (mine, want)
    # Sizes here: rank 0's block empty, rank 1's 40000 rows (over weft's
    # chunk), the others small; values name their rank and position.
    rows = [(0, 40000, 3, 1)[r] for r in range(N)]

    def block(r, cols=2, dtype=torch.int64):
        return (torch.arange(rows[r] * cols, dtype=torch.int64)
                .view(rows[r], cols) * 10 + r).to(dtype)
    with rep.case("all_gather uneven 2-D, an empty block, a chunked one"):
        outs = [torch.full((rows[r], 2), -1, dtype=torch.int64)
                for r in range(N)]
        dist.all_gather(outs, block(R), group=WEFT)
        for r in range(N):
            assert same(outs[r], block(r)), (r, outs[r].shape)
    with rep.case("reduce_scatter uneven MAX with an empty block"):
        ins = [block(r, 3, torch.int32) * (R + 1) for r in range(N)]
        out = torch.zeros(rows[R], 3, dtype=torch.int32)
        dist.reduce_scatter(out, ins, op=RO.MAX, group=WEFT)
        assert same(out, block(R, 3, torch.int32) * N), out[:2]
    with rep.case("reduce_scatter uneven complex SUM"):
        # weft reduces complex as pairs of reals: the counts it gets are
        # twice the elements
        def cplx(r, scale):
            re = torch.arange(r + 1, dtype=torch.float64) * scale
            return torch.complex(re, -2 * re)
        ins = [cplx(r, R + 1) for r in range(N)]
        out = torch.zeros(R + 1, dtype=torch.complex128)
        dist.reduce_scatter(out, ins, group=WEFT)
        assert same(out, cplx(R, N * (N + 1) // 2)), out
    with rep.case("gather uneven to the last rank"):
        root = N - 1
        gl = [torch.full((rows[r], 2), -1, dtype=torch.int64)
              for r in range(N)] if R == root else None
        dist.gather(block(R), gl, dst=root, group=WEFT)
        if R == root:
            for r in range(N):
                assert same(gl[r], block(r)), (r, gl[r].shape)
    with rep.case("scatter uneven from rank 0"):
        out = torch.full((rows[R], 2), -1, dtype=torch.int64)
        sl = [block(r) for r in range(N)] if R == 0 else None
        dist.scatter(out, sl, src=0, group=WEFT)
        assert same(out, block(R)), out.shape

    # all_to_all: rank s sends rank d sent(s, d); rank 0's sizes are all
    # 3 (equal to and from everyone), the others' differ and include 0.
    def count(s, d):
        return 3 if 0 in (s, d) else (s + d) % 3

    def sent(s, d):
        return (torch.arange(count(s, d) * 2, dtype=torch.int64)
                .view(-1, 2) * 100 + 10 * s + d)
    with rep.case("all_to_all list uneven, rank 0's sizes equal"):
        outs = [torch.full((count(p, R), 2), -1, dtype=torch.int64)
                for p in range(N)]
        dist.all_to_all(outs, [sent(R, p) for p in range(N)], group=WEFT)
        for p in range(N):
            assert same(outs[p], sent(p, R)), (p, outs[p])
    with rep.case("all_to_all_single split sizes, rank 0's equal"):
        out = torch.full((sum(count(p, R) for p in range(N)), 2), -1,
                         dtype=torch.int64)
        dist.all_to_all_single(
            out, torch.cat([sent(R, p) for p in range(N)]),
            [count(p, R) for p in range(N)],
            [count(R, p) for p in range(N)], group=WEFT)
        assert same(out, torch.cat([sent(p, R) for p in range(N)])), out


def check_coalescing(rep):
    with rep.case("coalesced all_reduce"):
        def run(group):
            ts = [torch.ones(3) * (R + 1), torch.arange(5.0) + R]
            with dist._coalescing_manager(group=group, async_ops=True) as cm:
                for t in ts:
                    dist.all_reduce(t, group=group)
            cm.wait()
            return ts
        mine, ref = both(run)
        for a, b in zip(mine, ref):
            assert same(a, b), (a, b)
    with rep.case("batch_isend_irecv"):
        peer, src = (R + 1) % N, (R - 1) % N
        got = [torch.zeros(4), torch.zeros(2, dtype=torch.int64)]
        ops = [dist.P2POp(dist.isend, torch.full((4,), float(R)), peer,
                          group=WEFT),
               dist.P2POp(dist.isend, torch.tensor([R, -R]), peer,
                          group=WEFT),
               dist.P2POp(dist.irecv, got[0], src, group=WEFT),
               dist.P2POp(dist.irecv, got[1], src, group=WEFT)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        assert same(got[0], torch.full((4,), float(src))), got
        assert same(got[1], torch.tensor([src, -src])), got


def check_p2p(rep):
    with rep.case("send/recv tags match out of order"):
        def run(group):
            got = [torch.zeros(3), torch.zeros(3)]
            if R == 0:
                ws = [dist.isend(torch.full((3,), 1.0), 1, group, tag=1),
                      dist.isend(torch.full((3,), 2.0), 1, group, tag=2)]
                for w in ws:
                    w.wait()
            elif R == 1:
                dist.recv(got[1], 0, group, tag=2)
                dist.recv(got[0], 0, group, tag=1)
            dist.barrier(group)
            return got
        mine, ref = both(run)
        for a, b in zip(mine, ref):
            assert same(a, b), (mine, ref)
        if R == 1:
            assert same(mine[1], torch.full((3,), 2.0)), mine
    with rep.case("recv from any source names the sender"):
        def run(group):
            seen = []
            if R == 0:
                for _ in range(N - 1):
                    t = torch.zeros(2, dtype=torch.int64)
                    src = dist.recv(t, group=group, tag=7)
                    assert same(t, torch.tensor([src, -src])), (src, t)
                    seen.append(src)
                t = torch.zeros(1)
                w = dist.irecv(t, group=group, tag=8)
                w.wait()
                seen.append(w._source_rank())
                assert t.item() == 42.0, t
            else:
                dist.send(torch.tensor([R, -R]), 0, group, tag=7)
                if R == N - 1:
                    dist.send(torch.tensor([42.0]), 0, group, tag=8)
            dist.barrier(group)
            return sorted(seen[:-1]), seen[-1:]
        mine, ref = both(run)
        assert mine == ref, (mine, ref)
        if R == 0:
            assert mine == (list(range(1, N)), [N - 1]), mine


def monitored_errors(timeout, callers):
    """monitored_barrier(timeout) on a fresh weft group and a fresh gloo
    group, called by the ranks in `callers` only: (weft's error text, gloo's
    error text), None where it passed."""
    out = []
    for backend in ("weft", "gloo"):
        # a short group timeout: nothing waits for long if a rank does
        group = dist.new_group(backend=backend,
                               timeout=timedelta(seconds=5))
        text = "(not called)"
        if R in callers:
            try:
                dist.monitored_barrier(group, timeout=timeout)
                text = None
            except RuntimeError as e:
                text = str(e)
        out.append(text)
    return out


def check_monitored_barrier(rep):
    with rep.case("monitored_barrier passes"):
        dist.monitored_barrier(WEFT, timeout=timedelta(seconds=30))
    with rep.case("monitored_barrier names the missing rank"):
        group = dist.new_group(backend="weft")
        if R == 0:
            try:
                dist.monitored_barrier(group, timeout=timedelta(seconds=1))
            except RuntimeError as e:
                assert "Rank 1 failed to pass monitoredBarrier" in str(e), e
            else:
                raise AssertionError("no error")
        # rank 1 (and the others) never arrive; rank 0 waits 1 s
    with rep.case("monitored_barrier with no time: rank 0 timed out"):
        # a timeout of zero is zero, not "the group's": rank 0 has no time
        # for rank 1 (which never calls), as gloo says; the group's timeout
        # is 5 s, what the zero became before
        mine, ref = monitored_errors(timedelta(seconds=0), callers={0})
        if R == 0:
            want = ("Rank 1 failed to pass monitoredBarrier",
                    "Rank 0 timed out in monitoredBarrier after 0 ms",
                    "No ranks successfully processed in monitoredBarrier")
            # gloo, the reference, says the other two as well unless less
            # than a whole millisecond passed (it counts in ms)
            assert ref is not None and want[0] in ref, ref
            for phrase in want:
                assert mine is not None and phrase in mine, (phrase, mine)
    if N >= 3:
        with rep.case("monitored_barrier: the ranks that came hear that "
                      "rank 0 failed"):
            # rank 1 never calls: rank 0 names it after 1 s, the others
            # learn that rank 0 failed, in gloo's words
            start = time.time()
            mine, ref = monitored_errors(timedelta(seconds=1),
                                         callers=set(range(N)) - {1})
            if R == 0:
                for text in (mine, ref):
                    assert text and "Rank 1 failed to pass monitoredBarrier" \
                        in text, (mine, ref)
            elif R >= 2:
                phrase = ("Rank %d successfully reached monitoredBarrier, "
                          "but received errors while waiting for send/recv "
                          "from rank 0" % R)
                for text in (mine, ref):
                    assert text and phrase in text, (mine, ref)
            assert time.time() - start < 8, time.time() - start


def check_wait_timeout(rep):
    with rep.case("Work.wait(timeout) times out"):
        group = dist.new_group(backend="weft")
        if R == 0:     # the others never join: rank 0 gives up after 0.5 s
            w = dist.all_reduce(torch.ones(2), group=group, async_op=True)
            start = time.time()
            try:
                w.wait(timedelta(seconds=0.5))
            except weft.torch.WeftError as e:
                took = time.time() - start
                assert e.name == "ERR_TIMEOUT" and " Timed out " in str(e), e
                assert 0.4 < took < 5, took
            else:
                raise AssertionError("no timeout")
            dist.destroy_process_group(group)   # aborts, does not hang


def check_sparse(rep):
    with rep.case("sparse all_reduce"):
        def run(group):
            i = torch.tensor([[R, N], [0, R + 1]])
            v = torch.tensor([1.0 + R, 2.0])
            t = torch.sparse_coo_tensor(i, v, (N + 1, N + 2))
            dist.all_reduce(t, group=group)
            return t.to_dense()
        mine, ref = both(run)
        assert same(mine, ref), (mine, ref)


def check_names(rep):
    with rep.case("DDP logging names the backend weft"):
        model = torch.nn.parallel.DistributedDataParallel(
            torch.nn.Linear(2, 2), process_group=WEFT)
        name = model._get_ddp_logging_data().get("backend_name")
        assert name == "weft", name
    with rep.case("profiler titles"):
        with torch.autograd.profiler.profile() as prof:
            dist.all_reduce(torch.ones(2), group=WEFT)
        names = {e.name for e in prof.function_events}
        assert "weft:all_reduce" in names, sorted(names)[:20]
    with rep.case("profiler titles of weft registered under another name"):
        # torch's tools look for dist.get_backend(group) + ":<op>", as
        # gloo's groups title them; the group itself is still weft's
        if "WEFTALIAS" not in dist.Backend._plugins:
            dist.Backend.register_backend(
                "weftalias", functools.partial(
                    weft.torch.create_backend, registered_as="weftalias"),
                devices=["cpu"])
        alias = dist.new_group(backend="weftalias")
        assert isinstance(alias._get_backend(torch.device("cpu")),
                          weft.torch._native._ext.WeftBackend)
        for group in (GLOO, alias):
            name = dist.get_backend(group)
            with torch.autograd.profiler.profile() as prof:
                dist.all_reduce(torch.ones(2), group=group)
                dist.all_reduce_coalesced([torch.ones(2), torch.ones(3)],
                                          group=group)
            titles = [e.name for e in prof.function_events
                      if e.name.startswith(name + ":all_reduce")]
            assert len(titles) == 2, (name, titles)
        assert dist.get_backend(alias) == "weftalias"
        assert alias.name() == "weft", alias.name()
    with rep.case("sequence numbers count operations"):
        before = WEFT._get_sequence_number_for_group()
        dist.all_reduce(torch.ones(1), group=WEFT)
        dist.broadcast(torch.ones(1), 0, group=WEFT)
        after = WEFT._get_sequence_number_for_group()
        assert after == before + 2, (before, after)


def main():
    global WEFT, GLOO
    rep = Report()
    with rep:
        dist.init_process_group("weft")
        WEFT = dist.group.WORLD
        GLOO = dist.new_group(backend="gloo")
        check_all_gather_coalesced(rep)
        check_work_status(rep)
        check_reductions(rep)
        check_uneven(rep)
        check_coalescing(rep)
        check_sparse(rep)
        check_p2p(rep)
        check_names(rep)
        check_wait_timeout(rep)
        check_monitored_barrier(rep)   # last: it leaves a broken group
        dist.barrier(GLOO)


if __name__ == "__main__":
    main()
