"""The two examples of python/examples/ as shipped, at 2 ranks, under
weftrun, torchrun and mpirun (Open MPI; skipped, saying why, where it is
not installed: make test-launchers installs it).  Each example checks
that the replicas agree and exits 1 if not."""
import os
import shutil
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
    path = os.path.join(harness.ROOT, "build", "bin", "weftrun")
    if not os.access(path, os.X_OK):
        pytest.skip("%s is not built (make)" % path)
    return [path, "-n", str(n)]


def torchrun(n):
    return [sys.executable, "-m", "torch.distributed.run",
            "--nproc_per_node=%d" % n, "--master_addr=127.0.0.1",
            "--master_port=%d" % harness.free_port()]


def mpirun(n):
    path = shutil.which("mpirun")
    if path is None:
        pytest.skip("mpirun is not installed (make test-launchers installs "
                    "Open MPI)")
    version = subprocess.run([path, "--version"], capture_output=True,
                             text=True).stdout
    if "Open MPI" not in version:
        pytest.skip("mpirun is not Open MPI's (%s)" %
                    version.splitlines()[0] if version else "no version")
    cmd = [path, "--oversubscribe", "-np", str(n), "--mca", "btl",
           "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca",
           "oob_tcp_if_include", "lo", "-x", "PYTHONPATH", "-x",
           "OMP_NUM_THREADS"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd + [sys.executable]


LAUNCHERS = {"weftrun": lambda n: weftrun(n) + [sys.executable],
             "torchrun": torchrun, "mpirun": mpirun}


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
@pytest.mark.parametrize("example", sorted(RUNS))
def test_example(example, launcher):
    cmd = LAUNCHERS[launcher](2) + [os.path.join(EXAMPLES, example)] + \
        RUNS[example]
    env = harness.worker_env()
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
              "MASTER_PORT"):
        env.pop(k, None)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True,
                         timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    assert out.stdout.count("replicas identical") == 2, text[-4000:]


def test_sync_sgd_on_gloo_under_weftrun():
    cmd = weftrun(2) + [sys.executable, os.path.join(EXAMPLES, "sync_sgd.py"),
                        "--backend", "gloo", "--epochs", "1"]
    out = subprocess.run(cmd, env=harness.worker_env(), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    assert out.stdout.count("on gloo: replicas identical") == 2, out.stdout
