# runners.sh - how bench/compare runs each library's allreduce harness,
# sourced by compare.sh, cpu.sh and stalls.sh.  The caller sets `build`,
# `sizes` and `iters`, and `coll` (allreduce unless set: broadcast too for
# weft and Open MPI); each runner writes "size busbw wrong time_us" lines
# to stdout (time_us: the average time per call).
# shellcheck shell=bash
# The caller's variables, and `peers` for the caller:
# shellcheck disable=SC2034,SC2154

mpirun_base=(mpirun --oversubscribe --allow-run-as-root --bind-to none)
peers="mpi-tcp mpi-shm gloo-ring gloo-ringchunked gloo-hd"

run_weft() { # N transport tcp-single-copy-threshold
    # Fields of weft-bench --csv: 14 variant, 15 size, 17 time_us,
    # 21 busbw, 22 wrong
    # (hosts, field 5, is one name here, so no quoted comma shifts them).
    # shellcheck disable=SC2086
    WEFT_TRANSPORT=$2 WEFT_TCP_CMA_MIN=$3 "$build/bin/weft-bench" \
        "${coll:-allreduce}" -n "$1" $sizes $iters --csv |
        awk -F, '$14 == "out-of-place" { print $15, $21, $22, $17 }'
}

run_weft_harness() { # N: weft's twin of mpi_allreduce (weft_allreduce.c)
    # shellcheck disable=SC2086
    WEFT_TRANSPORT=tcp WEFT_TCP_CMA_MIN=0 "$build/bin/weftrun" -n "$1" \
        "$build/compare/weft_allreduce" $sizes $iters |
        awk '!/^#/ { print $1, $5, $6, $3 }'
}

run_mpi() { # N tcp|shm
    local net=()
    # ob1 + tcp only: UCX, if Open MPI picked it, would use shared memory.
    # shellcheck disable=SC2054 # "tcp,self" is one MCA value
    [ "$2" = tcp ] && net=(--mca pml ob1 --mca btl tcp,self
                           --mca btl_tcp_if_include lo)
    # shellcheck disable=SC2086
    "${mpirun_base[@]}" -np "$1" "${net[@]}" "$build/compare/mpi_allreduce" \
        -c "${coll:-allreduce}" $sizes $iters | awk '!/^#/ { print $1, $5, $6, $3 }'
}

run_gloo() { # N algorithm
    # shellcheck disable=SC2086
    "$build/compare/gloo_allreduce" -n "$1" -A "$2" $sizes $iters |
        awk '!/^#/ { print $1, $5, $6, $3 }'
}

run_one() { # name N
    case $1 in
    weft-tcp) run_weft "$2" tcp 0 ;;
    weft-tcp-harness) run_weft_harness "$2" ;;
    weft-cma) run_weft "$2" tcp "${WEFT_TCP_CMA_MIN:-64k}" ;;
    # auto: every rank here is on this machine, so shared memory
    weft-shm) run_weft "$2" auto 0 ;;
    mpi-tcp) run_mpi "$2" tcp ;;
    mpi-shm) run_mpi "$2" shm ;;
    gloo-ring) run_gloo "$2" ring ;;
    gloo-ringchunked) run_gloo "$2" ring_chunked ;;
    gloo-hd) run_gloo "$2" halving_doubling ;;
    esac
}

