#!/bin/sh
# test/gpu/run.sh BUILD [NOT_BUILT] - `make test-gpu`: the collectives on
# real device buffers, on a host with a GPU (docs/cuda.md).
#
# Runs build/test/gpu/gpu_colls under weftrun: `colls` (every collective on
# cudaMalloc'ed buffers, checked element by element) with 2, 3 and 4 ranks
# sharing the GPU(s), and `stream` (weft_allreduce_stream's order on a CUDA
# stream) with 2 and 4.  Each run is one test; the last line is
# "N passed, N failed, N skipped".  Where no GPU can be used (no driver,
# `nvidia-smi -L` lists none, or cudaMalloc fails: gpu_colls probe), or
# nothing was built (NOT_BUILT says why), it prints "SKIP: ..." and counts
# one skip, exit 0.
set -u
build=${1:-build}
not_built=${2:-}
bin=$build/test/gpu/gpu_colls
weftrun=$build/bin/weftrun
logs=$build/test/gpu

skip_all() {
    echo "SKIP: $1"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
}

[ -z "$not_built" ] || skip_all "no CUDA build ($not_built)"
command -v nvidia-smi >/dev/null 2>&1 ||
    skip_all "no GPU (nvidia-smi not found: no NVIDIA driver)"
gpus=$(nvidia-smi -L 2>&1) ||
    skip_all "no GPU (nvidia-smi -L failed: $(echo "$gpus" | head -n 1))"
echo "$gpus" | grep -q '^GPU ' ||
    skip_all "no GPU (nvidia-smi -L lists none)"
probe=$("$bin" probe 2>&1) || skip_all "no GPU ($probe)"
echo "$gpus"
echo "$probe"

passed=0 failed=0 skipped=0
# A stuck collective ends in WEFT_ERR_TIMEOUT, not in the outer timeout.
export WEFT_TIMEOUT="${WEFT_TIMEOUT:-60s}"
# Each run's limit: every run takes seconds, and GPU time is scarce, so a
# hang (the process stuck inside CUDA, where no timeout of weft's fires)
# costs this much, not minutes.
run_limit=${GPU_RUN_LIMIT:-150}

run() { # NAME NRANKS MODE
    log=$logs/$1.log
    t0=$(date +%s)
    timeout "$run_limit" "$weftrun" -n "$2" -l -- "$bin" "$3" >"$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        passed=$((passed + 1))
        echo "ok    $1 ($(($(date +%s) - t0)) s)"
    elif [ $rc -eq 77 ]; then
        skipped=$((skipped + 1))
        echo "skip  $1: $(grep -m1 'skipped:' "$log" | sed 's/.*skipped: //')"
    else
        failed=$((failed + 1))
        echo "FAIL  $1 (exit $rc; $log)"
        tail -n 30 "$log"
    fi
}

mkdir -p "$logs"
for n in 2 3 4; do
    run "gpu_colls_n$n" "$n" colls
done
for n in 2 4; do
    run "gpu_stream_n$n" "$n" stream
done
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
