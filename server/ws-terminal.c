/* SPDX-License-Identifier: Apache-2.0 */
#include "ws-terminal.h"

#include "route-v1.h"

bool ws_terminal_token_ok(struct request *req)
{
        return false;
}

enum MHD_Result ws_terminal_upgrade(struct request *req, const char *id)
{
        return v1_reply_error(req, 501, NULL, "not yet");
}
