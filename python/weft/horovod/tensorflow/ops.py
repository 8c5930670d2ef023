"""Horovod's TensorFlow collectives on weft, eager and in tf.function.

Each collective is one tf.numpy_function op (stateful, so that it is
never pruned, folded or duplicated) running common/arrays.py on the
tensors' numpy views.  Eagerly it runs at once; in a tf.function it is a
node of the graph that calls back into Python when the graph runs.
tf.function chains stateful ops in program order (automatic control
dependencies), so the collectives of a graph run in the order the code
wrote them, on every rank: what weft needs, as it matches calls by order.
What this route cannot do: XLA (jit_compile=True) has no kernel for the
Python callback, and a graph that holds one cannot be saved and served
without this Python process (SavedModel keeps no Python).

Gradients (tf.custom_gradient) are the gradients of the sum of every
rank's loss: an allreduce's gradient is the allreduce of the gradient
with the same op; a broadcast's reaches the root only, summed over
ranks; an allgather's is the summed gradient's rows of this rank; an
alltoall's goes back through the reverse alltoall; a reducescatter's
is the allgather of the gradient (divided by the size for Average).
"""
import numpy as np
import tensorflow as tf

from ..common import arrays, basics, reduce_ops
from ..common.process_sets import global_process_set
from ..common.records import alltoall_splits
from ..common.reduce_ops import Average, Sum
from .compression import Compression

_DIFFERENTIABLE_OPS = (Average, Sum)


def _channel(process_set, what):
    return basics.channel_of(process_set, what)


def _call(fn, inputs, touts, name):
    """One stateful numpy_function over `inputs`: the collective `fn`."""
    out = tf.numpy_function(fn, list(inputs), list(touts), stateful=True,
                            name=name)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _floating(tensors):
    return all(t.dtype.is_floating for t in tensors)


def _check_tensors(tensors, what):
    out = []
    for t in tensors:
        if isinstance(t, tf.IndexedSlices):
            raise ValueError("%s: IndexedSlices are handled by allreduce "
                             "only" % what)
        out.append(tf.convert_to_tensor(t))
    if not out:
        raise ValueError("%s: the list of tensors is empty" % what)
    return out


def _same_shape(x):
    return x.shape


def _rows_differ(x):
    """The shape of a result whose first dimension is known only when the
    op has run."""
    return [None] + x.shape[1:].as_list() if x.shape.rank is not None \
        else None


def _op(tensors, run, name, shape_of, grad=None):
    """The collective `run` over the list `tensors` as one op, each result
    shaped by shape_of(its input); differentiable with `grad` (the
    gradients of the results -> those of the inputs) when every tensor is
    floating."""
    def forward(xs):
        ys = _call(run, xs, [x.dtype for x in xs], name)
        for x, y in zip(xs, ys):
            y.set_shape(shape_of(x))
        return ys

    if grad is None or not _floating(tensors):
        return forward(tensors)

    @tf.custom_gradient
    def differentiable(*xs):
        return forward(list(xs)), \
            lambda *dys: grad([tf.convert_to_tensor(d) for d in dys])
    return list(differentiable(*tensors))


# -- reductions --------------------------------------------------------------

def _allreduce_raw(tensors, op, prescale, postscale, process_set):
    """Allreduce of a list of tensors as one op, with gradients for Sum
    and Average."""
    ch = _channel(process_set, "allreduce")
    for t in tensors:
        arrays.weft_dtype(t.dtype.as_numpy_dtype, op, "allreduce")

    def run(*xs):
        return arrays.allreduce(list(xs), op, prescale, postscale,
                                _channel(process_set, "allreduce"))

    if ch.size == 1 and prescale == 1.0 and postscale == 1.0:
        return [tf.identity(t) for t in tensors]   # as Horovod: a copy
    return _op(tensors, run, "WeftAllreduce", _same_shape,
               (lambda dys: _allreduce_raw(dys, op, prescale, postscale,
                                           process_set))
               if op in _DIFFERENTIABLE_OPS else None)


def allreduce(tensor, average=None, device_dense="", device_sparse="",
              compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0, name=None,
              process_set=global_process_set, ignore_name_scope=False):
    """The tensor reduced over the process set (Average by default).  An
    IndexedSlices is allgathered (values and indices), as Horovod does;
    Average then divides the values by the size."""
    op = reduce_ops.resolve(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        if op not in (Average, Sum):
            raise ValueError("allreduce of IndexedSlices supports Average "
                             "and Sum, not %s" % op)
        values = allgather(tensor.values, process_set=process_set)
        indices = allgather(tensor.indices, process_set=process_set)
        if op == Average:
            values = values / tf.cast(_channel(process_set, "allreduce")
                                      .size, values.dtype)
        return tf.IndexedSlices(values, indices,
                                dense_shape=tensor.dense_shape)
    t = tf.convert_to_tensor(tensor)
    sent, ctx = compression.compress(t)
    out = _allreduce_raw([sent], op, prescale_factor, postscale_factor,
                         process_set)[0]
    return compression.decompress(out, ctx)


def grouped_allreduce(tensors, average=None, device_dense="",
                      device_sparse="", compression=Compression.none,
                      op=None, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set):
    """Each tensor reduced over the process set, as one op (one weft call
    per dtype)."""
    op = reduce_ops.resolve(op, average)
    ts = _check_tensors(tensors, "grouped_allreduce")
    sent = [compression.compress(t) for t in ts]
    outs = _allreduce_raw([s for s, _ in sent], op, prescale_factor,
                          postscale_factor, process_set)
    return [compression.decompress(o, c) for o, (_, c) in zip(outs, sent)]


def _reducescatter_raw(tensors, op, prescale, postscale, process_set):
    what = "reducescatter"
    ch = _channel(process_set, what)
    if op not in (Sum, Average):
        raise ValueError("%s supports hvd.Sum and hvd.Average, not %s" %
                         (what, op))
    for t in tensors:
        if t.shape.rank == 0:
            raise ValueError("%s: the tensor needs a first dimension to "
                             "split (got a 0-d tensor)" % what)
        arrays.weft_dtype(t.dtype.as_numpy_dtype, op, what)

    def run(*xs):
        return arrays.reducescatter(list(xs), op, prescale, postscale,
                                    _channel(process_set, what))

    def grad(dys):
        gs = _allgather_raw(dys, process_set)
        if op == Average:
            gs = [g / tf.cast(ch.size, g.dtype) for g in gs]
        return gs
    return _op(tensors, run, "WeftReducescatter", _rows_differ, grad)


def reducescatter(tensor, device_dense="", compression=Compression.none,
                  op=Average, name=None, process_set=global_process_set,
                  ignore_name_scope=False, prescale_factor=1.0,
                  postscale_factor=1.0):
    """The tensor reduced over the process set, this rank keeping its rows
    (the first rows % size ranks get one row more, as in Horovod)."""
    reduce_ops.check(op)
    t = tf.convert_to_tensor(tensor)
    sent, ctx = compression.compress(t)
    out = _reducescatter_raw([sent], op, prescale_factor, postscale_factor,
                             process_set)[0]
    return compression.decompress(out, ctx)


def grouped_reducescatter(tensors, device_dense="",
                          compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    reduce_ops.check(op)
    ts = _check_tensors(tensors, "grouped_reducescatter")
    sent = [compression.compress(t) for t in ts]
    outs = _reducescatter_raw([s for s, _ in sent], op, prescale_factor,
                              postscale_factor, process_set)
    return [compression.decompress(o, c) for o, (_, c) in zip(outs, sent)]


# -- data movement -----------------------------------------------------------

def _allgather_raw(tensors, process_set):
    """Allgather of a list of tensors as one op.  The op also returns the
    rows each rank gave (int64, one row per tensor) for the gradient."""
    what = "allgather"
    ch = _channel(process_set, what)
    for t in tensors:
        if t.shape.rank == 0:
            raise ValueError("%s: a 0-d tensor has no first dimension to "
                             "concatenate along" % what)
    k = len(tensors)

    def run(*xs):
        outs, rows = arrays.allgather(list(xs),
                                      _channel(process_set, what), what)
        return outs + [np.array(rows, dtype=np.int64).reshape(k, -1)]

    def forward(xs):
        ys = _call(run, xs, [x.dtype for x in xs] + [tf.int64],
                   "WeftAllgather")
        for x, y in zip(xs, ys):
            y.set_shape(_rows_differ(x))
        ys[-1].set_shape([k, ch.size])
        return ys[:-1], ys[-1]

    if not _floating(tensors):
        return forward(tensors)[0]

    @tf.custom_gradient
    def differentiable(*xs):
        ys, rows = forward(list(xs))

        def grad(*dys):
            summed = _allreduce_raw([tf.convert_to_tensor(d) for d in dys],
                                    Sum, 1.0, 1.0, process_set)
            out = []
            for i, g in enumerate(summed):
                r = rows[i]
                first = tf.reduce_sum(r[:ch.rank])
                out.append(g[first:first + r[ch.rank]])
            return out
        return ys, grad
    return list(differentiable(*tensors))


def allgather(tensor, name=None, ignore_name_scope=False,
              process_set=global_process_set):
    """Every rank's tensor concatenated along the first dimension, which
    may differ between ranks."""
    return _allgather_raw([tf.convert_to_tensor(tensor)], process_set)[0]


def grouped_allgather(tensors, name=None, ignore_name_scope=False,
                      process_set=global_process_set):
    return _allgather_raw(_check_tensors(tensors, "grouped_allgather"),
                          process_set)


def _broadcast_raw(tensors, root_rank, process_set):
    what = "broadcast"
    ch = _channel(process_set, what)
    root = ch.local_rank_of(root_rank, what)

    def run(*xs):
        return arrays.broadcast(list(xs), root, _channel(process_set, what))

    def grad(dys):
        summed = _allreduce_raw(dys, Sum, 1.0, 1.0, process_set)
        if ch.rank == root:
            return summed
        return [tf.zeros_like(g) for g in summed]
    return _op(tensors, run, "WeftBroadcast", _same_shape, grad)


def broadcast(tensor, root_rank, name=None, ignore_name_scope=False,
              process_set=global_process_set):
    """root_rank's tensor (a global rank) on every rank of the set."""
    return _broadcast_raw([tf.convert_to_tensor(tensor)], root_rank,
                          process_set)[0]


def broadcast_(variables, root_rank, name=None,
               process_set=global_process_set):
    """Overwrites the variables with root_rank's values, in place; returns
    them."""
    variables = list(variables)
    broadcast_variables(variables, root_rank, process_set=process_set)
    return variables


def broadcast_variables(variables, root_rank, process_set=global_process_set,
                        inplace=False):
    """Assigns root_rank's values to every variable, with one weft
    broadcast for all of them.  Returns the assign op in graph mode (None
    eagerly, where the assignment is done)."""
    variables = list(variables)
    if not variables:
        return tf.no_op() if not tf.executing_eagerly() else None
    values = _broadcast_raw([tf.convert_to_tensor(v) for v in variables],
                            root_rank, process_set)
    assigns = [v.assign(x) for v, x in zip(variables, values)]
    return None if tf.executing_eagerly() else tf.group(*assigns)


def alltoall(tensor, splits=None, name=None, ignore_name_scope=False,
             process_set=global_process_set):
    """Rows splits[r] of the tensor go to rank r (equal shares without
    splits); returns (the rows received, the rows received from each
    rank as int32)."""
    what = "alltoall"
    ch = _channel(process_set, what)
    t = tf.convert_to_tensor(tensor)
    if t.shape.rank == 0:
        raise ValueError("%s: a 0-d tensor has no first dimension to split"
                         % what)
    if isinstance(splits, (list, tuple, np.ndarray)) and \
            t.shape[0] is not None:
        # known now: refuse bad splits before any rank starts
        alltoall_splits(splits, t.shape[0], ch.size, what)
    inputs = [t] if splits is None else \
        [t, tf.cast(tf.convert_to_tensor(splits), tf.int64)]

    def run(x, s=None):
        return list(arrays.alltoall(x, None if s is None else s.tolist(),
                                    _channel(process_set, what), what))

    def forward(x, s):
        y, got = _call(run, [x] + ([] if s is None else [s]),
                       [x.dtype, tf.int32], "WeftAlltoall")
        y.set_shape(_rows_differ(x))
        got.set_shape([ch.size])
        return y, got

    s = inputs[1] if len(inputs) > 1 else None
    if not t.dtype.is_floating:
        return forward(t, s)

    @tf.custom_gradient
    def differentiable(x):
        y, got = forward(x, s)

        def grad(dy, dgot=None):
            back, _ = forward(tf.convert_to_tensor(dy),
                              tf.cast(got, tf.int64))
            return back
        return (y, got), grad
    y, got = differentiable(t)
    return y, got


# -- objects -----------------------------------------------------------------

def broadcast_object(obj, root_rank=0, session=None, name=None,
                     process_set=global_process_set):
    """root_rank's picklable object on every rank (eager Python)."""
    from ..common import objects
    return objects.broadcast_object(obj, root_rank, process_set)


def allgather_object(obj, session=None, name=None,
                     process_set=global_process_set):
    """Every rank's picklable object, in rank order (eager Python)."""
    from ..common import objects
    return objects.allgather_object(obj, process_set)


# -- rank queries as tensors -------------------------------------------------

def size_op(process_set_id=0, name=None):
    return tf.constant(basics.size() if process_set_id == 0
                       else basics.state().sets[process_set_id].size(),
                       dtype=tf.int32)


def rank_op(name=None):
    return tf.constant(basics.rank(), dtype=tf.int32)


def local_size_op(name=None):
    return tf.constant(basics.local_size(), dtype=tf.int32)


def local_rank_op(name=None):
    return tf.constant(basics.local_rank(), dtype=tf.int32)
