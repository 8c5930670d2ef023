"""Failures through torch.distributed surface as Python exceptions that
carry weft's status and message.

Usage: torch_errors.py MODE (2 ranks)
  timeout   init_process_group(timeout=2s); rank 1 never joins the
            allreduce: rank 0 gets ERR_TIMEOUT after about 2 s (weft's
            deadline, set from torch's timeout)
  mismatch  the ranks reduce different counts: ERR_MISMATCH naming both
  peer-exit rank 1 dies (os._exit) during the job: rank 0's pending
            operation fails promptly with ERR_REMOTE, through the future too
"""
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import weft.torch
from common import RANK as R, Report

TIMEOUT = 2.0


def timeout(rep):
    if R == 1:
        # never calls the collective; stays alive (connections open) until
        # rank 0 has reported, so that rank 0 sees the deadline pass
        done = os.path.join(os.environ.get("WEFTPY_RESULT_DIR", "."),
                            "rank0.json")
        end = time.monotonic() + TIMEOUT + 30
        while not os.path.exists(done) and time.monotonic() < end:
            time.sleep(0.1)
        return
    start = time.monotonic()
    try:
        dist.all_reduce(torch.ones(4))
        rep.check("all_reduce times out", False, "no exception")
    except weft.torch.WeftError as e:
        took = time.monotonic() - start
        rep.data["error"] = str(e)
        rep.check("ERR_TIMEOUT", e.name == "ERR_TIMEOUT", e)
        rep.check("after about the torch timeout (%.1f s)" % took,
                  TIMEOUT * 0.8 <= took <= TIMEOUT + 8, took)
        rep.check("message says what it waited for", e.message, e)


def mismatch(rep):
    try:
        dist.all_reduce(torch.ones(5 + R))
        rep.check("mismatch raises", False, "no exception")
    except weft.torch.WeftError as e:
        rep.data["error"] = str(e)
        rep.check("ERR_MISMATCH", e.name == "ERR_MISMATCH", e)
        rep.check("names both counts", "count 5" in str(e) and
                  "count 6" in str(e), e)
        rep.check("is a DistBackendError", isinstance(
            e, dist.DistBackendError), type(e))


def peer_exit(rep):
    t = torch.ones(3)
    dist.all_reduce(t)                    # both alive
    if R == 1:
        rep.save()
        os._exit(0)                       # dies without a word
    start = time.monotonic()
    work = dist.all_reduce(torch.ones(1 << 16), async_op=True)
    try:
        work.get_future().wait()
        rep.check("future fails", False, "no exception")
    except Exception as e:
        rep.data["error"] = str(e)
        rep.check("future raises with weft's message",
                  "ERR_REMOTE" in str(e) and "peer 1" in str(e), e)
    try:
        work.wait()
        rep.check("wait fails", False, "no exception")
    except weft.torch.WeftError as e:
        rep.check("wait raises ERR_REMOTE", e.name == "ERR_REMOTE", e)
    took = time.monotonic() - start
    rep.check("promptly, not at the deadline (%.1f s)" % took, took < 20,
              took)


def main():
    mode = sys.argv[1]
    rep = Report()
    with rep:
        dist.init_process_group("weft", timeout=timedelta(
            seconds=TIMEOUT if mode == "timeout" else 60))
        {"timeout": timeout, "mismatch": mismatch,
         "peer-exit": peer_exit}[mode](rep)
    # the communicator has failed: leave without a collective shutdown
    os._exit(0)


if __name__ == "__main__":
    main()
