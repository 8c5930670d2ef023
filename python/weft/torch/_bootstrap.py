"""Creating a weft communicator from the Store torch hands to a backend.

torch gives every backend instance a Store (a PrefixStore per group and
device over the TCPStore/FileStore of init_process_group, torchrun's agent
store included) plus rank, size and timeout.  weft needs a rendezvous
server, so:

  1. the group's rank 0 starts (once per process) an embedded weft
     rendezvous server on an ephemeral port of the interface that reaches
     the torch store's host, the route every rank has already proven;
  2. it publishes {server address, fresh job id, fresh token} in the Store;
  3. every rank reads that record and calls weft_comm_create with its
     rank/size, the address, the job id, the token and the timeout.

A generation counter in the Store keeps records of successive backends on
one Store apart (re-initialisation on a shared FileStore, say).  The server
serves any number of jobs, so subgroups reuse it; it lives until the
process exits because communicators keep their rendezvous connection.
"""
import atexit
import ipaddress
import json
import os
import secrets
import socket
import threading
import uuid

from .._core import Communicator, Server

_server = None
_server_lock = threading.Lock()


def _base_store(store):
    """The store under any PrefixStore wrappers."""
    while hasattr(store, "underlying_store"):
        store = store.underlying_store
    return store


def _route_to(host):
    """The local address this host uses to reach `host` (a UDP connect
    sends no packet; it only asks the kernel for the route)."""
    info = socket.getaddrinfo(host, 9, 0, socket.SOCK_DGRAM)[0]
    family, addr = info[0], info[4]
    if ipaddress.ip_address(addr[0]).is_loopback:
        return addr[0]
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.connect(addr)
        return s.getsockname()[0]


def advertised_host(store):
    """Where the other ranks can reach this rank's rendezvous server:
    WEFTPY_HOST when set, else the local address on the route to the
    torch store's host (TCPStore) or to MASTER_ADDR, else the address of
    this host's name, else loopback."""
    override = os.environ.get("WEFTPY_HOST")
    if override:
        return override
    base = _base_store(store)
    for target in (getattr(base, "host", None),
                   os.environ.get("MASTER_ADDR")):
        if target:
            try:
                return _route_to(target)
            except OSError:
                pass
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def _stop_server():
    global _server
    with _server_lock:
        if _server is not None:
            _server.stop()
            _server = None


def rendezvous_server(store):
    """The address of this process's rendezvous server, started on first
    use."""
    global _server
    with _server_lock:
        if _server is None:
            host = advertised_host(store)
            listen = ("[%s]:0" if ":" in host else "%s:0") % host
            _server = Server(listen)
            atexit.register(_stop_server)
        return _server.address


def _job_token():
    """The token the embedded server asks for: the configured one
    (WEFT_TOKEN or WEFT_TOKEN_FILE, as weftrun sets across hosts), which
    the server reads too, else a fresh one."""
    token = os.environ.get("WEFT_TOKEN")
    path = os.environ.get("WEFT_TOKEN_FILE")
    if not token and path:
        with open(path, encoding="utf-8") as f:
            token = f.readline().strip()
    return token or secrets.token_hex(16)


def create_communicator(store, rank, size, timeout_s, config=None):
    """Collective over the group: returns the weft Communicator."""
    generation = (store.add("weft/generation", 1) - 1) // size
    key = "weft/bootstrap/%d" % generation
    if rank == 0:
        record = {
            "rendezvous": rendezvous_server(store),
            "job_id": "torch-" + uuid.uuid4().hex,
            "token": _job_token(),
        }
        store.set(key, json.dumps(record))
    else:
        record = json.loads(store.get(key))  # waits up to the store timeout
    return Communicator.create(rank=rank, size=size,
                               rendezvous=record["rendezvous"],
                               job_id=record["job_id"],
                               token=record["token"], timeout=timeout_s,
                               config=config)
