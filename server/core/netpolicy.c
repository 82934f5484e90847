/* SPDX-License-Identifier: Apache-2.0 */
#include "core/netpolicy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macros.h"

static void clear_host_bits(uint8_t *a, unsigned bytes, unsigned prefix)
{
        for (unsigned i = 0; i < bytes * 8; i++)
                if (i >= prefix)
                        a[i / 8] &= (uint8_t) ~(0x80 >> (i % 8));
}

/* "A", "A/N" for IPv4 and IPv6. */
static bool parse_cidr(const char *s, struct net_rule *r)
{
        char buf[INET6_ADDRSTRLEN + 8];
        if (strlen(s) >= sizeof(buf))
                return false;
        strcpy(buf, s);
        char *slash = strchr(buf, '/');
        long n = -1;
        if (slash) {
                char *end;
                *slash = 0;
                if (slash[1] < '0' || slash[1] > '9' || strlen(slash + 1) > 3)
                        return false;
                n = strtol(slash + 1, &end, 10);
                if (*end)
                        return false;
        }
        if (inet_pton(AF_INET, buf, r->addr) == 1) {
                r->kind = NET_V4;
                if (n > 32)
                        return false;
                r->prefix = n < 0 ? 32 : (unsigned)n;
                clear_host_bits(r->addr, 4, r->prefix);
                return true;
        }
        if (inet_pton(AF_INET6, buf, r->addr) == 1) {
                r->kind = NET_V6;
                if (n > 128)
                        return false;
                r->prefix = n < 0 ? 128 : (unsigned)n;
                clear_host_bits(r->addr, 16, r->prefix);
                return true;
        }
        return false;
}

/* RFC 1123 host names: labels of [a-z0-9-], 1..63, not starting or ending with '-', at least
 * two labels (a bare "com" is refused as too wide), optionally "*." in front. */
bool net_domain_parse(const char *s, struct net_rule *r)
{
        r->kind = NET_DOMAIN;
        r->wildcard = strncmp(s, "*.", 2) == 0;
        if (r->wildcard)
                s += 2;
        size_t l = strlen(s);
        if (l && s[l - 1] == '.')
                l--; /* a fully qualified "example.com." */
        if (l == 0 || l > NET_DOMAIN_MAX)
                return false;
        size_t label = 0, labels = 1;
        for (size_t i = 0; i < l; i++) {
                char c = s[i];
                if (c >= 'A' && c <= 'Z')
                        c = (char)(c - 'A' + 'a');
                if (c == '.') {
                        if (label == 0 || s[i - 1] == '-')
                                return false;
                        label = 0;
                        labels++;
                } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                           (c == '-' && label > 0)) {
                        if (++label > 63)
                                return false;
                } else {
                        return false;
                }
                r->name[i] = c;
        }
        r->name[l] = 0;
        /* the last label has a letter: "1.2.3" is a bad address, not a name */
        const char *tld = strrchr(r->name, '.');
        return label > 0 && s[l - 1] != '-' && labels >= 2 && tld &&
               strspn(tld + 1, "0123456789") < strlen(tld + 1);
}

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
                if (parse_cidr(e->valuestring, r) ||
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

void net_rule_format(const struct net_rule *r, char buf[static NET_DOMAIN_MAX + 3])
{
        if (r->kind == NET_DOMAIN) {
                snprintf(buf, NET_DOMAIN_MAX + 3, "%s%s", r->wildcard ? "*." : "", r->name);
                return;
        }
        int af = r->kind == NET_V4 ? AF_INET : AF_INET6;
        char a[INET6_ADDRSTRLEN];
        inet_ntop(af, r->addr, a, sizeof(a));
        snprintf(buf, NET_DOMAIN_MAX + 3, "%s/%u", a, r->prefix);
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

bool net_rule_matches(const struct net_rule *r, const char *name)
{
        if (r->kind != NET_DOMAIN)
                return false;
        size_t nl = strlen(name), rl = strlen(r->name);
        if (!r->wildcard)
                return nl == rl && memcmp(name, r->name, nl) == 0;
        return nl > rl + 1 && name[nl - rl - 1] == '.' && memcmp(name + nl - rl, r->name, rl) == 0;
}
