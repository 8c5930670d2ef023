#!/bin/bash
# run.sh - `make test-launchers`: weft under the launchers clusters use.
#
#   usage: test/launchers/run.sh BUILD_DIR [PART...]
#
# Parts (each a script here; docs/launchers.md says what each proves):
#   service   weft-rendezvous through the shipped systemd unit: --check,
#             the token, key=value log lines, SIGTERM
#   torchrun  torchrun's variables, and the real torchrun where installed
#   mpi       mpirun -np 4 weft-bench; the MPI bootstrap example
#   netns     4 network namespaces as hosts, 2 ranks each (root)
#   ssh       weftrun -H across 4 namespace hosts, each with its own sshd
#             (root)
#   slurm     a real slurmctld + slurmd + munged, srun and sbatch (root)
#   spark_ray DDP on weft under Spark's TorchDistributor and Ray Train's
#             TorchTrainer, bitwise against torchrun (installs pyspark and
#             ray into .venv when missing)
# Parts that cannot run here count as skipped, with the reason.  Ends with
# one line "N passed, N failed, N skipped"; exits 1 when anything failed.
set -uo pipefail
here=$(dirname "$(readlink -f "$0")")
export WF_BUILD=${1:?usage: run.sh BUILD_DIR [PART...]}
shift
parts=${*:-service torchrun mpi netns ssh slurm spark_ray}

WF_LOGDIR=$(mktemp -d /tmp/weft-launchers-XXXXXX)
export WF_LOGDIR
export WF_RESULTS=$WF_LOGDIR/results
: > "$WF_RESULTS"
start=$SECONDS
for part in $parts; do
    [ -x "$here/$part.sh" ] || { echo "run.sh: no part '$part'" >&2; exit 2; }
    t=$SECONDS
    echo "=== $part"
    "$here/$part.sh" || echo "FAIL $part: the script exited with status $?" >> "$WF_RESULTS"
    echo "=== $part: $((SECONDS - t)) s"
done

passed=$(grep -c '^PASS ' "$WF_RESULTS")
failed=$(grep -c '^FAIL ' "$WF_RESULTS")
skipped=$(grep -c '^SKIP ' "$WF_RESULTS")
[ "$skipped" = 0 ] || { echo "skipped:"; grep '^SKIP ' "$WF_RESULTS" | sed 's/^/  /'; }
if [ "$failed" != 0 ]; then
    echo "failed:"
    grep '^FAIL ' "$WF_RESULTS" | sed 's/^/  /'
    echo "logs in $WF_LOGDIR"
else
    rm -rf "$WF_LOGDIR"
fi
echo "test-launchers took $((SECONDS - start)) s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
