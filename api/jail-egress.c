/* SPDX-License-Identifier: Apache-2.0 */
#include "jail-egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macros.h"

static int add_addr(cJSON *o, const char *key, int family, const void *a, int prefix)
{
        char text[INET6_ADDRSTRLEN + 16];
        if (!inet_ntop(family, a, text, INET6_ADDRSTRLEN))
                return -EINVAL;
        if (prefix >= 0)
                snprintf(text + strlen(text), 16, "/%d", prefix);
        return cJSON_AddStringToObject(o, key, text) ? 0 : -ENOMEM;
}

int sbx_jail_egress_encode(cJSON *o, const struct sbx_jail_egress *e)
{
        cJSON *g = cJSON_AddObjectToObject(o, "egress");
        int r;
        if (!g || !cJSON_AddStringToObject(g, "host_if", e->host_if))
                return -ENOMEM;
        if ((r = add_addr(g, "addr4", AF_INET, e->addr4, (int)e->prefix4)) < 0 ||
            (r = add_addr(g, "gw4", AF_INET, e->gw4, -1)) < 0 ||
            (r = add_addr(g, "addr6", AF_INET6, e->addr6, (int)e->prefix6)) < 0 ||
            (r = add_addr(g, "gw6", AF_INET6, e->gw6, -1)) < 0)
                return r;
        if (e->ca_pem[0] && !cJSON_AddStringToObject(g, "ca", e->ca_pem))
                return -ENOMEM;
        return 0;
}

/* "ADDR" (prefix NULL) or "ADDR/N" with N in [min, max]. */
static bool parse_addr(const cJSON *g, const char *key, int family, void *ret, unsigned *prefix,
                       unsigned min, unsigned max)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(g, key);
        char buf[INET6_ADDRSTRLEN + 8];
        if (!cJSON_IsString(v) || strlen(v->valuestring) >= sizeof(buf))
                return false;
        strcpy(buf, v->valuestring);
        char *slash = strchr(buf, '/');
        if (!prefix != !slash)
                return false;
        if (slash) {
                char *end;
                *slash = 0;
                unsigned long n = strtoul(slash + 1, &end, 10);
                if (!slash[1] || *end || slash[1] < '0' || slash[1] > '9' || n < min || n > max)
                        return false;
                *prefix = (unsigned)n;
        }
        return inet_pton(family, buf, ret) == 1;
}

static bool same_prefix(const uint8_t *a, const uint8_t *b, unsigned bits)
{
        for (unsigned i = 0; i < bits; i++) {
                uint8_t m = (uint8_t)(0x80 >> (i % 8));
                if ((a[i / 8] & m) != (b[i / 8] & m))
                        return false;
        }
        return true;
}

static bool ifname_valid(const char *n)
{
        size_t l = strlen(n);
        if (l < 1 || l > SBX_JAIL_IFNAME_MAX)
                return false;
        for (size_t i = 0; i < l; i++)
                if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9')))
                        return false;
        return true;
}

int sbx_jail_egress_decode(const cJSON *o, struct sbx_jail_egress **ret, const char **msg)
{
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "egress");
        *ret = NULL;
        if (!g || cJSON_IsNull(g))
                return 0;
        _cleanup_free_ struct sbx_jail_egress *e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(g, "host_if");
        if (!cJSON_IsObject(g) || !cJSON_IsString(n) || !ifname_valid(n->valuestring)) {
                *msg = "egress: host_if must match [a-z0-9]{1,15}";
                return -EINVAL;
        }
        strcpy(e->host_if, n->valuestring);
        if (!parse_addr(g, "addr4", AF_INET, e->addr4, &e->prefix4, 8, 30) ||
            !parse_addr(g, "gw4", AF_INET, e->gw4, NULL, 0, 0) ||
            !parse_addr(g, "addr6", AF_INET6, e->addr6, &e->prefix6, 64, 126) ||
            !parse_addr(g, "gw6", AF_INET6, e->gw6, NULL, 0, 0)) {
                *msg = "egress: addr4 (A/8..30), gw4, addr6 (A/64..126) and gw6 must be addresses";
                return -EINVAL;
        }
        if (!same_prefix(e->addr4, e->gw4, e->prefix4) ||
            !same_prefix(e->addr6, e->gw6, e->prefix6) || !memcmp(e->addr4, e->gw4, 4) ||
            !memcmp(e->addr6, e->gw6, 16)) {
                *msg = "egress: each gateway must be another address of its sandbox address's "
                       "prefix";
                return -EINVAL;
        }
        const cJSON *ca = cJSON_GetObjectItemCaseSensitive(g, "ca");
        if (ca && (!cJSON_IsString(ca) || strlen(ca->valuestring) >= SBX_JAIL_CA_MAX ||
                   strncmp(ca->valuestring, "-----BEGIN CERTIFICATE-----\n", 28) != 0)) {
                *msg = "egress: ca must be one PEM certificate";
                return -EINVAL;
        }
        if (ca)
                strcpy(e->ca_pem, ca->valuestring);
        *ret = TAKE_PTR(e);
        return 0;
}

bool sbx_jail_egress_equal(const struct sbx_jail_egress *a, const struct sbx_jail_egress *b)
{
        if (!a || !b)
                return a == b;
        return !strcmp(a->host_if, b->host_if) && !memcmp(a->addr4, b->addr4, 4) &&
               !memcmp(a->gw4, b->gw4, 4) && a->prefix4 == b->prefix4 &&
               !memcmp(a->addr6, b->addr6, 16) && !memcmp(a->gw6, b->gw6, 16) &&
               a->prefix6 == b->prefix6;
}
