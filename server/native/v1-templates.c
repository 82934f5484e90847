/* SPDX-License-Identifier: Apache-2.0 */
#include "native/v1-templates.h"

#include <errno.h>

#include "json-util.h"
#include "macros.h"
#include "native/v1.h"
#include "storage/template-list.h"

int v1_templates_list(struct request *req)
{
        _cleanup_json_ cJSON *list = NULL;
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        if (!o || template_list(req->srv->config->state_dir, &list) < 0)
                return v1_reply_error(req, 500, "internal", "out of memory");
        cJSON_AddItemToObject(o, "templates", TAKE_PTR(list));
        return v1_reply_json(req, 200, o, NULL, NULL);
}
