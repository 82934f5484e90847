/* SPDX-License-Identifier: Apache-2.0 */
#include "core/provision.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "macros.h"

/* The whole of a small /etc file (NULL and 0 when it is missing), its mode and owner. */
struct etc_file {
        const char *path;
        char *text;
        size_t len;
        struct stat st;
        bool exists;
};

static int etc_read(struct etc_file *f)
{
        _cleanup_close_ int fd = open(f->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        if (fstat(fd, &f->st) < 0)
                return -errno;
        if (!S_ISREG(f->st.st_mode))
                return -EINVAL;
        int r = read_all(fd, PROVISION_ETC_MAX, &f->text, &f->len);
        if (r < 0)
                return r;
        f->exists = true;
        return 0;
}

/* Replace f->path with text in one rename, keeping its mode and owner (new: mode). */
static int etc_write(const struct etc_file *f, const char *text, size_t len, mode_t mode)
{
        char tmp[256];
        snprintf(tmp, sizeof(tmp), "%s.sbx-new", f->path);
        (void)unlink(tmp);
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                      f->exists ? 0600 : mode);
        if (fd < 0)
                return -errno;
        int r = write_full(fd, text, len);
        if (r >= 0 && f->exists &&
            (fchown(fd, f->st.st_uid, f->st.st_gid) < 0 || fchmod(fd, f->st.st_mode & 07777) < 0))
                r = -errno;
        if (r >= 0 && rename(tmp, f->path) < 0)
                r = -errno;
        if (r < 0)
                (void)unlink(tmp);
        return r;
}

static void etc_done(struct etc_file *f)
{
        free(f->text);
}

/* Field i (0-based) of a colon-separated line, into buf; false when the line has fewer. */
static bool field(const char *line, size_t len, unsigned i, char *buf, size_t size)
{
        const char *p = line, *end = line + len;
        for (; i > 0; i--) {
                p = memchr(p, ':', (size_t)(end - p));
                if (!p)
                        return false;
                p++;
        }
        const char *q = memchr(p, ':', (size_t)(end - p));
        size_t n = (size_t)((q ? q : end) - p);
        if (n >= size)
                n = size - 1;
        memcpy(buf, p, n);
        buf[n] = 0;
        return true;
}

/* Walk the lines of a passwd or group text: the line of name (or NULL), and whether id (field
 * 2, the uid or gid) is taken. */
static const char *find_entry(const struct etc_file *f, const char *name, unsigned long id,
                              bool *ret_id_taken, size_t *ret_len)
{
        const char *found = NULL;
        *ret_id_taken = false;
        for (const char *p = f->text; p && p < f->text + f->len;) {
                const char *nl = memchr(p, '\n', (size_t)(f->text + f->len - p));
                size_t len = (size_t)((nl ? nl : f->text + f->len) - p);
                char a[256], b[32];
                if (field(p, len, 0, a, sizeof(a)) && field(p, len, 2, b, sizeof(b))) {
                        if (!found && strcmp(a, name) == 0) {
                                found = p;
                                *ret_len = len;
                        }
                        if (strtoul(b, NULL, 10) == id && *b)
                                *ret_id_taken = true;
                }
                p = nl ? nl + 1 : NULL;
        }
        return found;
}

/* Mark in used (bit id - PROVISION_UID) the ids of field 2 of f's lines in the range. */
static void mark_ids(const struct etc_file *f, uint8_t used[static PROVISION_ID_RANGE / 8])
{
        for (const char *p = f->text; p && p < f->text + f->len;) {
                const char *nl = memchr(p, '\n', (size_t)(f->text + f->len - p));
                size_t len = (size_t)((nl ? nl : f->text + f->len) - p);
                char b[32];
                if (field(p, len, 2, b, sizeof(b)) && *b) {
                        unsigned long id = strtoul(b, NULL, 10);
                        if (id >= PROVISION_UID && id < PROVISION_UID + PROVISION_ID_RANGE)
                                used[(id - PROVISION_UID) / 8] |=
                                    (uint8_t)(1u << ((id - PROVISION_UID) % 8));
                }
                p = nl ? nl + 1 : NULL;
        }
}

/* The first id from PROVISION_UID up that neither file uses (E2B's adduser does the same):
 * one pass over each file, whatever its size. */
static unsigned long free_id(const struct etc_file *a, const struct etc_file *b)
{
        uint8_t used[PROVISION_ID_RANGE / 8] = {0};
        mark_ids(a, used);
        mark_ids(b, used);
        for (unsigned long i = 0; i < PROVISION_ID_RANGE; i++)
                if (!(used[i / 8] & (1u << (i % 8))))
                        return PROVISION_UID + i;
        return PROVISION_UID;
}

/* text + a line (and a newline before it when text does not end with one). */
static int append_line(const struct etc_file *f, const char *line, mode_t mode)
{
        _cleanup_free_ char *t = NULL;
        bool nl = f->len > 0 && f->text[f->len - 1] != '\n';
        int n =
            asprintf(&t, "%.*s%s%s\n", (int)f->len, f->text ? f->text : "", nl ? "\n" : "", line);
        return n < 0 ? -ENOMEM : etc_write(f, t, (size_t)n, mode);
}

/* Add PROVISION_USER to the member list (the last field) of the group line g of length len. */
static int add_member(const struct etc_file *f, const char *g, size_t len)
{
        _cleanup_free_ char *t = NULL;
        const char *last = g + len, *members = memrchr(g, ':', len);
        if (!members)
                return 0; /* not a group line */
        for (const char *m = members + 1; m < last;) {
                const char *comma = memchr(m, ',', (size_t)(last - m));
                const char *e = comma ? comma : last;
                if ((size_t)(e - m) == strlen(PROVISION_USER) &&
                    memcmp(m, PROVISION_USER, (size_t)(e - m)) == 0)
                        return 0;
                m = e + 1;
        }
        size_t off = (size_t)(last - f->text);
        int n = asprintf(&t, "%.*s%s" PROVISION_USER "%.*s", (int)off, f->text,
                         last - 1 == members ? "" : ",", (int)(f->len - off), f->text + off);
        return n < 0 ? -ENOMEM : etc_write(f, t, (size_t)n, 0644);
}

/* user in /etc/passwd, its group in /etc/group, a line in /etc/shadow when the image has one,
 * membership of the image's sudo group. */
static int provision_user(uid_t *ret_uid, gid_t *ret_gid)
{
        struct etc_file pw = {.path = "/etc/passwd"}, gr = {.path = "/etc/group"},
                        sh = {.path = "/etc/shadow"};
        char line[512], buf[32];
        bool taken;
        size_t len = 0;
        int r = 0;

        if ((r = etc_read(&pw)) < 0 || (r = etc_read(&gr)) < 0 || (r = etc_read(&sh)) < 0)
                goto out;
        const char *u = find_entry(&pw, PROVISION_USER, 0, &taken, &len);
        if (u) {
                field(u, len, 2, buf, sizeof(buf));
                *ret_uid = (uid_t)strtoul(buf, NULL, 10);
                field(u, len, 3, buf, sizeof(buf));
                *ret_gid = (gid_t)strtoul(buf, NULL, 10);
                goto sudo;
        }
        (void)mkdir("/etc", 0755);
        /* the group "user" when the image has one, else a new one with the user's id */
        unsigned long uid = free_id(&pw, &pw), gid;
        const char *g = find_entry(&gr, PROVISION_USER, 0, &taken, &len);
        if (g) {
                field(g, len, 2, buf, sizeof(buf));
                gid = strtoul(buf, NULL, 10);
        } else {
                (void)find_entry(&gr, "", uid, &taken, &len);
                gid = taken ? free_id(&gr, &gr) : uid;
                snprintf(line, sizeof(line), PROVISION_USER ":x:%lu:", gid);
                if ((r = append_line(&gr, line, 0644)) < 0)
                        goto out;
                etc_done(&gr);
                gr = (struct etc_file){.path = "/etc/group"};
                if ((r = etc_read(&gr)) < 0)
                        goto out;
        }
        snprintf(line, sizeof(line), PROVISION_USER ":x:%lu:%lu::" PROVISION_HOME ":%s", uid, gid,
                 access(PROVISION_BASH, X_OK) == 0 ? PROVISION_BASH : PROVISION_SH);
        if ((r = append_line(&pw, line, 0644)) < 0)
                goto out;
        /* no password, as E2B's build leaves it (passwd -d): su from root needs none anyway */
        if (sh.exists && !find_entry(&sh, PROVISION_USER, 0, &taken, &len) &&
            (r = append_line(&sh, PROVISION_USER "::19000:0:99999:7:::", 0640)) < 0)
                goto out;
        *ret_uid = (uid_t)uid;
        *ret_gid = (gid_t)gid;
        log_info("provisioned the user '" PROVISION_USER "' (uid %lu, gid %lu)", uid, gid);
sudo:
        g = find_entry(&gr, PROVISION_SUDO_GROUP, 0, &taken, &len);
        if (g)
                r = add_member(&gr, g, len);
out:
        etc_done(&pw);
        etc_done(&gr);
        etc_done(&sh);
        return r;
}

/* /home/user, the user's: made when missing; only the directory itself is chowned (lchown
 * never follows a planted symlink; the layer may have it owned by an unmapped id). */
static void provision_home(uid_t uid, gid_t gid)
{
        struct stat st;
        (void)mkdir("/home", 0755);
        if (lstat(PROVISION_HOME, &st) < 0 && mkdir(PROVISION_HOME, 0755) < 0) {
                log_warning_errno(errno, "mkdir " PROVISION_HOME ": %m");
                return;
        }
        if (lstat(PROVISION_HOME, &st) == 0 && S_ISDIR(st.st_mode) &&
            (st.st_uid != uid || st.st_gid != gid) && lchown(PROVISION_HOME, uid, gid) < 0)
                log_warning_errno(errno, "chown " PROVISION_HOME ": %m");
}

/* /tmp with mode 1777. */
static void provision_tmp(void)
{
        struct stat st;
        if (lstat("/tmp", &st) < 0 && mkdir("/tmp", 01777) < 0)
                log_warning_errno(errno, "mkdir /tmp: %m");
        if (lstat("/tmp", &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) != 01777 &&
            chmod("/tmp", 01777) < 0)
                log_warning_errno(errno, "chmod /tmp: %m");
}

/* /usr/bin/sudo: the runtime's client where the image has none, or a set-uid one (which
 * no_new_privs makes useless: it is kept as sudo.image). */
static void provision_sudo(void)
{
        struct stat st;
        if (access(PROVISION_SUDO_TARGET, X_OK) < 0)
                return; /* no runtime: nothing to link to */
        if (lstat(PROVISION_SUDO_PATH, &st) == 0) {
                if (!S_ISREG(st.st_mode) || !(st.st_mode & S_ISUID))
                        return;
                if (rename(PROVISION_SUDO_PATH, PROVISION_SUDO_PATH ".image") < 0) {
                        log_warning_errno(errno, "moving the image's set-uid sudo aside: %m");
                        return;
                }
        }
        (void)mkdir("/usr", 0755);
        (void)mkdir("/usr/bin", 0755);
        if (symlink(PROVISION_SUDO_TARGET, PROVISION_SUDO_PATH) < 0 && errno != EEXIST)
                log_warning_errno(errno, "linking " PROVISION_SUDO_PATH ": %m");
}

void agent_provision(void)
{
        uid_t uid = PROVISION_UID;
        gid_t gid = PROVISION_UID;
        int r = provision_user(&uid, &gid);
        if (r < 0)
                log_warning_errno(r, "provisioning the user '" PROVISION_USER "': %m");
        provision_home(uid, gid);
        provision_tmp();
        provision_sudo();
}
