/* SPDX-License-Identifier: Apache-2.0 */
/*
 * process.Process/Start (docs/e2b-wire.md §3.3): the StartRequest becomes a process of the
 * table (agent_proc_spawn()), and its events become ProcessEvents on the Connect stream
 * (envd/process-stream.h). This connection's thread pumps the process; when the client leaves,
 * the process keeps running and its output goes to its retained log only, for Connect.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/config.h"
#include "envd/connect-json.h"
#include "envd/process-rpc.h"
#include "envd/process-stream.h"
#include "json-util.h"
#include "macros.h"
#include "proc/process-env.h"
#include "proc/process.h"

#define MAX_ARGS         4096u
#define MAX_REQUEST_ENVS 4096u

struct start_request {
        cJSON *root;
        const cJSON *process;
        const char *cmd;
        const char *cwd; /* NULL when absent */
        const char *tag;
        const cJSON *args;
        const cJSON *envs;
        bool stdin_pipe;
        bool pty;
        unsigned short cols, rows;
};

/* A uint32 PTY.Size field, clamped to what a winsize holds; def when absent or 0. */
static unsigned short pty_dimension(const cJSON *j, unsigned short def)
{
        if (!cJSON_IsNumber(j) || j->valuedouble < 1)
                return def;
        return j->valuedouble > 65535 ? 65535 : (unsigned short)j->valuedouble;
}

/* Validate the JSON and point into it. -EINVAL with a message in *ret_msg. */
static int start_request_parse(const char *json, size_t len, struct start_request *ret,
                               const char **ret_msg)
{
        cJSON *root = cJSON_ParseWithLength(json, len);
        const cJSON *j, *e;
        struct start_request q = {.root = root, .stdin_pipe = true};

        *ret_msg = "invalid StartRequest JSON";
        if (!root || !cJSON_IsObject(root))
                goto bad;
        q.process = cJSON_GetObjectItemCaseSensitive(root, "process");
        if (!cJSON_IsObject(q.process)) {
                *ret_msg = "process config is required";
                goto bad;
        }
        j = cJSON_GetObjectItemCaseSensitive(q.process, "cmd");
        if (!cJSON_IsString(j) || !*j->valuestring) {
                *ret_msg = "process.cmd must be a non-empty string";
                goto bad;
        }
        q.cmd = j->valuestring;
        q.args = cJSON_GetObjectItemCaseSensitive(q.process, "args");
        if (q.args && !cJSON_IsNull(q.args)) {
                if (!cJSON_IsArray(q.args) || (unsigned)cJSON_GetArraySize(q.args) > MAX_ARGS)
                        goto bad;
                cJSON_ArrayForEach(e, q.args)
                {
                        if (!cJSON_IsString(e))
                                goto bad;
                }
        } else
                q.args = NULL;
        q.envs = cJSON_GetObjectItemCaseSensitive(q.process, "envs");
        if (q.envs && !cJSON_IsNull(q.envs)) {
                if (!cJSON_IsObject(q.envs) ||
                    (unsigned)cJSON_GetArraySize(q.envs) > MAX_REQUEST_ENVS)
                        goto bad;
                cJSON_ArrayForEach(e, q.envs)
                {
                        if (!cJSON_IsString(e) || !*e->string || strchr(e->string, '=')) {
                                *ret_msg = "process.envs must map names to strings";
                                goto bad;
                        }
                }
        } else
                q.envs = NULL;
        j = cJSON_GetObjectItemCaseSensitive(q.process, "cwd");
        if (j && !cJSON_IsNull(j)) {
                if (!cJSON_IsString(j))
                        goto bad;
                q.cwd = j->valuestring;
        }
        j = cJSON_GetObjectItemCaseSensitive(root, "tag");
        if (j && !cJSON_IsNull(j)) {
                if (!cJSON_IsString(j))
                        goto bad;
                q.tag = j->valuestring;
        }
        j = cJSON_GetObjectItemCaseSensitive(root, "stdin");
        if (j && !cJSON_IsNull(j)) {
                if (!cJSON_IsBool(j))
                        goto bad;
                q.stdin_pipe = cJSON_IsTrue(j); /* absent means true, as in envd */
        }
        j = cJSON_GetObjectItemCaseSensitive(root, "pty");
        if (j && !cJSON_IsNull(j)) {
                const cJSON *size = cJSON_GetObjectItemCaseSensitive(j, "size");
                if (!cJSON_IsObject(j) || (size && !cJSON_IsNull(size) && !cJSON_IsObject(size)))
                        goto bad;
                q.pty = true;
                q.cols = pty_dimension(cJSON_GetObjectItemCaseSensitive(size, "cols"), 80);
                q.rows = pty_dimension(cJSON_GetObjectItemCaseSensitive(size, "rows"), 24);
        }
        *ret = q;
        return 0;
bad:
        if (root)
                cJSON_Delete(root);
        return -EINVAL;
}

/* Connect code for a spawn error of agent_proc_spawn(). */
static const char *spawn_error_code(int e)
{
        switch (e) {
        case -EAGAIN:
        case -ENOMEM:
        case -EMFILE:
        case -ENFILE:
        case -ENOSPC:
                return "resource_exhausted";
        default:
                return "invalid_argument";
        }
}

/* ---- Start ---- */

int agent_process_handle_start(struct agent_request *r)
{
        _cleanup_free_ uint8_t *body = NULL;
        _cleanup_free_ char *username = NULL;
        _cleanup_(agent_user_done) struct agent_user u = {0};
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_json_ cJSON *root = NULL;
        struct start_request q = {0};
        struct agent_proc *p;
        char err[AGENT_PROC_ERR_MAX];
        const uint8_t *msg;
        const char *why;
        uint32_t msg_len;
        int64_t timeout_ms;
        int e;

        e = agent_request_read_envelope(r, &body, &msg, &msg_len);
        if (e != 0)
                return e;
        if (start_request_parse((const char *)msg, msg_len, &q, &why) < 0)
                return agent_respond_stream_error(r, "invalid_argument", "%s", why);
        root = q.root;

        e = agent_request_user(r, NULL, &u, &username);
        if (e == -ENOENT || e == -EINVAL)
                return agent_respond_stream_error(r, "unauthenticated", "invalid username: '%s'",
                                                  username ? username : "");
        if (e < 0)
                return agent_respond_stream_error(r, "internal", "user lookup: %s", strerror(-e));
        if (agent_parse_connect_timeout(agent_request_header(r, "Connect-Timeout-Ms"),
                                        &timeout_ms) < 0)
                return agent_respond_stream_error(r, "invalid_argument",
                                                  "invalid Connect-Timeout-Ms header");
        if (agent_process_build_argv(q.cmd, q.args, &argv) < 0)
                return agent_respond_stream_error(r, "internal", "out of memory");

        struct agent_proc_spec spec = {
            .argv = (const char *const *)argv,
            .envs = q.envs,
            .cwd = q.cwd,
            .user = &u,
            .tag = q.tag,
            .config = q.process,
            .stdin_pipe = q.stdin_pipe,
            .pty = q.pty,
            .cols = q.cols,
            .rows = q.rows,
            .timeout_ms = timeout_ms,
        };
        e = agent_proc_spawn(&spec, &p, err);
        if (e == -EINVAL || e == -ENOENT) /* the cwd */
                return agent_respond_stream_error(r, "invalid_argument", "%s", err);
        if (e < 0)
                return agent_respond_stream_error(r, spawn_error_code(e), "%s", err);

        struct agent_process_stream s;
        agent_process_stream_init(&s, r, 0, true);
        const struct agent_proc_listener l = agent_process_stream_listener(&s);
        return agent_proc_run(p, &l);
}
