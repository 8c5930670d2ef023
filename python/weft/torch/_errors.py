"""weft.torch.WeftError, what the native backend raises."""
import torch.distributed as dist

from .._core import Error


class WeftError(Error, dist.DistBackendError):
    """A weft failure inside torch.distributed: both a weft.Error (status
    name, the communicator's message) and a DistBackendError."""

    def __init__(self, status, what, message=None):
        super().__init__(status, what, message)
        if self.name == "ERR_TIMEOUT":
            # the words torch's tools and tests look for in a timeout
            self.args = ("weft %s Timed out (ERR_TIMEOUT): %s" %
                         (what, message or "operation timed out"),)
