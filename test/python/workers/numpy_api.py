"""The numpy API across processes.  weft.init() reads the torchrun-style
variables the harness sets (rank 0 hosts weft's rendezvous on
MASTER_PORT+1), so this also covers weft_comm_init from the environment.
"""
import array

import numpy as np

import weft
from common import RANK as R, WORLD as N, Report


def val(rank, n, dtype):
    return ((np.arange(n) % 3) + rank + 1).astype(dtype)


def ref_sum(n, dtype):
    return sum(val(r, n, np.float64) for r in range(N)).astype(dtype)


def collectives(rep):
    for dtype in (np.float32, np.float64, np.float16, np.int32, np.int64,
                  np.int8, np.uint8, np.uint32, np.uint64):
        x = val(R, 100, dtype)
        got = weft.allreduce(x)
        rep.check("allreduce returns %s" % dtype.__name__,
                  got.dtype == dtype and np.array_equal(got, ref_sum(100,
                                                                     dtype))
                  and np.array_equal(x, val(R, 100, dtype)), got[:4])
    x = val(R, 10, np.float32)
    y = weft.allreduce(x, out=x)
    rep.check("allreduce in place", y is x and np.array_equal(
        x, ref_sum(10, np.float32)), x)
    for op, fn in (("max", np.max), ("min", np.min), ("prod", np.prod)):
        got = weft.allreduce(val(R, 6, np.int64), op=op)
        want = fn(np.stack([val(r, 6, np.int64) for r in range(N)]), axis=0)
        rep.check("allreduce %s" % op, np.array_equal(got, want), got)
    got = weft.allreduce(np.full(4, float(R)), op="avg")
    rep.check("allreduce avg", np.allclose(got, (N - 1) / 2), got)
    got = weft.allreduce(val(R, 8, np.float32).reshape(2, 4).T)
    rep.check("allreduce non-contiguous input", got.shape == (4, 2) and
              np.array_equal(got, ref_sum(8, np.float32).reshape(2, 4).T),
              got)

    b = np.arange(5) * 10 if R == N - 1 else np.zeros(5, np.int64)
    weft.broadcast(b, root=N - 1)
    rep.check("broadcast in place", np.array_equal(b, np.arange(5) * 10), b)
    g = weft.allgather(np.array([R, -R], np.int16))
    rep.check("allgather (int16 as bytes)", g.shape == (N, 2) and
              g.dtype == np.int16 and np.array_equal(g[:, 0], np.arange(N)),
              g)
    rs = weft.reduce_scatter(np.ones((N, 3), np.float32) * (R + 1))
    rep.check("reduce_scatter", rs.shape == (1, 3) and
              np.all(rs == N * (N + 1) / 2), rs)
    a2a = weft.alltoall(np.arange(N) + 100 * R)
    rep.check("alltoall", np.array_equal(a2a, np.arange(N) * 100 + R), a2a)
    red = weft.reduce(np.ones(3), root=0)
    rep.check("reduce", (red is None) == (R != 0) and
              (R != 0 or np.all(red == N)), red)
    ga = weft.gather(np.array([R * 2.0]), root=N - 1)
    rep.check("gather", (ga is None) == (R != N - 1) and
              (R != N - 1 or np.array_equal(ga[:, 0], np.arange(N) * 2.0)),
              ga)
    sc = weft.scatter(np.arange(N * 2).reshape(N, 2) if R == 0 else None,
                      root=0, out=np.empty((1, 2), np.int64))
    rep.check("scatter", np.array_equal(sc, [[2 * R, 2 * R + 1]]), sc)
    weft.barrier()


def rows(r, n, cols=2, dtype=np.int32, tag=0):
    """n rows that name their sender r, their position and `tag`."""
    return (np.arange(n * cols).reshape(n, cols) + 1000 * r + 100 * tag +
            1).astype(dtype)


def vectors(rep):
    """The vector collectives with counts that differ per rank, some zero
    (rank 0's, and rank 3's at 4 ranks), one block of 40000 rows so that
    it travels in chunks; each result against arrays built here."""
    counts = [(0, 3, 40000, 0)[r] for r in range(N)]
    every = np.concatenate([rows(r, counts[r]) for r in range(N)])
    got = weft.allgatherv(rows(R, counts[R]), counts)
    rep.check("allgatherv", got.dtype == np.int32 and
              got.shape == (sum(counts), 2) and np.array_equal(got, every),
              got.shape)
    flat = [np.arange(counts[r], dtype=np.float64) - r for r in range(N)]
    out = np.full(sum(counts), -7.0)
    req = weft.iallgatherv(flat[R], counts, out=out)
    rep.check("iallgatherv into out=", req.wait() is out and
              np.array_equal(out, np.concatenate(flat)), out[:4])

    got = weft.gatherv(rows(R, counts[R]), counts if R == N - 1 else None,
                       root=N - 1)
    rep.check("gatherv", (got is None) == (R != N - 1) and
              (R != N - 1 or np.array_equal(got, every)),
              None if got is None else got.shape)

    mine = np.full((counts[R], 2), -1, np.int32)
    got = weft.scatterv(every if R == 0 else None,
                        counts if R == 0 else None, root=0,
                        out=None if R == 0 else mine)
    rep.check("scatterv", np.array_equal(got, rows(R, counts[R])) and
              (R == 0 or got is mine), got.shape)

    # what rank s sends rank d: (s + 2d) % 3 rows, zero for some pairs
    def sent(s, d):
        return rows(s, (s + 2 * d) % 3, cols=3, dtype=np.int64, tag=d)
    sendc = [(R + 2 * p) % 3 for p in range(N)]
    recvc = [(p + 2 * R) % 3 for p in range(N)]
    x = np.concatenate([sent(R, p) for p in range(N)])
    reqs = [weft.ialltoallv(x + i, sendc, recvc) for i in range(3)]
    outs = [q.wait() for q in reversed(reqs)][::-1]
    want = np.concatenate([sent(p, R) for p in range(N)])
    rep.check("three ialltoallv waited in reverse", all(
        o.shape == (sum(recvc), 3) and np.array_equal(o, want + i)
        for i, o in enumerate(outs)), [o.shape for o in outs])

    base = np.arange(sum(counts) * 3, dtype=np.float64).reshape(-1, 3)
    at = sum(counts[:R])
    got = weft.reduce_scatterv(base * (R + 1), counts)
    rep.check("reduce_scatterv sum", got.shape == (counts[R], 3) and
              np.array_equal(got, (base * (N * (N + 1) // 2))
                             [at:at + counts[R]]), got[:2])
    ints = base.astype(np.int64) * (R + 1)
    got = weft.ireduce_scatterv(ints, counts, op="max").wait()
    rep.check("ireduce_scatterv max", np.array_equal(
        got, (base.astype(np.int64) * N)[at:at + counts[R]]), got[:2])

    for name, call in (
            ("allgatherv with a count per rank missing",
             lambda: weft.allgatherv(rows(R, counts[R]), counts[:-1])),
            ("allgatherv with x not of its count",
             lambda: weft.allgatherv(rows(R, counts[R] + 1), counts)),
            ("alltoallv with x not of sum(sendcounts)",
             lambda: weft.alltoallv(
                 rows(R, sum(sendc) + 1, 3, np.int64), sendc, recvc))):
        try:
            call()
            rep.check(name + " raises ValueError", False, "no exception")
        except ValueError as e:
            rep.check(name + " raises ValueError", "weft" in str(e), e)
    weft.barrier()


def buffers_and_p2p(rep):
    a = array.array("d", [1.0, 2.0])
    weft.allreduce(a, out=a)
    rep.check("array.array in place", list(a) == [N * 1.0, N * 2.0], a)
    ba = bytearray(b"weft" if R == 0 else b"....")
    weft.broadcast(ba, root=0)
    rep.check("bytearray broadcast", bytes(ba) == b"weft", ba)
    mv = memoryview(bytearray(8)).cast("i")
    mv[0], mv[1] = R, 1
    weft.allreduce(mv, out=mv)
    rep.check("memoryview allreduce", list(mv) == [sum(range(N)), N],
              list(mv))
    nxt, prv = (R + 1) % N, (R - 1) % N
    sreq = weft.isend(np.full(3, R, np.int32), nxt)
    got = weft.irecv(np.empty(3, np.int32), prv).wait()
    sreq.wait()
    rep.check("isend/irecv ring", np.all(got == prv), got)
    # Tags match independently; a receive from any source says whose.
    if R != 0:
        weft.send(np.array([R], np.int32), 0, tag=3)
        weft.send(np.array([-R], np.int32), 0, tag=4)
    else:
        firsts = [weft.irecv(np.zeros(1, np.int32), tag=4)
                  for _ in range(N - 1)]
        seconds = [weft.irecv(np.zeros(1, np.int32), tag=3)
                   for _ in range(N - 1)]
        pairs = [(q.wait()[0], q.source) for q in firsts + seconds]
        rep.check("tags and any source",
                  sorted(pairs) == sorted([(-r, r) for r in range(1, N)] +
                                          [(r, r) for r in range(1, N)]),
                  pairs)
    weft.barrier()


def nonblocking(rep):
    x = np.ones(1 << 16, np.float32)
    req = weft.iallreduce(x, out=x)
    seen = [req.test() for _ in range(3)]
    out = req.wait()
    rep.check("iallreduce wait returns the result", out is x and
              np.all(x == N), x[:3])
    rep.check("test() after wait", req.test() and req.done, seen)
    reqs = [weft.iallgather(np.array([R, i])) for i in range(5)]
    outs = [q.wait() for q in reversed(reqs)][::-1]
    rep.check("five iallgathers", all(np.array_equal(o[:, 1], [i] * N)
                                      for i, o in enumerate(outs)), outs)


def communicators(rep):
    comm = weft.get_comm()
    sub = comm.split(R % 2, key=-R)            # reversed order by key
    members = [r for r in range(N) if r % 2 == R % 2]
    rep.check("split size and rank", sub.size == len(members) and
              sub.rank == sorted(members, reverse=True).index(R),
              (sub.size, sub.rank))
    got = sub.allreduce(np.array([R]))
    rep.check("split allreduce", got[0] == sum(members), got)
    sub.destroy()
    none = comm.split(None if R == 0 else 1)
    rep.check("split with color None", (none is None) == (R == 0), none)
    if none is not None:
        none.destroy()
    # an explicit communicator: rank 0 hosts a server, the address travels
    # by broadcast over the default communicator
    server = weft.Server("127.0.0.1:0") if R == 0 else None
    addr = np.zeros(64, np.uint8)
    if R == 0:
        raw = server.address.encode()
        addr[:len(raw)] = np.frombuffer(raw, np.uint8)
    weft.broadcast(addr, root=0)
    address = bytes(addr).rstrip(b"\0").decode()
    with weft.Communicator.create(rank=N - 1 - R, size=N, rendezvous=address,
                                  job_id="numpy-explicit", timeout=30,
                                  config="WEFT_CHUNK_SIZE=4k") as c2:
        got = c2.allreduce(np.arange(10000, dtype=np.float64))
        rep.check("explicit communicator (reversed ranks, 4k chunks)",
                  c2.rank == N - 1 - R and
                  np.array_equal(got, np.arange(10000) * N), got[:3])
    weft.barrier()
    if server:
        server.stop()


def errors(rep):
    """Counts that differ: a rank that receives a mismatched message gets
    ERR_MISMATCH naming both sides; a rank whose peer gave up after its own
    error may see that peer close instead (ERR_REMOTE).  The test checks
    that some rank saw the mismatch."""
    try:
        weft.allreduce(np.ones(3 + R, np.float32))
        rep.check("mismatch raises", N == 1, "no exception")
        return
    except weft.Error as e:
        first = e
        rep.data["error"] = [e.name, e.status, e.message, str(e)]
        rep.check("mismatched counts raise weft.Error",
                  e.name in ("ERR_MISMATCH", "ERR_REMOTE") and e.message, e)
    try:
        weft.barrier()
        rep.check("sticky error", False, "no exception")
    except weft.Error as e:
        rep.check("later calls fail with the first error",
                  e.name == first.name and e.message == first.message, e)


def main():
    rep = Report()
    with rep:
        weft.init()
        rep.check("rank and size", (weft.rank(), weft.size()) == (R, N),
                  (weft.rank(), weft.size()))
        for fn in (collectives, vectors, buffers_and_p2p, nonblocking,
                   communicators, errors):
            with rep.case(fn.__name__):
                fn(rep)
        weft.finalize()


if __name__ == "__main__":
    main()
