"""weft.horovod.torch, the slice `make test` runs (2 ranks, about half a
minute): every collective against values computed in the workers, async
handles, process sets, argument errors, autograd, SyncBatchNorm;
DistributedOptimizer (fusion, backward_passes_per_step, fp16, predivide,
groups, broadcast_optimizer_state, join with uneven batches); 50 steps
against DDP on gloo (bitwise on 2 ranks); the MNIST example under
weftrun.  `make test-horovod` runs the rest: 1, 3 and 4 ranks, every
dtype, the examples under weftrun, torchrun and mpirun
(test/python/horovod/)."""
import os
import subprocess
import sys

import pytest

import harness
from conftest import needs

pytestmark = needs("torch")

# every part but "dtypes" (all of Horovod's dtypes, make test-horovod),
# which "core" stands in for with float32, int16 and bool
API_PARTS = ["basics", "core", "scaling", "gather", "broadcast", "alltoall",
             "reducescatter", "grouped", "async", "objects", "process_sets",
             "errors", "autograd", "sync_bn", "timeline"]


def test_collectives_2_ranks():
    results, _ = harness.launch("hvd_api.py", 2, args=API_PARTS, timeout=240)
    names = harness.check_names(results)
    for what in ("allreduce Sum torch.float32", "allgather uneven",
                 "alltoall splits", "reducescatter Sum", "poll is false",
                 "grouped_allreduce", "allreduce in a process set",
                 "SyncBatchNorm input gradient"):
        assert any(what in n for n in names), what


def test_optimizer_2_ranks():
    results, _ = harness.launch("hvd_optimizer.py", 2, args=["all"],
                                timeout=240)
    data = results[0]["data"]
    assert data["fused buckets"] == 1 and data["unfused buckets"] == 6


def test_training_vs_ddp_on_gloo_2_ranks(capsys):
    results, _ = harness.launch("hvd_train.py", 2, timeout=240)
    d = results[0]["data"]
    with capsys.disabled():
        print("\n  DistributedOptimizer vs DDP/gloo, 2 ranks, 50 steps: %s, "
              "loss %.4f -> %.4f" % ("bitwise equal" if d["bitwise"] else
                                     "relative %.2e" % d["relative"],
                                     d["first_loss"], d["last_loss"]))
    assert d["bitwise"]


def test_mnist_example_under_weftrun():
    weftrun = os.path.join(harness.ROOT, "build", "bin", "weftrun")
    if not os.access(weftrun, os.X_OK):
        pytest.skip("%s is not built (make)" % weftrun)
    example = os.path.join(harness.ROOT, "python", "examples",
                           "horovod_mnist.py")
    out = subprocess.run([weftrun, "-n", "2", sys.executable, example,
                          "--epochs", "1"], env=harness.worker_env(),
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("replicas identical") == 2, out.stdout
