/* SPDX-License-Identifier: Apache-2.0 */
/* envd's GET /envs: the /init environment as a JSON map (the code interpreter reads it). */
#pragma once

#include "core/request.h"

int agent_envs_handle_get(struct agent_request *r);
