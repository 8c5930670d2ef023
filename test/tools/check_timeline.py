#!/usr/bin/env python3
"""Checks the timelines of test_timeline.c against what its ranks did.

usage: check_timeline.py TOOL EXPECT_JSON FILE...
  TOOL         build/bin/weft-timeline
  EXPECT_JSON  {"ranks": N, "ops": {"allreduce": n, ...}, "comms": c,
                "engine": ["allreduce", ...]}: per rank, how many
               operations of each collective it ran, over how many
               communicators, and of which collectives those that ran
               as messages (not "node") must name the peer they waited
               on last
Prints what differs and exits 1, or prints "timeline ok".
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

FIELDS = ("op", "bytes", "dtype", "algorithm", "status", "rank", "size")


def fail(msg):
    print("timeline check failed:", msg)
    sys.exit(1)


def check_rank_file(path, want):
    with open(path, encoding="utf-8") as f:
        events = json.load(f)  # valid JSON, closing bracket included
    if not isinstance(events, list):
        fail(f"{path}: not a JSON array")
    spans = [e for e in events if e.get("ph") == "X"]
    pids = {e["pid"] for e in events}
    if len(pids) != 1:
        fail(f"{path}: events of several processes {pids}")
    counts = collections.Counter(e["name"] for e in spans)
    for coll, n in want["ops"].items():
        if counts[coll] != n:
            fail(f"{path}: {counts[coll]} {coll} events, expected {n}")
    tids = {e["tid"] for e in spans}
    if len(tids) != want["comms"]:
        fail(f"{path}: operations on {len(tids)} communicators, expected "
             f"{want['comms']}")
    names = {e["tid"] for e in events
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    if names != tids:
        fail(f"{path}: tracks {tids} but names for {names}")
    for e in spans:
        args = e["args"]
        missing = [k for k in FIELDS if k not in args]
        if missing or e["dur"] < 0 or e["ts"] <= 0:
            fail(f"{path}: bad event {e} (missing {missing})")
        if args["status"] != "OK" or args["algorithm"] == "?":
            fail(f"{path}: {e}")
        # Operations by messages always wait for some peer's part; the
        # shared segment's may find everything there already.
        by_messages = e["name"] in want["engine"] and \
            args["algorithm"] != "node" and args["size"] > 1
        peer = args.get("waited_on")
        if (by_messages and peer is None) or (peer is not None and (
                not 0 <= peer < args["size"] or peer == args["rank"] or
                args["waited_us"] > e["dur"] + 1)):
            fail(f"{path}: no sensible peer waited on in {e}")
    return pids.pop()


def check_merge(tool, files, ranks):
    out = tempfile.mktemp(suffix=".json")
    subprocess.run([tool, "merge", "-o", out] + files, check=True)
    with open(out, encoding="utf-8") as f:
        merged = json.load(f)
    events = merged["traceEvents"]
    order = {e["pid"]: e["args"]["sort_index"] for e in events
             if e.get("ph") == "M" and e["name"] == "process_sort_index"}
    if sorted(order) != list(range(ranks)) or \
            any(order[r] != r for r in order):
        fail(f"merged: ranks' tracks {order}, expected 0..{ranks - 1} in order")
    ts = [e["ts"] for e in events if e.get("ph") == "X"]
    if ts != sorted(ts):
        fail("merged: events out of time order")
    os.unlink(out)
    return len(ts)


def check_cut_off(tool, path):
    """A rank killed while writing: its file lacks the bracket and ends in
    half an event; merge still reads every complete event."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    complete = len([e for e in json.loads(text) if e.get("ph") == "X"])
    cut = text.rstrip().rstrip("]").rstrip()
    cut = cut[: len(cut) - 25]  # into the last event
    bad = tempfile.mktemp(suffix=".json")
    with open(bad, "w", encoding="utf-8") as f:
        f.write(cut)
    out = tempfile.mktemp(suffix=".json")
    subprocess.run([tool, "merge", "-o", out, bad], check=True)
    with open(out, encoding="utf-8") as f:
        got = len([e for e in json.load(f)["traceEvents"]
                   if e.get("ph") == "X"])
    if got != complete - 1:
        fail(f"cut-off file: {got} events read, expected {complete - 1}")
    os.unlink(bad)
    os.unlink(out)


def main():
    tool, want, files = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:]
    if len(files) != want["ranks"]:
        fail(f"{len(files)} files for {want['ranks']} ranks")
    ranks = sorted(check_rank_file(f, want) for f in files)
    if ranks != list(range(want["ranks"])):
        fail(f"files of ranks {ranks}")
    n = check_merge(tool, files, want["ranks"])
    check_cut_off(tool, files[0])
    print(f"timeline ok: {n} operations of {want['ranks']} ranks")


if __name__ == "__main__":
    main()
