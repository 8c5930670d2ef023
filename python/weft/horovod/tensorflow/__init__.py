"""Horovod's TensorFlow API on weft.

    import weft.horovod.tensorflow as hvd  # was: import horovod.tensorflow as hvd
    hvd.init()
    with tf.GradientTape() as tape:
        loss = ...
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    if first_batch:
        hvd.broadcast_variables(model.variables, root_rank=0)
        hvd.broadcast_variables(opt.variables, root_rank=0)

Eager and inside tf.function, on CPU tensors.  Launch with weftrun,
torchrun, srun or mpirun (docs/horovod.md, "TensorFlow and Keras").
"""
import tensorflow as _tf  # noqa: F401  (fails early when TF is missing)

from ..common.basics import (  # noqa: F401
    add_process_set, barrier, ccl_built, cross_rank, cross_size, cuda_built,
    ddl_built, gloo_built, gloo_enabled, init, is_homogeneous,
    is_initialized, join, local_rank, local_size, mpi_built, mpi_enabled,
    mpi_threads_supported, nccl_built, rank, remove_process_set, rocm_built,
    shutdown, size, start_timeline, stop_timeline, weft_built)
from ..common.exceptions import HorovodInternalError  # noqa: F401
from ..common.process_sets import ProcessSet, global_process_set  # noqa: F401
from ..common.reduce_ops import (  # noqa: F401
    Adasum, Average, Max, Min, Product, Sum)
from .compression import Compression  # noqa: F401
from .gradients import (  # noqa: F401
    DistributedGradientTape, DistributedOptimizer)
from .ops import (  # noqa: F401
    allgather, allgather_object, allreduce, alltoall, broadcast, broadcast_,
    broadcast_object, broadcast_variables, grouped_allgather,
    grouped_allreduce, grouped_reducescatter, local_rank_op, local_size_op,
    rank_op, reducescatter, size_op)
