/* SPDX-License-Identifier: Apache-2.0 */
/* sbxd's route table (front/routes.c): every route reaches its handler with its auth and body
 * policy; paths no row takes are refused as before the table (404, or 405 under /v1). */
#include <string.h>

#include "cluster/cluster-http.h"
#include "cluster/layer-pull.h"
#include "cluster/move.h"
#include "e2b/routes-lifecycle.h"
#include "e2b/routes-sandboxes.h"
#include "e2b/routes-templates.h"
#include "front/routes.h"
#include "http/http.h"
#include "native/health.h"
#include "native/mcp-host.h"
#include "native/v1-relay.h"
#include "native/v1.h"
#include "native/v1-templates.h"
#include "native/ws-terminal.h"
#include "ui/ui.h"
#include "unit.h"

struct want {
        const char *method, *path;
        int (*handle)(struct request *req);
        enum route_auth auth;
        enum route_body body;
        size_t max_body;
        enum route_errors errors;
        const char *arg, *tail; /* the first {capture}, the {name*} tail (NULL: none) */
};

#define E2B_ROW(m, p, h, a)                                                                        \
        {                                                                                          \
                m, p, h, AUTH_API_KEY, BODY_JSON, HTTP_MAX_CONTROL_BODY, ERRORS_E2B, a, NULL       \
        }
#define V1_ROW(m, p, h, a)                                                                         \
        {                                                                                          \
                m, p, h, AUTH_BEARER, BODY_JSON, V1_MAX_JSON_BODY, ERRORS_NATIVE, a, NULL          \
        }

static const struct want wants[] = {
    E2B_ROW("POST", "/sandboxes", e2b_create, NULL),
    E2B_ROW("POST", "/sandboxes/", e2b_create, NULL),
    E2B_ROW("POST", "/v2/sandboxes", e2b_create, NULL),
    E2B_ROW("GET", "/sandboxes", e2b_list_v1, NULL),
    E2B_ROW("GET", "/sandboxes/", e2b_list_v1, NULL),
    E2B_ROW("GET", "/v2/sandboxes", e2b_list_v2, NULL),
    E2B_ROW("GET", "/sandboxes/abc", e2b_get, "abc"),
    E2B_ROW("GET", "/sandboxes/abc/", e2b_get, "abc"),
    E2B_ROW("DELETE", "/sandboxes/abc", e2b_kill, "abc"),
    E2B_ROW("POST", "/sandboxes/abc/timeout", e2b_timeout, "abc"),
    E2B_ROW("POST", "/sandboxes/abc/connect", e2b_connect, "abc"),
    E2B_ROW("POST", "/v2/sandboxes/xyz/connect", e2b_connect, "xyz"),
    E2B_ROW("POST", "/sandboxes/abc/pause", e2b_pause, "abc"),
    E2B_ROW("POST", "/sandboxes/abc/resume", e2b_resume, "abc"),
    E2B_ROW("POST", "/sandboxes/abc/refreshes", e2b_refresh, "abc"),
    E2B_ROW("GET", "/sandboxes/abc/metrics", e2b_metrics, "abc"),
    E2B_ROW("POST", "/sandboxes/abc/snapshots", e2b_snapshot_create, "abc"),
    E2B_ROW("POST", "/sandboxes/abc/fork", e2b_fork, "abc"),
    E2B_ROW("GET", "/snapshots", e2b_snapshot_list, NULL),
    E2B_ROW("DELETE", "/templates/snap-1", e2b_template_delete, "snap-1"),
    /* template builds: the fixed names come before /templates/{id} */
    E2B_ROW("POST", "/v3/templates", e2b_build_request, NULL),
    E2B_ROW("GET", "/templates/aliases/my-app", e2b_template_alias, "my-app"),
    E2B_ROW("POST", "/templates/tags", e2b_template_tags_assign, NULL),
    E2B_ROW("DELETE", "/templates/tags", e2b_template_tags_remove, NULL),
    E2B_ROW("GET", "/templates", e2b_template_list, NULL),
    E2B_ROW("GET", "/templates/0123456789abcdef0123", e2b_template_get, "0123456789abcdef0123"),
    E2B_ROW("GET", "/templates/0123456789abcdef0123/tags", e2b_template_tags_list,
            "0123456789abcdef0123"),
    E2B_ROW("POST", "/v2/templates/t1/builds/b1", e2b_build_start, "t1"),
    E2B_ROW("GET", "/templates/t1/builds/b1/status", e2b_build_status, "t1"),
    /* sbxd's own health: no key, no body */
    {"GET", "/health", health_handle, AUTH_NONE, BODY_NONE, 0, ERRORS_E2B, NULL, NULL},
    {"GET", "/metrics", e2b_prometheus, AUTH_API_KEY_BEARER, BODY_JSON, HTTP_MAX_CONTROL_BODY,
     ERRORS_E2B, NULL, NULL},
    /* cluster mode: node routes; the layer and template names are tails (64 characters) */
    V1_ROW("GET", "/v1/nodes", cluster_handle_nodes, NULL),
    V1_ROW("POST", "/v1/nodes/n1/drain", cluster_handle_drain, "n1"),
    V1_ROW("DELETE", "/v1/nodes/n1/drain", cluster_handle_drain, "n1"),
    V1_ROW("POST", "/v1/cluster/adopt", cluster_handle_adopt, NULL),
    {"GET", "/v1/cluster/templates/snap-0123456789abcdef0123456789abcdef0123456789abcdef012345678",
     cluster_handle_template_get, AUTH_BEARER, BODY_JSON, V1_MAX_JSON_BODY, ERRORS_NATIVE, NULL,
     "/snap-0123456789abcdef0123456789abcdef0123456789abcdef012345678"},
    {"GET", "/v1/cluster/layers/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
     cluster_handle_layer_get, AUTH_BEARER, BODY_JSON, V1_MAX_JSON_BODY, ERRORS_NATIVE, NULL,
     "/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
    V1_ROW("GET", "/v1/sandboxes", v1_handle_list, NULL),
    V1_ROW("GET", "/v1/sandboxes/", v1_handle_list, NULL),
    V1_ROW("POST", "/v1/sandboxes", v1_handle_create, NULL),
    V1_ROW("GET", "/v1/sandboxes/abc", v1_handle_get, "abc"),
    V1_ROW("GET", "/v1/sandboxes/abc/", v1_handle_get, "abc"),
    V1_ROW("DELETE", "/v1/sandboxes/abc", v1_handle_kill, "abc"),
    {"GET", "/v1/sandboxes/abc/terminal", ws_terminal_upgrade, AUTH_BEARER_TOKEN, BODY_NONE, 0,
     ERRORS_NATIVE, "abc", NULL},
    {"POST", "/v1/sandboxes/abc/terminal", v1_relay_finish, AUTH_BEARER, BODY_STREAM, 0,
     ERRORS_NATIVE, "abc", "/terminal"},
    {"POST", "/v1/sandboxes/abc/exec", v1_relay_finish, AUTH_BEARER, BODY_STREAM, 0, ERRORS_NATIVE,
     "abc", "/exec"},
    {"GET", "/v1/sandboxes/abc/fs/list", v1_relay_finish, AUTH_BEARER, BODY_STREAM, 0,
     ERRORS_NATIVE, "abc", "/fs/list"},
    {"PUT", "/v1/sandboxes/abc/files", v1_relay_finish, AUTH_BEARER, BODY_STREAM, 0, ERRORS_NATIVE,
     "abc", "/files"},
    {"DELETE", "/v1/sandboxes/abc//", v1_relay_finish, AUTH_BEARER, BODY_STREAM, 0, ERRORS_NATIVE,
     "abc", "//"},
    {"POST", "/mcp", mcp_host_handle, AUTH_BEARER, BODY_BUFFERED, V1_MAX_JSON_BODY, ERRORS_NATIVE,
     NULL, NULL},
    {"GET", "/mcp/", mcp_host_handle, AUTH_BEARER, BODY_BUFFERED, V1_MAX_JSON_BODY, ERRORS_NATIVE,
     NULL, NULL},
    {"PATCH", "/mcp", mcp_host_handle, AUTH_BEARER, BODY_BUFFERED, V1_MAX_JSON_BODY, ERRORS_NATIVE,
     NULL, NULL},
    V1_ROW("GET", "/v1/templates", v1_templates_list, NULL),
    /* the web console: no key, the body dropped */
    {"GET", "/", ui_handle_redirect, AUTH_NONE, BODY_NONE, 0, ERRORS_E2B, NULL, NULL},
    {"HEAD", "/ui", ui_handle_redirect, AUTH_NONE, BODY_NONE, 0, ERRORS_E2B, NULL, NULL},
    {"GET", "/ui/", ui_handle_file, AUTH_NONE, BODY_NONE, 0, ERRORS_E2B, NULL, NULL},
    {"GET", "/ui/js/app.js", ui_handle_file, AUTH_NONE, BODY_NONE, 0, ERRORS_E2B, NULL,
     "/js/app.js"},
    {"HEAD", "/ui/../keys", ui_handle_file, AUTH_NONE, BODY_NONE, 0, ERRORS_E2B, NULL, "/../keys"},
};

static void test_every_route(void)
{
        for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
                const struct want *w = &wants[i];
                struct route_args a;
                bool path_only;
                const struct route *r =
                    route_find(sbxd_routes, sbxd_n_routes, w->method, w->path, &a, &path_only);
                if (!r) {
                        fprintf(stderr, "no route for %s %s\n", w->method, w->path);
                        CHECK(r);
                        continue;
                }
                CHECK(r->handle == w->handle);
                CHECK_EQ_INT(r->auth, w->auth);
                CHECK_EQ_INT(r->body, w->body);
                CHECK_EQ_INT(r->errors, w->errors);
                if (w->body == BODY_JSON || w->body == BODY_BUFFERED)
                        CHECK_EQ_INT(r->max_body, w->max_body);
                if (w->body == BODY_STREAM)
                        CHECK(r->upload != NULL && r->begin != NULL);
                CHECK_STREQ(a.v[0], w->arg ? w->arg : "");
                if (w->tail)
                        CHECK_STREQ(a.tail, w->tail);
                else
                        CHECK(a.tail == NULL);
        }
        /* every row has a handler, and a streamed row its upload */
        for (size_t i = 0; i < sbxd_n_routes; i++) {
                CHECK(sbxd_routes[i].handle != NULL);
                CHECK(sbxd_routes[i].body != BODY_STREAM || sbxd_routes[i].upload != NULL);
        }
}

/* Where a row's request is answered in cluster mode: the row says so (cluster/cluster-http.h),
 * and a row that names a sandbox or a volume by {id} can never be left answered here. */
static const struct {
        const char *method, *path;
        enum route_place place;
} places[] = {
    {"POST", "/sandboxes", PLACE_CREATE},
    {"POST", "/v2/sandboxes/", PLACE_CREATE},
    {"GET", "/sandboxes", PLACE_LIST},
    {"GET", "/v2/sandboxes", PLACE_LIST},
    {"GET", "/sandboxes/abc", PLACE_SANDBOX},
    {"DELETE", "/sandboxes/abc/", PLACE_SANDBOX},
    {"POST", "/sandboxes/abc/timeout", PLACE_SANDBOX},
    {"PUT", "/sandboxes/abc/network", PLACE_SANDBOX},
    {"POST", "/v2/sandboxes/abc/connect", PLACE_SANDBOX},
    {"POST", "/sandboxes/abc/pause", PLACE_SANDBOX},
    {"GET", "/sandboxes/abc/metrics", PLACE_SANDBOX},
    {"POST", "/sandboxes/abc/snapshots", PLACE_SANDBOX},
    {"POST", "/sandboxes/abc/fork", PLACE_SANDBOX},
    {"GET", "/snapshots", PLACE_LOCAL},
    {"GET", "/files", PLACE_SIGNED_FILES},
    {"POST", "/volumes", PLACE_CREATE_VOLUME},
    {"GET", "/volumes", PLACE_LIST_VOLUMES},
    {"GET", "/volumes/vol1", PLACE_VOLUME},
    {"DELETE", "/volumes/vol1", PLACE_VOLUME},
    {"GET", "/volumecontent/vol1/dir", PLACE_VOLUME},
    {"PUT", "/volumecontent/vol1/file", PLACE_VOLUME},
    {"PATCH", "/volumecontent/vol1/path", PLACE_VOLUME},
    {"GET", "/templates", PLACE_LOCAL},
    {"GET", "/metrics", PLACE_LOCAL},
    {"GET", "/v1/nodes", PLACE_LOCAL},
    {"POST", "/v1/cluster/adopt", PLACE_NODE_ONLY},
    {"GET", "/v1/cluster/files-owner", PLACE_NODE_ONLY},
    {"GET", "/v1/sandboxes", PLACE_LIST_NATIVE},
    {"POST", "/v1/sandboxes/", PLACE_CREATE_NATIVE},
    {"GET", "/v1/sandboxes/abc", PLACE_SANDBOX},
    {"GET", "/v1/sandboxes/abc/terminal", PLACE_SANDBOX},
    {"POST", "/v1/sandboxes/abc/exec", PLACE_SANDBOX},
    {"GET", "/v1/images", PLACE_LOCAL},
    {"POST", "/mcp", PLACE_SESSION},
    {"DELETE", "/mcp/", PLACE_SESSION},
};

static bool starts(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void test_places(void)
{
        for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
                struct route_args a;
                bool po;
                const struct route *r = route_find(sbxd_routes, sbxd_n_routes, places[i].method,
                                                   places[i].path, &a, &po);
                CHECK(r != NULL);
                if (r && r->place != places[i].place)
                        fprintf(stderr, "%s %s: place %d, want %d\n", places[i].method,
                                places[i].path, r->place, places[i].place);
                CHECK(r && r->place == places[i].place);
        }
        for (size_t i = 0; i < sbxd_n_routes; i++) {
                const struct route *r = &sbxd_routes[i];
                bool sandbox = starts(r->pattern, "/sandboxes/{id}") ||
                               starts(r->pattern, "/v2/sandboxes/{id}") ||
                               starts(r->pattern, "/v1/sandboxes/{id}");
                bool volume = starts(r->pattern, "/volumes/{id}") ||
                              starts(r->pattern, "/volumecontent/{id}");
                if (sandbox != (r->place == PLACE_SANDBOX) || volume != (r->place == PLACE_VOLUME))
                        fprintf(stderr, "%s: names a %s by {id} but its place is %d\n", r->pattern,
                                sandbox ? "sandbox" : "volume", r->place);
                CHECK(sandbox == (r->place == PLACE_SANDBOX));
                CHECK(volume == (r->place == PLACE_VOLUME));
                /* cluster_route() takes the sandbox or volume from the first capture */
                if (sandbox || volume)
                        CHECK(strstr(r->pattern, "{id}") != NULL);
        }
}

static void check_none(const char *method, const char *path, bool path_only,
                       enum route_errors errors)
{
        struct route_args a;
        bool po;
        const struct route *r = route_find(sbxd_routes, sbxd_n_routes, method, path, &a, &po);
        if (r)
                fprintf(stderr, "%s %s: unexpected route %s\n", method, path, r->pattern);
        CHECK(r == NULL);
        CHECK_EQ_INT(po, path_only);
        CHECK_EQ_INT(route_errors_for_path(path), errors);
}

static void test_unknown(void)
{
        /* E2B: 404 "no such route" for all of these (path_only does not matter there) */
        check_none("GET", "/v2/sandboxes/abc", false, ERRORS_E2B);
        check_none("POST", "/v2/sandboxes/abc/timeout", false, ERRORS_E2B);
        check_none("PUT", "/sandboxes", true, ERRORS_E2B);
        check_none("GET", "/sandboxes/abc/timeout", true, ERRORS_E2B);
        check_none("POST", "/", true, ERRORS_E2B); /* GET / leads to the console */
        check_none("POST", "/ui/js/app.js", true, ERRORS_E2B);
        check_none("GET", "/uix", false, ERRORS_E2B);
        check_none("GET", "/sandboxes//", false, ERRORS_E2B);
        check_none("GET", "/sandboxesx", false, ERRORS_E2B);
        check_none("POST", "/health", true, ERRORS_E2B); /* GET /health is sbxd's own */
        check_none("GET", "/health/x", false, ERRORS_E2B);
        check_none("GET", "/v2/snapshots", false, ERRORS_E2B);
        check_none("DELETE", "/templates/x/", false, ERRORS_E2B);
        check_none("DELETE", "/templates/a/b", false, ERRORS_E2B);
        check_none("GET", "/sandboxes/abc/pause", true, ERRORS_E2B);
        check_none("POST", "/v2/sandboxes/abc/pause", false, ERRORS_E2B);
        check_none("DELETE", "/templates/", false, ERRORS_E2B);
        check_none("GET", "/v2/sandboxes/abc/metrics", false, ERRORS_E2B);
        check_none("GET", "/sandboxes/abc/connect/", false, ERRORS_E2B);
        char longid[128] = "/sandboxes/";
        memset(longid + 11, 'a', 64);
        check_none("GET", longid, false, ERRORS_E2B);
        /* the native API: 404 for paths it does not have, 405 for another method */
        check_none("GET", "/v1", false, ERRORS_NATIVE);
        check_none("GET", "/v1/", false, ERRORS_NATIVE);
        check_none("GET", "/v1/nothing", false, ERRORS_NATIVE);
        check_none("GET", "/v1/sandboxesx", false, ERRORS_NATIVE);
        check_none("POST", "/v1/sandboxes//exec", false, ERRORS_NATIVE);
        check_none("PATCH", "/v1/sandboxes/abc", true, ERRORS_NATIVE);
        check_none("PUT", "/v1/sandboxes", true, ERRORS_NATIVE);
        check_none("PATCH", "/v1/sandboxes/abc/exec", true, ERRORS_NATIVE);
        char v1long[128] = "/v1/sandboxes/";
        memset(v1long + 14, 'a', 64);
        check_none("GET", v1long, false, ERRORS_NATIVE);
        /* not ours */
        CHECK_EQ_INT(route_errors_for_path("/v1x"), ERRORS_E2B);
        CHECK_EQ_INT(route_errors_for_path("/mcpx"), ERRORS_E2B);
        CHECK_EQ_INT(route_errors_for_path("/sandboxes"), ERRORS_E2B);
        check_none("POST", "/mcpx", false, ERRORS_E2B);
}

static void test_pattern(void)
{
        struct route_args a;
        CHECK(route_pattern_match("/a/{x}/b/{y}", "/a/1/b/22", &a));
        CHECK_STREQ(a.v[0], "1");
        CHECK_STREQ(a.v[1], "22");
        CHECK(!route_pattern_match("/a/{x}", "/a/", &a));
        CHECK(!route_pattern_match("/a/{x}", "/a/1/", &a));
        CHECK(!route_pattern_match("/a/{x}/{r*}", "/a/1/", &a));
        CHECK(route_pattern_match("/a/{x}/{r*}", "/a/1/z/y", &a));
        CHECK_STREQ(a.tail, "/z/y");
        CHECK(!route_pattern_match("/a/{x", "/a/1", &a)); /* a bad pattern matches nothing */
        CHECK_EQ_INT(route_method_bit("GET"), ROUTE_GET);
        CHECK_EQ_INT(route_method_bit("PATCH"), ROUTE_OTHER);
        CHECK_EQ_INT(route_method_bit("get"), ROUTE_OTHER); /* methods are case-sensitive */
}

int main(void)
{
        test_every_route();
        test_places();
        test_unknown();
        test_pattern();
        return unit_finish("test-route-table");
}
