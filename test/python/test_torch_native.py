"""What the native backend adds (workers/torch_vs_gloo.py), checked
against gloo in the same processes: all_gather_coalesced's layout, Work
status, bitwise and PREMUL_SUM reductions, uneven sizes, coalescing,
monitored_barrier (its timeouts and gloo's words), sparse all_reduce,
send/recv tags and receives from any source, the backend's name (also
when registered under another one)."""
import pytest

import harness
from conftest import needs

pytestmark = needs("weft.torch")


@pytest.mark.parametrize("nranks", [2, 3])
def test_vs_gloo(nranks):
    results, _ = harness.launch("torch_vs_gloo.py", nranks, timeout=240)
    names = harness.check_names(results)
    cases = ["all_gather_coalesced", "is_completed", "BXOR", "PREMUL_SUM",
             "uneven", "all_gather uneven 2-D", "complex SUM",
             "gather uneven", "scatter uneven", "all_to_all list uneven",
             "all_to_all_single split sizes", "coalesced", "monitored_barrier", "no time: rank 0",
             "sparse", "tags match", "any source", "DDP logging",
             "registered under another name"]
    if nranks >= 3:
        cases.append("hear that rank 0 failed")
    for case in cases:
        assert any(case in n for n in names), case
