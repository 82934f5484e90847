#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The version of this tree, as sbxd --version, GET /health and the Debian package say it:
#   a tag vX.Y.Z on HEAD                 X.Y.Z
#   N commits after tag vX.Y.Z           X.Y.Z+N.gHASH
#   no tag                               BASE+gitN.gHASH   (N: commits in HEAD's history)
#   not a git checkout                   BASE
# with ".dirty" appended when tracked files differ from HEAD. Each form sorts after the one
# before it in dpkg's order, so a later commit is an upgrade. BASE: $1 (meson's
# project version).
set -eu
base=${1:-0.0.0}
cd "$(dirname "$0")/.."
if ! git rev-parse --git-dir >/dev/null 2>&1; then
        echo "$base"
        exit 0
fi
dirty=
git diff --quiet HEAD -- 2>/dev/null || dirty=.dirty
if d=$(git describe --tags --match 'v[0-9]*' --long 2>/dev/null); then
        tag=${d%-*-g*}
        rest=${d#"$tag"-}
        n=${rest%%-*}
        hash=${rest#*-}
        if [ "$n" = 0 ]; then
                v=${tag#v}
        else
                v=${tag#v}+$n.$hash
        fi
else
        v=$base+git$(git rev-list --count HEAD).g$(git rev-parse --short=7 HEAD)
fi
echo "$v$dirty"
