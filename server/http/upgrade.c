/* SPDX-License-Identifier: Apache-2.0 */
#include "http/upgrade.h"

#include <errno.h>
#include <strings.h>

#include "http/http.h"
#include "log.h"
#include "thread-util.h"

static void *upgrade_thread(void *arg)
{
        struct http_upgrade *u = arg;
        u->run(u);
        MHD_upgrade_action(u->urh, MHD_UPGRADE_ACTION_CLOSE);
        u->done(u);
        return NULL;
}

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *req_cls, const char *extra,
                       size_t extra_len, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
        struct http_upgrade *u = cls;
        u->started = true;
        u->sock = sock;
        u->extra = extra;
        u->extra_len = extra_len;
        u->urh = urh;
        if (thread_start_detached(upgrade_thread, u, u->stack) < 0) {
                log_warning("%s: no thread for the upgraded connection", u->name);
                MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
                u->done(u);
        }
}

struct MHD_Response *http_upgrade_response(struct http_upgrade *u)
{
        return MHD_create_response_for_upgrade(on_upgrade, u);
}

int http_upgrade_relay_header(struct MHD_Response *resp, const char *name, const char *value)
{
        if ((http_hop_by_hop(name) && strcasecmp(name, "Upgrade") != 0) ||
            strcasecmp(name, "Content-Length") == 0 || strcasecmp(name, "Date") == 0)
                return 0;
        return MHD_add_response_header(resp, name, value) == MHD_YES ? 0 : -EPROTO;
}
