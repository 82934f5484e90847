/* SPDX-License-Identifier: Apache-2.0 */
#include "egress/egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <nftables/libnftables.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "egress/egress-internal.h"
#include "egress/nft-rules.h"
#include "fd-util.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "core/stats.h"
#include "rtnl.h"
#include "time-util.h"
#include <time.h>

int egress_new(struct server *srv, const char *instance, struct egress **ret)
{
        struct egress *e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->srv = srv;
        nft_names(instance, &e->names);
        e->dns_fd = e->proxy4_fd = e->proxy6_fd = -EBADF;
        pthread_mutex_init(&e->send_lock, NULL);
        pthread_mutex_init(&e->lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&e->watch_cond, &ca);
        pthread_condattr_destroy(&ca);
        *ret = e;
        return 0;
}

void egress_free(struct egress *e)
{
        if (!e)
                return;
        egress_watch_stop(e);
        egress_serve_stop(e);
        if (e->nft) /* the main table goes with its owner; the keep table holds the links shut */
                nft_ctx_free(e->nft);
        for (unsigned i = 0; i < EGRESS_SLOTS_MAX; i++)
                net_policy_free(e->policy[i]);
        pthread_cond_destroy(&e->watch_cond);
        pthread_mutex_destroy(&e->lock);
        pthread_mutex_destroy(&e->send_lock);
        free(e);
}

void egress_set_user(struct egress *e, int slot, uid_t uid)
{
        pthread_mutex_lock(&e->lock);
        e->uid = uid;
        e->uid_slot = slot;
        pthread_mutex_unlock(&e->lock);
}

int egress_user_slot(struct egress *e)
{
        pthread_mutex_lock(&e->lock);
        int slot = e->uid ? e->uid_slot : -1;
        pthread_mutex_unlock(&e->lock);
        return slot;
}

static bool is_all(const struct net_rule *r)
{
        return r->kind != NET_DOMAIN && r->prefix == 0;
}

int egress_effective(const struct sbxd_config *c, const struct net_policy *asked,
                     struct net_policy *ret_eff)
{
        struct net_policy p;
        int r = net_policy_copy(asked, &p);
        if (r < 0)
                return r;
        bool internet = asked->internet < 0 ? c->egress_allow : asked->internet > 0;
        size_t k = 0;
        for (size_t i = 0; i < p.n_allow; i++)
                if (is_all(&p.allow[i]))
                        internet = true;
                else
                        p.allow[k++] = p.allow[i];
        p.n_allow = k;
        k = 0;
        for (size_t i = 0; i < p.n_deny; i++)
                if (is_all(&p.deny[i]))
                        internet = false; /* allow wins: allowOut entries still pass */
                else
                        p.deny[k++] = p.deny[i];
        p.n_deny = k;
        if (c->egress_max != EGRESS_MAX_ANY)
                internet = false;
        if (c->egress_max == EGRESS_MAX_NONE)
                p.n_allow = p.n_deny = 0;
        p.internet = internet;
        *ret_eff = p;
        return internet || p.n_allow > 0;
}

/* One nft transaction; the error text of libnftables into errmsg. Under e->lock. */
static int nft_run(struct egress *e, const char *cmds, char *errmsg, size_t errlen)
{
        if (!e->nft) {
                e->nft = nft_ctx_new(NFT_CTX_DEFAULT);
                if (!e->nft)
                        return -ENOMEM;
                nft_ctx_buffer_output(e->nft);
                nft_ctx_buffer_error(e->nft);
        }
        int r = nft_run_cmd_from_buffer(e->nft, cmds);
        (void)nft_ctx_get_output_buffer(e->nft); /* read, so the next listing starts empty */
        const char *err = nft_ctx_get_error_buffer(e->nft);
        if (r != 0) {
                size_t l = err ? strcspn(err, "\n") : 0;
                if (errmsg)
                        snprintf(errmsg, errlen, "nftables: %.*s", (int)MIN(l, 300),
                                 err ? err : "failed");
                log_debug("nft failed on: %s", cmds);
                return -EIO;
        }
        return 0;
}

static int forwarding_on(void)
{
        int r = write_file("/proc/sys/net/ipv4/ip_forward", "1");
        if (r >= 0)
                r = write_file("/proc/sys/net/ipv6/conf/all/forwarding", "1");
        return r;
}

/* The sockets, the forwarding switches and the table, the first time a sandbox needs them.
 * Under e->lock. */
static int ensure_table(struct egress *e, char *errmsg, size_t errlen)
{
        if (e->table)
                return 0;
        int r = egress_serve_sockets(e, errmsg, errlen);
        if (r < 0)
                return r;
        if ((r = forwarding_on()) < 0) {
                snprintf(errmsg, errlen, "turning IP forwarding on: %s", strerror(-r));
                return r;
        }
        _cleanup_(buf_done) struct buf b = {};
        if ((r = nft_base_rules(&b, &e->names, e->dns_port)) < 0)
                return r;
        if ((r = nft_run(e, buf_str(&b), errmsg, errlen)) < 0)
                return r;
        e->table = true;
        return 0;
}

static int set_policy(struct egress *e, int slot, const struct net_policy *p)
{
        struct net_policy *c = calloc(1, sizeof(*c));
        if (!c || net_policy_copy(p, c) < 0) {
                free(c);
                return -ENOMEM;
        }
        if (!e->policy[slot])
                e->n++;
        net_policy_free(e->policy[slot]);
        e->policy[slot] = c;
        return 0;
}

static int rebuild_locked(struct egress *e, const char *pins_from, char *errmsg, size_t errlen);

/* slot's rules and policy. Under e->lock. */
static int apply_locked(struct egress *e, int slot, const struct net_policy *eff, char *errmsg,
                        size_t errlen)
{
        _cleanup_(buf_done) struct buf b = {};
        int r = ensure_table(e, errmsg, errlen);
        if (r >= 0)
                r = nft_slot_objects(&b, &e->names, slot);
        if (r >= 0)
                r = nft_slot_rules(&b, &e->names, slot, eff, e->dns_port, e->proxy_port);
        if (r >= 0)
                r = nft_run(e, buf_str(&b), errmsg, errlen);
        if (r != -EIO)
                return r < 0 ? r : set_policy(e, slot, eff);
        /* our tables may have been broken behind our back: everything again, this slot's new
         * policy included, in one transaction (the old one back when that fails too) */
        struct net_policy *old = TAKE_PTR(e->policy[slot]);
        if (old)
                e->n--;
        r = set_policy(e, slot, eff);
        if (r >= 0)
                r = rebuild_locked(e, e->names.main, errmsg, errlen);
        if (r >= 0) {
                log_warning("egress: tables %s, %s were broken; made again", e->names.main,
                            e->names.keep);
                net_policy_free(old);
                return 0;
        }
        net_policy_free(TAKE_PTR(e->policy[slot]));
        e->n--;
        if (old) {
                e->policy[slot] = old;
                e->n++;
        }
        return r;
}

int egress_apply(struct egress *e, int slot, const struct net_policy *eff, char *errmsg,
                 size_t errlen)
{
        if (slot < 0 || slot >= EGRESS_SLOTS_MAX)
                return -ERANGE;
        pthread_mutex_lock(&e->send_lock);
        pthread_mutex_lock(&e->lock);
        int r = apply_locked(e, slot, eff, errmsg, errlen);
        pthread_mutex_unlock(&e->lock);
        if (r >= 0)
                r = egress_serve_start(e, errmsg, errlen);
        if (r >= 0)
                r = egress_watch_start(e);
        if (r >= 0 && (r = egress_proc_policy(e->proc, slot, eff)) < 0)
                snprintf(errmsg, errlen, "sbx-egress refused the policy: %s", strerror(-r));
        pthread_mutex_unlock(&e->send_lock);
        return r;
}

static int remove_link(int slot)
{
        struct sbx_jail_egress l;
        egress_link(slot, &l);
        _cleanup_close_ int nl = rtnl_open();
        if (nl < 0)
                return nl;
        int r = rtnl_link_del(nl, l.host_if);
        return r == -ENODEV ? 0 : r;
}

/* slot's rules gone. Under e->lock. */
static int remove_locked(struct egress *e, int slot)
{
        _cleanup_(buf_done) struct buf b = {};
        int r = nft_slot_remove(&b, &e->names, slot);
        char err[400] = "";
        if (r >= 0)
                r = nft_run(e, buf_str(&b), err, sizeof(err));
        if (r < 0)
                return log_error_errno(r, "egress: removing the rules of slot %d: %m %s", slot,
                                       err);
        return 0;
}

int egress_remove(struct egress *e, int slot)
{
        if (slot < 0 || slot >= EGRESS_SLOTS_MAX)
                return -ERANGE;
        int r = remove_link(slot);
        if (r < 0)
                log_warning_errno(r, "egress: deleting " EGRESS_IF_PREFIX "%d: %m", slot);
        pthread_mutex_lock(&e->send_lock);
        pthread_mutex_lock(&e->lock);
        bool had = e->policy[slot] != NULL;
        if (had) {
                int t = e->table ? remove_locked(e, slot) : 0;
                if (t < 0 && r >= 0)
                        r = t;
                net_policy_free(TAKE_PTR(e->policy[slot]));
                e->n--;
        }
        if (e->table && e->n == 0) { /* the last one: nothing of ours stays in the kernel */
                char err[400], cmd[200];
                snprintf(cmd, sizeof(cmd), "delete table %s\ndelete table %s\n", e->names.main,
                         e->names.keep);
                if (nft_run(e, cmd, err, sizeof(err)) < 0)
                        log_warning("egress: deleting tables %s, %s: %s", e->names.main,
                                    e->names.keep, err);
                else
                        e->table = false;
        }
        pthread_mutex_unlock(&e->lock);
        if (had && e->proc)
                (void)egress_proc_policy(e->proc, slot, NULL);
        pthread_mutex_unlock(&e->send_lock);
        return r;
}

int egress_pin(struct egress *e, int slot, int family, const void *addrs, size_t n, unsigned ttl_s)
{
        if (n == 0)
                return 0;
        if (slot < 0 || slot >= EGRESS_SLOTS_MAX || (family != AF_INET && family != AF_INET6))
                return -EINVAL;
        _cleanup_(buf_done) struct buf b = {};
        int r = nft_pin(&b, &e->names, slot, family, addrs, n, ttl_s);
        if (r < 0)
                return r;
        char err[400] = "";
        pthread_mutex_lock(&e->lock);
        /* only a sandbox whose policy lists a domain has names to pin for; one that is gone
         * meanwhile has nothing to pin */
        const struct net_policy *p = e->policy[slot];
        bool names = false;
        for (size_t i = 0; p && i < p->n_allow && !names; i++)
                names = p->allow[i].kind == NET_DOMAIN;
        r = !p ? -ESRCH : !names ? -EPERM : nft_run(e, buf_str(&b), err, sizeof(err));
        pthread_mutex_unlock(&e->lock);
        if (r == -EIO)
                log_warning("egress: pinning for slot %d: %s", slot, err);
        return r;
}

int egress_lookup(struct egress *e, int family, const void *addr, struct net_policy *ret)
{
        int slot = egress_slot_of(family, addr);
        if (slot < 0)
                return -1;
        pthread_mutex_lock(&e->lock);
        int r = e->policy[slot] && net_policy_copy(e->policy[slot], ret) >= 0 ? slot : -1;
        pthread_mutex_unlock(&e->lock);
        return r;
}

int egress_ca_pem(struct egress *e, char **ret)
{
        char err[400] = "";
        pthread_mutex_lock(&e->lock);
        int r = egress_serve_sockets(e, err, sizeof(err));
        char *pem = r >= 0 ? strdup(e->ca_cert) : NULL;
        pthread_mutex_unlock(&e->lock);
        if (r < 0)
                return log_error_errno(r, "%s", err);
        if (!pem)
                return -ENOMEM;
        *ret = pem;
        return 0;
}

/* The pinned addresses of table from (as it is: a JSON listing), as pins of both tables for
 * the slots in keep[], with what is left of their timeouts. Under e->lock. */
static void saved_pins(struct egress *e, const char *from, const bool *keep, struct buf *out)
{
        char cmd[120];
        snprintf(cmd, sizeof(cmd), "list table %s\n", from);
        nft_ctx_output_set_flags(e->nft, NFT_CTX_OUTPUT_JSON);
        int r = nft_run_cmd_from_buffer(e->nft, cmd);
        nft_ctx_output_set_flags(e->nft, 0);
        const char *text = nft_ctx_get_output_buffer(e->nft);
        if (r != 0 || !text)
                return;
        _cleanup_json_ cJSON *j = cJSON_Parse(text);
        const cJSON *item;
        cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(j, "nftables"))
        {
                const cJSON *set = cJSON_GetObjectItemCaseSensitive(item, "set");
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(set, "name");
                int slot;
                char fam;
                if (!cJSON_IsString(name) ||
                    sscanf(name->valuestring, "s%d_p%c", &slot, &fam) != 2 || slot < 0 ||
                    slot >= EGRESS_SLOTS_MAX || !keep[slot])
                        continue;
                const cJSON *el;
                cJSON_ArrayForEach(el, cJSON_GetObjectItemCaseSensitive(set, "elem"))
                {
                        const cJSON *in = cJSON_GetObjectItemCaseSensitive(el, "elem");
                        const cJSON *val = cJSON_GetObjectItemCaseSensitive(in, "val");
                        const cJSON *exp = cJSON_GetObjectItemCaseSensitive(in, "expires");
                        unsigned char a[16];
                        int family = fam == '4' ? AF_INET : AF_INET6;
                        if (!cJSON_IsString(val) || !cJSON_IsNumber(exp) || exp->valuedouble < 1 ||
                            inet_pton(family, val->valuestring, a) != 1)
                                continue;
                        (void)nft_pin(out, &e->names, slot, family, a, 1,
                                      (unsigned)exp->valuedouble);
                }
        }
}

/* Everything of ours in the kernel made again in one transaction: both tables, every slot's
 * objects and rules, the pinned addresses read from table pins_from (main while it exists:
 * the live ones; else keep: what the last sbxd left). The keep table is made afresh, whatever
 * another program left of it. Under e->lock. */
static int rebuild_locked(struct egress *e, const char *pins_from, char *errmsg, size_t errlen)
{
        _cleanup_(buf_done) struct buf b = {}, pins = {};
        _cleanup_free_ bool *keep = calloc(EGRESS_SLOTS_MAX, sizeof(bool));
        if (!keep)
                return -ENOMEM;
        for (int i = 0; i < EGRESS_SLOTS_MAX; i++)
                keep[i] = e->policy[i] != NULL;
        if (!e->nft) /* a context for the listing */
                (void)nft_run(e, "list tables\n", NULL, 0);
        if (e->nft)
                saved_pins(e, pins_from, keep, &pins);
        int r = buf_printf(&b, "add table %1$s\ndelete table %1$s\n", e->names.keep);
        if (r >= 0)
                r = nft_base_rules(&b, &e->names, e->dns_port);
        for (int i = 0; i < EGRESS_SLOTS_MAX && r >= 0; i++)
                if (e->policy[i] && (r = nft_slot_objects(&b, &e->names, i)) >= 0)
                        r = nft_slot_rules(&b, &e->names, i, e->policy[i], e->dns_port,
                                           e->proxy_port);
        if (r >= 0 && pins.len)
                r = buf_adds(&b, buf_str(&pins));
        if (r >= 0)
                r = nft_run(e, buf_str(&b), errmsg, errlen);
        if (r >= 0)
                e->table = true;
        return r;
}

int egress_reconcile(struct egress *e, const int *slots, const struct net_policy *const *policy,
                     size_t n)
{
        char err[400] = "", cmd[200];
        pthread_mutex_lock(&e->lock);
        if (n == 0) {
                /* leftovers of our own earlier run (another sbxd's tables have other names) */
                snprintf(cmd, sizeof(cmd), "add table %1$s\ndelete table %1$s\n", e->names.keep);
                (void)nft_run(e, cmd, err, sizeof(err));
                pthread_mutex_unlock(&e->lock);
                return 0;
        }
        int r = 0;
        for (size_t i = 0; i < n && r >= 0; i++)
                r = set_policy(e, slots[i], policy[i]);
        if (r >= 0) /* before the rules: they name the resolver's and the proxy's ports */
                r = egress_serve_sockets(e, err, sizeof(err));
        if (r >= 0)
                r = forwarding_on();
        if (r >= 0) /* our main table went with the last sbxd: the keep table has the pins */
                r = rebuild_locked(e, e->names.keep, err, sizeof(err));
        pthread_mutex_unlock(&e->lock);
        if (r >= 0) /* the policies are in the table: the new sbx-egress is told them all */
                r = egress_serve_start(e, err, sizeof(err));
        if (r >= 0)
                r = egress_watch_start(e);
        if (r < 0)
                return log_error_errno(r, "egress: rebuilding the rules of %zu sandboxes: %m %s", n,
                                       err);
        return 0;
}

/* ---- the watch: our tables, as they should be ---- */

/* The text of a listing, or NULL when it failed (what it lists is gone). Under e->lock; the
 * text lives until the next command. */
static const char *listing(struct egress *e, const char *what)
{
        char cmd[160];
        snprintf(cmd, sizeof(cmd), "list %s\n", what);
        if (!e->nft && nft_run(e, "list tables\n", NULL, 0) < 0)
                return NULL;
        int r = nft_run_cmd_from_buffer(e->nft, cmd);
        const char *out = nft_ctx_get_output_buffer(e->nft);
        (void)nft_ctx_get_error_buffer(e->nft);
        return r == 0 ? out : NULL;
}

static int count(const char *text, const char *word)
{
        int n = 0;
        for (const char *p = text; p && (p = strstr(p, word)); p += strlen(word))
                n++;
        return n;
}

/* Are our tables whole: the main table's hooked forward chain there, the keep table's three
 * guard rules there? Under e->lock. */
static bool whole(struct egress *e)
{
        char what[160];
        snprintf(what, sizeof(what), "chain %s forward", e->names.main);
        if (!listing(e, what))
                return false;
        snprintf(what, sizeof(what), "table %s", e->names.keep);
        const char *keep = listing(e, what);
        return keep && count(keep, "drop") == 3;
}

static void *watch_main(void *arg)
{
        struct egress *e = arg;
        pthread_mutex_lock(&e->lock);
        while (!e->watch_stop) {
                struct timespec until = timespec_in_ms(CLOCK_MONOTONIC, EGRESS_WATCH_MS);
                (void)pthread_cond_timedwait(&e->watch_cond, &e->lock, &until);
                if (e->watch_stop || !e->table || whole(e))
                        continue;
                /* another program removed them (nft flush ruleset, a firewall reload): the
                 * keep table, gone too, no longer holds the links shut */
                char err[400] = "";
                bool main_there =
                    listing(e, "tables") && strstr(listing(e, "tables"), e->names.main + 5);
                int r =
                    rebuild_locked(e, main_there ? e->names.main : e->names.keep, err, sizeof(err));
                stats_count_egress_restored();
                if (r < 0)
                        log_error_errno(r,
                                        "egress: the rules of %u sandbox(es) were removed by "
                                        "another program and cannot be put back: %m %s",
                                        e->n, err);
                else
                        log_error("egress: the rules of %u sandbox(es) were removed by another "
                                  "program (tables %s, %s): put back",
                                  e->n, e->names.main, e->names.keep);
        }
        pthread_mutex_unlock(&e->lock);
        return NULL;
}

int egress_watch_start(struct egress *e)
{
        pthread_mutex_lock(&e->lock);
        int r = e->watching ? 0 : -pthread_create(&e->watch, NULL, watch_main, e);
        if (r >= 0)
                e->watching = true;
        pthread_mutex_unlock(&e->lock);
        return r;
}

void egress_watch_stop(struct egress *e)
{
        pthread_mutex_lock(&e->lock);
        bool was = e->watching;
        e->watch_stop = true;
        pthread_cond_broadcast(&e->watch_cond);
        pthread_mutex_unlock(&e->lock);
        if (was)
                pthread_join(e->watch, NULL);
}
