"""The "weft" backend of torch.distributed.

    import weft.torch                      # registers the backend
    torch.distributed.init_process_group("weft")

With this package installed, torch versions that look up backends through
the "torch.distributed.backends" entry point find "weft" even without the
import.  See docs/pytorch.md.
"""
from ._backend import WeftBackend, WeftError, create_backend, register
from ._bootstrap import advertised_host

__all__ = ["WeftBackend", "WeftError", "create_backend", "register",
           "advertised_host"]

register()
