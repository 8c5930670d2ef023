#!/bin/sh
# check-vectorize.sh - fail when the host reduction kernels that matter most
# stop being vectorized under the project's flags (-O2, baseline x86-64).
#
# src/reduce/reduce.c asks gcc for the dynamic vectorizer cost model with a
# pragma; a compiler upgrade or an innocent-looking edit to half.h can still
# turn a SIMD loop back into a scalar one without any test failing (results
# stay right, only 4-8x slower).  This compiles reduce.c with the library's
# optimisation flags and reads gcc's vectorizer dump, which names the
# function of every vectorized loop.
#
# Usage: scripts/check-vectorize.sh [-v]   (-v lists every kernel)
# The compiler is $CC (default gcc).  Other compilers are skipped, since
# the dump is gcc's.  See docs/reductions.md.
set -eu

CC=${CC:-gcc}
verbose=0
[ "${1:-}" = "-v" ] && verbose=1
cd "$(dirname "$0")/.."

if ! $CC -dM -E -x c /dev/null 2>/dev/null | grep -q '__GNUC__' ||
    $CC -dM -E -x c /dev/null | grep -q '__clang__'; then
    echo "check-vectorize: skipped, $CC is not gcc"
    exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# -fno-ipa-icf: identical kernels (int32 and uint32 sum are the same code)
# would otherwise be merged and reported under one name only.
if ! $CC -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -O2 -fno-ipa-icf \
    -fdump-tree-vect-optimized="$tmp/vect" \
    -c src/reduce/reduce.c -o "$tmp/reduce.o" 2>"$tmp/err"; then
    cat "$tmp/err" >&2
    echo "check-vectorize: FAILED to compile src/reduce/reduce.c" >&2
    exit 1
fi

# One line per kernel: "name yes|no".
awk '/^;; Function / { if (fn != "") print fn, v; fn = $3; v = "no"; next }
     /loop vectorized/ { v = "yes" }
     END { if (fn != "") print fn, v }' "$tmp/vect" |
    grep -E '^wf_(reduce|avg)_' | sort >"$tmp/kernels"

if [ "$verbose" = 1 ]; then
    cat "$tmp/kernels"
fi

required="wf_reduce_float32_sum wf_reduce_int32_sum wf_reduce_float16_sum
wf_reduce_bfloat16_sum"
status=0
for fn in $required; do
    if ! grep -qx "$fn yes" "$tmp/kernels"; then
        echo "check-vectorize: $fn is not vectorized by $CC" >&2
        status=1
    fi
done

total=$(grep -c '^wf_reduce_' "$tmp/kernels" || true)
simd=$(grep -c '^wf_reduce_.* yes$' "$tmp/kernels" || true)
scalar=$(grep '^wf_reduce_.* no$' "$tmp/kernels" | cut -d' ' -f1 |
    sed 's/^wf_reduce_//' | tr '\n' ' ' | sed 's/ $//')
if [ "$status" = 0 ]; then
    echo "check-vectorize: ok, $simd of $total kernels vectorized" \
        "(scalar: ${scalar:-none})"
fi
exit $status
