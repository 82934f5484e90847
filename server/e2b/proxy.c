/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/proxy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "channel/agent-mhd.h"
#include "channel/agent-req.h"
#include "channel/agent-upgrade.h"
#include "core/keys.h"
#include "core/query.h"
#include "core/validate.h"
#include "e2b/files-signature.h"
#include "e2b/ingress.h"
#include "frame.h"
#include "json-util.h"
#include "lifecycle/lifecycle.h"
#include "log.h"
#include "macros.h"

/* A proxied request's state (req->state). */
struct proxy_conn {
        struct agent_req *q;
        uint16_t port;
        bool user_port; /* relayed to the sandbox's own server (api/frames.md, "User ports") */
        bool upgrade;   /* a user-port request asking for an upgrade: no END before the 101 */
        struct sandbox *held; /* an upgrade counted in its sandbox's upgrades, until it ends */
};

/* An upgrade (a WebSocket) no longer counted against its sandbox. */
static void upgrade_done(void *arg)
{
        struct sandbox *s = arg;
        __atomic_sub_fetch(&s->upgrades, 1, __ATOMIC_RELAXED);
        sandbox_unref(s);
}

static void proxy_conn_free(void *p)
{
        struct proxy_conn *c = p;
        if (!c)
                return;
        agent_req_free(c->q);
        if (c->held)
                upgrade_done(c->held);
        free(c);
}

struct header_collect {
        struct sbx_header h[SBX_HEAD_MAX_HEADERS];
        size_t n;
        bool overflow;
        bool drop_authorization; /* a signed /files request: the signature names the user */
        bool user_port;          /* keep Transfer-Encoding, and Upgrade when upgrade */
        bool upgrade;
        const char *mask_host; /* user port: the Host its server sees instead (NULL: as sent) */
};

/* On a user port the agent needs to know how the body is framed (Transfer-Encoding) and
 * whether an upgrade is asked for (Upgrade); it writes its own Connection header. */
static bool user_port_keeps(const struct header_collect *c, const char *key)
{
        return c->user_port && (strcasecmp(key, "Transfer-Encoding") == 0 ||
                                (c->upgrade && strcasecmp(key, "Upgrade") == 0));
}

static bool add_header(struct header_collect *c, const char *name, const char *value)
{
        if (c->n >= SBX_HEAD_MAX_HEADERS) {
                c->overflow = true;
                return false;
        }
        c->h[c->n++] = (struct sbx_header){name, value ? value : ""};
        return true;
}

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
        struct header_collect *c = cls;
        if (!key || (http_hop_by_hop(key) && !user_port_keeps(c, key)))
                return MHD_YES;
        /* maskRequestHost (e2b/ingress.h): the server sees the mask, X-Forwarded-Host the
         * client's Host, as E2B's proxy sends them */
        if (c->mask_host && strcasecmp(key, "X-Forwarded-Host") == 0)
                return MHD_YES; /* set below from Host, as E2B's proxy sets it */
        if (c->mask_host && strcasecmp(key, "Host") == 0)
                return add_header(c, "Host", c->mask_host) &&
                               add_header(c, "X-Forwarded-Host", value)
                           ? MHD_YES
                           : MHD_NO;
        /* The agent picks a /files user from the `username` parameter, else from a Basic
         * Authorization header. A signature covers only the parameter (envd never reads the
         * header on /files), so a signed URL for the default user plus "Basic root:" would act
         * as root: the header goes (docs/escape-battery.md, group F). */
        if (c->drop_authorization && strcasecmp(key, "Authorization") == 0)
                return MHD_YES;
        return add_header(c, key, value) ? MHD_YES : MHD_NO;
}

/* What the request's credentials earned, before the sandbox's state is looked at. */
struct proxy_auth {
        bool credentialed;            /* the right X-Access-Token, or a valid /files signature */
        bool by_signature;            /* a /files request let in by its signature alone */
        enum files_auth files;        /* envd /files: the verdict */
        bool files_route;             /* envd GET/POST /files: `files` holds the verdict */
        bool refused;                 /* the request would be refused for its credentials */
        enum ingress_verdict traffic; /* the traffic token (private sandboxes, not envd) */
};

static void authenticate(struct request *req, const struct route_target *t, const struct sandbox *s,
                         struct proxy_auth *ret)
{
        const char *header = http_header(req, "X-Access-Token");
        *ret = (struct proxy_auth){.credentialed = const_time_streq(header, s->token)};
        if (t->port == SBX_PORT_ENVD && files_auth_applies(req->method, req->path)) {
                ret->files_route = true;
                ret->files =
                    files_auth_check(req->method, req->target, header, s->token, time(NULL));
                ret->by_signature = ret->files == FILES_AUTH_SIGNATURE;
                ret->credentialed = ret->files == FILES_AUTH_HEADER || ret->by_signature;
                ret->refused = !ret->credentialed;
        } else if (route_proxy_needs_token(t->port, req->method, req->path)) {
                ret->refused = !ret->credentialed;
        }
        ret->traffic =
            ingress_check(s->traffic_token, t->port, http_header(req, INGRESS_TOKEN_HEADER));
        if (ret->traffic != INGRESS_OK)
                ret->refused = true;
}

/* E2B's proxy when a paused sandbox with autoResume may not be resumed by this request. */
static int reply_resume_denied(struct request *req, const char *id)
{
        return ingress_reply_forbidden(req, id, PROXY_RESUME_DENIED_MESSAGE);
}

/* A paused sandbox: resumed by credentialed traffic when it asked for that; 0 to go on. */
static int wake(struct request *req, const struct route_target *t, struct sandbox *s,
                const struct proxy_auth *a)
{
        if (!sandbox_is_paused(s))
                return 0;
        /* frozen: its agent would never answer. E2B's proxy answers a paused sandbox the same
         * way (the SDKs then call connect to resume it). */
        if (!s->auto_resume)
                return http_reply_error(req, -EHOSTUNREACH, t->id, "The sandbox is paused");
        /* Only a request that would be let in resumes it, and for envd only one carrying the
         * token or a valid signature (E2B checks the envd token before an auto-resume), so an
         * unauthenticated caller cannot wake a paused sandbox and spend its timeout. */
        if (a->refused || (t->port == SBX_PORT_ENVD && !a->credentialed))
                return reply_resume_denied(req, t->id);
        if (lifecycle_auto_resume(req->srv, s) <= 0)
                return http_reply_error(req, -EHOSTUNREACH, t->id, "The sandbox is paused");
        return 0;
}

/* Refusals before the agent is asked; 0 to go on. */
static int check(struct request *req, const struct route_target *t, struct sandbox *s,
                 struct proxy_auth *ret_auth)
{
        if (route_proxy_forbidden(t->port, req->path))
                return http_reply_error(req, -ENOENT, NULL, "%s: not found", req->path);
        authenticate(req, t, s, ret_auth);
        int r = wake(req, t, s, ret_auth);
        if (r != 0)
                return r;
        if (!ret_auth->refused)
                return 0;
        if (ret_auth->traffic != INGRESS_OK)
                return ingress_reply_refused(req, t->id, ret_auth->traffic);
        if (ret_auth->files_route) /* envd's own answers on /files (docs/e2b-wire.md §3.1) */
                return http_reply_error(req, files_auth_errno(ret_auth->files), NULL, "%s",
                                        files_auth_message(ret_auth->files));
        return http_reply_error(req, -EACCES, NULL,
                                "unauthorized access, please provide a valid access "
                                "token or method signing if supported");
}

/* Upgrade: <protocol> with Connection: ... upgrade ... (RFC 9110 §7.8). */
static bool wants_upgrade(struct request *req)
{
        const char *up = http_header(req, "Upgrade");
        const char *conn = http_header(req, "Connection");
        return up && up[0] && conn && strcasestr(conn, "upgrade");
}

int proxy_begin(struct request *req, const struct route_target *t)
{
        const char *id = t->id;
        snprintf(req->sandbox_id, sizeof(req->sandbox_id), "%s", id);
        _cleanup_sandbox_ struct sandbox *s =
            sandbox_id_valid(id) ? registry_get(req->srv->registry, id) : NULL;
        if (!s)
                return http_reply_error(req, -EHOSTUNREACH, id, "The sandbox was not found");
        struct proxy_auth auth = {};
        int r = check(req, t, s, &auth);
        if (r != 0)
                return r;

        struct header_collect hc = {.drop_authorization = auth.by_signature,
                                    .user_port = route_port_is_user(t->port)};
        char mask[MASK_HOST_MAX + 16];
        if (hc.user_port) {
                hc.upgrade = wants_upgrade(req);
                if (s->mask_host[0] &&
                    ingress_mask_host(s->mask_host, t->port, mask, sizeof(mask)) == 0)
                        hc.mask_host = mask;
        }
        MHD_get_connection_values(req->conn, MHD_HEADER_KIND, collect_header, &hc);
        if (hc.overflow)
                return http_reply_error(req, -EINVAL, NULL, "too many request headers");
        _cleanup_free_ char *query = NULL, *raw_path = NULL;
        if (query_from_target(req->target, &query) < 0 ||
            (hc.user_port && !(raw_path = strndup(req->target, strcspn(req->target, "?#")))))
                return -ENOMEM;
        struct sbx_req_head h = {
            .port = t->port,
            .method = req->method,
            /* a user port gets the path as the client sent it: its server decodes it */
            .path = raw_path ? raw_path : req->path,
            .query = query,
            .n_headers = hc.n,
            .headers = hc.h,
        };
        struct proxy_conn *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->port = t->port;
        c->user_port = hc.user_port;
        c->upgrade = hc.upgrade;
        req->state = c;
        req->state_free = proxy_conn_free;
        /* each WebSocket holds one of the agent's connections for its life: a sandbox's own
         * server must not take them all (envd's, the SDK's, keep a reserve in the agent) */
        if (c->upgrade) {
                c->held = sandbox_ref(s);
                if (__atomic_add_fetch(&s->upgrades, 1, __ATOMIC_RELAXED) > PROXY_MAX_UPGRADES)
                        return http_reply_error(req, -EDQUOT, id,
                                                "sandbox %s has %u WebSocket connections open, "
                                                "its most: close one first",
                                                id, PROXY_MAX_UPGRADES);
        }

        struct agent_req_opts o = {
            .timeout_ms = PROXY_SEND_TIMEOUT_MS, .count_bytes = true, .duplex = c->upgrade};
        r = agent_req_open(s->dir, &h, &o, &c->q);
        if (r == -EINVAL)
                return http_reply_error(req, -EINVAL, NULL, "request head too large");
        if (r < 0) {
                log_warning_errno(r, "req=%s sandbox %s: agent connect: %m", req->rid, id);
                return http_reply_error(req, -EHOSTUNREACH, id, "The sandbox is not reachable");
        }
        agent_req_watch_client(c->q, http_client_fd(req));
        return 0;
}

int proxy_upload(struct request *req, const char *data, size_t len)
{
        struct proxy_conn *c = req->state;
        /* The agent may answer before reading everything (api/frames.md): once its answer is
         * waiting, the rest is dropped instead of blocking on a full socket. */
        if (c && !agent_req_send_stopped(c->q)) {
                int r = agent_req_send(c->q, data, len);
                if (r < 0 && r != -ECANCELED)
                        log_debug("req=%s: agent stopped reading the body: %s", req->rid,
                                  strerror(-r));
        }
        return 0;
}

int proxy_finish(struct request *req)
{
        struct proxy_conn *c = req->state;
        if (!c)
                return -EINVAL;
        /* an upgrade's request stays open: after a 101 it carries the client's bytes */
        if (!c->upgrade)
                (void)agent_req_end(c->q);
        struct sbx_resp_head h = {};
        int r = agent_req_read_head(c->q, &h);
        if (r < 0) {
                if (r == -ECONNABORTED)
                        return r;
                log_warning_errno(r, "req=%s sandbox %s: no response head from the agent: %m",
                                  req->rid, req->sandbox_id);
                return http_reply_error(req, -EPROTO, req->sandbox_id,
                                        "The sandbox closed the connection");
        }
        if (c->user_port && h.status == 502 &&
            sbx_header_get(h.headers, h.n_headers, SBX_HEADER_PORT_ERROR)) {
                sbx_resp_head_free(&h);
                return ingress_reply_port_closed(req, req->sandbox_id, c->port);
        }
        if (h.status == 101 && c->upgrade) {
                r = agent_mhd_upgrade(req, &c->q, &h, upgrade_done, c->held);
                if (r >= 0) /* counted until the exchange is over */
                        c->held = NULL;
                sbx_resp_head_free(&h);
                return r;
        }
        if (c->upgrade)
                (void)agent_req_end(c->q); /* no upgrade: the request is over */
        if (c->user_port && ingress_scope_cookies(&h, http_header(req, "Host")) < 0) {
                sbx_resp_head_free(&h);
                return -ENOMEM;
        }
        if (h.status < 200) {
                /* a 1xx but a 101 to an upgrade request: never proxied */
                sbx_resp_head_free(&h);
                return http_reply_error(req, -EPROTO, req->sandbox_id,
                                        "invalid response status from the sandbox");
        }
        r = agent_mhd_respond(req, &c->q, &h, 0);
        sbx_resp_head_free(&h);
        if (r == -EPROTO)
                return http_reply_error(req, -EPROTO, req->sandbox_id,
                                        "invalid response from the sandbox");
        return r;
}
