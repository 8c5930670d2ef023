"""weft: collective communication for Python scripts (numpy) and PyTorch.

    import numpy as np, weft
    weft.init()                      # from WEFT_* or torchrun/Slurm/MPI vars
    grad = np.ones(1024, np.float32)
    weft.allreduce(grad, out=grad)   # in place; weft.allreduce(grad) returns
    req = weft.iallgather(grad)      # non-blocking: req.wait() / req.test()
    weft.finalize()

The module-level functions use the communicator made by weft.init(); every
one of them is also a method of weft.Communicator (create several with
Communicator.create(...) or comm.split(color, key)).  Failures raise
weft.Error, which carries the status name and the communicator's message.

`import weft.torch` registers the "weft" backend of torch.distributed.
"""
from . import _lib
from ._core import Communicator, Error, Request, Server, as_array

__version__ = "0.1.0"
__all__ = [
    "Communicator", "Error", "Request", "Server", "UNDEFINED", "ANY_SOURCE",
    "init",
    "finalize", "is_initialized", "get_comm", "rank", "size", "local_rank",
    "local_size", "cross_rank", "cross_size", "allreduce",
    "iallreduce", "broadcast", "ibroadcast", "reduce", "ireduce",
    "allgather", "iallgather", "reduce_scatter", "ireduce_scatter",
    "alltoall", "ialltoall", "gather", "igather", "scatter", "iscatter",
    "allgatherv", "iallgatherv", "gatherv", "igatherv", "scatterv",
    "iscatterv", "alltoallv", "ialltoallv", "reduce_scatterv",
    "ireduce_scatterv",
    "barrier", "ibarrier", "send", "isend", "recv", "irecv", "version",
    "build_info", "library_path", "as_array",
]

UNDEFINED = _lib.UNDEFINED
ANY_SOURCE = _lib.ANY_SOURCE
_default = None


def init(**params):
    """Creates the default communicator and returns it.  Without arguments
    it comes from the environment (weft_comm_init); keyword arguments are
    those of Communicator.create (rank, size, rendezvous, job_id, timeout
    in seconds, config, token)."""
    global _default
    if _default is not None:
        raise Error(-2, "init", "weft.init() was already called; "
                    "call weft.finalize() first")
    _default = (Communicator.create(**params) if params
                else Communicator.init())
    return _default


def finalize():
    """Destroys the default communicator (waiting for pending operations)."""
    global _default
    comm, _default = _default, None
    if comm is not None:
        comm.destroy()


def is_initialized():
    return _default is not None


def get_comm():
    """The default communicator made by weft.init()."""
    if _default is None:
        raise Error(-2, "call", "weft.init() was not called")
    return _default


def rank():
    return get_comm().rank


def size():
    return get_comm().size


def local_rank():
    """Index among the ranks on this machine."""
    return get_comm().local_rank


def local_size():
    return get_comm().local_size


def cross_rank():
    """Index among the ranks of this local rank on every machine."""
    return get_comm().cross_rank


def cross_size():
    return get_comm().cross_size


def version():
    """The C library's version as "MAJOR.MINOR.PATCH"."""
    v = _lib.lib.weft_get_version()
    return "%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100)


def build_info():
    return _lib.lib.weft_build_info().decode()


def library_path():
    """Which libweft.so was loaded."""
    return _lib.lib.weft_path


def _forward(name):
    method = getattr(Communicator, name)

    def call(*args, **kwargs):
        return method(get_comm(), *args, **kwargs)
    call.__name__ = name
    call.__doc__ = method.__doc__ or (
        "Communicator.%s on the default communicator." % name)
    return call


for _name in ("allreduce", "broadcast", "reduce", "allgather",
              "reduce_scatter", "alltoall", "gather", "scatter", "barrier",
              "send", "recv", "allgatherv", "gatherv", "scatterv",
              "alltoallv", "reduce_scatterv"):
    globals()[_name] = _forward(_name)
    globals()["i" + _name] = _forward("i" + _name)
del _name
