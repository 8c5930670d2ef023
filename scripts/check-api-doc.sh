#!/bin/sh
# Checks that docs/api.md documents every public function of
# include/weft.h, and nothing else: each function declared there needs a
# heading "### `weft_name`" in docs/api.md, and each such heading a
# declaration.  Run by scripts/check.sh (make check).
#
#   scripts/check-api-doc.sh [HEADER [DOC]]
#
# The header is read without the preprocessor: comments, preprocessor
# lines (with their continuations, so the X-macros go too) and
# `extern "C" {` are dropped, the rest is cut into top-level declarations
# at the semicolons outside braces, and a declaration that is not a
# typedef and whose first weft_* name is followed by "(" declares that
# function (function pointers, "(*weft_x)", are not functions).  A
# declaration may span lines.  Exit 1, naming each, on a missing or an
# extra heading; exit 2 when a file is missing or no function is found.
set -eu
LC_ALL=C
export LC_ALL
root=$(cd "$(dirname "$0")/.." && pwd)
header=${1:-$root/include/weft.h}
doc=${2:-$root/docs/api.md}

for f in "$header" "$doc"; do
    if [ ! -r "$f" ]; then
        echo "check: cannot read $f" >&2
        exit 2
    fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The functions weft.h declares, one per line, sorted.
awk '
{ src = src $0 "\n" }
END {
    # Block and line comments (a header has no "/*" inside a string).
    out = ""
    while ((i = index(src, "/*")) > 0) {
        rest = substr(src, i + 2)
        j = index(rest, "*/")
        if (j == 0) { src = substr(src, 1, i - 1); break }
        out = out substr(src, 1, i - 1) " "
        src = substr(rest, j + 2)
    }
    src = out src
    n = split(src, line, "\n")
    text = ""
    cont = 0
    for (k = 1; k <= n; k++) {
        l = line[k]
        sub(/\/\/.*/, "", l)
        if (cont || l ~ /^[ \t]*#/) {   # a preprocessor line, continued?
            cont = (l ~ /\\[ \t]*$/)
            continue
        }
        text = text l " "
    }
    gsub(/extern[ \t]+"C"[ \t]*\{/, " ", text)
    gsub(/[ \t\r]+/, " ", text)
    # Top-level declarations: split at ";" outside braces; a function
    # body closing at depth 0 also ends one.
    depth = 0; stmt = ""
    len = length(text)
    for (k = 1; k <= len; k++) {
        c = substr(text, k, 1)
        if (c == "{") depth++
        if (c == "}") {
            if (depth > 0) depth--
            stmt = stmt c
            if (depth == 0 && stmt ~ /\)[ ]*\{/ && stmt !~ /^[ ]*typedef/ &&
                stmt !~ /(enum|struct|union)[ ]*[A-Za-z0-9_]*[ ]*\{/) {
                decl(stmt); stmt = ""
            }
            continue
        }
        if (c == ";" && depth == 0) { decl(stmt); stmt = ""; continue }
        stmt = stmt c
    }
}
function decl(s,    m, name, before) {
    if (s ~ /^[ ]*typedef[ ]/) return
    if (!match(s, /weft_[A-Za-z0-9_]+[ ]*\(/)) return
    name = substr(s, RSTART, RLENGTH)
    sub(/[ ]*\($/, "", name)
    before = substr(s, 1, RSTART - 1)
    if (before ~ /\([ ]*\*[ ]*$/) return  # (*weft_fn)(...): a pointer
    print name
}
' "$header" | sort > "$tmp/declared"

# The headings of docs/api.md: "### `weft_name`" exactly.
sed -n 's/^### `\(weft_[A-Za-z0-9_]*\)`[[:space:]]*$/\1/p' "$doc" | sort > "$tmp/documented"

n=$(wc -l < "$tmp/declared" | tr -d ' ')
if [ "$n" -eq 0 ]; then
    echo "check: found no function declarations in $header" >&2
    exit 2
fi

fail=0
for f in $(comm -23 "$tmp/declared" "$tmp/documented"); do
    echo "check: docs/api.md has no heading '### \`$f\`' for $f, which $(basename "$header") declares"
    fail=1
done
for f in $(comm -13 "$tmp/declared" "$tmp/documented" | uniq); do
    echo "check: docs/api.md has a heading for $f, which $(basename "$header") does not declare"
    fail=1
done
for f in $(uniq -d "$tmp/documented"); do
    echo "check: docs/api.md has more than one heading for $f"
    fail=1
done
if [ "$fail" -ne 0 ]; then
    exit 1
fi
echo "check: docs/api.md covers $n functions"
