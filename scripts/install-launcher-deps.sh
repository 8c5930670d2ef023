#!/bin/sh
# Installs what `make test-launchers` needs beyond the build
# (test/launchers/, docs/launchers.md).  Kept apart from the default list
# of install-deps.sh so `make test` never pulls Slurm or MPI in.
#
# slurm-wlm: slurmctld, slurmd, srun, sbatch; munge: Slurm's
# authentication daemon; openmpi-bin: mpirun; libopenmpi-dev: mpicc and
# mpi.h for the MPI bootstrap example; mpich: MPICH's mpiexec.hydra, the
# PMI_RANK/PMI_SIZE launcher (its mpirun/mpicc alternatives have priority
# 40 against Open MPI's 50, so mpirun and mpicc stay Open MPI's);
# iproute2: network namespaces; openssh-server, openssh-client: weftrun
# across hosts (test/launchers/ssh.sh runs an sshd per namespace);
# openjdk-17-jre-headless: Java for Spark 4 (test/launchers/spark_ray.sh;
# its Python packages come from PyPI, into .venv, in that part).
exec "$(dirname "$0")/install-deps.sh" slurm-wlm munge openmpi-bin \
    libopenmpi-dev mpich iproute2 openssh-server openssh-client \
    openjdk-17-jre-headless
