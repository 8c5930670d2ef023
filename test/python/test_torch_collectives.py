"""Every torch.distributed operation on the weft backend for 2, 3 and 4
processes: dtypes, reduction ops, async work and futures, subgroups,
non-contiguous tensors (workers/torch_collectives.py)."""
import pytest

import harness
from conftest import needs

pytestmark = needs("weft.torch")


# 3 ranks also run with WEFTPY_CONFIG: the ring allreduce in 4 KiB chunks
@pytest.mark.parametrize("nranks,config", [
    (2, None), (3, "WEFT_ALGO=allreduce:ring,WEFT_CHUNK_SIZE=4k"), (4, None)])
def test_collectives(nranks, config):
    env = {"WEFTPY_CONFIG": config} if config else None
    results, _ = harness.launch("torch_collectives.py", nranks, env=env,
                                timeout=240)
    names = harness.check_names(results)
    for op in ("all_reduce", "broadcast", "all_gather", "reduce_scatter",
               "all_to_all", "reduce to", "gather to", "scatter from",
               "send/recv", "barrier", "new_group", "future", "saturates"):
        assert any(op in n for n in names), op


@pytest.mark.parametrize("mode", ["timeout", "mismatch", "peer-exit"])
def test_errors(mode):
    results, _ = harness.launch("torch_errors.py", 2, args=[mode],
                                timeout=120)
    assert "weft" in results[0]["data"]["error"]


@pytest.mark.parametrize("mode", ["tcp", "file", "reinit"])
def test_init_methods(mode):
    """tcp:// and file:// init methods, and two groups in turn on one
    explicit TCPStore (env:// and torchrun are covered elsewhere)."""
    harness.launch("torch_init.py", 2, args=[mode], timeout=120)
