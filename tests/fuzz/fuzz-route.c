/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for how sbxd routes a request before any handler runs: the proxy/control
 * decision from E2b-Sandbox-Port, E2b-Sandbox-Id and Host (route_classify(),
 * server/http/route.c), the orchestrator-only and token rules for proxied paths, and the raw
 * query of the request target (server/core/query.c), which sbxd passes on to the agent.
 *
 * Input: up to five fields separated by '\n': port header, id header, Host, method, request
 * target. An empty field (the byte 0x01 alone) stands for an absent header. Properties checked:
 *   - a proxied request names a port other than 0 and an id that fits ROUTE_ID_MAX; an id taken
 *     from Host is [a-z0-9]* and the Host really starts "<port>-<id>.";
 *   - a bad E2b-Sandbox-Port is ROUTE_BAD_PORT, never a proxy to some other port;
 *   - "/init" however many leading slashes is refused on the proxy, and every envd path but
 *     GET /health needs the token;
 *   - the raw query is the target's text between '?' and '#', and its pairs, decoded by
 *     query_next_pair() and encoded again by url_query_append(), decode to the same pairs.
 */
#include <errno.h>
#include <string.h>

#include "buf.h"
#include "core/query.h"
#include "frame.h"
#include "fuzz.h"
#include "http/route.h"
#include "url-util.h"

#define FIELDS 5

static void check_classify(const char *port, const char *id, const char *host)
{
        struct route_target t;
        route_classify(port, id, host, &t);
        FUZZ_CHECK(memchr(t.id, 0, sizeof(t.id)) != NULL);
        switch (t.kind) {
        case ROUTE_PROXY:
                FUZZ_CHECK(t.port != SBX_PORT_INTERNAL);
                if (!port) {
                        /* From Host: "<port>-<id>." with the id as sent. */
                        char want[16];
                        snprintf(want, sizeof(want), "%u-", t.port);
                        FUZZ_CHECK(strncmp(host, want, strlen(want)) == 0);
                        size_t l = strlen(t.id);
                        FUZZ_CHECK(l > 0 &&
                                   strspn(t.id, "abcdefghijklmnopqrstuvwxyz0123456789") == l);
                        const char *rest = host + strlen(want);
                        if (l < ROUTE_ID_MAX - 1)
                                FUZZ_CHECK(strncmp(rest, t.id, l) == 0 && rest[l] == '.');
                }
                break;
        case ROUTE_BAD_PORT:
                FUZZ_CHECK(port != NULL);
                break;
        case ROUTE_CONTROL:
                FUZZ_CHECK(t.port == 0 && t.id[0] == 0);
                break;
        default:
                FUZZ_CHECK(!"unknown route kind");
        }
}

static void check_proxy_rules(const char *method, const char *path)
{
        for (int i = 0; i < 2; i++) {
                uint16_t port = i ? SBX_PORT_CODE : SBX_PORT_ENVD;
                bool forbidden = route_proxy_forbidden(port, path);
                bool token = route_proxy_needs_token(port, method, path);
                size_t s = strspn(path, "/");
                if (s >= 1 && strncmp(path + s, "init", 4) == 0 &&
                    (path[s + 4] == 0 || path[s + 4] == '/'))
                        FUZZ_CHECK(forbidden);
                if (port == SBX_PORT_ENVD &&
                    !(strcmp(method, "GET") == 0 && strcmp(path, "/health") == 0))
                        FUZZ_CHECK(token);
                if (port == SBX_PORT_CODE && s >= 1 && strncmp(path + s, "execute", 7) == 0)
                        FUZZ_CHECK(token);
        }
        FUZZ_CHECK(route_proxy_needs_token(0, method, path));
}

/* Decode every pair of q into a list "k\0v\0..." in *out; returns pairs or -errno. */
static int decode_pairs(const char *q, struct buf *out)
{
        size_t pos = 0;
        int n = 0, r;
        char *k, *v;
        while ((r = query_next_pair(q, &pos, &k, &v)) == 1) {
                FUZZ_CHECK(pos <= strlen(q));
                FUZZ_CHECK(buf_add(out, k, strlen(k) + 1) == 0);
                FUZZ_CHECK(buf_add(out, v, strlen(v) + 1) == 0);
                free(k);
                free(v);
                n++;
        }
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        return r < 0 ? r : n;
}

static void check_query(const char *target)
{
        char *q = NULL;
        FUZZ_CHECK(query_from_target(target, &q) == 0);
        const char *mark = strchr(target, '?');
        if (!mark) {
                FUZZ_CHECK(q[0] == 0);
        } else {
                FUZZ_CHECK(strchr(q, '#') == NULL);
                FUZZ_CHECK(strncmp(mark + 1, q, strlen(q)) == 0);
                char after = mark[1 + strlen(q)];
                FUZZ_CHECK(after == 0 || after == '#');
        }
        struct buf pairs = {};
        int n = decode_pairs(q, &pairs);
        if (n > 0) {
                /* Encode them again: they decode to the same pairs. */
                char *enc = NULL;
                for (const char *p = pairs.p; p < pairs.p + pairs.len;) {
                        const char *k = p, *v = p + strlen(p) + 1;
                        FUZZ_CHECK(url_query_append(&enc, k, v) == 0);
                        p = v + strlen(v) + 1;
                }
                struct buf again = {};
                FUZZ_CHECK(decode_pairs(enc, &again) == n);
                FUZZ_CHECK(again.len == pairs.len && memcmp(again.p, pairs.p, pairs.len) == 0);
                buf_done(&again);
                free(enc);
        }
        buf_done(&pairs);
        free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *f[FIELDS];
        char *copy = fuzz_fields(data, size, f, FIELDS);
        check_classify(f[0], f[1], f[2]);
        const char *method = f[3] ? f[3] : "GET", *target = f[4] ? f[4] : "/";
        char *path = strndup(target, strcspn(target, "?#"));
        FUZZ_CHECK(path);
        check_proxy_rules(method, path);
        check_query(target);
        free(path);
        free(copy);
        return 0;
}
