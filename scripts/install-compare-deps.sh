#!/bin/sh
# Installs what `make compare` needs beyond the build (bench/compare: Open
# MPI and Gloo to compare weft against), when missing: with apt-get when
# running as root, otherwise it prints the command.  Kept apart from
# install-deps.sh so `make test` never pulls MPI or Gloo in.  Idempotent
# and fast when everything is present.
set -eu

# openmpi-bin: mpirun; libopenmpi-dev: mpicc and mpi.h; libgloo-dev: Gloo's
# headers and library; g++: the Gloo harness is C++.
PACKAGES="openmpi-bin libopenmpi-dev libgloo-dev g++"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
        grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $missing >/dev/null
else
    echo "missing packages:$missing"
    echo "install them with: sudo apt-get install -y$missing"
    exit 1
fi
