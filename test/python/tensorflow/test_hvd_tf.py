"""weft.horovod.tensorflow and weft.horovod.tensorflow.keras (make test-tf,
with make tf's venv): every collective at 1 to 4 ranks with every dtype
Horovod supports on CPU, eagerly and in tf.function, their gradients,
grouped forms, process sets; DistributedGradientTape in a tf.function
loop; DistributedOptimizer (fusion, groups, backward_passes_per_step,
fp16, predivide, Sum); a tf_keras model trained 30 steps against one
process on the global batch; the callbacks (workers/hvd_tf_api.py, which
computes every expected value with numpy); the example under weftrun and
mpirun (Open MPI)."""
import os
import sys

import pytest

import harness
from conftest import needs

pytestmark = [needs("tensorflow"), needs("tf_keras")]

EXAMPLE = os.path.join(harness.ROOT, "python", "examples",
                       "horovod_tensorflow.py")
QUIET = {"TF_CPP_MIN_LOG_LEVEL": "3"}


@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
def test_every_function(nranks, capsys):
    results, _ = harness.launch("hvd_tf_api.py", nranks, args=["all"],
                                timeout=600, env=QUIET)
    names = harness.check_names(results)
    for dtype in ("uint8", "int8", "uint16", "int16", "int32", "int64",
                  "float16", "float32", "float64", "bfloat16"):
        for mode in ("eager", "graph"):
            for what in ("allreduce Sum", "allgather uneven",
                         "alltoall splits", "reducescatter Sum uneven",
                         "broadcast root %d" % (nranks - 1)):
                name = "%s %s %s" % (what, dtype, mode)
                assert name in names, name
    for what in ("allreduce gradient", "grouped_allreduce graph",
                 "keras: parameters equal on every rank",
                 "DistributedGradientTape in tf.function: 10 steps equal "
                 "the averaged-gradient steps",
                 "backward_passes_per_step=2 average_aggregated=True",
                 "LearningRateWarmupCallback",
                 "Keras 3 optimizer: averaged gradients",
                 "tf.compat.v1 optimizer: averaged gradients"):
        assert what in names, what
    if nranks > 1:
        assert "allreduce in a process set" in names
    with capsys.disabled():
        print("\n  %d ranks: %d checks; keras vs one process: relative "
              "difference %.2e" % (nranks, len(names),
                                   results[0]["data"]["keras_relative"]))


@pytest.mark.parametrize("loop", ["keras", "tape"])
@pytest.mark.parametrize("launcher", ["weftrun", "mpirun"])
def test_example(launcher, loop):
    cmd = (harness.weftrun_cmd(2) if launcher == "weftrun" else
           harness.mpirun_cmd(2, ("PYTHONPATH", "OMP_NUM_THREADS",
                                  "TF_CPP_MIN_LOG_LEVEL"))) + \
        [sys.executable, EXAMPLE, "--loop", loop, "--epochs", "2"]
    stdout = harness.run_example(cmd, env=QUIET)
    accs = [float(line.split("test accuracy ")[1].split(",")[0])
            for line in stdout.splitlines() if "test accuracy" in line]
    # 10 well separated classes: chance is 0.1
    assert accs and min(accs) > 0.8, stdout
