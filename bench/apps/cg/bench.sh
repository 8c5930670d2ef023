#!/bin/bash
# bench.sh - `make bench-apps`: the CG mini-app (bench/apps/cg/) on weft
# and on Open MPI, same solver object, same problem, on each rank count.
# Open MPI runs over its shared memory (btl self,vader); weft under weftrun
# with its default transport (shared memory on one machine).  Neither is
# bound to cores: the ranks may outnumber them.
#
# The two sides alternate within each round, the first changing from round
# to round, and the verdict is the median over the rounds of that round's
# own weft / MPI ratio of time per iteration (lower is better for weft):
# this machine's speed drifts too much for a ratio of two best cases.  Each
# round also checks that both sides printed the same residual history, bit
# for bit, and the table says in how many rounds they did.
#
# The table goes to stdout and, with the settings and the command, to a
# dated record in bench/results/ (CG_RECORD; CG_RECORD=- writes none).
#
# usage: bench.sh BUILD_DIR
# environment: CG_RANKS ("2 4"), CG_ROUNDS (21),
#              CG_ARGS ("-x 32 -y 32 -z 32 -i 1000": the grid per rank and
#              the iterations), CG_OUT (raw outputs, BUILD_DIR/apps/bench),
#              CG_RECORD (bench/results/DATE-cg-miniapp.md)
set -euo pipefail

build=${1:?usage: bench.sh BUILD_DIR}
ranks=${CG_RANKS:-2 4}
rounds=${CG_ROUNDS:-21}
args=${CG_ARGS:--x 32 -y 32 -z 32 -i 1000}
out=${CG_OUT:-$build/apps/bench}
record=${CG_RECORD:-bench/results/$(date +%F)-cg-miniapp.md}
mkdir -p "$out"

for p in "$build/apps/cg_weft" "$build/apps/cg_mpi"; do
    [ -x "$p" ] || { echo "bench.sh: $p is not built (make apps)" >&2; exit 1; }
done

run_weft() { # N
    # shellcheck disable=SC2086
    "$build/bin/weftrun" -n "$1" "$build/apps/cg_weft" $args
}
run_mpi() { # N
    # shellcheck disable=SC2086
    mpirun --allow-run-as-root --oversubscribe --bind-to none \
        --mca btl self,vader -np "$1" "$build/apps/cg_mpi" $args
}

# The residual history and error lines: what must match between sides.
answers() { grep -E '^cg: (iter|error) ' "$1" | cut -d' ' -f1-4; }

report() {
    echo "# make bench-apps: CG mini-app ($args), ranks: $ranks, $rounds" \
        "rounds, weft (weftrun, default transport) and Open MPI" \
        "(btl self,vader) alternating"
    echo
    echo "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo |
        cut -d: -f2 | sed 's/^ *//'), kernel $(uname -r), load average" \
        "before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- weft $(git describe --always --dirty 2>/dev/null || echo "?")," \
        "$(mpirun --version 2>/dev/null | head -1)"
    echo "- command: \`CG_RANKS=\"$ranks\" CG_ROUNDS=$rounds" \
        "CG_ARGS=\"$args\" make bench-apps\`"
    echo "- time per iteration: the slowest rank's wall time over the" \
        "iterations, divided by their number, after 10 untimed rounds of" \
        "the same communication"
    for n in $ranks; do
        for r in $(seq "$rounds"); do
            if (( r % 2 )); then
                run_weft "$n" > "$out/weft-$n-$r.txt"
                run_mpi "$n" > "$out/mpi-$n-$r.txt"
            else
                run_mpi "$n" > "$out/mpi-$n-$r.txt"
                run_weft "$n" > "$out/weft-$n-$r.txt"
            fi
            if cmp -s <(answers "$out/weft-$n-$r.txt") \
                      <(answers "$out/mpi-$n-$r.txt"); then
                echo same > "$out/same-$n-$r.txt"
            else
                echo differ > "$out/same-$n-$r.txt"
            fi
        done
    done
    echo
    echo "| ranks | weft (µs/iter) | weft's range | Open MPI (µs/iter) | Open MPI's range | weft / Open MPI | rounds with bitwise equal histories |"
    echo "|---:|---:|---:|---:|---:|---:|---:|"
    for n in $ranks; do
        awk -v n="$n" -v R="$rounds" -v dir="$out" '
        function median(a, k,    i, j, t) {
            for (i = 2; i <= k; i++)
                for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
                    t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
            return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
        }
        function per_iter(f,    line, v) {
            while ((getline line < f) > 0)
                if (line ~ /^cg: time per iteration /) {
                    split(line, v, " "); close(f); return v[5] * 1e6 }
            close(f)
            print "no time in " f > "/dev/stderr"; exit 1
        }
        BEGIN {
            for (r = 1; r <= R; r++) {
                w[r] = per_iter(dir "/weft-" n "-" r ".txt")
                m[r] = per_iter(dir "/mpi-" n "-" r ".txt")
                q[r] = w[r] / m[r]
                f = dir "/same-" n "-" r ".txt"
                getline s < f; close(f)
                same += s == "same"
            }
            lo_w = hi_w = w[1]; lo_m = hi_m = m[1]
            for (r = 2; r <= R; r++) {
                lo_w = w[r] < lo_w ? w[r] : lo_w; hi_w = w[r] > hi_w ? w[r] : hi_w
                lo_m = m[r] < lo_m ? m[r] : lo_m; hi_m = m[r] > hi_m ? m[r] : hi_m
            }
            printf "| %d | %.1f | %.1f-%.1f | %.1f | %.1f-%.1f | %.2f | %d of %d |\n",
                n, median(w, R), lo_w, hi_w, median(m, R), lo_m, hi_m,
                median(q, R), same, R
        }'
    done
    echo
    echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg) (other" \
        "programs on the machine take cores from the ranks)."
    echo
    echo "Times are medians over the rounds, ranges the fastest and slowest" \
        "round; the ratio is the median of the rounds' own ratios."
    echo "Raw outputs: $out (one file per side, rank count and round)."
}

if [ "$record" = - ]; then
    report
else
    report | tee "$record"
    echo "record: $record"
fi
