#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Build the test images users bring, from Debian packages, as OCI image layouts:
#
#   build.sh OUT      OUT/busybox   one static busybox binary with its applets as hard links in
#                                   /bin, /etc/passwd with root and nobody: no libc at all (as
#                                   the registry's busybox image); gzip layer
#                     OUT/musl      an image shaped like Alpine: musl's loader at
#                                   /lib/ld-musl-x86_64.so.1, applets as symlinks, and programs
#                                   linked against musl (/usr/bin/musl-hello); zstd layer
#                     OUT/minbase   Debian minbase with python3 (mmdebstrap --variant=minbase),
#                                   LANG and PATH in Env, Cmd ["python3"]; gzip layer
#                     OUT/minbase-app  minbase plus a second layer (/app/hello.py), Cmd naming it
#
# None of them holds anything of sbx's. The minbase tree is cached as a tarball in
# $SBX_CACHE_DIR/test-images (default /var/cache/sbx) under a fingerprint of this script and the
# host's Debian sources; the others are rebuilt each time (about a second). Exit 3 when no
# Debian mirror answers (the minbase image cannot be made).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
out=$1
cache=${SBX_CACHE_DIR:-/var/cache/sbx}/test-images
mkoci() { /usr/bin/python3 "$here/mkoci.py" "$@"; }
say() { echo "test-images: $*" >&2; }
mkdir -p "$out"
work=$(mktemp -d "$out/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

# /etc files as a small image carries them.
etc_files() { # ROOT
        local r=$1
        mkdir -p "$r/etc" "$r/root" "$r/tmp" "$r/home" "$r/dev" "$r/proc" "$r/sys" "$r/var/tmp"
        chmod 0700 "$r/root"
        chmod 1777 "$r/tmp" "$r/var/tmp"
        printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'daemon:x:1:1:daemon:/usr/sbin:/bin/false' \
                'nobody:x:65534:65534:nobody:/home:/bin/false' >"$r/etc/passwd"
        printf '%s\n' 'root:x:0:' 'daemon:x:1:' 'wheel:x:10:root' 'nogroup:x:65534:' >"$r/etc/group"
        printf '%s\n' 'root:*:19000:0:99999:7:::' >"$r/etc/shadow"
        chmod 0640 "$r/etc/shadow"
}

# ---- busybox: no libc at all ----
bb=$work/busybox
mkdir -p "$bb/bin" "$bb/usr/sbin" "$bb/var/spool/mail"
cp /bin/busybox "$bb/bin/busybox"
chmod 0755 "$bb/bin/busybox"
for a in $(/bin/busybox --list); do
        [ "$a" = busybox ] || ln "$bb/bin/busybox" "$bb/bin/$a"
done
etc_files "$bb"
rm -rf "$out/busybox"
mkoci "$out/busybox" --layer "$bb" --cmd '["sh"]'

# ---- musl: a dynamic musl loader and programs linked against it ----
ms=$work/musl
mkdir -p "$ms/bin" "$ms/lib" "$ms/usr/bin" "$ms/sbin" "$ms/etc/apk"
cp "$(readlink -f /lib/ld-musl-x86_64.so.1)" "$ms/lib/ld-musl-x86_64.so.1"
ln -s ld-musl-x86_64.so.1 "$ms/lib/libc.musl-x86_64.so.1"
cp /bin/busybox "$ms/bin/busybox"
for a in $(/bin/busybox --list); do
        [ "$a" = busybox ] || ln -s /bin/busybox "$ms/bin/$a"
done
cat >"$work/musl-hello.c" <<'EOF'
/* Says which C library loaded it: the image's own musl. */
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
        char line[512];
        const char *libc = "unknown";
        FILE *f = fopen("/proc/self/maps", "r");
        while (f && fgets(line, sizeof(line), f))
                if (strstr(line, "ld-musl-x86_64.so.1")) {
                        libc = "musl";
                        break;
                }
        if (f)
                fclose(f);
        printf("hello from %s%s%s\n", libc, argc > 1 ? " " : "", argc > 1 ? argv[1] : "");
        return 0;
}
EOF
musl-gcc -O2 -o "$ms/usr/bin/musl-hello" "$work/musl-hello.c"
readelf -l "$ms/usr/bin/musl-hello" | grep -q 'interpreter: /lib/ld-musl-x86_64.so.1' ||
        { say "musl-hello is not linked against musl's loader"; exit 1; }
etc_files "$ms"
printf 'NAME="musl test image"\nID=musl-test\nPRETTY_NAME="musl test image"\n' >"$ms/etc/os-release"
rm -rf "$out/musl"
mkoci "$out/musl" --layer "$ms" --compress zstd --cmd '["/bin/sh"]'

# ---- minbase: Debian minbase with python3, cached ----
sources=$(/usr/bin/python3 "$top/templates/debian/sources.py") || exit 3
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
fp=$( { cat "$0"; echo "$sources $codename $(dpkg --print-architecture)"; } | sha256sum | cut -c1-16)
tarball=$cache/minbase-python3-$fp.tar
if [ ! -s "$tarball" ]; then
        mkdir -p "$cache"
        exec 9>"$cache/.lock"
        flock 9
        if [ ! -s "$tarball" ]; then
                while read -r uri suite; do
                        case $uri in http://* | https://*)
                                curl -fsS -o /dev/null --max-time 15 "$uri/dists/$suite/InRelease" ||
                                        { say "the Debian mirror $uri is unreachable"; exit 3; } ;;
                        esac
                done < <(/usr/bin/python3 "$top/templates/debian/sources.py" --uris)
                say "building Debian minbase with python3 (once per machine)"
                echo "$sources" >"$work/sources.list"
                mmdebstrap --variant=minbase --mode=root --format=tar --include=python3 \
                        --dpkgopt='path-exclude=/usr/share/doc/*' \
                        --dpkgopt='path-exclude=/usr/share/man/*' \
                        "$codename" "$work/minbase.tar" "$work/sources.list" >&2
                mv "$work/minbase.tar" "$tarball"
                for old in "$cache"/minbase-python3-*.tar; do
                        [ "$old" = "$tarball" ] || rm -f "$old"
                done
        fi
        exec 9>&-
fi
rm -rf "$out/minbase" "$out/minbase-app"
mkoci "$out/minbase" --layer "$tarball" \
        --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8 \
        --cmd '["python3"]'
app=$work/app
mkdir -p "$app/app"
printf 'import sys\nprint("app on python", sys.version_info[0])\n' >"$app/app/hello.py"
mkoci "$out/minbase-app" --layer "$tarball" --layer "$app" \
        --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8 \
        --workdir /app --cmd '["python3", "/app/hello.py"]'
