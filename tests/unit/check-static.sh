#!/bin/sh
# What sbx places inside a sandbox loads no code from the image (guest-agent/README.md,
# "Runtime"):
#   check-static.sh --binary FILE... --objects ARCHIVE_OR_OBJECT...
# Each binary is static: no ELF interpreter (the image's ld.so would run, and read the image's
# /etc/ld.so.preload) and no needed library. None of the objects linked into them calls what
# makes a static glibc load code or read the image's configuration at run time: NSS (getpw*,
# getgr*, getaddrinfo, ... dlopen the image's libnss_*), iconv and locales (dlopen of gconv
# modules), dlopen itself.
set -eu
fail=0
mode=
deny='getpwnam getpwuid getpwent getpwnam_r getpwuid_r getgrnam getgrgid getgrent getgrnam_r getgrgid_r getgrouplist initgroups getspnam getaddrinfo gethostbyname gethostbyname2 gethostbyname_r gethostbyaddr getnameinfo getservbyname getservbyport getprotobyname getlogin getlogin_r dlopen dlmopen iconv_open setlocale newlocale catopen nl_langinfo'
for a in "$@"; do
        case $a in
        --binary | --objects) mode=$a; continue ;;
        esac
        [ -f "$a" ] || { echo "FAIL: $a: not found"; fail=1; continue; }
        if [ "$mode" = --binary ]; then
                if readelf -lW "$a" | grep -q 'INTERP'; then
                        echo "FAIL: $a has an ELF interpreter: it is not static"; fail=1
                elif readelf -dW "$a" | grep -q '(NEEDED)'; then
                        echo "FAIL: $a needs shared libraries"; fail=1
                else
                        echo "ok: $a is static"
                fi
        else
                undef=$(nm -u "$a" 2>/dev/null | awk '{print $NF}' | sed 's/@.*//' | sort -u)
                for s in $deny; do
                        if printf '%s\n' "$undef" | grep -qx "$s"; then
                                echo "FAIL: $a calls $s (glibc loads code or the image's configuration for it)"
                                fail=1
                        fi
                done
        fi
done
[ "$fail" = 0 ] && echo "ok: no object calls into NSS, iconv, locales or dlopen"
exit "$fail"
