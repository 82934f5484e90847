/* SPDX-License-Identifier: Apache-2.0 */
#include "pull/pull-auth.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <nettle/base64.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fd-util.h"
#include "json-util.h"
#include "macros.h"
#include "pull/pull-ref.h"

static const char *skip_ws(const char *s)
{
        while (*s == ' ' || *s == '\t')
                s++;
        return s;
}

static bool tchar(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A token or a quoted string at *s into out (cut at size - 1); *s moves past it. */
static int read_value(const char **s, char *out, size_t size)
{
        const char *p = *s;
        size_t o = 0;
        if (*p == '"') {
                for (p++; *p && *p != '"'; p++) {
                        if (*p == '\\' && p[1])
                                p++;
                        if (o + 1 < size)
                                out[o++] = *p;
                }
                if (*p != '"')
                        return -EINVAL;
                p++;
        } else {
                /* a token, or what a lax server sends unquoted (a URL): up to ',' or space */
                while (*p && *p != ',' && *p != ' ' && *p != '\t') {
                        if (o + 1 < size)
                                out[o++] = *p;
                        p++;
                }
        }
        out[o] = 0;
        *s = p;
        return 0;
}

int pull_challenge_parse(const char *value, struct pull_challenge *ret)
{
        struct pull_challenge c = {};
        const char *p = skip_ws(value ? value : "");
        size_t n = 0;
        while (tchar(p[n]))
                n++;
        if (n == 0 || n >= sizeof(c.scheme))
                return -EINVAL;
        memcpy(c.scheme, p, n);
        if (strcasecmp(c.scheme, "Bearer") != 0 && strcasecmp(c.scheme, "Basic") != 0)
                return -EINVAL;
        p = skip_ws(p + n);
        while (*p) {
                char key[32], val[1024];
                size_t k = 0;
                while (tchar(p[k]))
                        k++;
                if (k == 0 || k >= sizeof(key) || p[k] != '=')
                        break; /* the next challenge, or junk: what we have is it */
                memcpy(key, p, k);
                key[k] = 0;
                p = skip_ws(p + k + 1);
                if (read_value(&p, val, sizeof(val)) < 0)
                        return -EINVAL;
                if (strcasecmp(key, "realm") == 0)
                        snprintf(c.realm, sizeof(c.realm), "%.1023s", val);
                else if (strcasecmp(key, "service") == 0)
                        snprintf(c.service, sizeof(c.service), "%.255s", val);
                else if (strcasecmp(key, "scope") == 0)
                        snprintf(c.scope, sizeof(c.scope), "%.511s", val);
                p = skip_ws(p);
                if (*p != ',')
                        break;
                p = skip_ws(p + 1);
        }
        if (strcasecmp(c.scheme, "Bearer") == 0 && !c.realm[0])
                return -EINVAL;
        *ret = c;
        return 0;
}

int pull_creds_set(struct pull_creds *c, const char *user, const char *password)
{
        if (!user || !password || !*user || !*password || strlen(user) > PULL_CRED_MAX ||
            strlen(password) > PULL_CRED_MAX)
                return -EINVAL;
        pull_creds_done(c);
        c->username = strdup(user);
        c->password = strdup(password);
        if (!c->username || !c->password) {
                pull_creds_done(c);
                return -ENOMEM;
        }
        return 0;
}

static void wipe_free(char **s)
{
        if (*s) {
                explicit_bzero(*s, strlen(*s));
                free(*s);
                *s = NULL;
        }
}

void pull_creds_done(struct pull_creds *c)
{
        wipe_free(&c->username);
        wipe_free(&c->password);
}

/* A config.json key as HOST[:PORT]: a scheme and a path dropped; Docker Hub's names as
 * "docker.io". */
static void key_host(const char *key, char *out, size_t size)
{
        const char *k = key;
        if (strncmp(k, "https://", 8) == 0)
                k += 8;
        else if (strncmp(k, "http://", 7) == 0)
                k += 7;
        size_t n = strcspn(k, "/");
        snprintf(out, size, "%.*s", (int)MIN(n, size - 1), k);
        for (char *p = out; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char)(*p + 32);
        if (strcmp(out, "index.docker.io") == 0 || strcmp(out, PULL_DOCKER_HUB_API) == 0)
                snprintf(out, size, PULL_DOCKER_HUB);
}

/* "auth": base64 of user:password. */
static int decode_auth(const char *b64, struct pull_creds *ret)
{
        size_t in = strlen(b64), out = BASE64_DECODE_LENGTH(in);
        if (in > 4 * PULL_CRED_MAX)
                return -EINVAL;
        _cleanup_free_ char *raw = malloc(out + 1);
        struct base64_decode_ctx ctx;
        if (!raw)
                return -ENOMEM;
        base64_decode_init(&ctx);
        int r =
            base64_decode_update(&ctx, &out, (uint8_t *)raw, in, b64) && base64_decode_final(&ctx)
                ? 0
                : -EINVAL;
        raw[r >= 0 ? out : 0] = 0;
        char *colon = r >= 0 ? strchr(raw, ':') : NULL;
        if (colon) {
                *colon = 0;
                r = pull_creds_set(ret, raw, colon + 1);
        } else {
                r = -EINVAL;
        }
        explicit_bzero(raw, out);
        return r;
}

int pull_creds_from_docker_config(const char *json, size_t len, const char *host,
                                  struct pull_creds *ret)
{
        _cleanup_json_ cJSON *j = cJSON_ParseWithLength(json, len);
        const cJSON *auths = cJSON_GetObjectItemCaseSensitive(j, "auths"), *e;
        if (!cJSON_IsObject(j))
                return -EINVAL;
        cJSON_ArrayForEach(e, auths)
        {
                char h[PULL_HOST_MAX];
                key_host(e->string, h, sizeof(h));
                if (strcmp(h, host) != 0 || !cJSON_IsObject(e))
                        continue;
                const char *a = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "auth"));
                const char *u =
                    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "username"));
                const char *p =
                    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "password"));
                int r = a && *a ? decode_auth(a, ret) : u && p ? pull_creds_set(ret, u, p) : 0;
                if (r < 0)
                        return r;
                if (r == 0 && ret->username)
                        return 1;
        }
        return 0;
}

int pull_creds_lookup(const char *host, struct pull_creds *ret)
{
        char path[4096];
        const char *dir = getenv("DOCKER_CONFIG"), *home = getenv("HOME");
        if (dir && *dir)
                snprintf(path, sizeof(path), "%s/config.json", dir);
        else if (home && *home)
                snprintf(path, sizeof(path), "%s/.docker/config.json", home);
        else
                return 0;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
        int r = read_all(fd, PULL_DOCKER_CONFIG_MAX, &text, &len);
        if (r < 0)
                return r;
        r = pull_creds_from_docker_config(text, len, host, ret);
        explicit_bzero(text, len);
        return r;
}
