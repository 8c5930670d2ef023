"""The collectives as autograd functions, with Horovod's gradients:

  allreduce      the gradient is allreduced with the same op and factors
  allgather      the gradient is averaged over the ranks, and each rank
                 keeps the rows it contributed
  broadcast      the gradient is averaged; it reaches the root only
  alltoall       the gradient goes back through alltoall with the
                 received splits
  reducescatter  the gradient is allgathered (times the set's size for
                 Sum, and the factors)

ops.py uses them only when a tensor requires a gradient and autograd is
recording, so plain calls skip autograd's cost.
"""
import torch

from ..common import basics, records
from ..common.reduce_ops import Average, Sum
from . import movement, reductions


def _allreduce(t, op, pre, post, ps):
    return reductions.allreduce(t, torch.empty_like(
        t, memory_format=torch.contiguous_format), op, pre, post, ps, False)


class Allreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, op, prescale, postscale, process_set):
        ctx.args = (op, prescale, postscale, process_set)
        return _allreduce(tensor, op, prescale, postscale, process_set)

    @staticmethod
    def backward(ctx, grad):
        return (_allreduce(grad.contiguous(), *ctx.args),) + (None,) * 4


class GroupedAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, op, prescale, postscale, process_set, *tensors):
        ctx.args = (op, prescale, postscale, process_set)
        outs = [torch.empty_like(t, memory_format=torch.contiguous_format)
                for t in tensors]
        return tuple(reductions.grouped_allreduce(
            list(tensors), outs, op, prescale, postscale, process_set,
            False))

    @staticmethod
    def backward(ctx, *grads):
        grads = [g.contiguous() for g in grads]
        outs = [torch.empty_like(g) for g in grads]
        return (None,) * 4 + tuple(reductions.grouped_allreduce(
            grads, outs, *ctx.args, False))


def _my_rows(process_set, rows):
    """(offset, rows) of this rank's part of an allgather's output."""
    ch = basics.channel_of(process_set, "allgather")
    every = records.exchange_records(ch, [rows], "allgather backward")
    mine = ch.rank
    return sum(r[0] for r in every[:mine]), rows


class Allgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, process_set):
        ctx.rows = tensor.shape[0]
        ctx.process_set = process_set
        return movement.allgather(tensor, process_set, False)

    @staticmethod
    def backward(ctx, grad):
        ps = ctx.process_set
        avg = _allreduce(grad.contiguous(), Average, 1.0, 1.0, ps)
        first, rows = _my_rows(ps, ctx.rows)
        return avg.narrow(0, first, rows), None


class GroupedAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, process_set, *tensors):
        ctx.rows = [t.shape[0] for t in tensors]
        ctx.process_set = process_set
        return tuple(movement.grouped_allgather(list(tensors), process_set,
                                                False))

    @staticmethod
    def backward(ctx, *grads):
        ps = ctx.process_set
        grads = [g.contiguous() for g in grads]
        avg = reductions.grouped_allreduce(
            grads, [torch.empty_like(g) for g in grads], Average, 1.0, 1.0,
            ps, False)
        ch = basics.channel_of(ps, "grouped_allgather")
        every = records.exchange_records(ch, ctx.rows,
                                          "grouped_allgather backward")
        out = []
        for i, g in enumerate(avg):
            first = sum(r[i] for r in every[:ch.rank])
            out.append(g.narrow(0, first, ctx.rows[i]))
        return (None,) + tuple(out)


class Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, process_set):
        ctx.root_rank, ctx.process_set = root_rank, process_set
        out = torch.empty_like(tensor, memory_format=torch.contiguous_format)
        return movement.broadcast(tensor, out, root_rank, process_set, False)

    @staticmethod
    def backward(ctx, grad):
        avg = _allreduce(grad.contiguous(), Average, 1.0, 1.0,
                         ctx.process_set)
        if basics.rank() != ctx.root_rank:
            avg.zero_()
        return avg, None, None


class Alltoall(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, process_set):
        out, received = movement.alltoall(tensor, splits, process_set, False)
        ctx.received, ctx.process_set = received, process_set
        ctx.mark_non_differentiable(received)
        return out, received

    @staticmethod
    def backward(ctx, grad, _):
        back, _ = movement.alltoall(grad.contiguous(), ctx.received,
                                    ctx.process_set, False)
        return back, None, None


def _scaled_allgather(grad, op, pre, post, ps):
    g = grad.contiguous()
    factor = pre * post * (basics.channel_of(ps, "reducescatter").size
                           if op == Sum else 1.0)
    if factor != 1.0:
        g = g * factor
    return g


class Reducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, op, prescale, postscale, process_set):
        ctx.args = (op, prescale, postscale, process_set)
        return reductions.reducescatter(tensor, op, prescale, postscale,
                                        process_set, False)

    @staticmethod
    def backward(ctx, grad):
        op, pre, post, ps = ctx.args
        g = _scaled_allgather(grad, op, pre, post, ps)
        return (movement.allgather(g, ps, False),) + (None,) * 4


class GroupedReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, op, prescale, postscale, process_set, *tensors):
        ctx.args = (op, prescale, postscale, process_set)
        return tuple(reductions.grouped_reducescatter(
            list(tensors), op, prescale, postscale, process_set, False))

    @staticmethod
    def backward(ctx, *grads):
        op, pre, post, ps = ctx.args
        gs = [_scaled_allgather(g, op, pre, post, ps) for g in grads]
        return (None,) * 4 + tuple(movement.grouped_allgather(gs, ps, False))
