"""Collectives on raw buffers over one weft communicator.

Every Horovod operation becomes one or more of the weft collectives below,
on buffer addresses, counts and weft dtypes, so that this layer knows no
framework.  Each call either runs to its end (`start=False`: weft's
blocking call, which drives the operation in the calling thread and wakes
no progress thread, the cheapest way to run a small operation) or starts
(`start=True`: weft_i*, finished later through the Started it returns).

A channel numbers its calls.  The global channel also writes each call's
descriptor (what it is, not its data) to a journal while hvd.join() may
need it: a rank that has joined takes part in the collectives of the
others with zeros, and learns what they are from these descriptors
(common/join.py).
"""
import collections
import ctypes
import threading

from ... import _lib
from ..._core import Error
from ..._lib import lib
from .exceptions import HorovodInternalError

# What a call is: (kind, count, dtype, arg), arg being the op or the root.
ALLREDUCE, BROADCAST, ALLGATHER, REDUCE_SCATTER, ALLTOALL, BARRIER = range(6)
KIND_NAMES = ("allreduce", "broadcast", "allgather", "reduce_scatter",
              "alltoall", "barrier")
# Calls whose completion on one rank means every rank took part (a
# broadcast's root can finish before a receiver has started).
_EVERY_RANK_TOOK_PART = frozenset((ALLREDUCE, ALLGATHER, REDUCE_SCATTER,
                                   ALLTOALL, BARRIER))

_vp, _sz, _int = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
_BLOCKING = {
    "weft_allreduce": [_vp, _vp, _sz, _int, _int, _vp],
    "weft_broadcast": [_vp, _vp, _sz, _int, _int, _vp],
    "weft_allgather": [_vp, _vp, _sz, _int, _vp],
    "weft_reduce_scatter": [_vp, _vp, _sz, _int, _int, _vp],
    "weft_alltoall": [_vp, _vp, _sz, _int, _vp],
    "weft_barrier": [_vp],
}
for _name, _args in _BLOCKING.items():
    _fn = getattr(lib, _name)
    _fn.argtypes = _args
    _fn.restype = ctypes.c_int
del _name, _args, _fn


def failure(status, what, comm=None):
    """HorovodInternalError for weft's `status`, carrying the weft.Error
    (status name and the communicator's first error)."""
    err = Error(status, what, comm._error_message() if comm else None)
    exc = HorovodInternalError(str(err), err)
    exc.__cause__ = err
    return exc


class Started:
    """One started weft operation.  test() says whether it has ended;
    wait() blocks until it has; both raise HorovodInternalError when it
    failed.  The caller keeps the buffers alive until then."""

    __slots__ = ("_channel", "_req", "_seq", "_kind", "_status")

    def __init__(self, channel, req, seq, kind):
        self._channel, self._req = channel, req
        self._seq, self._kind = seq, kind
        self._status = None

    def _end(self, status):
        lib.weft_request_free(self._req)
        self._req = None
        self._status = status
        if status == _lib.OK:
            self._channel._ended(self._seq, self._kind)

    def test(self):
        if self._status is None:
            st = lib.weft_test(self._req)
            if st == _lib.INPROGRESS:
                return False
            self._end(st)
        self._raise()
        return True

    def wait(self):
        if self._status is None:
            self._end(lib.weft_wait(self._req))
        self._raise()

    def _raise(self):
        if self._status != _lib.OK:
            raise failure(self._status, KIND_NAMES[self._kind],
                          self._channel.comm)

    def __del__(self):
        # weft may still write into the caller's buffers: end the
        # operation before they can be freed.
        if getattr(self, "_req", None) is not None:
            try:
                self._end(lib.weft_wait(self._req))
            except Exception:
                pass


class Channel:
    """A weft communicator as the collectives of one process set use it.

    comm          the weft.Communicator (owned: close() destroys it)
    global_ranks  the global rank of each rank of this channel, in order
    """

    def __init__(self, comm, global_ranks):
        self.comm = comm
        self._h = comm._h
        self.rank, self.size = comm.rank, comm.size
        self.global_ranks = list(global_ranks)
        self.calls = 0              # collectives called on this channel
        self.lock = threading.Lock()
        self.journal = None         # deque of (number, descriptor) or None
        self.on_call = None         # f(number, descriptor) under the lock
        self._ended_number = 0      # highest call every rank took part in

    def local_rank_of(self, global_rank, what):
        """This channel's rank of `global_rank` (Horovod names roots by
        their global rank)."""
        try:
            return self.global_ranks.index(global_rank)
        except ValueError:
            raise ValueError("%s: rank %d is not in this process set (ranks "
                             "%s)" % (what, global_rank, self.global_ranks))

    # -- bookkeeping of every call ---------------------------------------

    def _number(self, desc):
        if self.journal is None:
            self.calls += 1
            return self.calls
        with self.lock:
            self.calls += 1
            n = self.calls
            self.journal.append((n, desc))
            if self.on_call is not None:
                self.on_call(n, desc)
            return n

    def _ended(self, number, kind):
        if self.journal is not None and kind in _EVERY_RANK_TOOK_PART and \
                number > self._ended_number:
            # No rank can join before a call that every rank took part
            # in, so the journal no longer needs it or anything before it.
            with self.lock:
                self._ended_number = max(self._ended_number, number)
                j = self.journal
                while j and j[0][0] <= self._ended_number:
                    j.popleft()

    def enable_journal(self, on_call):
        with self.lock:
            self.journal = collections.deque()
            self.on_call = on_call

    def _run(self, number, kind, fn, args, start):
        if start:
            req = ctypes.c_void_p()
            st = fn(*args, self._h, ctypes.byref(req))
            if st < 0:
                raise failure(st, KIND_NAMES[kind], self.comm)
            return Started(self, req, number, kind)
        st = fn(*args, self._h)
        if st < 0:
            raise failure(st, KIND_NAMES[kind], self.comm)
        if self.journal is not None:
            self._ended(number, kind)
        return None

    # -- the collectives -------------------------------------------------
    # Addresses are integers (0 for an empty buffer); counts are elements.

    def allreduce(self, send, recv, count, dtype, op, start=False):
        n = self._number((ALLREDUCE, count, dtype, op))
        return self._run(n, ALLREDUCE,
                         lib.weft_iallreduce if start else lib.weft_allreduce,
                         (send, recv, count, dtype, op), start)

    def broadcast(self, buf, count, dtype, root, start=False):
        n = self._number((BROADCAST, count, dtype, root))
        return self._run(n, BROADCAST,
                         lib.weft_ibroadcast if start else lib.weft_broadcast,
                         (buf, buf, count, dtype, root), start)

    def allgather(self, send, recv, count, dtype, start=False):
        """`count` elements from each rank into recv, rank by rank."""
        n = self._number((ALLGATHER, count, dtype, 0))
        return self._run(n, ALLGATHER,
                         lib.weft_iallgather if start else lib.weft_allgather,
                         (send, recv, count, dtype), start)

    def reduce_scatter(self, send, recv, count, dtype, op, start=False):
        """send holds `size` blocks of `count`; rank r gets block r
        reduced."""
        n = self._number((REDUCE_SCATTER, count, dtype, op))
        return self._run(n, REDUCE_SCATTER,
                         lib.weft_ireduce_scatter if start
                         else lib.weft_reduce_scatter,
                         (send, recv, count, dtype, op), start)

    def alltoall(self, send, recv, count, dtype, start=False):
        """Block r (`count` elements) of send goes to rank r."""
        n = self._number((ALLTOALL, count, dtype, 0))
        return self._run(n, ALLTOALL,
                         lib.weft_ialltoall if start else lib.weft_alltoall,
                         (send, recv, count, dtype), start)

    def barrier(self, start=False):
        n = self._number((BARRIER, 0, 0, 0))
        return self._run(n, BARRIER,
                         lib.weft_ibarrier if start else lib.weft_barrier,
                         (), start)

    def take_part(self, desc, send, recv):
        """Runs the call `desc` as the next call of this channel, outside
        the journal: what a joined rank does with zeros in `send` and a
        scratch `recv`, both large enough (buffer_bytes)."""
        kind, count, dtype, arg = desc
        with self.lock:
            self.calls += 1
        if kind == ALLREDUCE:
            st = lib.weft_allreduce(send, recv, count, dtype, arg, self._h)
        elif kind == BROADCAST:
            buf = send if self.rank == arg else recv
            st = lib.weft_broadcast(buf, buf, count, dtype, arg, self._h)
        elif kind == ALLGATHER:
            st = lib.weft_allgather(send, recv, count, dtype, self._h)
        elif kind == REDUCE_SCATTER:
            st = lib.weft_reduce_scatter(send, recv, count, dtype, arg,
                                         self._h)
        elif kind == ALLTOALL:
            st = lib.weft_alltoall(send, recv, count, dtype, self._h)
        elif kind == BARRIER:
            st = lib.weft_barrier(self._h)
        else:
            raise HorovodInternalError("join: a peer described call kind "
                                       "%r, which this rank does not know"
                                       % (kind,))
        if st < 0:
            raise failure(st, KIND_NAMES[kind], self.comm)

    def close(self):
        if self.comm is not None:
            comm, self.comm = self.comm, None
            comm.destroy()


def buffer_bytes(desc, size):
    """(send bytes, receive bytes) of the call `desc` on `size` ranks: what
    a joined rank allocates to take part in it."""
    kind, count, dtype, _ = desc
    es = _lib.DTYPE_SIZES.get(dtype, 1) if kind != BARRIER else 0
    b = count * es
    if kind == ALLGATHER:
        return b, b * size
    if kind == REDUCE_SCATTER:
        return b * size, b
    if kind == ALLTOALL:
        return b * size, b * size
    return b, b
