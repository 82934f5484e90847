#!/bin/sh
# The static TLS (every __thread variable) of each binary given, against a bound.
#   check-tls-size.sh MAX_BYTES BINARY...
# glibc puts a process's static TLS at the top of every thread's stack, so a thread started
# with a small stack (sbxd's upgrade threads: 256 KiB, AGENT_UPGRADE_STACK; its connection
# threads: 1 MiB) loses that much of it, and pthread_create fails outright when the TLS is
# larger than the stack. Once 192 KiB of __thread buffers made sbxd's TLS 304 KiB and every
# WebSocket to a sandbox port was closed after its 101. Big buffers belong on the heap or the
# stack of the thread that uses them; this fails the build's tests when one lands in TLS.
# The size is the MemSiz of the TLS program header (readelf -lW); no TLS header is 0 bytes.
set -eu
max=$1
shift
fail=0
for bin in "$@"; do
        [ -f "$bin" ] || { echo "FAIL: $bin: not found"; fail=1; continue; }
        hdr=$(readelf -lW "$bin") || { echo "FAIL: $bin: readelf failed"; fail=1; continue; }
        memsz=$(printf '%s\n' "$hdr" | awk '$1 == "TLS" { print $6 }')
        size=$((${memsz:-0}))
        if [ "$size" -gt "$max" ]; then
                echo "FAIL: $bin: static TLS is $size bytes, more than $max: move big __thread" \
                        "buffers to the heap or the using thread's stack"
                fail=1
        else
                echo "ok: $bin: static TLS $size bytes (at most $max)"
        fi
done
exit "$fail"
