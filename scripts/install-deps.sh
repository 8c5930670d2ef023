#!/bin/sh
# Installs Debian packages when they are missing: with apt-get when running
# as root, otherwise it prints the command.  Idempotent and fast when
# everything is present.  Without arguments: what weft needs to build and
# test; with arguments: those packages (scripts/install-compare-deps.sh).
set -eu

# build-essential: gcc, make; iproute2: network namespaces for multi-host
# tests; procps: pkill/ps used by tests; gnuplot-nox: weft-bench --plot;
# python3-venv: the Python package's environment (make python, make test);
# libssl-dev: libcrypto for HMAC authentication (src/auth.c); clang:
# libFuzzer harnesses (make fuzz); valgrind: the leak-check test;
# libibverbs-dev: <infiniband/verbs.h> for the verbs transport (libibverbs
# itself is loaded at run time, so the library never needs it); nftables:
# packet-loss rules between network namespaces (test/fault/netns-faults.sh);
# libhwloc-dev, hwloc-nox: the topology (src/topo/, HWLOC=auto) and the
# tools that check its test topologies (lstopo-no-graphics); libpmix-dev,
# libpmi2-0-dev: <pmix.h> and Slurm's <slurm/pmi2.h>, for the rendezvous
# through mpirun's and srun's process-management interfaces (the libraries
# are loaded at run time, src/rdv/pmi_*.c); gfortran: the Fortran module
# and its test program (fortran/, mk/fortran.mk).
PACKAGES="build-essential pkg-config iproute2 procps gnuplot-nox python3-venv
          libssl-dev clang valgrind libibverbs-dev nftables libhwloc-dev
          hwloc-nox libpmix-dev libpmi2-0-dev gfortran"

[ $# -gt 0 ] && PACKAGES="$*"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
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
