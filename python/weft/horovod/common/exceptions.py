"""The exception Horovod's API raises when a collective fails."""


class HorovodInternalError(RuntimeError):
    """A collective failed inside weft: a timeout, a peer that failed or
    left, ranks that called different operations (weft's ERR_MISMATCH),
    or an argument the C library refused.  The weft.Error with the status
    name and the communicator's message is the exception's __cause__ and
    its `weft_error` attribute.  Horovod raises this class where its
    collectives fail; after it, the communicator is unusable, as in weft
    (errors are sticky): call hvd.shutdown() and hvd.init() again."""

    def __init__(self, message, weft_error=None):
        super().__init__(message)
        self.weft_error = weft_error
