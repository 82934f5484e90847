#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# kernel-jar.sh SOURCE OUT: the Java kernel (SbxKernel.java) compiled into the jar OUT, with
# the javac and jar on PATH. Used by kernels.sh (cached per source and JDK) and by the build
# (meson: the jar an installed template builder ships, so a host without a JDK still gets the
# Java kernel).
set -eu
[ $# -eq 2 ] || { echo "usage: kernel-jar.sh SOURCE OUT" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# its one warning (sun.misc.Signal, on purpose) is noise: javac's output is shown on failure
if ! out=$(javac -d "$tmp/classes" "$1" 2>&1); then
        echo "$out" >&2
        exit 1
fi
jar --create --file "$tmp/out.jar" -C "$tmp/classes" .
mv "$tmp/out.jar" "$2"
