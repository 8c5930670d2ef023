"""Which gradients are reduced together: Horovod's Tensor Fusion, planned
once instead of per cycle.

Horovod fuses whatever tensors happen to be ready in each 1 ms cycle, and
its coordinator makes every rank agree on the result.  weft has no
coordinator: every rank must call the same collectives in the same order.
So the buckets are fixed when DistributedOptimizer is built, from the
parameters in their (identical) order on every rank, and reduced in
bucket order, each as soon as all its gradients are ready.  The plan is
framework-independent: entries are (bytes, dtype key) in parameter order.
"""


def plan_buckets(entries, threshold, groups=None):
    """Lists of entry indices, in the order their reductions are issued.

    entries    (nbytes, dtype key) per entry, in the parameters' order
    threshold  the most bytes in one bucket; 0: every entry alone
    groups     None, or lists of entry indices that form buckets of their
               own (entries in no group are then alone, as in Horovod)

    Without groups the entries are taken last to first (backward computes
    the last layers' gradients first) and packed greedily, one dtype per
    bucket, a bucket closing when the next entry would pass the
    threshold.  An entry larger than the threshold is a bucket alone.
    """
    if groups is not None:
        grouped = set()
        buckets = []
        for g in groups:
            by_dtype = {}
            for i in g:
                by_dtype.setdefault(entries[i][1], []).append(i)
                grouped.add(i)
            buckets.extend(by_dtype.values())
        buckets.extend([i] for i in range(len(entries)) if i not in grouped)
        return [b for b in buckets if b]
    open_ = {}          # dtype key -> (bucket, bytes so far)
    buckets = []
    for i in reversed(range(len(entries))):
        nbytes, key = entries[i]
        bucket, used = open_.get(key, (None, 0))
        if bucket is None or threshold <= 0 or used + nbytes > threshold:
            bucket, used = [], 0
            buckets.append(bucket)
        bucket.append(i)
        open_[key] = (bucket, used + nbytes)
    return buckets


def split_evenly(items, parts):
    """`items` in `parts` consecutive runs of near-equal length (Horovod's
    groups=N)."""
    n = len(items)
    parts = max(1, min(parts, n)) if n else 1
    base, extra = divmod(n, parts)
    out, at = [], 0
    for p in range(parts):
        k = base + (1 if p < extra else 0)
        out.append(items[at:at + k])
        at += k
    return [o for o in out if o]
