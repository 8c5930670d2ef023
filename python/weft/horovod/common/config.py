"""Environment knobs of weft.horovod.

Each Horovod variable that still means something on weft is honoured
under its Horovod name, and has a weft name beside it that wins when both
are set.  The weft names start with WEFTPY_, as the Python package's other
knobs do: the C library warns about WEFT_* variables it does not know.
"""
import os
import re

# Horovod's default fusion buffer: 128 MiB.
DEFAULT_FUSION_THRESHOLD = 128 << 20

_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_size(text, name):
    """Bytes from "67108864", "64m", "64MiB"; a clear error otherwise."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError("%s=%r is not a size in bytes (a number, or with "
                         "k, m or g)" % (name, text))
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def fusion_threshold():
    """The most bytes DistributedOptimizer fuses into one allreduce:
    WEFTPY_HVD_FUSION_THRESHOLD, else HOROVOD_FUSION_THRESHOLD, else
    Horovod's default.  0 turns fusion off."""
    for name in ("WEFTPY_HVD_FUSION_THRESHOLD", "HOROVOD_FUSION_THRESHOLD"):
        value = os.environ.get(name)
        if value is not None and value.strip():
            return parse_size(value, name)
    return DEFAULT_FUSION_THRESHOLD
