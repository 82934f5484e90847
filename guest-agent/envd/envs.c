/* SPDX-License-Identifier: Apache-2.0 */
#include "envd/envs.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>

#include "core/config.h"
#include "json-util.h"
#include "macros.h"

int agent_envs_handle_get(struct agent_request *r)
{
        _cleanup_strv_free_ char **envs = NULL;
        _cleanup_json_ cJSON *obj = NULL;
        _cleanup_free_ char *json = NULL;
        int e;

        e = agent_request_discard_body(r, 64 * 1024);
        if (e < 0)
                return e;
        if (agent_config_envs(&envs) < 0 || !(obj = cJSON_CreateObject()))
                return agent_respond_rest_error(r, 500, "out of memory");
        for (char **p = envs; *p; p++) {
                char *eq = strchr(*p, '=');
                *eq = '\0';
                if (!cJSON_AddStringToObject(obj, *p, eq + 1))
                        return agent_respond_rest_error(r, 500, "out of memory");
        }
        json = cJSON_PrintUnformatted(obj);
        if (!json)
                return agent_respond_rest_error(r, 500, "out of memory");
        return agent_respond(r, 200, "application/json", json, strlen(json));
}
