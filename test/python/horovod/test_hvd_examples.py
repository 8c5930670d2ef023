"""The two examples of python/examples/ as shipped, at 2 ranks, under
weftrun, torchrun and mpirun (Open MPI; skipped, saying why, where it is
not installed: make test-launchers installs it).  Each example checks
that the replicas agree and exits 1 if not."""
import os
import subprocess
import sys

import pytest

import harness
from conftest import needs

pytestmark = needs("torch")

EXAMPLES = os.path.join(harness.ROOT, "python", "examples")
# a short run of each; the defaults train longer
RUNS = {"horovod_mnist.py": ["--epochs", "2"],
        "sync_sgd.py": ["--epochs", "2"]}


def weftrun(n):
    return harness.weftrun_cmd(n)


def torchrun(n):
    return [sys.executable, "-m", "torch.distributed.run",
            "--nproc_per_node=%d" % n, "--master_addr=127.0.0.1",
            "--master_port=%d" % harness.free_port()]


def mpirun(n):
    return harness.mpirun_cmd(n) + [sys.executable]


LAUNCHERS = {"weftrun": lambda n: weftrun(n) + [sys.executable],
             "torchrun": torchrun, "mpirun": mpirun}


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
@pytest.mark.parametrize("example", sorted(RUNS))
def test_example(example, launcher):
    cmd = LAUNCHERS[launcher](2) + [os.path.join(EXAMPLES, example)] + \
        RUNS[example]
    harness.run_example(cmd)


def test_sync_sgd_on_gloo_under_weftrun():
    cmd = weftrun(2) + [sys.executable, os.path.join(EXAMPLES, "sync_sgd.py"),
                        "--backend", "gloo", "--epochs", "1"]
    out = subprocess.run(cmd, env=harness.worker_env(), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    assert out.stdout.count("on gloo: replicas identical") == 2, out.stdout
