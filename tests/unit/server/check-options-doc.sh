#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# server/README.md's option tables are what sbxd's option table makes of them
# (sbxd-options-doc markdown), between the README's "options: begin" and "options: end" lines.
#   check-options-doc.sh SBXD-OPTIONS-DOC README          fails, with the diff, when they differ
#   check-options-doc.sh SBXD-OPTIONS-DOC README --fix    rewrites the README's block
set -eu
doc=$1 readme=$2
begin='<!-- options: begin'
end='<!-- options: end'
grep -q "^$begin" "$readme" && grep -q "^$end" "$readme" || {
        echo "$readme has no '$begin' / '$end' lines" >&2
        exit 1
}
want=$(mktemp) got=$(mktemp)
trap 'rm -f "$want" "$got"' EXIT
"$doc" markdown >"$want"
sed -n "/^$begin/,/^$end/p" "$readme" | sed '1d;$d' >"$got"
if [ "${3:-}" = --fix ]; then
        awk -v b="$begin" -v e="$end" -v f="$want" '
                index($0, b) == 1 { print; while ((getline l < f) > 0) print l; skip = 1; next }
                index($0, e) == 1 { skip = 0 }
                !skip' "$readme" >"$readme.new"
        mv "$readme.new" "$readme"
        exit 0
fi
if ! cmp -s "$want" "$got"; then
        echo "$readme: the option tables differ from sbxd's option table (server/core/options-table.c);" >&2
        echo "rewrite them with: $0 $doc $readme --fix" >&2
        diff -u "$got" "$want" >&2 || true
        exit 1
fi
