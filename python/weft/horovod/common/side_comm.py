"""A second communicator of the global ranks, without a deadline, for
join's notices.

Join's watcher keeps a receive posted for the whole job.  Every weft
operation has a deadline (WEFT_TIMEOUT), and a split communicator inherits
its parent's, so the receive cannot live on the global communicator or a
split of it: it would time out after WEFT_TIMEOUT and fail the
communicator.  This one is created with weft_comm_create and timeout 0
(no deadline).  As the torch backend's bootstrap does, rank 0 starts an
embedded rendezvous server and the others learn its address, a fresh job
id and a fresh token, here through the global communicator.
"""
import ctypes
import fcntl
import ipaddress
import os
import secrets
import socket
import struct
import uuid

from ... import _lib
from ..._core import Communicator, Server

_RECORD_BYTES = 512
_SIOCGIFADDR = 0x8915


def _route_to(host):
    """The local address this host uses to reach `host` (a UDP connect
    sends nothing; it asks the kernel for the route)."""
    info = socket.getaddrinfo(host, 9, 0, socket.SOCK_DGRAM)[0]
    if ipaddress.ip_address(info[4][0]).is_loopback:
        return info[4][0]
    with socket.socket(info[0], socket.SOCK_DGRAM) as s:
        s.connect(info[4])
        return s.getsockname()[0]


def _interface_ipv4(name):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("256s", name.encode()[:15])
        return socket.inet_ntoa(fcntl.ioctl(s.fileno(), _SIOCGIFADDR,
                                            req)[20:24])


def host_address():
    """Where the other ranks reach rank 0: WEFTPY_HOST; else the first of
    WEFT_SOCKET_IFNAME; else the route to the job's rendezvous host
    (WEFT_RENDEZVOUS, MASTER_ADDR), a path every rank has used; else the
    first interface that is up and not loopback; else loopback."""
    env = os.environ
    if env.get("WEFTPY_HOST"):
        return env["WEFTPY_HOST"]
    first = env.get("WEFT_SOCKET_IFNAME", "").replace(" ", ",").split(",")[0]
    if first:
        if first[0].isdigit():
            return first
        try:
            return _interface_ipv4(first)
        except OSError:
            pass
    rdv = env.get("WEFT_RENDEZVOUS", "")
    for target in (rdv.rsplit(":", 1)[0].strip("[]") if ":" in rdv and
                   "://" not in rdv else "", env.get("MASTER_ADDR", "")):
        if target:
            try:
                return _route_to(target)
            except OSError:
                pass
    for _, name in socket.if_nameindex():
        if name != "lo":
            try:
                return _interface_ipv4(name)
            except OSError:
                continue
    return "127.0.0.1"


def create(channel):
    """(communicator, server): a communicator of the channel's ranks, in the
    same order, without a deadline; `server` is rank 0's rendezvous server
    (None elsewhere), to stop once every rank has destroyed it.  Collective
    over the channel."""
    record = ctypes.create_string_buffer(_RECORD_BYTES)
    server = None
    if channel.rank == 0:
        host = host_address()
        server = Server(("[%s]:0" if ":" in host else "%s:0") % host)
        text = "%s %s %s" % (server.address, "hvd-join-" + uuid.uuid4().hex,
                             secrets.token_hex(16))
        record.value = text.encode()
    channel.broadcast(ctypes.addressof(record), _RECORD_BYTES, _lib.UINT8, 0)
    address, job_id, token = record.value.decode().split()
    try:
        comm = Communicator.create(rank=channel.rank, size=channel.size,
                                   rendezvous=address, job_id=job_id,
                                   token=token, timeout=0)
    except Exception:
        if server is not None:
            server.stop()
        raise
    return comm, server
