/* SPDX-License-Identifier: Apache-2.0 */
#include "http/http.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/errors.h"
#include "log.h"
#include "macros.h"
#include "core/stats.h"

const char *http_header(struct request *req, const char *name)
{
        return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

/* Whether a refusal decided before the body should wait for the body: a client still sending
 * when the server closes gets a reset instead of the answer. Not with Expect: 100-continue
 * (the client then sends nothing) nor past HTTP_MAX_DISCARD. */
static bool defer_refusal(struct request *req)
{
        const char *cl = http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
        const char *te = http_header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        const char *ex = http_header(req, MHD_HTTP_HEADER_EXPECT);
        if (!req->in_first_call || (ex && strcasecmp(ex, "100-continue") == 0))
                return false;
        if (te)
                return true;
        unsigned long long l = cl ? strtoull(cl, NULL, 10) : 0;
        return l > 0 && l <= HTTP_MAX_DISCARD;
}

enum MHD_Result http_reply_json_hdr(struct request *req, unsigned status, const char *body,
                                    const char *name, const char *value)
{
        if (defer_refusal(req)) {
                free(req->deferred_body);
                req->deferred_body = strdup(body);
                if (!req->deferred_body)
                        return MHD_NO;
                req->status = status;
                return MHD_YES;
        }
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
        if (!resp)
                return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        if (name)
                MHD_add_response_header(resp, name, value);
        req->status = status;
        enum MHD_Result ret = MHD_queue_response(req->conn, status, resp);
        MHD_destroy_response(resp);
        return ret;
}

enum MHD_Result http_reply_json(struct request *req, unsigned status, const char *body)
{
        return http_reply_json_hdr(req, status, body, NULL, NULL);
}

enum MHD_Result http_reply_204(struct request *req)
{
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        if (!resp)
                return MHD_NO;
        req->status = 204;
        enum MHD_Result ret = MHD_queue_response(req->conn, 204, resp);
        MHD_destroy_response(resp);
        return ret;
}

enum MHD_Result http_reply_error(struct request *req, int r, const char *sandbox_id,
                                 const char *fmt, ...)
{
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);

        unsigned status;
        _cleanup_free_ char *body = NULL;
        if (api_error_build(r, sandbox_id, msg, &status, &body) < 0)
                return MHD_NO;
        stats_count_http_error(status);
        /* 502s (unknown sandbox, agent gone) are the client's news, not sbxd's fault. */
        if (status >= 500 && status != 502)
                log_warning("req=%s %s %s → %u: %s", req->rid, req->method ? req->method : "-",
                            req->path ? req->path : "-", status, msg);
        return http_reply_json(req, status, body);
}
