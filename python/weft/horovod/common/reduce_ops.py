"""Horovod's reduction operations and how each maps onto weft's."""
from ... import _lib

# Horovod's values are opaque constants; these are weft's own, chosen so
# that a wrong value passed as `op` fails loudly below.
Average = "Average"
Sum = "Sum"
Adasum = "Adasum"
Min = "Min"
Max = "Max"
Product = "Product"

_WEFT_OPS = {Average: _lib.AVG, Sum: _lib.SUM, Min: _lib.MIN,
             Max: _lib.MAX, Product: _lib.PROD}


def resolve(op, average, default=Average):
    """The op a call means: `op` when given, else the legacy `average=`
    flag (True: Average, False: Sum), else `default`.  Both given is an
    error, as in Horovod."""
    if op is not None and average is not None:
        raise ValueError("the op parameter supersedes average; pass only "
                         "one of them")
    if op is None:
        op = default if average is None else (Average if average else Sum)
    check(op)
    return op


def check(op):
    if op == Adasum:
        raise NotImplementedError(
            "Adasum is not supported by weft.horovod (docs/horovod.md, "
            "'Left out'); use op=Average or op=Sum")
    if op not in _WEFT_OPS:
        raise ValueError("unknown reduction op %r: expected hvd.Average, "
                         "hvd.Sum, hvd.Min, hvd.Max or hvd.Product" % (op,))


def weft_op(op):
    return _WEFT_OPS[op]
