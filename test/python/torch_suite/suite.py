"""PyTorch's own distributed test suite, run the way upstream's
test/distributed/test_distributed_spawn.py runs it, for one backend.

    suite.py BACKEND WORLD_SIZE [--json FILE] [PATTERN|=NAME ...]

BACKEND is "gloo" (the reference), "weft" or "weft-as-gloo".  For weft the
backend is added to DistTestCases.backend_feature as a plugin, subgroup and
ddp backend, as upstream asks third-party backends to do, and `import
weft.torch` registers it in the parent and in every spawned rank (the ranks
re-import this module).  The environment is the one upstream's runner sets:
BACKEND, WORLD_SIZE, TEMP_DIR (made by the suite itself).

weft-as-gloo runs the suite under the name "gloo" (BACKEND=gloo, so the
tests the suite gates on that name run) while every group created as
"gloo" is weft's native backend: weft's creator is registered as "gloo",
in the parent and in every rank, with its profiler titles "gloo:<op>" as
torch's tests expect of that name (dist.get_backend() + ":<op>"); the
groups still call themselves "weft" (pg.name(), DDP's logging: torch's DDP
logger reads ProcessGroupGloo's own object from a group named "gloo").
Gloo cannot run instead
unnoticed: every rank checks, as each group is created and before the
test, that the group's CPU backend is weft's WeftBackend (an
AssertionError fails the test otherwise; torch's gloo debug wrapper is
refused too), and writes a proof file when its test body has run on weft
only; the parent fails a test that passed without a proof from every rank.

Prints one line per test (ok / FAIL / ERROR / skipped with its reason) and
ends with "suite BACKEND WORLD_SIZE: N passed, N failed, N skipped";
--json writes {test name: [ok|fail|skip, reason]} for compare.py.
"""
import os
import shutil
import sys
import tempfile

AS_GLOO = "weft-as-gloo"

if __name__ == "__main__":
    # the ranks inherit the environment: TORCH_SUITE_BACKEND tells them
    # which backend runs under BACKEND's name
    os.environ["TORCH_SUITE_BACKEND"] = sys.argv[1]
    os.environ["BACKEND"] = "gloo" if sys.argv[1] == AS_GLOO else sys.argv[1]
    os.environ["WORLD_SIZE"] = sys.argv[2]

BACKEND = os.environ["BACKEND"]
SUITE_BACKEND = os.environ.get("TORCH_SUITE_BACKEND", BACKEND)
if SUITE_BACKEND == AS_GLOO and BACKEND != "gloo":
    sys.exit("suite: %s needs BACKEND=gloo, not %r" % (AS_GLOO, BACKEND))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.testing._internal.common_distributed import (  # noqa: E402
    DistTestCases)

if SUITE_BACKEND in ("weft", AS_GLOO):
    import weft.torch  # noqa: E402,F401  registers "weft"
if SUITE_BACKEND == "weft":
    for feature in ("plugin", "subgroup", "ddp"):
        DistTestCases.backend_feature[feature].add("weft")


# ---- weft-as-gloo: groups created as "gloo" are weft's --------------------

_violations = []   # groups of this rank that were not weft's


def _weft_as_gloo(store, rank, size, timeout):
    """weft's creator registered as "gloo": the group init_process_group(
    "weft") creates, its profiler titles "gloo:<op>"."""
    from weft.torch import _native
    return _native.create_backend(store, rank, size, timeout,
                                  registered_as="gloo")


def _weft_backend_of(pg):
    """The group's CPU backend when it is weft's, else None."""
    from weft.torch import _native
    try:
        impl = pg._get_backend(torch.device("cpu"))
    except RuntimeError:
        return None
    return impl if isinstance(impl, _native._ext.WeftBackend) else None


def _check_group(pg, what):
    if _weft_backend_of(pg) is None:
        try:
            impl = type(pg._get_backend(torch.device("cpu"))).__name__
        except RuntimeError as e:
            impl = "no CPU backend (%s)" % e
        msg = ("%s: %s's CPU backend is %s, not weft's WeftBackend"
               % (AS_GLOO, what, impl))
        _violations.append(msg)
        raise AssertionError(msg)


def _install_weft_as_gloo():
    c10d = dist.distributed_c10d
    # torch registers its own gloo lazily, through its entry point, only
    # when no plugin of that name is registered yet; a registration made
    # after it replaces it.
    dist.Backend.register_backend("gloo", _weft_as_gloo, devices=["cpu"])
    assert c10d.Backend._plugins["GLOO"].creator_fn is _weft_as_gloo

    helper = c10d._new_process_group_helper

    def checked_helper(group_size, group_rank, global_ranks_in_group,
                       backend, *args, **kwargs):
        pg, store = helper(group_size, group_rank, global_ranks_in_group,
                           backend, *args, **kwargs)
        if isinstance(pg, dist.ProcessGroup):
            _check_group(pg, "group %s (backend %r)" % (
                global_ranks_in_group or "WORLD", str(backend)))
        return pg, store
    c10d._new_process_group_helper = checked_helper

    def no_gloo_wrapper(*args, **kwargs):
        msg = ("%s: torch tried to wrap a group with a ProcessGroupGloo "
               "helper (TORCH_DISTRIBUTED_DEBUG=DETAIL)" % AS_GLOO)
        _violations.append(msg)
        raise AssertionError(msg)
    c10d._create_process_group_wrapper = no_gloo_wrapper


if SUITE_BACKEND == AS_GLOO:
    _install_weft_as_gloo()

from torch.testing._internal.distributed.distributed_test import (  # noqa
    DistributedTest, TestDistBackend)

torch.backends.cuda.matmul.allow_tf32 = False


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        if SUITE_BACKEND == AS_GLOO:
            # where the ranks prove that they ran on weft (inherited)
            self._proofs = tempfile.mkdtemp(prefix="weft-as-gloo-")
            os.environ["TORCH_SUITE_PROOF_DIR"] = self._proofs
        self._spawn_processes()
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()

    def tearDown(self):
        super().tearDown()
        if SUITE_BACKEND == AS_GLOO:
            shutil.rmtree(self._proofs, ignore_errors=True)

    # in a rank: the test body runs only on weft's groups
    def run_test(self, test_name, parent_pipe):
        if SUITE_BACKEND == AS_GLOO:
            body = getattr(self, test_name)

            def on_weft():
                _check_group(dist.group.WORLD, "the default group")
                body()
                if _violations:
                    raise AssertionError("; ".join(_violations))
                proof = os.path.join(os.environ["TORCH_SUITE_PROOF_DIR"],
                                     "rank%d" % self.rank)
                with open(proof, "w") as f:
                    f.write("weft\n")
            setattr(self, test_name, on_weft)
        super().run_test(test_name, parent_pipe)

    # in the parent: a pass counts only with every rank's proof
    def _check_return_codes(self, fn, elapsed_time):
        super()._check_return_codes(fn, elapsed_time)
        if SUITE_BACKEND == AS_GLOO and self.processes:
            missing = [r for r in range(int(self.world_size))
                       if not os.path.exists(os.path.join(
                           self._proofs, "rank%d" % r))]
            if missing:
                raise AssertionError(
                    "%s: ranks %s passed without proving that their groups "
                    "were weft's" % (AS_GLOO, missing))


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
