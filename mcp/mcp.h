/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MCP (Model Context Protocol) over streamable HTTP: sbx's model tools (run_python, run_node,
 * run_shell, install_package, put_file / upload_file, get_file), one sandbox per session.
 * The component's whole interface (mcp/README.md says more):
 *
 *   - what the host gives MCP: struct mcp_host, sandboxes to create, kill and keep alive, and
 *     requests to a sandbox the way the public APIs reach it: the native API's
 *     /v1/sandboxes/{id}/<op> and the code interpreter's port;
 *   - how the host hands MCP an HTTP request (struct mcp_http_request) and takes its answer
 *     (struct mcp_http_response): a whole body, or a server-sent event stream read with
 *     mcp_sse_read().
 *
 * MCP includes nothing of the host: no HTTP server, no sandbox internals. Everything it reads
 * from a sandbox (the agent's JSON answers, the code interpreter's NDJSON) is untrusted and
 * parsed here, bounded.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MCP_SANDBOX_ID_MAX 32 /* a sandbox id with its NUL */
/* A session id: the host's prefix (struct mcp_http_request) and 32 hex digits, with its NUL. */
#define MCP_SESSION_PREFIX_MAX 64
#define MCP_SESSION_ID_MAX     (MCP_SESSION_PREFIX_MAX + 32 + 1)

/* Which public API of a sandbox a request goes to. */
enum mcp_api {
        MCP_API_NATIVE, /* path "/exec" is what /v1/sandboxes/{id}/exec does */
        MCP_API_CODE,   /* the code interpreter's own paths: POST /execute */
};

/* The host's open request (its answer is read with read_head, then read). */
struct mcp_stream;

/* What the host provides. Every call may block; ctx is passed back. now_ms deadlines are
 * CLOCK_MONOTONIC milliseconds (common/time-util.h now_ms()), 0 for none. */
struct mcp_host {
        void *ctx;
        /* Start a sandbox of template_id that ends after timeout_s: its id into id. -errno, and a
         * message a user can act on in err when there is one. */
        int (*create)(void *ctx, const char *template_id, int timeout_s,
                      char id[static MCP_SANDBOX_ID_MAX], char *err, size_t err_size);
        int (*kill)(void *ctx, const char *id);
        /* 0 running, 1 paused, -ENOENT gone. */
        int (*state)(void *ctx, const char *id);
        /* The sandbox now ends seconds from now (its idle timeout): 0, -ENOENT gone. */
        int (*keep_alive)(void *ctx, const char *id, int seconds);
        /* Send method path?query with Content-Type content_type (may be NULL) and the whole
         * body to sandbox id; the answer is read with read_head and read. timeout_ms bounds
         * every write and read on its own. -ENOENT unknown sandbox, other -errno. */
        int (*open)(void *ctx, const char *id, enum mcp_api api, const char *method,
                    const char *path, const char *query, const char *content_type, const void *body,
                    size_t len, int timeout_ms, struct mcp_stream **ret);
        /* The answer's status (>= 100), its Content-Type into ctype (cut at ctype_size).
         * -ECANCELED once *cancel (may be NULL) is set, -ETIMEDOUT past deadline_ms. */
        int (*read_head)(struct mcp_stream *st, const atomic_bool *cancel, int64_t deadline_ms,
                         char *ctype, size_t ctype_size);
        /* The next piece of the answer's body: 1 with *data (valid until the next call), 0 at
         * its end, -errno (the same waits as read_head). */
        int (*read)(struct mcp_stream *st, const atomic_bool *cancel, int64_t deadline_ms,
                    const void **data, size_t *len);
        /* Drop the request; closing before the end makes the sandbox stop the work (the code
         * interpreter interrupts its kernel, a command is killed). */
        void (*close)(struct mcp_stream *st);
};

struct mcp;

/* The MCP server: its session table. Reads SBX_MCP_TEMPLATE (the sessions' template, default
 * MCP_TEMPLATE_DEFAULT) and SBX_MCP_IDLE_TIMEOUT_S (default MCP_IDLE_DEFAULT_S) now. host is
 * copied. NULL on ENOMEM. */
struct mcp *mcp_new(const struct mcp_host *host);
/* Ends every session (their sandboxes are killed). NULL-safe. */
void mcp_free(struct mcp *m);

/* One HTTP request to the MCP endpoint, authenticated by the host already. */
struct mcp_http_request {
        const char *method;
        const char *body; /* the whole body (the host bounds it), may be NULL */
        size_t len;
        /* A request header (case-insensitive name), NULL when absent. */
        const char *(*header)(void *ctx, const char *name);
        void *ctx;
        /* Prepended to the id of a session this request creates (initialize), so the host can
         * tell from a later request's Mcp-Session-Id where its session lives (sbxd --cluster:
         * "<node>-"). At most MCP_SESSION_PREFIX_MAX of [A-Za-z0-9._-], else not used; NULL:
         * none (the id is 32 hex digits). */
        const char *session_prefix;
};

#define MCP_MAX_RESPONSE_HEADERS 2

struct mcp_http_response {
        unsigned status;
        const char *content_type; /* static */
        char *body;               /* malloc'd (mcp_http_response_done() frees it) */
        size_t len;
        struct {
                const char *name; /* static */
                char value[MCP_SESSION_ID_MAX];
        } headers[MCP_MAX_RESPONSE_HEADERS];
        size_t n_headers;
        /* Set instead of body: a text/event-stream, read with mcp_sse_read() until it returns
         * 0, then freed with mcp_sse_free() (which the host must call in any case). */
        struct mcp_sse *sse;
};

/* Answer one request: fills *ret. 0, or -ENOMEM (nothing to send: the host drops the
 * connection). A notification's answer is 202, a JSON-RPC request's 200 (400 for an invalid
 * one), unknown sessions 404, unsupported methods 405; HTTP-level errors have the native
 * API's shape {"error":{"code","message"}}. */
int mcp_handle(struct mcp *m, const struct mcp_http_request *req, struct mcp_http_response *ret);
void mcp_http_response_done(struct mcp_http_response *r);

/* The next bytes of an event stream into buf (blocking until there are some): their count,
 * 0 at the end, -errno. */
ssize_t mcp_sse_read(struct mcp_sse *sse, char *buf, size_t max);
/* The host is done with the stream (the client may have gone: its call is cancelled). */
void mcp_sse_free(struct mcp_sse *sse);

#define MCP_TEMPLATE_DEFAULT "code-interpreter-v1"
#define MCP_IDLE_DEFAULT_S   600
