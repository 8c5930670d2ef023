"""PyTorch's distributed suite on gloo and on weft, test by test.

    compare.py [--sizes "2 3"] [--group-size 8] [--out DIR] [--reuse]
               [--as-gloo] [--only PATTERN ...]

For every world size, runs suite.py for gloo (the reference) and for weft,
one after the other (never at once), and writes DIR/<backend>-<size>.json
and DIR/<backend>-<size>.log.  --group-size adds a run of the tests whose
name contains "_group" at that size (the subgroup tests that need more
ranks).  --reuse takes the JSON of an earlier run instead of running.

Prints the counts of both backends per size, then every test that passes
on gloo and not on weft with weft's outcome and reason: a failure, or a
skip because the suite gates the test on the backend's name ("Only gloo
...", "Test requires backend weft to be one of {'gloo'}", ...).

--as-gloo then runs exactly the tests that pass on gloo and that weft
skipped, as suite.py weft-as-gloo (the gloo name, weft's groups), and
prints their outcome there (DIR/weft-as-gloo-<size>.json/.log).  Exit
status 1 if weft fails any test, or any of those under the gloo name.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(backend, size, patterns, out, tag, reuse):
    path = os.path.join(out, "%s-%s.json" % (backend, tag))
    if reuse and os.path.exists(path):
        return json.load(open(path))
    log = os.path.join(out, "%s-%s.log" % (backend, tag))
    start = time.time()
    with open(log, "w") as f:
        subprocess.call(["nice", "-n", "5", sys.executable,
                         os.path.join(HERE, "suite.py"), backend, str(size),
                         "--json", path] + patterns,
                        stdout=f, stderr=subprocess.STDOUT)
    if not os.path.exists(path):
        sys.exit("compare: the %s run at %s ranks wrote no results; see %s"
                 % (backend, size, log))
    res = json.load(open(path))
    print("  %s, %d ranks: %.0f s (log %s)" % (backend, size,
                                                time.time() - start, log),
          flush=True)
    return res


def counts(res):
    kinds = [v[0] for v in res.values()]
    return kinds.count("ok"), kinds.count("fail"), kinds.count("skip")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2 3")
    ap.add_argument("--group-size", type=int, default=0)
    ap.add_argument("--out", default="build/torch-suite")
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--as-gloo", action="store_true")
    ap.add_argument("--only", nargs="*", default=[])
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    runs = [(int(s), list(args.only), s) for s in args.sizes.split()]
    if args.group_size:
        runs.append((args.group_size, ["_group"],
                     "%d-group" % args.group_size))
    failed = 0
    rows, gated_rows = [], []
    for size, patterns, tag in runs:
        gloo = run("gloo", size, patterns, args.out, tag, args.reuse)
        weft = run("weft", size, patterns, args.out, tag, args.reuse)
        rows.append((tag, counts(gloo), counts(weft)))
        lost = sorted(t for t, v in gloo.items() if v[0] == "ok" and
                      weft.get(t, ["missing"])[0] != "ok")
        for t in lost:
            kind, reason = weft.get(t, ["missing", ""])
            print("  %s ranks: %s passes on gloo, %s on weft%s" % (
                tag, t, kind, ": " + reason if reason else ""))
        weft_fails = [t for t, v in weft.items() if v[0] == "fail"]
        failed += len(weft_fails)
        gated = [t for t in lost if weft.get(t, [""])[0] == "skip"]
        if args.as_gloo and gated:
            res = run("weft-as-gloo", size, ["=" + t for t in gated],
                      args.out, tag, args.reuse)
            for t in gated:
                kind, reason = res.get(t, ["missing", ""])
                if kind != "ok":
                    print("  %s ranks: %s, skipped on weft by name, %s "
                          "under the gloo name%s" % (
                              tag, t, kind, ": " + reason if reason else ""))
            bad = [t for t in gated if res.get(t, ["missing"])[0] != "ok"]
            failed += len(bad)
            gated_rows.append((tag, len(gated)) + counts(
                {t: res.get(t, ["missing"]) for t in gated}))
    print("\n| ranks | gloo passed | failed | skipped "
          "| weft passed | failed | skipped |")
    print("|---|---|---|---|---|---|---|")
    for tag, g, w in rows:
        print("| %s | %d | %d | %d | %d | %d | %d |" % ((tag,) + g + w))
    if gated_rows:
        print("\nTests that pass on gloo and that weft skipped, on weft "
              "under the gloo name (suite.py weft-as-gloo):\n")
        print("| ranks | tests | passed | failed | skipped |")
        print("|---|---|---|---|---|")
        for row in gated_rows:
            print("| %s | %d | %d | %d | %d |" % row)
    print("\ncompare: weft failed %d test(s)" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
