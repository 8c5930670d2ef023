"""Allreduce and reducescatter of tensors, single and grouped.

Each function either runs the operation to its end (start=False, weft's
blocking calls) or starts it and returns a handle (start=True); the same
code path does both, so a handle's result is the blocking call's.

Average without scale factors is weft's own AVG (sum, then one division);
with prescale or postscale factors it becomes Sum, scaled before and by
postscale / size after, as Horovod does.  A grouped operation reduces all
tensors of one dtype as one weft call over their concatenation.
"""
import torch

from ..common import basics, reduce_ops
from ..common.handles import Pending
from ..common.reduce_ops import Average, Sum
from ..common.records import split_rows
from .tensors import check_tensor, contiguous, reduction, row_elements, \
    scale_


def launch(started, finish, keep, start):
    """A handle for the started calls, or the result of the ended ones."""
    if start:
        return basics.state().handles.add(Pending(started, finish, keep))
    return finish()


def _scaling(op, prescale, postscale, size):
    """(op to run, prescale, postscale) with Average split into Sum and a
    postscale factor when the caller scales."""
    if op == Average and (prescale != 1.0 or postscale != 1.0):
        return Sum, prescale, postscale / size
    return op, prescale, postscale


def _source(t, rdtype, prescale):
    """A contiguous tensor of `rdtype` with t's values times prescale;
    t itself when nothing has to change."""
    if t.dtype == rdtype and prescale == 1.0:
        return contiguous(t)
    s = t.to(rdtype, copy=True, memory_format=torch.contiguous_format)
    return scale_(s, prescale)


def allreduce(tensor, output, op, prescale, postscale, process_set, start):
    """Reduces `tensor` into `output` (`output is tensor`: in place)."""
    what = "allreduce"
    check_tensor(tensor, what)
    ch = basics.channel_of(process_set, what)
    op, prescale, postscale = _scaling(op, prescale, postscale, ch.size)
    wdt, wop, rdtype = reduction(tensor, op, what)
    direct = output.dtype == rdtype and output.is_contiguous()
    if output is tensor and direct:
        send = recv = scale_(tensor, prescale)
    else:
        send = _source(tensor, rdtype, prescale)
        if output is tensor:
            recv = send if send is not tensor else send.clone()
        else:
            recv = output if direct else torch.empty(
                tensor.shape, dtype=rdtype)
    s = ch.allreduce(send.data_ptr(), recv.data_ptr(), send.numel(), wdt,
                     wop, start)

    def finish():
        scale_(recv, postscale)
        if recv is not output:
            output.copy_(recv)
        return output
    return launch([s] if s else [], finish, (send, recv, tensor), start)


def grouped_allreduce(tensors, outputs, op, prescale, postscale, process_set,
                      start):
    """Reduces tensors[i] into outputs[i]; one weft call per dtype."""
    what = "grouped_allreduce"
    if not tensors:
        raise ValueError("%s: the list of tensors is empty" % what)
    ch = basics.channel_of(process_set, what)
    op, prescale, postscale = _scaling(op, prescale, postscale, ch.size)
    groups = {}                         # reduce dtype -> [index], in order
    for i, t in enumerate(tensors):
        check_tensor(t, what)
        wdt, wop, rdtype = reduction(t, op, what)
        groups.setdefault((rdtype, wdt, wop), []).append(i)
    started, unpack = [], []
    for (rdtype, wdt, wop), idx in groups.items():
        flat = torch.cat([tensors[i].reshape(-1).to(rdtype) for i in idx]) \
            if len(idx) > 1 else _source(tensors[idx[0]], rdtype, 1.0) \
            .reshape(-1).clone()
        scale_(flat, prescale)
        s = ch.allreduce(flat.data_ptr(), flat.data_ptr(), flat.numel(),
                         wdt, wop, start)
        if s:
            started.append(s)
        unpack.append((flat, idx))

    def finish():
        for flat, idx in unpack:
            scale_(flat, postscale)
            at = 0
            for i in idx:
                n = tensors[i].numel()
                outputs[i].copy_(flat[at:at + n].view(tensors[i].shape))
                at += n
        return outputs
    return launch(started, finish, (unpack, tensors), start)


def _reducescatter_op(op, what):
    if op not in (Sum, Average):
        raise ValueError("%s supports hvd.Sum and hvd.Average, not %s" %
                         (what, op))
    reduce_ops.check(op)


def reducescatter(tensor, op, prescale, postscale, process_set, start):
    what = "reducescatter"
    _reducescatter_op(op, what)
    check_tensor(tensor, what)
    if tensor.dim() == 0:
        raise ValueError("%s: the tensor needs a first dimension to split "
                         "(got a 0-d tensor)" % what)
    ch = basics.channel_of(process_set, what)
    op, prescale, postscale = _scaling(op, prescale, postscale, ch.size)
    wdt, wop, rdtype = reduction(tensor, op, what)
    return _scatter_blocks([tensor], ch, wdt, wop, rdtype, prescale,
                           postscale, start, single=True)


def grouped_reducescatter(tensors, op, prescale, postscale, process_set,
                          start):
    what = "grouped_reducescatter"
    _reducescatter_op(op, what)
    if not tensors:
        raise ValueError("%s: the list of tensors is empty" % what)
    ch = basics.channel_of(process_set, what)
    op, prescale, postscale = _scaling(op, prescale, postscale, ch.size)
    groups = {}
    for i, t in enumerate(tensors):
        check_tensor(t, what)
        if t.dim() == 0:
            raise ValueError("%s: tensor %d is 0-d; each needs a first "
                             "dimension to split" % (what, i))
        wdt, wop, rdtype = reduction(t, op, what)
        groups.setdefault((rdtype, wdt, wop), []).append(i)
    results = [None] * len(tensors)
    parts = []
    for (rdtype, wdt, wop), idx in groups.items():
        parts.append((idx, _scatter_blocks([tensors[i] for i in idx], ch,
                                           wdt, wop, rdtype, prescale,
                                           postscale, start, single=False,
                                           handle=False)))
    started = [s for _, (ss, _, _) in parts for s in ss]

    def finish():
        for idx, (_, fin, _) in parts:
            for i, out in zip(idx, fin()):
                results[i] = out
        return results
    if start:
        return launch(started, finish, parts, True)
    for s in started:
        s.wait()
    return finish()


def _scatter_blocks(tensors, ch, wdt, wop, rdtype, prescale, postscale,
                    start, single, handle=True):
    """One weft reduce_scatter over tensors of one reduce dtype.  Rank r's
    block holds, tensor after tensor, the rows r receives, padded to the
    most any rank receives; without uneven splits a single tensor goes
    as it is."""
    n, me = ch.size, ch.rank
    plans = []
    count = 0
    for t in tensors:
        rows = split_rows(t.shape[0], n)
        plans.append((t, rows, max(rows), row_elements(t)))
        count += max(rows) * row_elements(t)
    even = len(tensors) == 1 and len(set(plans[0][1])) == 1
    if even:
        send = _source(tensors[0], rdtype, prescale)
    else:
        send = torch.zeros(n * count, dtype=rdtype)
        blocks = send.view(n, count)
        at = 0
        for t, rows, top, rowel in plans:
            flat = t.reshape(t.shape[0], rowel)
            first = 0
            for r in range(n):
                blocks[r, at:at + rows[r] * rowel].copy_(
                    flat[first:first + rows[r]].reshape(-1))
                first += rows[r]
            at += top * rowel
        scale_(send, prescale)
    recv = torch.empty(count, dtype=rdtype)
    s = ch.reduce_scatter(send.data_ptr(), recv.data_ptr(), count, wdt, wop,
                          start)

    def finish():
        scale_(recv, postscale)
        outs, at = [], 0
        for t, rows, top, rowel in plans:
            mine = recv[at:at + rows[me] * rowel]
            outs.append(mine.view((rows[me],) + tuple(t.shape[1:]))
                        .to(t.dtype))
            at += top * rowel
        return outs[0] if single else outs
    started = [s] if s else []
    if not handle:
        return started, finish, (send, recv, tensors)
    return launch(started, finish, (send, recv, tensors), start)
