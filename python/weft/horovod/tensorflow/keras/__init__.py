"""Horovod's Keras API (horovod.tensorflow.keras) on weft, for the Keras 2
API of tf_keras: TensorFlow 2.16 and later ship Keras 3 as `tf.keras`,
and Horovod's Keras scripts are Keras 2 scripts (optimizers with
apply_gradients over a tf.function train step, callbacks that read
model.optimizer.lr), which tf_keras keeps.  A Keras 3 optimizer on the
TensorFlow backend also works with DistributedOptimizer (it wraps
apply_gradients), but the callbacks here are tf_keras callbacks.

    import weft.horovod.tensorflow.keras as hvd
    hvd.init()
    opt = hvd.DistributedOptimizer(tf_keras.optimizers.SGD(0.01 * hvd.size()))
    model.compile(optimizer=opt, loss=...)
    model.fit(x, y, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                               hvd.callbacks.MetricAverageCallback()])
"""
import numpy as _np
import tensorflow as _tf

from ...common.basics import (  # noqa: F401
    add_process_set, barrier, cross_rank, cross_size, init, is_homogeneous,
    is_initialized, join, local_rank, local_size, rank, remove_process_set,
    shutdown, size, start_timeline, stop_timeline, weft_built)
from ...common.exceptions import HorovodInternalError  # noqa: F401
from ...common.process_sets import (  # noqa: F401
    ProcessSet, global_process_set)
from ...common.reduce_ops import (  # noqa: F401
    Adasum, Average, Max, Min, Product, Sum)
from .. import ops as _ops
from ..compression import Compression  # noqa: F401
from ..gradients import DistributedOptimizer  # noqa: F401
from ..ops import allgather_object, broadcast_object  # noqa: F401
from . import callbacks  # noqa: F401


def _value(x):
    return x.numpy() if hasattr(x, "numpy") else _np.asarray(x)


def allreduce(value, name=None, average=None, prescale_factor=1.0,
              postscale_factor=1.0, op=None, compression=Compression.none,
              process_set=global_process_set):
    """The value reduced over the process set, as a numpy value."""
    return _value(_ops.allreduce(
        _tf.convert_to_tensor(value), average=average, op=op,
        compression=compression, prescale_factor=prescale_factor,
        postscale_factor=postscale_factor, process_set=process_set))


def allgather(value, name=None, process_set=global_process_set):
    return _value(_ops.allgather(_tf.convert_to_tensor(value),
                                 process_set=process_set))


def broadcast(value, root_rank, name=None, process_set=global_process_set):
    return _value(_ops.broadcast(_tf.convert_to_tensor(value), root_rank,
                                 process_set=process_set))


def reducescatter(value, name=None, op=Average,
                  process_set=global_process_set):
    return _value(_ops.reducescatter(_tf.convert_to_tensor(value), op=op,
                                     process_set=process_set))


def broadcast_global_variables(root_rank, model=None,
                               process_set=global_process_set):
    """Broadcasts the model's variables (and its optimizer's, once it has
    them) from root_rank.  Keras 2 has no global variable collection, so
    the model is needed."""
    if model is None:
        raise ValueError("broadcast_global_variables(root_rank, model): "
                         "tf_keras has no global variables; pass the model "
                         "(or use BroadcastGlobalVariablesCallback)")
    callbacks.broadcast_model(model, root_rank, process_set)
