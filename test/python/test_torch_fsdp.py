"""FSDP (fully_shard) on CPU on weft against the same training on gloo
(workers/torch_fsdp.py): bitwise equal on 2 ranks, within 1e-6 relative on
3 (the sums of three terms associate differently)."""
import pytest

import harness
from conftest import needs

pytestmark = needs("weft.torch")


@pytest.mark.parametrize("nranks", [2, 3])
def test_fsdp_vs_gloo(nranks, capsys):
    results, _ = harness.launch("torch_fsdp.py", nranks, args=["20"],
                                timeout=300)
    data = results[0]["data"]
    with capsys.disabled():
        print("\nFSDP, %d ranks, 20 steps: relative difference %.2e, loss "
              "weft %.4f -> %.4f, gloo %.4f -> %.4f" % (
                  (nranks, data["relative difference"]) +
                  tuple(data["losses"])))
