"""hvd.DistributedOptimizer: the wrapped optimizer, with each gradient's
allreduce started from a backward hook as soon as its fusion bucket is
complete (grad_buckets.py), and step() waiting for them first.

The returned object is an instance of a subclass of the wrapped
optimizer's class (isinstance checks keep working) that shares the
wrapped optimizer's parameter groups and state.
"""
import warnings
from contextlib import contextmanager

import torch

from ..common import basics, config, reduce_ops
from ..common.fusion_plan import split_evenly
from ..common.process_sets import global_process_set
from ..common.reduce_ops import Average
from .compression import Compression
from .grad_buckets import GradBuckets


class DistributedOptimizerMixin:
    """What DistributedOptimizer adds to the wrapped optimizer's class."""

    def _hvd_init(self, named_parameters, compression,
                  backward_passes_per_step, op, gradient_predivide_factor,
                  groups, process_set):
        basics.state()          # raises when hvd.init() was not called
        params = [p for g in self.param_groups for p in g["params"]]
        _check_names(named_parameters, params)
        self.backward_passes_per_step = backward_passes_per_step
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.process_set = process_set
        self._hvd_synchronized = False
        self._hvd_should_sync = True
        self._hvd_params = [p for p in params if p.requires_grad]
        self._hvd_delay = [backward_passes_per_step] * len(self._hvd_params)
        self._hvd_hooks = []
        self._hvd_buckets = None
        if not process_set.included():
            return
        channel = basics.channel_of(process_set, "DistributedOptimizer")
        if channel.size == 1:
            return          # as Horovod: nothing to reduce
        self._hvd_buckets = GradBuckets(
            self._hvd_params, compression, config.fusion_threshold(),
            _group_indices(groups, self._hvd_params), op,
            gradient_predivide_factor, channel)
        for i, p in enumerate(self._hvd_params):
            self._hvd_hooks.append(p.register_post_accumulate_grad_hook(
                self._hvd_hook(i)))

    def _hvd_hook(self, i):
        def hook(_param):
            buckets = self._hvd_buckets
            if buckets.packed(i):
                raise AssertionError(
                    "DistributedOptimizer: a gradient was computed more than "
                    "backward_passes_per_step (%d) times before step(); "
                    "raise backward_passes_per_step to accumulate more "
                    "passes locally" % self.backward_passes_per_step)
            self._hvd_delay[i] -= 1
            if self._hvd_delay[i] == 0:
                buckets.ready(i)
        return hook

    def set_backward_passes_per_step(self, passes):
        self.backward_passes_per_step = passes
        self._hvd_delay = [passes] * len(self._hvd_params)

    def synchronize(self):
        """Waits for every gradient's allreduce and writes the results into
        the gradients (starting those no hook started)."""
        if self._hvd_buckets is not None:
            try:
                self._hvd_buckets.finish()
            finally:
                self._hvd_delay = [self.backward_passes_per_step] * \
                    len(self._hvd_params)
        self._hvd_synchronized = True

    @contextmanager
    def skip_synchronize(self):
        """step() inside this block does not synchronize (after an explicit
        synchronize(), e.g. to clip the reduced gradients)."""
        self._hvd_should_sync = False
        try:
            yield
        finally:
            self._hvd_should_sync = True

    def step(self, closure=None):
        if self._hvd_should_sync:
            if self._hvd_synchronized:
                warnings.warn(
                    "optimizer.step() called after optimizer.synchronize() "
                    "without optimizer.skip_synchronize(): the gradients are "
                    "reduced again, which costs time")
            self.synchronize()
        self._hvd_synchronized = False
        return super().step(closure)

    def zero_grad(self, *args, **kwargs):
        if self._hvd_buckets is not None and self._hvd_buckets.busy:
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but "
                "before optimizer.step() or optimizer.synchronize(): the "
                "gradients are being reduced")
        return super().zero_grad(*args, **kwargs)

    def load_state_dict(self, *args, **kwargs):
        if self._hvd_buckets is not None:
            self._hvd_buckets.reset()
        self._hvd_synchronized = False
        self._hvd_should_sync = True
        self._hvd_delay = [self.backward_passes_per_step] * \
            len(self._hvd_params)
        return super().load_state_dict(*args, **kwargs)


def _check_names(named_parameters, params):
    if named_parameters is None:
        return
    named = list(named_parameters)
    if any(not isinstance(x, tuple) or len(x) != 2 for x in named):
        raise ValueError("named_parameters should be a sequence of (name, "
                         "parameter) tuples, usually model.named_parameters()")
    seen, dups = set(), set()
    for name, _ in named:
        (dups if name in seen else seen).add(name)
    if dups:
        raise ValueError("Parameter names in named_parameters must be "
                         "unique; repeated: %s" % ", ".join(sorted(dups)))
    ids = {id(p) for _, p in named}
    missing = [i for i, p in enumerate(params) if id(p) not in ids]
    if missing:
        raise ValueError("named_parameters was given, but parameters %s of "
                         "the optimizer are not named in it" % missing)


def _group_indices(groups, params):
    if groups is None:
        return None
    if isinstance(groups, int):
        if groups <= 0:
            raise ValueError("groups must be a positive integer or a list of "
                             "lists of parameters, got %r" % groups)
        return split_evenly(list(range(len(params))), groups)
    index = {id(p): i for i, p in enumerate(params)}
    out, seen = [], set()
    for g in groups:
        ids = []
        for p in g:
            if not isinstance(p, torch.Tensor):
                raise ValueError("groups must consist of torch.Tensor")
            if id(p) in seen:
                raise ValueError("A parameter can only appear once in groups")
            seen.add(id(p))
            if id(p) in index:
                ids.append(index[id(p)])
        out.append(ids)
    return out


def DistributedOptimizer(optimizer, named_parameters=None,
                         compression=Compression.none,
                         backward_passes_per_step=1, op=Average,
                         gradient_predivide_factor=1.0, num_groups=0,
                         groups=None, sparse_as_dense=False,
                         process_set=global_process_set):
    """Wraps `optimizer` so that step() applies gradients averaged (by
    default) over the process set.

    compression               Compression.none or Compression.fp16
    backward_passes_per_step  backward passes accumulated locally before
                              the gradients are reduced
    op                        Average, Sum, Min, Max or Product
    gradient_predivide_factor with Average: scale by 1/f before the sum
                              and f/size after
    groups                    a number of groups, or lists of parameters
                              reduced together (in place of the automatic
                              fusion by HOROVOD_FUSION_THRESHOLD)
    sparse_as_dense           accepted; sparse gradients are refused
    """
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with "
                         "op != Average")
    reduce_ops.check(op)
    if backward_passes_per_step <= 0:
        raise ValueError("backward_passes_per_step must be > 0")
    if num_groups and groups is None:
        warnings.warn("num_groups is replaced by groups", DeprecationWarning)
        groups = num_groups
    base = optimizer.__class__
    cls = type(base.__name__, (DistributedOptimizerMixin, base), {})
    wrapped = cls.__new__(cls)
    wrapped.__dict__.update(optimizer.__dict__)
    wrapped._hvd_init(named_parameters, compression,
                      backward_passes_per_step, op,
                      gradient_predivide_factor, groups, process_set)
    return wrapped
