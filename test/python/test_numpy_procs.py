"""The numpy API across processes; weft.init() from torchrun-style
variables (see workers/numpy_api.py)."""
import pytest

import harness
from conftest import needs

pytestmark = needs("numpy")


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_numpy_api(nranks):
    results, _ = harness.launch("numpy_api.py", nranks, timeout=120)
    errors = [r["data"].get("error") for r in results]
    assert any(e and e[0] == "ERR_MISMATCH" for e in errors), errors
