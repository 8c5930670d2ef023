"""Running multi-process scenarios for the Python tests.

A scenario is a worker script (test/python/workers/) started once per rank
as a separate process, with torchrun-style variables (MASTER_ADDR,
MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK) so that env:// works.  Each rank
reports its checks through workers/common.py into RESULT_DIR/rank<r>.json;
launch() returns them after every rank exited, and fails with every rank's
output tail when a rank crashed, hung or reported a failed check.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = os.path.join(HERE, "workers")
ROOT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))


def free_port():
    """A TCP port P that was free a moment ago, with P+1 free too (weft's
    own launcher detection puts its rendezvous on MASTER_PORT+1)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no free pair of ports")


def worker_env(extra=None):
    env = dict(os.environ)
    # One thread per rank: up to four ranks share two cores.
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(
                   [WORKERS] + [p for p in [env.get("PYTHONPATH")] if p]))
    env.update(extra or {})
    return env


def _tails(outputs):
    return "\n".join("----- process %d (exit %s) -----\n%s" %
                     (r, rc, out[-4000:]) for r, (rc, out) in
                     enumerate(outputs))


class ScenarioError(AssertionError):
    pass


def launch(worker, nranks, args=(), timeout=120, env=None, expect_rc=0,
           master="127.0.0.1", wrap=None, local_size=None):
    """Runs workers/<worker> on `nranks` local processes; returns
    (results, outputs): results[r] is rank r's report (a dict), outputs[r]
    is (exit code, combined stdout/stderr).  wrap(r), when given, is the
    command prefix of rank r (a network namespace as its host, say);
    local_size ranks share a host (LOCAL_RANK = r % local_size)."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="weft-pytest-") as tmp:
        procs = []
        for r in range(nranks):
            e = worker_env(env)
            e.update(MASTER_ADDR=master, MASTER_PORT=str(port),
                     RANK=str(r), WORLD_SIZE=str(nranks),
                     LOCAL_RANK=str(r % (local_size or nranks)),
                     WEFTPY_RESULT_DIR=tmp)
            log = open(os.path.join(tmp, "out%d.txt" % r), "w+")
            procs.append((subprocess.Popen(
                (wrap(r) if wrap else []) +
                [sys.executable, os.path.join(WORKERS, worker)] +
                [str(a) for a in args], env=e, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True), log))
        outputs = _collect(procs, timeout)
        results = []
        for r in range(nranks):
            path = os.path.join(tmp, "rank%d.json" % r)
            results.append(json.load(open(path)) if os.path.exists(path)
                           else None)
    _check(worker, results, outputs, expect_rc)
    return results, outputs


def _collect(procs, timeout):
    deadline = time.monotonic() + timeout
    outputs = []
    for p, log in procs:
        try:
            rc = p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            rc = "killed after %ds timeout" % timeout
            p.wait()
        log.seek(0)
        outputs.append((rc, log.read()))
        log.close()
    return outputs


def _check(worker, results, outputs, expect_rc):
    """Fails with every process's output tail when a process exited
    badly, a rank wrote no report, or a check failed."""
    problems = []
    for i, (rc, _) in enumerate(outputs):
        if expect_rc is not None and rc != expect_rc:
            problems.append("process %d exited with %s" % (i, rc))
    for r, res in enumerate(results):
        if res is None:
            problems.append("rank %d wrote no report" % r)
            continue
        for c in res["checks"]:
            if not c["ok"]:
                problems.append("rank %d: %s: %s" % (r, c["name"],
                                                     c["detail"]))
    if problems:
        raise ScenarioError("%s failed:\n  %s\n%s" % (
            worker, "\n  ".join(problems[:40]), _tails(outputs)))


def check_names(results):
    return sorted({c["name"] for res in results for c in res["checks"]})


def launch_torchrun(worker, nproc, args=(), timeout=180, env=None):
    """Runs workers/<worker> under `torchrun --nproc_per_node=nproc`
    (torch.distributed.run) on loopback; returns the ranks' reports."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="weft-pytest-") as tmp:
        e = worker_env(env)
        e["WEFTPY_RESULT_DIR"] = tmp
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                  "MASTER_PORT"):
            e.pop(k, None)
        log = open(os.path.join(tmp, "torchrun.txt"), "w+")
        proc = subprocess.Popen(
            [sys.executable, "-m", "torch.distributed.run",
             "--nproc_per_node=%d" % nproc, "--master_addr=127.0.0.1",
             "--master_port=%d" % port, os.path.join(WORKERS, worker)] +
            [str(a) for a in args], env=e, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)
        outputs = _collect([(proc, log)], timeout)
        results = []
        for r in range(nproc):
            path = os.path.join(tmp, "rank%d.json" % r)
            results.append(json.load(open(path)) if os.path.exists(path)
                           else None)
    _check("torchrun " + worker, results, outputs, 0)
    return results, outputs


def weftrun_cmd(n):
    """build/bin/weftrun -n N, or a skip saying it is not built."""
    import pytest
    path = os.path.join(ROOT, "build", "bin", "weftrun")
    if not os.access(path, os.X_OK):
        pytest.skip("%s is not built (make)" % path)
    return [path, "-n", str(n)]


def mpirun_cmd(n, env_names=("PYTHONPATH", "OMP_NUM_THREADS")):
    """Open MPI's mpirun for N ranks on loopback, passing `env_names` on,
    or a skip saying why it cannot run (make test-launchers installs it)."""
    import pytest
    import shutil
    path = shutil.which("mpirun")
    if path is None:
        pytest.skip("mpirun is not installed (make test-launchers installs "
                    "Open MPI)")
    version = subprocess.run([path, "--version"], capture_output=True,
                             text=True).stdout
    if "Open MPI" not in version:
        pytest.skip("mpirun is not Open MPI's (%s)" %
                    (version.splitlines()[0] if version else "no version"))
    cmd = [path, "--oversubscribe", "-np", str(n), "--mca", "btl",
           "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca",
           "oob_tcp_if_include", "lo"]
    for name in env_names:
        cmd += ["-x", name]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def run_example(cmd, ranks=2, timeout=300, env=None):
    """Runs an example under a launcher (`cmd`), with none of torchrun's
    variables from the test's own environment; fails with the output's
    tail unless it exits 0 and every rank printed "replicas identical".
    Returns its standard output."""
    e = worker_env(env)
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
              "MASTER_PORT"):
        e.pop(k, None)
    out = subprocess.run(cmd, env=e, capture_output=True, text=True,
                         timeout=timeout)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    assert out.stdout.count("replicas identical") == ranks, text[-4000:]
    return out.stdout
