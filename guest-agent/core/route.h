/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's route table: which handler answers a request, chosen on the (port, method, path)
 * of its REQ_HEAD (api/frames.md). There is one table for the whole agent; it is built at the
 * component's top level (guest-agent/routes.c), which knows every handler folder, and handed to
 * the server at start-up (agent_server_set_routes()). core/ itself knows no handler.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct agent_request;

/*
 * A handler answers r and returns the HTTP status it answered with once that answer is complete
 * (agent_respond(), agent_respond_end() and the error helpers return it), or -errno when the
 * connection broke before that. The server logs either.
 */
typedef int (*agent_handler_fn)(struct agent_request *r);

/* Send a REST error (status, message) in the error shape of the API a route belongs to. Returns
 * as a handler does. */
typedef int (*agent_rest_error_fn)(struct agent_request *r, int status, const char *message);

enum agent_route_match {
        AGENT_ROUTE_EXACT,  /* the path equals the pattern */
        AGENT_ROUTE_PREFIX, /* the path starts with the pattern ("" matches every path) */
};

/* Route flags. */
enum {
        /* Only requests that are not Connect streams (Content-Type application/connect+...):
         * a unary RPC asked for as a stream falls through to the routes below it. */
        AGENT_ROUTE_UNARY = 1u << 0,
};

struct agent_route {
        uint16_t port;
        const char *method; /* NULL: any method */
        const char *path;
        enum agent_route_match match;
        unsigned flags;
        agent_handler_fn handler;
        /* How agent_respond_rest_error() answers for this route; NULL: envd's
         * {"code":<status>,"message":...}. */
        agent_rest_error_fn rest_error;
};

struct agent_route_table {
        const struct agent_route *routes; /* in order: the first match wins */
        size_t n_routes;
        agent_handler_fn not_found; /* answers what no route matches */
};

/* The first route of t that matches, or NULL. connect_stream: the request's Content-Type is
 * application/connect+... (see AGENT_ROUTE_UNARY). Pure. */
const struct agent_route *agent_route_find(const struct agent_route_table *t, uint16_t port,
                                           const char *method, const char *path,
                                           bool connect_stream);
