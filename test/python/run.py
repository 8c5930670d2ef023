"""The Python suite as `make test` runs it, after the C suite.

    run.py [--c-summary FILE] [pytest arguments...]

Runs pytest on test/python and ends with two plain lines:
    python: N passed, N failed, N skipped
    total: N passed, N failed, N skipped
where "total" adds the C suite's counts, read from the last
"N passed, N failed, N skipped" line of FILE (the C runner's output), so
that the last line of `make test` counts every test.  When pytest itself
is missing (the environment could not be set up), the suite counts as one
skipped test, with the reason.  Exit status: 1 if any test failed.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SUMMARY = re.compile(
    r"^(?:\w+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?")


def c_counts(path):
    """(passed, failed, skipped) from the C runner's last summary line."""
    counts = (0, 0, 0)
    if path and os.path.exists(path):
        for line in open(path, errors="replace"):
            m = SUMMARY.match(line.strip())
            if m:
                counts = tuple(int(g or 0) for g in m.groups())
    return counts


class Counter:
    """pytest plugin: counts outcomes the way the C runner does (a test
    whose setup or teardown errors counts as failed)."""

    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self._seen = {}

    def pytest_runtest_logreport(self, report):
        nodeid = report.nodeid
        if report.skipped:
            self._seen[nodeid] = "skipped"
        elif report.failed:
            self._seen[nodeid] = "failed"
        elif report.when == "call" and self._seen.get(nodeid) != "failed":
            self._seen[nodeid] = "passed"

    def pytest_collectreport(self, report):
        if report.failed:               # an import error in a test file
            self._seen[report.nodeid] = "failed"
        elif report.skipped:            # a whole file skipped: counts once
            self._seen[report.nodeid] = "skipped"

    def totals(self):
        vals = list(self._seen.values())
        return (vals.count("passed"), vals.count("failed"),
                vals.count("skipped"))


def main(argv):
    c_summary = None
    if argv[:1] == ["--c-summary"]:
        c_summary, argv = argv[1], argv[2:]
    try:
        import pytest
    except ImportError:
        reason = "pytest is not installed for %s" % sys.executable
        err = os.path.join(os.path.dirname(os.path.dirname(sys.executable)),
                           "setup-error")
        if os.path.exists(err):
            reason += " (make python: %s)" % open(err).read().strip()
        print("skip  python suite: %s" % reason)
        py = (0, 0, 1)
    else:
        counter = Counter()
        rc = pytest.main(["-v", "-rs", HERE] +
                         argv, plugins=[counter])
        py = counter.totals()
        if rc not in (0, 1, 5) and not py[1]:
            # interrupted, internal or usage error: not a clean run
            py = (py[0], 1, py[2])
    c = c_counts(c_summary)
    print("python: %d passed, %d failed, %d skipped" % py)
    if c_summary:
        print("total: %d passed, %d failed, %d skipped" %
              tuple(a + b for a, b in zip(py, c)))
    return 1 if py[1] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
