"""Torch tensors as weft buffers: dtypes, staging, scaling.

Reductions run in weft's own dtypes.  int16 is reduced in an int32 copy
(sums and products wrap as int16 arithmetic would once cast back); bool
in a uint8 copy, Sum and Max being "or", Min and Product "and".  Data that is only moved (broadcast, allgather,
alltoall) goes as bytes, whatever its dtype.
"""
import torch

from ... import _lib
from ..common import reduce_ops

REDUCIBLE = {
    torch.uint8: _lib.UINT8, torch.int8: _lib.INT8, torch.int32: _lib.INT32,
    torch.int64: _lib.INT64, torch.float16: _lib.FLOAT16,
    torch.bfloat16: _lib.BFLOAT16, torch.float32: _lib.FLOAT32,
    torch.float64: _lib.FLOAT64,
}
for _name, _code in (("uint32", _lib.UINT32), ("uint64", _lib.UINT64)):
    if hasattr(torch, _name):
        REDUCIBLE[getattr(torch, _name)] = _code
STAGED = {torch.int16: torch.int32, torch.bool: torch.uint8}
_BOOL_OPS = {reduce_ops.Sum: _lib.MAX, reduce_ops.Max: _lib.MAX,
             reduce_ops.Min: _lib.MIN, reduce_ops.Product: _lib.MIN}


def check_tensor(t, what):
    if not isinstance(t, torch.Tensor):
        raise ValueError("%s: expected a torch.Tensor, got %s" %
                         (what, type(t).__name__))
    if t.device.type != "cpu":
        raise ValueError("%s: weft.horovod takes CPU tensors; this one is on "
                         "%s" % (what, t.device))
    if t.is_sparse:
        raise ValueError("%s: sparse tensors are not supported (use "
                         "sparse_as_dense or to_dense())" % what)


def reduction(t, op, what):
    """(weft dtype, weft op, dtype to reduce in) for reducing `t` with the
    Horovod op `op` (no scaling applied here)."""
    code = REDUCIBLE.get(t.dtype)
    if code is not None:
        return code, reduce_ops.weft_op(op), t.dtype
    if t.dtype == torch.int16:
        return _lib.INT32, reduce_ops.weft_op(op), torch.int32
    if t.dtype == torch.bool:
        if op == reduce_ops.Average:
            raise ValueError("%s: Average of a bool tensor is not defined; "
                             "use Sum (or) or Min (and)" % what)
        return _lib.UINT8, _BOOL_OPS[op], torch.uint8
    raise ValueError("%s: tensor type %s is not supported for reductions "
                     "(supported: %s)" % (what, t.dtype, ", ".join(
                         str(d) for d in list(REDUCIBLE) + list(STAGED))))


def as_bytes(t):
    """A contiguous tensor's memory as a flat uint8 view."""
    return t.reshape(-1).view(torch.uint8) if t.numel() else \
        torch.empty(0, dtype=torch.uint8)


def contiguous(t):
    return t if t.is_contiguous() else t.contiguous()


def scale_(t, factor):
    """t *= factor in place; integers are scaled in float64 and truncated
    toward zero."""
    if factor == 1.0:
        return t
    if t.is_floating_point():
        return t.mul_(factor)
    if t.dtype == torch.bool:
        raise ValueError("cannot scale a bool tensor by %r" % (factor,))
    return t.copy_(t.to(torch.float64).mul_(factor))


def row_elements(t):
    """Elements per row of the first dimension."""
    n = 1
    for d in t.shape[1:]:
        n *= d
    return n


# Stable codes of dtypes for the shape records that allgather and alltoall
# exchange (0 stands for a rank that joined and sends nothing).
_DTYPE_CODES = {}
for _i, _d in enumerate((torch.uint8, torch.int8, torch.int16, torch.int32,
                         torch.int64, torch.float16, torch.bfloat16,
                         torch.float32, torch.float64, torch.bool,
                         torch.complex64, torch.complex128), start=1):
    _DTYPE_CODES[_d] = _i


def dtype_code(dtype):
    return _DTYPE_CODES.get(dtype, 100 + torch.empty(0, dtype=dtype)
                            .element_size())
