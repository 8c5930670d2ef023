"""Horovod's Keras callbacks, for tf_keras (the Keras 2 API)."""
import numpy as np
import tf_keras

from ...common import arrays, basics
from ...common.process_sets import global_process_set
from ...common.reduce_ops import Average
from ..ops import broadcast_variables


def _optimizer_variables(optimizer):
    v = getattr(optimizer, "variables", None)
    if v is None:
        return []
    return list(v() if callable(v) else v)


def broadcast_model(model, root_rank, process_set=global_process_set):
    """The model's variables and its optimizer's from root_rank, as one
    broadcast."""
    variables = list(model.variables)
    if model.optimizer is not None:
        variables += _optimizer_variables(model.optimizer)
    broadcast_variables(variables, root_rank, process_set=process_set)


class BroadcastGlobalVariablesCallback(tf_keras.callbacks.Callback):
    """Makes every rank start from root_rank's model.

    The model's variables are broadcast when training begins, if the model
    is built by then, so that the first step already runs on equal
    weights; and again, with the optimizer's variables (which Keras
    creates at the first step), at the end of the first batch, as
    Horovod does."""

    def __init__(self, root_rank, device="", process_set=global_process_set):
        super().__init__()
        self.root_rank = root_rank
        self.process_set = process_set
        self.broadcast_done = False

    def on_train_begin(self, logs=None):
        if self.model.built and self.model.variables:
            broadcast_variables(self.model.variables, self.root_rank,
                                process_set=self.process_set)

    def on_batch_end(self, batch, logs=None):
        if self.broadcast_done:
            return
        broadcast_model(self.model, self.root_rank, self.process_set)
        self.broadcast_done = True


class MetricAverageCallback(tf_keras.callbacks.Callback):
    """Replaces each metric of an epoch's logs by its average over the
    ranks, before the callbacks after it in the list see them (put it
    before ModelCheckpoint, TensorBoard, EarlyStopping)."""

    def __init__(self, device="", process_set=global_process_set):
        super().__init__()
        self.process_set = process_set

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        keys = sorted(logs)         # the same order on every rank
        values = np.array([float(logs[k]) for k in keys], dtype=np.float64)
        ch = basics.channel_of(self.process_set, "MetricAverageCallback")
        avg = arrays.allreduce([values], Average, 1.0, 1.0, ch)[0]
        for k, v in zip(keys, avg):
            logs[k] = float(v)


def _set_lr(optimizer, value):
    lr = getattr(optimizer, "learning_rate", None)
    if hasattr(lr, "assign"):
        lr.assign(value)
    else:
        optimizer.learning_rate = value


def _get_lr(optimizer):
    lr = optimizer.learning_rate
    return float(lr.numpy() if hasattr(lr, "numpy") else lr)


class LearningRateWarmupCallback(tf_keras.callbacks.Callback):
    """Horovod's gradual warm-up ("Accurate, Large Minibatch SGD"): the
    learning rate grows linearly from initial_lr / size at the first batch
    to initial_lr after warmup_epochs epochs,

        lr = initial_lr / size * (epoch * (size - 1) / warmup_epochs + 1)

    with epoch fractional (epoch + batch / steps_per_epoch).  With
    momentum_correction, an optimizer whose momentum is a variable gets
    its momentum scaled by new_lr / old_lr for the batch where the rate
    changes (Keras 2 optimizers keep momentum as a Python number that the
    compiled step has already read, which no callback can change: those
    are left as they are)."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True,
                 steps_per_epoch=None, verbose=0):
        super().__init__()
        self.initial_lr = initial_lr
        self.warmup_epochs = warmup_epochs
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.verbose = verbose
        self.current_epoch = None
        self._restore_momentum = None

    def _steps(self):
        if self.steps_per_epoch:
            return self.steps_per_epoch
        steps = (self.params or {}).get("steps")
        if not steps:
            raise ValueError("LearningRateWarmupCallback needs "
                             "steps_per_epoch: Keras does not know the "
                             "number of steps of an epoch here")
        return steps

    def lr_at(self, epoch, batch):
        e = epoch + float(batch) / self._steps()
        return self.initial_lr / basics.size() * (
            e * (basics.size() - 1) / self.warmup_epochs + 1)

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def on_batch_begin(self, batch, logs=None):
        if self.current_epoch is None or \
                self.current_epoch >= self.warmup_epochs:
            return
        opt = self.model.optimizer
        old = _get_lr(opt)
        new = self.lr_at(self.current_epoch, batch)
        _set_lr(opt, new)
        momentum = getattr(opt, "momentum", None)
        if self.momentum_correction and hasattr(momentum, "assign") and old:
            self._restore_momentum = float(momentum.numpy())
            momentum.assign(self._restore_momentum * new / old)

    def on_batch_end(self, batch, logs=None):
        if self._restore_momentum is not None:
            self.model.optimizer.momentum.assign(self._restore_momentum)
            self._restore_momentum = None

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.warmup_epochs - 1:
            _set_lr(self.model.optimizer, self.initial_lr)
            if self.verbose and basics.rank() == 0:
                print("\nEpoch %d: finished gradual learning rate warmup to "
                      "%g." % (epoch + 1, self.initial_lr))
        if logs is not None:
            logs["lr"] = _get_lr(self.model.optimizer)
