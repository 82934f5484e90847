/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/ingress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "core/keys.h"
#include "frame.h"
#include "json-util.h"
#include "macros.h"

enum ingress_verdict ingress_check(const char *traffic_token, uint16_t port, const char *header)
{
        /* envd has its own access token (E2B's proxy skips this check on 49983) */
        if (!traffic_token[0] || port == SBX_PORT_ENVD)
                return INGRESS_OK;
        if (!header || !header[0])
                return INGRESS_MISSING;
        return const_time_streq(header, traffic_token) ? INGRESS_OK : INGRESS_INVALID;
}

int ingress_reply_refused(struct request *req, const char *id, enum ingress_verdict v)
{
        char msg[192];
        snprintf(msg, sizeof(msg),
                 v == INGRESS_MISSING
                     ? "Sandbox is secured with traffic access token. Token header '%s' is missing"
                     : "Sandbox is secured with traffic access token. Provided token in header "
                       "'%s' is invalid",
                 INGRESS_TOKEN_HEADER);
        return ingress_reply_forbidden(req, id, msg);
}

int ingress_reply_forbidden(struct request *req, const char *id, const char *msg)
{
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        if (o) {
                cJSON_AddStringToObject(o, "sandboxId", id);
                cJSON_AddStringToObject(o, "message", msg);
                cJSON_AddNumberToObject(o, "code", 403);
        }
        return http_reply_cjson(req, 403, o, NULL, NULL);
}

int ingress_reply_port_closed(struct request *req, const char *id, uint16_t port)
{
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        if (o) {
                cJSON_AddStringToObject(o, "sandboxId", id);
                cJSON_AddStringToObject(o, "message", INGRESS_PORT_CLOSED_MESSAGE);
                cJSON_AddNumberToObject(o, "port", port);
                cJSON_AddNumberToObject(o, "code", 502);
        }
        return http_reply_cjson(req, 502, o, NULL, NULL);
}

int ingress_mask_host(const char *mask, uint16_t port, char *out, size_t size)
{
        static const char token[] = MASK_HOST_PORT_TOKEN;
        size_t n = 0;
        char p[8];
        int pl = snprintf(p, sizeof(p), "%u", (unsigned)port);
        while (*mask) {
                const char *piece = mask;
                size_t len = 1;
                if (strncmp(mask, token, sizeof(token) - 1) == 0) {
                        piece = p;
                        len = (size_t)pl;
                        mask += sizeof(token) - 1;
                } else
                        mask++;
                if (n + len >= size)
                        return -ENAMETOOLONG;
                memcpy(out + n, piece, len);
                n += len;
        }
        if (n >= size)
                return -ENAMETOOLONG;
        out[n] = 0;
        return 0;
}

/* Is the Domain attribute value v (n bytes) host itself (a leading dot and case aside)? */
static bool own_domain(const char *v, size_t n, const char *host)
{
        while (n > 0 && (*v == ' ' || *v == '.')) /* RFC 6265 §5.2.3: a leading dot is ignored */
                v++, n--;
        while (n > 0 && v[n - 1] == ' ')
                n--;
        size_t hl = strcspn(host, ":");
        if (host[0] == '[') /* an IPv6 literal: no cookie domain can name it */
                return false;
        return n == hl && strncasecmp(v, host, n) == 0;
}

/* value without its Domain attributes that are not host's; NULL when it keeps them all. */
static char *scoped(const char *value, const char *host, bool *ret_oom)
{
        size_t len = strlen(value);
        char *out = NULL;
        size_t o = 0;
        bool dropped = false;
        for (const char *p = value; *p;) {
                size_t n = strcspn(p, ";");
                const char *a = p;
                while (a < p + n && *a == ' ')
                        a++;
                size_t an = (size_t)(p + n - a);
                /* the first pair is the cookie's name and value, never an attribute */
                bool domain = p != value && an >= 7 && strncasecmp(a, "domain=", 7) == 0 &&
                              !own_domain(a + 7, an - 7, host);
                /* a Domain with spaces around its '=' */
                if (!domain && p != value && an >= 6 && strncasecmp(a, "domain", 6) == 0) {
                        const char *eq = a + 6;
                        while (eq < p + n && *eq == ' ')
                                eq++;
                        domain = eq < p + n && *eq == '=' &&
                                 !own_domain(eq + 1, (size_t)(p + n - eq - 1), host);
                }
                if (domain) {
                        dropped = true;
                } else {
                        if (!out && !(out = malloc(len + 1))) {
                                *ret_oom = true;
                                return NULL;
                        }
                        if (o > 0)
                                out[o++] = ';';
                        memcpy(out + o, p, n);
                        o += n;
                }
                p += n + (p[n] == ';');
        }
        if (!dropped) {
                free(out);
                return NULL;
        }
        if (!out && !(out = strdup(""))) {
                *ret_oom = true;
                return NULL;
        }
        out[o] = 0;
        return out;
}

int ingress_scope_cookies(struct sbx_resp_head *h, const char *host)
{
        for (size_t i = 0; i < h->n_headers; i++) {
                if (strcasecmp(h->headers[i].name, "Set-Cookie") != 0)
                        continue;
                bool oom = false;
                char *v = scoped(h->headers[i].value, host ? host : "", &oom);
                if (oom)
                        return -ENOMEM;
                if (v) {
                        free((char *)h->headers[i].value);
                        h->headers[i].value = v;
                }
        }
        return 0;
}
