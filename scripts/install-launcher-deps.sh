#!/bin/sh
# Installs what `make test-launchers` needs beyond the build
# (test/launchers/, docs/launchers.md).  Kept apart from the default list
# of install-deps.sh so `make test` never pulls Slurm or MPI in.
#
# slurm-wlm: slurmctld, slurmd, srun, sbatch; munge: Slurm's
# authentication daemon; openmpi-bin: mpirun; libopenmpi-dev: mpicc and
# mpi.h for the MPI bootstrap example; iproute2: network namespaces.
exec "$(dirname "$0")/install-deps.sh" slurm-wlm munge openmpi-bin \
    libopenmpi-dev iproute2
