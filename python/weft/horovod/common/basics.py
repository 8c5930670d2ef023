"""hvd.init() and what it sets up: the global weft communicator, its
channel and join agent, the process sets; the rank queries; the build
queries, answered for weft.

init() takes rank, size and rendezvous from the environment exactly as
weft_comm_init does: WEFT_* (weftrun), torchrun's variables (rank 0
hosts the rendezvous on MASTER_PORT+1), or mpirun's, mpiexec.hydra's and
srun's own, the ranks meeting through the launcher's process-management
interface (docs/launchers.md; docs/horovod.md, "Launching").
"""
import atexit
import ctypes
import os
import threading

from ..._core import Communicator, Error
from ... import _lib
from .channel import Channel
from .exceptions import HorovodInternalError
from .handles import HandleTable
from .join import JoinAgent
from .process_sets import ProcessSet, global_process_set

_NOT_INITIALIZED = "Horovod has not been initialized; use hvd.init()."


class _State:
    def __init__(self, world):
        self.world = world
        self.channel = Channel(world, range(world.size))
        self.join = JoinAgent(self.channel) if world.size > 1 else None
        self.sets = {0: global_process_set}
        self.next_set_id = 1
        self.handles = HandleTable()
        self.homogeneous = None


_state = None
_lock = threading.Lock()
_atexit_registered = False


def init(comm=None, process_sets=None):
    """Creates the global communicator from the launcher's environment.
    A second call while initialized does nothing, as in Horovod.

    comm          None (every rank of the job); weft takes no MPI
                  communicator and no sub-list of ranks (use a process set)
    process_sets  ProcessSet objects to register now, or "dynamic"
    """
    global _state, _atexit_registered
    if comm is not None:
        raise ValueError(
            "hvd.init(comm=...): weft.horovod always spans every rank of the "
            "job and uses no MPI; pass the ranks as a process set instead "
            "(hvd.add_process_set(ranks))")
    with _lock:
        if _state is not None:
            return
        try:
            world = Communicator.init()
        except Error as e:
            raise ValueError(
                "hvd.init(): weft could not create the communicator: %s.  "
                "Start the script under `weftrun -n N`, torchrun, mpirun, "
                "mpiexec.hydra or srun, or set WEFT_RANK, WEFT_WORLD_SIZE "
                "and WEFT_RENDEZVOUS (docs/horovod.md)" % e) from e
        _state = _State(world)
        global_process_set.ranks = list(range(world.size))
        global_process_set._channel = _state.channel
    _state.homogeneous = _all_hosts_alike(_state.channel, world.local_size)
    _timeline_from_environment(world.rank)
    if not _atexit_registered:
        atexit.register(shutdown)
        _atexit_registered = True
    if isinstance(process_sets, str):
        if process_sets.lower() != "dynamic":
            raise ValueError("process_sets=%r: expected a list of ProcessSet "
                             "or \"dynamic\"" % process_sets)
        process_sets = None
    for ps in process_sets or ():
        add_process_set(ps)


def _all_hosts_alike(channel, local_size):
    """Whether every machine runs as many ranks as this one (one allreduce
    of the local sizes, as MAX of the size and of its negation)."""
    v = (ctypes.c_int64 * 2)(local_size, -local_size)
    a = ctypes.addressof(v)
    channel.allreduce(a, a, 2, _lib.INT64, _lib.MAX)
    return v[0] == -v[1]


def shutdown():
    """Releases the communicators.  Every rank calls it (hvd.shutdown() or
    at exit); after a failure it aborts them instead of waiting."""
    global _state
    with _lock:
        state, _state = _state, None
    if state is None:
        return
    for ps in list(state.sets.values()):
        if ps.process_set_id and ps._channel is not None:
            ps._channel.close()
        if ps.process_set_id:
            ps._invalidate()
    global_process_set._channel = None
    state.handles.clear()
    server, clean = None, state.channel.comm.get_error() is None
    try:
        if state.join is not None:
            server, clean = state.join.close()
    finally:
        if clean:
            state.channel.close()
        else:
            # a failed communicator (weft's errors are sticky): release it
            # without waiting for ranks that may never come
            state.channel.comm.abort()
        if server is not None:
            server.stop()


def is_initialized():
    return _state is not None


def state():
    if _state is None:
        raise ValueError(_NOT_INITIALIZED)
    return _state


def size():
    """Number of ranks in the job."""
    return state().world.size


def rank():
    return state().world.rank


def local_size():
    """Ranks on this machine."""
    return state().world.local_size


def local_rank():
    """This rank's index among the ranks on this machine."""
    return state().world.local_rank


def cross_size():
    """Machines that have a rank with this local rank."""
    return state().world.cross_size


def cross_rank():
    """This rank's machine, among the machines that have a rank with this
    local rank."""
    return state().world.cross_rank


def is_homogeneous():
    """Whether every machine runs the same number of ranks."""
    return bool(state().homogeneous)


# -- build queries: what this build has, truthfully for weft ---------------
# weft links no MPI, Gloo, NCCL, DDL or oneCCL, and weft.horovod moves CPU
# tensors only (libweft_cuda.so serves weft's C API, not this module).

def mpi_built():
    return False


def mpi_enabled():
    return False


def mpi_threads_supported():
    raise ValueError("Horovod MPI is not enabled: weft.horovod runs on weft, "
                     "which uses no MPI")


def gloo_built():
    return False


def gloo_enabled():
    return False


def nccl_built():
    return 0


def ddl_built():
    return False


def ccl_built():
    return False


def cuda_built():
    return False


def rocm_built():
    return False


def weft_built():
    """True: this Horovod API runs on weft."""
    return True


# -- timeline ----------------------------------------------------------------
# The timeline is the C library's (WEFT_TIMELINE, docs/timeline.md): it
# sees every operation of every communicator.

def _timeline_calls():
    from ..._lib import lib
    try:
        start, stop = lib.weft_timeline_start, lib.weft_timeline_stop
    except AttributeError:
        raise NotImplementedError(
            "this libweft (%s) has no timeline (weft_timeline_start); "
            "rebuild it with `make`" % lib.weft_path)
    start.argtypes, start.restype = [ctypes.c_char_p], ctypes.c_int
    stop.argtypes, stop.restype = [], ctypes.c_int
    return start, stop


def start_timeline(file_path, mark_cycles=False):
    """Starts writing every operation of this process to `file_path`, a
    Chrome trace (weft_timeline_start; %r in the path is the rank).  weft
    has no cycles, so mark_cycles does nothing."""
    state()
    start, _ = _timeline_calls()
    st = start(str(file_path).encode())
    if st == -2:            # WEFT_ERR_INVALID_USAGE
        raise ValueError("start_timeline(%r): a timeline is already being "
                         "written; call stop_timeline() first" % file_path)
    if st < 0:
        raise ValueError("start_timeline(%r): %s (%s)" % (
            file_path, _lib.status_name(st), _lib.strerror(st)))


def stop_timeline():
    """Closes the timeline file (a complete JSON array)."""
    state()
    _, stop = _timeline_calls()
    stop()


def _timeline_from_environment(rank):
    """HOROVOD_TIMELINE, as Horovod reads it at init: one file, written by
    rank 0, unless the path has %r; DYNAMIC only allows start_timeline(),
    which weft always allows.  WEFT_TIMELINE, set too, wins (the C library
    started it with the first communicator)."""
    path = os.environ.get("HOROVOD_TIMELINE", "")
    if not path or path == "DYNAMIC" or os.environ.get("WEFT_TIMELINE"):
        return
    if "%r" in path or rank == 0:
        start_timeline(path)


# -- process sets ------------------------------------------------------------

def add_process_set(process_set):
    """Registers `process_set` (a ProcessSet or a list of ranks) and returns
    it.  Collective: every rank calls it, with the same ranks, in the same
    order."""
    st = state()
    ps = process_set if isinstance(process_set, ProcessSet) \
        else ProcessSet(process_set)
    if ps.process_set_id is not None:
        raise ValueError("%s is already registered" % ps)
    n = st.world.size
    bad = [r for r in ps.ranks if not 0 <= r < n]
    if bad or not ps.ranks:
        raise ValueError("process set ranks %r: every rank must be in "
                         "[0, %d) and the set not empty" % (ps.ranks, n))
    for other in st.sets.values():
        if other.ranks == ps.ranks:
            raise ValueError("Attempted to add a duplicate process set: %s "
                             "has the same ranks as %s" % (ps, other))
    member = st.world.rank in ps.ranks
    try:
        sub = st.world.split(0 if member else None, st.world.rank)
    except Error as e:
        raise HorovodInternalError("add_process_set: weft_comm_split "
                                   "failed: %s" % e, e) from e
    ps.process_set_id = st.next_set_id
    st.next_set_id += 1
    ps._channel = Channel(sub, ps.ranks) if member else None
    st.sets[ps.process_set_id] = ps
    return ps


def remove_process_set(process_set):
    """Unregisters `process_set` and releases its communicator; False for
    the global set or a set that is not registered.  Every rank calls it."""
    st = state()
    ps_id = process_set.process_set_id
    if not ps_id or st.sets.get(ps_id) is not process_set:
        return False
    del st.sets[ps_id]
    if process_set._channel is not None:
        process_set._channel.close()
    process_set._invalidate()
    return True


def channel_of(process_set, what):
    """The channel of `process_set` for an operation `what`, with the
    errors Horovod gives."""
    st = state()
    if process_set is global_process_set:
        return st.channel
    if process_set.process_set_id is None or \
            st.sets.get(process_set.process_set_id) is not process_set:
        raise ValueError("%s: %s is not registered (hvd.add_process_set) or "
                         "was removed" % (what, process_set))
    if process_set._channel is None:
        raise ValueError("%s: rank %d is not in %s" %
                         (what, st.world.rank, process_set))
    return process_set._channel


# -- operations without data -------------------------------------------------

def barrier(process_set=global_process_set):
    """Returns when every rank of the set has called it."""
    channel_of(process_set, "barrier").barrier()


def join(device=-1):
    """This rank has no more data: it takes part in the other ranks'
    collectives of the global set with zeros until every rank has joined.
    Returns the rank that joined last.  `device` is accepted for Horovod's
    signature; weft.horovod works on the CPU."""
    st = state()
    if st.join is None:
        return 0
    return st.join.join()
