"""weft.horovod.tensorflow against values computed here with numpy.

Every rank can build every rank's input (inputs depend only on the rank),
so each expected result is computed locally, in float64 or int64, and
compared with what the collective returned: exactly where the values are
small integers, within the dtype's rounding for averages.

Usage: hvd_tf_api.py PART... (PARTS below; "all" for every part).
"dtypes" runs every collective eagerly and in a tf.function with every
dtype Horovod supports on CPU, plus bfloat16 and bool; "core" the same
with float32, int32 and bool only.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np                      # noqa: E402
import tensorflow as tf                 # noqa: E402

import weft.horovod.tensorflow as hvd   # noqa: E402
from weft.horovod.tensorflow import gradients as hvd_gradients  # noqa: E402
from common import Report               # noqa: E402

# every collective below is traced in a tf.function of its own: the
# retracing warnings say nothing here
tf.get_logger().setLevel("ERROR")

HOROVOD_DTYPES = [tf.uint8, tf.int8, tf.uint16, tf.int16, tf.int32, tf.int64,
                  tf.float16, tf.float32, tf.float64]
EXTRA_DTYPES = [tf.bfloat16]
CORE_DTYPES = [tf.float32, tf.int32]
LOOSE = {tf.float16: 2e-3, tf.bfloat16: 1e-2, tf.float32: 1e-6,
         tf.float64: 1e-12}


def value(r, shape, mod=7):
    """Rank r's input as int64: small integers, so that sums are exact in
    every dtype (at most 4 ranks * 10 = 40, inside int8)."""
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.int64).reshape(shape) % mod) + r + 1


def as_np(t):
    return t.numpy() if hasattr(t, "numpy") else np.asarray(t)


def same(got, want, dtype):
    """got (a tensor) has dtype and want's values, exactly."""
    g = as_np(got)
    return got.dtype == dtype and g.shape == want.shape and \
        np.array_equal(g.astype(np.float64), want.astype(np.float64))


def close(got, want, dtype):
    g = as_np(got)
    return got.dtype == dtype and g.shape == want.shape and \
        np.allclose(g.astype(np.float64), want, rtol=LOOSE[dtype], atol=0)


def runner(graph):
    """Runs a function of no arguments eagerly, or as a tf.function."""
    if graph:
        return lambda f: tf.function(f)()
    return lambda f: f()


def collectives(rep, dtypes, R, N, graph):
    run = runner(graph)
    mode = "graph" if graph else "eager"
    shape = (3, 5)
    for dt in dtypes:
        every = [value(r, shape) for r in range(N)]
        x = tf.constant(every[R], dtype=dt)
        total = sum(every)
        name = "%s %s" % (dt.name, mode)
        with rep.case("allreduce Sum %s" % name):
            got = run(lambda: hvd.allreduce(x, op=hvd.Sum))
            rep.check("value", same(got, total, dt), as_np(got))
        with rep.case("allreduce Average %s" % name):
            got = run(lambda: hvd.allreduce(x))
            if dt.is_floating:
                rep.check("value", close(got, total / N, dt), as_np(got))
            else:   # integers: the sum divided, truncated toward zero
                rep.check("value", same(got, total // N, dt), as_np(got))
        for op, fn in ((hvd.Min, np.minimum), (hvd.Max, np.maximum)):
            with rep.case("allreduce %s %s" % (op, name)):
                want = every[0]
                for e in every[1:]:
                    want = fn(want, e)
                got = run(lambda: hvd.allreduce(x, op=op))
                rep.check("value", same(got, want, dt), as_np(got))
        with rep.case("allreduce Product %s" % name):
            small = [value(r, shape, mod=2) for r in range(N)]
            got = run(lambda: hvd.allreduce(tf.constant(small[R], dt),
                                            op=hvd.Product))
            rep.check("value", same(got, np.prod(small, axis=0), dt),
                      as_np(got))
        with rep.case("allgather uneven %s" % name):
            # rank r gives r rows: rank 0 none
            rows = [value(r, (r, 4)) for r in range(N)]
            got = run(lambda: hvd.allgather(tf.constant(rows[R], dt)
                                            if R else tf.zeros((0, 4), dt)))
            rep.check("value", same(got, np.concatenate(rows), dt),
                      as_np(got))
        for root in range(N):
            with rep.case("broadcast root %d %s" % (root, name)):
                got = run(lambda: hvd.broadcast(x, root_rank=root))
                rep.check("value", same(got, every[root], dt), as_np(got))
        with rep.case("alltoall splits %s" % name):
            # rank r sends d + r rows to rank d (zeros included at r=d=0)
            sends = [[d + r for d in range(N)] for r in range(N)]
            data = [value(r, (sum(sends[r]), 2)) for r in range(N)]
            got, recv = run(lambda: hvd.alltoall(tf.constant(data[R], dt),
                                                 splits=sends[R]))
            want = []
            for r in range(N):
                first = sum(sends[r][:R])
                want.append(data[r][first:first + sends[r][R]])
            rep.check("value", same(got, np.concatenate(want), dt),
                      as_np(got))
            rep.check("received splits", recv.dtype == tf.int32 and
                      as_np(recv).tolist() == [sends[r][R]
                                               for r in range(N)],
                      as_np(recv))
        with rep.case("alltoall even %s" % name):
            data = [value(r, (2 * N, 3)) for r in range(N)]
            got, _ = run(lambda: hvd.alltoall(tf.constant(data[R], dt)))
            want = np.concatenate([data[r][2 * R:2 * R + 2]
                                   for r in range(N)])
            rep.check("value", same(got, want, dt), as_np(got))
        with rep.case("reducescatter Sum uneven %s" % name):
            rows = 2 * N + 1        # rank 0 gets one row more
            data = [value(r, (rows, 2)) for r in range(N)]
            got = run(lambda: hvd.reducescatter(tf.constant(data[R], dt),
                                                op=hvd.Sum))
            split = [rows // N + (1 if r < rows % N else 0)
                     for r in range(N)]
            first = sum(split[:R])
            want = sum(data)[first:first + split[R]]
            rep.check("value", same(got, want, dt), as_np(got))
        if dt.is_floating:
            with rep.case("reducescatter Average %s" % name):
                data = [value(r, (2 * N, 2)) for r in range(N)]
                got = run(lambda: hvd.reducescatter(tf.constant(data[R], dt)))
                want = (sum(data) / N)[2 * R:2 * R + 2]
                rep.check("value", close(got, want, dt), as_np(got))
            with rep.case("allreduce scale factors %s" % name):
                got = run(lambda: hvd.allreduce(x, op=hvd.Sum,
                                                prescale_factor=0.5,
                                                postscale_factor=4.0))
                rep.check("value", close(got, total * 2.0, dt), as_np(got))
    with rep.case("broadcast 0-d %s" % mode):
        got = run(lambda: hvd.broadcast(tf.constant(float(R + 5)), N - 1))
        rep.check("value", same(got, np.array(float(N + 4)), tf.float32),
                  as_np(got))
    # bool: data movement, Sum/Max as "or", Min/Product as "and"
    flags = [np.array([r == 0, r == 1, True, False]) for r in range(N)]
    b = tf.constant(flags[R])
    with rep.case("allreduce bool %s" % mode):
        rep.check("or", same(run(lambda: hvd.allreduce(b, op=hvd.Sum)),
                             np.logical_or.reduce(flags), tf.bool))
        rep.check("and", same(run(lambda: hvd.allreduce(b, op=hvd.Min)),
                              np.logical_and.reduce(flags), tf.bool))
    with rep.case("allgather bool %s" % mode):
        rep.check("value", same(run(lambda: hvd.allgather(b)),
                                np.concatenate(flags), tf.bool))
    with rep.case("broadcast bool %s" % mode):
        rep.check("value", same(run(lambda: hvd.broadcast(b, N - 1)),
                                flags[N - 1], tf.bool))


def grouped(rep, R, N, graph):
    run = runner(graph)
    mode = "graph" if graph else "eager"
    dts = [tf.float32, tf.int32, tf.float32, tf.float64]
    shapes = [(2, 3), (4,), (1,), (3, 1)]
    every = [[value(r, s) for s, _ in zip(shapes, dts)] for r in range(N)]
    mine = [tf.constant(v, d) for v, d in zip(every[R], dts)]
    with rep.case("grouped_allreduce %s" % mode):
        got = run(lambda: hvd.grouped_allreduce(mine, op=hvd.Sum))
        for i, d in enumerate(dts):
            rep.check("tensor %d" % i, same(got[i], sum(e[i] for e in every),
                                            d), as_np(got[i]))
    with rep.case("grouped_allgather %s" % mode):
        got = run(lambda: hvd.grouped_allgather(mine))
        for i, d in enumerate(dts):
            rep.check("tensor %d" % i, same(got[i], np.concatenate(
                [e[i] for e in every]), d), as_np(got[i]))
    with rep.case("grouped_reducescatter %s" % mode):
        data = [[value(r, (N + i, 2)) for i in range(2)] for r in range(N)]
        got = run(lambda: hvd.grouped_reducescatter(
            [tf.constant(v, tf.float32) for v in data[R]], op=hvd.Sum))
        for i in range(2):
            rows = N + i
            split = [rows // N + (1 if r < rows % N else 0)
                     for r in range(N)]
            first = sum(split[:R])
            want = sum(d[i] for d in data)[first:first + split[R]]
            rep.check("tensor %d" % i, same(got[i], want, tf.float32),
                      as_np(got[i]))


def gradients(rep, R, N):
    """Gradients of the sum of every rank's loss, computed by hand."""
    w = [np.arange(3, dtype=np.float64) + r for r in range(N)]
    x = tf.constant(w[R], tf.float32)
    with rep.case("allreduce gradient"):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = hvd.allreduce(x * (R + 1.0), op=hvd.Sum)
        g = tape.gradient(y, x)
        # d/dx of sum over ranks of (sum_s (s+1) x_s): allreduce(Sum) of
        # the gradient (1 everywhere) times (R + 1)
        rep.check("value", close(g, np.full(3, (R + 1.0) * N), tf.float32),
                  as_np(g))
    with rep.case("allgather gradient"):
        rows = [value(r, (r + 1, 2)).astype(np.float64) for r in range(N)]
        xr = tf.constant(rows[R], tf.float32)
        with tf.GradientTape() as tape:
            tape.watch(xr)
            y = hvd.allgather(xr)
            loss = tf.reduce_sum(y * y) * (R + 1.0)
        g = tape.gradient(loss, xr)
        # every rank's loss weighs my rows by (s + 1): sum_s 2 (s+1) x
        want = 2 * rows[R] * sum(s + 1.0 for s in range(N))
        rep.check("value", close(g, want, tf.float32), as_np(g))
    with rep.case("broadcast gradient"):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = hvd.broadcast(x, root_rank=0)
            loss = tf.reduce_sum(y) * (R + 1.0)
        g = tape.gradient(loss, x)
        want = np.full(3, sum(s + 1.0 for s in range(N))) if R == 0 \
            else np.zeros(3)
        rep.check("value", close(g, want, tf.float32), as_np(g))
    with rep.case("alltoall gradient"):
        data = tf.constant(value(R, (2 * N, 2)), tf.float32)
        with tf.GradientTape() as tape:
            tape.watch(data)
            y, _ = hvd.alltoall(data)
            loss = tf.reduce_sum(y) * (R + 1.0)
        g = tape.gradient(loss, data)
        # my rows 2d, 2d+1 went to rank d, whose loss weighs them d + 1
        want = np.repeat(np.arange(1.0, N + 1), 2)[:, None] * np.ones((1, 2))
        rep.check("value", close(g, want, tf.float32), as_np(g))
    with rep.case("reducescatter gradient"):
        data = tf.constant(value(R, (N, 2)), tf.float32)
        with tf.GradientTape() as tape:
            tape.watch(data)
            y = hvd.reducescatter(data, op=hvd.Sum)
            loss = tf.reduce_sum(y) * (R + 1.0)
        g = tape.gradient(loss, data)
        want = np.arange(1.0, N + 1)[:, None] * np.ones((1, 2))
        rep.check("value", close(g, want, tf.float32), as_np(g))


def linear_data(r, m=6, d=3, step=0):
    rng = np.random.default_rng(1000 * step + r)
    return rng.normal(size=(m, d)), rng.normal(size=(m, 1))


def tape_loop(rep, R, N):
    """DistributedGradientTape in a tf.function training loop: 10 steps of
    least squares, each rank on its own data, against the same steps done
    here in float64 with the gradients averaged by hand."""
    lr, steps = 0.1, 10
    w = tf.Variable(np.ones((3, 1)), dtype=tf.float64)

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.matmul(xb, w) - yb) ** 2)
        tape = hvd.DistributedGradientTape(tape)
        (g,) = tape.gradient(loss, [w])
        w.assign_sub(lr * g)
        return loss

    ref = np.ones((3, 1))
    for s in range(steps):
        xb, yb = linear_data(R, step=s)
        step(tf.constant(xb), tf.constant(yb))
        grads = []
        for r in range(N):
            xr, yr = linear_data(r, step=s)
            grads.append(2.0 / len(xr) * xr.T @ (xr @ ref - yr))
        ref = ref - lr * sum(grads) / N
    rep.check("DistributedGradientTape in tf.function: 10 steps equal the "
              "averaged-gradient steps", np.allclose(w.numpy(), ref,
                                                     rtol=1e-12, atol=1e-12),
              "got %s, expected %s" % (w.numpy().ravel(), ref.ravel()))
    rep.check("DistributedGradientTape: one traced graph",
              step.experimental_get_tracing_count() == 1,
              step.experimental_get_tracing_count())
    same_w = hvd.allgather_object(w.numpy().tolist())
    rep.check("DistributedGradientTape: replicas equal",
              all(v == same_w[0] for v in same_w), same_w)


class CountingReduce:
    """Counts the allreduce ops DistributedOptimizer builds (one per
    fusion bucket) and the dtypes sent."""

    def __init__(self):
        self.calls, self.dtypes = 0, []
        self.real = hvd_gradients._allreduce_raw

    def __call__(self, tensors, *args):
        self.calls += 1
        self.dtypes += [t.dtype for t in tensors]
        return self.real(tensors, *args)

    def __enter__(self):
        hvd_gradients._allreduce_raw = self
        return self

    def __exit__(self, *exc):
        hvd_gradients._allreduce_raw = self.real


def optimizer(rep, R, N):
    """DistributedOptimizer over a Keras optimizer: gradients averaged,
    fusion, groups, backward_passes_per_step, fp16, predivide, Sum."""
    import tf_keras
    shapes = [(2, 3), (3,), (4, 1), (1,), (2, 2), (5,)]

    def grads_of(r, k=0):
        # small integers: every average below is exact in float32
        return [np.full(s, float(2 * (r + 1) * (i + 1) + k)) for i, s in
                enumerate(shapes)]

    def fresh():
        return [tf.Variable(np.zeros(s), dtype=tf.float32) for s in shapes]

    def apply(opt, variables, grads):
        opt.apply_gradients(zip([tf.constant(g, tf.float32) for g in grads],
                                variables))

    def expect_values(variables, want, label):
        ok = all(np.array_equal(v.numpy(), w.astype(np.float32))
                 for v, w in zip(variables, want))
        rep.check(label, ok, "got %s, expected %s" % (
            [v.numpy().ravel()[:2] for v in variables],
            [w.ravel()[:2] for w in want]))

    avg = [sum(g[i] for g in (grads_of(r) for r in range(N))) / N
           for i in range(len(shapes))]
    buckets = {}
    for label, env in (("fused", None), ("unfused", "0")):
        if env is None:
            os.environ.pop("HOROVOD_FUSION_THRESHOLD", None)
        else:
            os.environ["HOROVOD_FUSION_THRESHOLD"] = env
        v = fresh()
        opt = hvd.DistributedOptimizer(tf_keras.optimizers.SGD(1.0))
        with CountingReduce() as c:
            apply(opt, v, grads_of(R))
        buckets[label] = c.calls
        expect_values(v, [-a for a in avg], "averaged gradients, %s" % label)
    os.environ.pop("HOROVOD_FUSION_THRESHOLD", None)
    if N > 1:
        rep.check("one bucket fused, one per gradient unfused",
                  buckets == {"fused": 1, "unfused": len(shapes)}, buckets)
    else:
        rep.check("one rank: nothing to reduce",
                  buckets == {"fused": 0, "unfused": 0}, buckets)
    rep.data["buckets"] = buckets

    v = fresh()
    opt = hvd.DistributedOptimizer(tf_keras.optimizers.SGD(1.0), groups=2)
    with CountingReduce() as c:
        apply(opt, v, grads_of(R))
    expect_values(v, [-a for a in avg], "groups=2: averaged gradients")
    rep.check("groups=2: two allreduce ops", c.calls == (2 if N > 1 else 0),
              c.calls)

    v = fresh()
    opt = hvd.DistributedOptimizer(tf_keras.optimizers.SGD(1.0),
                                   compression=hvd.Compression.fp16)
    with CountingReduce() as c:
        apply(opt, v, grads_of(R))
    expect_values(v, [-a for a in avg], "fp16: averaged gradients")
    rep.check("fp16: sent as float16", N == 1 or
              set(c.dtypes) == {tf.float16}, c.dtypes)
    rep.check("fp16: variables stay float32",
              all(x.dtype == tf.float32 for x in v), [x.dtype for x in v])

    v = fresh()
    opt = hvd.DistributedOptimizer(tf_keras.optimizers.SGD(1.0),
                                   gradient_predivide_factor=2.0)
    apply(opt, v, grads_of(R))
    expect_values(v, [-a for a in avg], "gradient_predivide_factor=2")

    v = fresh()
    opt = hvd.DistributedOptimizer(tf_keras.optimizers.SGD(1.0), op=hvd.Sum)
    apply(opt, v, grads_of(R))
    expect_values(v, [-a * N for a in avg], "op=Sum")

    # backward_passes_per_step=2: nothing moves after the first call; the
    # second applies the average over ranks of the two passes' sum
    for average in (False, True):
        v = fresh()
        opt = hvd.DistributedOptimizer(tf_keras.optimizers.SGD(1.0),
                                       backward_passes_per_step=2,
                                       average_aggregated_gradients=average)
        with CountingReduce() as c:
            apply(opt, v, grads_of(R, 0))
            first = [x.numpy().copy() for x in v]
            calls_after_first = c.calls
            apply(opt, v, grads_of(R, 1))
        rep.check("backward_passes_per_step=2: first pass applies nothing",
                  all(not f.any() for f in first) and
                  calls_after_first == 0, (first, calls_after_first))
        both = [sum(grads_of(r, 0)[i] + grads_of(r, 1)[i]
                    for r in range(N)) / N for i in range(len(shapes))]
        if average:
            both = [b / 2 for b in both]
        expect_values(v, [-b for b in both],
                      "backward_passes_per_step=2 average_aggregated=%s"
                      % average)

    # the other optimizers DistributedOptimizer wraps: Keras 3's
    # (apply_gradients) and tf.compat.v1's (compute_gradients)
    import keras
    g = [tf.constant(grads_of(R)[0], tf.float32)]
    v = [tf.Variable(np.zeros(shapes[0]), dtype=tf.float32)]
    hvd.DistributedOptimizer(keras.optimizers.SGD(1.0)).apply_gradients(
        zip(g, v))
    expect_values(v, [-avg[0]], "Keras 3 optimizer: averaged gradients")
    v1 = hvd.DistributedOptimizer(
        tf.compat.v1.train.GradientDescentOptimizer(1.0))
    w = tf.Variable(np.ones(shapes[0]), dtype=tf.float32)
    ((got, _),) = v1.compute_gradients(lambda: tf.reduce_sum(w * g[0]),
                                       var_list=[w])
    rep.check("tf.compat.v1 optimizer: averaged gradients",
              np.array_equal(got.numpy(), avg[0].astype(np.float32)),
              got.numpy())

    with rep.case("arguments refused"):
        for bad in (lambda: hvd.DistributedOptimizer(
                        tf_keras.optimizers.SGD(1.0),
                        backward_passes_per_step=0),
                    lambda: hvd.DistributedOptimizer(
                        tf_keras.optimizers.SGD(1.0), op=hvd.Sum,
                        gradient_predivide_factor=2.0),
                    lambda: hvd.alltoall(tf.zeros([N + 1]),
                                         splits=[1] * (N + 2))):
            try:
                bad()
                rep.check("raised ValueError", False, "no error")
            except ValueError:
                pass
        try:
            hvd.allreduce(tf.ones([2]), op=hvd.Adasum)
            rep.check("Adasum refused", False, "no error")
        except NotImplementedError:
            pass


def process_sets(rep, R, N):
    objects(rep, R, N)
    if N == 1:
        return          # the only set of one rank is the global one
    even = list(range(0, N, 2))
    ps = hvd.add_process_set(even)
    try:
        with rep.case("allreduce in a process set"):
            if R in even:
                got = hvd.allreduce(tf.constant([float(R + 1)]), op=hvd.Sum,
                                    process_set=ps)
                rep.check("value", same(got, np.array([sum(r + 1.0 for r in
                                                           even)]),
                                        tf.float32), as_np(got))
            else:
                try:
                    hvd.allreduce(tf.ones([1]), process_set=ps)
                    rep.check("non-member refused", False, "no error")
                except ValueError:
                    pass
        with rep.case("broadcast in a process set, root a global rank"):
            if R in even:
                root = even[-1]
                got = hvd.broadcast(tf.constant([R]), root, process_set=ps)
                rep.check("value", as_np(got).tolist() == [root], as_np(got))
    finally:
        hvd.remove_process_set(ps)


def objects(rep, R, N):
    with rep.case("objects"):
        rep.check("allgather_object", hvd.allgather_object({"r": R}) ==
                  [{"r": r} for r in range(N)])
        rep.check("broadcast_object", hvd.broadcast_object(
            "from %d" % R, root_rank=N - 1) == "from %d" % (N - 1))


def keras_training(rep, R, N):
    """A tf_keras model trained 30 steps with DistributedOptimizer and
    BroadcastGlobalVariablesCallback (each rank starting from its own
    random weights), against the same 30 steps on this process alone with
    the global batch from rank 0's weights."""
    import tf_keras
    import weft.horovod.tensorflow.keras as khvd
    local, steps, d = 8, 30, 4
    G = local * N
    rng = np.random.default_rng(7)
    X = rng.normal(size=(steps * G, d)).astype(np.float32)
    Y = (X @ rng.normal(size=(d, 1)) + 0.1 * rng.normal(size=(steps * G, 1))
         ).astype(np.float32)

    def model(seed):
        tf_keras.utils.set_random_seed(seed)
        m = tf_keras.Sequential([
            tf_keras.layers.Dense(8, activation="tanh", input_shape=(d,)),
            tf_keras.layers.Dense(1)])
        return m

    ref = model(100)                # rank 0's weights
    ref.compile(optimizer=tf_keras.optimizers.SGD(0.05, momentum=0.9),
                loss="mse")
    w0 = [w.copy() for w in ref.get_weights()]

    m = model(100 + R)
    start_differs = any(not np.array_equal(a, b)
                        for a, b in zip(m.get_weights(), w0))
    rep.check("keras: the ranks start from different weights",
              start_differs == (R != 0), start_differs)
    m.compile(optimizer=khvd.DistributedOptimizer(
        tf_keras.optimizers.SGD(0.05, momentum=0.9)), loss="mse")
    # batch i of this rank: rows [i*G + R*local, i*G + (R+1)*local)
    idx = np.concatenate([np.arange(i * G + R * local,
                                    i * G + (R + 1) * local)
                          for i in range(steps)])
    m.fit(X[idx], Y[idx], batch_size=local, epochs=1, shuffle=False,
          verbose=0, callbacks=[
              khvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    ref.fit(X, Y, batch_size=G, epochs=1, shuffle=False, verbose=0)
    mine = m.get_weights()
    every = hvd.allgather_object([w.tolist() for w in mine])
    rep.check("keras: parameters equal on every rank",
              all(e == every[0] for e in every), "differ")
    rel = max(float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))
              for a, b in zip(mine, ref.get_weights()))
    rep.data["keras_relative"] = rel
    rep.check("keras: equal to one process on the global batch (within "
              "float32 rounding)", rel < 1e-5, rel)
    moved = max(float(np.max(np.abs(a - b))) for a, b in zip(mine, w0))
    rep.check("keras: training moved the weights", moved > 1e-3, moved)


def keras_callbacks(rep, R, N):
    import tf_keras
    import weft.horovod.tensorflow.keras as khvd
    cb = khvd.callbacks.MetricAverageCallback()
    logs = {"loss": float(R + 1), "acc": 2.0 * R}
    cb.on_epoch_end(0, logs)
    rep.check("MetricAverageCallback", logs == {
        "loss": sum(r + 1.0 for r in range(N)) / N,
        "acc": sum(2.0 * r for r in range(N)) / N}, logs)
    # warm-up: 2 epochs of 4 steps, lr from 0.1/N to 0.1
    m = tf_keras.Sequential([tf_keras.layers.Dense(1, input_shape=(2,))])
    m.compile(optimizer=tf_keras.optimizers.SGD(0.1), loss="mse")
    seen = []

    class Record(tf_keras.callbacks.Callback):
        def on_batch_begin(self, batch, logs=None):
            seen.append(float(self.model.optimizer.learning_rate.numpy()))
    m.fit(np.zeros((8, 2)), np.zeros((8, 1)), batch_size=2, epochs=3,
          verbose=0, shuffle=False, callbacks=[
              khvd.callbacks.LearningRateWarmupCallback(
                  0.1, warmup_epochs=2, steps_per_epoch=4), Record()])
    want = [0.1 / N * ((e + b / 4.0) * (N - 1) / 2 + 1)
            for e in range(2) for b in range(4)] + [0.1] * 4
    rep.check("LearningRateWarmupCallback", np.allclose(seen, want,
                                                        rtol=1e-6), seen)
    with rep.case("keras allreduce returns numpy"):
        got = khvd.allreduce(np.array([R + 1.0]), op=khvd.Sum)
        rep.check("value", isinstance(got, np.ndarray) and
                  got.tolist() == [sum(r + 1.0 for r in range(N))], got)


PARTS = {
    "basics": lambda rep, R, N: rep.check(
        "rank and size", (hvd.rank(), hvd.size()) == (R, N) and
        hvd.local_size() == N and hvd.local_rank() == R and
        hvd.weft_built() and not hvd.mpi_built(),
        (hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size())),
    "core": lambda rep, R, N: collectives(rep, CORE_DTYPES, R, N, False) or
    collectives(rep, CORE_DTYPES, R, N, True),
    "dtypes": lambda rep, R, N: collectives(
        rep, HOROVOD_DTYPES + EXTRA_DTYPES, R, N, False) or collectives(
        rep, HOROVOD_DTYPES + EXTRA_DTYPES, R, N, True),
    "grouped": lambda rep, R, N: grouped(rep, R, N, False) or
    grouped(rep, R, N, True),
    "gradients": gradients,
    "tape": tape_loop,
    "optimizer": optimizer,
    "process_sets": process_sets,
    "keras": keras_training,
    "callbacks": keras_callbacks,
}


def main():
    parts = sys.argv[1:] or ["all"]
    if parts == ["all"]:
        parts = [p for p in PARTS if p != "core"]
    with Report() as rep:
        hvd.init()
        R, N = hvd.rank(), hvd.size()
        for p in parts:
            PARTS[p](rep, R, N)
        hvd.shutdown()


if __name__ == "__main__":
    main()
