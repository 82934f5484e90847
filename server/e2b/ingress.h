/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ingress to a sandbox's ports, as E2B's proxy does it (docs/e2b-wire.md §1.7):
 *   - a sandbox created with network.allowPublicTraffic false has a trafficAccessToken, and
 *     every request for a port other than envd's (49983) must carry it in
 *     INGRESS_TOKEN_HEADER, else 403 {"sandboxId","message","code":403} (missing / invalid);
 *   - network.maskRequestHost replaces the Host the sandbox's own server sees on a user port
 *     ("${PORT}" becomes the port), the client's Host going to X-Forwarded-Host;
 *   - a user port nobody listens on is 502 {"sandboxId","message","port","code":502};
 *   - a cookie a sandbox's server sets is its own: a Domain attribute other than the host the
 *     client asked (sbxd's domain, which every sandbox's host is below, or another sandbox's
 *     host) is dropped, so the browser keeps it for that host alone (RFC 6265 §5.3 step 6).
 * Pure decisions plus the replies in E2B's shapes; e2b/proxy.c applies them.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "http/http.h"
#include "lifecycle/sandbox.h"

#define INGRESS_TOKEN_HEADER        "e2b-traffic-access-token"
#define INGRESS_PORT_CLOSED_MESSAGE "The sandbox is running but port is not open"

enum ingress_verdict {
        INGRESS_OK,      /* public, envd's port, or the right token */
        INGRESS_MISSING, /* private and no token header */
        INGRESS_INVALID, /* private and a wrong token */
};

/* What the traffic token says of a request for port with header (the token header's value,
 * NULL when absent). Pure; compares in constant time. */
enum ingress_verdict ingress_check(const char *traffic_token, uint16_t port, const char *header);
/* E2B's 403 for a refused verdict. Returns the status. */
int ingress_reply_refused(struct request *req, const char *id, enum ingress_verdict v);
/* E2B's proxy's 403 for sandbox id: {"sandboxId", "message": msg, "code": 403}. */
int ingress_reply_forbidden(struct request *req, const char *id, const char *msg);
/* E2B's 502 for a port nobody listens on. Returns the status. */
int ingress_reply_port_closed(struct request *req, const char *id, uint16_t port);

/* Every Set-Cookie of h (a user port's answer) scoped to host (the client's Host, a port
 * allowed): a Domain attribute naming anything but host itself goes. -ENOMEM. */
int ingress_scope_cookies(struct sbx_resp_head *h, const char *host);

/* The masked Host for port: mask with every "${PORT}" replaced by the port. -ENAMETOOLONG
 * when it does not fit size. Pure. */
int ingress_mask_host(const char *mask, uint16_t port, char *out, size_t size);
