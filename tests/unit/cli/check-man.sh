#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# sbx(1) (docs/man/sbx.1, written by hand) names every command `sbx --help` lists: the first
# word of each alternative of its usage lines.
#   check-man.sh SBX MANPAGE
set -eu
missing=
for w in $("$1" --help | grep -oE '(^  |\| )[a-z][a-z-]*' | sed 's/^[ |]*//' | sort -u); do
        grep -qw -- "$w" "$2" || missing="$missing $w"
done
[ -z "$missing" ] || { echo "$2 does not mention:$missing (sbx --help lists them)" >&2; exit 1; }
