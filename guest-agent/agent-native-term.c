/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include "agent-native.h"

int native_term_handle(struct agent_request *r)
{
        return native_error(r, 501, "not_implemented", "terminal");
}
