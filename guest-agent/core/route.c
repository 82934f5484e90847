/* SPDX-License-Identifier: Apache-2.0 */
#include "core/route.h"

#include <string.h>

#include "macros.h"

static bool route_matches(const struct agent_route *rt, uint16_t port, const char *method,
                          const char *path, bool connect_stream)
{
        if (rt->port != port || (rt->method && !streq_ptr(rt->method, method)))
                return false;
        if ((rt->flags & AGENT_ROUTE_UNARY) && connect_stream)
                return false;
        if (!path)
                return false;
        if (rt->match == AGENT_ROUTE_PREFIX)
                return strncmp(path, rt->path, strlen(rt->path)) == 0;
        return strcmp(path, rt->path) == 0;
}

const struct agent_route *agent_route_find(const struct agent_route_table *t, uint16_t port,
                                           const char *method, const char *path,
                                           bool connect_stream)
{
        for (size_t i = 0; t && i < t->n_routes; i++)
                if (route_matches(&t->routes[i], port, method, path, connect_stream))
                        return &t->routes[i];
        return NULL;
}
