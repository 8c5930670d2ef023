"""What every framework's data movement shares: the small record each rank
sends before an operation whose sizes may differ between ranks, the check
that the rest of the shapes agree, and Horovod's split of rows.

Horovod lets the first dimension differ between ranks (allgather,
alltoall with splits, reducescatter's uneven split); weft's collectives
move equal blocks.  So each rank first allgathers a record of integers
(a header of HEADER words naming the dtype and the shape after the first
dimension, then the rows or splits): every rank then knows every size,
and a rank whose shape does not fit gets a ValueError on every rank
instead of a mismatch that would break the communicator.  A rank that has
joined (hvd.join) sends zeros, which the check skips.
"""
import ctypes

from ... import _lib

HEADER = 3      # dtype code, number of dimensions, hash of shape[1:]


def header(dtype_code, shape):
    return [dtype_code, len(shape), hash(tuple(shape[1:]))]


def exchange_records(ch, words, what):
    """Allgather of `words` (ints, the same number on every rank), blocking;
    returns one list per rank."""
    n = len(words)
    mine = (ctypes.c_int64 * n)(*words)
    every = (ctypes.c_int64 * (n * ch.size))()
    ch.allgather(ctypes.addressof(mine), ctypes.addressof(every), n,
                 _lib.INT64)
    return [list(every[r * n:(r + 1) * n]) for r in range(ch.size)]


def check_alike(records, mine, what, name="tensor"):
    """Every rank that sent a record (not a joined rank's zeros) must have
    this rank's dtype and shape after the first dimension."""
    for r, rec in enumerate(records):
        if rec[0] == 0 or rec[:HEADER] == mine[:HEADER]:
            continue
        if rec[0] != mine[0]:
            why = "a different dtype"
        elif rec[1] != mine[1]:
            why = "a tensor of %d dimensions, this rank %d" % (rec[1],
                                                               mine[1])
        else:
            why = "a different shape after the first dimension"
        raise ValueError("%s: rank %d of the process set passed %s (%s); "
                         "only the first dimension may differ" %
                         (what, r, why, name))


def split_rows(rows, n):
    """Rows of each rank: Horovod's split, the first rows % n ranks one
    more."""
    base, extra = divmod(rows, n)
    return [base + (1 if r < extra else 0) for r in range(n)]


def alltoall_splits(splits, rows, n, what):
    """The rows for each of the n ranks, as ints: `splits` checked (n
    counts >= 0 summing to `rows`), or equal shares when it is None."""
    if splits is None:
        if rows % n:
            raise ValueError("%s: without splits the first dimension (%d) "
                             "must divide evenly among %d ranks" %
                             (what, rows, n))
        return [rows // n] * n
    splits = [int(x) for x in splits]
    if len(splits) != n or min(splits) < 0 or sum(splits) != rows:
        raise ValueError("%s: splits %r must be %d counts >= 0 that sum to "
                         "the first dimension (%d)" % (what, splits, n, rows))
    return splits
