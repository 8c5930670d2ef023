"""DistributedOptimizer's fusion buffers: gradients packed into one flat
tensor per bucket (common/fusion_plan.py), each bucket's allreduce started
from the backward hook that completes it, in bucket order.

A bucket of one gradient that needs no conversion is reduced in place in
the gradient itself; every other bucket has a flat buffer, allocated once,
that gradients are copied into as they become ready (in the compressed
dtype) and copied back out of after the reduction.
"""
import torch

from ..common.fusion_plan import plan_buckets
from ..common.reduce_ops import Average, Sum
from .tensors import reduction, scale_


class _Bucket:
    __slots__ = ("members", "views", "dtype", "wdt", "flat", "done",
                 "packed", "started")

    def __init__(self, members, views, dtype, wdt, flat):
        # views[pos]: member pos's place in flat, in its parameter's shape
        # (made once: a slice per gradient per step costs more than the
        # copy of a small gradient)
        self.members, self.views = members, views
        self.dtype, self.wdt, self.flat = dtype, wdt, flat
        self.done = [False] * len(members)    # packed this step
        self.packed = 0
        self.started = None


class GradBuckets:
    """params: the parameters in their order on every rank; channel: the
    process set's channel; op, predivide: DistributedOptimizer's."""

    def __init__(self, params, compression, threshold, groups, op, predivide,
                 channel):
        self.params = params
        self.channel = channel
        self.compression = compression
        if op == Average and predivide != 1.0:
            # Horovod's split of the average around the sum
            self.op, self.pre, self.post = Sum, 1.0 / predivide, \
                predivide / channel.size
        else:
            self.op, self.pre, self.post = op, 1.0, 1.0
        entries = []
        for p in params:
            dtype = self._compressed_dtype(p)
            entries.append((p.numel() * torch.empty(0, dtype=dtype)
                            .element_size(), dtype))
        self.buckets = []
        self.where = {}             # param index -> (bucket, position)
        for members in plan_buckets(entries, threshold, groups):
            dtype = entries[members[0]][1]
            wdt, wop, rdtype = reduction(torch.empty(0, dtype=dtype),
                                         self.op, "DistributedOptimizer")
            if rdtype != dtype:
                raise ValueError("DistributedOptimizer: gradients of dtype %s"
                                 " cannot be reduced by weft" % dtype)
            self.wop = wop
            alone = len(members) == 1 and dtype == params[members[0]].dtype
            views = []
            flat = None
            if not alone:
                flat = torch.empty(sum(params[i].numel() for i in members),
                                   dtype=dtype)
                at = 0
                for i in members:
                    n = params[i].numel()
                    views.append(flat[at:at + n].view(params[i].shape))
                    at += n
            b = _Bucket(members, views, dtype, wdt, flat)
            for pos, i in enumerate(members):
                self.where[i] = (b, pos)
            self.buckets.append(b)
        self.next = 0               # the next bucket to start

    def _compressed_dtype(self, p):
        probe, _ = self.compression.compress(torch.empty(0, dtype=p.dtype))
        return probe.dtype

    @property
    def busy(self):
        """Whether a gradient has been packed since the last finish()."""
        return self.next > 0 or any(b.packed for b in self.buckets)

    def packed(self, i):
        """Whether parameter i's gradient was packed this step."""
        b, pos = self.where[i]
        return b.done[pos]

    def ready(self, i):
        """Parameter i's gradient is final for this step: pack it, and
        start every bucket that is complete and next in order."""
        b, pos = self.where[i]
        self._pack(b, pos)
        while self.next < len(self.buckets) and \
                self.buckets[self.next].packed == len(
                    self.buckets[self.next].members):
            self._start(self.buckets[self.next])
            self.next += 1

    def _grad(self, i):
        p = self.params[i]
        if p.grad is None:
            # another rank may have a gradient for it (a branch this rank
            # did not take): take part with zeros, as Horovod does
            p.grad = torch.zeros_like(p)
        if p.grad.is_sparse:
            raise ValueError("DistributedOptimizer: parameter %d has a sparse "
                             "gradient; weft.horovod reduces dense gradients "
                             "only (pass sparse_as_dense=True)" % i)
        return p.grad

    def _pack(self, b, pos):
        i = b.members[pos]
        g = self._grad(i)
        if b.flat is not None:
            b.views[pos].copy_(g)
        elif not g.is_contiguous():
            self.params[i].grad = g.contiguous()
        b.done[pos] = True
        b.packed += 1

    def _buffer(self, b):
        return b.flat if b.flat is not None else \
            self.params[b.members[0]].grad

    def _start(self, b):
        buf = self._buffer(b)
        scale_(buf, self.pre)
        b.started = self.channel.allreduce(buf.data_ptr(), buf.data_ptr(),
                                           buf.numel(), b.wdt, self.wop,
                                           start=True)

    def finish(self):
        """Packs what no hook packed, starts what has not started, waits
        for every bucket, and writes the results into the gradients."""
        for b in self.buckets[self.next:]:
            for pos, done in enumerate(b.done):
                if not done:
                    self._pack(b, pos)
        while self.next < len(self.buckets):
            self._start(self.buckets[self.next])
            self.next += 1
        try:
            for b in self.buckets:
                b.started.wait()
        finally:
            self._clear()
        for b in self.buckets:
            b.started = None
            buf = self._buffer(b)
            scale_(buf, self.post)
            if b.flat is None:
                continue
            for pos, i in enumerate(b.members):
                self.params[i].grad.copy_(b.views[pos])

    def _clear(self):
        self.next = 0
        for b in self.buckets:
            b.packed = 0
            b.done = [False] * len(b.members)

    def reset(self):
        """Forgets a step in progress (load_state_dict)."""
        for b in self.buckets:
            if b.started is not None:
                b.started.wait()
                b.started = None
        self._clear()
