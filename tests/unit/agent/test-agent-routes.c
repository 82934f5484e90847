/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The route table: matching (exact, prefix, any method, unary-only, first match wins), every
 * route of the agent's table reachable and reaching its handler, unknown routes answered as
 * before (envd's REST 404, Connect `unimplemented` for unknown RPCs, the native 404 under
 * /v1/), and handlers returning the status they answered with.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "agent-call.h"
#include "connect.h"
#include "core/route.h"
#include "core/server.h"
#include "envd/files.h"
#include "envd/process-rpc.h"
#include "frame.h"
#include "interp/code.h"
#include "native/native.h"
#include "routes.h"
#include "unit.h"

/* A loopback port bound but not listening (held until exit): a connect there is refused. */
static uint16_t closed_port(void)
{
        static int fd = -1;
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t l = sizeof(a);
        if (fd < 0)
                fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 ||
            (a.sin_port == 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 &&
             errno != EINVAL) ||
            getsockname(fd, (struct sockaddr *)&a, &l) < 0)
                return 1;
        return ntohs(a.sin_port);
}

/* ---- matching, on a table of our own ---- */

static int h_a(struct agent_request *r)
{
        return 1;
}
static int h_b(struct agent_request *r)
{
        return 2;
}
static int h_c(struct agent_request *r)
{
        return 3;
}
static int h_d(struct agent_request *r)
{
        return 4;
}

static const struct agent_route test_routes[] = {
    {7, "GET", "/x", AGENT_ROUTE_EXACT, 0, h_a, NULL},
    {7, "POST", "/rpc/One", AGENT_ROUTE_EXACT, AGENT_ROUTE_UNARY, h_b, NULL},
    {7, NULL, "/rpc/", AGENT_ROUTE_PREFIX, 0, h_c, NULL},
    {8, NULL, "", AGENT_ROUTE_PREFIX, 0, h_d, NULL},
};
static const struct agent_route_table test_table = {test_routes, ELEMENTSOF(test_routes), NULL};

static agent_handler_fn found(uint16_t port, const char *m, const char *p, bool stream)
{
        const struct agent_route *rt = agent_route_find(&test_table, port, m, p, stream);
        return rt ? rt->handler : NULL;
}

static void test_matching(void)
{
        CHECK(found(7, "GET", "/x", false) == h_a);
        CHECK(found(7, "POST", "/x", false) == NULL); /* method */
        CHECK(found(7, "GET", "/x/", false) == NULL); /* exact */
        CHECK(found(7, "GET", "/", false) == NULL);
        CHECK(found(9, "GET", "/x", false) == NULL); /* port */
        CHECK(found(7, "POST", "/rpc/One", false) == h_b);
        CHECK(found(7, "POST", "/rpc/One", true) == h_c); /* a stream falls through */
        CHECK(found(7, "GET", "/rpc/One", false) == h_c); /* any method */
        CHECK(found(7, "DELETE", "/rpc/", false) == h_c);
        CHECK(found(7, "POST", "/rpc", false) == NULL);
        CHECK(found(8, "PATCH", "/anything/at/all", true) == h_d);
        CHECK(found(8, "GET", "", false) == h_d);
        CHECK(found(7, NULL, "/x", false) == NULL);
        CHECK(found(7, "GET", NULL, false) == NULL);
        CHECK(agent_route_find(NULL, 7, "GET", "/x", false) == NULL);
}

/* ---- the agent's table ---- */

/* A request that only route i can take first: its own path (one more byte for a prefix). */
static void test_every_route_reachable(void)
{
        for (size_t i = 0; i < agent_routes.n_routes; i++) {
                const struct agent_route *rt = &agent_routes.routes[i];
                char path[256];
                snprintf(path, sizeof(path), "%s%s", rt->path,
                         rt->match == AGENT_ROUTE_PREFIX ? (*rt->path ? "x" : "/x") : "");
                const struct agent_route *got = agent_route_find(
                    &agent_routes, rt->port, rt->method ? rt->method : "PATCH", path, false);
                CHECK(got == rt);
                if (got != rt)
                        fprintf(stderr, "  route %zu (%u %s %s) shadowed\n", i, rt->port,
                                rt->method ? rt->method : "*", rt->path);
        }
}

static agent_handler_fn agent(uint16_t port, const char *m, const char *p, bool stream)
{
        const struct agent_route *rt = agent_route_find(&agent_routes, port, m, p, stream);
        return rt ? rt->handler : NULL;
}

static void test_agent_table(void)
{
        CHECK(agent(0, "POST", "/init", false) == agent_handle_init);
        CHECK(agent(0, "GET", "/health", false) == agent_handle_health);
        CHECK(agent(SBX_PORT_ENVD, "GET", "/health", false) == agent_handle_health);
        CHECK(agent(SBX_PORT_ENVD, "POST", "/process.Process/Start", true) ==
              agent_process_handle_start);
        CHECK(agent(SBX_PORT_ENVD, "POST", "/process.Process/Connect", true) ==
              agent_process_handle_connect);
        CHECK(agent(SBX_PORT_ENVD, "POST", "/process.Process/SendInput", false) ==
              agent_process_handle_send_input);
        /* A unary RPC asked for as a stream, and RPCs nobody serves: unimplemented. */
        CHECK(agent(SBX_PORT_ENVD, "POST", "/process.Process/List", true) ==
              agent_connect_handle_unimplemented);
        CHECK(agent(SBX_PORT_ENVD, "POST", "/process.Process/StreamInput", true) ==
              agent_connect_handle_unimplemented);
        CHECK(agent(SBX_PORT_ENVD, "GET", "/process.Process/Start", false) ==
              agent_connect_handle_unimplemented);
        CHECK(agent(SBX_PORT_ENVD, "POST", "/filesystem.Filesystem/Compose", false) ==
              agent_connect_handle_unimplemented);
        CHECK(agent(SBX_PORT_ENVD, "GET", "/files", false) == agent_files_handle_get);
        CHECK(agent(SBX_PORT_ENVD, "POST", "/files", false) == agent_files_handle_post);
        CHECK(agent(SBX_PORT_ENVD, "PUT", "/files", false) == NULL);
        CHECK(agent(SBX_PORT_ENVD, "POST", "/init", false) == NULL);
        /* The code interpreter: its routes, and its own 404 for the rest of its port. */
        CHECK(agent(SBX_PORT_CODE, "POST", "/execute", false) == agent_code_handle_execute);
        CHECK(agent(SBX_PORT_CODE, "GET", "/execute", false) == agent_code_handle_not_found);
        CHECK(agent(SBX_PORT_CODE, "POST", "/contexts", false) == agent_code_handle_create);
        CHECK(agent(SBX_PORT_CODE, "GET", "/contexts", false) == agent_code_handle_list);
        CHECK(agent(SBX_PORT_CODE, "GET", "/health", false) == agent_code_handle_health);
        CHECK(agent(SBX_PORT_CODE, "DELETE", "/contexts/x", false) == agent_code_handle_context);
        CHECK(agent(SBX_PORT_CODE, "POST", "/contexts/x/restart", false) ==
              agent_code_handle_context);
        CHECK(agent(SBX_PORT_CODE, "GET", "/", true) == agent_code_handle_not_found);
        /* The native API, port 0 only. */
        CHECK(agent(0, "PUT", "/v1/files", false) == native_files_handle_put);
        CHECK(agent(0, "GET", "/v1/files", false) == native_files_handle_get);
        CHECK(agent(0, "POST", "/v1/processes/12/stdin", false) == native_proc_handle_item);
        CHECK(agent(0, "PATCH", "/v1/files", false) == native_handle_not_found);
        CHECK(agent(0, "GET", "/v1/processes/12/logs", false) == native_proc_handle_item);
        CHECK(agent(0, "DELETE", "/v1/processes/12", false) == native_proc_handle_item);
        CHECK(agent(0, "POST", "/v1/processes/", false) == native_proc_handle_start);
        CHECK(agent(0, "GET", "/v1/nothing", false) == native_handle_not_found);
        CHECK(agent(0, "GET", "/v1", false) == NULL);
        CHECK(agent(SBX_PORT_ENVD, "POST", "/v1/exec", false) == NULL);
        CHECK(agent(1234, "GET", "/health", false) == NULL);

        /* Every /v1/ route answers REST errors in the native shape, every other envd's. */
        for (size_t i = 0; i < agent_routes.n_routes; i++) {
                const struct agent_route *rt = &agent_routes.routes[i];
                bool v1 = rt->port == 0 && strncmp(rt->path, "/v1/", 4) == 0;
                CHECK(rt->rest_error == (v1 ? native_rest_error : NULL));
        }
}

/* ---- served ---- */

static void test_served(void)
{
        struct sbx_header json = {"Content-Type", "application/json"};
        struct sbx_header stream = {"Content-Type", "application/connect+json"};
        struct response r;

        call(0, "GET", "/health", NULL, NULL, 0, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 204);
        CHECK_EQ_INT(r.served, 204);
        response_done(&r);

        call(SBX_PORT_ENVD, "GET", "/nothing", NULL, NULL, 0, "xyz", 3, 1, &r);
        CHECK_EQ_INT(r.status, 404);
        CHECK_EQ_INT(r.served, 404);
        CHECK_STREQ(response_header(&r, "Content-Type"), "application/json; charset=utf-8");
        CHECK_STREQ((char *)r.body, "{\"code\":404,\"message\":\"no route for GET /nothing\"}");
        response_done(&r);
        /* any other port is a user port: relayed (port/relay.h), here to a port bound but not
         * listening: "not open" */
        uint16_t closed = closed_port();
        call(closed, "GET", "/health", NULL, NULL, 0, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 502);
        CHECK_STREQ(response_header(&r, SBX_HEADER_PORT_ERROR), SBX_PORT_ERROR_NOT_OPEN);
        CHECK_EQ_INT(r.len, 0);
        response_done(&r);
        call(0, "GET", "/v1", NULL, NULL, 0, NULL, 0, 1, &r);
        CHECK_STREQ((char *)r.body, "{\"code\":404,\"message\":\"no route for GET /v1\"}");
        response_done(&r);

        /* Unknown RPCs: Connect unimplemented, unary (501) or as a stream (200 + end-stream). */
        call(SBX_PORT_ENVD, "POST", "/filesystem.Filesystem/Compose", NULL, &json, 1, "{}", 2, 1,
             &r);
        CHECK_EQ_INT(r.status, 501);
        CHECK_EQ_INT(r.served, 501);
        CHECK_STREQ((char *)r.body, "{\"code\":\"unimplemented\",\"message\":\"/filesystem."
                                    "Filesystem/Compose is not implemented\"}");
        response_done(&r);
        call(SBX_PORT_ENVD, "POST", "/process.Process/List", NULL, &stream, 1, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 200);
        CHECK_EQ_INT(r.served, 200);
        CHECK(r.len > 5 && r.body[0] == CONNECT_FLAG_END_STREAM);
        CHECK(r.len > 5 && strstr((char *)r.body + 5, "\"code\":\"unimplemented\"") != NULL);
        response_done(&r);

        /* Under /v1/: the native shape. */
        call(0, "GET", "/v1/nothing", NULL, NULL, 0, NULL, 0, 1, &r);
        check_native_error(&r, 404, "not_found");
        CHECK_STREQ((char *)r.body,
                    "{\"error\":{\"code\":\"not_found\",\"message\":\"no such route: GET "
                    "/v1/nothing\"}}");
        response_done(&r);

        /* A handler's result is the status it answered with. */
        static const char init[] = "{\"envVars\":{\"A\":\"b\"}}";
        call(0, "POST", "/init", NULL, NULL, 0, init, sizeof(init) - 1, 3, &r);
        CHECK_EQ_INT(r.served, 204);
        response_done(&r);
        call(SBX_PORT_ENVD, "GET", "/envs", NULL, NULL, 0, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.served, 200);
        CHECK_STREQ((char *)r.body, "{\"A\":\"b\"}");
        response_done(&r);
        call(0, "POST", "/init", NULL, NULL, 0, "[", 1, 1, &r);
        CHECK_EQ_INT(r.status, 400);
        CHECK_EQ_INT(r.served, 400);
        response_done(&r);
        call(SBX_PORT_ENVD, "POST", "/process.Process/List", NULL, &json, 1, "{}", 2, 1, &r);
        CHECK_EQ_INT(r.served, 200);
        CHECK_STREQ((char *)r.body, "{}");
        response_done(&r);
        call(SBX_PORT_ENVD, "POST", "/process.Process/Connect", NULL, &stream, 1, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.served, 200); /* an end-stream error: invalid_argument */
        response_done(&r);
}

int main(void)
{
        test_matching();
        agent_server_set_routes(&agent_routes);
        test_every_route_reachable();
        test_agent_table();
        test_served();
        return unit_finish("test-agent-routes");
}
