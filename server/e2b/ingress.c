/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/ingress.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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
