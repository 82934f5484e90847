/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sbx key create [--name NAME] | ls | revoke KEY|PREFIX|NAME [--state-dir DIR]: the API keys
 * file of a local sbxd (api/keys-file.h), changed under its lock and replaced atomically;
 * sbxd notices the change and puts it in force at once. Needs no running sbxd, and root (the
 * state dir is 0700).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "fd-util.h"
#include "json-util.h"
#include "keys-file.h"
#include "macros.h"
#include "random-util.h"

#define KEY_NAME_MAX   64
#define KEY_PREFIX_MIN 8 /* "e2b_" and 4 hex digits: the shortest prefix revoke takes */

struct keys_edit {
        char path[4096];
        int lock_fd;
        struct sbx_keys_file f;
};

static int usage_error(const char *what)
{
        fprintf(stderr, "usage: sbx key %s\n", what);
        return 2;
}

static int fail_errno(const char *path, int r)
{
        fprintf(stderr, "sbx: %s: %s%s\n", path, strerror(-r),
                r == -EACCES ? " (the keys file is root's: run sbx key as root)" : "");
        return 1;
}

static void edit_done(struct keys_edit *e)
{
        sbx_keys_file_done(&e->f);
        safe_close(e->lock_fd); /* and the lock with it */
}

/* Lock <state>/keys.lock and read <state>/keys (no file yet: no key). 0, or an exit code. */
static int edit_begin(const char *state_dir, struct keys_edit *e)
{
        char lock[4096];
        _cleanup_free_ char *buf = NULL;
        *e = (struct keys_edit){.lock_fd = -EBADF};
        snprintf(e->path, sizeof(e->path), "%s/" SBX_KEYS_FILE, state_dir);
        snprintf(lock, sizeof(lock), "%s/" SBX_KEYS_LOCK_FILE, state_dir);
        e->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (e->lock_fd < 0)
                return fail_errno(lock, -errno);
        if (flock(e->lock_fd, LOCK_EX) < 0)
                return fail_errno(lock, -errno);
        _cleanup_close_ int fd = open(e->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        size_t len;
        int r =
            fd < 0 ? (errno == ENOENT ? 0 : -errno) : read_all(fd, SBX_KEYS_FILE_MAX, &buf, &len);
        if (r >= 0)
                r = sbx_keys_file_parse(buf ? buf : "", &e->f);
        return r < 0 ? fail_errno(e->path, r) : 0;
}

static int edit_commit(struct keys_edit *e)
{
        _cleanup_free_ char *text = NULL;
        int r = sbx_keys_file_format(&e->f, &text);
        if (r >= 0)
                r = write_file_atomic(e->path, text, strlen(text), 0600);
        return r < 0 ? fail_errno(e->path, r) : 0;
}

/* "name=X created=Y" out of a label; "" for what it lacks. */
static void label_field(const char *label, const char *field, char *out, size_t len)
{
        size_t fl = strlen(field);
        out[0] = 0;
        for (const char *p = label; (p = strstr(p, field)); p += fl)
                if ((p == label || p[-1] == ' ') && p[fl] == '=') {
                        size_t v = strcspn(p + fl + 1, " ");
                        snprintf(out, len, "%.*s", (int)MIN(v, len - 1), p + fl + 1);
                        return;
                }
}

/* e2b_1a2b...9f0e: enough to tell keys apart, not enough to use one. */
static void masked(const char *key, char out[32])
{
        snprintf(out, 32, "%.8s...%s", key, key + SBX_KEY_LEN - 4);
}

static bool name_valid(const char *n)
{
        size_t l = strlen(n);
        return l > 0 && l <= KEY_NAME_MAX &&
               strspn(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == l;
}

static int key_create(const char *state_dir, const char *name)
{
        _cleanup_(edit_done) struct keys_edit e = {.lock_fd = -EBADF};
        char key[SBX_KEY_LEN + 1], created[32], other[KEY_NAME_MAX + 1];
        if (name && !name_valid(name)) {
                fprintf(stderr, "sbx: bad key name '%s' ([A-Za-z0-9._-], at most %d)\n", name,
                        KEY_NAME_MAX);
                return 2;
        }
        int r = edit_begin(state_dir, &e);
        if (r != 0)
                return r;
        if (e.f.n_keys >= SBX_KEYS_MAX) {
                fprintf(stderr,
                        "sbx: %s holds %d keys already (the most sbxd reads): revoke one "
                        "first\n",
                        e.path, SBX_KEYS_MAX);
                return 1;
        }
        for (size_t i = 0; name && i < e.f.n; i++) {
                label_field(e.f.line[i].label, "name", other, sizeof(other));
                if (e.f.line[i].key[0] && strcmp(other, name) == 0) {
                        fprintf(stderr, "sbx: a key named '%s' exists already\n", name);
                        return 1;
                }
        }
        memcpy(key, SBX_KEY_PREFIX, 4);
        if ((r = random_hex(key + 4, 20)) < 0)
                return fail_errno("getrandom", r);
        time_t now = time(NULL);
        strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        struct sbx_key_line *nl = reallocarray(e.f.line, e.f.n + 1, sizeof(*nl));
        if (!nl)
                return fail_errno(e.path, -ENOMEM);
        e.f.line = nl;
        nl[e.f.n] = (struct sbx_key_line){};
        memcpy(nl[e.f.n].key, key, sizeof(key));
        snprintf(nl[e.f.n].label, sizeof(nl[e.f.n].label), "%s%s%screated=%s", name ? "name=" : "",
                 name ? name : "", name ? " " : "", created);
        e.f.n++;
        if ((r = edit_commit(&e)) != 0)
                return r;
        printf("%s\n", key);
        return 0;
}

static int key_list(const struct cli *c, const char *state_dir)
{
        _cleanup_(edit_done) struct keys_edit e = {.lock_fd = -EBADF};
        int r = edit_begin(state_dir, &e);
        if (r != 0)
                return r;
        _cleanup_json_ cJSON *arr = c->json ? cJSON_CreateArray() : NULL;
        if (!c->json)
                printf("%-18s %-20s %s\n", "KEY", "NAME", "CREATED");
        for (size_t i = 0; i < e.f.n; i++) {
                const struct sbx_key_line *l = &e.f.line[i];
                char m[32], name[KEY_NAME_MAX + 1], created[32];
                if (!l->key[0])
                        continue;
                masked(l->key, m);
                label_field(l->label, "name", name, sizeof(name));
                label_field(l->label, "created", created, sizeof(created));
                if (!c->json) {
                        printf("%-18s %-20s %s\n", m, *name ? name : "-", *created ? created : "-");
                        continue;
                }
                cJSON *o = cJSON_CreateObject();
                if (!o || !cJSON_AddItemToArray(arr, o) || !cJSON_AddStringToObject(o, "key", m) ||
                    !cJSON_AddStringToObject(o, "name", name) ||
                    !cJSON_AddStringToObject(o, "created", created))
                        return 1;
        }
        if (c->json) {
                _cleanup_free_ char *t = cJSON_PrintUnformatted(arr);
                if (!t)
                        return 1;
                printf("%s\n", t);
        }
        return 0;
}

/* The line of the one key that `which` names: the key, its name, or a unique prefix. */
static int find_key(const struct sbx_keys_file *f, const char *which, size_t *ret)
{
        size_t found = SIZE_MAX, n = 0;
        bool prefix_ok = strlen(which) >= KEY_PREFIX_MIN;
        for (size_t i = 0; i < f->n; i++) {
                char name[KEY_NAME_MAX + 1];
                const struct sbx_key_line *l = &f->line[i];
                if (!l->key[0])
                        continue;
                label_field(l->label, "name", name, sizeof(name));
                if (strcmp(l->key, which) == 0 || strcmp(name, which) == 0) {
                        *ret = i;
                        return 0;
                }
                if (prefix_ok && strncmp(l->key, which, strlen(which)) == 0) {
                        found = i;
                        n++;
                }
        }
        if (n == 1) {
                *ret = found;
                return 0;
        }
        return n > 1 ? -ENOTUNIQ : -ENOENT;
}

static int key_revoke(const char *state_dir, const char *which)
{
        _cleanup_(edit_done) struct keys_edit e = {.lock_fd = -EBADF};
        int r = edit_begin(state_dir, &e);
        size_t i;
        if (r != 0)
                return r;
        r = find_key(&e.f, which, &i);
        if (r < 0) {
                fprintf(stderr,
                        "sbx: %s '%s' (give the key, its name, or at least its first %d "
                        "characters)\n",
                        r == -ENOTUNIQ ? "more than one key starts with" : "no key matches", which,
                        KEY_PREFIX_MIN);
                return 1;
        }
        if (e.f.n_keys == 1) {
                fprintf(stderr, "sbx: that is the last key: create another first (sbx key "
                                "create), or nothing could call sbxd\n");
                return 1;
        }
        char m[32];
        masked(e.f.line[i].key, m);
        memmove(&e.f.line[i], &e.f.line[i + 1], (e.f.n - i - 1) * sizeof(e.f.line[0]));
        e.f.n--;
        if ((r = edit_commit(&e)) != 0)
                return r;
        printf("revoked %s\n", m);
        return 0;
}

int cli_cmd_key(struct cli *c, int argc, char **argv)
{
        const char *state_dir = c->state_dir, *name = NULL, *args[2] = {};
        int n = 0;
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc)
                        state_dir = argv[++i];
                else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
                        name = argv[++i];
                else if (argv[i][0] == '-' || n == 2)
                        return usage_error("create [--name NAME] | ls | revoke KEY|PREFIX|NAME "
                                           "[--state-dir DIR]");
                else
                        args[n++] = argv[i];
        }
        if (n == 1 && strcmp(args[0], "create") == 0)
                return key_create(state_dir, name);
        if (n == 1 && !name && (strcmp(args[0], "ls") == 0 || strcmp(args[0], "list") == 0))
                return key_list(c, state_dir);
        if (n == 2 && !name && strcmp(args[0], "revoke") == 0)
                return key_revoke(state_dir, args[1]);
        return usage_error("create [--name NAME] | ls | revoke KEY|PREFIX|NAME [--state-dir DIR]");
}
