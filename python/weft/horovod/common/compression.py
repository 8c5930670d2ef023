"""Horovod's compression interface, with what needs no framework:
compress(tensor) gives the tensor to send and a context,
decompress(tensor, context) the result in the original form.  Each
framework's module adds its FP16Compressor."""


class Compressor:
    @staticmethod
    def compress(tensor):
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends tensors as they are."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor
