/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The native API's sandbox side: routes under /v1/ on the internal port 0 (api/frames.md),
 * which only sbxd can reach. sbxd maps `/v1/sandboxes/{id}/<rest>` to `/v1/<rest>` here and
 * relays the answer. Bodies are JSON; errors are {"error":{"code","message"}} with the
 * HTTP status (sbxd re-checks the shape, with bounds, before relaying).
 *
 *   POST   /v1/exec                    one process, output collected (exec limits below)
 *   POST   /v1/run-code                one snippet (python, node, bash, sh)
 *   GET    /v1/files?path=             bytes (envd's GET /files)
 *   PUT    /v1/files?path=             raw body → the file (envd's POST /files)
 *   GET    /v1/fs/list|stat?path=      directory entries / one entry
 *   POST   /v1/fs/mkdir|move           {path} / {from,to}
 *   DELETE /v1/fs?path=&recursive=     remove
 *   GET    /v1/fs/search?path=&name=&content=&max_results=   bounded walk
 *   GET    /v1/fs/watch?path=&recursive=                     text/event-stream
 *   POST   /v1/processes, GET /v1/processes[/{pid}[/logs]], POST /v1/processes/{pid}/signal,
 *   DELETE /v1/processes/{pid}         managed processes (native/native-proc.c)
 *   GET    /v1/terminal?cols=&rows=    full-duplex PTY (native/native-term.c)
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/server.h"

#define NATIVE_MAX_BODY        (8u * 1024u * 1024u)
#define NATIVE_TIMEOUT_DEFAULT 30000                 /* ms, exec and run-code */
#define NATIVE_TIMEOUT_MAX     300000                /* ms */
#define NATIVE_OUTPUT_MAX      (16u * 1024u * 1024u) /* combined stdout + stderr */
#define NATIVE_CODE_MAX        (4u * 1024u * 1024u)  /* run-code code bytes (fed on stdin) */

/* Serve r when it is a native route: returns what the handler returned, or -ENOENT without
 * touching r when the path is not one (the caller answers 404). */
int agent_native_route(struct agent_request *r);

/* {"error":{"code":code,"message":...}} with status. */
int native_error(struct agent_request *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Print and send o (not freed) with status. */
int native_json(struct agent_request *r, int status, const cJSON *o);
/* Read the JSON object body (absent/empty: an empty object). On failure the error response
 * was sent and the return value is what sending returned (or -EINVAL when nothing was sent). */
int native_read_json(struct agent_request *r, cJSON **ret);
/* Decoded query parameter (caller frees), NULL when absent. */
char *native_query(const struct agent_request *r, const char *key);
/* "user" or "root" from a JSON field / query value; NULL → default user. -EINVAL otherwise. */
int native_user_name(const char *v, const char **ret);
/* argv from "cmd": a non-empty array of strings (execve) or a string (sh -c). */
int native_argv(const cJSON *cmd, char ***ret, const char **ret_msg);

/* Handlers in the other agent-native-*.c files. */
int native_fs_route(struct agent_request *r, const char *m, const char *p);
int native_proc_route(struct agent_request *r, const char *m, const char *p);
int native_term_handle(struct agent_request *r);
int native_fs_search(struct agent_request *r);
int native_fs_watch(struct agent_request *r);
