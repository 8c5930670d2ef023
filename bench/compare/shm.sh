#!/bin/bash
# shm.sh - `make bench-shm`: weft's shared-memory transport against Open
# MPI's (vader, its default on one machine), allreduce and broadcast, on
# every size of the sweep, timed by the same harness loop on both sides
# (bench/compare/weft_allreduce.c and mpi_allreduce.c: a barrier, then -r
# calls back to back timed as one; time = the slowest rank's average).
# The two alternate within each round, the first of them changing from
# round to round, and the verdict per size is the median over the rounds
# of that round's own weft / Open MPI time ratio (lower is better for
# weft; busbw's ratio is its inverse): this machine's speed drifts too
# much for a ratio of two best cases.
#
# usage: shm.sh BUILD_DIR
# environment: SHM_RANKS ("2 4"), SHM_COLLS ("allreduce broadcast"),
#              SHM_ROUNDS (5), SHM_SIZES ("-b 8 -e 64M -f 8"),
#              SHM_ITERS ("-w 20 -r 200"), SHM_OUT (raw outputs,
#              BUILD_DIR/compare/shm)
set -euo pipefail

build=${1:?usage: shm.sh BUILD_DIR}
ranks=${SHM_RANKS:-2 4}
colls=${SHM_COLLS:-allreduce broadcast}
rounds=${SHM_ROUNDS:-5}
sizes=${SHM_SIZES:--b 8 -e 64M -f 8}
iters=${SHM_ITERS:--w 20 -r 200}
out=${SHM_OUT:-$build/compare/shm}
mkdir -p "$out"

run_weft() { # N coll
    # shellcheck disable=SC2086
    WEFT_TRANSPORT=auto "$build/bin/weftrun" -n "$1" \
        "$build/compare/weft_allreduce" -c "$2" $sizes $iters
}
run_mpi() { # N coll
    # shellcheck disable=SC2086
    mpirun --oversubscribe --allow-run-as-root --bind-to none -np "$1" \
        "$build/compare/mpi_allreduce" -c "$2" $sizes $iters
}

echo "# make bench-shm: $colls float32, $sizes $iters, ranks: $ranks," \
    "$rounds rounds, weft (WEFT_TRANSPORT=auto) and Open MPI (vader)" \
    "alternating"
echo "# $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 |
    sed 's/^ *//'), kernel $(uname -r), load average before:" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
for c in $colls; do
    for n in $ranks; do
        for r in $(seq "$rounds"); do
            if (( r % 2 )); then
                run_weft "$n" "$c" > "$out/weft-$c-$n-$r.txt"
                run_mpi "$n" "$c" > "$out/mpi-$c-$n-$r.txt"
            else
                run_mpi "$n" "$c" > "$out/mpi-$c-$n-$r.txt"
                run_weft "$n" "$c" > "$out/weft-$c-$n-$r.txt"
            fi
        done
        echo
        echo "| $c | ranks | size (B) | weft (µs) | Open MPI (µs) | weft / Open MPI (time) | weft busbw (GB/s) | wrong |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|"
        # Per size: the medians of both times and of the rounds' ratios.
        awk -v c="$c" -v n="$n" -v R="$rounds" -v dir="$out" '
        function median(a, k,    i, j, t) {
            for (i = 2; i <= k; i++)
                for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
                    t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
            return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
        }
        BEGIN {
            for (r = 1; r <= R; r++)
                for (s = 0; s < 2; s++) {
                    f = dir "/" (s ? "mpi" : "weft") "-" c "-" n "-" r ".txt"
                    while ((getline line < f) > 0) {
                        if (line ~ /^#/) continue
                        split(line, v, " ")
                        if (!(v[1] in seen)) { seen[v[1]] = 1; sz[++ns] = v[1] }
                        t[s, v[1], r] = v[3]
                        if (!s) bw[v[1], r] = v[5]
                        bad[s] += v[6]
                    }
                    close(f)
                }
            for (i = 1; i <= ns; i++) {
                size = sz[i]; k = 0
                for (r = 1; r <= R; r++) {
                    if (!((0, size, r) in t) || !((1, size, r) in t)) continue
                    k++
                    wt[k] = t[0, size, r]; mt[k] = t[1, size, r]
                    rt[k] = mt[k] > 0 ? wt[k] / mt[k] : 0; b[k] = bw[size, r]
                }
                if (!k) continue
                printf "| %s | %d | %d | %.3f | %.3f | %.2f | %.3f | %d |\n", c, n,
                    size, median(wt, k), median(mt, k), median(rt, k),
                    median(b, k), bad[0] + bad[1]
            }
        }'
    done
done
echo
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
