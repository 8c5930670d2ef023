"""Horovod's collectives on numpy arrays, blocking, for a framework whose
tensors convert to numpy without a copy on the CPU (TensorFlow's do;
weft.horovod.tensorflow runs these inside tf.numpy_function, which is
also how they run in graph mode).

Each function takes lists, so a grouped call and a single call are the
same code: reductions concatenate the arrays of one dtype and run one
weft call per dtype; allgather, broadcast, alltoall and reducescatter
move bytes (or reduce in the arrays' dtype), after the record exchange of
common/records.py where the first dimension may differ between ranks.

Reductions run in weft's own dtypes; bool is reduced in a uint8 copy,
Sum and Max being "or", Min and Product "and", as in weft.horovod.torch.
numpy's bfloat16 is ml_dtypes' (which TensorFlow installs); it is found
by its name.
"""
import numpy as np

from ... import _lib
from . import reduce_ops
from .records import HEADER, alltoall_splits, check_alike, \
    exchange_records, header, split_rows
from .reduce_ops import Average, Sum

_BOOL_OPS = {reduce_ops.Sum: _lib.MAX, reduce_ops.Max: _lib.MAX,
             reduce_ops.Min: _lib.MIN, reduce_ops.Product: _lib.MIN}
# Stable codes of dtypes for the shape records (0: a joined rank).
_CODES = ("uint8", "int8", "uint16", "int16", "int32", "uint32", "int64",
          "uint64", "float16", "bfloat16", "float32", "float64", "bool",
          "complex64", "complex128")


def dtype_code(dtype):
    name = np.dtype(dtype).name
    return _CODES.index(name) + 1 if name in _CODES \
        else 100 + np.dtype(dtype).itemsize


def weft_dtype(dtype, op, what):
    """(weft dtype, weft op, numpy dtype to reduce in) for reducing arrays
    of `dtype` with the Horovod op `op`."""
    name = np.dtype(dtype).name
    if name == "bool":
        if op == Average:
            raise ValueError("%s: Average of a bool tensor is not defined; "
                             "use Sum (or) or Min (and)" % what)
        return _lib.UINT8, _BOOL_OPS[op], np.dtype(np.uint8)
    code = _lib.DTYPE_NAMES.get(name)
    if code is None:
        raise ValueError("%s: dtype %s is not supported for reductions "
                         "(supported: %s, bool)" % (
                             what, name, ", ".join(_lib.DTYPE_NAMES)))
    return code, reduce_ops.weft_op(op), np.dtype(dtype)


def scaling(op, prescale, postscale, size):
    """(op to run, prescale, postscale): Average with scale factors becomes
    Sum with postscale / size, as Horovod does."""
    if op == Average and (prescale != 1.0 or postscale != 1.0):
        return Sum, prescale, postscale / size
    return op, prescale, postscale


def scale(a, factor):
    """a * factor in a's dtype; integers are scaled in float64 and
    truncated toward zero (as weft.horovod.torch does)."""
    if factor == 1.0:
        return a
    if a.dtype == np.bool_:
        raise ValueError("cannot scale a bool tensor by %r" % (factor,))
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        return (a.astype(np.float64) * factor).astype(a.dtype) \
            if a.dtype.name == "bfloat16" else a * a.dtype.type(factor)
    return np.trunc(a.astype(np.float64) * factor).astype(a.dtype)


def allreduce(arrays, op, prescale, postscale, ch):
    """Every array reduced over the channel, one weft call per dtype."""
    what = "allreduce"
    op, prescale, postscale = scaling(op, prescale, postscale, ch.size)
    groups = {}
    for i, a in enumerate(arrays):
        groups.setdefault(weft_dtype(a.dtype, op, what), []).append(i)
    out = [None] * len(arrays)
    for (wdt, wop, rdtype), idx in groups.items():
        flat = np.concatenate([np.asarray(arrays[i], dtype=rdtype)
                               .reshape(-1) for i in idx]) \
            if len(idx) > 1 else np.array(arrays[idx[0]], dtype=rdtype,
                                          order="C").reshape(-1)
        flat = scale(flat, prescale)
        ch.allreduce(flat.ctypes.data, flat.ctypes.data, flat.size, wdt, wop)
        flat = scale(flat, postscale)
        at = 0
        for i in idx:
            n = arrays[i].size
            out[i] = flat[at:at + n].reshape(arrays[i].shape) \
                .astype(arrays[i].dtype, copy=False)
            at += n
    return out


def broadcast(arrays, root, ch):
    """root's arrays on every rank (root is the channel's rank), as one
    buffer of bytes."""
    src = [np.asarray(a, order="C") for a in arrays]
    total = sum(a.nbytes for a in src)
    buf = np.empty(total, dtype=np.uint8)
    if ch.rank == root:
        at = 0
        for a in src:
            buf[at:at + a.nbytes] = a.reshape(-1).view(np.uint8)
            at += a.nbytes
    ch.broadcast(buf.ctypes.data, total, _lib.UINT8, root)
    if ch.rank == root:
        return [a.copy() for a in src]
    out, at = [], 0
    for a in src:
        out.append(buf[at:at + a.nbytes].view(a.dtype).reshape(a.shape))
        at += a.nbytes
    return out


def _row_bytes(a):
    return a.itemsize * (int(np.prod(a.shape[1:])) if a.ndim > 1 else 1)


def allgather(arrays, ch, what="allgather"):
    """Each array concatenated along its first dimension across ranks
    (which may differ between ranks); one record exchange and one weft
    allgather for all of them.  Returns (results, rows[i][r]: the rows
    rank r gave for array i)."""
    n = ch.size
    words = []
    for a in arrays:
        if a.ndim == 0:
            raise ValueError("%s: a 0-d tensor has no first dimension to "
                             "concatenate along" % what)
        words += header(dtype_code(a.dtype), a.shape) + [a.shape[0]]
    per = HEADER + 1
    records = exchange_records(ch, words, what)
    plans, block = [], 0
    for i, a in enumerate(arrays):
        check_alike([rec[i * per:(i + 1) * per] for rec in records],
                    words[i * per:(i + 1) * per], what, "tensor %d" % i)
        rows = [rec[i * per + HEADER] for rec in records]
        plans.append((a, rows, max(rows), _row_bytes(a)))
        block += max(rows) * _row_bytes(a)
    send = np.zeros(block, dtype=np.uint8)
    at = 0
    for a, rows, top, rb in plans:
        b = np.asarray(a, order="C").reshape(-1).view(np.uint8)
        send[at:at + b.size] = b
        at += top * rb
    recv = np.empty(n * block, dtype=np.uint8)
    ch.allgather(send.ctypes.data, recv.ctypes.data, block, _lib.UINT8)
    blocks = recv.reshape(n, block)
    outs, at = [], 0
    for a, rows, top, rb in plans:
        parts = [blocks[r, at:at + rows[r] * rb] for r in range(n)]
        outs.append(np.concatenate(parts).view(a.dtype)
                    .reshape((sum(rows),) + a.shape[1:]))
        at += top * rb
    return outs, [p[1] for p in plans]


def alltoall(a, splits, ch, what="alltoall"):
    """Rows splits[r] of `a` to rank r (equal shares when splits is None);
    returns (received rows, rows received from each rank)."""
    n, me = ch.size, ch.rank
    if a.ndim == 0:
        raise ValueError("%s: a 0-d tensor has no first dimension to split"
                         % what)
    splits = alltoall_splits(splits, a.shape[0], n, what)
    mine = header(dtype_code(a.dtype), a.shape) + splits
    records = exchange_records(ch, mine, what)
    check_alike(records, mine, what)
    sent = [rec[HEADER:] for rec in records]         # sent[r][d]: r -> d
    got = [sent[r][me] for r in range(n)]
    top = max(max(s) for s in sent)
    rb = _row_bytes(a)
    src = np.asarray(a, order="C").reshape(-1).view(np.uint8)
    send = np.zeros(n * top * rb, dtype=np.uint8)
    first = 0
    for d in range(n):
        nb = splits[d] * rb
        send[d * top * rb:d * top * rb + nb] = src[first:first + nb]
        first += nb
    recv = np.empty(n * top * rb, dtype=np.uint8)
    ch.alltoall(send.ctypes.data, recv.ctypes.data, top * rb, _lib.UINT8)
    parts = [recv[r * top * rb:r * top * rb + got[r] * rb] for r in range(n)]
    out = np.concatenate(parts).view(a.dtype).reshape(
        (sum(got),) + a.shape[1:])
    return out, np.array(got, dtype=np.int32)


def reducescatter(arrays, op, prescale, postscale, ch):
    """Each array reduced over the channel, rank r keeping its rows of
    Horovod's split (the first rows % size ranks one more); one weft
    reduce_scatter per dtype."""
    what = "reducescatter"
    if op not in (Sum, Average):
        raise ValueError("%s supports hvd.Sum and hvd.Average, not %s" %
                         (what, op))
    n, me = ch.size, ch.rank
    op, prescale, postscale = scaling(op, prescale, postscale, n)
    groups = {}
    for i, a in enumerate(arrays):
        if a.ndim == 0:
            raise ValueError("%s: tensor %d is 0-d; each needs a first "
                             "dimension to split" % (what, i))
        groups.setdefault(weft_dtype(a.dtype, op, what), []).append(i)
    out = [None] * len(arrays)
    for (wdt, wop, rdtype), idx in groups.items():
        plans, count = [], 0
        for i in idx:
            a = arrays[i]
            rows = split_rows(a.shape[0], n)
            rowel = int(np.prod(a.shape[1:])) if a.ndim > 1 else 1
            plans.append((i, rows, max(rows), rowel))
            count += max(rows) * rowel
        send = np.zeros((n, count), dtype=rdtype)
        at = 0
        for i, rows, top, rowel in plans:
            flat = np.asarray(arrays[i], dtype=rdtype).reshape(
                arrays[i].shape[0], rowel)
            first = 0
            for r in range(n):
                send[r, at:at + rows[r] * rowel] = \
                    flat[first:first + rows[r]].reshape(-1)
                first += rows[r]
            at += top * rowel
        send = scale(send, prescale)
        recv = np.empty(count, dtype=rdtype)
        ch.reduce_scatter(send.ctypes.data, recv.ctypes.data, count, wdt,
                          wop)
        recv = scale(recv, postscale)
        at = 0
        for i, rows, top, rowel in plans:
            a = arrays[i]
            out[i] = recv[at:at + rows[me] * rowel].reshape(
                (rows[me],) + a.shape[1:]).astype(a.dtype, copy=False)
            at += top * rowel
    return out
