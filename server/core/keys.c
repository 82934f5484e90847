/* SPDX-License-Identifier: Apache-2.0 */
#include "core/keys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macros.h"
#include "random-util.h"

bool key_format_valid(const char *key)
{
        if (!key || strlen(key) != API_KEY_LEN || strncmp(key, API_KEY_PREFIX, 4) != 0)
                return false;
        for (const char *p = key + 4; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

bool const_time_streq(const char *a, const char *b)
{
        if (!a || !b)
                return false;
        size_t la = strlen(a), lb = strlen(b);
        /* Compare over b's length (the secret's) so the time leaks nothing about a's bytes. */
        volatile unsigned char d = (unsigned char)(la != lb);
        for (size_t i = 0; i < lb; i++) {
                unsigned char ca = i < la ? (unsigned char)a[i] : 0;
                d |= (unsigned char)(ca ^ (unsigned char)b[i]);
        }
        return d == 0;
}

bool keys_check(const struct keys *k, const char *key)
{
        bool ok = false;
        if (!key)
                return false;
        for (size_t i = 0; i < k->n; i++)
                ok |= const_time_streq(key, k->key[i]);
        return ok;
}

int keys_generate(char out[static API_KEY_LEN + 1])
{
        memcpy(out, API_KEY_PREFIX, 4);
        return random_hex(out + 4, 20);
}

static int keys_parse(const char *buf, struct keys *ret)
{
        struct keys k = {};
        const char *p = buf;
        while (*p && k.n < KEYS_MAX) {
                size_t l = strcspn(p, "\n");
                char line[128];
                if (l < sizeof(line)) {
                        memcpy(line, p, l);
                        line[l] = 0;
                        /* tolerate trailing spaces / CR */
                        while (l > 0 && (line[l - 1] == ' ' || line[l - 1] == '\r'))
                                line[--l] = 0;
                        if (key_format_valid(line))
                                memcpy(k.key[k.n++], line, API_KEY_LEN + 1);
                }
                p += l;
                if (*p == '\n')
                        p++;
        }
        *ret = k;
        return 0;
}

int keys_load_or_create(const char *state_dir, struct keys *ret)
{
        char path[4096];
        if ((size_t)snprintf(path, sizeof(path), "%s/keys", state_dir) >= sizeof(path))
                return -ENAMETOOLONG;

        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
                _cleanup_free_ char *buf = NULL;
                size_t len;
                int r = read_all(fd, 64 * 1024, &buf, &len);
                if (r < 0)
                        return r;
                r = keys_parse(buf, ret);
                if (r < 0)
                        return r;
                return ret->n > 0 ? 0 : -ENOKEY;
        }
        if (errno != ENOENT)
                return -errno;

        struct keys k = {.n = 1};
        int r = keys_generate(k.key[0]);
        if (r < 0)
                return r;
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        char line[API_KEY_LEN + 2];
        snprintf(line, sizeof(line), "%s\n", k.key[0]);
        r = write_full(fd, line, strlen(line));
        if (r < 0 || fsync(fd) < 0) {
                unlink(path);
                return r < 0 ? r : -errno;
        }
        *ret = k;
        return 0;
}
