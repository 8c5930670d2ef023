"""The numpy API inside one process: ranks as threads over mem:// (ctypes
releases the GIL around every call, so blocking calls of several threads
proceed together), plus the parts that need no communicator."""
import pickle
import threading

import pytest

from conftest import missing, needs

pytestmark = needs("numpy")
if not missing("numpy"):
    import numpy as np

    import weft


def run_threads(n, fn, name):
    """fn(comm) on n ranks as threads; returns their results."""
    results, errors = [None] * n, []

    def body(r):
        try:
            with weft.Communicator.create(rank=r, size=n,
                                          rendezvous="mem://" + name,
                                          job_id=name, timeout=20) as c:
                results[r] = fn(c)
        except Exception as e:  # reported below, with the rank
            errors.append((r, e))
    threads = [threading.Thread(target=body, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    return results


def test_threads_bitwise_and_logical_ops():
    ops = ("band", "bor", "bxor", "land", "lor")

    def job(c):
        r = c.rank
        x = (np.arange(-8, 8, dtype=np.int16) * (r + 3)) ^ np.int16(r << 9)
        out = {op: c.allreduce(x, op=op) for op in ops}
        u = c.allreduce(np.array([1 << r, 0xFFFF], np.uint16), op="bor")
        with pytest.raises(TypeError, match="take integer dtypes"):
            c.allreduce(np.ones(2, np.float32), op="band")
        return x, out, u
    res = run_threads(3, job, "bits3")
    a, b, c = (x for x, _, _ in res)
    want = {"band": a & b & c, "bor": a | b | c, "bxor": a ^ b ^ c,
            "land": (a != 0) & (b != 0) & (c != 0),
            "lor": (a != 0) | (b != 0) | (c != 0)}
    for _, out, u in res:
        for op in ops:
            assert out[op].dtype == np.int16, op
            assert np.array_equal(out[op], want[op].astype(np.int16)), op
        assert list(u) == [7, 0xFFFF]


# The OCP float8 formats from their definition: (mantissa bits, exponent
# bits, whether it is the "fn" variant with no infinities).
_FP8 = {"float8_e4m3": (3, 4, True), "float8_e5m2": (2, 5, False)}


def fp8_values(fmt):
    """The value of each of the 256 patterns (NaN for the NaNs)."""
    mant, ebits, fn = _FP8[fmt]
    bias, emax = (1 << (ebits - 1)) - 1, (1 << ebits) - 1
    vals = []
    for b in range(256):
        e, m = (b >> mant) & emax, b & ((1 << mant) - 1)
        if e == emax and (m == (1 << mant) - 1 if fn else m != 0):
            v = float("nan")
        elif e == emax and not fn:
            v = float("inf")
        elif e == 0:
            v = m * 2.0 ** (1 - bias - mant)
        else:
            v = (1 + m / (1 << mant)) * 2.0 ** (e - bias)
        vals.append(-v if b & 0x80 else v)
    return np.array(vals)


def fp8_round(x, fmt):
    """x rounded to the nearest pattern, ties to the even one, saturating
    at the largest finite value."""
    vals = fp8_values(fmt)[:128]
    top = max(b for b in range(128) if np.isfinite(vals[b]))
    sign = 0x80 if np.signbit(x) else 0
    a = abs(x)
    if a >= vals[top]:
        return sign | top
    d = np.abs(vals[:top + 1] - a)
    best = [b for b in range(top + 1) if d[b] == d.min()]
    return sign | min(best, key=lambda b: b & 1)


def test_threads_float8_over_uint8():
    # Each element's partial results are the same whichever order the ranks
    # combine in (1.5 * 1.5 rounds, the same way on every path); the last
    # element overflows and saturates.
    big = {"float8_e4m3": 320.0, "float8_e5m2": 49152.0}

    def inputs(r, fmt):
        return [0.5 * (r + 1), -0.25 * r, 1.5, big[fmt]]

    def job(c):
        out = {}
        for fmt in _FP8:
            x = np.array([fp8_round(v, fmt) for v in inputs(c.rank, fmt)],
                         np.uint8)
            for op in ("sum", "max", "prod"):
                out[fmt, op] = c.allreduce(x, op=op, dtype=fmt)
            with pytest.raises(TypeError, match="take integer dtypes"):
                c.allreduce(x, op="bxor", dtype=fmt)
            with pytest.raises(TypeError, match="one-byte arrays"):
                c.allreduce(np.ones(2, np.uint16), dtype=fmt)
        return out
    res = run_threads(3, job, "fp8x3")
    fns = {"sum": lambda a, b: a + b, "max": max, "prod": lambda a, b: a * b}
    for fmt in _FP8:
        vals = fp8_values(fmt)
        for op, fn in fns.items():
            # rounded after each rank's operand, as weft does
            codes = []
            for i in range(4):
                acc = fp8_round(inputs(0, fmt)[i], fmt)
                for r in (1, 2):
                    acc = fp8_round(fn(vals[acc], inputs(r, fmt)[i]), fmt)
                codes.append(acc)
            for out in res:
                assert out[fmt, op].dtype == np.uint8
                assert list(out[fmt, op]) == codes, (fmt, op)
    top = {"float8_e4m3": 0x7e, "float8_e5m2": 0x7b}
    for fmt in _FP8:                        # saturated, not inf or NaN
        assert res[0][fmt, "sum"][3] == top[fmt]


def test_ml_dtypes_float8_arrays():
    ml = pytest.importorskip("ml_dtypes")

    def job(c):
        a = np.array([1.5, -2, 448], ml.float8_e4m3fn)
        b = np.array([1.5, -2, 57344], ml.float8_e5m2)
        return c.allreduce(a), c.allreduce(b, op="max")
    for a, b in run_threads(2, job, "fp8ml"):
        assert a.dtype == ml.float8_e4m3fn
        assert list(a.astype(np.float32)) == [3, -4, 448]
        assert list(b.astype(np.float32)) == [1.5, -2, 57344]


def test_version_and_library():
    assert weft.version().count(".") == 2
    assert weft.library_path().endswith("libweft.so")
    assert "transports" in weft.build_info()


def test_threads_collectives():
    def job(c):
        x = np.arange(8, dtype=np.float32) * (c.rank + 1)
        s = c.allreduce(x)
        g = c.allgather(np.array([c.rank], np.int64))
        req = c.iallreduce(np.ones(3), op="max")
        # bfloat16 as raw uint16 bits: 0x3f80 is 1.0, 0x4040 is 3.0
        bf = c.allreduce(np.array([0x3F80], np.uint16), dtype="bfloat16")
        return s, g, req.wait(), bf
    for s, g, m, bf in run_threads(3, job, "threads3"):
        assert np.array_equal(s, np.arange(8) * 6.0)
        assert np.array_equal(g[:, 0], [0, 1, 2])
        assert np.array_equal(m, np.ones(3))
        assert bf[0] == 0x4040, hex(bf[0])


def test_layout_on_one_machine():
    """Threads of one process share a machine: local rank is the rank."""
    def job(c):
        return (c.local_rank, c.local_size, c.node, c.nodes, c.cross_rank,
                c.cross_size)
    for r, got in enumerate(run_threads(3, job, "layout3")):
        assert got == (r, 3, 0, 1, 0, 1), got


def test_shrink_after_a_failure():
    """A mismatch fails the communicator on both ranks (each receives the
    other's message); shrink gives the survivors (here: everyone) a working
    one.  With 3 ranks a rank that never connected to the others hears of
    the failure only from its own timeout, which is slow to test."""
    def job(c):
        with pytest.raises(weft.Error):
            c.allreduce(np.ones(2 + c.rank, np.float32))
        with c.shrink() as small:
            return small.rank, small.size, small.allreduce(
                np.array([c.rank + 1.0]))[0]
    assert run_threads(2, job, "shrink2") == [(r, 2, 3.0) for r in range(2)]


def test_dup_keeps_ranks_and_works_after_its_parent():
    def job(c):
        d = c.dup()
        c.destroy()
        with d:
            return d.rank, d.size, d.allreduce(np.array([c.rank + 1.0]))[0]
    assert run_threads(3, job, "dup3") == [(r, 3, 6.0) for r in range(3)]


def test_error_carries_status_and_message():
    def job(c):
        try:
            c.allreduce(np.ones(2 + c.rank, np.float32))
        except weft.Error as e:
            return e
    errs = run_threads(2, job, "mismatch2")
    assert all(isinstance(e, weft.Error) and isinstance(e, RuntimeError)
               for e in errs)
    names = {e.name for e in errs}
    assert "ERR_MISMATCH" in names and names <= {"ERR_MISMATCH",
                                                 "ERR_REMOTE"}
    mism = [e for e in errs if e.name == "ERR_MISMATCH"][0]
    assert mism.status == -9 and "count 2" in mism.message and \
        "count 3" in mism.message and "ERR_MISMATCH" in str(mism)
    back = pickle.loads(pickle.dumps(mism))
    assert (back.name, back.message, str(back)) == (mism.name, mism.message,
                                                    str(mism))


def test_argument_errors_leave_the_communicator_usable():
    def job(c):
        with pytest.raises(TypeError):
            c.allreduce(np.ones(2, np.longdouble))    # no such weft dtype
        with pytest.raises(ValueError):
            c.allreduce(np.ones(2), op="median")
        with pytest.raises(ValueError):
            c.allreduce(np.ones(4), out=np.ones(3))
        with pytest.raises(weft.Error) as e:
            c.send(np.ones(1), c.size + 5)            # no such peer
        assert e.value.name == "ERR_INVALID_ARG"
        return c.allreduce(np.ones(2))
    for r in run_threads(2, job, "argerr2"):
        assert np.array_equal(r, [2.0, 2.0])


def test_create_errors_raise():
    with pytest.raises(weft.Error) as e:
        weft.Communicator.create(rank=3, size=2, rendezvous="mem://bad")
    assert e.value.name == "ERR_INVALID_ARG"


def test_server_address():
    with weft.Server("127.0.0.1:0") as s:
        host, port = s.address.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0


def test_module_api_needs_init():
    assert not weft.is_initialized()
    with pytest.raises(weft.Error):
        weft.rank()
