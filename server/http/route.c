/* SPDX-License-Identifier: Apache-2.0 */
#include "http/route.h"

#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "macros.h"

static bool parse_port(const char *s, size_t len, uint16_t *ret)
{
        unsigned v = 0;
        if (len == 0 || len > 5)
                return false;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                v = v * 10 + (unsigned)(s[i] - '0');
        }
        if (v > 65535)
                return false;
        *ret = (uint16_t)v;
        return true;
}

static bool is_sandbox_port(uint16_t p)
{
        return p == SBX_PORT_ENVD || p == SBX_PORT_CODE;
}

static void copy_id(char dst[ROUTE_ID_MAX], const char *s, size_t len)
{
        if (len >= ROUTE_ID_MAX)
                len = ROUTE_ID_MAX - 1;
        memcpy(dst, s, len);
        dst[len] = 0;
}

void route_classify(const char *port_hdr, const char *id_hdr, const char *host,
                    struct route_target *ret)
{
        *ret = (struct route_target){.kind = ROUTE_CONTROL};

        if (port_hdr) {
                uint16_t p;
                if (!parse_port(port_hdr, strlen(port_hdr), &p) || !is_sandbox_port(p)) {
                        ret->kind = ROUTE_BAD_PORT;
                        return;
                }
                ret->kind = ROUTE_PROXY;
                ret->port = p;
                if (id_hdr)
                        copy_id(ret->id, id_hdr, strlen(id_hdr));
                return;
        }
        if (id_hdr || !host)
                return;

        /* "<port>-<id>.<domain>[:port]" */
        const char *dash = strchr(host, '-');
        const char *dot = dash ? strchr(dash, '.') : NULL;
        uint16_t p;
        if (!dash || !dot || dot == dash + 1 || !parse_port(host, (size_t)(dash - host), &p) ||
            !is_sandbox_port(p))
                return;
        for (const char *c = dash + 1; c < dot; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')))
                        return;
        ret->kind = ROUTE_PROXY;
        ret->port = p;
        copy_id(ret->id, dash + 1, (size_t)(dot - dash - 1));
}

/* "/sandboxes/{id}[/rest]" → id and rest (NULL when none). */
static bool split_sandbox_path(const char *p, char id[ROUTE_ID_MAX], const char **ret_rest)
{
        static const char pre[] = "/sandboxes/";
        if (strncmp(p, pre, sizeof(pre) - 1) != 0)
                return false;
        p += sizeof(pre) - 1;
        size_t l = strcspn(p, "/");
        if (l == 0 || l >= ROUTE_ID_MAX)
                return false;
        copy_id(id, p, l);
        *ret_rest = p[l] ? p + l : NULL;
        return true;
}

/* Routes outside /sandboxes/{id}: GET /snapshots, DELETE /templates/{id}, GET /metrics. */
static enum route_op route_match_lifecycle(const char *method, const char *path,
                                           char ret_id[ROUTE_ID_MAX])
{
        static const char tpl[] = "/templates/";
        if (strcmp(method, "GET") == 0 && strcmp(path, "/snapshots") == 0)
                return OP_SNAPSHOT_LIST;
        if (strcmp(method, "GET") == 0 && strcmp(path, "/metrics") == 0)
                return OP_PROMETHEUS;
        if (strcmp(method, "DELETE") == 0 && strncmp(path, tpl, sizeof(tpl) - 1) == 0) {
                const char *id = path + sizeof(tpl) - 1;
                size_t l = strlen(id);
                if (l == 0 || l >= ROUTE_ID_MAX || strchr(id, '/'))
                        return OP_NONE;
                copy_id(ret_id, id, l);
                return OP_TEMPLATE_DELETE;
        }
        return OP_NONE;
}

enum route_op route_match(const char *method, const char *path, char ret_id[ROUTE_ID_MAX])
{
        bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
        bool del = strcmp(method, "DELETE") == 0;
        bool v2 = false;
        const char *rest;

        ret_id[0] = 0;
        enum route_op lop = route_match_lifecycle(method, path, ret_id);
        if (lop != OP_NONE)
                return lop;
        if (strncmp(path, "/v2/", 4) == 0) {
                v2 = true;
                path += 3;
        }
        if (strcmp(path, "/sandboxes") == 0 || strcmp(path, "/sandboxes/") == 0) {
                if (post)
                        return v2 ? OP_CREATE_V2 : OP_CREATE_V1;
                if (get)
                        return v2 ? OP_LIST_V2 : OP_LIST_V1;
                return OP_NONE;
        }
        if (!split_sandbox_path(path, ret_id, &rest))
                return OP_NONE;
        if (!rest || strcmp(rest, "/") == 0) {
                if (v2)
                        return OP_NONE;
                return get ? OP_GET : del ? OP_KILL : OP_NONE;
        }
        if (post && strcmp(rest, "/connect") == 0)
                return v2 ? OP_CONNECT_V2 : OP_CONNECT_V1;
        if (post && !v2 && strcmp(rest, "/timeout") == 0)
                return OP_TIMEOUT;
        if (!v2 && post) {
                static const struct {
                        const char *rest;
                        enum route_op op;
                } sub[] = {{"/pause", OP_PAUSE},
                           {"/resume", OP_RESUME},
                           {"/refreshes", OP_REFRESH},
                           {"/snapshots", OP_SNAPSHOT_CREATE},
                           {"/fork", OP_FORK}};
                for (size_t i = 0; i < ELEMENTSOF(sub); i++)
                        if (strcmp(rest, sub[i].rest) == 0)
                                return sub[i].op;
        }
        if (get && !v2 && strcmp(rest, "/metrics") == 0)
                return OP_METRICS;
        return OP_NONE;
}

bool route_proxy_forbidden(uint16_t port, const char *path)
{
        /* envd's orchestrator-only routes. /init carries the envd access token and env vars:
         * only sbxd sends it, on port 0. The others (E2B snapshotting) are refused too, so no
         * agent ever has to tell an orchestrator call from an outside one. */
        static const char *const internal[] = {"/init",     "/freeze", "/unfreeze", "/collapse",
                                               "/fsfreeze", "/fsthaw", "/upgrade"};
        while (path[0] == '/' && path[1] == '/')
                path++; /* "//init" is "/init" to most routers */
        for (size_t i = 0; i < ELEMENTSOF(internal); i++) {
                size_t l = strlen(internal[i]);
                if (strncmp(path, internal[i], l) == 0 && (path[l] == 0 || path[l] == '/'))
                        return true;
        }
        return false;
}

bool route_proxy_needs_token(uint16_t port, const char *method, const char *path)
{
        if (port == SBX_PORT_CODE) {
                /* The SDKs send X-Access-Token to the code interpreter on /execute only (E2B's
                 * server hands it to envd, which checks it). The agent checks no token, so
                 * running code needs it here; contexts stay open as in E2B. */
                while (path[0] == '/' && path[1] == '/')
                        path++; /* "//execute" must not slip through */
                return strncmp(path, "/execute", 8) == 0;
        }
        if (port != SBX_PORT_ENVD)
                return true;
        if (strcmp(path, "/health") == 0 && strcmp(method, "GET") == 0)
                return false;
        /* envd exempts GET/POST /files from the header check when a valid `signature` query
         * parameter is given: e2b/proxy.c accepts one instead of the header
         * (e2b/files-signature.c). */
        return true;
}
