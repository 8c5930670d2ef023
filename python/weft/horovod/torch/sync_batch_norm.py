"""hvd.SyncBatchNorm: batch normalization over the batch of every rank.

Horovod's version calls torch's CUDA-only batch_norm_stats kernels; this
one works on the CPU tensors weft moves.  Forward: one allreduce of each
channel's count, sum and sum of squares (in float64, so that the variance
E[x^2] - E[x]^2 does not cancel away) gives the global mean and variance.
Backward: one allreduce of each channel's sum of dy and of dy * x_hat
gives the input gradient of the loss summed over every rank; the weight
and bias gradients stay local, for the optimizer to reduce.
"""
import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from ..common import basics
from ..common.process_sets import global_process_set
from ..common.reduce_ops import Sum
from . import reductions


def _allreduce_sum(t, process_set):
    return reductions.allreduce(t, t, Sum, 1.0, 1.0, process_set, False)


class _SyncBatchNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps,
                momentum, process_set):
        c = x.shape[1]
        dims = [d for d in range(x.dim()) if d != 1]
        x64 = x.detach().to(torch.float64)
        stats = torch.cat([torch.tensor([x.numel() / c], dtype=torch.float64),
                           x64.sum(dims), (x64 * x64).sum(dims)])
        _allreduce_sum(stats, process_set)
        count = stats[0].item()
        mean = stats[1:1 + c] / count
        var = (stats[1 + c:] / count - mean * mean).clamp_(min=0)
        if running_mean is not None:
            unbiased = var * (count / max(count - 1, 1))
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype),
                                                 alpha=momentum)
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype),
                                                alpha=momentum)
        shape = [1, c] + [1] * (x.dim() - 2)
        invstd = (var + eps).rsqrt()
        xhat = ((x64 - mean.view(shape)) * invstd.view(shape)).to(x.dtype)
        ctx.save_for_backward(xhat, weight, invstd.to(x.dtype))
        ctx.count, ctx.process_set, ctx.dims, ctx.shape = \
            count, process_set, dims, shape
        y = xhat
        if weight is not None:
            y = y * weight.view(shape)
        if bias is not None:
            y = y + bias.view(shape)
        return y

    @staticmethod
    def backward(ctx, dy):
        xhat, weight, invstd = ctx.saved_tensors
        dims, shape = ctx.dims, ctx.shape
        sum_dy = dy.sum(dims)
        sum_dy_xhat = (dy * xhat).sum(dims)
        grad_w = sum_dy_xhat if weight is not None and \
            ctx.needs_input_grad[1] else None
        grad_b = sum_dy if ctx.needs_input_grad[2] else None
        grad_x = None
        if ctx.needs_input_grad[0]:
            c = sum_dy.numel()
            both = _allreduce_sum(torch.cat([sum_dy, sum_dy_xhat]),
                                  ctx.process_set)
            mean_dy = (both[:c] / ctx.count).view(shape)
            mean_dy_xhat = (both[c:] / ctx.count).view(shape)
            scale = invstd.view(shape)
            if weight is not None:
                scale = scale * weight.view(shape)
            grad_x = (dy - mean_dy - xhat * mean_dy_xhat) * scale
        return grad_x, grad_w, grad_b, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose statistics are those of the batches of
    every rank of `process_set` together (training mode); in eval mode it
    uses the running statistics, as BatchNorm does.  Takes inputs of 2 or
    more dimensions (N, C, ...)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_set=global_process_set):
        super().__init__(num_features, eps, momentum, affine,
                         track_running_stats)
        self.process_set = process_set

    def _check_input_dim(self, x):
        if x.dim() < 2:
            raise ValueError("expected at least 2D input (got %dD input)" %
                             x.dim())

    def forward(self, x):
        self._check_input_dim(x)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked)
        if not self.training and self.track_running_stats:
            return F.batch_norm(x, self.running_mean, self.running_var,
                                self.weight, self.bias, False, 0.0, self.eps)
        channel = basics.channel_of(self.process_set, "SyncBatchNorm")
        if channel.size == 1:
            return F.batch_norm(x, self.running_mean, self.running_var,
                                self.weight, self.bias, True, momentum,
                                self.eps)
        track = self.training and self.track_running_stats
        return _SyncBatchNormFn.apply(
            x, self.weight, self.bias,
            self.running_mean if track else None,
            self.running_var if track else None, self.eps, momentum,
            self.process_set)
