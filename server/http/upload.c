/* SPDX-License-Identifier: Apache-2.0 */
#include "http/upload.h"

#include <errno.h>
#include <stdlib.h>

#include "macros.h"
#include "fd-util.h"

static void upload_free(void *p)
{
        struct http_upload *u = p;
        if (u) {
                safe_close(u->fd);
                free(u);
        }
}

int http_upload_begin(struct request *req, int fd, uint64_t max)
{
        struct http_upload *u = calloc(1, sizeof(*u));
        if (!u) {
                safe_close(fd);
                return -ENOMEM;
        }
        u->fd = fd;
        u->max = max;
        req->state = u;
        req->state_free = upload_free;
        return 0;
}

int http_upload_data(struct request *req, const char *data, size_t len)
{
        struct http_upload *u = req->state;
        if (u->too_large || u->error) {
                u->discarded += len;
                return u->discarded > HTTP_MAX_DISCARD ? -EMSGSIZE : 0;
        }
        if (u->len + len > u->max) {
                u->too_large = true;
                return 0;
        }
        int r = write_full(u->fd, data, len);
        if (r < 0)
                u->error = r;
        u->len += len;
        return 0;
}
