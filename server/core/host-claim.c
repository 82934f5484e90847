/* SPDX-License-Identifier: Apache-2.0 */
#include "core/host-claim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macros.h"
#include "sha256.h"

struct host_claims {
        char dir[PATH_MAX];   /* HOST_CLAIM_DIR or the test's */
        char state[PATH_MAX]; /* the state dir, as claims name it */
        char id[HOST_INSTANCE_ID + 1];
        int instance_fd; /* flock'ed for our life */
};

static int mkdir_p(const char *path)
{
        return mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

/* path's contents (a claim: a state dir), NUL-terminated, at most size - 1 bytes. */
static int read_claim(int dfd, const char *name, char *buf, size_t size)
{
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, size - 1);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        return 0;
}

static int write_claim(int dfd, const char *name, const char *state)
{
        _cleanup_close_ int fd =
            openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        char line[PATH_MAX + 2];
        int n = snprintf(line, sizeof(line), "%s\n", state);
        int r = write_full(fd, line, (size_t)n);
        if (r < 0)
                (void)unlinkat(dfd, name, 0);
        return r;
}

static bool stale(const char *owner);

/* Records of instances whose state dir is gone and whose sbxd does not run (its lock is free),
 * left by an sbxd that was killed: nobody's any more. A starting sbxd's state dir exists, so
 * its record is never one of them. */
static void sweep_instances(const char *dir, const char *self)
{
        char path[PATH_MAX + 16], owner[PATH_MAX];
        snprintf(path, sizeof(path), "%s/instances", dir);
        DIR *d = opendir(path);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.' || strcmp(de->d_name, self) == 0 ||
                    read_claim(dirfd(d), de->d_name, owner, sizeof(owner)) < 0 || !stale(owner))
                        continue;
                _cleanup_close_ int fd =
                    openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
                        (void)unlinkat(dirfd(d), de->d_name, 0);
        }
        if (d)
                closedir(d);
}

int host_claims_open(const char *state_dir, struct host_claims **ret, char *errmsg, size_t errlen)
{
        struct host_claims *h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->instance_fd = -EBADF;
        const char *dir = getenv(HOST_CLAIM_ENV);
        snprintf(h->dir, sizeof(h->dir), "%s", dir && *dir ? dir : HOST_CLAIM_DIR);
        snprintf(h->state, sizeof(h->state), "%s", state_dir);
        struct sha256 c;
        char hex[65], path[PATH_MAX + 64];
        sha256_init(&c);
        sha256_update(&c, state_dir, strlen(state_dir));
        sha256_final_hex(&c, hex);
        memcpy(h->id, hex, HOST_INSTANCE_ID);
        int r = mkdir_p(h->dir);
        snprintf(path, sizeof(path), "%s/instances", h->dir);
        if (r >= 0)
                r = mkdir_p(path);
        snprintf(path, sizeof(path), "%s/slots", h->dir);
        if (r >= 0)
                r = mkdir_p(path);
        snprintf(path, sizeof(path), "%s/instances/%s", h->dir, h->id);
        if (r >= 0 && (h->instance_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
                r = -errno;
        if (r < 0) {
                snprintf(errmsg, errlen, "host claims in %s: %s", h->dir, strerror(-r));
                host_claims_close(h);
                return r;
        }
        if (flock(h->instance_fd, LOCK_EX | LOCK_NB) < 0) {
                r = -EBUSY;
                snprintf(errmsg, errlen, "another sbxd runs as instance %s (%s)", h->id, path);
                host_claims_close(h);
                return r;
        }
        char owner[PATH_MAX];
        ssize_t n = pread(h->instance_fd, owner, sizeof(owner) - 1, 0);
        owner[MAX(n, 0)] = 0;
        owner[strcspn(owner, "\n")] = 0;
        if (n > 0 && strcmp(owner, state_dir) != 0) {
                snprintf(errmsg, errlen,
                         "instance id %s of state dir %s is the id of %s too: refusing to share "
                         "its uid slots, links and nftables tables",
                         h->id, state_dir, owner);
                host_claims_close(h);
                return -EEXIST;
        }
        char line[PATH_MAX + 2];
        int l = snprintf(line, sizeof(line), "%s\n", state_dir);
        if (n <= 0 &&
            (ftruncate(h->instance_fd, 0) < 0 || pwrite(h->instance_fd, line, (size_t)l, 0) != l)) {
                r = -errno;
                snprintf(errmsg, errlen, "writing %s: %s", path, strerror(-r));
                host_claims_close(h);
                return r;
        }
        sweep_instances(h->dir, h->id);
        *ret = h;
        return 0;
}

/* Does this instance hold any slot? */
static bool holds_any(const struct host_claims *h);

void host_claims_close(struct host_claims *h)
{
        if (!h)
                return;
        if (h->instance_fd >= 0 && !holds_any(h)) { /* nothing of ours left: no record either */
                char path[PATH_MAX + 64];
                snprintf(path, sizeof(path), "%s/instances/%s", h->dir, h->id);
                (void)unlink(path);
        }
        safe_close(h->instance_fd);
        free(h);
}

const char *host_claims_id(const struct host_claims *h)
{
        return h->id;
}

static int slots_dir(const struct host_claims *h)
{
        char path[PATH_MAX + 8];
        snprintf(path, sizeof(path), "%s/slots", h->dir);
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* A claim whose state dir is gone: nobody's any more. */
static bool stale(const char *owner)
{
        struct stat st;
        return owner[0] != '/' || stat(owner, &st) < 0;
}

/* The claim of name taken over when it is stale, under the lock file. */
static int take_over(struct host_claims *h, int dfd, const char *name)
{
        char path[PATH_MAX + 8], owner[PATH_MAX];
        snprintf(path, sizeof(path), "%s/lock", h->dir);
        _cleanup_close_ int lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (lock < 0 || flock(lock, LOCK_EX) < 0)
                return -errno;
        int r = read_claim(dfd, name, owner, sizeof(owner));
        if (r == -ENOENT)
                return write_claim(dfd, name, h->state);
        if (r < 0)
                return r;
        if (strcmp(owner, h->state) == 0)
                return 0;
        if (!stale(owner))
                return -EBUSY;
        if (unlinkat(dfd, name, 0) < 0)
                return -errno;
        return write_claim(dfd, name, h->state);
}

int host_slot_claim(struct host_claims *h, int slot)
{
        _cleanup_close_ int dfd = slots_dir(h);
        char name[16];
        if (dfd < 0)
                return dfd;
        snprintf(name, sizeof(name), "%d", slot);
        int r = write_claim(dfd, name, h->state);
        return r == -EEXIST ? take_over(h, dfd, name) : r;
}

void host_slot_release(struct host_claims *h, int slot)
{
        _cleanup_close_ int dfd = slots_dir(h);
        char name[16], owner[PATH_MAX];
        snprintf(name, sizeof(name), "%d", slot);
        if (dfd >= 0 && read_claim(dfd, name, owner, sizeof(owner)) >= 0 &&
            strcmp(owner, h->state) == 0)
                (void)unlinkat(dfd, name, 0);
}

static bool holds_any(const struct host_claims *h)
{
        int dfd = slots_dir(h);
        DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
        if (!d) {
                safe_close(dfd);
                return true; /* cannot tell: keep the record */
        }
        bool any = false;
        struct dirent *de;
        char owner[PATH_MAX];
        while (!any && (de = readdir(d)))
                any = de->d_name[0] != '.' &&
                      read_claim(dirfd(d), de->d_name, owner, sizeof(owner)) >= 0 &&
                      strcmp(owner, h->state) == 0;
        closedir(d);
        return any;
}

int host_slot_sweep(struct host_claims *h, const bool *in_use, int max)
{
        int dfd = slots_dir(h);
        if (dfd < 0)
                return dfd;
        DIR *d = fdopendir(dfd);
        if (!d) {
                safe_close(dfd);
                return -errno;
        }
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                char *end, owner[PATH_MAX];
                long slot = strtol(de->d_name, &end, 10);
                if (*end || end == de->d_name || slot < 0 || slot >= max || in_use[slot] ||
                    read_claim(dirfd(d), de->d_name, owner, sizeof(owner)) < 0 ||
                    strcmp(owner, h->state) != 0)
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) == 0)
                        n++;
        }
        closedir(d);
        return n;
}
