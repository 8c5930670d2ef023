"""Packaging hook: bundle libweft.so into the wheel when it has been built,
and build the native torch backend (weft/torch/_weft_c10d, C++ against the
torch this interpreter imports: `pip install --no-build-isolation ./python`
in an environment with torch and g++).  Without torch or a compiler the
wheel has no native backend and `import weft.torch` says why.

`pip install ./python` after `make` gives a self-contained package
(weft/lib/libweft.so, tagged for this platform).  Development installs
(`pip install -e ./python`, what `make python` does) load the library from
the build tree instead, so a rebuilt library is picked up without
reinstalling.  WEFTPY_LIBRARY names another library to bundle.
"""
import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = os.environ.get("WEFTPY_LIBRARY") or os.path.join(
    HERE, os.pardir, "build", "lib", "libweft.so")


class BuildPy(build_py):
    def run(self):
        super().run()
        if os.path.exists(LIBRARY) and not getattr(self, "editable_mode",
                                                   False):
            dest = os.path.join(self.build_lib, "weft", "lib")
            os.makedirs(dest, exist_ok=True)
            shutil.copy2(LIBRARY, os.path.join(dest, "libweft.so"))
        if not getattr(self, "editable_mode", False):
            out = os.path.join(self.build_lib, "weft", "torch")
            res = subprocess.run([sys.executable, os.path.join(
                HERE, "scripts", "build_torch_ext.py"), "--out", out])
            if res.returncode != 0:
                print("setup.py: the native torch backend was not built "
                      "(see above); the numpy API works without it")


class Dist(Distribution):
    def has_ext_modules(self):
        # A bundled shared library makes the wheel platform-specific.
        return os.path.exists(LIBRARY)


setup(cmdclass={"build_py": BuildPy}, distclass=Dist)
