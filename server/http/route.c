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

/* Any TCP port: 49983 (envd) and 49999 (the code interpreter) are the agent's own, every other
 * one a user port relayed to the sandbox's own server (api/frames.md, "User ports"). Port 0 is
 * sbxd's internal port and never reachable from outside. */
static bool is_sandbox_port(uint16_t p)
{
        return p != SBX_PORT_INTERNAL;
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

unsigned route_method_bit(const char *m)
{
        static const struct {
                const char *name;
                unsigned bit;
        } bits[] = {{"GET", ROUTE_GET},
                    {"POST", ROUTE_POST},
                    {"PUT", ROUTE_PUT},
                    {"DELETE", ROUTE_DELETE},
                    {"HEAD", ROUTE_HEAD}};
        for (size_t i = 0; i < ELEMENTSOF(bits); i++)
                if (strcmp(m, bits[i].name) == 0)
                        return bits[i].bit;
        return ROUTE_OTHER;
}

bool route_pattern_match(const char *pat, const char *path, struct route_args *args)
{
        size_t n_args = 0;
        *args = (struct route_args){};
        while (*pat) {
                if (*pat != '{') {
                        if (*pat++ != *path++)
                                return false;
                        continue;
                }
                const char *close = strchr(pat, '}');
                if (!close)
                        return false; /* a bad pattern matches nothing */
                if (close[-1] == '*') {
                        /* the rest, from the '/' before it */
                        if (close[1] || path[-1] != '/' || !*path)
                                return false;
                        args->tail = path - 1;
                        return true;
                }
                size_t l = strcspn(path, "/");
                if (l == 0 || l >= ROUTE_ID_MAX || n_args >= ROUTE_MAX_ARGS)
                        return false;
                copy_id(args->v[n_args++], path, l);
                path += l;
                pat = close + 1;
        }
        return *path == 0;
}

const struct route *route_find(const struct route *table, size_t n, const char *method,
                               const char *path, struct route_args *args, bool *ret_path_only)
{
        unsigned bit = route_method_bit(method);
        *ret_path_only = false;
        for (size_t i = 0; i < n; i++) {
                if (!route_pattern_match(table[i].pattern, path, args))
                        continue;
                if (table[i].methods & bit)
                        return &table[i];
                *ret_path_only = true;
        }
        *args = (struct route_args){};
        return NULL;
}

enum route_errors route_errors_for_path(const char *path)
{
        if (strcmp(path, "/v1") == 0 || strncmp(path, "/v1/", 4) == 0 ||
            strcmp(path, "/mcp") == 0 || strcmp(path, "/mcp/") == 0)
                return ERRORS_NATIVE;
        return ERRORS_E2B;
}

bool route_proxy_forbidden(uint16_t port, const char *path)
{
        if (route_port_is_user(port))
                return false; /* the user's own server: every path is its business */
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

bool route_port_is_user(uint16_t port)
{
        return port != SBX_PORT_INTERNAL && port != SBX_PORT_ENVD && port != SBX_PORT_CODE;
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
        if (route_port_is_user(port))
                return false; /* guarded by the traffic token when the sandbox has one */
        if (port != SBX_PORT_ENVD)
                return true;
        if (strcmp(path, "/health") == 0 && strcmp(method, "GET") == 0)
                return false;
        /* envd exempts GET/POST /files from the header check when a valid `signature` query
         * parameter is given: e2b/proxy.c accepts one instead of the header
         * (e2b/files-signature.c). */
        return true;
}
