"""Broadcast, allgather and alltoall of tensors: data moved as bytes.

Horovod lets the first dimension differ between ranks (allgather,
alltoall with splits).  weft's collectives move equal blocks, so these
first exchange a small record per rank (rows or splits, dtype, the shape
after the first dimension), blocking, at the call: every rank then knows
every size, checks that the rest of the shapes agree (a clear ValueError
on every rank instead of a mismatch that would break the communicator),
and moves the data in one weft call, padded to the largest block only
when the sizes differ.  A rank that has joined (hvd.join) sends an empty
record and no rows.
"""
import torch

from ... import _lib
from ..common import basics
from ..common.records import HEADER as _HEADER, alltoall_splits, \
    check_alike as _check_alike, exchange_records, header
from .reductions import launch
from .tensors import as_bytes, check_tensor, contiguous, dtype_code, \
    row_elements


def broadcast(tensor, output, root_rank, process_set, start):
    """root_rank's `tensor` into `output` on every rank (`output is
    tensor`: in place)."""
    what = "broadcast"
    check_tensor(tensor, what)
    ch = basics.channel_of(process_set, what)
    root = ch.local_rank_of(root_rank, what)
    if output is not tensor:
        output.copy_(tensor)
    buf = contiguous(output)
    b = as_bytes(buf)
    s = ch.broadcast(b.data_ptr(), b.numel(), _lib.UINT8, root, start)

    def finish():
        if buf is not output:
            output.copy_(buf)
        return output
    return launch([s] if s else [], finish, (buf, tensor), start)


def _header(t):
    return header(dtype_code(t.dtype), tuple(t.shape))


def allgather(tensor, process_set, start):
    return _allgather([tensor], process_set, start, "allgather", single=True)


def grouped_allgather(tensors, process_set, start):
    if not tensors:
        raise ValueError("grouped_allgather: the list of tensors is empty")
    return _allgather(list(tensors), process_set, start, "grouped_allgather",
                      single=False)


def _allgather(tensors, process_set, start, what, single):
    """Concatenates each tensor along its first dimension across ranks;
    one exchange of records and one weft allgather for all of them."""
    ch = basics.channel_of(process_set, what)
    n = ch.size
    words = []
    for t in tensors:
        check_tensor(t, what)
        if t.dim() == 0:
            raise ValueError("%s: a 0-d tensor has no first dimension to "
                             "concatenate along" % what)
        words += _header(t) + [t.shape[0]]
    per = _HEADER + 1
    records = exchange_records(ch, words, what)
    plans, block = [], 0
    for i, t in enumerate(tensors):
        mine = words[i * per:(i + 1) * per]
        _check_alike([rec[i * per:(i + 1) * per] for rec in records], mine,
                     what, "tensor %d" % i)
        rows = [rec[i * per + _HEADER] for rec in records]
        rowbytes = row_elements(t) * t.element_size()
        plans.append((t, rows, max(rows), rowbytes))
        block += max(rows) * rowbytes
    even = single and len(set(plans[0][1])) == 1
    if even:
        t, rows, top, rowbytes = plans[0]
        src = contiguous(t)
        out = torch.empty((n * top,) + tuple(t.shape[1:]), dtype=t.dtype)
        send, recv = as_bytes(src), as_bytes(out)
    else:
        send = torch.zeros(block, dtype=torch.uint8)
        at = 0
        for t, rows, top, rowbytes in plans:
            b = as_bytes(contiguous(t))
            send[at:at + b.numel()].copy_(b)
            at += top * rowbytes
        recv = torch.empty(n * block, dtype=torch.uint8)
    s = ch.allgather(send.data_ptr(), recv.data_ptr(), block, _lib.UINT8,
                     start)

    def finish():
        if even:
            return out
        outs, at = [], 0
        blocks = recv.view(n, block)
        for t, rows, top, rowbytes in plans:
            o = torch.empty((sum(rows),) + tuple(t.shape[1:]),
                            dtype=t.dtype)
            ob, first = as_bytes(o), 0
            for r in range(n):
                nb = rows[r] * rowbytes
                ob[first:first + nb].copy_(blocks[r, at:at + nb])
                first += nb
            outs.append(o)
            at += top * rowbytes
        return outs[0] if single else outs
    return launch([s] if s else [], finish, (send, recv, tensors), start)


def alltoall(tensor, splits, process_set, start):
    """Sends rows splits[r] to rank r (equal shares when splits is None);
    returns (received rows, rows received from each rank as int32)."""
    what = "alltoall"
    check_tensor(tensor, what)
    if tensor.dim() == 0:
        raise ValueError("%s: a 0-d tensor has no first dimension to split"
                         % what)
    ch = basics.channel_of(process_set, what)
    n, me = ch.size, ch.rank
    rows = tensor.shape[0]
    splits = alltoall_splits(splits.tolist()
                             if isinstance(splits, torch.Tensor) else splits,
                             rows, n, what)
    mine = _header(tensor) + splits
    records = exchange_records(ch, mine, what)
    _check_alike(records, mine, what)
    sent = [rec[_HEADER:] for rec in records]        # sent[r][d]: r -> d
    got = [sent[r][me] for r in range(n)]
    top = max(max(s) for s in sent)
    rowbytes = row_elements(tensor) * tensor.element_size()
    shape = tuple(tensor.shape[1:])
    even = all(x == top for s in sent for x in s)
    src = contiguous(tensor)
    if even:
        send = as_bytes(src)
        out = torch.empty((n * top,) + shape, dtype=tensor.dtype)
        recv = as_bytes(out)
    else:
        send = torch.zeros(n * top * rowbytes, dtype=torch.uint8)
        b, first = as_bytes(src), 0
        for d in range(n):
            nb = splits[d] * rowbytes
            send[d * top * rowbytes:d * top * rowbytes + nb].copy_(
                b[first:first + nb])
            first += nb
        recv = torch.empty(n * top * rowbytes, dtype=torch.uint8)
    s = ch.alltoall(send.data_ptr(), recv.data_ptr(), top * rowbytes,
                    _lib.UINT8, start)

    def finish():
        received = torch.tensor(got, dtype=torch.int32)
        if even:
            return out, received
        o = torch.empty((sum(got),) + shape, dtype=tensor.dtype)
        ob, first = as_bytes(o), 0
        for r in range(n):
            nb = got[r] * rowbytes
            ob[first:first + nb].copy_(recv[r * top * rowbytes:
                                             r * top * rowbytes + nb])
            first += nb
        return o, received
    return launch([s] if s else [], finish, (send, recv, tensor), start)
