"""Horovod's collectives on torch tensors, with its names and arguments.

Every collective has a blocking form, which returns its result, and an
`_async` form, which returns a handle for poll() and synchronize(); a
trailing underscore means in place.  The blocking forms run weft's
blocking calls in the calling thread; the async ones start weft's
non-blocking operations, which weft's progress thread moves on while the
caller computes.

`name` is accepted everywhere and not used: Horovod matches operations of
different ranks by name, weft by order, so every rank must call the
collectives of a process set in the same order (weft reports ranks that
do not with a mismatch error naming both calls).
"""
import torch

from ..common import basics, reduce_ops
from ..common.process_sets import global_process_set
from ..common.reduce_ops import Average
from . import autograd, movement, reductions
from .compression import Compression
from .tensors import check_tensor


def _recording(tensors):
    return torch.is_grad_enabled() and any(
        getattr(t, "requires_grad", False) for t in tensors)


def _out_of_place(t, what="hvd"):
    check_tensor(t, what)
    return torch.empty_like(t, memory_format=torch.contiguous_format)


# -- allreduce ----------------------------------------------------------------

def allreduce_async(tensor, average=None, name=None, op=None,
                    prescale_factor=1.0, postscale_factor=1.0,
                    process_set=global_process_set):
    """Starts reducing `tensor` over the process set into a new tensor;
    returns a handle.  op: Average (default), Sum, Min, Max, Product."""
    op = reduce_ops.resolve(op, average)
    return reductions.allreduce(tensor, _out_of_place(tensor), op,
                                prescale_factor, postscale_factor,
                                process_set, True)


def allreduce(tensor, average=None, name=None, compression=Compression.none,
              op=None, prescale_factor=1.0, postscale_factor=1.0,
              process_set=global_process_set):
    """The reduction of `tensor` over the process set, as a new tensor;
    differentiable."""
    op = reduce_ops.resolve(op, average)
    compressed, ctx = compression.compress(tensor)
    if _recording([compressed]):
        out = autograd.Allreduce.apply(compressed, op, prescale_factor,
                                       postscale_factor, process_set)
    else:
        out = reductions.allreduce(compressed,
                                   _out_of_place(compressed, "allreduce"), op,
                                   prescale_factor, postscale_factor,
                                   process_set, False)
    return compression.decompress(out, ctx)


def allreduce_async_(tensor, average=None, name=None, op=None,
                     prescale_factor=1.0, postscale_factor=1.0,
                     process_set=global_process_set):
    op = reduce_ops.resolve(op, average)
    return reductions.allreduce(tensor, tensor, op, prescale_factor,
                                postscale_factor, process_set, True)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """Reduces `tensor` in place and returns it."""
    op = reduce_ops.resolve(op, average)
    return reductions.allreduce(tensor, tensor, op, prescale_factor,
                                postscale_factor, process_set, False)


def grouped_allreduce_async(tensors, average=None, name=None, op=None,
                            prescale_factor=1.0, postscale_factor=1.0,
                            process_set=global_process_set):
    op = reduce_ops.resolve(op, average)
    return reductions.grouped_allreduce(
        list(tensors), [_out_of_place(t) for t in tensors], op,
        prescale_factor, postscale_factor, process_set, True)


def grouped_allreduce(tensors, average=None, name=None,
                      compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set):
    """The reductions of a list of tensors, fused into one weft call per
    dtype; differentiable."""
    op = reduce_ops.resolve(op, average)
    pairs = [compression.compress(t) for t in tensors]
    compressed = [c for c, _ in pairs]
    if _recording(compressed):
        outs = autograd.GroupedAllreduce.apply(
            op, prescale_factor, postscale_factor, process_set, *compressed)
    else:
        outs = reductions.grouped_allreduce(
            compressed, [_out_of_place(t) for t in compressed], op,
            prescale_factor, postscale_factor, process_set, False)
    return [compression.decompress(o, ctx) for o, (_, ctx) in
            zip(outs, pairs)]


def grouped_allreduce_async_(tensors, average=None, name=None, op=None,
                             prescale_factor=1.0, postscale_factor=1.0,
                             process_set=global_process_set):
    op = reduce_ops.resolve(op, average)
    tensors = list(tensors)
    return reductions.grouped_allreduce(tensors, tensors, op,
                                        prescale_factor, postscale_factor,
                                        process_set, True)


def grouped_allreduce_(tensors, average=None, name=None, op=None,
                       prescale_factor=1.0, postscale_factor=1.0,
                       process_set=global_process_set):
    op = reduce_ops.resolve(op, average)
    tensors = list(tensors)
    return reductions.grouped_allreduce(tensors, tensors, op,
                                        prescale_factor, postscale_factor,
                                        process_set, False)


# -- allgather ----------------------------------------------------------------

def allgather_async(tensor, name=None, process_set=global_process_set):
    return movement.allgather(tensor, process_set, True)


def allgather(tensor, name=None, process_set=global_process_set):
    """`tensor` of every rank concatenated along the first dimension,
    which may differ between ranks; differentiable."""
    if _recording([tensor]):
        return autograd.Allgather.apply(tensor, process_set)
    return movement.allgather(tensor, process_set, False)


def grouped_allgather_async(tensors, name=None,
                            process_set=global_process_set):
    return movement.grouped_allgather(tensors, process_set, True)


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    if _recording(tensors):
        return list(autograd.GroupedAllgather.apply(process_set, *tensors))
    return movement.grouped_allgather(tensors, process_set, False)


# -- broadcast ----------------------------------------------------------------

def broadcast_async(tensor, root_rank, name=None,
                    process_set=global_process_set):
    return movement.broadcast(tensor, _out_of_place(tensor), root_rank,
                              process_set, True)


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """root_rank's `tensor` (a global rank) as a new tensor on every rank;
    differentiable."""
    if _recording([tensor]):
        return autograd.Broadcast.apply(tensor, root_rank, process_set)
    return movement.broadcast(tensor, _out_of_place(tensor), root_rank,
                              process_set, False)


def broadcast_async_(tensor, root_rank, name=None,
                     process_set=global_process_set):
    return movement.broadcast(tensor, tensor, root_rank, process_set, True)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    return movement.broadcast(tensor, tensor, root_rank, process_set, False)


# -- alltoall -----------------------------------------------------------------

def alltoall_async(tensor, splits=None, name=None,
                   process_set=global_process_set):
    """A handle whose synchronize() gives (output, received splits)."""
    return movement.alltoall(tensor, splits, process_set, True)


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Rows splits[r] of `tensor` go to rank r (equal shares without
    splits).  Returns the rows received, and, when splits were given, the
    rows received from each rank (int32)."""
    if _recording([tensor]):
        out, received = autograd.Alltoall.apply(tensor, splits, process_set)
    else:
        out, received = movement.alltoall(tensor, splits, process_set, False)
    return out if splits is None else (out, received)


# -- reducescatter ------------------------------------------------------------

def reducescatter_async(tensor, name=None, op=Average,
                        process_set=global_process_set, prescale_factor=1.0,
                        postscale_factor=1.0):
    reduce_ops.check(op)
    return reductions.reducescatter(tensor, op, prescale_factor,
                                    postscale_factor, process_set, True)


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0,
                  postscale_factor=1.0):
    """The reduction of `tensor` over the process set, split along the
    first dimension: rank r keeps its share (the first rows % size ranks
    one row more).  op: Average (default) or Sum; differentiable."""
    reduce_ops.check(op)
    compressed, ctx = compression.compress(tensor)
    if _recording([compressed]):
        out = autograd.Reducescatter.apply(compressed, op, prescale_factor,
                                           postscale_factor, process_set)
    else:
        out = reductions.reducescatter(compressed, op, prescale_factor,
                                       postscale_factor, process_set, False)
    return compression.decompress(out, ctx)


def grouped_reducescatter_async(tensors, name=None, op=Average,
                                process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0):
    reduce_ops.check(op)
    return reductions.grouped_reducescatter(list(tensors), op,
                                            prescale_factor,
                                            postscale_factor, process_set,
                                            True)


def grouped_reducescatter(tensors, name=None, compression=Compression.none,
                          op=Average, process_set=global_process_set,
                          prescale_factor=1.0, postscale_factor=1.0):
    reduce_ops.check(op)
    pairs = [compression.compress(t) for t in tensors]
    compressed = [c for c, _ in pairs]
    if _recording(compressed):
        outs = autograd.GroupedReducescatter.apply(
            op, prescale_factor, postscale_factor, process_set, *compressed)
    else:
        outs = reductions.grouped_reducescatter(
            compressed, op, prescale_factor, postscale_factor, process_set,
            False)
    return [compression.decompress(o, ctx) for o, (_, ctx) in
            zip(outs, pairs)]


# -- handles ------------------------------------------------------------------

def poll(handle):
    """Whether the operation of `handle` has completed; synchronize() then
    returns at once."""
    return basics.state().handles.poll(handle)


def synchronize(handle):
    """Waits for the operation of `handle` and returns its output (a
    tensor, a list for grouped operations, (output, received splits) for
    alltoall)."""
    return basics.state().handles.synchronize(handle)
