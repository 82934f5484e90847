/* SPDX-License-Identifier: Apache-2.0 */
/* network.rules: parsing and copying of request transforms (net-transform.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net-transform.h"
#include "json-util.h"
#include "macros.h"

/* Header names sbx will not let a transform set: they frame the message or the connection. */
static const char *const framing[] = {
    "host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade",
    "te",   "trailer",        "proxy-connection",  NULL,
};

static bool token_char(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               strchr("!#$%&'*+-.^_`|~", c);
}

static const char *check_name(const char *n)
{
        size_t l = strlen(n);
        if (l == 0 || l > NET_TRANSFORM_NAME_MAX)
                return "a header name must be 1 to 64 characters";
        for (size_t i = 0; i < l; i++)
                if (!token_char(n[i]))
                        return "a header name must be an HTTP token";
        for (size_t i = 0; framing[i]; i++)
                if (strcasecmp(n, framing[i]) == 0)
                        return "a transform cannot set a header that frames the message "
                               "(Host, Content-Length, Transfer-Encoding, Connection, ...)";
        return NULL;
}

/* Values: printable, no CR/LF; "${" opens a placeholder that must be ${e2b.secrets.<name>}. */
static const char *check_value(const char *v)
{
        if (strlen(v) > NET_TRANSFORM_VALUE_MAX)
                return "a header value must be at most 8192 bytes";
        for (const char *p = v; *p; p++)
                if ((unsigned char)*p < 0x20 && *p != '\t')
                        return "a header value cannot contain control characters";
        for (const char *p = strstr(v, "${"); p; p = strstr(p + 2, "${")) {
                if (strncmp(p, "${e2b.identity.", 15) == 0)
                        return "IAM token placeholders are not supported by this server";
                if (strncmp(p, NET_SECRET_PLACEHOLDER, strlen(NET_SECRET_PLACEHOLDER)) != 0)
                        continue; /* a literal "${" of the value's own */
                const char *name = p + strlen(NET_SECRET_PLACEHOLDER);
                const char *end = strchr(name, '}');
                if (!end || end == name || memchr(name, '{', (size_t)(end - name)))
                        return "a secret placeholder must be ${e2b.secrets.<name>}";
        }
        return NULL;
}

static int fail(const char **ret_msg, const char *key, const char *what)
{
        static __thread char msg[NET_DOMAIN_MAX + 256];
        snprintf(msg, sizeof(msg), "network.rules['%.*s']: %s", NET_DOMAIN_MAX, key, what);
        *ret_msg = msg;
        return -EINVAL;
}

/* One key's array of rules into t. */
static int parse_key(const cJSON *k, struct net_transform *t, const char **ret_msg)
{
        const char *key = k->string;
        if (!cJSON_IsArray(k) || cJSON_GetArraySize(k) > NET_TRANSFORM_RULES)
                return fail(ret_msg, key, "must be an array of at most 16 rules");
        /* "*.com" is allowed here (E2B): test the name with a second label added */
        char probe[NET_DOMAIN_MAX + 8];
        bool wild = strncmp(key, "*.", 2) == 0;
        snprintf(probe, sizeof(probe), "%s%s", key, wild && !strchr(key + 2, '.') ? ".x" : "");
        if (!net_domain_parse(probe, &t->domain))
                return fail(ret_msg, key, "the key must be a domain name or *.<domain>");
        if (wild && !strchr(key + 2, '.'))
                t->domain.name[strlen(t->domain.name) - 2] = '\0';
        if (!(t->headers = cJSON_CreateObject()))
                return -ENOMEM;
        const cJSON *rule;
        cJSON_ArrayForEach(rule, k)
        {
                const cJSON *tr = cJSON_GetObjectItemCaseSensitive(rule, "transform");
                const cJSON *h = cJSON_GetObjectItemCaseSensitive(tr, "headers");
                if (!cJSON_IsObject(rule) || (tr && !cJSON_IsNull(tr) && !cJSON_IsObject(tr)) ||
                    (h && !cJSON_IsNull(h) && !cJSON_IsObject(h)))
                        return fail(ret_msg, key, "rules are {\"transform\":{\"headers\":{...}}}");
                const cJSON *e;
                cJSON_ArrayForEach(e, h)
                {
                        const char *m = cJSON_IsString(e) ? check_name(e->string)
                                                          : "header values must be strings";
                        if (!m)
                                m = check_value(e->valuestring);
                        if (m)
                                return fail(ret_msg, key, m);
                        cJSON *old = t->headers->child;
                        while (old && strcasecmp(old->string, e->string) != 0)
                                old = old->next;
                        if (old)
                                cJSON_Delete(cJSON_DetachItemViaPointer(t->headers, (cJSON *)old));
                        if (!cJSON_AddStringToObject(t->headers, e->string, e->valuestring))
                                return -ENOMEM;
                }
        }
        size_t n = 0, total = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, t->headers)
        {
                n++;
                total += strlen(e->string) + strlen(e->valuestring);
        }
        if (n > NET_TRANSFORM_HEADERS || total > NET_TRANSFORM_TOTAL_MAX)
                return fail(ret_msg, key, "at most 32 headers and 16384 bytes per domain");
        return 0;
}

void net_transforms_free(struct net_transform *xf, size_t n)
{
        for (size_t i = 0; xf && i < n; i++)
                cJSON_Delete(xf[i].headers);
        free(xf);
}

int net_transforms_parse(const cJSON *rules, struct net_transform **ret, size_t *ret_n,
                         const char **ret_msg)
{
        *ret = NULL;
        *ret_n = 0;
        if (!rules || cJSON_IsNull(rules))
                return 0;
        int n = cJSON_IsObject(rules) ? cJSON_GetArraySize(rules) : -1;
        if (n < 0 || n > NET_TRANSFORM_DOMAINS) {
                *ret_msg = "network.rules must be an object of at most 64 domains";
                return -EINVAL;
        }
        struct net_transform *xf = calloc((size_t)n + 1, sizeof(*xf));
        if (!xf)
                return -ENOMEM;
        size_t k = 0;
        int r = 0;
        const cJSON *key;
        cJSON_ArrayForEach(key, rules)
        {
                r = parse_key(key, &xf[k++], ret_msg);
                for (size_t j = 0; r >= 0 && j + 1 < k; j++)
                        if (xf[j].domain.wildcard == xf[k - 1].domain.wildcard &&
                            strcmp(xf[j].domain.name, xf[k - 1].domain.name) == 0)
                                r = fail(ret_msg, key->string, "the domain is listed twice");
                if (r < 0)
                        break;
        }
        if (r < 0) {
                net_transforms_free(xf, k);
                return r;
        }
        *ret = xf;
        *ret_n = k;
        return 0;
}

int net_transforms_copy(const struct net_transform *xf, size_t n, struct net_transform **ret)
{
        struct net_transform *c = calloc(n + 1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                c[i].domain = xf[i].domain;
                if (!(c[i].headers = cJSON_Duplicate(xf[i].headers, true))) {
                        net_transforms_free(c, i);
                        return -ENOMEM;
                }
        }
        *ret = c;
        return 0;
}
