/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Relaying one /v1 sandbox operation to the sandbox agent over the frame channel, on the
 * internal port 0 (api/frames.md), and sbxd's own bounded calls to the agent (MCP tools).
 *
 * Relay: REQ_HEAD (port 0, the agent path, the raw query, Content-Type only: the client's
 * Authorization never reaches the sandbox), the request body as DATA frames as it arrives,
 * END; then the agent's answer. A 2xx/3xx answer streams back (Content-Type, Content-Length
 * enforced, Content-Disposition and X-Sbx-* headers copied; nothing else); a >= 400 answer is
 * read up to V1_RELAY_MAX_ERROR bytes and re-issued as {"error":{"code","message"}} — only a
 * code of [a-z_]{1,40} and a message of at most 1 KiB survive from the agent's text.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "http/http.h"
#include "lifecycle/sandbox.h"

#define V1_RELAY_MAX_ERROR (64 * 1024)

struct v1_relay;

/* Connect to sandbox s's agent and send the head for agent_path + query. Queues an error
 * response itself when it fails (returns what queueing returned). */
enum MHD_Result v1_relay_begin(struct request *req, const struct sandbox *s, const char *agent_path,
                               const char *content_type, struct v1_relay **ret);
enum MHD_Result v1_relay_upload(struct request *req, struct v1_relay *rl, const char *data,
                                size_t len);
/* END, then the answer. Takes no ownership; v1_relay_free() in the completion path. */
enum MHD_Result v1_relay_finish(struct request *req, struct v1_relay *rl);
void v1_relay_free(struct v1_relay *rl);

/* Re-issue an agent's >= 400 answer body as {"error":{"code","message"}}: the code only when
 * it is [a-z_]{1,40}, the message cut at 1 KiB. */
enum MHD_Result v1_relay_error(struct request *req, unsigned status, const char *body, size_t len);
/* The checked fields of an error body ({"error":{"code","message"}} or {"code","message"}):
 * code "" unless [a-z_]{1,40}; message cut at 1024 bytes, a default when absent. Pure. */
void v1_error_fields(const char *body, size_t len, char code[static 41], char msg[static 1025]);
/* Read an answer body up to END (at most V1_RELAY_MAX_ERROR bytes; the fd's timeouts apply). */
int v1_read_error_body(int fd, char **ret, size_t *ret_len);

/* One bounded call on port 0: method path?query with body (may be NULL). On success returns
 * the agent's status and a malloc'd NUL-terminated body (at most max bytes; -EMSGSIZE
 * beyond). timeout_ms bounds every read. */
struct v1_reply {
        int status;
        char content_type[128];
        char *body;
        size_t len;
};
int v1_agent_call(const char *sandbox_dir, const char *method, const char *path, const char *query,
                  const char *content_type, const void *body, size_t len, size_t max,
                  int timeout_ms, struct v1_reply *ret);
void v1_reply_done(struct v1_reply *r);

/* The same in two steps, on any agent port (MCP streams /execute on SBX_PORT_CODE): connect,
 * send the head and the body, read the answer head into ret (status, Content-Type). On
 * success returns the status and *ret_fd (caller closes) yields the body as DATA frames up to
 * END; every read times out after timeout_ms. v1_agent_read_body() reads such a body into
 * ret (at most max bytes, -EMSGSIZE beyond). */
int v1_agent_open(const char *sandbox_dir, uint16_t port, const char *method, const char *path,
                  const char *query, const char *content_type, const void *body, size_t len,
                  int timeout_ms, int *ret_fd, struct v1_reply *ret);
/* v1_agent_open() in its two halves, for a caller that waits in between (on its own terms:
 * MCP polls for a cancel): connect and send everything; then read the answer head. */
int v1_agent_send(const char *sandbox_dir, uint16_t port, const char *method, const char *path,
                  const char *query, const char *content_type, const void *body, size_t len,
                  int timeout_ms, int *ret_fd);
int v1_agent_read_head(int fd, struct v1_reply *ret);
int v1_agent_read_body(int fd, size_t max, int timeout_ms, struct v1_reply *ret);
