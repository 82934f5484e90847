/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The unary process.Process RPCs on the process table (Connect unary, JSON codec;
 * docs/e2b-wire.md §3.3, §3.5): List, SendSignal, SendInput, CloseStdin, Update; and the
 * `unimplemented` answer for the methods nobody serves.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"
#include "envd/connect-json.h"
#include "envd/process-rpc.h"
#include "json-util.h"
#include "macros.h"
#include "proc/process.h"

#define INPUT_WAIT_MS 60000
#define UNIMPL_DRAIN  (16u * 1024u * 1024u)

/* {"process":{"pid":N}} or {"process":{"tag":"x"}}: 0, or the error answer's result. */
static int parse_selector(struct agent_request *r, const cJSON *root, struct agent_selector *sel,
                          int *ret_answered)
{
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "process");
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(p, "pid");
        const cJSON *tag = cJSON_GetObjectItemCaseSensitive(p, "tag");

        *sel = (struct agent_selector){0};
        if (cJSON_IsString(tag)) {
                sel->tag = tag->valuestring;
                return 0;
        }
        /* uint32 may come as a number or, from some encoders, a string. */
        if (cJSON_IsNumber(pid) && pid->valuedouble >= 1 && pid->valuedouble <= UINT32_MAX) {
                sel->pid = (uint32_t)pid->valuedouble;
                return 0;
        }
        if (cJSON_IsString(pid)) {
                char *end;
                unsigned long v = strtoul(pid->valuestring, &end, 10);
                if (!*end && end != pid->valuestring && v >= 1 && v <= UINT32_MAX) {
                        sel->pid = (uint32_t)v;
                        return 0;
                }
        }
        *ret_answered = agent_respond_connect_error(r, "invalid_argument",
                                                    "process selector (pid or tag) is required");
        return -EINVAL;
}

static int not_found(struct agent_request *r, const struct agent_selector *sel)
{
        if (sel->tag)
                return agent_respond_connect_error(r, "not_found", "process with tag %s not found",
                                                   sel->tag);
        return agent_respond_connect_error(r, "not_found", "process with pid %u not found",
                                           sel->pid);
}

static int parse_signal(const cJSON *j)
{
        if (cJSON_IsString(j)) {
                if (strcmp(j->valuestring, "SIGNAL_SIGKILL") == 0)
                        return SIGKILL;
                if (strcmp(j->valuestring, "SIGNAL_SIGTERM") == 0)
                        return SIGTERM;
        } else if (cJSON_IsNumber(j) && (j->valueint == SIGKILL || j->valueint == SIGTERM))
                return j->valueint;
        return -EINVAL;
}

/* Read and parse a unary request: 0 with *ret (caller deletes), or the answered status /
 * -errno. */
static int unary_begin(struct agent_request *r, cJSON **ret)
{
        _cleanup_free_ uint8_t *body = NULL;
        _cleanup_free_ char *unknown = NULL;
        cJSON *root;
        size_t len;
        int e;

        e = agent_request_read_body_all(r, CONNECT_MAX_MESSAGE, &body, &len);
        if (e == -EMSGSIZE)
                return agent_respond_connect_error(r, "resource_exhausted", "request too large");
        if (e < 0)
                return e;
        /* Like envd's authn middleware: a Basic user that does not exist is refused. */
        if (agent_request_basic_user_unknown(r, &unknown))
                return agent_respond_connect_error(r, "unauthenticated", "invalid username: '%s'",
                                                   unknown ? unknown : "");
        root = cJSON_ParseWithLength((const char *)body, len);
        if (!cJSON_IsObject(root)) {
                cJSON_Delete(root);
                return agent_respond_connect_error(r, "invalid_argument", "invalid JSON request");
        }
        *ret = root;
        return 0;
}

static int respond_ok(struct agent_request *r, const char *json)
{
        return agent_respond(r, 200, "application/json", json, strlen(json));
}

int agent_process_handle_send_signal(struct agent_request *r)
{
        _cleanup_json_ cJSON *root = NULL;
        struct agent_selector sel;
        int answered = 0, sig, e;

        if ((e = unary_begin(r, &root)) != 0)
                return e;
        if (parse_selector(r, root, &sel, &answered) < 0)
                return answered;
        sig = parse_signal(cJSON_GetObjectItemCaseSensitive(root, "signal"));
        if (sig < 0)
                return agent_respond_connect_error(r, "unimplemented", "invalid signal");
        if (agent_proc_signal(&sel, sig) < 0)
                return not_found(r, &sel);
        return respond_ok(r, "{}");
}

int agent_process_handle_send_input(struct agent_request *r)
{
        _cleanup_json_ cJSON *root = NULL;
        _cleanup_free_ uint8_t *data = NULL;
        const cJSON *input, *in_stdin, *in_pty;
        struct agent_selector sel;
        bool want_pty;
        size_t len;
        int answered = 0, e;

        if ((e = unary_begin(r, &root)) != 0)
                return e;
        input = cJSON_GetObjectItemCaseSensitive(root, "input");
        in_stdin = cJSON_GetObjectItemCaseSensitive(input, "stdin");
        in_pty = cJSON_GetObjectItemCaseSensitive(input, "pty");
        if (parse_selector(r, root, &sel, &answered) < 0)
                return answered;
        if (!cJSON_IsString(in_stdin) && !cJSON_IsString(in_pty))
                return agent_respond_connect_error(r, "unimplemented", "invalid input type");
        want_pty = cJSON_IsString(in_pty);
        if (cj_bytes_decode(want_pty ? in_pty->valuestring : in_stdin->valuestring, &data, &len) <
            0)
                return agent_respond_connect_error(r, "invalid_argument", "invalid base64 input");
        /* As envd, the call waits while the process does not read its input (the pipe or the
         * terminal is full) — but never forever: it gives up when sbxd hangs up (the client
         * left) or after INPUT_WAIT_MS. */
        e = agent_proc_write_input(&sel, want_pty, data, len, r->fd, INPUT_WAIT_MS);
        if (e == -ESRCH)
                return not_found(r, &sel);
        if (e == -EBADF)
                return agent_respond_connect_error(r, "internal",
                                                   "error writing to stdin: stdin not enabled or "
                                                   "closed");
        if (e == -ENOTTY)
                return agent_respond_connect_error(
                    r, "internal",
                    want_pty ? "error writing to tty: tty not assigned to process"
                             : "error writing to stdin: tty assigned to process, input should "
                               "be written to the pty");
        if (e == -ETIMEDOUT)
                return agent_respond_connect_error(r, "deadline_exceeded",
                                                   "the process did not read its input");
        if (e < 0)
                return agent_respond_connect_error(r, "internal", "error writing to %s: %s",
                                                   want_pty ? "tty" : "stdin", strerror(-e));
        return respond_ok(r, "{}");
}

int agent_process_handle_close_stdin(struct agent_request *r)
{
        _cleanup_json_ cJSON *root = NULL;
        struct agent_selector sel;
        int answered = 0, e;

        if ((e = unary_begin(r, &root)) != 0)
                return e;
        if (parse_selector(r, root, &sel, &answered) < 0)
                return answered;
        e = agent_proc_close_stdin(&sel);
        if (e == -ESRCH)
                return not_found(r, &sel);
        if (e == -ENOTTY)
                return agent_respond_connect_error(r, "unknown",
                                                   "error closing stdin: cannot close stdin for "
                                                   "PTY process, send Ctrl+D (0x04) instead");
        return respond_ok(r, "{}");
}

static unsigned short winsize_field(const cJSON *size, const char *name)
{
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(size, name);
        /* uint32 on the wire, truncated to the kernel's 16 bits as envd does. */
        if (!cJSON_IsNumber(j) || j->valuedouble < 0 || j->valuedouble > UINT32_MAX)
                return 0;
        return (unsigned short)(uint32_t)j->valuedouble;
}

int agent_process_handle_update(struct agent_request *r)
{
        _cleanup_json_ cJSON *root = NULL;
        const cJSON *pty, *size;
        struct agent_selector sel;
        pid_t pid;
        int answered = 0, e;

        if ((e = unary_begin(r, &root)) != 0)
                return e;
        pty = cJSON_GetObjectItemCaseSensitive(root, "pty");
        size = cJSON_GetObjectItemCaseSensitive(pty, "size");
        if (parse_selector(r, root, &sel, &answered) < 0)
                return answered;
        if (agent_proc_find(&sel, &pid) < 0)
                return not_found(r, &sel);
        if (!cJSON_IsObject(pty))
                return respond_ok(r, "{}");
        e = agent_proc_resize(&sel, winsize_field(size, "cols"), winsize_field(size, "rows"));
        if (e == -ESRCH)
                return not_found(r, &sel);
        if (e == -ENOTTY)
                return agent_respond_connect_error(
                    r, "internal", "error resizing tty: tty not assigned to process");
        if (e < 0)
                return agent_respond_connect_error(r, "internal", "error resizing tty: %s",
                                                   strerror(-e));
        return respond_ok(r, "{}");
}

/* ---- List ---- */

static int list_one(void *userdata, pid_t pid, const char *tag, const cJSON *config)
{
        cJSON *arr = userdata, *o, *cfg;

        if (!(o = cJSON_CreateObject()) || !cJSON_AddItemToArray(arr, o) ||
            !(cfg = config ? cJSON_Duplicate(config, 1) : cJSON_CreateObject()) ||
            !cJSON_AddItemToObject(o, "config", cfg) || !cJSON_AddNumberToObject(o, "pid", pid) ||
            (tag && !cJSON_AddStringToObject(o, "tag", tag)))
                return -ENOMEM;
        return 0;
}

int agent_process_handle_list(struct agent_request *r)
{
        _cleanup_json_ cJSON *root = NULL, *out = cJSON_CreateObject();
        _cleanup_free_ char *json = NULL;
        cJSON *arr;
        int e;

        if ((e = unary_begin(r, &root)) != 0)
                return e;
        if (!out || !(arr = cJSON_AddArrayToObject(out, "processes")) ||
            agent_proc_foreach(list_one, arr) < 0)
                return agent_respond_connect_error(r, "internal", "out of memory");
        /* proto3 JSON omits an empty repeated field, as envd does. */
        if (cJSON_GetArraySize(arr) == 0)
                cJSON_DeleteItemFromObject(out, "processes");
        if (!(json = cJSON_PrintUnformatted(out)))
                return agent_respond_connect_error(r, "internal", "out of memory");
        return respond_ok(r, json);
}

cJSON *agent_process_config_json(const char *const *argv, const cJSON *envs, const char *cwd)
{
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON *args;

        if (!o || !cJSON_AddStringToObject(o, "cmd", argv[0]) ||
            !(args = cJSON_AddArrayToObject(o, "args")))
                return NULL;
        for (size_t i = 1; argv[i]; i++)
                if (!cJSON_AddItemToArray(args, cJSON_CreateString(argv[i])))
                        return NULL;
        if (envs && !cJSON_AddItemToObject(o, "envs", cJSON_Duplicate(envs, 1)))
                return NULL;
        if (cwd && !cJSON_AddStringToObject(o, "cwd", cwd))
                return NULL;
        return TAKE_PTR(o);
}

/* ---- methods nobody serves ---- */

int agent_connect_handle_unimplemented(struct agent_request *r)
{
        const char *path = r->head.path;
        int e = agent_request_discard_body(r, UNIMPL_DRAIN);

        if (e < 0 && e != -EMSGSIZE)
                return e;
        if (agent_request_is_stream(r))
                return agent_respond_stream_error(r, "unimplemented", "%s is not implemented",
                                                  path);
        return agent_respond_connect_error(r, "unimplemented", "%s is not implemented", path);
}
