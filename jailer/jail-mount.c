/* SPDX-License-Identifier: Apache-2.0 */
#include "jail-mount.h"

#include "jail-ca.h"
#include "jail-error.h"
#include "log.h"
#include "loop-util.h"
#include "macros.h"
#include "missing-syscalls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <linux/securebits.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RESOLVE_SANDBOX (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
#define DEV_SHM_MAX     ((uint64_t)64 * 1024 * 1024)

/* openat2 below root_fd, the root of the sandbox: ".." and absolute symlinks stay inside. */
static int open_in_root(int root_fd, const char *path, int flags)
{
        /* openat2 refuses O_PATH with anything but O_DIRECTORY/O_NOFOLLOW/O_CLOEXEC. */
        if (!(flags & O_PATH))
                flags |= O_NOCTTY;
        struct open_how how = {
            .flags = (uint64_t)(flags | O_CLOEXEC),
            .resolve = RESOLVE_SANDBOX,
        };
        while (*path == '/')
                path++;
        int fd = openat2(root_fd, *path ? path : ".", &how, sizeof(how));
        return fd < 0 ? -errno : fd;
}

static int mkdir_in_root(int root_fd, const char *path, mode_t mode, uid_t uid);

/* Opens (as a real directory fd, usable with *at() creation calls) the parent of `path` inside
 * the root, creating it and missing ancestors with mode, owned by uid. *ret_name points into
 * path at the last component. */
static int open_parent_in_root(int root_fd, const char *path, mode_t mode, uid_t uid,
                               const char **ret_name)
{
        _cleanup_free_ char *parent = strdup(path);
        if (!parent)
                return -ENOMEM;
        char *slash = strrchr(parent, '/');
        if (!slash || !slash[1])
                return -EINVAL;
        *ret_name = path + (slash - parent) + 1;
        *slash = 0;
        _cleanup_close_ int pfd = mkdir_in_root(root_fd, *parent ? parent : "/", mode, uid);
        if (pfd < 0)
                return pfd;
        /* O_PATH fds cannot be used with mkdirat/openat creation: reopen as a real dir. */
        int dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return dfd < 0 ? -errno : dfd;
}

/* Opens dir `path` (O_PATH) inside the root, creating it and missing parents (mode, owned by
 * uid:gid when uid != (uid_t)-1). */
static int mkdir_in_root(int root_fd, const char *path, mode_t mode, uid_t uid)
{
        int fd = open_in_root(root_fd, path, O_PATH | O_DIRECTORY);
        if (fd != -ENOENT)
                return fd;
        const char *name;
        _cleanup_close_ int dfd = open_parent_in_root(root_fd, path, mode, uid, &name);
        if (dfd < 0)
                return dfd;
        if (mkdirat(dfd, name, mode) < 0 && errno != EEXIST)
                return -errno;
        struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW,
                               .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
        fd = openat2(dfd, name, &how, sizeof(how));
        if (fd < 0)
                return -errno;
        if (uid != (uid_t)-1 && fchownat(fd, "", uid, uid, AT_EMPTY_PATH) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/* Opens (O_PATH) a regular file inside the root to mount on, creating it empty if needed. */
static int mkfile_in_root(int root_fd, const char *path, mode_t mode, uid_t uid)
{
        int fd = open_in_root(root_fd, path, O_PATH);
        if (fd != -ENOENT)
                return fd;
        const char *name;
        _cleanup_close_ int dfd = open_parent_in_root(root_fd, path, 0755, uid, &name);
        if (dfd < 0)
                return dfd;
        _cleanup_close_ int wfd =
            openat(dfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
        if (wfd < 0)
                return -errno;
        if (uid != (uid_t)-1 && fchown(wfd, uid, uid) < 0)
                return -errno;
        fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Clones the mount tree at src_dirfd/src (recursively when `recursive`), applies attrs (and an
 * idmap when userns_fd >= 0) while it is still detached, then attaches it on target_fd. Setting
 * the flags before attaching means there is no window with a writable or suid mount. */
static int bind_at(int src_dirfd, const char *src, int target_fd, uint64_t attrs, int userns_fd,
                   int recursive)
{
        unsigned rec = recursive ? AT_RECURSIVE : 0;
        _cleanup_close_ int tree = open_tree(
            src_dirfd, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | rec | (*src ? 0 : AT_EMPTY_PATH));
        if (tree < 0)
                return -errno;
        struct mount_attr attr = {.attr_set = attrs, .propagation = MS_PRIVATE};
        if (userns_fd >= 0) {
                attr.attr_set |= MOUNT_ATTR_IDMAP;
                attr.userns_fd = (uint64_t)userns_fd;
        }
        if (mount_setattr(tree, "", AT_EMPTY_PATH | rec, &attr, sizeof(attr)) < 0)
                return -errno;
        if (move_mount(tree, "", target_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) <
            0)
                return -errno;
        return 0;
}

/* A new filesystem instance with "key=value" (or bare flag) options, mounted on target_fd. */
static int fs_at(const char *fstype, const char *const *opts, int target_fd, uint64_t attrs)
{
        _cleanup_close_ int fs = fsopen(fstype, FSOPEN_CLOEXEC);
        if (fs < 0)
                return -errno;
        for (; opts && *opts; opts++) {
                char key[64];
                const char *eq = strchr(*opts, '=');
                int r;
                if (!eq) {
                        r = fsconfig(fs, FSCONFIG_SET_FLAG, *opts, NULL, 0);
                } else {
                        snprintf(key, sizeof(key), "%.*s", (int)(eq - *opts), *opts);
                        r = fsconfig(fs, FSCONFIG_SET_STRING, key, eq + 1, 0);
                }
                if (r < 0)
                        return -errno;
        }
        if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                return -errno;
        _cleanup_close_ int mnt = fsmount(fs, FSMOUNT_CLOEXEC, (unsigned)attrs);
        if (mnt < 0)
                return -errno;
        if (move_mount(mnt, "", target_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) <
            0)
                return -errno;
        return 0;
}

int jail_mount_private_ns(void)
{
        if (unshare(CLONE_NEWNS) < 0)
                return -errno;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return -errno;
        return 0;
}

static int idmap_unsupported(int r)
{
        return r == -EINVAL || r == -EPERM || r == -EOPNOTSUPP || r == -ENOSYS;
}

/* Read-only layer i of spec, idmapped when *userns_fd >= 0, at stage/lower/<i>. Falls back to
 * a plain bind (and sets *userns_fd = -1 for the rest) when the kernel or filesystem cannot
 * idmap: files owned by host root then appear as nobody inside. */
static int mount_lower(int stage_fd, const char *layer, size_t i, int *userns_fd)
{
        char name[32];
        snprintf(name, sizeof(name), "lower/%zu", i);
        /* a pool upper's mount points exist already (mount_upper_subvol) */
        if (mkdirat(stage_fd, name, 0700) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_close_ int tfd = openat(stage_fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (tfd < 0)
                return -errno;
        const uint64_t attrs = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        int r = bind_at(AT_FDCWD, layer, tfd, attrs, *userns_fd, 0);
        if (r < 0 && *userns_fd >= 0 && idmap_unsupported(r)) {
                log_warning_errno(r, "idmapped mount of layer %s failed, using a plain bind: %m",
                                  layer);
                *userns_fd = -1;
                r = bind_at(AT_FDCWD, layer, tfd, attrs, -1, 0);
        }
        return r < 0 ? jail_errorf(r, "layer %s: %m", layer) : 0;
}

/* The staging tmpfs at rootfs (the sandbox's disk: disk_bytes, with an inode cap of one per
 * 4 KiB), the idmapped lowers, and the overlay stacked over it on rootfs itself. */
static int mount_upper_tmpfs(const struct sbx_jail_spec *s)
{
        char opts[256];
        uint64_t inodes = MAX(s->disk_bytes / 4096, 1024);
        snprintf(opts, sizeof(opts), "size=%" PRIu64 ",nr_inodes=%" PRIu64 ",mode=0700",
                 s->disk_bytes, inodes);
        if (mount("sbx-upper", s->rootfs, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return -errno;
        return 0;
}

/* The ext4 image at spec->disk_image, attached to a free loop device (autoclear: the device
 * goes with the last unmount; direct I/O: the image's blocks are not cached twice), mounted
 * at rootfs nosuid,nodev,noatime, noinit_itable (the image's unused inode tables are holes,
 * which read as the zeros ext4's lazy-init thread would write: it would only un-sparse the
 * image, 32 MiB per GiB of disk). A full disk is then ENOSPC, and the page cache over it is
 * reclaimable, where a tmpfs upper is memory charged to the sandbox (its OOM killer, not
 * ENOSPC, when it fills). The image's root dir becomes 0700 like the tmpfs's. */
static int mount_upper_image(const struct sbx_jail_spec *s)
{
        _cleanup_close_ int img = open(s->disk_image, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        _cleanup_close_ int lfd = -EBADF;
        char dev[32];
        if (img < 0)
                return -errno;
        /* Jailers (and sbxd's volume mounts) take turns on loop-control: 200 concurrent creates
         * once lost all their attempts to LOOP_CTL_GET_FREE handing out one device twice. */
        int r = loop_attach(img, dev, sizeof(dev), &lfd);
        if (r < 0)
                return r;
        /* Mounted, the fs holds the device; closing lfd leaves autoclear to the unmount. Not
         * mounted, closing lfd detaches it. */
        if (mount(dev, s->rootfs, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME,
                  "errors=remount-ro,noinit_itable") < 0)
                return -errno;
        _cleanup_close_ int root = open(s->rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0 || fchmod(root, 0700) < 0 ||
            (unlinkat(root, "lost+found", AT_REMOVEDIR) < 0 && errno != ENOENT)) {
                r = -errno;
                umount2(s->rootfs, MNT_DETACH);
                return r;
        }
        return 0;
}

int jail_mount_upper_host(const struct sbx_jail_spec *s)
{
        if (!s->upper_on_host)
                return 0;
        int r = s->disk_image ? mount_upper_image(s) : mount_upper_tmpfs(s);
        if (r < 0)
                return r;
        /* Never propagate it to the host's peers, nor receive anything under it. */
        if (mount(NULL, s->rootfs, NULL, MS_PRIVATE, NULL) < 0) {
                r = -errno;
                umount2(s->rootfs, MNT_DETACH);
                return r;
        }
        return 0;
}

/* The storage pool's subvolume at spec->upper_subvol, bound on rootfs idmapped through the
 * sandbox's user namespace (files stored with the ids the sandbox sees, as volumes are), after
 * its lower/<i> mount points are made on the raw subvolume (through the idmap, host root maps
 * to nothing and could not create them). No loop device, no file system of its own: its size
 * is the subvolume's qgroup limit, and a write past it is EDQUOT from write() itself. */
static int mount_upper_subvol(const struct sbx_jail_spec *s, int userns_fd)
{
        if (userns_fd < 0)
                return jail_errorf(-EOPNOTSUPP, "a pool upper needs idmapped mounts");
        _cleanup_close_ int sub =
            open(s->upper_subvol, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (sub < 0)
                return jail_errorf(-errno, "upper %s: %m", s->upper_subvol);
        _cleanup_close_ int lower = openat(sub, "lower", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (lower < 0)
                return jail_errorf(-errno, "upper %s/lower: %m", s->upper_subvol);
        for (size_t i = 0; i < s->n_layers; i++) {
                char name[32];
                snprintf(name, sizeof(name), "%zu", i);
                if (mkdirat(lower, name, 0700) < 0 && errno != EEXIST)
                        return jail_errorf(-errno, "upper %s/lower/%s: %m", s->upper_subvol, name);
        }
        _cleanup_close_ int tfd = open(s->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (tfd < 0)
                return -errno;
        int r = bind_at(sub, "", tfd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, userns_fd, 0);
        return r < 0 ? jail_errorf(r, "upper %s on %s: %m", s->upper_subvol, s->rootfs) : 0;
}

int jail_fs_become(uid_t uid_base)
{
        int bits = prctl(PR_GET_SECUREBITS);
        if (bits < 0 || prctl(PR_SET_SECUREBITS, bits | SECBIT_NO_SETUID_FIXUP) < 0)
                return -errno;
        (void)setfsgid(uid_base);
        (void)setfsuid(uid_base);
        return bits;
}

int jail_fs_restore(int bits)
{
        (void)setfsuid(0);
        (void)setfsgid(0);
        return prctl(PR_SET_SECUREBITS, bits) < 0 ? -errno : 0;
}

static int mount_overlay(const struct sbx_jail_spec *s, int *userns_fd)
{
        int r;
        if (s->upper_subvol)
                r = mount_upper_subvol(s, *userns_fd);
        else
                r = s->upper_on_host ? 0 : mount_upper_tmpfs(s);
        if (r < 0)
                return r;
        _cleanup_close_ int stage = open(s->rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (stage < 0)
                return -errno;
        if (!s->upper_subvol &&
            (mkdirat(stage, "upper", 0755) < 0 || fchmodat(stage, "upper", 0755, 0) < 0 ||
             fchownat(stage, "upper", s->uid_base, s->uid_base, 0) < 0 ||
             mkdirat(stage, "work", 0700) < 0 || mkdirat(stage, "lower", 0700) < 0))
                return -errno;
        for (size_t i = 0; i < s->n_layers; i++) {
                /* a pool upper has no fallback: its lowers must be idmapped like it */
                int keep = *userns_fd;
                r = mount_lower(stage, s->layers[i], i, userns_fd);
                if (r >= 0 && s->upper_subvol && keep >= 0 && *userns_fd < 0)
                        r = jail_errorf(-EOPNOTSUPP, "layer %s: cannot idmap", s->layers[i]);
                if (r < 0)
                        return r;
        }
        /* lowerdir lists the top layer first; the spec lists the bottom first. Relative paths
         * (resolved against the staging dir, our cwd) keep the options far below a page. */
        _cleanup_free_ char *data = NULL;
        size_t cap = 64 + s->n_layers * 16, o = 0;
        if (!(data = malloc(cap)))
                return -ENOMEM;
        o += (size_t)snprintf(data + o, cap - o, "lowerdir=");
        for (size_t i = s->n_layers; i-- > 0;)
                o += (size_t)snprintf(data + o, cap - o, "lower/%zu%s", i, i ? ":" : "");
        snprintf(data + o, cap - o, ",upperdir=upper,workdir=work");
        if (fchdir(stage) < 0)
                return -errno;
        r = mount("overlay", s->rootfs, "overlay", MS_NOSUID | MS_NODEV, data) < 0 ? -errno : 0;
        if (chdir("/") < 0 && r == 0)
                r = -errno;
        return r;
}

static int mount_binds(const struct sbx_jail_spec *s, int root_fd, int userns_fd)
{
        for (size_t i = 0; i < s->n_binds; i++) {
                const struct sbx_jail_bind *b = &s->binds[i];
                struct stat st;
                if (stat(b->source, &st) < 0)
                        return jail_errorf(-errno, "bind source %s: %m", b->source);
                _cleanup_close_ int tfd =
                    S_ISDIR(st.st_mode) ? mkdir_in_root(root_fd, b->target, 0755, s->uid_base)
                                        : mkfile_in_root(root_fd, b->target, 0644, s->uid_base);
                if (tfd < 0)
                        return jail_errorf(tfd, "bind target %s: %m", b->target);
                /* Only read-only binds are idmapped, through a namespace that maps host root
                 * alone (userns_fd: jail_mount_root): through a writable idmapped bind, sandbox
                 * root would create files owned by host root on the host. */
                uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
                int ufd = -1, r;
                if (b->readonly) {
                        attrs |= MOUNT_ATTR_RDONLY;
                        ufd = userns_fd;
                }
                r = bind_at(AT_FDCWD, b->source, tfd, attrs, ufd, 1);
                if (r < 0 && ufd >= 0 && idmap_unsupported(r))
                        r = bind_at(AT_FDCWD, b->source, tfd, attrs, -1, 1);
                if (r < 0)
                        return jail_errorf(r, "bind %s on %s: %m", b->source, b->target);
        }
        return 0;
}

/* Volumes: the host mount of each volume's file system (sbxd's, nosuid,nodev), cloned and
 * idmapped through the sandbox's user namespace before it is attached, writable. On-disk owner
 * N is host uid base+N, that is sandbox uid N, in every sandbox whatever its slot, so two
 * sandboxes sharing a volume see the same owners. Unlike a writable bind of a host directory,
 * nothing on a volume is ever used by the host (sbxd's own mount lives under the 0700 state
 * dir, nosuid,nodev), so files sandbox root makes owned by on-disk 0 are harmless. Without an
 * idmap (an old kernel) every file would be nobody's and unwritable: the start fails instead. */
static int mount_volumes(const struct sbx_jail_spec *s, int root_fd, int userns_fd)
{
        for (size_t i = 0; i < s->n_volumes; i++) {
                const struct sbx_jail_volume *v = &s->volumes[i];
                if (userns_fd < 0)
                        return jail_errorf(-EOPNOTSUPP,
                                           "volume on %s: this kernel cannot idmap mounts",
                                           v->target);
                _cleanup_close_ int tfd = mkdir_in_root(root_fd, v->target, 0755, s->uid_base);
                if (tfd < 0)
                        return jail_errorf(tfd, "volume target %s: %m", v->target);
                int r = bind_at(AT_FDCWD, v->source, tfd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                                userns_fd, 0);
                if (r < 0)
                        return jail_errorf(r, "volume %s on %s: %m", v->source, v->target);
        }
        return 0;
}

/* CVE-2019-5736: the agent is a read-only, nosuid bind of the host binary, so neither
 * /proc/1/exe nor /proc/self/fd of it can be opened for writing (EROFS). Its mountpoint is a
 * file created in the tmpfs upper, never in a layer. */
static int mount_agent(const struct sbx_jail_spec *s, int root_fd)
{
        _cleanup_close_ int dfd = mkdir_in_root(root_fd, "/.sbx", 0755, s->uid_base);
        if (dfd < 0)
                return dfd;
        _cleanup_close_ int tfd = mkfile_in_root(root_fd, JAIL_AGENT_PATH, 0755, s->uid_base);
        if (tfd < 0)
                return tfd;
        return bind_at(AT_FDCWD, s->agent, tfd,
                       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, -1, 0);
}

/* What sbx places in every sandbox besides the agent (sudo, the code interpreter's kernels):
 * a read-only, nosuid, nodev bind of the host dir spec->runtime, idmapped like a read-only
 * bind (host root's files show as sandbox root's, every other host id's as nobody's). Like the
 * agent, nothing under it can be changed from inside (EROFS), whatever a snapshot's upper
 * holds at the mountpoint: the bind covers it. */
static int mount_runtime(const struct sbx_jail_spec *s, int root_fd, int userns_fd)
{
        _cleanup_close_ int pfd = mkdir_in_root(root_fd, "/.sbx", 0755, s->uid_base);
        if (pfd < 0)
                return pfd;
        _cleanup_close_ int tfd = mkdir_in_root(root_fd, JAIL_RUNTIME_PATH, 0755, s->uid_base);
        if (tfd < 0)
                return tfd;
        uint64_t attrs = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        int r = bind_at(AT_FDCWD, s->runtime, tfd, attrs, userns_fd, 0);
        if (r < 0 && userns_fd >= 0 && idmap_unsupported(r))
                r = bind_at(AT_FDCWD, s->runtime, tfd, attrs, -1, 0);
        return r;
}

/* Device nodes bound from the host's devtmpfs, as bubblewrap's --dev does. The userns cannot
 * mknod (and a tmpfs it mounted would be SB_I_NODEV anyway). */
static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
static const struct {
        const char *name, *target;
} dev_links[] = {
    {"fd", "/proc/self/fd"},       {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"},
    {"stderr", "/proc/self/fd/2"}, {"ptmx", "pts/ptmx"},
};

static int populate_dev(const struct sbx_jail_spec *s, int dev)
{
        for (size_t i = 0; i < ELEMENTSOF(dev_nodes); i++) {
                _cleanup_close_ int wfd =
                    openat(dev, dev_nodes[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
                if (wfd < 0)
                        return -errno;
                _cleanup_close_ int tfd =
                    openat(dev, dev_nodes[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (tfd < 0)
                        return -errno;
                char src[32];
                snprintf(src, sizeof(src), "/dev/%s", dev_nodes[i]);
                /* Not nodev: these mounts exist to reach the devices. */
                int r = bind_at(AT_FDCWD, src, tfd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, -1, 0);
                if (r < 0)
                        return jail_errorf(r, "bind %s: %m", src);
        }
        for (size_t i = 0; i < ELEMENTSOF(dev_links); i++)
                if (symlinkat(dev_links[i].target, dev, dev_links[i].name) < 0)
                        return -errno;
        if (mkdirat(dev, "pts", 0755) < 0 || mkdirat(dev, "shm", 01777) < 0 ||
            fchmodat(dev, "shm", 01777, 0) < 0 ||
            fchownat(dev, "pts", s->uid_base, s->uid_base, 0) < 0)
                return -errno;
        _cleanup_close_ int shm = openat(dev, "shm", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (shm < 0)
                return -errno;
        char size[64], uid[32];
        snprintf(size, sizeof(size), "size=%" PRIu64, MIN(DEV_SHM_MAX, s->disk_bytes));
        snprintf(uid, sizeof(uid), "%" PRIu32, s->uid_base);
        char uidopt[48], gidopt[48];
        snprintf(uidopt, sizeof(uidopt), "uid=%s", uid);
        snprintf(gidopt, sizeof(gidopt), "gid=%s", uid);
        const char *const opts[] = {size, "mode=1777", uidopt, gidopt, NULL};
        int r = fs_at("tmpfs", opts, shm, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
        return r < 0 ? jail_errorf(r, "mount /dev/shm: %m") : 0;
}

/* /dev: a small tmpfs owned by sandbox root, nosuid,nodev,noexec. */
static int mount_dev(const struct sbx_jail_spec *s, int root_fd)
{
        _cleanup_close_ int tfd = mkdir_in_root(root_fd, "/dev", 0755, s->uid_base);
        if (tfd < 0)
                return tfd;
        char uidopt[48], gidopt[48];
        snprintf(uidopt, sizeof(uidopt), "uid=%" PRIu32, s->uid_base);
        snprintf(gidopt, sizeof(gidopt), "gid=%" PRIu32, s->uid_base);
        const char *const opts[] = {"size=64k", "nr_inodes=64", "mode=0755", uidopt, gidopt, NULL};
        int r = fs_at("tmpfs", opts, tfd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
        if (r < 0)
                return jail_errorf(r, "mount /dev tmpfs: %m");
        /* Reopen: the path now resolves to the new tmpfs. */
        _cleanup_close_ int dev = open_in_root(root_fd, "/dev", O_RDONLY | O_DIRECTORY);
        if (dev < 0)
                return dev;
        return populate_dev(s, dev);
}

/* A fresh v4 UUID at JAIL_BOOT_ID_PATH (any old file there, e.g. from a snapshot, replaced). */
static int write_boot_id(const struct sbx_jail_spec *s, int root_fd)
{
        uint8_t b[16];
        char text[40];
        if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
                return -EIO;
        b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
        b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
        int n = 0;
        for (int i = 0; i < 16; i++)
                n += snprintf(text + n, sizeof(text) - (size_t)n, "%s%02x",
                              i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", b[i]);
        text[n++] = '\n';
        _cleanup_close_ int pfd = mkdir_in_root(root_fd, "/.sbx", 0755, s->uid_base);
        if (pfd < 0)
                return pfd;
        _cleanup_close_ int dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        if (unlinkat(dfd, "boot_id", 0) < 0 && errno != ENOENT)
                return -errno;
        _cleanup_close_ int fd =
            openat(dfd, "boot_id", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
        if (fd < 0)
                return -errno;
        if (write(fd, text, (size_t)n) != n || fchown(fd, s->uid_base, s->uid_base) < 0)
                return -errno;
        return 0;
}

/* With an egress link: /etc/resolv.conf names the host end, where sbxd's resolver answers
 * (egress/serve/resolver.h); the template's says 127.0.0.1 (no network). Replaced in the
 * upper, owned by sandbox root, so the sandbox may change it. */
int jail_mount_write_resolv_conf(int root_fd, uid_t uid, const uint8_t gw4[4])
{
        char text[128], gw[INET_ADDRSTRLEN];
        if (!inet_ntop(AF_INET, gw4, gw, sizeof(gw)))
                return -EINVAL;
        int n = snprintf(text, sizeof(text), "nameserver %s\noptions edns0\n", gw);
        _cleanup_close_ int pfd = mkdir_in_root(root_fd, "/etc", 0755, uid);
        if (pfd < 0)
                return pfd;
        _cleanup_close_ int dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        if (unlinkat(dfd, "resolv.conf", 0) < 0 && errno != ENOENT)
                return -errno;
        _cleanup_close_ int fd =
            openat(dfd, "resolv.conf", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        if (write(fd, text, (size_t)n) != n || fchown(fd, uid, uid) < 0)
                return -errno;
        return 0;
}

static int mount_root(const struct sbx_jail_spec *s, int userns_fd, int bind_userns_fd,
                      int *ret_idmapped);

int jail_mount_root(const struct sbx_jail_spec *s, int userns_fd, int bind_userns_fd,
                    int *ret_idmapped)
{
        int bits = s->upper_subvol ? jail_fs_become(s->uid_base) : 0;
        if (bits < 0)
                return jail_errorf(bits, "taking sandbox root's file-system ids: %m");
        int r = mount_root(s, userns_fd, bind_userns_fd, ret_idmapped);
        int b = s->upper_subvol ? jail_fs_restore(bits) : 0;
        return r < 0 ? r : b < 0 ? jail_errorf(b, "back to host root's ids: %m") : r;
}

static int mount_root(const struct sbx_jail_spec *s, int userns_fd, int bind_userns_fd,
                      int *ret_idmapped)
{
        int ufd = userns_fd;
        int r = mount_overlay(s, &ufd);
        if (r < 0)
                return jail_error_message() ? r : jail_errorf(r, "overlay on %s: %m", s->rootfs);
        _cleanup_close_ int root_fd = open(s->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0)
                return -errno;
        r = mount_binds(s, root_fd, ufd >= 0 ? bind_userns_fd : -1);
        if (r < 0)
                return r;
        r = mount_volumes(s, root_fd, ufd);
        if (r < 0)
                return r;
        r = mount_agent(s, root_fd);
        if (r < 0)
                return jail_errorf(r, "agent %s on " JAIL_AGENT_PATH ": %m", s->agent);
        if (s->runtime && (r = mount_runtime(s, root_fd, ufd >= 0 ? bind_userns_fd : -1)) < 0)
                return jail_errorf(r, "runtime %s on " JAIL_RUNTIME_PATH ": %m", s->runtime);
        r = mount_dev(s, root_fd);
        if (r < 0)
                return r;
        r = write_boot_id(s, root_fd);
        if (r < 0)
                return jail_errorf(r, "writing " JAIL_BOOT_ID_PATH ": %m");
        if (s->egress &&
            (r = jail_mount_write_resolv_conf(root_fd, s->uid_base, s->egress->gw4)) < 0)
                return jail_errorf(r, "writing /etc/resolv.conf: %m");
        if (s->egress && (r = jail_ca_install(root_fd, s->uid_base, s->egress->ca_pem)) < 0)
                return jail_errorf(r, "adding the egress CA to " SBX_JAIL_CA_BUNDLE ": %m");
        /* Mountpoints the child needs; the template normally has them. */
        _cleanup_close_ int proc = mkdir_in_root(root_fd, "/proc", 0555, s->uid_base);
        if (proc < 0)
                return jail_errorf(proc, "mkdir /proc: %m");
        *ret_idmapped = ufd >= 0;
        return 0;
}

/* Docker's masked and read-only /proc paths. Files are covered by /dev/null, dirs by an empty
 * read-only tmpfs; entries this kernel lacks are skipped. */
static const char *const proc_masked[] = {
    "kcore",
    "keys",
    "latency_stats",
    "timer_list",
    "timer_stats",
    "sched_debug",
    "acpi",
    "asound",
    "scsi",
    "kallsyms",
    "sysrq-trigger" /* not just read-only: writing it is the only use */,
};
static const char *const proc_readonly[] = {"sys", "irq", "bus", "fs"};

static int mask_proc_entry(int proc, const char *name)
{
        _cleanup_close_ int tfd = openat(proc, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (tfd < 0)
                return errno == ENOENT ? 0 : -errno;
        struct stat st;
        if (fstat(tfd, &st) < 0)
                return -errno;
        const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;
        if (S_ISDIR(st.st_mode)) {
                const char *const opts[] = {"size=4k", "nr_inodes=1", "mode=0555", NULL};
                return fs_at("tmpfs", opts, tfd, ro | MOUNT_ATTR_NODEV);
        }
        return bind_at(AT_FDCWD, "/dev/null", tfd, ro, -1, 0);
}

int jail_mount_open_root(const char *rootfs)
{
        int fd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? jail_errorf(-errno, "open %s: %m", rootfs) : fd;
}

int jail_mount_unshare_at(int root_fd)
{
        /* unshare(CLONE_NEWNS) moves the cwd to the new namespace's copy of its mount. */
        if (fchdir(root_fd) < 0)
                return jail_errorf(-errno, "enter the root: %m");
        if (unshare(CLONE_NEWNS) < 0)
                return jail_errorf(-errno, "unshare(CLONE_NEWNS): %m");
        int fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? jail_errorf(-errno, "open the root in the new namespace: %m") : fd;
}

int jail_mount_proc(int root_fd)
{
        _cleanup_close_ int tfd = open_in_root(root_fd, "/proc", O_PATH | O_DIRECTORY);
        if (tfd < 0)
                return jail_errorf(tfd, "open /proc in root: %m");
        /* A proc of this pid namespace. The kernel allows it in a userns only while a fully
         * visible procfs exists in the mount namespace: the host's, until pivot. */
        int r = fs_at("proc", NULL, tfd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
        if (r < 0)
                return jail_errorf(r, "mount proc: %m");
        _cleanup_close_ int proc = open_in_root(root_fd, "/proc", O_RDONLY | O_DIRECTORY);
        if (proc < 0)
                return proc;
        for (size_t i = 0; i < ELEMENTSOF(proc_masked); i++)
                if ((r = mask_proc_entry(proc, proc_masked[i])) < 0)
                        return jail_errorf(r, "mask /proc/%s: %m", proc_masked[i]);
        /* before /proc/sys goes read-only: the recursive rebind then covers this bind too */
        _cleanup_close_ int bsrc = open_in_root(root_fd, JAIL_BOOT_ID_PATH, O_PATH | O_NOFOLLOW);
        _cleanup_close_ int btgt =
            openat(proc, "sys/kernel/random/boot_id", O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (bsrc >= 0 && btgt >= 0) {
                r = bind_at(bsrc, "", btgt,
                            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                MOUNT_ATTR_NOEXEC,
                            -1, 0);
                if (r < 0)
                        return jail_errorf(r, "boot_id on /proc/sys/kernel/random/boot_id: %m");
        }
        for (size_t i = 0; i < ELEMENTSOF(proc_readonly); i++) {
                _cleanup_close_ int efd =
                    openat(proc, proc_readonly[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (efd < 0 && errno == ENOENT)
                        continue;
                if (efd < 0)
                        return -errno;
                r = bind_at(efd, "", efd,
                            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                MOUNT_ATTR_NOEXEC,
                            -1, 1);
                if (r < 0)
                        return jail_errorf(r, "read-only /proc/%s: %m", proc_readonly[i]);
        }
        return 0;
}

int jail_mount_devpts(int root_fd)
{
        _cleanup_close_ int tfd = open_in_root(root_fd, "/dev/pts", O_PATH | O_DIRECTORY);
        if (tfd < 0)
                return tfd;
        /* A new instance owned by this userns: pty numbering and /dev/pts contents are the
         * sandbox's own (CVE-2017-5226 mitigation needs its own ptys). gid 5 is "tty" inside. */
        const char *const opts[] = {"newinstance", "ptmxmode=0666", "mode=0620", "gid=5", NULL};
        int r = fs_at("devpts", opts, tfd, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
        return r < 0 ? jail_errorf(r, "mount devpts: %m") : 0;
}

int jail_mount_pivot(int root_fd)
{
        /* The root built by the parent is MNT_LOCKED in this (less privileged) namespace and
         * pivot_root refuses a locked new_root: stack a recursive copy of it, which is ours, on
         * top (runc does the same for rootless containers). The copy keeps the locked
         * nosuid/nodev/ro flags of every mount in the tree. */
        _cleanup_close_ int tree = open_tree(
            root_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
        if (tree < 0)
                return jail_errorf(-errno, "clone root tree: %m");
        if (move_mount(tree, "", root_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) <
            0)
                return jail_errorf(-errno, "attach root tree: %m");
        /* tree now names the root of the attached copy. pivot_root(".", ".") stacks the old
         * root on the new one; detaching it leaves only the sandbox (no put_old dir inside). */
        if (fchdir(tree) < 0)
                return -errno;
        if (syscall(SYS_pivot_root, ".", ".") < 0)
                return jail_errorf(-errno, "pivot_root: %m");
        if (umount2(".", MNT_DETACH) < 0)
                return jail_errorf(-errno, "detach old root: %m");
        if (chdir("/") < 0)
                return -errno;
        return 0;
}
