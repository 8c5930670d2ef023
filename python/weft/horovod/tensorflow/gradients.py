"""DistributedGradientTape and DistributedOptimizer: gradients averaged
(by default) over a process set before they are used.

The gradients are fused as the torch module fuses them
(common/fusion_plan.py): packed, last first, into buckets of at most
HOROVOD_FUSION_THRESHOLD bytes of one dtype, one grouped allreduce op per
bucket, planned when the gradients are reduced (at trace time inside a
tf.function).  Sparse gradients (tf.IndexedSlices, from embeddings) are
made dense first, as Horovod's sparse_as_dense=True does.
"""
import tensorflow as tf

from ..common import basics, config, reduce_ops
from ..common.fusion_plan import plan_buckets, split_evenly
from ..common.process_sets import global_process_set
from ..common.reduce_ops import Average
from .compression import Compression
from .ops import _allreduce_raw


class GradientReducer:
    """How one tape or optimizer reduces its gradients."""

    def __init__(self, compression, op, gradient_predivide_factor, groups,
                 process_set):
        reduce_ops.check(op)
        if gradient_predivide_factor != 1.0 and op != Average:
            raise ValueError("gradient_predivide_factor not supported with "
                             "op != Average")
        self.compression = compression
        self.op = op
        self.predivide = gradient_predivide_factor
        self.groups = groups
        self.process_set = process_set

    def active(self):
        """False where there is nothing to reduce (one rank, or this rank
        outside the process set), as in Horovod."""
        if not self.process_set.included():
            return False
        return basics.channel_of(self.process_set, "gradients").size > 1

    def reduce(self, grads, variables=None):
        """The gradients reduced (None stays None); one op per bucket."""
        if not self.active():
            return list(grads)
        out = list(grads)
        idx = [i for i, g in enumerate(grads) if g is not None]
        dense = [tf.convert_to_tensor(grads[i]) for i in idx]
        sent = [self.compression.compress(g) for g in dense]
        entries = [(_nbytes(s), s.dtype) for s, _ in sent]
        for bucket in plan_buckets(entries, config.fusion_threshold(),
                                   self._group_indices(idx, variables)):
            reduced = _allreduce_raw(
                [sent[j][0] for j in bucket], self.op, 1.0 / self.predivide,
                self.predivide, self.process_set)
            for j, r in zip(bucket, reduced):
                out[idx[j]] = self.compression.decompress(r, sent[j][1])
        return out

    def _group_indices(self, idx, variables):
        """groups= as positions among the gradients that are not None."""
        if self.groups is None:
            return None
        if isinstance(self.groups, int):
            return split_evenly(list(range(len(idx))), self.groups)
        if variables is None:
            raise ValueError("groups of variables need the variables of the "
                             "gradients")
        where = {id(variables[i]): j for j, i in enumerate(idx)}
        return [[where[id(v)] for v in g if id(v) in where]
                for g in self.groups]


def _nbytes(t):
    n = t.shape.num_elements()
    return (n if n is not None else 0) * t.dtype.size


def _check_groups(groups, num_groups):
    if num_groups and groups is None:
        groups = num_groups
    if isinstance(groups, int) and groups <= 0:
        raise ValueError("groups must be a positive integer or a list of "
                         "lists of variables, got %r" % groups)
    if groups is not None and not isinstance(groups, int):
        seen = set()
        for g in groups:
            for v in g:
                if id(v) in seen:
                    raise ValueError("A variable can only appear once in "
                                     "groups")
                seen.add(id(v))
    return groups


class DistributedGradientTape:
    """A tf.GradientTape whose gradient() returns the gradients reduced
    over the process set.  Wraps a tape that recorded, or is about to:

        with tf.GradientTape() as tape:
            loss = ...
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
    """

    def __init__(self, gradtape, device_dense="", device_sparse="",
                 compression=Compression.none, sparse_as_dense=False,
                 op=Average, gradient_predivide_factor=1.0, num_groups=0,
                 groups=None, process_set=global_process_set):
        basics.state()
        self._tape = gradtape
        self._reducer = GradientReducer(
            compression, op, gradient_predivide_factor,
            _check_groups(groups, num_groups), process_set)

    def __enter__(self):
        self._tape.__enter__()
        return self

    def __exit__(self, *exc):
        return self._tape.__exit__(*exc)

    def __getattr__(self, name):
        return getattr(self._tape, name)

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=tf.UnconnectedGradients.NONE):
        grads = self._tape.gradient(target, sources, output_gradients,
                                    unconnected_gradients)
        flat_sources = tf.nest.flatten(sources)
        flat = tf.nest.flatten(grads, expand_composites=False)
        reduced = self._reducer.reduce(flat, flat_sources)
        return tf.nest.pack_sequence_as(grads, reduced)


class _KerasOptimizerMixin:
    """What DistributedOptimizer adds to a Keras optimizer's class: the
    gradients given to apply_gradients are reduced first; with
    backward_passes_per_step = N they are summed locally and reduced and
    applied on every N-th call only."""

    def _hvd_setup(self, reducer, passes, average_aggregated):
        self._hvd_reducer = reducer
        self._hvd_passes = passes
        self._hvd_average_aggregated = average_aggregated
        self._hvd_acc = None
        self._hvd_count = None

    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        gv = list(grads_and_vars)
        grads = [g for g, _ in gv]
        variables = [v for _, v in gv]
        if self._hvd_passes == 1:
            reduced = self._hvd_reducer.reduce(grads, variables)
            return super().apply_gradients(zip(reduced, variables), *args,
                                           **kwargs)
        return self._hvd_aggregate(grads, variables, args, kwargs)

    def _hvd_aggregate(self, grads, variables, args, kwargs):
        if self._hvd_acc is None:
            with tf.init_scope():
                self._hvd_acc = [
                    tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False)
                    if g is not None else None
                    for g, v in zip(grads, variables)]
                self._hvd_count = tf.Variable(0, dtype=tf.int64,
                                              trainable=False)
            if hasattr(self, "build") and not getattr(self, "_built", True):
                self.build(variables)
        for a, g in zip(self._hvd_acc, grads):
            if a is not None:
                a.assign_add(tf.convert_to_tensor(g))
        count = self._hvd_count.assign_add(1)
        n = self._hvd_passes

        def apply():
            summed = [None if a is None else a.read_value()
                      for a in self._hvd_acc]
            if self._hvd_average_aggregated:
                summed = [None if s is None else s / tf.cast(n, s.dtype)
                          for s in summed]
            reduced = self._hvd_reducer.reduce(summed, variables)
            pairs = [(g, v) for g, v in zip(reduced, variables)
                     if g is not None]
            super(_KerasOptimizerMixin, self).apply_gradients(
                pairs, *args, **kwargs)
            for a in self._hvd_acc:
                if a is not None:
                    a.assign(tf.zeros_like(a))
            return tf.constant(True)

        return tf.cond(tf.equal(count % n, 0), apply,
                       lambda: tf.constant(False))


class _V1OptimizerMixin:
    """What DistributedOptimizer adds to a tf.compat.v1.train.Optimizer:
    compute_gradients returns the reduced gradients."""

    def _hvd_setup(self, reducer, passes, average_aggregated):
        if passes != 1:
            raise ValueError("backward_passes_per_step > 1 is supported for "
                             "Keras optimizers only")
        self._hvd_reducer = reducer

    def compute_gradients(self, *args, **kwargs):
        gv = super().compute_gradients(*args, **kwargs)
        grads = self._hvd_reducer.reduce([g for g, _ in gv],
                                         [v for _, v in gv])
        return list(zip(grads, [v for _, v in gv]))


def DistributedOptimizer(optimizer, name=None, use_locking=False,
                         device_dense="", device_sparse="",
                         compression=Compression.none,
                         sparse_as_dense=False, backward_passes_per_step=1,
                         op=Average, gradient_predivide_factor=1.0,
                         average_aggregated_gradients=False, num_groups=0,
                         groups=None, process_set=global_process_set):
    """A copy of `optimizer` (a Keras optimizer: tf_keras's, Keras 3's, or
    a tf.compat.v1.train.Optimizer) whose gradients are reduced over the
    process set before they are applied.

    compression               Compression.none or Compression.fp16
    backward_passes_per_step  apply_gradients calls summed locally before
                              one reduction and one update (Keras)
    average_aggregated_gradients  divide that sum by the number of passes
    op                        Average, Sum, Min, Max or Product
    gradient_predivide_factor with Average: scale by 1/f before the sum
                              and f/size after
    groups                    a number of groups, or lists of variables
                              reduced together (in place of the fusion by
                              HOROVOD_FUSION_THRESHOLD)
    """
    basics.state()
    if backward_passes_per_step <= 0:
        raise ValueError("backward_passes_per_step must be > 0")
    reducer = GradientReducer(compression, op, gradient_predivide_factor,
                              _check_groups(groups, num_groups), process_set)
    base = optimizer.__class__
    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        cls = type(base.__name__, (_V1OptimizerMixin, base), {})
        wrapped = cls.__new__(cls)
        wrapped.__dict__.update(optimizer.__dict__)
    else:
        # A Keras optimizer is rebuilt from its config, as a new object of
        # the subclass: its variables are created at its first step.
        cls = type(base.__name__, (_KerasOptimizerMixin, base), {})
        wrapped = cls.from_config(optimizer.get_config())
    wrapped._hvd_setup(reducer, backward_passes_per_step,
                       average_aggregated_gradients)
    return wrapped
