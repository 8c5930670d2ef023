"""Loads the native backend (the C++ extension weft/torch/_weft_c10d, a
c10d::Backend over libweft, built by python/scripts/build_torch_ext.py)
and creates its process groups.

The bootstrap stays in Python (_bootstrap.py: rank 0's rendezvous server,
the record in torch's Store); it runs once per group.  The communicator it
creates is handed to the C++ backend, which owns it from then on: every
collective, Work and future is C++ over libweft.
"""
import os
from datetime import timedelta

from .. import _lib  # noqa: F401  loads libweft.so globally first
from ._bootstrap import create_communicator

try:
    from . import _weft_c10d as _ext
    LOAD_ERROR = None
except ImportError as e:  # not built, or built for another torch
    _ext = None
    LOAD_ERROR = (
        "the native weft backend (weft/torch/_weft_c10d) cannot be loaded: "
        "%s; build it with `make python` or `python "
        "python/scripts/build_torch_ext.py` (needs g++ and torch's headers)"
        % e)


def available():
    return _ext is not None


def create_backend(store, rank, size, timeout, registered_as="weft"):
    """The creator registered with torch.distributed.Backend: a ProcessGroup
    named "weft" over a native WeftBackend.  WEFTPY_CONFIG ("KEY=VALUE,..."
    of WEFT_* knobs) applies to these communicators only; torch's timeout
    always sets WEFT_TIMEOUT.

    `registered_as`: the name weft is registered under when it is not
    "weft" (functools.partial(create_backend, registered_as=NAME)).  The
    group's profiler events are titled "NAME:<op>", what torch's tools look
    for (dist.get_backend(group) + ":<op>"); the group itself is still
    named "weft" (pg.name(), DDP's logging), because torch reads
    backend-specific objects from groups by that name (a group named
    "gloo" must be gloo's)."""
    if _ext is None:
        raise RuntimeError(LOAD_ERROR)
    timeout = timeout or timedelta(minutes=30)
    comm = create_communicator(store, rank, size, timeout.total_seconds(),
                               os.environ.get("WEFTPY_CONFIG") or None)
    handle, comm._h = comm._h.value, None     # the backend owns it now
    return _ext.create_process_group(store, rank, size, handle, timeout,
                                     registered_as)
