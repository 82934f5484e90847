/* SPDX-License-Identifier: Apache-2.0 */
/* The request side of core/request.h: headers, the body, the user a request acts as. */
#include "core/request.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "connect.h"
#include "core/config.h"
#include "core/http.h"
#include "macros.h"

const char *agent_request_header(const struct agent_request *r, const char *name)
{
        return sbx_header_get(r->head.headers, r->head.n_headers, name);
}

bool agent_request_is_stream(const struct agent_request *r)
{
        const char *ct = agent_request_header(r, "Content-Type");
        return ct && strncasecmp(ct, "application/connect+", 20) == 0;
}

int agent_request_read_body(struct agent_request *r, const uint8_t **ret_buf, size_t *ret_len)
{
        uint32_t len;
        int e;

        if (r->body_done)
                return 0;
        e = sbx_frame_read_body(r->fd, r->frame_buf, &len);
        if (e < 0)
                return e == -EPIPE ? -EPROTO : e;
        if (e == 0) {
                r->body_done = true;
                return 0;
        }
        *ret_buf = r->frame_buf;
        *ret_len = len;
        return 1;
}

int agent_request_read_body_all(struct agent_request *r, size_t max, uint8_t **ret, size_t *ret_len)
{
        _cleanup_(buf_done) struct buf b = {0};
        const uint8_t *chunk;
        size_t n;
        int e;

        while ((e = agent_request_read_body(r, &chunk, &n)) > 0) {
                if (n > max - b.len)
                        return -EMSGSIZE;
                if (buf_add(&b, chunk, n) < 0)
                        return -ENOMEM;
        }
        if (e < 0)
                return e;
        if (!b.p && buf_add(&b, "", 0) < 0) /* an empty body is "", never NULL */
                return -ENOMEM;
        *ret_len = b.len;
        *ret = (uint8_t *)buf_steal(&b);
        return 0;
}

int agent_request_discard_body(struct agent_request *r, size_t max)
{
        const uint8_t *chunk;
        size_t n, total = 0;
        int e;

        while ((e = agent_request_read_body(r, &chunk, &n)) > 0) {
                total += n;
                if (total > max)
                        return -EMSGSIZE;
        }
        return e;
}

int agent_request_read_envelope(struct agent_request *r, uint8_t **ret_body,
                                const uint8_t **ret_msg, uint32_t *ret_msg_len)
{
        _cleanup_free_ uint8_t *body = NULL;
        const uint8_t *msg;
        uint32_t msg_len;
        size_t len;
        uint8_t flags;
        long n;
        int e;

        e = agent_request_read_body_all(r, CONNECT_MAX_MESSAGE + CONNECT_ENVELOPE_HEADER_SIZE,
                                        &body, &len);
        if (e == -EMSGSIZE)
                return agent_respond_stream_error(r, "resource_exhausted", "request too large");
        if (e < 0)
                return e;
        n = connect_envelope_parse(body, len, CONNECT_MAX_MESSAGE, &flags, &msg, &msg_len);
        if (n <= 0 || (size_t)n != len || flags != 0)
                return agent_respond_stream_error(r, "invalid_argument",
                                                  "request must be one uncompressed envelope");
        *ret_msg = msg;
        *ret_msg_len = msg_len;
        *ret_body = TAKE_PTR(body);
        return 0;
}

int agent_request_basic_user_unknown(const struct agent_request *r, char **ret_name)
{
        _cleanup_(agent_user_done) struct agent_user u = {0};
        _cleanup_free_ char *name = NULL;
        int e;

        if (!agent_request_header(r, "Authorization"))
                return 0;
        e = agent_request_user(r, NULL, &u, &name);
        if (e != -ENOENT && e != -EINVAL)
                return 0;
        *ret_name = name ? TAKE_PTR(name) : strdup("");
        return 1;
}

int agent_request_user(const struct agent_request *r, const char *override, struct agent_user *ret,
                       char **ret_name)
{
        _cleanup_free_ char *name = NULL;
        int e;

        if (override && *override) {
                name = strdup(override);
                if (!name)
                        return -ENOMEM;
        } else {
                e = http_basic_auth_user(agent_request_header(r, "Authorization"), &name);
                if (e < 0)
                        return e;
                if (e == 0 || !*name) {
                        free(name);
                        name = NULL;
                        e = agent_config_default_user(&name);
                        if (e < 0)
                                return e;
                }
        }
        e = agent_user_lookup(name, ret);
        *ret_name = TAKE_PTR(name);
        return e;
}
