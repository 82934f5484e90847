/* SPDX-License-Identifier: Apache-2.0 */
/* What every native handler shares: the native error shape, JSON bodies, query values, users,
 * argv and UTF-8 clean-up. */
#include "native/native.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/http.h"
#include "envd/process-rpc.h"
#include "format-util.h"
#include "json-util.h"
#include "macros.h"
#include "native-error.h"

/* Cut s to at most max bytes without splitting a UTF-8 sequence. */
static void utf8_truncate(char *s, size_t max)
{
        size_t n = strlen(s);

        if (n <= max)
                return;
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
                n--;
        s[n] = 0;
}

/* The native error answer, without touching the request body (a shared handler may answer
 * in the middle of an upload, and sbxd stops sending then). */
static int reply_error(struct agent_request *r, int status, const char *code, char *msg)
{
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        _cleanup_free_ char *body = NULL;
        cJSON *e;

        utf8_truncate(msg, NATIVE_MESSAGE_MAX);
        if (!o || !(e = cJSON_AddObjectToObject(o, "error")) ||
            !cJSON_AddStringToObject(e, "code", code) ||
            !cJSON_AddStringToObject(e, "message",
                                     *msg ? msg : "the sandbox refused the request") ||
            !(body = cJSON_PrintUnformatted(o)))
                return -ENOMEM;
        return agent_respond(r, status, "application/json", body, strlen(body));
}

int native_rest_error(struct agent_request *r, int status, const char *message)
{
        _cleanup_free_ char *msg = strdup(message ? message : "");

        if (!msg)
                return -ENOMEM;
        return reply_error(r, status, sbx_native_error_code(status), msg);
}

int native_error(struct agent_request *r, int status, const char *code, const char *fmt, ...)
{
        _cleanup_free_ char *msg = FORMAT_VARARGS_DUP(fmt);

        if (!msg)
                return -ENOMEM;
        if (!r->body_done)
                (void)agent_request_discard_body(r, NATIVE_MAX_BODY);
        return reply_error(r, status, code, msg);
}

int native_handle_not_found(struct agent_request *r)
{
        return native_error(r, 404, "not_found", "no such route: %s %s", r->head.method,
                            r->head.path);
}

int native_json(struct agent_request *r, int status, const cJSON *o)
{
        _cleanup_free_ char *body = cJSON_PrintUnformatted(o);
        if (!body)
                return native_error(r, 500, "internal", "out of memory");
        return agent_respond(r, status, "application/json", body, strlen(body));
}

int native_read_json(struct agent_request *r, cJSON **ret)
{
        _cleanup_free_ uint8_t *body = NULL;
        size_t len;
        int e = agent_request_read_body_all(r, NATIVE_MAX_BODY, &body, &len);
        if (e == -EMSGSIZE)
                return native_error(r, 413, "payload_too_large",
                                    "request body larger than %u bytes", NATIVE_MAX_BODY);
        if (e < 0)
                return e;
        cJSON *o = len ? cJSON_ParseWithLength((const char *)body, len) : cJSON_CreateObject();
        if (!cJSON_IsObject(o)) {
                cJSON_Delete(o);
                return native_error(r, 400, "bad_request", "the body must be a JSON object");
        }
        *ret = o;
        return 0;
}

char *native_query(const struct agent_request *r, const char *key)
{
        char *v = NULL;
        return http_query_get(r->head.query, key, &v) > 0 ? v : NULL;
}

int native_user_name(const char *v, const char **ret)
{
        if (!v || !*v)
                *ret = NULL;
        else if (strcmp(v, "user") == 0 || strcmp(v, "root") == 0)
                *ret = strcmp(v, "root") == 0 ? "root" : "user";
        else
                return -EINVAL;
        return 0;
}

/* name (NULL: the /init default user) looked up; *ret_name set (caller frees) also when it
 * is unknown (-ENOENT, as agent_user_lookup()). */
static int user_lookup(const char *name, struct agent_user *ret, char **ret_name)
{
        _cleanup_free_ char *n = NULL;
        int e;

        if (name)
                n = strdup(name);
        else if ((e = agent_config_default_user(&n)) < 0)
                return e;
        if (!n)
                return -ENOMEM;
        e = agent_user_lookup(n, ret);
        *ret_name = TAKE_PTR(n);
        return e;
}

int native_spawn(struct agent_request *r, const char *user, const struct agent_proc_spec *spec,
                 const cJSON *list_envs, const char *list_cwd, const char *what,
                 int (*admit)(struct agent_request *r), struct agent_proc **ret)
{
        _cleanup_(agent_user_done) struct agent_user u = {0};
        _cleanup_json_ cJSON *config = NULL;
        _cleanup_free_ char *name = NULL;
        char err[AGENT_PROC_ERR_MAX];
        int e;

        e = user_lookup(user, &u, &name);
        if (e == -ENOENT || e == -EINVAL)
                return native_error(r, 400, "bad_request", "%sinvalid username: '%s'", what,
                                    name ? name : "");
        if (e < 0)
                return native_error(r, 400, "bad_request", "%suser lookup: %s", what, strerror(-e));
        /* The caller's spec stays as it was: the user and config live in this frame only. */
        struct agent_proc_spec run = *spec;
        run.user = &u;
        run.config = config = agent_process_config_json(spec->argv, list_envs, list_cwd);
        if (!config)
                return native_error(r, 500, "internal", "out of memory");
        if (admit && (e = admit(r)) != 0)
                return e;
        e = agent_proc_spawn(&run, ret, err);
        if (e == -EIO)
                return native_error(r, 500, "internal", "%s%s", what, err);
        if (e < 0)
                return native_error(r, 400, "bad_request", "%s%s", what, err);
        return 0;
}

int native_argv(const cJSON *cmd, char ***ret, const char **ret_msg)
{
        size_t n = 0, i = 0;
        const cJSON *e;
        char **l;

        if (cJSON_IsString(cmd) && *cmd->valuestring) {
                l = calloc(4, sizeof(char *));
                if (!l || !(l[0] = strdup("/bin/sh")) || !(l[1] = strdup("-c")) ||
                    !(l[2] = strdup(cmd->valuestring)))
                        goto oom;
                *ret = l;
                return 0;
        }
        *ret_msg = "cmd must be a non-empty array of strings or a non-empty string";
        if (!cJSON_IsArray(cmd) || (n = (size_t)cJSON_GetArraySize(cmd)) == 0 || n > 4096)
                return -EINVAL;
        cJSON_ArrayForEach(e, cmd)
        {
                if (!cJSON_IsString(e) || (i++ == 0 && !*e->valuestring))
                        return -EINVAL;
        }
        l = calloc(n + 1, sizeof(char *));
        i = 0;
        if (!l)
                return -ENOMEM;
        cJSON_ArrayForEach(e, cmd)
        {
                if (!(l[i++] = strdup(e->valuestring)))
                        goto oom;
        }
        *ret = l;
        return 0;
oom:
        strv_free(l);
        return -ENOMEM;
}

static size_t utf8_seq(const uint8_t *s, size_t left)
{
        uint8_t c = s[0];
        size_t n;
        uint32_t cp;

        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                n = 2, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
                n = 3, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
                n = 4, cp = c & 0x07;
        else
                return 0;
        if (n > left)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
                return 0;
        return n;
}

char *native_utf8_dup(const uint8_t *s, size_t len)
{
        char *out = malloc(len * 3 + 1), *o = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < len;) {
                size_t n = utf8_seq(s + i, len - i);
                if (n == 0 || (n == 1 && s[i] == 0)) {
                        memcpy(o, "\xef\xbf\xbd", 3);
                        o += 3;
                        i++;
                        continue;
                }
                memcpy(o, s + i, n);
                o += n;
                i += n;
        }
        *o = 0;
        return out;
}
