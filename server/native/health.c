/* SPDX-License-Identifier: Apache-2.0 */
#include "native/health.h"

#include <stdio.h>
#include <unistd.h>

#include "core/server.h"
#include "storage/template.h"
#include "version.h"

int health_handle(struct request *req)
{
        const char *state = req->srv->config->state_dir, *templates = "ready";
        char path[4096], body[256];
        snprintf(path, sizeof(path), "%s/templates/base/template.json", state);
        if (templates_building(state))
                templates = "building";
        else if (access(path, F_OK) < 0)
                templates = "missing";
        snprintf(body, sizeof(body), "{\"status\":\"ok\",\"version\":\"%s\",\"templates\":\"%s\"}",
                 SBX_VERSION, templates);
        return http_reply_json(req, 200, body);
}
