"""Gradient compression, Horovod's interface for TensorFlow tensors:
compress(tensor) gives the tensor to send and a context,
decompress(tensor, context) the result in the original dtype."""
import tensorflow as tf

from ..common.compression import Compressor, NoneCompressor  # noqa: F401


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16 (half the bytes; the sum is
    rounded to float16 at every step of the reduction); other dtypes as
    they are."""

    @staticmethod
    def compress(tensor):
        if tensor.dtype.is_floating and tensor.dtype != tf.float16:
            return tf.cast(tensor, tf.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else tf.cast(tensor, ctx)


class Compression:
    none = NoneCompressor
    fp16 = FP16Compressor
