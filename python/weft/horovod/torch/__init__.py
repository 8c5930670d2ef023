"""Horovod's PyTorch API on weft.

    import weft.horovod.torch as hvd     # was: import horovod.torch as hvd
    hvd.init()
    model.to(...)                         # CPU tensors
    opt = hvd.DistributedOptimizer(
        opt, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)

Launch with weftrun, torchrun, srun or mpirun (docs/horovod.md).  What is
supported, what is left out and why, and the environment variables are in
docs/horovod.md.
"""
import torch as _torch  # noqa: F401  (fails early when torch is missing)

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
from .functions import (  # noqa: F401
    allgather_object, broadcast_object, broadcast_optimizer_state,
    broadcast_parameters)
from .ops import (  # noqa: F401
    allgather, allgather_async, allreduce, allreduce_, allreduce_async,
    allreduce_async_, alltoall, alltoall_async, broadcast, broadcast_,
    broadcast_async, broadcast_async_, grouped_allgather,
    grouped_allgather_async, grouped_allreduce, grouped_allreduce_,
    grouped_allreduce_async, grouped_allreduce_async_, grouped_reducescatter,
    grouped_reducescatter_async, poll, reducescatter, reducescatter_async,
    synchronize)
from .optimizer import DistributedOptimizer  # noqa: F401
from .sync_batch_norm import SyncBatchNorm  # noqa: F401
