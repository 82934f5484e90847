/* SPDX-License-Identifier: Apache-2.0 */
#include "core/errors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macros.h"

unsigned api_error_status(int r)
{
        switch (r < 0 ? -r : r) {
        case EINVAL:
        case EBADMSG:
        case ELOOP:
        case EDOM:
        case ERANGE:
                return 400;
        case EACCES:
        case EPERM:
        case ENOKEY:
        case EKEYREJECTED:
                return 401;
        case ENOENT:
        case ESRCH:
                return 404;
        case EEXIST:
        case EBUSY:
                return 409;
        case EMSGSIZE:
        case EFBIG:
        case E2BIG:
                return 413;
        case EHOSTUNREACH:
        case ECONNREFUSED:
        case ECONNRESET:
        case EPIPE:
        case EPROTO:
        case ENXIO:
                return 502;
        case EDQUOT: /* a limit of sbxd's (--max-sandboxes, --max-creates): retry later */
                return 429;
        case EAGAIN:
        case EUSERS:
                return 503;
        case ENOSPC: /* the state disk (or a disk reservation) is full */
                return 507;
        default:
                return 500;
        }
}

int api_error_build(int r, const char *sandbox_id, const char *message, unsigned *ret_status,
                    char **ret_body)
{
        unsigned status = api_error_status(r);
        cJSON *o = cJSON_CreateObject();
        if (!o)
                return -ENOMEM;
        const char *msg = message ? message : strerror(r < 0 ? -r : r);
        /* Key order as E2B sends them: the API {code,message}, the edge proxy
         * {sandboxId,message,code}. */
        if (sandbox_id) {
                cJSON_AddStringToObject(o, "sandboxId", sandbox_id);
                cJSON_AddStringToObject(o, "message", msg);
                cJSON_AddNumberToObject(o, "code", status);
        } else {
                cJSON_AddNumberToObject(o, "code", status);
                cJSON_AddStringToObject(o, "message", msg);
        }
        char *body = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (!body)
                return -ENOMEM;
        *ret_status = status;
        *ret_body = body;
        return 0;
}
