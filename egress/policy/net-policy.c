/* SPDX-License-Identifier: Apache-2.0 */
#include "net-policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macros.h"

static int parse_list(const cJSON *net, const char *key, bool domains, struct net_rule **ret,
                      size_t *ret_n, const char **ret_msg)
{
        static __thread char msg[NET_DOMAIN_MAX + 128];
        const cJSON *a = net ? cJSON_GetObjectItemCaseSensitive(net, key) : NULL;
        *ret = NULL;
        *ret_n = 0;
        if (!a || cJSON_IsNull(a))
                return 0;
        int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
        if (n < 0 || n > NET_RULES_MAX) {
                snprintf(msg, sizeof(msg), "network.%s must be an array of at most %d strings", key,
                         NET_RULES_MAX);
                *ret_msg = msg;
                return -EINVAL;
        }
        _cleanup_free_ struct net_rule *rules = calloc((size_t)n + 1, sizeof(*rules));
        if (!rules)
                return -ENOMEM;
        size_t k = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, a)
        {
                if (!cJSON_IsString(e)) {
                        snprintf(msg, sizeof(msg), "network.%s entries must be strings", key);
                        *ret_msg = msg;
                        return -EINVAL;
                }
                struct net_rule *r = &rules[k];
                if (net_cidr_parse(e->valuestring, r) ||
                    (domains && net_domain_parse(e->valuestring, r))) {
                        k++;
                        continue;
                }
                snprintf(msg, sizeof(msg), "network.%s: '%.*s' is not %s", key, NET_DOMAIN_MAX,
                         e->valuestring,
                         domains ? "an IP address, a CIDR block or a domain name"
                                 : "an IP address or a CIDR block (domain names are not "
                                   "supported for deny rules)");
                *ret_msg = msg;
                return -EINVAL;
        }
        *ret = TAKE_PTR(rules);
        *ret_n = k;
        return 0;
}

/* Fields E2B has that this server does not implement: refused rather than ignored. */
static int unsupported(const cJSON *net, const char **ret_msg)
{
        const cJSON *proxy = net ? cJSON_GetObjectItemCaseSensitive(net, "egressProxy") : NULL;
        if (proxy && !cJSON_IsNull(proxy)) {
                *ret_msg = "network.egressProxy is not supported by this server";
                return -EINVAL;
        }
        return 0;
}

int net_policy_parse(const cJSON *body, const char *network_key, struct net_policy *ret,
                     const char **ret_msg)
{
        struct net_policy p = {.internet = -1};
        const cJSON *in =
            body ? cJSON_GetObjectItemCaseSensitive(body, "allow_internet_access") : NULL;
        if (in && !cJSON_IsNull(in) && !cJSON_IsBool(in)) {
                *ret_msg = "allow_internet_access must be a boolean";
                return -EINVAL;
        }
        if (cJSON_IsBool(in))
                p.internet = cJSON_IsTrue(in);
        const cJSON *net = body;
        if (network_key) {
                net = body ? cJSON_GetObjectItemCaseSensitive(body, network_key) : NULL;
                if (net && !cJSON_IsNull(net) && !cJSON_IsObject(net)) {
                        *ret_msg = "network must be an object";
                        return -EINVAL;
                }
        }
        int r = unsupported(net, ret_msg);
        if (r >= 0)
                r = parse_list(net, "allowOut", true, &p.allow, &p.n_allow, ret_msg);
        if (r >= 0)
                r = parse_list(net, "denyOut", false, &p.deny, &p.n_deny, ret_msg);
        if (r >= 0)
                r = net_transforms_parse(net ? cJSON_GetObjectItemCaseSensitive(net, "rules")
                                             : NULL,
                                         &p.xf, &p.n_xf, ret_msg);
        if (r < 0) {
                net_policy_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

void net_policy_done(struct net_policy *p)
{
        free(p->allow);
        free(p->deny);
        net_transforms_free(p->xf, p->n_xf);
        p->allow = p->deny = NULL;
        p->xf = NULL;
        p->n_allow = p->n_deny = p->n_xf = 0;
}

void net_policy_free(struct net_policy *p)
{
        if (p)
                net_policy_done(p);
        free(p);
}

int net_policy_copy(const struct net_policy *p, struct net_policy *ret)
{
        struct net_policy c = {.internet = p->internet, .n_allow = p->n_allow, .n_deny = p->n_deny};
        c.allow = calloc(p->n_allow + 1, sizeof(*c.allow));
        c.deny = calloc(p->n_deny + 1, sizeof(*c.deny));
        if (!c.allow || !c.deny || net_transforms_copy(p->xf, p->n_xf, &c.xf) < 0) {
                net_policy_done(&c);
                return -ENOMEM;
        }
        c.n_xf = p->n_xf;
        if (p->n_allow)
                memcpy(c.allow, p->allow, p->n_allow * sizeof(*c.allow));
        if (p->n_deny)
                memcpy(c.deny, p->deny, p->n_deny * sizeof(*c.deny));
        *ret = c;
        return 0;
}

static cJSON *list_json(const struct net_rule *rules, size_t n)
{
        cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; a && i < n; i++) {
                char buf[NET_DOMAIN_MAX + 3];
                net_rule_format(&rules[i], buf);
                cJSON *s = cJSON_CreateString(buf);
                if (!s || !cJSON_AddItemToArray(a, s)) {
                        cJSON_Delete(s);
                        cJSON_Delete(a);
                        return NULL;
                }
        }
        return a;
}

cJSON *net_policy_lists_json(const struct net_policy *p)
{
        cJSON *o = cJSON_CreateObject(), *a;
        if (!o)
                return NULL;
        if (p->n_allow &&
            (!(a = list_json(p->allow, p->n_allow)) || !cJSON_AddItemToObject(o, "allowOut", a)))
                goto fail;
        if (p->n_deny &&
            (!(a = list_json(p->deny, p->n_deny)) || !cJSON_AddItemToObject(o, "denyOut", a)))
                goto fail;
        return o;
fail:
        cJSON_Delete(o);
        return NULL;
}

cJSON *net_policy_rules_json(const struct net_policy *p)
{
        cJSON *o = cJSON_CreateObject();
        for (size_t i = 0; o && i < p->n_xf; i++) {
                char key[NET_DOMAIN_MAX + 3];
                net_rule_format(&p->xf[i].domain, key);
                cJSON *a = cJSON_AddArrayToObject(o, key), *rule = cJSON_CreateObject();
                cJSON *tr = rule ? cJSON_AddObjectToObject(rule, "transform") : NULL;
                cJSON *h = cJSON_Duplicate(p->xf[i].headers, true);
                if (!a || !rule || !tr || !h || !cJSON_AddItemToArray(a, rule) ||
                    !cJSON_AddItemToObject(tr, "headers", h)) {
                        cJSON_Delete(o);
                        return NULL;
                }
        }
        return o;
}

const struct net_transform *net_transform_find(const struct net_policy *p, const char *name)
{
        const struct net_transform *best = NULL;
        for (size_t i = 0; i < p->n_xf; i++) {
                const struct net_rule *d = &p->xf[i].domain;
                if (!d->wildcard && strcmp(d->name, name) == 0)
                        return &p->xf[i];
                if (d->wildcard && net_rule_matches(d, name) &&
                    (!best || strlen(d->name) > strlen(best->domain.name)))
                        best = &p->xf[i];
        }
        return best;
}

cJSON *net_policy_record_json(const struct net_policy *p)
{
        _cleanup_json_ cJSON *e = net_policy_lists_json(p);
        if (!e || !cJSON_AddBoolToObject(e, "internet", p->internet > 0))
                return NULL;
        if (p->n_xf) {
                cJSON *rules = net_policy_rules_json(p);
                if (!rules || !cJSON_AddItemToObject(e, "rules", rules)) {
                        cJSON_Delete(rules);
                        return NULL;
                }
        }
        return TAKE_PTR(e);
}

int net_policy_from_record(const cJSON *e, struct net_policy *ret)
{
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(e, "internet");
        if (!cJSON_IsObject(e) || !cJSON_IsBool(in))
                return -EBADMSG;
        _cleanup_json_ cJSON *body = cJSON_Duplicate(e, 1);
        if (!body)
                return -ENOMEM;
        cJSON_DeleteItemFromObjectCaseSensitive(body, "internet");
        const char *msg;
        struct net_policy p;
        int r = net_policy_parse(body, NULL, &p, &msg);
        if (r < 0)
                return r == -ENOMEM ? r : -EBADMSG;
        p.internet = cJSON_IsTrue(in);
        *ret = p;
        return 0;
}
