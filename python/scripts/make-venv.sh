#!/bin/sh
# Creates or refreshes the Python environment of `make python`:
#   VENV (default .venv) with the pinned packages of python/requirements.txt
#   (PyTorch 2.x, numpy, pytest) and the weft package in development mode.
# Idempotent: a stamp records what was installed, so a second run returns at
# once.  pip's output goes to VENV/install.log and is shown on failure.
# On failure VENV/setup-error holds the reason, which the Python test runner
# reports when it skips the tests that need what is missing.
#
# Usage: python/scripts/make-venv.sh [PYTHON [VENV [REQUIREMENTS [MODULE]]]]
#   PYTHON  the interpreter to build on (default: Debian's /usr/bin/python3,
#           else python3 on PATH); it needs the venv module (python3-venv).
#   REQUIREMENTS  the pinned list (default python/requirements.txt;
#           `make test-tf` gives python/requirements-tf.txt for .venv-tf)
#   MODULE  the framework the venv is for, imported to check it (default
#           torch)
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
py=${1:-}
venv=${2:-.venv}
req=${3:-python/requirements.txt}
module=${4:-torch}
if [ -z "$py" ]; then
    if [ -x /usr/bin/python3 ]; then py=/usr/bin/python3; else py=python3; fi
fi
log=$venv/install.log
stamp=$venv/.weft-stamp
want="$(cat "$req" python/pyproject.toml python/setup.py | cksum)"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
   "$venv/bin/python" -c "import weft" 2>/dev/null; then
    echo "make-venv: $venv is up to date"
    exit 0
fi

fail() {
    echo "make-venv: $1" >&2
    mkdir -p "$venv"
    echo "$1" > "$venv/setup-error"
    [ -f "$log" ] && tail -n 20 "$log" >&2
    exit 1
}

start=$(date +%s)
if [ ! -x "$venv/bin/python" ]; then
    echo "make-venv: creating $venv with $py ($("$py" --version 2>&1))"
    "$py" -m venv "$venv" ||
        fail "cannot create $venv with $py: install python3-venv"
fi
rm -f "$stamp" "$venv/setup-error"
: > "$log"
pip="$venv/bin/python -m pip --disable-pip-version-check"

# Every package is pinned in the file, so --no-deps loses nothing and keeps
# pip from pulling the CUDA packages torch declares but a CPU run never
# loads (see the comment at the top of requirements.txt).
echo "make-venv: installing $req ($module, numpy, pytest; gigabytes of" \
     "downloads on a fresh machine, a few minutes)"
$pip install --no-deps -r "$req" >> "$log" 2>&1 ||
    fail "pip could not install $req (no network or PyPI?); see $log"
$pip install --no-deps --no-build-isolation -e ./python >> "$log" 2>&1 ||
    fail "pip could not install ./python in development mode; see $log"
# Not weft.torch: its native backend is built after this, by
# build_torch_ext.py (make python), which an editable install leaves out.
"$venv/bin/python" -c "import $module, weft" >> "$log" 2>&1 ||
    fail "import $module, weft fails in $venv; see $log"

echo "$want" > "$stamp"
versions=$("$venv/bin/python" -c "import $module, numpy, weft
print('$module', $module.__version__, 'numpy', numpy.__version__,
      'weft', weft.__version__)")
echo "make-venv: $venv ready in $(( $(date +%s) - start )) s: $versions"
