"""weft.horovod.torch's collectives at 1 to 4 ranks with every dtype
Horovod supports on CPU (workers/hvd_api.py), under torchrun too, and
the failure path (a mismatch raises HorovodInternalError on every rank).
make test-horovod; test_horovod.py is the 2-rank slice of make test."""
import pytest

import harness
from conftest import needs

pytestmark = needs("torch")


@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
def test_every_collective_every_dtype(nranks):
    results, _ = harness.launch("hvd_api.py", nranks, args=["all"],
                                timeout=300)
    names = harness.check_names(results)
    for dtype in ("uint8", "int8", "int16", "int32", "int64", "float16",
                  "float32", "float64", "bfloat16"):
        assert any("allreduce Sum torch.%s" % dtype in n for n in names), \
            dtype
        assert any("allgather uneven torch.%s" % dtype in n for n in names), \
            dtype


@pytest.mark.parametrize("nranks", [2, 4])
def test_mismatch_raises_horovod_internal_error(nranks):
    harness.launch("hvd_api.py", nranks, args=["internal_error"],
                   timeout=120)


def test_under_torchrun():
    """hvd.init() from the real torchrun's environment (4 processes)."""
    harness.launch_torchrun("hvd_api.py", 4, args=[
        "basics", "core", "gather", "async", "process_sets"], timeout=300)
