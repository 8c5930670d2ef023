"""Horovod's TensorFlow 2 and Keras recipes on weft, on synthetic data:
a classifier of 10 classes of 64 features, trained either with Keras's
fit() (DistributedOptimizer and Horovod's callbacks) or with a custom
tf.function loop over DistributedGradientTape.  Ends by checking that
every rank holds the same weights ("replicas identical").

    build/bin/weftrun -n 2 .venv-tf/bin/python python/examples/horovod_tensorflow.py
    build/bin/weftrun -n 2 .venv-tf/bin/python python/examples/horovod_tensorflow.py --loop tape
    mpirun -np 2 .venv-tf/bin/python python/examples/horovod_tensorflow.py
"""
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np          # noqa: E402
import tensorflow as tf     # noqa: E402
import tf_keras             # noqa: E402

import weft.horovod.tensorflow.keras as hvd     # noqa: E402
import weft.horovod.tensorflow as hvd_tf        # noqa: E402


def data(n, seed):
    """Points around 10 class centres: each class is learnable."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(0).normal(size=(10, 64))
    y = rng.integers(0, 10, size=n)
    x = centres[y] + 0.8 * rng.normal(size=(n, 64))
    return x.astype(np.float32), y.astype(np.int64)


def model():
    return tf_keras.Sequential([
        tf_keras.layers.Dense(64, activation="relu", input_shape=(64,)),
        tf_keras.layers.Dense(10)])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--loop", choices=("keras", "tape"), default="keras")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args()

    hvd.init()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    # each rank its own shard of the data, and its own initial weights
    # (the broadcast makes them rank 0's)
    x, y = data(1024, seed=1 + hvd.rank())
    tf_keras.utils.set_random_seed(hvd.rank())
    net = model()
    loss_fn = tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    lr = 0.01 * hvd.size()

    if args.loop == "keras":
        opt = hvd.DistributedOptimizer(tf_keras.optimizers.SGD(lr,
                                                               momentum=0.9))
        net.compile(optimizer=opt, loss=loss_fn, metrics=["accuracy"])
        net.fit(x, y, batch_size=args.batch_size, epochs=args.epochs,
                verbose=2 if hvd.rank() == 0 else 0, callbacks=[
                    hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                    hvd.callbacks.MetricAverageCallback(),
                    hvd.callbacks.LearningRateWarmupCallback(
                        lr, warmup_epochs=1, verbose=1)])
    else:
        opt = tf_keras.optimizers.SGD(lr, momentum=0.9)
        hvd_tf.broadcast_variables(net.variables, root_rank=0)

        @tf.function
        def step(xb, yb):
            with tf.GradientTape() as tape:
                loss = loss_fn(yb, net(xb, training=True))
            tape = hvd_tf.DistributedGradientTape(tape)
            grads = tape.gradient(loss, net.trainable_variables)
            opt.apply_gradients(zip(grads, net.trainable_variables))
            return loss

        ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(
            args.batch_size)
        for epoch in range(args.epochs):
            losses = [float(step(xb, yb)) for xb, yb in ds]
            mean = hvd.allreduce(np.array(np.mean(losses)))
            if hvd.rank() == 0:
                print("epoch %d: loss %.4f" % (epoch + 1, float(mean)))

    xt, yt = data(512, seed=999)
    acc = float(np.mean(np.argmax(net(xt).numpy(), 1) == yt))
    acc = float(hvd.allreduce(np.array(acc)))
    weights = [w.tolist() for w in net.get_weights()]
    every = hvd.allgather_object(weights)
    same = all(w == every[0] for w in every)
    print("rank %d: test accuracy %.3f, %s" % (
        hvd.rank(), acc, "replicas identical" if same else
        "REPLICAS DIFFER"))
    hvd.shutdown()
    raise SystemExit(0 if same else 1)


if __name__ == "__main__":
    main()
