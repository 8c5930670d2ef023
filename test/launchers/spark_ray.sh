#!/bin/bash
# spark_ray.sh - DistributedDataParallel on weft launched by Spark's
# TorchDistributor and by Ray Train's TorchTrainer: the two examples of
# docs/launchers.md, run unchanged, each ending with the same parameters as
# its training function under torchrun (spark_ray.py).
#   spark_ray_docs          docs/launchers.md shows both examples as they are
#   spark_ray_install       pyspark and ray[train] in make python's venv,
#                           pinned (python/requirements-launchers.txt),
#                           when missing
#   spark_ray_torchrun      the references: each example's training
#                           function under torchrun --nproc-per-node 2
#   spark_torchdistributor  docs/examples/spark_ddp.py through spark-submit
#                           on a local-cluster Spark (a master and 2
#                           workers, 2 executor JVMs of 1 core):
#                           TorchDistributor(num_processes=2,
#                           local_mode=False, use_gpu=False).run(train)
#   ray_torchtrainer_env    docs/examples/ray_ddp.py: TorchTrainer with
#   ray_torchtrainer_tcp    TorchConfig(backend="weft") and 2 CPU workers
#                           on a local Ray cluster (its ray.init()), with
#                           TorchConfig's init_method "env" (the default)
#                           and "tcp"
# A launch passes when its rank 0's state dict is bitwise torchrun's, and
# both ranks said they ran this venv's Python on a "weft" group.  Needs
# make python's venv, and Java 17 or later for Spark 4
# (openjdk-17-jre-headless, scripts/install-launcher-deps.sh).  What cannot
# be installed or started is skipped with the reason.  Loopback only.
set -uo pipefail
here=$(dirname "$(readlink -f "$0")")
. "$here/lib.sh"
root=$(readlink -f "$here/../..")
HARNESS=$here/spark_ray.py
SPARK_EX=$root/docs/examples/spark_ddp.py
RAY_EX=$root/docs/examples/ray_ddp.py
REQ=$root/python/requirements-launchers.txt

# docs/launchers.md shows both examples whole: the code a user copies is
# the code tested here.
docs_show_examples() {
    python3 - "$root/docs/launchers.md" "$SPARK_EX" "$RAY_EX" <<'PY'
import sys
doc = open(sys.argv[1]).read()
for path in sys.argv[2:]:
    if "```python\n" + open(path).read() + "```\n" not in doc:
        sys.exit("docs/launchers.md does not show %s as it is" % path)
PY
}
wf_check spark_ray_docs docs_show_examples

if ! why=$(wf_torch_ready); then
    wf_skip spark_ray "$why"
    exit 0
fi
venv_bin=$(dirname "$WF_PY")

dir=$(mktemp -d "${TMPDIR:-/tmp}/weft-spark-ray-XXXXXX")
cleanup() { rm -rf "$dir"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
# torchrun's, pyspark's and Ray's temporary files go there too.
export TMPDIR=$dir

# Whether every pin of requirements-launchers.txt is installed in the venv
# (else says which is not).
pins_installed() {
    "$WF_PY" - "$REQ" <<'PY'
import importlib.metadata as md, re, sys
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, version = re.match(r"([A-Za-z0-9_.-]+)(?:\[.*\])?==(\S+)", line).groups()
    try:
        if md.version(name) != version:
            sys.exit("%s %s, not %s" % (name, md.version(name), version))
    except md.PackageNotFoundError:
        sys.exit("%s is not installed" % name)
PY
}

# pip into the venv, with the base venv's pins as constraints, so that no
# package of make python's list changes.
install() {
    local t0=$SECONDS
    "$WF_PY" -m pip install --disable-pip-version-check \
        -c "$root/python/requirements.txt" -r "$REQ" || return 1
    pins_installed || return 1
    echo "installed in $((SECONDS - t0)) s"
}
if missing=$(pins_installed 2>&1); then
    echo "spark_ray: pyspark and ray[train] are in the venv"
else
    echo "spark_ray: installing $REQ into the venv ($missing)"
    t0=$SECONDS
    if ! wf_check spark_ray_install install; then
        wf_skip spark_ray "pip could not install python/requirements-launchers.txt into the venv ($WF_LOGDIR/spark_ray_install.log)"
        exit 0
    fi
    echo "spark_ray: installed in $((SECONDS - t0)) s"
fi

# Every launch runs each process on one thread (see spark_ray.py).
export OMP_NUM_THREADS=1

# The references: both training functions under torchrun, one group each.
reference() {
    timeout 300 "$venv_bin/torchrun" --nnodes 1 --node-rank 0 \
        --master-addr 127.0.0.1 --master-port "$(wf_free_port_pair_low)" \
        --nproc-per-node 2 "$HARNESS" reference \
        "$SPARK_EX" "$dir/ref-spark.pt" "$RAY_EX" "$dir/ref-ray.pt"
}
if ! wf_check spark_ray_torchrun reference; then
    wf_skip spark_ray "no torchrun reference to compare with"
    exit 0
fi

# launched NAME LOG REF OUT: both ranks said they ran this venv's Python on
# a weft group, and OUT is bitwise REF.
launched() {
    local name=$1 log=$2 r ok=0
    for r in 0 1; do
        grep -q "rank $r of 2: backend weft, python $WF_PY\$" "$log" ||
            { echo "$name: no line 'rank $r of 2: backend weft, python $WF_PY'"; ok=1; }
    done
    "$WF_PY" "$HARNESS" compare "$3" "$4" "$name" || ok=1
    return $ok
}

# verdict NAME STATUS LOG STARTED REF OUT: skip when the launcher did not
# start (no line STARTED in LOG), else pass or fail.
verdict() {
    local name=$1 status=$2 log=$3 started=$4 out
    grep -a -E "rank [01]( of 2)?:" "$log" | awk '!seen[$0]++ {print "  " $0}'
    if [ "$status" != 0 ] && ! grep -q "$started" "$log"; then
        wf_skip "$name" "it did not start (exit status $status; $log): $(grep -a -m 1 -E 'Error|Exception' "$log")"
    elif [ "$status" != 0 ]; then
        wf_fail "$name" "exit status $status"
    elif out=$(launched "$name" "$log" "$5" "$6"); then
        echo "$out"
        wf_pass "$name"
    else
        echo "$out" >> "$log"
        wf_fail "$name" "$(echo "$out" | head -n 1)"
    fi
}

# Spark: Java 17 or later (Spark 4).  spark-submit with the venv's bin
# first on PATH (an activated venv: its find-spark-home runs python3);
# spark.pyspark.python names the Python of the driver and the executors;
# SPARK_LOCAL_IP and the driver's addresses keep Spark on loopback.  The
# local-cluster workers keep each executor's output in pyspark's
# work/APP-ID (no setting moves it), removed after the run.  Short-lived
# JVMs on 2 cores:
# the client compiler alone and the serial collector start them in about
# 60% of the CPU time (43 s against 71 s for a run, every process).
java_major() {
    java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1
}
jvm="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
if ! command -v java > /dev/null; then
    wf_skip spark_torchdistributor "no java (openjdk-17-jre-headless; scripts/install-launcher-deps.sh installs it as root)"
elif ! [ "$(java_major)" -ge 17 ] 2>/dev/null; then
    wf_skip spark_torchdistributor "Spark 4 needs Java 17 or later: $(java -version 2>&1 | head -n 1)"
else
    log=$WF_LOGDIR/spark_torchdistributor.log
    t0=$SECONDS
    env -u PYSPARK_PYTHON -u PYSPARK_DRIVER_PYTHON -u SPARK_HOME \
        PATH="$venv_bin:$PATH" SPARK_LOCAL_IP=127.0.0.1 \
        timeout -k 10 300 "$venv_bin/spark-submit" \
        --master "local-cluster[2,1,1024]" \
        --conf spark.pyspark.python="$WF_PY" \
        --conf spark.driver.host=127.0.0.1 \
        --conf spark.driver.bindAddress=127.0.0.1 \
        --conf spark.ui.enabled=false \
        --conf spark.executor.memory=512m \
        --conf spark.driver.extraJavaOptions="$jvm" \
        --conf spark.executor.extraJavaOptions="$jvm" \
        "$SPARK_EX" "$dir/spark.pt" > "$log" 2>&1
    status=$?
    echo "spark_torchdistributor: $((SECONDS - t0)) s"
    app=$(grep -a -o -m 1 'app-[0-9]*-[0-9]*' "$log" | head -n 1)
    work=$("$WF_PY" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')/work
    if [ -n "$app" ] && [ -d "$work/$app" ]; then
        cp -r "$work/$app" "$WF_LOGDIR/spark-$app"   # the executors' logs
        rm -rf "${work:?}/$app"
        rmdir "$work" 2>/dev/null
    fi
    verdict spark_torchdistributor $status "$log" \
        "Started distributed training with 2 executor processes" \
        "$dir/ref-spark.pt" "$dir/spark.pt"
fi

# Ray: a local cluster started by the example's ray.init(), on loopback
# (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0: a node's address is then 127.0.0.1,
# else Ray takes the host's first address even on one host); no usage
# statistics; every worker's lines (no deduplication of lines that differ
# in numbers only); HOME and RAY_TMPDIR under $dir, for Ray's token, session
# files and ~/ray_results.
mkdir -p "$dir/home"
for m in env tcp; do
    name=ray_torchtrainer_$m
    log=$WF_LOGDIR/$name.log
    t0=$SECONDS
    env -u RAY_ADDRESS RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_DEDUP_LOGS=0 \
        RAY_USAGE_STATS_ENABLED=0 RAY_TMPDIR="$dir" HOME="$dir/home" \
        timeout -k 10 300 "$WF_PY" "$RAY_EX" "$dir/ray-$m.pt" $m > "$log" 2>&1
    status=$?
    echo "$name: $((SECONDS - t0)) s"
    verdict "$name" $status "$log" "Started a local Ray instance" \
        "$dir/ref-ray.pt" "$dir/ray-$m.pt"
done
exit 0
