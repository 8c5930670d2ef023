"""DDP on weft across two "hosts": two network namespaces joined by veth
links (scripts/netns-lib.sh), each rank in its own UTS namespace with its
host's name, 2 ranks per host, 4 in all.  Ranks on one host talk through
weft's local transport, ranks on different hosts over the veths, so the
backend runs over a real (virtual) network and not only over loopback.
Trained against gloo in the same processes, as test_torch_ddp.py does;
the test also checks that bytes went over the veths.  Needs root, ip and
unshare; skipped with the reason otherwise."""
import os
import shutil
import subprocess
import uuid

import pytest

import harness
from conftest import ROOT, needs

pytestmark = needs("weft.torch")


def _why_not():
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return "%s is not installed" % tool
    return None


def _sh(cmd):
    return subprocess.run(["bash", "-c", ". scripts/netns-lib.sh; " + cmd],
                          cwd=ROOT, capture_output=True, text=True)


def _tx(ns):
    """Bytes host `ns` has sent over its two veths."""
    total = 0
    for i in (0, 1):
        out = subprocess.run(
            ["ip", "netns", "exec", ns, "cat",
             "/sys/class/net/eth%d/statistics/tx_bytes" % i],
            capture_output=True, text=True).stdout
        total += int(out or 0)
    return total


@pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")
def test_ddp_two_hosts(capsys):
    prefix = "wfpy" + uuid.uuid4().hex[:6]
    res = _sh("wf_netns_two_hosts %s build" % prefix)
    if res.returncode != 0:
        pytest.skip("cannot create network namespaces here: %s" %
                    (res.stderr.strip() or res.returncode))
    try:
        def wrap(r):
            host = "ab"[r // 2]
            return ["ip", "netns", "exec", "%s-%s" % (prefix, host),
                    "unshare", "--uts", "sh", "-c",
                    'hostname weft-host-%s && exec "$0" "$@"' % host]
        before = _tx(prefix + "-a")
        # one kernel under both "hosts": no single copy between them
        env = {"WEFT_TCP_CMA_MIN": "0", "GLOO_SOCKET_IFNAME": "eth0"}
        results, _ = harness.launch("torch_ddp.py", 4, timeout=600,
                                    master="10.79.0.1", wrap=wrap,
                                    local_size=2, env=env)
        sent = _tx(prefix + "-a") - before
    finally:
        _sh("wf_netns_delete %s" % prefix)
    data = results[0]["data"]
    with capsys.disabled():
        print("\nDDP, 2 hosts x 2 ranks: host a sent %.1f MB over its veths"
              % (sent / 1e6))
    for name in ("cnn", "mlp_bn", "unused"):
        assert data[name]["first_rel"] < 1e-6, (name, data[name])
    assert sent > 1e6, sent
