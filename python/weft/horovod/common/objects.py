"""Picklable objects moved over a process set: broadcast_object and
allgather_object, which every framework's module exposes under
Horovod's signatures.  Objects travel pickled with the standard pickle
(Horovod uses cloudpickle, which also takes lambdas and local classes).
"""
import ctypes
import pickle

from ... import _lib
from . import basics
from .records import exchange_records


def broadcast_object(obj, root_rank, process_set):
    """root_rank's `obj`, pickled, on every rank."""
    what = "broadcast_object"
    ch = basics.channel_of(process_set, what)
    root = ch.local_rank_of(root_rank, what)
    data = pickle.dumps(obj) if ch.rank == root else b""
    size = ctypes.c_int64(len(data))
    ch.broadcast(ctypes.addressof(size), 1, _lib.INT64, root)
    buf = ctypes.create_string_buffer(data, size.value) if ch.rank == root \
        else ctypes.create_string_buffer(size.value)
    ch.broadcast(ctypes.addressof(buf), size.value, _lib.UINT8, root)
    return obj if ch.rank == root else pickle.loads(buf.raw)


def allgather_object(obj, process_set):
    """Every rank's `obj`, pickled, as a list in rank order."""
    what = "allgather_object"
    ch = basics.channel_of(process_set, what)
    data = pickle.dumps(obj)
    sizes = [s[0] for s in exchange_records(ch, [len(data)], what)]
    top = max(sizes)
    send = ctypes.create_string_buffer(data, max(top, 1))
    recv = ctypes.create_string_buffer(max(top * ch.size, 1))
    ch.allgather(ctypes.addressof(send), ctypes.addressof(recv), top,
                 _lib.UINT8)
    raw = recv.raw
    return [pickle.loads(raw[r * top:r * top + sizes[r]])
            for r in range(ch.size)]
