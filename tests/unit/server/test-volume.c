/* SPDX-License-Identifier: Apache-2.0 */
/* Volumes: names and ids (storage/volume.h), and the content API's file operations
 * (storage/volume-fs.h) on a plain directory standing in for a volume's root, with what a
 * sandbox could leave there: symlinks out (absolute, relative, dangling), a FIFO, a file where
 * a directory is expected. Nothing outside the directory may be read, written or removed. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macros.h"
#include "path-util.h"
#include "storage/volume-fs.h"
#include "storage/volume.h"
#include "unit.h"

static void test_names(void)
{
        CHECK(volume_name_valid("a"));
        CHECK(volume_name_valid("Data_1-x"));
        CHECK(!volume_name_valid(""));
        CHECK(!volume_name_valid("a b"));
        CHECK(!volume_name_valid("a.b"));
        CHECK(!volume_name_valid("../x"));
        char n[VOLUME_NAME_MAX + 2];
        memset(n, 'a', sizeof(n) - 1);
        n[VOLUME_NAME_MAX + 1] = 0;
        CHECK(!volume_name_valid(n));
        n[VOLUME_NAME_MAX] = 0;
        CHECK(volume_name_valid(n));
        CHECK(volume_id_valid("0b6e2f3a-5c1d-4e8f-9a7b-1c2d3e4f5a6b"));
        CHECK(!volume_id_valid("0B6E2F3A-5C1D-4E8F-9A7B-1C2D3E4F5A6B"));
        CHECK(!volume_id_valid("0b6e2f3a-5c1d-4e8f-9a7b-1c2d3e4f5a6"));
        CHECK(!volume_id_valid("0b6e2f3a/5c1d-4e8f-9a7b-1c2d3e4f5a6b"));
        CHECK(!volume_id_valid("../../../../../../../../../../etc/xx"));
}

static const char *clean(const char *in)
{
        static char out[256];
        if (path_clean(in, out, sizeof(out)) < 0)
                return "ERR";
        return out;
}

static void test_clean(void)
{
        CHECK_STREQ(clean(""), "/");
        CHECK_STREQ(clean("/"), "/");
        CHECK_STREQ(clean("a"), "/a");
        CHECK_STREQ(clean("a/b/"), "/a/b");
        CHECK_STREQ(clean("//a//./b"), "/a/b");
        CHECK_STREQ(clean("/a/../b"), "/b");
        CHECK_STREQ(clean("../../etc/passwd"), "/etc/passwd");
        CHECK_STREQ(clean("/a/b/../../../.."), "/");
        CHECK_STREQ(clean("..."), "/...");
        char big[300];
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        CHECK_STREQ(clean(big), "ERR");
}

static char top[64], vol[96];

/* dir/name, a new file holding text */
static void touch(const char *dir, const char *name, const char *text)
{
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        CHECK(fd >= 0);
        if (fd >= 0) {
                CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
                close(fd);
        }
}

/* dir/name, a new directory */
static void mkdir_in(const char *dir, const char *name)
{
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        CHECK(mkdir(path, 0755) == 0);
}

static int count_entries(cJSON *a)
{
        int n = cJSON_GetArraySize(a);
        cJSON_Delete(a);
        return n;
}

static void test_fs(void)
{
        snprintf(top, sizeof(top), "/tmp/sbx-test-volume.XXXXXX");
        if (!mkdtemp(top)) {
                CHECK(0);
                return;
        }
        char p[256];
        snprintf(vol, sizeof(vol), "%s/vol", top);
        CHECK(mkdir(vol, 0755) == 0);
        /* outside the volume: a secret and a dir a write must never reach */
        touch(top, "secret", "host");
        mkdir_in(top, "outside");
        /* what a sandbox leaves in the volume */
        char link[256];
        snprintf(link, sizeof(link), "%s/root", vol);
        CHECK(symlink("/", link) == 0);
        snprintf(link, sizeof(link), "%s/up", vol);
        CHECK(symlink("..", link) == 0);
        snprintf(link, sizeof(link), "%s/sec", vol);
        snprintf(p, sizeof(p), "%s/secret", top);
        CHECK(symlink(p, link) == 0);
        snprintf(p, sizeof(p), "%s/fifo", vol);
        CHECK(mkfifo(p, 0644) == 0);
        touch(vol, "file", "inside");

        int root = -1;
        CHECK_EQ_INT(volume_fs_open_root(vol, &root), 0);
        int fd = -1;
        uint64_t size = 0;
        cJSON *e = NULL;
        /* reads through the links stay inside: none of them reaches the secret */
        char escape[300];
        snprintf(escape, sizeof(escape), "/root%s/secret", top);
        CHECK_EQ_INT(volume_fs_open_read(root, escape, &fd, &size), -ENOENT);
        CHECK_EQ_INT(volume_fs_open_read(root, "/up/secret", &fd, &size), -ENOENT);
        CHECK_EQ_INT(volume_fs_open_read(root, "/sec", &fd, &size), -ENOENT);
        CHECK_EQ_INT(volume_fs_open_read(root, "/fifo", &fd, &size), -EINVAL); /* at once */
        CHECK_EQ_INT(volume_fs_open_read(root, "/root", &fd, &size), -EISDIR);
        CHECK_EQ_INT(volume_fs_open_read(root, "/file/x", &fd, &size), -ENOTDIR);
        CHECK_EQ_INT(volume_fs_open_read(root, "/file", &fd, &size), 0);
        CHECK(size == 6);
        fd = safe_close(fd);

        /* a write through "/up" (..) lands in the volume's root, not in its parent */
        struct volume_fs_attrs a = {.has_uid = true, .uid = 1000, .has_gid = true, .gid = 1000};
        CHECK_EQ_INT(volume_fs_open_write(root, "/up/outside/planted", &a, true, &fd), 0);
        CHECK_EQ_INT(volume_fs_finish_write(fd, "/up/outside/planted", &a, &e), 0);
        fd = safe_close(fd);
        CHECK(e && cJSON_GetObjectItem(e, "uid")->valuedouble == 1000);
        CHECK_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(e, "type")), "file");
        cJSON_Delete(e);
        snprintf(p, sizeof(p), "%s/outside/planted", top);
        CHECK(access(p, F_OK) < 0);
        snprintf(p, sizeof(p), "%s/outside/planted", vol);
        CHECK(access(p, F_OK) == 0);
        /* a dangling absolute link as the last component: the file is made inside */
        snprintf(link, sizeof(link), "%s/dangle", vol);
        snprintf(p, sizeof(p), "%s/outside/made-by-link", top);
        CHECK(symlink(p, link) == 0);
        char via[300];
        snprintf(via, sizeof(via), "%s/outside", top);
        CHECK_EQ_INT(volume_fs_mkdir(root, via, NULL, true, &e), 0); /* the link's dir, inside */
        cJSON_Delete(e);
        CHECK_EQ_INT(volume_fs_open_write(root, "/dangle", NULL, true, &fd), 0);
        fd = safe_close(fd);
        CHECK(access(p, F_OK) < 0);
        snprintf(via, sizeof(via), "%s%s/outside/made-by-link", vol, top);
        CHECK(access(via, F_OK) == 0);
        /* no force: an existing file is refused; a FIFO is never opened for writing */
        CHECK_EQ_INT(volume_fs_open_write(root, "/file", NULL, false, &fd), -EEXIST);
        CHECK_EQ_INT(volume_fs_open_write(root, "/fifo", NULL, true, &fd), -ENXIO);

        /* stat of a link is the link; its target is reported as is */
        CHECK_EQ_INT(volume_fs_stat(root, "/sec", &e), 0);
        CHECK_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(e, "type")), "symlink");
        CHECK(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(e, "target")), "/secret") != NULL);
        cJSON_Delete(e);
        CHECK_EQ_INT(volume_fs_stat(root, "/nope", &e), -ENOENT);

        /* mkdir: exists, parents, through a file */
        CHECK_EQ_INT(volume_fs_mkdir(root, "/file", NULL, false, &e), -EEXIST);
        CHECK_EQ_INT(volume_fs_mkdir(root, "/a/b", NULL, false, &e), -ENOENT);
        CHECK_EQ_INT(volume_fs_mkdir(root, "/a/b", NULL, true, &e), 0);
        CHECK(cJSON_GetObjectItem(e, "mode")->valuedouble == 0777);
        CHECK(cJSON_GetObjectItem(e, "uid")->valuedouble == VOLUME_FS_DEFAULT_OWNER);
        cJSON_Delete(e);
        CHECK_EQ_INT(volume_fs_mkdir(root, "/a/b", NULL, true, &e), 0); /* force: exists is ok */
        cJSON_Delete(e);
        CHECK_EQ_INT(volume_fs_mkdir(root, "/file/x", NULL, false, &e), -ENOTDIR);

        /* listing: depth, sorted, links not followed */
        CHECK_EQ_INT(volume_fs_list(root, "/", 1, &e), 0);
        CHECK_EQ_INT(count_entries(e), 9); /* a dangle fifo file outside root sec tmp up */
        CHECK_EQ_INT(volume_fs_list(root, "/", 3, &e), 0);
        CHECK_EQ_INT(count_entries(e), 13); /* a/b, outside/planted, tmp/<top>/outside */
        CHECK_EQ_INT(volume_fs_list(root, "/file", 1, &e), -ENOTDIR);

        /* update through a link changes what it points to inside the volume only */
        struct volume_fs_attrs m = {.has_mode = true, .mode = 0600};
        CHECK_EQ_INT(volume_fs_update(root, "/sec", &m, &e), -ENOENT);
        CHECK_EQ_INT(volume_fs_update(root, "/file", &m, &e), 0);
        CHECK(cJSON_GetObjectItem(e, "mode")->valuedouble == 0600);
        cJSON_Delete(e);
        struct stat st;
        snprintf(p, sizeof(p), "%s/secret", top);
        CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0644);

        /* remove: a link goes, its target stays; the root is refused */
        CHECK_EQ_INT(volume_fs_remove(root, "/root"), 0);
        CHECK(access("/etc", F_OK) == 0);
        CHECK_EQ_INT(volume_fs_remove(root, "/up/sec"), 0); /* the link "sec", via .. */
        CHECK(stat(p, &st) == 0);
        CHECK_EQ_INT(volume_fs_remove(root, "/"), -EPERM);
        CHECK_EQ_INT(volume_fs_remove(root, "/nope"), -ENOENT);
        CHECK_EQ_INT(volume_fs_remove(root, "/a"), 0);

        close(root);
        CHECK_EQ_INT(rm_rf(top), 0);
}

/* C23 race: a sandbox swapping a directory for a symlink to the host while sbxd reads through
 * it. Every read gets the volume's file or an error, never the host's. */
static volatile int racing;
static char race_vol[128], race_host[128];

static void *swapper(void *arg)
{
        char dir[200], tmp[200];
        snprintf(dir, sizeof(dir), "%s/d", race_vol);
        snprintf(tmp, sizeof(tmp), "%s/d.link", race_vol);
        while (racing) {
                /* d: a real dir holding "f" (inside) <-> a link to the host dir (outside) */
                (void)unlink(tmp);
                if (symlink(race_host, tmp) == 0)
                        (void)renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE);
        }
        return arg;
}

static void test_race(void)
{
        char top2[64] = "/tmp/sbx-test-volrace.XXXXXX";
        if (!mkdtemp(top2)) {
                CHECK(0);
                return;
        }
        snprintf(race_vol, sizeof(race_vol), "%s/vol", top2);
        snprintf(race_host, sizeof(race_host), "%s/host", top2);
        CHECK(mkdir(race_vol, 0755) == 0 && mkdir(race_host, 0755) == 0);
        touch(race_host, "f", "HOST");
        mkdir_in(race_vol, "d");
        touch(race_vol, "d/f", "vol!");
        int root = -1;
        CHECK_EQ_INT(volume_fs_open_root(race_vol, &root), 0);
        pthread_t t;
        racing = 1;
        CHECK(pthread_create(&t, NULL, swapper, NULL) == 0);
        int inside = 0, leaked = 0, refused = 0;
        for (int i = 0; i < 20000; i++) {
                int fd;
                uint64_t size;
                if (volume_fs_open_read(root, "/d/f", &fd, &size) < 0) {
                        refused++;
                        continue;
                }
                char buf[8] = "";
                ssize_t n = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                if (n == 4 && memcmp(buf, "HOST", 4) == 0)
                        leaked++;
                else if (n == 4)
                        inside++;
        }
        racing = 0;
        pthread_join(t, NULL);
        CHECK_EQ_INT(leaked, 0);
        /* the race really ran both ways: the link was there at times, the dir at others */
        CHECK(inside > 0 && refused > 0);
        if (getenv("SBX_TEST_VERBOSE"))
                fprintf(stderr, "race: %d inside, %d refused\n", inside, refused);
        close(root);
        CHECK_EQ_INT(rm_rf(top2), 0);
}

int main(void)
{
        test_names();
        test_clean();
        test_fs();
        test_race();
        return unit_finish("test-volume");
}
