/* SPDX-License-Identifier: Apache-2.0 */
#include "core/keys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "macros.h"
#include "random-util.h"

bool key_format_valid(const char *key)
{
        return sbx_key_valid(key);
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

bool keys_check(struct keys *k, const char *key)
{
        bool ok = false;
        if (!key)
                return false;
        pthread_rwlock_rdlock(&k->lock);
        for (size_t i = 0; i < k->n; i++)
                ok |= const_time_streq(key, k->key[i]);
        pthread_rwlock_unlock(&k->lock);
        return ok;
}

int keys_first(struct keys *k, char out[static API_KEY_LEN + 1])
{
        int r = -ENOKEY;
        pthread_rwlock_rdlock(&k->lock);
        if (k->n > 0) {
                memcpy(out, k->key[0], API_KEY_LEN + 1);
                r = 0;
        }
        pthread_rwlock_unlock(&k->lock);
        return r;
}

int keys_generate(char out[static API_KEY_LEN + 1])
{
        memcpy(out, API_KEY_PREFIX, 4);
        return random_hex(out + 4, 20);
}

/* The keys of <state_dir>/keys: -ENOENT when there is no such file. */
static int keys_read(const char *state_dir, size_t *ret_n, char (*ret)[API_KEY_LEN + 1])
{
        char path[4096];
        if ((size_t)snprintf(path, sizeof(path), "%s/" SBX_KEYS_FILE, state_dir) >= sizeof(path))
                return -ENAMETOOLONG;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        _cleanup_free_ char *buf = NULL;
        _cleanup_(sbx_keys_file_done) struct sbx_keys_file f = {};
        size_t len;
        int r = read_all(fd, SBX_KEYS_FILE_MAX, &buf, &len);
        if (r >= 0)
                r = sbx_keys_file_parse(buf, &f);
        if (r < 0)
                return r;
        if (f.n_bad > 0)
                log_warning("%s: %zu line(s) hold no key and were skipped", path, f.n_bad);
        size_t n = 0;
        for (size_t i = 0; i < f.n; i++)
                if (f.line[i].key[0])
                        memcpy(ret[n++], f.line[i].key, API_KEY_LEN + 1);
        *ret_n = n;
        return 0;
}

static int keys_create(const char *state_dir, struct keys *k)
{
        char path[4096], line[API_KEY_LEN + 2];
        snprintf(path, sizeof(path), "%s/" SBX_KEYS_FILE, state_dir);
        int r = keys_generate(k->key[0]);
        if (r < 0)
                return r;
        _cleanup_close_ int fd =
            open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        snprintf(line, sizeof(line), "%s\n", k->key[0]);
        r = write_full(fd, line, strlen(line));
        if (r < 0 || fsync(fd) < 0) {
                unlink(path);
                return r < 0 ? r : -errno;
        }
        k->n = 1;
        return 0;
}

int keys_load_or_create(const char *state_dir, struct keys *k)
{
        *k = (struct keys){};
        pthread_rwlock_init(&k->lock, NULL);
        int r = keys_read(state_dir, &k->n, k->key);
        if (r == -ENOENT)
                return keys_create(state_dir, k);
        if (r < 0)
                return r;
        return k->n > 0 ? 0 : -ENOKEY;
}

void keys_done(struct keys *k)
{
        pthread_rwlock_destroy(&k->lock);
}

int keys_reload(const char *state_dir, struct keys *k)
{
        char fresh[KEYS_MAX][API_KEY_LEN + 1];
        size_t n = 0;
        int r = keys_read(state_dir, &n, fresh);
        if (r < 0)
                return r;
        pthread_rwlock_wrlock(&k->lock);
        memcpy(k->key, fresh, sizeof(fresh));
        k->n = n;
        pthread_rwlock_unlock(&k->lock);
        explicit_bzero(fresh, sizeof(fresh));
        if (n == 0)
                log_warning("%s/" SBX_KEYS_FILE " holds no key: every API call is refused until "
                            "one is added (sbx key create)",
                            state_dir);
        return (int)n;
}
