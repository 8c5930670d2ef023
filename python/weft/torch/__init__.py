"""The "weft" backend of torch.distributed.

    import weft.torch                      # registers the backend
    torch.distributed.init_process_group("weft")

The backend is native: a C++ c10d::Backend over libweft (weft/torch/csrc,
built against the installed torch by `make python` or `pip install
./python`).  With this package installed, torch versions that look up
backends through the "torch.distributed.backends" entry point find "weft"
even without the import.  Under mpirun, mpiexec.hydra and srun, which
set none of torch's env:// variables, init_process_group() finds them
through weft (_launch.py).  See docs/pytorch.md.
"""
import torch.distributed as dist

from . import _launch
from ._bootstrap import advertised_host
from ._errors import WeftError
from ._native import LOAD_ERROR, available, create_backend

__all__ = ["WeftError", "create_backend", "register", "advertised_host",
           "available", "LOAD_ERROR"]


def register():
    """Registers "weft" with torch.distributed (idempotent).  Raises
    ImportError with the reason when the native backend is not built."""
    if LOAD_ERROR is not None:
        raise ImportError(LOAD_ERROR)
    if "WEFT" in getattr(dist.Backend, "_plugins", {}):
        return
    dist.Backend.register_backend("weft", create_backend, devices=["cpu"])


register()
# init_process_group() under mpirun, mpiexec.hydra and srun, which do not
# set torch's env:// variables (_launch.py).
_launch.install()
