/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/routes-network.h"

#include <errno.h>
#include <string.h>

#include "egress/policy/net-policy.h"
#include "core/validate.h"
#include "e2b/routes-lifecycle.h"
#include "lifecycle/lifecycle.h"
#include "macros.h"

int e2b_set_network(struct request *req)
{
        const char *id = req->args.v[0];
        if (!sandbox_id_valid(id))
                return route_reply_not_found(req, id);
        struct net_policy asked;
        const char *msg = NULL;
        int r = net_policy_parse(req->body->json, NULL, &asked, &msg);
        if (r < 0)
                return http_reply_error(req, r, NULL, "%s", msg);
        int status;
        _cleanup_sandbox_ struct sandbox *s = route_sandbox_get(req, id, &status);
        if (!s) {
                net_policy_done(&asked);
                return status;
        }
        char err[512] = "";
        r = lifecycle_set_network(req->srv, s, &asked, err, sizeof(err));
        net_policy_done(&asked);
        if (r < 0)
                return http_reply_error(req, r, NULL, "%s", err[0] ? err : strerror(-r));
        return http_reply_204(req);
}
