"""torch's env:// under launchers that do not set its variables.

torch.distributed.init_process_group() with no init_method reads RANK,
WORLD_SIZE, MASTER_ADDR and MASTER_PORT; torchrun and weftrun set them,
but Open MPI's mpirun, MPICH's mpiexec.hydra and Slurm's srun set their
own, and the classic tutorial is started exactly that way
(`mpiexec -n 2 python ptdist.py`).  So "weft" wraps torch's env://
handler: when those variables are missing and a launcher is recognised,
it fills them before torch reads them:

  - RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE from the launcher's
    own variables;
  - MASTER_ADDR/MASTER_PORT: rank 0 picks an address of its host and a
    free port, and a weft communicator, which meets through the
    launcher's process-management interface with nothing set up
    (docs/launchers.md), hands them to every rank.

Variables the user set are never changed.
"""
import fcntl
import functools
import importlib
import os
import socket
import struct

# (source, rank, size, local rank, local size) variables, in the order
# weft's C library looks for them (src/rdv/launch_env.c).
_LAUNCHERS = (
    ("slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", None),
    ("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ("hydra", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
)

_SIOCGIFADDR = 0x8915


def launcher():
    """(source, rank, size, local_rank, local_size) of the launcher that
    started this process (local values None where it gives none), or
    None."""
    env = os.environ
    for name, rank, size, local, local_size in _LAUNCHERS:
        if env.get(rank, "").isdigit() and env.get(size, "").isdigit():
            def num(var):
                v = env.get(var or "", "")
                return int(v) if v.isdigit() else None
            return (name, int(env[rank]), int(env[size]), num(local),
                    num(local_size))
    return None


def _interface_ipv4(name):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("256s", name.encode()[:15])
        return socket.inet_ntoa(fcntl.ioctl(s.fileno(), _SIOCGIFADDR,
                                            req)[20:24])


def host_address():
    """Where the other ranks reach this host: the first interface (or
    address) of WEFT_SOCKET_IFNAME, else the first interface that is up
    and not loopback, as weft's C library chooses rank 0's rendezvous
    address; else loopback."""
    first = os.environ.get("WEFT_SOCKET_IFNAME", "").replace(" ", ",")
    first = first.split(",")[0]
    if first and first[0].isdigit():
        return first
    names = [first] if first else [n for _, n in socket.if_nameindex()
                                   if n != "lo"]
    for name in names:
        try:
            return _interface_ipv4(name)
        except OSError:
            continue
    return "127.0.0.1"


def _free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _share_master(rank):
    """Rank 0's (address, port), handed to every rank by a weft
    communicator that met through the launcher's interface."""
    import numpy as np

    from .._core import Communicator, Error
    try:
        comm = Communicator.init()
    except Error as e:
        raise RuntimeError(
            "init_process_group: MASTER_ADDR and MASTER_PORT are not set, "
            "and weft could not agree on them through the launcher's "
            "process-management interface (%s); set them, or start the "
            "job with mpirun, mpiexec.hydra or srun --mpi=pmix|pmi2" % e
        ) from e
    try:
        buf = np.zeros(256, dtype=np.uint8)
        if rank == 0:
            host = host_address()
            text = ("%s %d" % (host, _free_port(host))).encode()
            buf[:len(text)] = np.frombuffer(text, dtype=np.uint8)
        comm.broadcast(buf, root=0)
    finally:
        comm.destroy()
    host, port = bytes(buf).rstrip(b"\0").decode().split()
    return host, port


def fill_env():
    """Sets torch's env:// variables from the launcher where they are
    missing.  Collective when MASTER_ADDR/MASTER_PORT are missing (every
    rank of the job calls init_process_group)."""
    env = os.environ
    found = launcher()
    if found is None or env.get("RANK") and env.get("MASTER_ADDR"):
        return
    _, rank, size, local_rank, local_size = found
    env.setdefault("RANK", str(rank))
    env.setdefault("WORLD_SIZE", str(size))
    if local_rank is not None:
        env.setdefault("LOCAL_RANK", str(local_rank))
    if local_size is not None:
        env.setdefault("LOCAL_WORLD_SIZE", str(local_size))
    if not (env.get("MASTER_ADDR") and env.get("MASTER_PORT")):
        host, port = _share_master(int(env["RANK"]))
        env.setdefault("MASTER_ADDR", host)
        env.setdefault("MASTER_PORT", port)


def install():
    """Wraps torch's env:// handler (once)."""
    try:
        # The module: torch.distributed's attribute of that name is the
        # function.
        rendezvous = importlib.import_module("torch.distributed.rendezvous")
        handlers = rendezvous._rendezvous_handlers
    except (ImportError, AttributeError):
        return  # another torch: env:// as it is
    original = handlers.get("env")
    if original is None or getattr(original, "_weft_launch", False):
        return

    @functools.wraps(original)
    def env_or_launcher(url, **kwargs):
        fill_env()
        return original(url, **kwargs)
    env_or_launcher._weft_launch = True
    handlers["env"] = env_or_launcher
