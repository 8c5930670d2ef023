"""hvd.join(): a rank out of data takes part in the others' collectives
with zeros until every rank has joined.

Horovod's coordinator knows which ranks have joined because every
operation is negotiated.  weft negotiates nothing: each rank calls the
collectives in the same order, and an operation waits for every rank.  So
a rank that has joined must learn what the others call, and the others
pay for it only once someone has joined:

* Each rank counts the collectives of the global channel.  A rank that
  joins after its call c sends NOTICE(round, c) to every other rank, on
  a side communicator created at hvd.init() without a deadline
  (side_comm.py), so that the global one carries collectives only.
* Every rank runs a watcher thread, blocked in weft_wait on a receive of
  notices from any rank.  When J's notice arrives, the rank sends J the
  descriptor (kind, count, dtype, op or root; no data) of each of its own
  calls numbered above c that it has already made, from the channel's
  journal, and from then on of each new call as it makes it.  A blocked
  collective therefore never waits for its peer's join to be noticed by
  its own thread.
* The joined rank takes part in call c+1, c+2, ... in order, with zeros
  (allreduce, reduce_scatter, alltoall, an allgather's sizes: a joined
  rank contributes nothing), as soon as some rank has described it.
* A rank that has joined and knows that J has joined sends J END(its own
  join point) after its last descriptor; ENDs make every per-pair stream
  of descriptors finite, so no receive is left posted.  join() returns
  once every other rank's END has come and this rank has made the last
  call anyone made: every rank ends with the same count.

Join covers the global process set.  The journal keeps the descriptors of
calls not yet known to have included every rank: no rank can join before
a call it took part in.
"""
import ctypes
import threading
import time

from ... import _lib
from ..._lib import lib
from . import side_comm
from .channel import buffer_bytes, failure
from .exceptions import HorovodInternalError

_TAG_NOTICE = 1
_TAG_DESC = 2
_NOTICE, _BYE = 0, 1        # first word of a notice
_DESC, _END = 0, 1          # first word of a descriptor message
_NOTICE_WORDS = 3           # type, round, join point
_DESC_WORDS = 7             # type, round, number, kind, count, dtype, arg
_Notice = ctypes.c_int64 * _NOTICE_WORDS
_Desc = ctypes.c_int64 * _DESC_WORDS


class JoinAgent:
    """Join for one channel (the global one, of more than one rank)."""

    def __init__(self, channel):
        self.channel = channel
        self.side, self.server = side_comm.create(channel)
        self.closing = False
        self.round = 1          # the round of this rank's next join()
        self.joined = {}        # peer -> its join point, this round
        self.later = {}         # round -> {peer: join point}, rounds ahead
        self.self_joined = False
        self.ended = set()      # peers sent END this round
        self.outbox = []        # (request, buffer) of sends in flight
        self.error = None       # why the watcher stopped, if it failed
        self._zeros = self._scratch = None
        channel.enable_journal(self._on_call)
        self.thread = threading.Thread(target=self._watch, daemon=True,
                                       name="weft-hvd-join-watcher")
        self.thread.start()

    # -- sends (called under the channel's lock) --------------------------

    def _send(self, peer, tag, words, cls):
        buf = cls(*words)
        req = ctypes.c_void_p()
        st = lib.weft_isend_tag(buf, len(words), _lib.INT64, peer, tag,
                                self.side._h, ctypes.byref(req))
        if st < 0:
            raise failure(st, "join send", self.side)
        self.outbox.append((req, buf))
        if len(self.outbox) > 64:
            self._reap(block=False)

    def _reap(self, block):
        keep = []
        for req, buf in self.outbox:
            st = lib.weft_wait(req) if block else lib.weft_test(req)
            if st == _lib.INPROGRESS:
                keep.append((req, buf))
                continue
            lib.weft_request_free(req)
            if st < 0 and self.error is None:
                self.error = failure(st, "join send", self.side)
        self.outbox = keep

    def _describe(self, peer, number, desc):
        self._send(peer, _TAG_DESC, (_DESC, self.round, number) + desc,
                   _Desc)

    def _on_call(self, number, desc):
        """Every call of the channel, under its lock."""
        for peer, point in self.joined.items():
            if number > point:
                self._describe(peer, number, desc)

    def _peer_joined(self, peer, rnd, point):
        """`peer` joined round `rnd` after its call `point` (from its
        notice or its END, whichever comes first)."""
        with self.channel.lock:
            if rnd < self.round:
                return          # a round this rank has finished
            if rnd > self.round:
                self.later.setdefault(rnd, {})[peer] = point
                return
            if peer in self.joined:
                return
            self.joined[peer] = point
            for number, desc in self.channel.journal:
                if number > point:
                    self._describe(peer, number, desc)
            if self.self_joined:
                self._end(peer)

    def _end(self, peer):
        if peer not in self.ended:
            self.ended.add(peer)
            self._send(peer, _TAG_DESC, (_END, self.round, self.point,
                                         0, 0, 0, 0), _Desc)

    # -- the watcher thread ----------------------------------------------

    def _watch(self):
        buf = _Notice()
        src = ctypes.c_int()
        while True:
            req = ctypes.c_void_p()
            st = lib.weft_irecv_tag(buf, _NOTICE_WORDS, _lib.INT64,
                                    _lib.ANY_SOURCE, _TAG_NOTICE,
                                    self.side._h, ctypes.byref(req))
            if st >= 0:
                st = lib.weft_wait(req)
                lib.weft_request_source(req, ctypes.byref(src))
                lib.weft_request_free(req)
            if st < 0:
                if not self.closing:
                    self.error = failure(st, "join watcher", self.side)
                return
            kind, rnd, point = buf
            if kind == _BYE:
                return
            try:
                self._peer_joined(src.value, rnd, point)
            except HorovodInternalError as e:
                self.error = e
                return

    # -- join() ------------------------------------------------------------

    def join(self):
        """Blocks until every rank has joined; returns the rank that joined
        last (the latest join point; the highest rank among equals)."""
        ch = self.channel
        if self.error is not None:
            raise self.error
        with ch.lock:
            self.point = ch.calls
            self.self_joined = True
            rnd = self.round
            for peer in list(self.joined):
                self._end(peer)
            for peer in range(ch.size):
                if peer != ch.rank:
                    self._send(peer, _TAG_NOTICE, (_NOTICE, rnd, self.point),
                               _Notice)
        points = {ch.rank: self.point}
        recvs = {p: self._post(p) for p in range(ch.size) if p != ch.rank}
        described = {}
        pause = 1e-5
        while True:
            moved = False
            for peer, (req, buf) in list(recvs.items()):
                st = lib.weft_test(req)
                if st == _lib.INPROGRESS:
                    continue
                lib.weft_request_free(req)
                if st < 0:
                    raise failure(st, "join receive", self.side)
                moved = True
                kind, _, number = buf[0], buf[1], buf[2]
                if kind == _END:
                    del recvs[peer]
                    points[peer] = number
                    self._peer_joined(peer, rnd, number)
                    continue
                recvs[peer] = self._post(peer)
                if number > ch.calls:
                    described.setdefault(number, tuple(buf[3:7]))
            while ch.calls + 1 in described:
                self._take_part(described.pop(ch.calls + 1))
                moved = True
            if not recvs:
                last = max(points.values())
                if ch.calls == last:
                    break
                if ch.calls + 1 not in described:
                    raise HorovodInternalError(
                        "join: every rank has joined, the last after call "
                        "%d, but no rank described call %d" %
                        (last, ch.calls + 1))
                continue
            if moved:
                pause = 1e-5
            else:
                time.sleep(pause)
                pause = min(pause * 2, 1e-3)
        with ch.lock:
            self._reap(block=True)
            self.round += 1
            self.self_joined = False
            self.ended = set()
            self.joined = self.later.pop(self.round, {})
            ch.journal.clear()
        if self.error is not None:
            raise self.error
        top = max(points.values())
        return ch.global_ranks[max(r for r, p in points.items() if p == top)]

    def _post(self, peer):
        buf = _Desc()
        req = ctypes.c_void_p()
        st = lib.weft_irecv_tag(buf, _DESC_WORDS, _lib.INT64, peer,
                                _TAG_DESC, self.side._h, ctypes.byref(req))
        if st < 0:
            raise failure(st, "join receive", self.side)
        return req, buf

    def _take_part(self, desc):
        send, recv = buffer_bytes(desc, self.channel.size)
        if self._zeros is None or len(self._zeros) < send:
            self._zeros = ctypes.create_string_buffer(max(send, 1))
        if self._scratch is None or len(self._scratch) < recv:
            self._scratch = ctypes.create_string_buffer(max(recv, 1))
        self.channel.take_part(desc, ctypes.addressof(self._zeros),
                               ctypes.addressof(self._scratch))

    # -- shutdown ----------------------------------------------------------

    def close(self):
        """Ends the watchers and destroys the side communicator.  A barrier
        of the global channel (which has a deadline) first makes sure that
        every rank is here; then every rank sends the next one a BYE, which
        completes that rank's pending receive, and destroys the side
        communicator, which the others are destroying too.  When some
        rank does not come (or the global communicator has failed), the
        side communicator is aborted instead.  Returns (rank 0's rendezvous
        server, to stop after the global communicator, or None; whether
        every rank came)."""
        ch = self.channel
        self.closing = True
        try:
            ch.barrier()
        except HorovodInternalError:
            self.side.abort()       # wakes the watcher with ERR_ABORTED
            self.thread.join()
            return self.server, False
        with ch.lock:
            self._send((ch.rank + 1) % ch.size, _TAG_NOTICE, (_BYE, 0, 0),
                       _Notice)
        self.thread.join()
        with ch.lock:
            self._reap(block=True)
        self.side.destroy()
        return self.server, True
