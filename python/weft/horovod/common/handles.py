"""Horovod's async handles: integers that poll() and synchronize() take.

A handle stands for one operation that may have started several weft
operations (a grouped allreduce of several dtypes, say).  Its buffers
stay referenced here until synchronize() has finished it.
"""
import itertools


class Pending:
    """started: the channel operations (channel.Started) to end;
    finish: called once after they ended, returns the result;
    keep: whatever must outlive the operations (buffers)."""

    __slots__ = ("started", "finish", "keep")

    def __init__(self, started, finish, keep=None):
        self.started, self.finish, self.keep = started, finish, keep

    def poll(self):
        return all(s.test() for s in self.started)

    def wait(self):
        for s in self.started:
            s.wait()
        return self.finish()


class HandleTable:
    def __init__(self):
        self._pending = {}
        self._ids = itertools.count(1)

    def add(self, pending):
        handle = next(self._ids)
        self._pending[handle] = pending
        return handle

    def poll(self, handle):
        """True once the operation has completed (synchronize() then
        returns without blocking).  A failed operation raises here."""
        try:
            pending = self._pending[handle]
        except KeyError:
            raise ValueError("hvd.poll: handle %r is not an operation in "
                             "flight (already synchronized, or not a "
                             "handle)" % (handle,))
        try:
            return pending.poll()
        except Exception:
            self._pending.pop(handle, None)
            raise

    def synchronize(self, handle):
        """Waits for the operation and returns its result; None for a
        handle that is not in flight, as in Horovod."""
        pending = self._pending.pop(handle, None)
        if pending is None:
            return None
        return pending.wait()

    def clear(self):
        self._pending.clear()
