"""A representative slice of PyTorch's own distributed suite
(torch_suite/suite.py, DistributedTest._DistTestBase as upstream runs it)
on gloo and on weft, 2 ranks: every test of the slice that passes on gloo
must pass on weft; and two of the tests the suite runs for gloo only, on
weft under the gloo name (suite.py weft-as-gloo).  `make test-torch` runs
the whole suite at 2 and 3 ranks (torch_suite/compare.py), and every
gloo-only test that gloo passes on weft under the gloo name."""
import json
import os
import subprocess
import sys

import pytest

from conftest import needs, missing

HERE = os.path.dirname(os.path.abspath(__file__))
pytestmark = [needs("weft.torch"), pytest.mark.skipif(
    missing("expecttest") is not None, reason=missing("expecttest") or "")]

# the layout bug, Work status, DDP and its logging, the basic collectives
# and point-to-point with tags (tests the suite gates on the backend's
# name, such as the coalesced all_reduce, run on gloo only: AS_GLOO)
SLICE = ["test_all_gather_coalesced_simple",
         "test_all_gather_coalesced_with_empty", "test_isend", "test_irecv",
         "test_all_reduce_sum",
         "test_gather", "test_scatter", "test_all_to_all_single_equal_split",
         "test_barrier", "test_send_recv_with_tag",
         "test_DistributedDataParallelCPU", "test_ddp_logging_data_cpu"]


# gated on gloo's name; they check the profiler's "gloo:all_reduce" titles
# and monitored_barrier's zero timeout
AS_GLOO = ["test_all_reduce_coalesced_sum",
           "test_monitored_barrier_gloo_rank_0_timeout"]


def outcomes(backend, tmp_path, tests=SLICE):
    out = str(tmp_path / (backend + ".json"))
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "torch_suite", "suite.py"),
         backend, "2", "--json", out] + ["=" + t for t in tests],
        capture_output=True, text=True, timeout=900)
    assert os.path.exists(out), proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.load(open(out)), proc.stdout[-4000:]


def test_suite_slice(tmp_path):
    gloo, _ = outcomes("gloo", tmp_path)
    weft, log = outcomes("weft", tmp_path)
    assert sorted(gloo) == sorted(SLICE), sorted(gloo)
    lost = {t: weft.get(t) for t, v in gloo.items()
            if v[0] == "ok" and weft.get(t, ["missing"])[0] != "ok"}
    assert not lost, "pass on gloo, not on weft: %s\n%s" % (lost, log)
    assert sum(v[0] == "ok" for v in gloo.values()) >= len(SLICE) - 2, gloo


def test_gated_as_gloo(tmp_path):
    """weft's groups (checked by type in every rank) under the gloo name."""
    res, log = outcomes("weft-as-gloo", tmp_path, AS_GLOO)
    assert res == {t: ["ok", ""] for t in AS_GLOO}, "%s\n%s" % (res, log)
