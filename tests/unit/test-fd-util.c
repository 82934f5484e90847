/* SPDX-License-Identifier: Apache-2.0 */
/* write_file_atomic: replaces a file whole, leaves no temporary file behind, and on failure
 * leaves the old contents in place; rm_rf removes a tree without following symlinks, and
 * rm_rf_at_depth no deeper than asked;
 * dir_names_sorted lists a directory in name order, within its bound. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd-util.h"
#include "macros.h"
#include "unit.h"

static char tmp[] = "/tmp/sbx-test-fd-util.XXXXXX";

static int count_entries(const char *dir)
{
        DIR *d = opendir(dir);
        int n = 0;
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        n++;
        if (d)
                closedir(d);
        return n;
}

static void test_atomic(void)
{
        char path[256], sub[256];
        snprintf(path, sizeof(path), "%s/record.json", tmp);
        CHECK_EQ_INT(write_file_atomic(path, "first\n", 6, 0600), 0);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        CHECK(fd >= 0 && read_all(fd, 1024, &text, &len) >= 0);
        CHECK_STREQ(text, "first\n");
        struct stat st;
        CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);

        CHECK_EQ_INT(write_file_atomic(path, "second", 6, 0600), 0);
        _cleanup_close_ int fd2 = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *text2 = NULL;
        CHECK(fd2 >= 0 && read_all(fd2, 1024, &text2, &len) >= 0);
        CHECK_STREQ(text2, "second");
        CHECK_EQ_INT(count_entries(tmp), 1); /* no temporary file left */

        /* A directory in the way of the rename: the old file stays, nothing is left behind. */
        snprintf(sub, sizeof(sub), "%s/dir", tmp);
        CHECK(mkdir(sub, 0700) == 0);
        snprintf(path, sizeof(path), "%s/dir/x", tmp);
        CHECK(mkdir(path, 0700) == 0);
        CHECK(write_file_atomic(path, "x", 1, 0600) < 0);
        CHECK_EQ_INT(count_entries(sub), 1);
        /* A missing directory. */
        snprintf(path, sizeof(path), "%s/missing/x", tmp);
        CHECK_EQ_INT(write_file_atomic(path, "x", 1, 0600), -ENOENT);
}

static void test_rm_rf(void)
{
        char p[256], outside[256];
        snprintf(outside, sizeof(outside), "%s/outside", tmp);
        CHECK(mkdir(outside, 0700) == 0);
        snprintf(p, sizeof(p), "%s/outside/keep", tmp);
        CHECK(write_file_atomic(p, "k", 1, 0600) == 0);
        snprintf(p, sizeof(p), "%s/tree", tmp);
        CHECK(mkdir(p, 0700) == 0);
        snprintf(p, sizeof(p), "%s/tree/a", tmp);
        CHECK(mkdir(p, 0700) == 0);
        snprintf(p, sizeof(p), "%s/tree/a/link", tmp);
        CHECK(symlink(outside, p) == 0);
        snprintf(p, sizeof(p), "%s/tree", tmp);
        CHECK_EQ_INT(rm_rf(p), 0);
        CHECK(access(p, F_OK) < 0);
        snprintf(p, sizeof(p), "%s/outside/keep", tmp);
        CHECK(access(p, F_OK) == 0); /* the symlink's target was not followed */
        CHECK_EQ_INT(rm_rf("/nonexistent/sbx-test"), 0);
}

/* rm_rf_at_depth: a tree deeper than its bound is -ELOOP, what is within the bound goes all the
 * same; with room enough, all of it goes. */
static void test_rm_rf_depth(void)
{
        char p[256];
        snprintf(p, sizeof(p), "%s/deep", tmp);
        CHECK(mkdir(p, 0700) == 0);
        _cleanup_close_ int dfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(dfd >= 0);
        static const char *const dirs[] = {"t", "t/a", "t/a/b", "t/a/b/c"};
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                CHECK(mkdirat(dfd, dirs[i], 0700) == 0);
        _cleanup_close_ int f = openat(dfd, "t/file", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        CHECK(f >= 0);
        CHECK_EQ_INT(rm_rf_at_depth(dfd, "t", 1), -ELOOP); /* a is entered, b is not */
        CHECK(faccessat(dfd, "t/file", F_OK, 0) < 0);
        CHECK(faccessat(dfd, "t/a/b/c", F_OK, 0) == 0);
        CHECK_EQ_INT(rm_rf_at_depth(dfd, "t", 2), -ELOOP); /* c is three levels below t */
        CHECK_EQ_INT(rm_rf_at_depth(dfd, "t", 3), 0);
        CHECK(faccessat(dfd, "t", F_OK, 0) < 0);
        CHECK_EQ_INT(rm_rf_at_depth(dfd, "t", 3), -ENOENT);
}

/* A tree as deep as a sandbox can make one (in a volume, say), a file on every level and a
 * directory already named like rm_rf's own moved subtrees: rm_rf takes all of it in a child
 * whose RLIMIT_NOFILE leaves room for RM_RF_HOLD levels (two descriptors each) and no more. */
static void test_rm_rf_unbounded(void)
{
        enum { LEVELS = 3000 };
        char p[256];
        snprintf(p, sizeof(p), "%s/abyss", tmp);
        CHECK(mkdir(p, 0700) == 0);
        int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(fd >= 0);
        CHECK(mkdirat(fd, ".sbx-rm.0", 0700) == 0);
        CHECK(mkdirat(fd, ".sbx-rm.0/x", 0700) == 0);
        bool made = fd >= 0;
        for (int i = 0; i < LEVELS && made; i++) {
                int f = openat(fd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
                made = f >= 0 && mkdirat(fd, "d", 0700) == 0;
                safe_close(f);
                int sub = made ? openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
                safe_close(fd);
                fd = sub;
                made = fd >= 0;
        }
        safe_close(fd);
        CHECK(made);
        pid_t pid = fork();
        if (pid == 0) {
                struct rlimit rl = {2 * RM_RF_HOLD + 16, 2 * RM_RF_HOLD + 16};
                _exit(setrlimit(RLIMIT_NOFILE, &rl) == 0 && rm_rf(p) == 0 ? 0 : 1);
        }
        int status = -1;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CHECK(access(p, F_OK) < 0 && errno == ENOENT);
}

/* send_all_wait(): everything arrives, even past the socket buffer while the peer reads; a peer
 * that never reads is -ETIMEDOUT, one that left is -EPIPE, and neither blocks in send(). */
static bool not_a(const char *name)
{
        return name[0] != 'a';
}

static void test_dir_names(void)
{
        char dir[256], p[300];
        char **v = NULL;
        size_t n = 99;
        snprintf(dir, sizeof(dir), "%s/names", tmp);
        CHECK_EQ_INT(mkdir(dir, 0700), 0);
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(dfd >= 0);
        CHECK_EQ_INT(dir_names_sorted(dfd, 10, NULL, &v, &n), 0);
        CHECK_EQ_INT(n, 0);
        CHECK(v && v[0] == NULL);
        free(v);
        static const char *const made[] = {"b", "a.txt", "C", "a"};
        for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
                snprintf(p, sizeof(p), "%s/%s", dir, made[i]);
                CHECK_EQ_INT(mkdir(p, 0700), 0);
        }
        CHECK_EQ_INT(dir_names_sorted(dfd, 4, NULL, &v, &n), 0);
        CHECK_EQ_INT(n, 4);
        if (n == 4) {
                CHECK_STREQ(v[0], "C");
                CHECK_STREQ(v[1], "a");
                CHECK_STREQ(v[2], "a.txt");
                CHECK_STREQ(v[3], "b");
                CHECK(v[4] == NULL);
        }
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
        /* a filter: what it refuses is not listed, nor counted against the bound */
        CHECK_EQ_INT(dir_names_sorted(dfd, 2, not_a, &v, &n), 0);
        CHECK_EQ_INT(n, 2);
        if (n == 2) {
                CHECK_STREQ(v[0], "C");
                CHECK_STREQ(v[1], "b");
                CHECK(v[2] == NULL);
        }
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
        /* the same descriptor again: read from its start, and refused past the bound */
        CHECK_EQ_INT(dir_names_sorted(dfd, 3, NULL, &v, &n), -ERANGE);
        CHECK_EQ_INT(dir_names_sorted(-1, 3, NULL, &v, &n), -EBADF);
}

static void test_send_all_wait(void)
{
        int sv[2];
        size_t len = 4u << 20, got = 0;
        _cleanup_free_ char *data = malloc(len), *back = malloc(len);

        CHECK(data && back);
        if (!data || !back)
                return;
        for (size_t i = 0; i < len; i++)
                data[i] = (char)(i * 7);
        CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        pid_t pid = fork();
        if (pid == 0) { /* the reader: slow at first, then everything */
                usleep(50 * 1000);
                while (got < len) {
                        ssize_t n = read(sv[1], back + got, len - got);
                        if (n <= 0)
                                _exit(2);
                        got += (size_t)n;
                }
                _exit(memcmp(back, data, len) == 0 ? 0 : 3);
        }
        CHECK_EQ_INT(send_all_wait(sv[0], data, len, 5000), 0);
        int st = -1;
        waitpid(pid, &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

        /* nobody reads: the buffer fills, then one wait of 100 ms */
        CHECK_EQ_INT(send_all_wait(sv[0], data, len, 100), -ETIMEDOUT);
        close(sv[1]);
        CHECK_EQ_INT(send_all_wait(sv[0], data, 16, 100), -EPIPE);
        close(sv[0]);
}

int main(void)
{
        if (!mkdtemp(tmp))
                return 1;
        test_atomic();
        test_rm_rf();
        test_rm_rf_depth();
        test_rm_rf_unbounded();
        test_dir_names();
        test_send_all_wait();
        rm_rf(tmp);
        return unit_finish("test-fd-util");
}
