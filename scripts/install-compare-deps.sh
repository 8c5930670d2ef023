#!/bin/sh
# Installs what `make compare` needs beyond the build (bench/compare: Open
# MPI and Gloo to compare weft against).  Kept apart from the default list
# of install-deps.sh so `make test` never pulls MPI or Gloo in.
#
# openmpi-bin: mpirun; libopenmpi-dev: mpicc and mpi.h; libgloo-dev: Gloo's
# headers and library; g++: the Gloo harness is C++.
exec "$(dirname "$0")/install-deps.sh" openmpi-bin libopenmpi-dev libgloo-dev g++
