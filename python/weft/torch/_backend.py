"""The "weft" backend of torch.distributed, in Python.

WeftBackend subclasses c10d's Backend through the pybind11 trampoline that
torch 2.x provides for Python backends (torch/csrc/distributed/c10d/py/
PyBackend.hpp): torch's own ProcessGroup dispatches every collective on CPU
tensors to the methods below, whether it comes from torch.distributed or
from C++ (DistributedDataParallel's reducer).

Each method checks and prepares buffers, starts weft's non-blocking
operations (weft_i*) in the order torch issues them (so every rank starts
collectives in the same order, as weft requires) and returns a _Work at
once.  Operations progress on weft's own progress thread.  A _Work is
completed by whoever needs it first: wait() in the calling thread, or,
for get_future(), the backend's completion thread; completing copies
results back where a staging buffer was needed (non-contiguous tensors,
dtypes weft lacks, lists of tensors).
"""
import ctypes
import os
import queue
import threading
from datetime import timedelta

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _C10dBackend
from torch._C._distributed_c10d import ReduceOp
from torch._C._distributed_c10d import Work as _C10dWork

from .. import _lib
from .._core import Error
from .._lib import lib
from ._bootstrap import create_communicator

# dtypes weft reduces natively (data movement works on any dtype as bytes)
_NATIVE = {
    torch.int8: _lib.INT8, torch.uint8: _lib.UINT8, torch.int32: _lib.INT32,
    torch.int64: _lib.INT64, torch.float16: _lib.FLOAT16,
    torch.bfloat16: _lib.BFLOAT16, torch.float32: _lib.FLOAT32,
    torch.float64: _lib.FLOAT64,
}
for _name, _code in (("uint32", _lib.UINT32), ("uint64", _lib.UINT64)):
    if hasattr(torch, _name):  # torch >= 2.3
        _NATIVE[getattr(torch, _name)] = _code
# reduced in int32 and narrowed back (wraps like the narrow type would)
_WIDENED = {torch.int16} | ({torch.uint16} if hasattr(torch, "uint16")
                            else set())
_REAL_OF = {torch.complex64: _lib.FLOAT32, torch.complex128: _lib.FLOAT64}

_OPS = {
    ReduceOp.SUM: _lib.SUM, ReduceOp.AVG: _lib.AVG,
    ReduceOp.PRODUCT: _lib.PROD, ReduceOp.MIN: _lib.MIN,
    ReduceOp.MAX: _lib.MAX,
}
# bool tensors: logical or / and are max / min over 0 and 1
_BOOL_OPS = {
    ReduceOp.SUM: _lib.MAX, ReduceOp.MAX: _lib.MAX, ReduceOp.BOR: _lib.MAX,
    ReduceOp.PRODUCT: _lib.MIN, ReduceOp.MIN: _lib.MIN,
    ReduceOp.BAND: _lib.MIN,
}


class WeftError(Error, dist.DistBackendError):
    """A weft failure inside torch.distributed: both a weft.Error (status
    name, the communicator's message) and a DistBackendError."""


def _unsupported(what, detail):
    return WeftError(-10, what, detail)


def _ptr(t):
    return None if t is None else ctypes.c_void_p(t.data_ptr())


def _nbytes(t):
    return t.numel() * t.element_size()


def _contig(t):
    return t if t.is_contiguous() else t.contiguous()


def _reducible(t, op, what):
    """(buffer, weft dtype, element count, weft op): a contiguous tensor
    holding t's values in a form weft can reduce.  The buffer is t itself
    when possible; otherwise the caller copies it back into t."""
    red = op.op if hasattr(op, "op") else op
    dt = t.dtype
    if dt == torch.bool:
        if red not in _BOOL_OPS:
            raise _unsupported(what, "%s on bool tensors" % red)
        return _contig(t), _lib.UINT8, t.numel(), _BOOL_OPS[red]
    if red not in _OPS:
        raise _unsupported(what, "reduction %s (weft has SUM, AVG, "
                           "PRODUCT, MIN, MAX)" % red)
    wop = _OPS[red]
    if dt in _NATIVE:
        return _contig(t), _NATIVE[dt], t.numel(), wop
    if dt in _WIDENED:
        return t.to(torch.int32), _lib.INT32, t.numel(), wop
    if dt in _REAL_OF and wop in (_lib.SUM, _lib.AVG):
        return _contig(t), _REAL_OF[dt], 2 * t.numel(), wop
    raise _unsupported(what, "%s on %s tensors" % (red, dt))


def _finish(backend, what, requests, finalize):
    """Waits for `requests`, frees them and runs the copy-backs; returns the
    operation's error or None."""
    err = None
    for req in requests:
        st = lib.weft_wait(req)                # releases the GIL
        lib.weft_request_free(req)
        if st != _lib.OK and err is None:
            err = backend._error(st, what)
    if err is None:
        try:
            for fn in finalize:
                fn()
        except Exception as e:  # a failed copy-back is the op's error
            err = e
    return err


class _Orphan:
    """What remains of a _Work dropped before completion: its requests and
    buffers, which the completion thread waits for and releases."""

    def __init__(self, work):
        self._args = (work._backend, work._what, work._requests,
                      work._finalize)
        self._keep = work._keep

    def _complete(self):
        _finish(*self._args)
        self._args = self._keep = None


class _Work(_C10dWork):
    """One torch operation: weft requests plus what to do when they end.

    Whoever needs the result first completes the operation: wait() in the
    calling thread (no hand-off: the common blocking case), get_future()
    through the backend's completion thread, which serves futures in issue
    order.  Completing means waiting for the requests, copying staged
    results back, then completing the future (if one was asked for) and
    the event every other waiter blocks on.  The future is made on demand
    and completes with the output tensors, or fails with weft's error."""

    def __init__(self, backend, what, result, keep, finalize):
        super().__init__()
        self._backend = backend
        self._what = what
        self._result = result
        self._keep = keep           # tensors the C side reads or writes
        self._finalize = finalize   # copy-backs, run after success
        self._requests = []
        self._error = None
        self._lock = threading.Lock()   # guards the four flags below
        self._claimed = False       # someone is completing it
        self._finished = False      # results are in place
        self._watched = False       # queued for the completion thread
        self._trigger = self._future = None
        self._done = threading.Event()

    def _complete(self):
        with self._lock:
            mine, self._claimed = not self._claimed, True
        if not mine:
            self._done.wait()
            return
        err = _finish(self._backend, self._what, self._requests,
                      self._finalize)
        self._requests, self._keep, self._finalize = [], None, None
        with self._lock:
            self._error, self._finished = err, True
            trigger = self._trigger
        if trigger is not None:         # future first, then the waiters
            trigger.set_result(None)
        self._done.set()

    def _watch(self):
        """Hands the work to the completion thread (once)."""
        with self._lock:
            if self._claimed or self._watched:
                return
            self._watched = True
        self._backend._queue.put(self)

    def _outcome(self, _):
        if self._error is not None:
            raise self._error
        return self._result

    def get_future(self):
        # A Python Future's set_exception() only teaches that wrapper to
        # raise; the C++ future underneath (what DDP and a re-wrapped
        # get_future() see) would complete "successfully" with the
        # exception as its value.  An exception raised in a then() callback
        # does mark the C++ future failed, so completion goes through one.
        with self._lock:
            fire = False
            if self._future is None:
                self._trigger = torch.futures.Future()
                self._future = self._trigger.then(self._outcome)
                fire = self._finished
        if fire:
            self._trigger.set_result(None)
        self._watch()
        return self._future

    def wait(self, timeout=timedelta(0)):
        seconds = timeout.total_seconds() if timeout else 0
        if seconds > 0:
            self._watch()
            if not self._done.wait(seconds):
                raise WeftError(-7, self._what, "Work.wait(timeout=%s) "
                                "expired before the operation completed"
                                % timeout)
        else:
            self._complete()
        if self._error is not None:
            raise self._error
        return True

    def __del__(self):
        # Dropped without wait() or get_future(): the C side may still use
        # the buffers, so they go to the completion thread, which releases
        # them when the operation ends.
        if getattr(self, "_requests", None) and not self._claimed and \
                not self._watched:
            self._backend._queue.put(_Orphan(self))

    # Called when Python code holds this object itself; torch's own
    # wrappers answer these from the C++ base class.
    def is_completed(self):
        return self._done.is_set()

    def is_success(self):
        return self._done.is_set() and self._error is None

    def exception(self):
        return self._error

    def result(self):
        return self._result


class WeftBackend(_C10dBackend):
    """A c10d Backend over one weft communicator (CPU tensors)."""

    def __init__(self, store, rank, size, timeout, config=None):
        super().__init__(rank, size)
        seconds = timeout.total_seconds() if timeout else None
        self._comm = create_communicator(store, rank, size, seconds, config)
        self._rank, self._size = rank, size
        self._queue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._complete_loop,
                                        name="weft-completion", daemon=True)
        self._thread.start()

    # -- plumbing -------------------------------------------------------------

    def getBackendName(self):
        return "weft"

    # torch 2.15's trampoline answers these capability queries by reading
    # the Python attribute, and the inherited C++ property calls back into
    # the trampoline: without these overrides, asking (batch_isend_irecv
    # asks for supports_coalescing) recurses until RecursionError.
    supports_splitting = property(lambda self: False)
    supports_coalescing = property(lambda self: False)
    supports_shrinking = property(lambda self: False)
    supports_reconfigure = property(lambda self: False)
    supports_window = property(lambda self: False)
    _supports_time_estimate = property(lambda self: False)

    @property
    def comm(self):
        """The weft.Communicator under this backend."""
        return self._comm

    def _complete_loop(self):
        while True:
            work = self._queue.get()
            if work is None:
                return
            work._complete()

    def _error(self, status, what):
        return WeftError(status, what, self._comm._error_message())

    def _work(self, what, result, keep=(), finalize=()):
        return _Work(self, what, result, list(keep), list(finalize))

    def _start(self, work, fn, *args):
        """Starts one weft operation as part of `work`."""
        req = ctypes.c_void_p()
        st = fn(*args, self._comm._handle(), ctypes.byref(req))
        if st != _lib.OK:
            err = self._error(st, work._what)
            work._watch()           # let what already started finish
            raise err
        work._requests.append(req)

    def _copy_back(self, work, dst, src):
        if dst is not src:
            work._finalize.append(lambda: dst.copy_(src))

    def _check_root(self, root, what):
        if not 0 <= root < self._size:
            raise WeftError(-1, what, "root %d is outside [0, %d)" %
                            (root, self._size))

    # -- collectives ----------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        work = self._work("allreduce", tensors, keep=tensors)
        for t in tensors:
            buf, wdt, n, wop = _reducible(t, op, "allreduce")
            work._keep.append(buf)
            self._copy_back(work, t, buf)
            self._start(work, lib.weft_iallreduce, _ptr(buf), _ptr(buf), n,
                        wdt, wop)
        return work

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        self._check_root(root, "broadcast")
        work = self._work("broadcast", tensors, keep=tensors)
        for t in tensors:
            buf = _contig(t)
            work._keep.append(buf)
            self._copy_back(work, t, buf)
            self._start(work, lib.weft_ibroadcast, _ptr(buf), _ptr(buf),
                        _nbytes(buf), _lib.UINT8, root)
        return work

    def reduce(self, tensors, opts=None):
        root = opts.rootRank if opts is not None else 0
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        self._check_root(root, "reduce")
        work = self._work("reduce", tensors, keep=tensors)
        for t in tensors:
            buf, wdt, n, wop = _reducible(t, op, "reduce")
            work._keep.append(buf)
            recv = buf if self._rank == root else None
            if recv is not None:
                self._copy_back(work, t, buf)
            self._start(work, lib.weft_ireduce, _ptr(buf), _ptr(recv), n,
                        wdt, wop, root)
        return work

    def _gather_into(self, work, out, inp, fn, *extra):
        """out (size * inp.numel() elements) <- fn(inp); staging `out`
        when it is not contiguous."""
        if out.numel() != self._size * inp.numel() or out.dtype != inp.dtype:
            raise WeftError(-1, work._what, "output has %s[%d], expected "
                            "%s[%d] (weft needs equal sizes on every rank)"
                            % (out.dtype, out.numel(), inp.dtype,
                               self._size * inp.numel()))
        src, dst = _contig(inp), _contig(out)
        work._keep += [src, dst, inp, out]
        self._copy_back(work, out, dst)
        self._start(work, fn, _ptr(src), _ptr(dst), _nbytes(src),
                    _lib.UINT8, *extra)

    def _gather_list(self, work, outs, inp, fn, *extra):
        """The list form: gather into one staging tensor, then copy each
        rank's block into outs[r]."""
        for o in outs:
            if o.numel() != inp.numel() or o.dtype != inp.dtype:
                raise WeftError(-1, work._what, "every output must be %s[%d]"
                                " like the input (weft needs equal sizes)"
                                % (inp.dtype, inp.numel()))
        flat = torch.empty(self._size * inp.numel(), dtype=inp.dtype)
        src = _contig(inp)
        work._keep += [src, flat, inp] + list(outs)
        n = inp.numel()

        def scatter_back():
            for r, o in enumerate(outs):
                o.copy_(flat[r * n:(r + 1) * n].view(o.shape))
        work._finalize.append(scatter_back)
        self._start(work, fn, _ptr(src), _ptr(flat), _nbytes(src),
                    _lib.UINT8, *extra)

    def allgather(self, output_tensors, input_tensors, opts=None):
        work = self._work("allgather", output_tensors)
        for outs, inp in zip(output_tensors, input_tensors):
            self._gather_list(work, outs, inp, lib.weft_iallgather)
        return work

    def allgather_coalesced(self, output_lists, input_tensors, opts=None):
        return self.allgather(output_lists, input_tensors, opts)

    def all_gather_single(self, output, input, opts=None):
        work = self._work("allgather", [output])
        self._gather_into(work, output, input, lib.weft_iallgather)
        return work

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        work = self._work("allgather", outputs)
        for out, inp in zip(outputs, inputs):
            self._gather_into(work, out, inp, lib.weft_iallgather)
        return work

    def gather(self, output_tensors, input_tensors, opts=None):
        root = opts.rootRank
        self._check_root(root, "gather")
        work = self._work("gather", output_tensors)
        inp = input_tensors[0]
        if self._rank == root:
            self._gather_list(work, output_tensors[0], inp, lib.weft_igather,
                              root)
        else:
            src = _contig(inp)
            work._keep += [src, inp]
            self._start(work, lib.weft_igather, _ptr(src), None,
                        _nbytes(src), _lib.UINT8, root)
        return work

    def scatter(self, output_tensors, input_tensors, opts=None):
        root = opts.rootRank
        self._check_root(root, "scatter")
        out = output_tensors[0]
        work = self._work("scatter", output_tensors)
        send = None
        if self._rank == root:
            ins = input_tensors[0]
            for t in ins:
                if t.numel() != out.numel() or t.dtype != out.dtype:
                    raise WeftError(-1, "scatter", "every input must be "
                                    "%s[%d] like the output" %
                                    (out.dtype, out.numel()))
            send = torch.cat([t.reshape(-1) for t in ins])
        dst = _contig(out)
        work._keep += [send, dst, out]
        self._copy_back(work, out, dst)
        self._start(work, lib.weft_iscatter, _ptr(send), _ptr(dst),
                    _nbytes(dst), _lib.UINT8, root)
        return work

    def _reduce_scatter(self, work, out, flat_in, op):
        """out <- block `rank` of the reduction of flat_in (size blocks of
        out.numel() elements)."""
        if flat_in.numel() != self._size * out.numel() or \
                flat_in.dtype != out.dtype:
            raise WeftError(-1, "reduce_scatter", "input has %s[%d], "
                            "expected %s[%d]" % (flat_in.dtype,
                                                 flat_in.numel(), out.dtype,
                                                 self._size * out.numel()))
        src, wdt, _, wop = _reducible(flat_in, op, "reduce_scatter")
        dst, _, n, _ = _reducible(out, op, "reduce_scatter")
        work._keep += [src, dst, out, flat_in]
        self._copy_back(work, out, dst)
        self._start(work, lib.weft_ireduce_scatter, _ptr(src), _ptr(dst), n,
                    wdt, wop)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        work = self._work("reduce_scatter", output_tensors)
        for out, ins in zip(output_tensors, input_tensors):
            flat = torch.cat([t.reshape(-1) for t in ins])
            self._reduce_scatter(work, out, flat, op)
        return work

    def reduce_scatter_single(self, output, input, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        work = self._work("reduce_scatter", [output])
        self._reduce_scatter(work, output, input.reshape(-1), op)
        return work

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        work = self._work("reduce_scatter", outputs)
        for out, inp in zip(outputs, inputs):
            self._reduce_scatter(work, out, inp.reshape(-1), op)
        return work

    def all_to_all_single(self, output, input, output_split_sizes,
                          input_split_sizes, opts=None):
        work = self._work("alltoall", [output])
        if not output_split_sizes and not input_split_sizes:
            if input.numel() % self._size or \
                    output.numel() != input.numel():
                raise WeftError(-1, "alltoall", "input and output must have"
                                " the same size, a multiple of %d" %
                                self._size)
            src, dst = _contig(input), _contig(output)
            work._keep += [src, dst, input, output]
            self._copy_back(work, output, dst)
            self._start(work, lib.weft_ialltoall, _ptr(src), _ptr(dst),
                        _nbytes(src) // self._size, _lib.UINT8)
            return work
        # Uneven splits along dim 0: pairwise send/recv (weft has no
        # alltoallv); every rank posts them in the same order.
        ins = self._split_rows(input, input_split_sizes)
        outs = self._split_rows(output, output_split_sizes)
        self._exchange(work, outs, ins)
        return work

    def _split_rows(self, t, sizes):
        if not sizes:
            if t.shape[0] % self._size:
                raise WeftError(-1, "alltoall", "dim 0 (%d) is not a "
                                "multiple of %d" % (t.shape[0], self._size))
            sizes = [t.shape[0] // self._size] * self._size
        return list(torch.split(t, list(sizes), dim=0))

    def _exchange(self, work, outs, ins):
        """outs[p] <- rank p's ins[rank], by send/recv (rank's own block is
        a local copy)."""
        me = self._rank
        for p in range(self._size):
            if p == me:
                continue
            src = _contig(ins[p])
            dst = _contig(outs[p])
            work._keep += [src, dst, ins[p], outs[p]]
            self._copy_back(work, outs[p], dst)
            self._start(work, lib.weft_isend, _ptr(src), _nbytes(src),
                        _lib.UINT8, p)
            self._start(work, lib.weft_irecv, _ptr(dst), _nbytes(dst),
                        _lib.UINT8, p)
        own_out, own_in = outs[me], ins[me]
        work._keep += [own_out, own_in]
        work._finalize.append(lambda: own_out.copy_(own_in))

    def alltoall(self, output_tensors, input_tensors, opts=None):
        work = self._work("alltoall", output_tensors)
        n = input_tensors[0].numel()
        even = all(t.numel() == n for t in input_tensors + output_tensors)
        same = len({t.dtype for t in input_tensors + output_tensors}) == 1
        if even and same:
            src = torch.cat([t.reshape(-1) for t in input_tensors])
            dst = torch.empty_like(src)
            work._keep += [src, dst] + list(output_tensors)

            def unpack():
                for r, o in enumerate(output_tensors):
                    o.copy_(dst[r * n:(r + 1) * n].view(o.shape))
            work._finalize.append(unpack)
            self._start(work, lib.weft_ialltoall, _ptr(src), _ptr(dst),
                        _nbytes(src) // self._size, _lib.UINT8)
        else:
            self._exchange(work, list(output_tensors), list(input_tensors))
        return work

    def barrier(self, opts=None):
        work = self._work("barrier", [])
        self._start(work, lib.weft_ibarrier)
        return work

    # -- point-to-point -------------------------------------------------------
    # weft matches messages between a pair of ranks in posting order; torch's
    # tag is not transmitted.

    def send(self, tensors, dst_rank, tag=0):
        work = self._work("send", tensors)
        for t in tensors:
            buf = _contig(t)
            work._keep += [buf, t]
            self._start(work, lib.weft_isend, _ptr(buf), _nbytes(buf),
                        _lib.UINT8, dst_rank)
        return work

    def recv(self, tensors, src_rank, tag=0):
        work = self._work("recv", tensors)
        for t in tensors:
            buf = _contig(t)
            work._keep += [buf, t]
            self._copy_back(work, t, buf)
            self._start(work, lib.weft_irecv, _ptr(buf), _nbytes(buf),
                        _lib.UINT8, src_rank)
        return work

    def recv_anysource(self, tensors, tag=0):
        raise _unsupported("recv", "receiving from any source (weft matches "
                           "messages per sender)")

    # -- lifecycle ------------------------------------------------------------

    def _stop_thread(self):
        if self._thread is not None:
            self._queue.put(None)
            if self._thread is not threading.current_thread():
                self._thread.join()
            self._thread = None

    def shutdown(self):
        """destroy_process_group: finish pending work, release weft."""
        self._stop_thread()
        self._comm.destroy()

    def abort(self):
        """Fail pending operations at once (ERR_ABORTED) and release."""
        self._comm.abort()
        self._stop_thread()


def create_backend(store, rank, size, timeout):
    """The creator registered with torch.distributed.Backend.  WEFTPY_CONFIG
    ("KEY=VALUE,..." of WEFT_* knobs) applies to these communicators only;
    torch's timeout always sets WEFT_TIMEOUT."""
    return WeftBackend(store, rank, size, timeout,
                       config=os.environ.get("WEFTPY_CONFIG") or None)


def register():
    """Registers "weft" with torch.distributed (idempotent)."""
    if "WEFT" in getattr(dist.Backend, "_plugins", {}):
        return
    dist.Backend.register_backend("weft", create_backend, devices=["cpu"])
