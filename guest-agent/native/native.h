/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The native API's sandbox side: routes under /v1/ on the internal port 0 (api/frames.md),
 * which only sbxd can reach. sbxd maps `/v1/sandboxes/{id}/<rest>` to `/v1/<rest>` here and
 * relays the answer as it is. Bodies are JSON; every error is the native API's shape,
 * {"error":{"code","message"}} with application/json and the HTTP status
 * (api/openapi/sbx-v1.yaml), including those of the envd handlers the native routes share
 * (their route's rest_error is native_rest_error()). The routes are in guest-agent/routes.c:
 *
 *   POST   /v1/exec                    one process, output collected (exec limits below)
 *   POST   /v1/run-code                one snippet (python, node, bash, sh)
 *   GET    /v1/files?path=&user=       bytes (envd's GET /files, user as its username)
 *   PUT    /v1/files?path=&user=       raw body → the file (envd's POST /files)
 *   GET    /v1/fs/list|stat?path=      directory entries / one entry
 *   POST   /v1/fs/mkdir|move           {path} / {from,to}
 *   DELETE /v1/fs?path=&recursive=     remove
 *   GET    /v1/fs/search?path=&name=&content=&max_results=   bounded walk
 *   GET    /v1/fs/watch?path=&recursive=                     text/event-stream
 *   POST   /v1/processes, GET /v1/processes[/{pid}[?wait_ms=]|/{pid}/logs],
 *   POST   /v1/processes/{pid}/signal|stdin, DELETE /v1/processes/{pid}
 *                                      managed processes (native/native-proc.c)
 *   GET    /v1/terminal?cols=&rows=    full-duplex PTY (native/native-term.c)
 *
 * Processes are the process table's (proc/process.h): users, environment, cwd, PTYs, deadlines
 * and reaping are the same code paths as envd's.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/request.h"
#include "core/users.h"
#include "proc/process.h"

#define NATIVE_MAX_BODY        (8u * 1024u * 1024u)
#define NATIVE_TIMEOUT_DEFAULT 30000                 /* ms, exec and run-code */
#define NATIVE_TIMEOUT_MAX     300000                /* ms */
#define NATIVE_OUTPUT_MAX      (16u * 1024u * 1024u) /* combined stdout + stderr */
#define NATIVE_CODE_MAX        (4u * 1024u * 1024u)  /* run-code code bytes (fed on stdin) */
#define NATIVE_MESSAGE_MAX     1024u                 /* bytes of an error message */

/* ---- handlers (native.c, native-fs.c, native-search.c, native-proc.c, native-term.c) ---- */

int native_handle_exec(struct agent_request *r);
int native_handle_run_code(struct agent_request *r);
int native_handle_terminal(struct agent_request *r);
/* GET and PUT /v1/files: envd's /files handlers with ?user= (user or root). */
int native_files_handle_get(struct agent_request *r);
int native_files_handle_put(struct agent_request *r);
int native_fs_handle_list(struct agent_request *r);
int native_fs_handle_stat(struct agent_request *r);
int native_fs_handle_mkdir(struct agent_request *r);
int native_fs_handle_move(struct agent_request *r);
int native_fs_handle_remove(struct agent_request *r);
int native_fs_handle_search(struct agent_request *r);
int native_fs_handle_watch(struct agent_request *r);
/* POST and GET /v1/processes. */
int native_proc_handle_start(struct agent_request *r);
int native_proc_handle_list(struct agent_request *r);
/* Everything else under /v1/processes: /{pid}, /{pid}/logs, /{pid}/signal, /{pid}/stdin. */
int native_proc_handle_item(struct agent_request *r);
/* Any other /v1/ path: 404 not_found. */
int native_handle_not_found(struct agent_request *r);

/* The rest_error of every /v1/ route (core/route.h): a REST error of a shared handler (envd's
 * /files) in the native shape, the code the default for its status (sbx_native_error_code(),
 * api/native-error.h). */
int native_rest_error(struct agent_request *r, int status, const char *message);

/* ---- helpers shared by the handlers ---- */

/* {"error":{"code":code,"message":...}} with status, the message cut to NATIVE_MESSAGE_MAX
 * bytes (at a character boundary); drains what is left of the request body first. Returns
 * status or -errno. */
int native_error(struct agent_request *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Print and send o (not freed) with status. */
int native_json(struct agent_request *r, int status, const cJSON *o);
/* Read the JSON object body (absent/empty: an empty object). 0 with *ret; otherwise the error
 * was answered (returns its status) or reading failed (-errno). */
int native_read_json(struct agent_request *r, cJSON **ret);
/* Decoded query parameter (caller frees), NULL when absent. */
char *native_query(const struct agent_request *r, const char *key);
/* "user" or "root" from a JSON field / query value; NULL → default user. -EINVAL otherwise. */
int native_user_name(const char *v, const char **ret);
/* Spawn spec as the user named user (NULL: the /init default user), with what envd's List shows
 * for it (agent_process_config_json() of spec's argv and of list_envs and list_cwd, each NULL to
 * leave out). admit (NULL: none) runs just before the spawn and refuses it by answering and
 * returning non-zero. 0 with *ret (agent_proc_run() consumes it); else the error was answered,
 * every message prefixed with what (e.g. "starting the terminal: "), and its status is returned:
 * 400 for an unknown user or a refused spawn, 500 when out of memory or when the process started
 * but its stdin data could not be set up. */
int native_spawn(struct agent_request *r, const char *user, const struct agent_proc_spec *spec,
                 const cJSON *list_envs, const char *list_cwd, const char *what,
                 int (*admit)(struct agent_request *r), struct agent_proc **ret);
/* argv from "cmd": a non-empty array of strings (execve) or a string (sh -c). */
int native_argv(const cJSON *cmd, char ***ret, const char **ret_msg);
/* Copy s[0..len) replacing invalid UTF-8 (and NUL) with U+FFFD (JSON strings must be UTF-8).
 * NULL on ENOMEM. */
char *native_utf8_dup(const uint8_t *s, size_t len);
