"""Horovod's process sets, each a weft communicator split from the global
one (weft_comm_split).

Process sets are collective, as in Horovod: every rank creates (and
removes) the same sets in the same order, members and non-members alike.
Roots are global ranks, as in Horovod; results are ordered by rank within
the set.  weft does not need HOROVOD_DYNAMIC_PROCESS_SETS: sets may be
added at any time.
"""
from collections.abc import Iterable


class ProcessSet:
    """A set of ranks that run collectives together.  Pass it to
    hvd.init(process_sets=[...]) or hvd.add_process_set(), then as
    process_set= to any collective."""

    process_set_id = None
    ranks = None
    mpi_comm = None

    def __init__(self, ranks):
        if not isinstance(ranks, Iterable) or isinstance(ranks, (str, bytes)):
            raise ValueError(
                "ProcessSet takes a list of ranks; weft.horovod does not use "
                "MPI, so an mpi4py communicator cannot define one")
        ranks = sorted(ranks)
        if any(not isinstance(r, int) or isinstance(r, bool) for r in ranks):
            raise ValueError("ProcessSet ranks must be integers, got %r" %
                             (ranks,))
        if len(set(ranks)) != len(ranks):
            raise ValueError("ProcessSet ranks repeat a rank: %r" % (ranks,))
        self.ranks = ranks
        self._channel = None

    def _invalidate(self):
        self.process_set_id = None
        self._channel = None

    def size(self):
        """Number of ranks in the set, or None before it is registered."""
        if self.process_set_id is None:
            return None
        return len(self.ranks)

    def rank(self):
        """This rank's index in the set, or None before it is registered.
        Raises ValueError when this rank is not a member, as Horovod does."""
        if self.process_set_id is None:
            return None
        if self._channel is None:
            raise ValueError("this process is not part of %s" % self)
        return self._channel.rank

    def included(self):
        """Whether this process is a member (None before hvd.init())."""
        from . import basics
        if self.ranks is None or not basics.is_initialized():
            return None
        return basics.rank() in self.ranks

    def __str__(self):
        return "ProcessSet(process_set_id=%s, ranks=%s)" % (
            self.process_set_id, self.ranks)

    __repr__ = __str__


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0
