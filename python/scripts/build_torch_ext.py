"""Builds weft's native torch.distributed backend, weft/torch/_weft_c10d,
against the torch that this interpreter imports.

    python build_torch_ext.py [--out DIR] [--include DIR] [--jobs N]

The C++ sources are python/weft/torch/csrc/*.cpp; they include weft.h
(<checkout>/include, or --include) and torch's headers, and link against
torch's libraries (with torch's lib directory as the run path).  libweft's
symbols are not linked: weft._lib loads libweft.so with RTLD_GLOBAL before
the extension is imported, so the extension uses whichever library weft
loaded (WEFTPY_LIBRARY, the wheel's copy, the build tree, the system).

Objects go to python/build/torch-ext/ and are rebuilt when a source or
header is newer, or torch changed.  Exit status 0 when the extension is
current; 1 with the reason on stderr (no C++ compiler, no torch headers,
a compile error).  Used by `make python` and by `pip install ./python`.
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(os.path.dirname(HERE), "weft", "torch")
SRC = os.path.join(PKG, "csrc")
REPO_INCLUDE = os.path.join(os.path.dirname(os.path.dirname(HERE)),
                            "include")
NAME = "_weft_c10d"


def fail(msg):
    print("build_torch_ext: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=PKG)
    ap.add_argument("--include", default=REPO_INCLUDE)
    ap.add_argument("--objdir", default=os.path.join(
        os.path.dirname(HERE), "build", "torch-ext"))
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()

    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        fail("no C++ compiler (g++ or $CXX): install g++")
    try:
        import torch
        from torch.utils import cpp_extension
    except ImportError as e:
        fail("torch cannot be imported: %s" % e)
    incs = cpp_extension.include_paths()
    if not os.path.exists(os.path.join(incs[0], "torch", "csrc",
                                       "distributed", "c10d",
                                       "Backend.hpp")):
        fail("torch %s has no c10d headers under %s" % (torch.__version__,
                                                        incs[0]))
    if not os.path.exists(os.path.join(args.include, "weft.h")):
        fail("weft.h not found in %s" % args.include)
    pyinc = sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(pyinc, "Python.h")):
        fail("Python.h not found in %s: install python3-dev" % pyinc)
    libdir = cpp_extension.library_paths()[0]

    flags = ["-O2", "-std=c++20", "-fPIC", "-fvisibility=hidden",
             "-DTORCH_EXTENSION_NAME=" + NAME,
             "-DTORCH_API_INCLUDE_EXTENSION_H",
             "-I" + args.include, "-I" + pyinc] + \
        ["-isystem" + i for i in incs]
    # torch's identity: rebuild every object when torch (or the flags) change
    stamp_text = "%s %s %s\n" % (torch.__version__, torch.__file__,
                                 " ".join(flags))
    os.makedirs(args.objdir, exist_ok=True)
    stamp = os.path.join(args.objdir, "torch-stamp")
    fresh_torch = os.path.exists(stamp) and open(stamp).read() == stamp_text

    headers = [os.path.join(SRC, f) for f in os.listdir(SRC)
               if f.endswith(".hpp")] + [os.path.join(args.include,
                                                      "weft.h")]
    newest_header = max(os.path.getmtime(h) for h in headers)
    sources = sorted(f for f in os.listdir(SRC) if f.endswith(".cpp"))
    jobs = []
    objs = []
    for src in sources:
        path = os.path.join(SRC, src)
        obj = os.path.join(args.objdir, src[:-4] + ".o")
        objs.append(obj)
        if not (fresh_torch and os.path.exists(obj) and
                os.path.getmtime(obj) > max(os.path.getmtime(path),
                                            newest_header)):
            jobs.append([cxx] + flags + ["-c", path, "-o", obj])

    def run(cmd):
        print("build_torch_ext: " + os.path.basename(cmd[-3]), flush=True)
        return cmd, subprocess.run(cmd, capture_output=True, text=True)

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for cmd, res in pool.map(run, jobs):
            if res.returncode != 0:
                errors = [l for l in res.stderr.splitlines() if "error" in l]
                sys.stderr.write("\n".join(errors[:20] or
                                           res.stderr.splitlines()[-20:]))
                sys.stderr.write("\n")
                fail("compiling %s failed: %s" % (cmd[-3],
                                                  shlex.join(cmd[:3]) + "..."))
    with open(stamp, "w") as f:
        f.write(stamp_text)

    target = os.path.join(args.out, NAME + sysconfig.get_config_var(
        "EXT_SUFFIX"))
    if jobs or not os.path.exists(target) or \
            os.path.getmtime(target) < max(os.path.getmtime(o) for o in objs):
        link = [cxx, "-shared", "-o", target] + objs + [
            "-L" + libdir, "-Wl,-rpath," + libdir,
            "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"]
        res = subprocess.run(link, capture_output=True, text=True)
        if res.returncode != 0:
            sys.stderr.write(res.stderr[-6000:])
            fail("linking %s failed" % target)
        print("build_torch_ext: built %s (torch %s)" % (target,
                                                       torch.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
