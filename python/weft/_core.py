"""Communicators, requests and errors over the C API, on numpy arrays.

Every collective takes numpy arrays (or any object with the buffer
protocol, which is viewed as a numpy array without copying) and comes in
two forms: `allreduce(...)` blocks and returns the result, `iallreduce(...)`
starts the operation and returns a Request whose wait() returns the same
result.  Results go to `out` when given (out=x is in place), else to a new
array.  The arrays an operation uses are kept alive by its Request until it
completes, so a caller may drop its own references early.
"""
import ctypes
import math
import threading

import numpy as np

from . import _lib
from ._lib import lib

__all__ = ["Error", "Communicator", "Request", "Server"]


class Error(RuntimeError):
    """A weft call failed.

    status   the weft_status_t value (negative)
    name     its name without prefix, e.g. "ERR_TIMEOUT"
    message  the communicator's first error with its cause (weft keeps the
             first data-path error per communicator), or None
    """

    def __init__(self, status, what, message=None):
        self.status = status
        self.name = _lib.status_name(status)
        self.message = message
        self._what = what
        text = "weft %s failed: %s (%s)" % (what, self.name,
                                            _lib.strerror(status))
        if message:
            text += ": " + message
        super().__init__(text)

    def __reduce__(self):
        # picklable (multiprocessing, futures) with its fields intact
        return (self.__class__, (self.status, self._what, self.message))


def _check(status, what, comm=None):
    """Raises Error for a negative status, with the communicator's message."""
    if status < 0:
        raise Error(status, what, comm._error_message() if comm else None)
    return status


# ---------------------------------------------------------------------------
# Buffers
# ---------------------------------------------------------------------------

# dtypes numpy has only through ml_dtypes
_EXTENSION_NAMES = ("bfloat16", "float8_e4m3fn", "float8_e5m2")
_NUMPY_NAMES = {
    "int8": _lib.INT8, "uint8": _lib.UINT8, "int16": _lib.INT16,
    "uint16": _lib.UINT16, "int32": _lib.INT32,
    "uint32": _lib.UINT32, "int64": _lib.INT64, "uint64": _lib.UINT64,
    "float16": _lib.FLOAT16, "bfloat16": _lib.BFLOAT16,  # ml_dtypes' name
    "float32": _lib.FLOAT32, "float64": _lib.FLOAT64,
    # ml_dtypes' names; its float8_e4m3 (no "fn") is the IEEE-like variant
    # with infinities, another format, so it is left out
    "float8_e4m3fn": _lib.FLOAT8_E4M3, "float8_e5m2": _lib.FLOAT8_E5M2,
}
# keyed by dtype objects: hashing one is much cheaper than dtype.name
_NUMPY_DTYPES = {np.dtype(n): code for n, code in _NUMPY_NAMES.items()
                 if n not in _EXTENSION_NAMES}


def as_array(obj):
    """A numpy view of `obj` (an ndarray, or anything with the buffer
    protocol), sharing its memory."""
    if isinstance(obj, np.ndarray):
        return obj
    try:
        return np.asarray(memoryview(obj))
    except TypeError:
        raise TypeError("weft: expected a numpy array or an object with the "
                        "buffer protocol, got %s" % type(obj).__name__)


def _contig(arr):
    return np.ascontiguousarray(arr)


def _reduce_dtype(arr, op, dtype=None):
    """(weft dtype, weft op, view) for a reduction over `arr`: the view is
    what weft reduces (complex numbers as pairs of reals; bool as uint8 with
    sum/max as logical or, prod/min as logical and, the bitwise and logical
    ops as they are).  numpy has no float8: dtype="float8_e4m3" or
    "float8_e5m2" names the format of a one-byte array (uint8)."""
    op = _op(op)
    code = _lib.DTYPE_NAMES[dtype] if dtype is not None else \
        _NUMPY_DTYPES.get(arr.dtype)
    if code in _FP8_CODES and arr.dtype.itemsize != 1:
        raise TypeError("weft: %s takes one-byte arrays (uint8), got %s" %
                        (dtype or arr.dtype.name, arr.dtype.name))
    name = None
    if code is None:
        name = arr.dtype.name
        code = _NUMPY_NAMES.get(name)   # bfloat16, float8 from ml_dtypes
    if op in _BITS_OPS and code in _FLOAT_CODES:
        raise TypeError("weft cannot reduce %s arrays with %s (bitwise and "
                        "logical ops take integer dtypes)" %
                        (dtype or arr.dtype.name, _op_name(op)))
    if code is not None:
        return code, op, arr
    if name == "bool":
        if op in _BITS_OPS:     # on 0 and 1 they are the logical ones
            return _lib.UINT8, op, arr.view(np.uint8)
        return _lib.UINT8, (_lib.MAX if op in (_lib.SUM, _lib.MAX)
                            else _lib.MIN), arr.view(np.uint8)
    if arr.dtype.kind == "c" and op in (_lib.SUM, _lib.AVG):
        real = arr.view(np.float32 if name == "complex64" else np.float64)
        return _NUMPY_DTYPES[real.dtype], op, real
    raise TypeError("weft cannot reduce %s arrays with %s" %
                    (name, _op_name(op)))


_BITS_OPS = (_lib.BAND, _lib.BOR, _lib.BXOR, _lib.LAND, _lib.LOR)
_FP8_CODES = (_lib.FLOAT8_E4M3, _lib.FLOAT8_E5M2)
_FLOAT_CODES = (_lib.FLOAT16, _lib.BFLOAT16, _lib.FLOAT32,
                _lib.FLOAT64) + _FP8_CODES


def _op(op):
    if isinstance(op, int):
        return op
    try:
        return _lib.OP_NAMES[op] if op in _lib.OP_NAMES else \
            _lib.OP_NAMES[str(op).lower()]
    except KeyError:
        raise ValueError("weft: unknown reduction %r (sum, prod, min, max, "
                         "avg, band, bor, bxor, land, lor)" % (op,))


def _op_name(op):
    return {v: k for k, v in _lib.OP_NAMES.items()}.get(op, str(op))


def _bytes(arr):
    """Data movement treats every dtype as bytes."""
    return arr.reshape(-1).view(np.uint8) if arr.size else arr.view(np.uint8)


def _ptr(arr):
    return None if arr is None else arr.ctypes.data


def _out(out, shape, dtype, what):
    if out is None:
        return np.empty(shape, dtype)
    out = as_array(out)
    if out.dtype != dtype or out.size != math.prod(shape):
        raise ValueError("weft %s: out has %s[%d], expected %s[%d]" %
                         (what, out.dtype, out.size, dtype,
                          math.prod(shape)))
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("weft %s: out must be C-contiguous and writeable"
                         % what)
    return out


def _given_out(out, what):
    """`out` off the root of a scatter, where nothing else says the size
    of what arrives."""
    if out is None:
        raise ValueError("weft %s: ranks other than the root must pass "
                         "out=" % what)
    out = as_array(out)
    return _out(out, out.shape, out.dtype, what)


def _split_first(arr, size, what):
    if arr.ndim == 0 or arr.shape[0] % size:
        raise ValueError("weft %s: the first dimension (%s) must be a "
                         "multiple of the communicator size %d" %
                         (what, arr.shape[:1], size))
    return (arr.shape[0] // size,) + arr.shape[1:]


# The vector collectives count rows: a block of n rows is n entries of the
# first dimension, so for 1-D arrays counts are elements as in mpi4py, and
# a block of a 2-D array is whole rows, never a row cut in two.

def _counts(counts, size, what, name="counts"):
    """`counts` as a list of `size` non-negative ints."""
    if counts is None:
        raise ValueError("weft %s: %s is required" % (what, name))
    c = [int(v) for v in counts]
    if len(c) != size or min(c, default=0) < 0:
        raise ValueError("weft %s: %s needs %d non-negative entries, one "
                         "per rank; got %r" % (what, name, size, counts))
    return c


def _rows(arr, n, what, name="x"):
    """Checks that `arr` has `n` rows (its first dimension)."""
    if arr.ndim == 0 or arr.shape[0] != n:
        raise ValueError("weft %s: %s has shape %s where its count asks "
                         "for %d rows" % (what, name, arr.shape, n))


def _row_units(arr, unit):
    """How many `unit`-byte elements one row of `arr` holds."""
    return math.prod(arr.shape[1:]) * arr.itemsize // unit


def _blocks(counts, per_row):
    """(counts, displacements) as C size_t arrays in elements of per_row
    to a row: the blocks one after another in rank order."""
    n = len(counts)
    sizes, displs = (ctypes.c_size_t * n)(), (ctypes.c_size_t * n)()
    at = 0
    for r, c in enumerate(counts):
        sizes[r], displs[r] = c * per_row, at
        at += c * per_row
    return sizes, displs


# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------

class Request:
    """A non-blocking operation.  wait() blocks until it completes and
    returns its result (or raises Error); test() says whether it has
    completed, raising Error if it failed.  Not to be shared between
    threads without a lock of the caller's."""

    def __init__(self, comm, handle, what, keep, result, finalize=None):
        self._comm = comm
        self._handle = handle
        self._what = what
        self._keep = keep            # buffers the C side is using
        self._result = result
        self._finalize = finalize    # runs once after success
        self._status = None
        self._lock = threading.Lock()
        self.source = None  # a receive's sender, once it has completed

    def _complete(self, status):
        if self._what == "recv" and status == _lib.OK:
            src = ctypes.c_int(-1)
            if lib.weft_request_source(self._handle,
                                       ctypes.byref(src)) == _lib.OK:
                self.source = src.value
        lib.weft_request_free(self._handle)
        self._handle = None
        self._status = status
        if status == _lib.OK and self._finalize:
            self._finalize()
        self._keep = self._finalize = None

    def test(self):
        with self._lock:
            if self._status is None:
                st = lib.weft_test(self._handle)
                if st == _lib.INPROGRESS:
                    return False
                self._complete(st)
        _check(self._status, self._what, self._comm)
        return True

    def wait(self):
        with self._lock:
            if self._status is None:
                self._complete(lib.weft_wait(self._handle))
        _check(self._status, self._what, self._comm)
        return self._result

    @property
    def done(self):
        return self._status is not None

    def __del__(self):
        # The C side may still write into our buffers: never release them
        # before the operation has ended (it ends at the latest at the
        # communicator's deadline).
        if getattr(self, "_handle", None) is not None:
            try:
                self._complete(lib.weft_wait(self._handle))
            except Exception:
                pass


# ---------------------------------------------------------------------------
# Communicators
# ---------------------------------------------------------------------------

def _enc(s):
    return None if s is None else str(s).encode()


class Communicator:
    """A weft communicator.  Build one with Communicator.create(...) (explicit
    parameters), Communicator.init() (from the environment: WEFT_* or
    torchrun/Slurm/Open MPI/PMI variables) or comm.split(color, key)."""

    def __init__(self, handle):
        self._h = ctypes.c_void_p(handle)
        rank, size = ctypes.c_int(), ctypes.c_int()
        _check(lib.weft_comm_rank(self._h, ctypes.byref(rank)), "comm_rank")
        _check(lib.weft_comm_size(self._h, ctypes.byref(size)), "comm_size")
        self.rank, self.size = rank.value, size.value
        # Where this rank sits among the machines (weft_comm_query):
        # Horovod's local_rank/local_size/cross_rank/cross_size, and the
        # machine's index and count.
        for attr, name in enumerate(("local_rank", "local_size", "node",
                                     "nodes", "cross_rank", "cross_size")):
            v = ctypes.c_int()
            _check(lib.weft_comm_query(self._h, attr, ctypes.byref(v)),
                   "comm_query")
            setattr(self, name, v.value)

    @classmethod
    def init(cls):
        h = ctypes.c_void_p()
        _check(lib.weft_comm_init(ctypes.byref(h)), "comm_init")
        return cls(h.value)

    @classmethod
    def create(cls, rank=None, size=None, rendezvous=None, job_id=None,
               timeout=None, config=None, token=None):
        """weft_comm_create: parameters left None come from the environment.
        timeout is in seconds; config is "KEY=VALUE,..." of WEFT_* knobs for
        this communicator only."""
        p = _lib.CommParams()
        keep = []
        for bit, field, value in (
                (_lib.PARAM_RANK, "rank", rank),
                (_lib.PARAM_SIZE, "size", size),
                (_lib.PARAM_RENDEZVOUS, "rendezvous", _enc(rendezvous)),
                (_lib.PARAM_JOB_ID, "job_id", _enc(job_id)),
                (_lib.PARAM_TIMEOUT, "timeout_ms",
                 None if timeout is None else int(timeout * 1000)),
                (_lib.PARAM_CONFIG, "config", _enc(config)),
                (_lib.PARAM_TOKEN, "token", _enc(token))):
            if value is not None:
                p.field_mask |= bit
                setattr(p, field, value)
                keep.append(value)
        h = ctypes.c_void_p()
        _check(lib.weft_comm_create(ctypes.byref(p), ctypes.byref(h)),
               "comm_create")
        return cls(h.value)

    # -- lifecycle ----------------------------------------------------------

    def destroy(self):
        """Waits for pending operations, then releases the communicator."""
        if self._h is not None:
            h, self._h = self._h, None
            _check(lib.weft_comm_destroy(h), "comm_destroy")

    def abort(self):
        """Fails pending operations with ERR_ABORTED and releases the
        communicator promptly."""
        if self._h is not None:
            h, self._h = self._h, None
            lib.weft_comm_abort(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def split(self, color, key=0):
        """weft_comm_split: a new communicator per colour (None for a rank
        passing color=None or weft.UNDEFINED)."""
        h = ctypes.c_void_p()
        color = _lib.UNDEFINED if color is None else color
        _check(lib.weft_comm_split(self._handle(), color, key,
                                   ctypes.byref(h)), "comm_split", self)
        return Communicator(h.value) if h.value else None

    def dup(self):
        """weft_comm_dup: the same ranks in the same order, with a tag
        space of their own (collective)."""
        h = ctypes.c_void_p()
        _check(lib.weft_comm_dup(self._handle(), ctypes.byref(h)),
               "comm_dup", self)
        return Communicator(h.value)

    def shrink(self):
        """weft_comm_shrink: after a failure, a new communicator of the
        ranks that are still alive (every survivor calls it)."""
        h = ctypes.c_void_p()
        _check(lib.weft_comm_shrink(self._handle(), ctypes.byref(h)),
               "comm_shrink", self)
        return Communicator(h.value)

    def _handle(self):
        if self._h is None:
            raise Error(-2, "call", "the communicator was destroyed")
        return self._h

    def _error_message(self):
        if self._h is None:
            return None
        msg = ctypes.c_char_p()
        lib.weft_comm_get_error(self._h, ctypes.byref(msg))
        return msg.value.decode(errors="replace") if msg.value else None

    def get_error(self):
        """(status name, message) of the first sticky error, or None."""
        msg = ctypes.c_char_p()
        st = lib.weft_comm_get_error(self._handle(), ctypes.byref(msg))
        if st == _lib.OK:
            return None
        return _lib.status_name(st), (msg.value or b"").decode()

    # -- the engine call shared by every operation --------------------------

    def _start(self, what, fn, args, keep, result, finalize=None):
        req = ctypes.c_void_p()
        _check(fn(*args, self._handle(), ctypes.byref(req)), what, self)
        return Request(self, req.value, what, keep, result, finalize)

    # -- collectives (non-blocking forms; the blocking ones follow) ---------

    def iallreduce(self, x, op="sum", out=None, dtype=None):
        x = as_array(x)
        out = _out(out, x.shape, x.dtype, "allreduce")
        src = x if x.flags.c_contiguous else _contig(x)
        wdt, wop, sv = _reduce_dtype(src, op, dtype)
        _, _, dv = _reduce_dtype(out, op, dtype)
        count = sv.nbytes // _lib.DTYPE_SIZES[wdt]
        return self._start("allreduce", lib.weft_iallreduce,
                           (_ptr(sv), _ptr(dv), count, wdt, wop),
                           (src, out), out)

    def ibroadcast(self, x, root=0):
        x = as_array(x)
        buf = x if x.flags.c_contiguous else _contig(x)
        if self.rank != root and not x.flags.writeable:
            raise ValueError("weft broadcast: the array must be writeable")
        b = _bytes(buf)
        fin = None if buf is x else (lambda: np.copyto(x, buf))
        return self._start("broadcast", lib.weft_ibroadcast,
                           (_ptr(b), _ptr(b), b.size, _lib.UINT8, root),
                           (buf, x), x, fin)

    def ireduce(self, x, op="sum", root=0, out=None, dtype=None):
        x = as_array(x)
        src = _contig(x)
        wdt, wop, sv = _reduce_dtype(src, op, dtype)
        dv = None
        if self.rank == root:
            out = _out(out, x.shape, x.dtype, "reduce")
            dv = _reduce_dtype(out, op, dtype)[2]
        else:
            out = None
        count = src.nbytes // _lib.DTYPE_SIZES[wdt]
        return self._start("reduce", lib.weft_ireduce,
                           (_ptr(sv), _ptr(dv), count, wdt, wop, root),
                           (src, out), out)

    def iallgather(self, x, out=None):
        x = _contig(as_array(x))
        out = _out(out, (self.size,) + x.shape, x.dtype, "allgather")
        sb, rb = _bytes(x), _bytes(out)
        return self._start("allgather", lib.weft_iallgather,
                           (_ptr(sb), _ptr(rb), sb.size, _lib.UINT8),
                           (x, out), out)

    def ireduce_scatter(self, x, op="sum", out=None, dtype=None):
        x = _contig(as_array(x))
        shape = _split_first(x, self.size, "reduce_scatter")
        out = _out(out, shape, x.dtype, "reduce_scatter")
        wdt, wop, sv = _reduce_dtype(x, op, dtype)
        dv = _reduce_dtype(out, op, dtype)[2]
        count = out.nbytes // _lib.DTYPE_SIZES[wdt]
        return self._start("reduce_scatter", lib.weft_ireduce_scatter,
                           (_ptr(sv), _ptr(dv), count, wdt, wop),
                           (x, out), out)

    def ialltoall(self, x, out=None):
        x = _contig(as_array(x))
        _split_first(x, self.size, "alltoall")
        out = _out(out, x.shape, x.dtype, "alltoall")
        sb, rb = _bytes(x), _bytes(out)
        return self._start("alltoall", lib.weft_ialltoall,
                           (_ptr(sb), _ptr(rb), sb.size // self.size,
                            _lib.UINT8), (x, out), out)

    def igather(self, x, root=0, out=None):
        x = _contig(as_array(x))
        rb = None
        if self.rank == root:
            out = _out(out, (self.size,) + x.shape, x.dtype, "gather")
            rb = _bytes(out)
        else:
            out = None
        sb = _bytes(x)
        return self._start("gather", lib.weft_igather,
                           (_ptr(sb), _ptr(rb), sb.size, _lib.UINT8, root),
                           (x, out), out)

    def iscatter(self, x=None, root=0, out=None):
        """On the root, x holds `size` blocks along its first dimension;
        every rank receives its block into `out` (required off the root,
        where x may be None)."""
        sb = None
        if self.rank == root:
            x = _contig(as_array(x))
            shape = _split_first(x, self.size, "scatter")
            out = _out(out, shape, x.dtype, "scatter")
            sb = _bytes(x)
        else:
            out = _given_out(out, "scatter")
        rb = _bytes(out)
        return self._start("scatter", lib.weft_iscatter,
                           (_ptr(sb), _ptr(rb), rb.size, _lib.UINT8, root),
                           (x, out), out)

    # -- vector collectives: a count per rank, blocks in rank order --------

    def iallgatherv(self, x, counts, out=None):
        """Rank r's x has counts[r] rows (first dimension); every rank
        receives all blocks in rank order, sum(counts) rows.  Every rank
        passes the same counts and the same shape past the first
        dimension."""
        x = _contig(as_array(x))
        counts = _counts(counts, self.size, "allgatherv")
        _rows(x, counts[self.rank], "allgatherv")
        out = _out(out, (sum(counts),) + x.shape[1:], x.dtype, "allgatherv")
        rc, displs = _blocks(counts, _row_units(x, 1))
        sb, rb = _bytes(x), _bytes(out)
        return self._start("allgatherv", lib.weft_iallgatherv,
                           (_ptr(sb), sb.size, _ptr(rb), rc, displs,
                            _lib.UINT8), (x, out), out)

    def igatherv(self, x, counts=None, root=0, out=None):
        """Rank r's x (counts[r] rows) goes to the root, which returns all
        blocks in rank order, sum(counts) rows; the other ranks return
        None.  counts is read on the root only."""
        x = _contig(as_array(x))
        rb = rc = displs = None
        if self.rank == root:
            counts = _counts(counts, self.size, "gatherv")
            _rows(x, counts[root], "gatherv")
            out = _out(out, (sum(counts),) + x.shape[1:], x.dtype,
                       "gatherv")
            rc, displs = _blocks(counts, _row_units(x, 1))
            rb = _bytes(out)
        else:
            out = None
        sb = _bytes(x)
        return self._start("gatherv", lib.weft_igatherv,
                           (_ptr(sb), sb.size, _ptr(rb), rc, displs,
                            _lib.UINT8, root), (x, out), out)

    def iscatterv(self, x=None, counts=None, root=0, out=None):
        """On the root, x holds sum(counts) rows; rank r receives counts[r]
        of them, in rank order, into `out` (required off the root, where x
        and counts may be None; its size must match the root's count)."""
        sb = sc = displs = None
        if self.rank == root:
            x = _contig(as_array(x))
            counts = _counts(counts, self.size, "scatterv")
            _rows(x, sum(counts), "scatterv")
            out = _out(out, (counts[root],) + x.shape[1:], x.dtype,
                       "scatterv")
            sc, displs = _blocks(counts, _row_units(x, 1))
            sb = _bytes(x)
        else:
            out = _given_out(out, "scatterv")
        rb = _bytes(out)
        return self._start("scatterv", lib.weft_iscatterv,
                           (_ptr(sb), sc, displs, _ptr(rb), rb.size,
                            _lib.UINT8, root), (x, out), out)

    def ialltoallv(self, x, sendcounts, recvcounts, out=None):
        """x holds sum(sendcounts) rows: sendcounts[p] of them, in rank
        order, go to rank p; the result holds sum(recvcounts) rows,
        recvcounts[p] from rank p, in rank order.  recvcounts[p] here is
        sendcounts[rank] on rank p."""
        x = _contig(as_array(x))
        sendcounts = _counts(sendcounts, self.size, "alltoallv",
                             "sendcounts")
        recvcounts = _counts(recvcounts, self.size, "alltoallv",
                             "recvcounts")
        _rows(x, sum(sendcounts), "alltoallv")
        out = _out(out, (sum(recvcounts),) + x.shape[1:], x.dtype,
                   "alltoallv")
        if out is x:
            raise ValueError("weft alltoallv: out must not be x")
        row = _row_units(x, 1)
        sc, sd = _blocks(sendcounts, row)
        rc, rd = _blocks(recvcounts, row)
        sb, rb = _bytes(x), _bytes(out)
        return self._start("alltoallv", lib.weft_ialltoallv,
                           (_ptr(sb), sc, sd, _ptr(rb), rc, rd, _lib.UINT8),
                           (x, out), out)

    def ireduce_scatterv(self, x, counts, op="sum", out=None, dtype=None):
        """x holds sum(counts) rows on every rank; rank r receives the
        reduction of block r, counts[r] rows (blocks in rank order).
        Every rank passes the same counts."""
        x = _contig(as_array(x))
        counts = _counts(counts, self.size, "reduce_scatterv")
        _rows(x, sum(counts), "reduce_scatterv")
        out = _out(out, (counts[self.rank],) + x.shape[1:], x.dtype,
                   "reduce_scatterv")
        wdt, wop, sv = _reduce_dtype(x, op, dtype)
        dv = _reduce_dtype(out, op, dtype)[2]
        rc, _ = _blocks(counts, _row_units(x, _lib.DTYPE_SIZES[wdt]))
        return self._start("reduce_scatterv", lib.weft_ireduce_scatterv,
                           (_ptr(sv), _ptr(dv), rc, wdt, wop), (x, out), out)

    def ibarrier(self):
        return self._start("barrier", lib.weft_ibarrier, (), (), None)

    def isend(self, x, dest, tag=0):
        """Sends x to rank `dest`.  Messages of one pair and `tag` (0 to
        2**31 - 1) arrive in order; different tags independently."""
        x = _contig(as_array(x))
        b = _bytes(x)
        return self._start("send", lib.weft_isend_tag,
                           (_ptr(b), b.size, _lib.UINT8, dest, tag), (x,),
                           None)

    def irecv(self, out, source=_lib.ANY_SOURCE, tag=0):
        """Receives a message of `tag` from rank `source` (by default any
        rank: the request's `source` says which once it is done) into
        `out` (C-contiguous, writeable; the sender's array must have the
        same number of bytes) and returns it."""
        out = _out(out, as_array(out).shape, as_array(out).dtype, "recv")
        b = _bytes(out)
        return self._start("recv", lib.weft_irecv_tag,
                           (_ptr(b), b.size, _lib.UINT8, source, tag),
                           (out,), out)

    # -- blocking forms -----------------------------------------------------

    def allreduce(self, x, op="sum", out=None, dtype=None):
        return self.iallreduce(x, op, out, dtype).wait()

    def broadcast(self, x, root=0):
        return self.ibroadcast(x, root).wait()

    def reduce(self, x, op="sum", root=0, out=None, dtype=None):
        return self.ireduce(x, op, root, out, dtype).wait()

    def allgather(self, x, out=None):
        return self.iallgather(x, out).wait()

    def reduce_scatter(self, x, op="sum", out=None, dtype=None):
        return self.ireduce_scatter(x, op, out, dtype).wait()

    def alltoall(self, x, out=None):
        return self.ialltoall(x, out).wait()

    def gather(self, x, root=0, out=None):
        return self.igather(x, root, out).wait()

    def scatter(self, x=None, root=0, out=None):
        return self.iscatter(x, root, out).wait()

    def allgatherv(self, x, counts, out=None):
        return self.iallgatherv(x, counts, out).wait()

    def gatherv(self, x, counts=None, root=0, out=None):
        return self.igatherv(x, counts, root, out).wait()

    def scatterv(self, x=None, counts=None, root=0, out=None):
        return self.iscatterv(x, counts, root, out).wait()

    def alltoallv(self, x, sendcounts, recvcounts, out=None):
        return self.ialltoallv(x, sendcounts, recvcounts, out).wait()

    def reduce_scatterv(self, x, counts, op="sum", out=None, dtype=None):
        return self.ireduce_scatterv(x, counts, op, out, dtype).wait()

    def barrier(self):
        self.ibarrier().wait()

    def send(self, x, dest, tag=0):
        self.isend(x, dest, tag).wait()

    def recv(self, out, source=_lib.ANY_SOURCE, tag=0):
        return self.irecv(out, source, tag).wait()


# ---------------------------------------------------------------------------
# Rendezvous server
# ---------------------------------------------------------------------------

class Server:
    """An embedded rendezvous server (weft_server_start) on HOST:PORT (port
    0 picks a free one); `address` is where ranks find it."""

    def __init__(self, listen="127.0.0.1:0"):
        h = ctypes.c_void_p()
        _check(lib.weft_server_start(listen.encode(), ctypes.byref(h)),
               "server_start")
        self._h = h
        self.address = lib.weft_server_address(h).decode()

    def stop(self):
        if self._h is not None:
            h, self._h = self._h, None
            lib.weft_server_stop(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
