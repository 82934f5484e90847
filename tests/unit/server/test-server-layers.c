/* SPDX-License-Identifier: Apache-2.0 */
/* Layer store, SHA-256 and lifecycle routes (no sandboxes needed). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fd-util.h"
#include "storage/layer-export.h"
#include "storage/layer-store.h"
#include "lifecycle/registry.h"
#include "sha256.h"
#include "lifecycle/teardown.h"
#include "unit.h"

/* <dir>/rootfs/upper, the upper the jailer mounts for an image or tmpfs disk. */
static const char *upper_of(const char *dir)
{
        static char buf[600];
        snprintf(buf, sizeof(buf), "%s/rootfs/upper", dir);
        return buf;
}

static char tmp[] = "/tmp/sbx-unit-layers.XXXXXX";

static void test_sha256(void)
{
        static const struct {
                const char *in, *hex;
        } v[] = {
            {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
            {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
            {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        };
        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
                struct sha256 c;
                char hex[65];
                sha256_init(&c);
                /* byte by byte for the long one: the buffering paths */
                for (const char *p = v[i].in; *p; p++)
                        sha256_update(&c, p, 1);
                sha256_final_hex(&c, hex);
                CHECK_STREQ(hex, v[i].hex);
        }
        struct sha256 c;
        char hex[65];
        static char mil[1000000];
        memset(mil, 'a', sizeof(mil));
        sha256_init(&c);
        sha256_update(&c, mil, sizeof(mil));
        sha256_final_hex(&c, hex);
        CHECK_STREQ(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void put(const char *path, const char *text, mode_t mode, unsigned uid)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
        CHECK(fd >= 0);
        CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
        fchmod(fd, mode);
        CHECK(fchown(fd, uid, uid) == 0);
        close(fd);
}

/* A fake sandbox dir whose rootfs/ is a tmpfs (a different fs than the dir, as with the jailer). */
static int fake_upper(const char *dir, unsigned base)
{
        char p[512];
        mkdir(dir, 0700);
        snprintf(p, sizeof(p), "%s/rootfs", dir);
        mkdir(p, 0700);
        if (mount("t", p, "tmpfs", 0, "size=16m") < 0)
                return -errno;
        snprintf(p, sizeof(p), "%s/rootfs/upper", dir);
        mkdir(p, 0755);
        CHECK(chown(p, base, base) == 0);
        snprintf(p, sizeof(p), "%s/rootfs/upper/home", dir);
        mkdir(p, 0755);
        CHECK(chown(p, base + 1000, base + 1000) == 0);
        snprintf(p, sizeof(p), "%s/rootfs/upper/home/f", dir);
        put(p, "hello", 0640, base + 1000);
        snprintf(p, sizeof(p), "%s/rootfs/upper/home/escape", dir);
        CHECK(symlink("/etc/shadow", p) == 0); /* recreated, never followed */
        snprintf(p, sizeof(p), "%s/rootfs/upper/gone", dir);
        CHECK(mknod(p, S_IFCHR | 0, makedev(0, 0)) == 0); /* whiteout */
        snprintf(p, sizeof(p), "%s/rootfs/upper/opaque", dir);
        mkdir(p, 0755);
        CHECK(setxattr(p, "trusted.overlay.opaque", "y", 1, 0) == 0);
        snprintf(p, sizeof(p), "%s/rootfs/upper/foreign", dir);
        put(p, "x", 0644, 0); /* host root's: becomes nobody */
        /* a second name of home/f, and file metadata as the files API stores it */
        char f[512];
        snprintf(f, sizeof(f), "%s/rootfs/upper/home/f", dir);
        snprintf(p, sizeof(p), "%s/rootfs/upper/opaque/f-again", dir);
        CHECK(link(f, p) == 0);
        CHECK(setxattr(f, "user.e2b.owner", "me", 2, 0) == 0);
        CHECK(setxattr(f, "user.overlay.origin", "x", 1, 0) == 0);
        return 0;
}

/* Zeros written out and a hole of the same length are the same bytes: the same layer, stored
 * as a hole either way; a byte of data among them is kept where it was. */
static void test_sparse(const char *state, const char *dir, unsigned base)
{
        char p[512], stored[700], hz[LAYER_ID_MAX], hh[LAYER_ID_MAX], hd[LAYER_ID_MAX];
        static char zeros[300 * 1024];
        struct stat st;
        snprintf(p, sizeof(p), "%s/rootfs/upper/z", dir);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        CHECK(fd >= 0 && write(fd, zeros, sizeof(zeros)) == (ssize_t)sizeof(zeros));
        CHECK(fchown(fd, base, base) == 0);
        close(fd);
        CHECK_EQ_INT(layer_store_ingest_upper(state, upper_of(dir), base, UID_SLOT_SIZE, hz), 0);
        snprintf(stored, sizeof(stored), "%s/layers/%s/z", state, hz);
        CHECK(stat(stored, &st) == 0 && st.st_size == (off_t)sizeof(zeros) && st.st_blocks == 0);
        unlink(p);
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        CHECK(fd >= 0 && ftruncate(fd, sizeof(zeros)) == 0 && fchown(fd, base, base) == 0);
        close(fd);
        CHECK_EQ_INT(layer_store_ingest_upper(state, upper_of(dir), base, UID_SLOT_SIZE, hh), 0);
        CHECK_STREQ(hh, hz);
        fd = open(p, O_WRONLY);
        CHECK(fd >= 0 && pwrite(fd, "x", 1, 200 * 1024) == 1);
        close(fd);
        CHECK_EQ_INT(layer_store_ingest_upper(state, upper_of(dir), base, UID_SLOT_SIZE, hd), 0);
        CHECK(strcmp(hd, hz) != 0);
        snprintf(stored, sizeof(stored), "%s/layers/%s/z", state, hd);
        char c = 0;
        fd = open(stored, O_RDONLY);
        CHECK(fd >= 0 && pread(fd, &c, 1, 200 * 1024) == 1 && c == 'x');
        CHECK(fstat(fd, &st) == 0 && st.st_blocks * 512 <= 64 * 1024);
        close(fd);
        unlink(p);
}

static void test_ingest(void)
{
        char state[256], dir[256], layer[512], p[600];
        struct sandbox *s = sandbox_new();
        snprintf(state, sizeof(state), "%s/state", tmp);
        snprintf(dir, sizeof(dir), "%s/sbx", tmp);
        mkdir(state, 0700);
        s->slot = 3;
        s->dir = strdup(dir);
        unsigned base = UID_SLOT_BASE + 3 * UID_SLOT_SIZE;
        /* no tmpfs mounted: refused (an empty dir is not an upper) */
        mkdir(dir, 0700);
        snprintf(p, sizeof(p), "%s/rootfs", dir);
        mkdir(p, 0700);
        snprintf(p, sizeof(p), "%s/rootfs/upper", dir);
        mkdir(p, 0755);
        char hex[LAYER_ID_MAX], hex2[LAYER_ID_MAX];
        CHECK_EQ_INT(layer_store_ingest_upper(state, upper_of(dir), base, UID_SLOT_SIZE, hex),
                     -ENODEV);
        rmdir(p);
        if (fake_upper(dir, base) < 0) {
                fprintf(stderr, "no tmpfs mount (not root?): ingest skipped\n");
                sandbox_unref(s);
                return;
        }
        CHECK_EQ_INT(layer_store_ingest_upper(state, upper_of(dir), base, UID_SLOT_SIZE, hex), 0);
        CHECK_EQ_INT(strlen(hex), 64);
        layer_store_path(state, hex, layer, sizeof(layer));
        CHECK(layer_store_is_layer(state, layer, NULL));
        struct stat st;
        snprintf(p, sizeof(p), "%s/home/f", layer);
        CHECK(lstat(p, &st) == 0 && st.st_uid == 1000 && (st.st_mode & 07777) == 0640);
        snprintf(p, sizeof(p), "%s/home", layer);
        CHECK(lstat(p, &st) == 0 && st.st_uid == 1000);
        CHECK(lstat(layer, &st) == 0 && st.st_uid == 0 && (st.st_mode & 0777) == 0755);
        snprintf(p, sizeof(p), "%s/home/escape", layer);
        char target[64] = "";
        CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode));
        CHECK(readlink(p, target, sizeof(target) - 1) > 0);
        CHECK_STREQ(target, "/etc/shadow");
        snprintf(p, sizeof(p), "%s/gone", layer);
        CHECK(lstat(p, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
        snprintf(p, sizeof(p), "%s/opaque", layer);
        char v[4] = "";
        CHECK(getxattr(p, "trusted.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y');
        snprintf(p, sizeof(p), "%s/foreign", layer);
        CHECK(lstat(p, &st) == 0 && st.st_uid == 65534);
        /* hard links stay one file; user.* xattrs are kept, user.overlay.* is not */
        struct stat st2;
        snprintf(p, sizeof(p), "%s/home/f", layer);
        char p2[600];
        snprintf(p2, sizeof(p2), "%s/opaque/f-again", layer);
        CHECK(lstat(p, &st) == 0 && lstat(p2, &st2) == 0 && st.st_ino == st2.st_ino &&
              st.st_nlink == 2);
        char xv[8] = "";
        CHECK(getxattr(p, "user.e2b.owner", xv, sizeof(xv)) == 2 && memcmp(xv, "me", 2) == 0);
        CHECK(getxattr(p, "user.overlay.origin", xv, sizeof(xv)) < 0);
        /* same content: same layer, stored once */
        CHECK_EQ_INT(layer_store_ingest_upper(state, upper_of(dir), base, UID_SLOT_SIZE, hex2), 0);
        CHECK_STREQ(hex, hex2);
        /* unreferenced: gc removes it; a template naming it keeps it */
        char tdir[512], tj[600];
        snprintf(tdir, sizeof(tdir), "%s/templates/snap-x", state);
        snprintf(p, sizeof(p), "%s/templates", state);
        mkdir(p, 0700);
        mkdir(tdir, 0700);
        snprintf(tj, sizeof(tj), "%s/template.json", tdir);
        char json[200];
        snprintf(json, sizeof(json), "{\"layers\":[\"sha256:%s\"]}", hex);
        put(tj, json, 0644, 0);
        /* files among the templates (build-all.sh's .fallback note, its .building lock) name
         * nothing and stop nothing */
        snprintf(p, sizeof(p), "%s/templates/.fallback", state);
        put(p, "no Debian mirror answered\n", 0644, 0);
        snprintf(p, sizeof(p), "%s/templates/.building", state);
        put(p, "", 0644, 0);
        CHECK_EQ_INT(layer_store_gc(state, 1), 0);
        CHECK(access(layer, F_OK) == 0);
        unlink(tj);
        CHECK_EQ_INT(layer_store_gc(state, 1), 1);
        CHECK(access(layer, F_OK) < 0);
        test_sparse(state, dir, base);
        snprintf(p, sizeof(p), "%s/rootfs", dir);
        umount2(p, MNT_DETACH);
        sandbox_unref(s);
}

/* A layer exported as a tar and read back on "another node" (a second state dir): the same
 * layer, holes not sent; a stream claimed as another layer is refused and leaves nothing. */
static void test_export(void)
{
        char state[256], state2[256], ldir[256], p[4096], p2[4200], hex[LAYER_ID_MAX];
        char err[IMAGE_LAYER_ERR_MAX];
        snprintf(state, sizeof(state), "%s/exp-a", tmp);
        snprintf(state2, sizeof(state2), "%s/exp-b", tmp);
        mkdir(state, 0700);
        mkdir(state2, 0700);
        CHECK_EQ_INT(layer_store_tmp_dir(state, ldir, sizeof(ldir)), 0);
        chmod(ldir, 0755);
        snprintf(p, sizeof(p), "%s/home", ldir);
        mkdir(p, 0750);
        CHECK(chown(p, 1000, 1000) == 0);
        snprintf(p, sizeof(p), "%s/home/f", ldir);
        put(p, "hello", 0640, 1000);
        CHECK(setxattr(p, "user.e2b.owner", "me", 2, 0) == 0);
        snprintf(p2, sizeof(p2), "%s/home/f-again", ldir);
        CHECK(link(p, p2) == 0);
        snprintf(p, sizeof(p), "%s/home/ln", ldir);
        CHECK(symlink("/etc/shadow", p) == 0);
        snprintf(p, sizeof(p), "%s/home/fifo", ldir);
        CHECK(mkfifo(p, 0600) == 0);
        /* 64 MiB with 5 bytes of data in the middle */
        snprintf(p, sizeof(p), "%s/sparse", ldir);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        CHECK(fd >= 0 && ftruncate(fd, 64 << 20) == 0);
        CHECK(pwrite(fd, "magic", 5, 32 << 20) == 5);
        close(fd);
        snprintf(p, sizeof(p), "%s/empty", ldir);
        put(p, "", 0600, 0);
        snprintf(p, sizeof(p), "%s/gone", ldir);
        bool whiteout = mknod(p, S_IFCHR | 0000, makedev(0, 0)) == 0;
        snprintf(p, sizeof(p), "%s/opaque", ldir);
        mkdir(p, 0755);
        bool opaque = setxattr(p, "trusted.overlay.opaque", "y", 1, 0) == 0;
        CHECK_EQ_INT(layer_store_adopt(state, ldir, hex), 0);
        /* exported to a file (a pipe in sbxd), read back under its own name */
        int out = open(tmp, O_RDWR | O_TMPFILE, 0600);
        CHECK(out >= 0);
        layer_store_read_lock();
        CHECK_EQ_INT(layer_export(state, hex, out), 0);
        struct stat st;
        CHECK(fstat(out, &st) == 0 && st.st_size < (1 << 20)); /* the hole is not sent */
        CHECK(lseek(out, 0, SEEK_SET) == 0);
        CHECK_EQ_INT(layer_import_stream(state2, out, hex, err), 0);
        CHECK_EQ_INT(layer_store_has(state2, hex), 1);
        layer_store_path(state2, hex, p, sizeof(p));
        snprintf(p2, sizeof(p2), "%s/sparse", p);
        CHECK(stat(p2, &st) == 0 && st.st_size == 64 << 20 && st.st_blocks < 1024);
        snprintf(p2, sizeof(p2), "%s/gone", p);
        CHECK(!whiteout || (lstat(p2, &st) == 0 && S_ISCHR(st.st_mode)));
        snprintf(p2, sizeof(p2), "%s/opaque", p);
        char v[4] = "";
        CHECK(!opaque || getxattr(p2, "trusted.overlay.opaque", v, sizeof(v)) == 1);
        /* already there: nothing read */
        CHECK_EQ_INT(layer_import_stream(state2, -1, hex, err), 0);
        /* the same bytes claimed as another layer: refused, nothing kept */
        char other[LAYER_ID_MAX];
        memcpy(other, hex, sizeof(other));
        other[0] = other[0] == '0' ? '1' : '0';
        CHECK(lseek(out, 0, SEEK_SET) == 0);
        CHECK_EQ_INT(layer_import_stream(state2, out, other, err), -EBADMSG);
        CHECK(strstr(err, hex) != NULL);
        CHECK_EQ_INT(layer_store_has(state2, other), 0);
        /* not a tar */
        CHECK(ftruncate(out, 0) == 0 && write(out, "garbage!", 8) == 8 &&
              lseek(out, 0, SEEK_SET) == 0);
        CHECK(layer_import_stream(state2, out, other, err) < 0);
        CHECK_EQ_INT(layer_export(state, other, out), -ENOENT);
        layer_store_unlock();
        close(out);
        CHECK_EQ_INT(layer_store_gc(state2, 1), 1); /* the one good layer; no temp dir left */
}

/* A template's layer dir put in the store (hard links) and sent to another node: the name
 * covers only what the layer keeps (no socket, no device node), a file's xattrs after its
 * content and a symlink's target with its NUL, as the receiving node's walk does. */
static void test_export_dir(void)
{
        char dir[48], state[48], state2[48], p[100], hex[LAYER_ID_MAX];
        char err[IMAGE_LAYER_ERR_MAX];
        snprintf(dir, sizeof(dir), "%s/tdir", tmp);
        snprintf(state, sizeof(state), "%s/tdir-a", tmp);
        snprintf(state2, sizeof(state2), "%s/tdir-b", tmp);
        mkdir(dir, 0755);
        mkdir(state, 0700);
        mkdir(state2, 0700);
        snprintf(p, sizeof(p), "%s/f", dir);
        put(p, "content", 0644, 0);
        CHECK(setxattr(p, "user.k", "v", 1, 0) == 0);
        snprintf(p, sizeof(p), "%s/f2", dir); /* a hard link inside the dir */
        char f[100];
        snprintf(f, sizeof(f), "%s/f", dir);
        CHECK(link(f, p) == 0);
        snprintf(p, sizeof(p), "%s/ln", dir);
        CHECK(symlink("a-target", p) == 0);
        snprintf(p, sizeof(p), "%s/null", dir);
        (void)mknod(p, S_IFCHR | 0666, makedev(1, 3)); /* root only: kept out either way */
        snprintf(p, sizeof(p), "%s/sock", dir);
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p);
        CHECK(s >= 0 && bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
        close(s);
        CHECK_EQ_INT(layer_store_import_dir(state, dir, hex), 0);
        int out = open(tmp, O_RDWR | O_TMPFILE, 0600);
        CHECK(out >= 0);
        layer_store_read_lock();
        CHECK_EQ_INT(layer_export(state, hex, out), 0);
        CHECK(lseek(out, 0, SEEK_SET) == 0);
        CHECK_EQ_INT(layer_import_stream(state2, out, hex, err), 0);
        layer_store_unlock();
        CHECK_EQ_INT(layer_store_has(state2, hex), 1);
        close(out);
}

int main(void)
{
        if (!mkdtemp(tmp))
                return 1;
        test_sha256();
        test_ingest();
        test_export();
        test_export_dir();
        rm_rf(tmp);
        return unit_finish("test-server-layers");
}
