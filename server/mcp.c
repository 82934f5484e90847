/* SPDX-License-Identifier: Apache-2.0 */
#include "mcp.h"

#include "route-v1.h"

enum MHD_Result mcp_handle(struct request *req, const char *body, size_t len)
{
        return v1_reply_error(req, 501, NULL, "not yet");
}
