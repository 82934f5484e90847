/* SPDX-License-Identifier: Apache-2.0 */
/* One allowOut / denyOut / network.rules entry (net-rule.h). */
#include "net-rule.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void clear_host_bits(uint8_t *a, unsigned bytes, unsigned prefix)
{
        for (unsigned i = 0; i < bytes * 8; i++)
                if (i >= prefix)
                        a[i / 8] &= (uint8_t) ~(0x80 >> (i % 8));
}

/* "A", "A/N" for IPv4 and IPv6. */
bool net_cidr_parse(const char *s, struct net_rule *r)
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

bool net_rule_matches(const struct net_rule *r, const char *name)
{
        if (r->kind != NET_DOMAIN)
                return false;
        size_t nl = strlen(name), rl = strlen(r->name);
        if (!r->wildcard)
                return nl == rl && memcmp(name, r->name, nl) == 0;
        return nl > rl + 1 && name[nl - rl - 1] == '.' && memcmp(name + nl - rl, r->name, rl) == 0;
}
