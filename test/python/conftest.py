"""pytest setup for test/python: the harness is importable, and tests that
need numpy or torch are skipped, with the reason, when the environment
lacks them (`make python` installs both; see python/scripts/make-venv.sh)."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ROOT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))


def setup_error():
    """Why `make python` failed, when it did."""
    path = os.path.join(sys.prefix, "setup-error")
    if os.path.exists(path):
        return open(path).read().strip()
    return None


# The full weft.horovod suite (test/python/horovod/) runs under `make
# test-horovod`, which sets WEFTPY_TEST_HOROVOD=1; `make test` runs its
# slice, test_horovod.py.
# The TensorFlow suite (test/python/tensorflow/) needs make test-tf's venv
# and runs only under that target, which sets WEFTPY_TEST_TF=1.
collect_ignore = []
if not os.environ.get("WEFTPY_TEST_HOROVOD"):
    collect_ignore.append("horovod")
if not os.environ.get("WEFTPY_TEST_TF"):
    collect_ignore.append("tensorflow")

_missing = {}


def missing(module):
    """Why `module` cannot be imported here, or None when it can."""
    if module not in _missing:
        try:
            __import__(module)
            _missing[module] = None
        except Exception as e:  # ImportError, or a broken install
            why = setup_error()
            _missing[module] = "%s cannot be imported in %s (%s)%s" % (
                module, sys.prefix, str(e).splitlines()[0][:200],
                "; make python: %s" % why if why else
                "; run `make python`")
    return _missing[module]


def needs(module):
    """A mark that skips each test of a module, with the reason, when
    `module` is missing (each test then counts as one skipped test)."""
    return pytest.mark.skipif(missing(module) is not None,
                              reason=missing(module) or "")
