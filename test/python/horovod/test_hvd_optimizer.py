"""DistributedOptimizer, broadcast_parameters, broadcast_optimizer_state
and join at 1, 3 and 4 ranks (workers/hvd_optimizer.py; 2 ranks run in
make test), and 50 steps against DDP on gloo at 3 and 4 ranks
(workers/hvd_train.py)."""
import pytest

import harness
from conftest import needs

pytestmark = needs("torch")


@pytest.mark.parametrize("nranks", [1, 3, 4])
def test_optimizer(nranks):
    harness.launch("hvd_optimizer.py", nranks, args=["all"], timeout=300)


@pytest.mark.parametrize("nranks", [3, 4])
def test_training_vs_ddp_on_gloo(nranks, capsys):
    results, _ = harness.launch("hvd_train.py", nranks, timeout=300)
    d = results[0]["data"]
    with capsys.disabled():
        print("\n  DistributedOptimizer vs DDP/gloo, %d ranks, 50 steps: "
              "relative difference %.2e (max %.2e), loss %.4f -> %.4f" %
              (nranks, d["relative"], d["max_abs"], d["first_loss"],
               d["last_loss"]))
    assert d["relative"] < 1e-6
