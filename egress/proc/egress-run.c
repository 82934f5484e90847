/* SPDX-License-Identifier: Apache-2.0 */
#include "proc/egress-run.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "egress-chan.h"
#include "fd-util.h"
#include "log.h"
#include "macros.h"
#include "proc/policy-table.h"
#include "serve/build-proxy.h"
#include "serve/resolver.h"
#include "serve/slot-log.h"
#include "serve/tls-leaf.h"
#include "serve/tls-proxy.h"

struct build {
        char *id; /* NULL: a free entry */
        struct build_egress *proxy;
        struct run *run;
};

struct run {
        struct egress_chan *chan;
        struct policy_table *policies;
        struct egress_tls *tls;
        char *upstream;
        int dns_fd, proxy4_fd, proxy6_fd; /* from hello until serve hands them over */
        struct egress_dns *dns;
        struct egress_proxy *proxy;
        struct build builds[EGRESS_BUILDS_MAX]; /* the reader thread's alone */
};

/* ---- what the resolver and the proxy ask ---- */

static int hook_lookup(void *arg, int family, const void *addr, struct net_policy *ret)
{
        struct run *x = arg;
        return policy_table_lookup(x->policies, family, addr, ret);
}

/* Addresses answered for an allowed name into the slot's pinned set: sbxd's nftables. */
static int hook_pin(void *arg, int slot, int family, const void *addrs, size_t n, unsigned ttl_s)
{
        struct run *x = arg;
        if (n == 0)
                return 0;
        struct egress_msg req = {.type = EGRESS_MSG_PIN,
                                 .slot = slot,
                                 .family = family,
                                 .ttl = ttl_s,
                                 .n_addrs = MIN(n, (size_t)EGRESS_CTL_ADDRS_MAX)};
        size_t len = family == AF_INET ? 4 : 16;
        for (size_t i = 0; i < req.n_addrs; i++)
                memcpy(req.addrs[i], (const uint8_t *)addrs + i * len, len);
        struct egress_msg a;
        int r = egress_chan_call(x->chan, &req, &a);
        if (r >= 0) {
                r = a.error;
                egress_msg_done(&a);
        }
        if (r < 0)
                egress_slot_log(LOG_LEVEL_WARNING, slot, "egress: pinning for slot %d: %s", slot,
                                strerror(-r));
        return r;
}

/* A secret's value from sbxd, for the rules of slot. */
static int hook_secret(void *arg, int slot, const char *name, char *buf, size_t size)
{
        struct run *x = arg;
        struct egress_msg req = {.type = EGRESS_MSG_SECRET, .slot = slot, .name = (char *)name};
        struct egress_msg a;
        int r = egress_chan_call(x->chan, &req, &a);
        if (r < 0)
                return r;
        size_t len = a.text ? strlen(a.text) : 0;
        r = a.type != EGRESS_MSG_VALUE ? -EPROTO : a.error < 0 ? a.error : 0;
        if (r >= 0 && len >= size)
                r = -ENOBUFS;
        if (r >= 0) {
                memcpy(buf, a.text, len + 1);
                r = (int)len;
        }
        egress_msg_done(&a); /* wipes the value */
        return r;
}

/* A build proxy's refusal, for that build's log. */
static void build_note(void *userdata, const char *message)
{
        struct build *b = userdata;
        struct egress_msg m = {.type = EGRESS_MSG_NOTE, .name = b->id, .text = (char *)message};
        (void)egress_chan_send(b->run->chan, &m);
}

/* ---- what sbxd says ---- */

static int on_hello(struct run *x, struct egress_msg *m)
{
        char err[400] = "";
        if (x->tls)
                return -EALREADY;
        int r = egress_tls_new(m->ca_key, m->ca_cert, m->upstream_ca, &x->tls, err, sizeof(err));
        if (r < 0)
                return log_error_errno(r, "%s", err);
        x->upstream = TAKE_PTR(m->upstream);
        x->dns_fd = TAKE_FD(m->fds[0]);
        x->proxy4_fd = TAKE_FD(m->fds[1]);
        x->proxy6_fd = TAKE_FD(m->fds[2]);
        return 0;
}

static int on_serve(struct run *x)
{
        if (!x->tls)
                return -EPROTO; /* no hello yet */
        if (x->dns)
                return 0;
        const struct egress_dns_hooks dh = {hook_lookup, hook_pin, x};
        const struct egress_proxy_hooks ph = {hook_lookup, hook_secret, x};
        int r = egress_dns_start(&dh, x->upstream, TAKE_FD(x->dns_fd), &x->dns);
        if (r >= 0)
                r = egress_proxy_start(&ph, x->tls, TAKE_FD(x->proxy4_fd), TAKE_FD(x->proxy6_fd),
                                       &x->proxy);
        if (r < 0)
                return log_error_errno(r, "egress: starting the resolver and the proxy: %m");
        log_info("egress: answering sandboxes");
        return 0;
}

static struct build *find_build(struct run *x, const char *id)
{
        for (size_t i = 0; i < EGRESS_BUILDS_MAX; i++)
                if (x->builds[i].id && strcmp(x->builds[i].id, id) == 0)
                        return &x->builds[i];
        return NULL;
}

static int on_build(struct run *x, struct egress_msg *m)
{
        /* told twice (a build that started while this process was being introduced): it has
         * its proxy already, on the same listening socket */
        if (find_build(x, m->name))
                return 0;
        struct build *b = NULL;
        for (size_t i = 0; i < EGRESS_BUILDS_MAX && !b; i++)
                if (!x->builds[i].id)
                        b = &x->builds[i];
        if (!b)
                return -EBUSY;
        b->id = TAKE_PTR(m->name);
        b->run = x;
        int r =
            build_egress_start(TAKE_FD(m->fds[0]), m->hosts, m->n_hosts, build_note, b, &b->proxy);
        if (r < 0) {
                free(b->id);
                b->id = NULL;
        }
        return r;
}

static void end_build(struct build *b)
{
        build_egress_stop(b->proxy); /* no note after this */
        b->proxy = NULL;
        free(b->id);
        b->id = NULL;
}

static int on_message(void *arg, struct egress_msg *m, char **value)
{
        struct run *x = arg;
        struct build *b;
        switch (m->type) {
        case EGRESS_MSG_HELLO:
                return on_hello(x, m);
        case EGRESS_MSG_POLICY:
                return policy_table_set(x->policies, m->slot, m->policy);
        case EGRESS_MSG_FORGET:
                policy_table_forget(x->policies, m->slot);
                return 0;
        case EGRESS_MSG_SERVE:
                return on_serve(x);
        case EGRESS_MSG_BUILD:
                return on_build(x, m);
        case EGRESS_MSG_BUILD_END:
                if ((b = find_build(x, m->name)))
                        end_build(b);
                return b ? 0 : -ENOENT;
        default: /* sbxd's to answer, not ours */
                return -EPROTO;
        }
}

int egress_run(int ctl_fd)
{
        struct run x = {.dns_fd = -EBADF, .proxy4_fd = -EBADF, .proxy6_fd = -EBADF};
        int r = egress_chan_new(ctl_fd, &x.chan);
        if (r >= 0)
                r = policy_table_new(&x.policies);
        const char *why = "";
        if (r >= 0)
                r = egress_chan_run(x.chan, on_message, &x, &why);
        if (r < 0)
                log_error_errno(r, "egress: the control channel broke: %m %s", why);
        for (size_t i = 0; i < EGRESS_BUILDS_MAX; i++)
                if (x.builds[i].id)
                        end_build(&x.builds[i]);
        egress_proxy_stop(x.proxy);
        egress_dns_stop(x.dns);
        egress_tls_free(x.tls);
        safe_close(x.dns_fd);
        safe_close(x.proxy4_fd);
        safe_close(x.proxy6_fd);
        free(x.upstream);
        policy_table_free(x.policies);
        egress_chan_free(x.chan);
        return r;
}
