#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""templates/debian/strip-privs.py ROOT: make a cached Debian layer inert on the host.

Set-id bits and file capabilities (security.capability) are removed: inside a sandbox
no_new_privs makes them inert anyway, and the cache lives outside the state dir's nosuid
mount. overlayfs's own bookkeeping xattrs of a former upper (trusted.overlay.origin, impure,
nlink, uuid) are removed too; opaque marks and redirects stay, they are what the layer means.
Never follows symlinks, never leaves ROOT's file system.
"""
import os
import stat
import sys

DROP = ("security.capability", "trusted.overlay.origin", "trusted.overlay.impure",
        "trusted.overlay.nlink", "trusted.overlay.uuid")


def main(root):
    dev = os.lstat(root).st_dev
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if os.lstat(os.path.join(d, x)).st_dev == dev]
        for n in [d] + [os.path.join(d, f) for f in files]:
            st = os.lstat(n)
            if stat.S_ISLNK(st.st_mode):
                continue
            if stat.S_ISREG(st.st_mode) and st.st_mode & 0o6000:
                os.chmod(n, stat.S_IMODE(st.st_mode) & ~0o6000)
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                continue
            try:
                names = os.listxattr(n, follow_symlinks=False)
            except OSError:
                continue
            for x in names:
                if x in DROP:
                    os.removexattr(n, x, follow_symlinks=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
