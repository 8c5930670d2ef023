"""Horovod's helpers over the collectives: broadcasting parameters,
optimizer state and picklable objects, gathering objects.

Many tensors are broadcast as one: the root packs them into one buffer,
one weft broadcast moves it, the others unpack it.  Objects travel
pickled (the standard pickle; Horovod uses cloudpickle, which can also
pickle lambdas and local classes).
"""

import torch

from ... import _lib
from ..common import basics
from ..common.process_sets import global_process_set
from ..common.objects import allgather_object as _allgather_object, \
    broadcast_object as _broadcast_object
from .tensors import as_bytes, check_tensor


def _broadcast_tensors(tensors, root_rank, process_set, what):
    """Broadcasts the list of tensors in place, as one buffer."""
    ch = basics.channel_of(process_set, what)
    root = ch.local_rank_of(root_rank, what)
    for t in tensors:
        check_tensor(t, what)
    total = sum(t.numel() * t.element_size() for t in tensors)
    buf = torch.empty(total, dtype=torch.uint8)
    if ch.rank == root:
        at = 0
        for t in tensors:
            b = as_bytes(t.detach().contiguous())
            buf[at:at + b.numel()].copy_(b)
            at += b.numel()
    ch.broadcast(buf.data_ptr(), total, _lib.UINT8, root)
    if ch.rank != root:
        at = 0
        with torch.no_grad():
            for t in tensors:
                n = t.numel() * t.element_size()
                dst = t if t.is_contiguous() else torch.empty_like(
                    t, memory_format=torch.contiguous_format)
                as_bytes(dst).copy_(buf[at:at + n])
                if dst is not t:
                    t.copy_(dst)
                at += n


def broadcast_parameters(params, root_rank, process_set=global_process_set):
    """Overwrites every rank's parameters with root_rank's.  `params`: a
    dict such as model.state_dict() (broadcast in key order), or a list
    such as model.parameters() or model.named_parameters()."""
    if isinstance(params, dict):
        tensors = [v for _, v in sorted(params.items())]
    elif isinstance(params, (list, tuple)) or hasattr(params, "__iter__"):
        tensors = [p[1] if isinstance(p, tuple) else p for p in params]
    else:
        raise ValueError("broadcast_parameters: invalid params of type %s "
                         "(expected a dict or a list)" % type(params).__name__)
    _broadcast_tensors([t for t in tensors if t is not None], root_rank,
                       process_set, "broadcast_parameters")


def broadcast_object(obj, root_rank=0, name=None,
                     process_set=global_process_set):
    """root_rank's `obj`, pickled, on every rank."""
    return _broadcast_object(obj, root_rank, process_set)


def allgather_object(obj, name=None, process_set=global_process_set):
    """Every rank's `obj`, pickled, as a list in rank order."""
    return _allgather_object(obj, process_set)


def _base_step(optimizer):
    """A step of the wrapped optimizer class itself: a DistributedOptimizer
    would allreduce, which only this rank is doing here."""
    from .optimizer import DistributedOptimizerMixin
    if isinstance(optimizer, DistributedOptimizerMixin):
        super(DistributedOptimizerMixin, optimizer).step()
    else:
        optimizer.step()


def broadcast_optimizer_state(optimizer, root_rank, model=None,
                              process_set=global_process_set):
    """Overwrites every rank's optimizer state (tensors such as momentum
    buffers and Adam's moments, scalars, and the options of each parameter
    group, the learning rate among them) with root_rank's.

    An optimizer that has not stepped yet has no state; it gets its state
    from one step on zero gradients, as in Horovod, with the parameters
    restored afterwards (a step on zero gradients can still move them, by
    weight decay).  `model` is accepted for Horovod's signature."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state (its "
                         "state is nested closures, as in Horovod)")
    params = [p for g in optimizer.param_groups for p in g["params"]]
    if not optimizer.state:
        saved = [p.detach().clone() for p in params]
        for p in params:
            if p.requires_grad:
                p.grad = torch.zeros_like(p)
        _base_step(optimizer)
        with torch.no_grad():
            for p, s in zip(params, saved):
                p.copy_(s)
    tensors, scalars = [], {}
    for gi, group in enumerate(optimizer.param_groups):
        for key, value in group.items():
            if key != "params":
                scalars[("option", gi, key)] = value
        for pi, p in enumerate(group["params"]):
            for key, value in optimizer.state.get(p, {}).items():
                if torch.is_tensor(value):
                    tensors.append(value)
                else:
                    scalars[("state", gi, pi, key)] = value
    _broadcast_tensors(tensors, root_rank, process_set,
                       "broadcast_optimizer_state")
    scalars = _broadcast_object(scalars, root_rank, process_set)
    for key, value in scalars.items():
        if key[0] == "option":
            optimizer.param_groups[key[1]][key[2]] = value
        else:
            p = optimizer.param_groups[key[1]]["params"][key[2]]
            optimizer.state[p][key[3]] = value
