/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sandbox's egress through its life (lifecycle/lifecycle.h "Egress"): the policy a create
 * asks for, its rules before the jailer makes the link, a change at runtime, the rules going
 * with the sandbox, and the table rebuilt for adopted sandboxes after a restart.
 */
#include "lifecycle/lifecycle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/egress.h"
#include "lifecycle/jail-spawn.h"
#include "lifecycle/registry.h"
#include "storage/template.h"
#include "log.h"
#include "macros.h"
#include "time-util.h"

/* every uid slot has a link in the addressing plan */
_Static_assert(REGISTRY_MAX_SLOTS <= EGRESS_SLOTS_MAX, "uid slots without egress addresses");

int lifecycle_net_for_create(struct server *srv, const struct net_policy *asked,
                             struct net_policy **ret)
{
        struct net_policy eff;
        int link = egress_effective(srv->config, asked, &eff);
        *ret = NULL;
        if (link < 0)
                return link;
        if (!link) {
                net_policy_done(&eff);
                return 0;
        }
        struct net_policy *p = malloc(sizeof(*p));
        if (!p) {
                net_policy_done(&eff);
                return -ENOMEM;
        }
        *p = eff;
        *ret = p;
        return 1;
}

/* The sandboxes' CA into a link (its bundle gets it: server/egress/README.md "Credentials"). */
static int link_ca(struct server *srv, struct sbx_jail_egress *l)
{
        _cleanup_free_ char *pem = NULL;
        int r = egress_ca_pem(srv->egress, &pem);
        if (r < 0)
                return r;
        if (strlen(pem) >= sizeof(l->ca_pem))
                return -E2BIG;
        strcpy(l->ca_pem, pem);
        return 0;
}

int lifecycle_net_link(struct server *srv, struct sandbox *s, struct sbx_jail_spec *spec)
{
        if (!sandbox_has_link(s))
                return 0;
        spec->egress = calloc(1, sizeof(*spec->egress));
        if (!spec->egress)
                return -ENOMEM;
        egress_link(s->slot, spec->egress);
        int r = link_ca(srv, spec->egress);
        return r < 0 ? r : 1;
}

int lifecycle_net_rules(struct server *srv, struct sandbox *s, char *errmsg, size_t errlen)
{
        struct net_policy p;
        int r = sandbox_get_net(s, &p);
        if (r <= 0)
                return r;
        char why[400] = "";
        int64_t t0 = now_us();
        r = egress_apply(srv->egress, s->slot, &p, why, sizeof(why));
        log_debug("sandbox %s: egress rules in %lld us", s->id, (long long)(now_us() - t0));
        net_policy_done(&p);
        if (r < 0) {
                snprintf(errmsg, errlen, "sandbox start failed at egress: %s", why);
                return log_error_errno(r, "sandbox %s: egress rules: %s", s->id, why);
        }
        return 0;
}

void lifecycle_net_remove(struct server *srv, struct sandbox *s)
{
        if (sandbox_has_link(s) && s->slot >= 0)
                (void)egress_remove(srv->egress, s->slot);
}

/* A running loopback-only sandbox gets its link: rules first (a link without them passes
 * nothing), then the jailer's --attach-egress; the rules go again when that fails. */
static int attach_link(struct server *srv, struct sandbox *s, const struct net_policy *eff,
                       char *errmsg, size_t errlen)
{
        if (s->pidfd < 0) {
                snprintf(errmsg, errlen, "sandbox %s: its agent cannot be reached for a link",
                         s->id);
                return -EBUSY;
        }
        int r = egress_apply(srv->egress, s->slot, eff, errmsg, errlen);
        if (r < 0)
                return r;
        struct sbx_jail_egress link;
        struct jail_result jr;
        char log_path[4096];
        egress_link(s->slot, &link);
        if ((r = link_ca(srv, &link)) < 0) {
                snprintf(errmsg, errlen, "the sandboxes' CA: %s", strerror(-r));
                (void)egress_remove(srv->egress, s->slot);
                return r;
        }
        snprintf(log_path, sizeof(log_path), "%s/%s", s->dir, SANDBOX_LOG_NAME);
        r = jail_attach_egress(srv->config->jailer, log_path, s->pidfd, registry_uid_base(s->slot),
                               &link, &jr);
        if (r >= 0 && jr.ok && jr.pid == s->pid)
                return 0;
        snprintf(errmsg, errlen, "giving the sandbox a network link failed at %s: %s", jr.step,
                 jr.message);
        log_error("sandbox %s: egress attach failed at %s (errno %d): %s", s->id, jr.step, jr.err,
                  jr.message);
        (void)egress_remove(srv->egress, s->slot);
        return -EIO;
}

/* A sandbox that got its link at runtime: /init again with its environment, which now
 * carries the CA variables (lifecycle_init_agent). Processes already running keep theirs. */
static void reinit_ca_env(struct server *srv, struct sandbox *s)
{
        struct template_info t = {};
        int r = template_load(srv->config->state_dir, s->template_id, &t);
        if (r >= 0)
                r = lifecycle_init_agent(s, &t);
        template_done(&t);
        if (r < 0)
                log_warning_errno(r, "sandbox %s: the CA variables of its new link: %m", s->id);
}

int lifecycle_set_network(struct server *srv, struct sandbox *s, const struct net_policy *asked,
                          char *errmsg, size_t errlen)
{
        struct net_policy eff;
        int link = egress_effective(srv->config, asked, &eff);
        if (link < 0)
                return link;
        pthread_mutex_lock(&s->op_lock);
        bool has = sandbox_has_link(s);
        int r = 0;
        if (has) /* replace the rules: one transaction */
                r = egress_apply(srv->egress, s->slot, &eff, errmsg, errlen);
        else if (link && !s->persisted) /* a persisted one gets its link when it starts again */
                r = attach_link(srv, s, &eff, errmsg, errlen);
        if (r >= 0 && (has || link)) {
                struct net_policy *p = malloc(sizeof(*p));
                if (!p) {
                        r = -ENOMEM;
                } else {
                        *p = eff;
                        eff = (struct net_policy){};
                        sandbox_set_net(s, p);
                }
        }
        pthread_mutex_unlock(&s->op_lock);
        net_policy_done(&eff);
        if (r >= 0 && (has || link) && (r = sandbox_save(s)) == -ESRCH)
                r = 0;
        if (r >= 0 && !has && link && !s->persisted)
                reinit_ca_env(srv, s); /* its new processes trust the CA like a created one's */
        return r;
}

/* sbx-egress's user: the first id of a uid slot no sandbox will have, taken after adoption
 * (which reserves the slots of the sandboxes it finds). */
static int egress_user(struct server *srv)
{
        int slot;
        int r = registry_slot_acquire(srv->registry, &slot);
        if (r < 0)
                return log_error_errno(r, "egress: no uid slot left for sbx-egress: %m");
        egress_set_user(srv->egress, slot, registry_uid_base(slot));
        return 0;
}

void lifecycle_net_stop(struct server *srv)
{
        int slot = srv->egress ? egress_user_slot(srv->egress) : -1;
        egress_free(srv->egress); /* sbx-egress stops: its uid slot is free again */
        srv->egress = NULL;
        if (slot >= 0)
                registry_slot_release(srv->registry, slot);
}

int lifecycle_net_reconcile(struct server *srv)
{
        struct sandbox **all = NULL;
        size_t n = 0, k = 0;
        int r = egress_user(srv);
        if (r >= 0)
                r = registry_list(srv->registry, &all, &n);
        if (r < 0)
                return r;
        int *slots = calloc(n + 1, sizeof(int));
        struct net_policy *pols = calloc(n + 1, sizeof(*pols));
        const struct net_policy **ptrs = calloc(n + 1, sizeof(*ptrs));
        if (!slots || !pols || !ptrs)
                r = -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (r >= 0 && sandbox_get_net(all[i], &pols[k]) > 0) {
                        slots[k] = all[i]->slot;
                        ptrs[k] = &pols[k];
                        k++;
                }
                sandbox_unref(all[i]);
        }
        free(all);
        if (r >= 0)
                r = egress_reconcile(srv->egress, slots, ptrs, k);
        if (r >= 0 && k)
                log_info("egress: rules of %zu adopted sandbox(es) in place", k);
        for (size_t i = 0; i < k; i++)
                net_policy_done(&pols[i]);
        free(slots);
        free(pols);
        free(ptrs);
        return r;
}
