#!/bin/sh
# Static checks run by `make check`:
#  - libweft.so exports only weft_* symbols (the export map works);
#  - getenv appears only in the config module and launch_env.c;
#  - docs/env.md matches params.def;
#  - the host reduction loops vectorize;
#  - docs/api.md has a section for every function of include/weft.h;
#  - every test's name starts with its area's prefix, the name of its
#    folder of test/ (weft-test --check-names; make test builds the runner
#    before it runs make check).
set -eu
build=${1:-build}
fail=0

bad=$(nm -D --defined-only "$build/lib/libweft.so" | awk '$2 ~ /[TDBRW]/ {print $3}' | grep -v '^weft_' || true)
if [ -n "$bad" ]; then
    echo "check: libweft.so exports non-weft symbols:"; echo "$bad"; fail=1
else
    echo "check: exports ok ($(nm -D --defined-only "$build/lib/libweft.so" | grep -c ' T weft_') weft_* functions)"
fi

ge=$(grep -rln --include='*.c' -E '\bgetenv[[:space:]]*\(' src transport cuda | grep -v -E 'src/config\.c|src/rdv/launch_env\.c|src/tools/' || true)
if [ -n "$ge" ]; then
    echo "check: getenv outside src/config.c: $ge"; fail=1
else
    echo "check: getenv only in config.c"
fi

tmp=$(mktemp)
"$build/bin/weft-info" --env-markdown > "$tmp"
if ! cmp -s "$tmp" docs/env.md; then
    echo "check: docs/env.md is stale; run 'make docs'"; diff -u docs/env.md "$tmp" | head -20 || true; fail=1
else
    echo "check: docs/env.md up to date"
fi
rm -f "$tmp"

if [ -x scripts/check-vectorize.sh ]; then
    scripts/check-vectorize.sh || fail=1
fi

if [ -x scripts/check-api-doc.sh ]; then
    scripts/check-api-doc.sh || fail=1
fi

# Test names: the runner knows every registered test and its file.  A
# plain `make check` before any `make test` has no runner to ask.
if [ -x "$build/test/weft-test" ]; then
    "$build/test/weft-test" --check-names || fail=1
else
    echo "check: test names not checked: no $build/test/weft-test (make test builds it first)"
fi
exit $fail
