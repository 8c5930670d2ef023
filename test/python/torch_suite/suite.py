"""PyTorch's own distributed test suite, run the way upstream's
test/distributed/test_distributed_spawn.py runs it, for one backend.

    suite.py BACKEND WORLD_SIZE [--json FILE] [PATTERN|=NAME ...]

BACKEND is "gloo" (the reference) or "weft".  For weft the backend is added
to DistTestCases.backend_feature as a plugin, subgroup and ddp backend, as
upstream asks third-party backends to do, and `import weft.torch` registers
it in the parent and in every spawned rank (the ranks re-import this
module).  The environment is the one upstream's runner sets: BACKEND,
WORLD_SIZE, TEMP_DIR (made by the suite itself).

Prints one line per test (ok / FAIL / ERROR / skipped with its reason) and
ends with "suite BACKEND WORLD_SIZE: N passed, N failed, N skipped";
--json writes {test name: [ok|fail|skip, reason]} for compare.py.
"""
import os
import sys

if __name__ == "__main__":
    os.environ["BACKEND"] = sys.argv[1]
    os.environ["WORLD_SIZE"] = sys.argv[2]

BACKEND = os.environ["BACKEND"]

import torch  # noqa: E402
from torch.testing._internal.common_distributed import (  # noqa: E402
    DistTestCases)

if BACKEND == "weft":
    import weft.torch  # noqa: E402,F401  registers "weft"
    for feature in ("plugin", "subgroup", "ddp"):
        DistTestCases.backend_feature[feature].add("weft")

from torch.testing._internal.distributed.distributed_test import (  # noqa
    DistributedTest, TestDistBackend)

torch.backends.cuda.matmul.allow_tf32 = False


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()


class _Recorder:
    """Outcome of every test, by name: ok, fail or skip (with reason)."""

    def __init__(self):
        self.outcomes = {}

    def attach(self, result):
        rec = self.outcomes

        def name(test):
            return test.id().rsplit(".", 1)[-1]
        for kind, method in (("fail", "addFailure"), ("fail", "addError"),
                             ("fail", "addUnexpectedSuccess")):
            orig = getattr(result, method)

            def hook(test, *a, _orig=orig, _kind=kind):
                rec[name(test)] = (_kind, "")
                return _orig(test, *a)
            setattr(result, method, hook)
        orig_skip, orig_ok = result.addSkip, result.addSuccess

        def skip(test, reason):
            rec[name(test)] = ("skip", reason)
            return orig_skip(test, reason)

        def ok(test):
            rec.setdefault(name(test), ("ok", ""))
            return orig_ok(test)
        result.addSkip, result.addSuccess = skip, ok


def main(argv):
    import json
    import unittest
    args = argv[3:]
    out = None
    if args[:1] == ["--json"]:
        out, args = args[1], args[2:]
    loader = unittest.TestLoader()
    if args:
        # "=name": that test only; otherwise every test containing it
        loader.testNamePatterns = ["*.%s" % p[1:] if p.startswith("=")
                                   else "*%s*" % p for p in args]
    suite = loader.loadTestsFromTestCase(TestDistBackendWithSpawn)
    rec = _Recorder()
    runner = unittest.TextTestRunner(verbosity=2, stream=sys.stdout)
    make = runner._makeResult

    def make_result():
        result = make()
        rec.attach(result)
        return result
    runner._makeResult = make_result
    runner.run(suite)
    kinds = [k for k, _ in rec.outcomes.values()]
    passed, failed, skipped = (kinds.count("ok"), kinds.count("fail"),
                               kinds.count("skip"))
    if out:
        with open(out, "w") as f:
            json.dump(rec.outcomes, f, indent=0, sort_keys=True)
    print("suite %s %s: %d passed, %d failed, %d skipped" %
          (argv[1], argv[2], passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
