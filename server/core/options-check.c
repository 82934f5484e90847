/* SPDX-License-Identifier: Apache-2.0 */
#include "core/options-check.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/server-config.h"
#include "core/validate.h"
#include "macros.h"

#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

static int refuse(const char **why, const char *what)
{
        *why = what;
        return -EINVAL;
}

int check_listen(const char *v, const char **why)
{
        struct sockaddr_storage ss;
        socklen_t len;
        if (config_parse_listen(v, &ss, &len, NULL) < 0)
                return refuse(why, "want HOST:PORT or [V6]:PORT with a numeric host");
        return 0;
}

int check_advertise(const char *v, const char **why)
{
        if (strlen(v) > 127)
                return refuse(why, "longer than 127 bytes");
        return check_listen(v, why);
}

/* A host name with an optional :PORT: what getHost() appends after "<port>-<id>.". */
static bool domain_valid(const char *d)
{
        size_t l = strlen(d), host = strcspn(d, ":");
        if (l == 0 || l > SBXD_DOMAIN_MAX || host == 0 || d[0] == '.' || d[0] == '-' ||
            strspn(d, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-") != host)
                return false;
        if (host == l)
                return true;
        const char *port = d + host + 1;
        size_t pl = strlen(port);
        return pl >= 1 && pl <= 5 && strspn(port, "0123456789") == pl && atoi(port) >= 1 &&
               atoi(port) <= 65535;
}

int check_domain(const char *d, const char **why)
{
        if (!domain_valid(d))
                return refuse(why, "want a host name of [A-Za-z0-9.-] with an optional :PORT, "
                                   "at most 253 bytes");
        return 0;
}

/* --public-url: http:// or https://, a host (a name, an IPv4 address or a bracketed IPv6
 * one) with an optional :PORT, an optional path prefix; no query, no fragment, no user. */
static bool public_url_valid(const char *u)
{
        size_t l = strlen(u), skip = strncmp(u, "https://", 8) == 0  ? 8
                                     : strncmp(u, "http://", 7) == 0 ? 7
                                                                     : 0;
        if (!skip || l > SBXD_PUBLIC_URL_MAX)
                return false;
        const char *a = u + skip, *path = strchr(a, '/');
        size_t al = path ? (size_t)(path - a) : strlen(a);
        char auth[SBXD_PUBLIC_URL_MAX + 1];
        memcpy(auth, a, al);
        auth[al] = 0;
        if (path && strspn(path, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                 "0123456789._~/-") != strlen(path))
                return false;
        if (auth[0] != '[')
                return domain_valid(auth);
        const char *e = strchr(auth, ']');
        return e && e - auth > 1 &&
               strspn(auth + 1, "0123456789abcdefABCDEF:.") == (size_t)(e - auth - 1) &&
               (!e[1] || (e[1] == ':' && domain_valid(e + 2) &&
                          strspn(e + 2, "0123456789") == strlen(e + 2)));
}

int check_public_url(const char *v, const char **why)
{
        if (!public_url_valid(v))
                return refuse(why, "want http:// or https://, a host with an optional :PORT and "
                                   "path, at most 255 bytes");
        return 0;
}

/* HOST[:PORT]: a registry's host as image references write it (a name or an IPv4 address,
 * lower case, an optional port; "[V6]:PORT" too). */
static bool registry_host_valid(const char *h)
{
        size_t l = strlen(h);
        if (l == 0 || l > 255)
                return false;
        if (h[0] == '[') {
                const char *e = strchr(h, ']');
                return e && e > h + 1 &&
                       strspn(h + 1, "0123456789abcdefABCDEF:.") == (size_t)(e - h - 1) &&
                       (!e[1] ||
                        (e[1] == ':' && e[2] && strspn(e + 2, "0123456789") == strlen(e + 2) &&
                         strlen(e + 2) <= 5));
        }
        size_t host = strcspn(h, ":");
        if (host == 0 || h[0] == '.' || h[0] == '-' ||
            strspn(h, "abcdefghijklmnopqrstuvwxyz0123456789.-") != host)
                return false;
        const char *port = h + host;
        return !*port || (port[1] && strlen(port + 1) <= 5 &&
                          strspn(port + 1, "0123456789") == strlen(port + 1));
}

int check_registry_host(const char *v, const char **why)
{
        if (!registry_host_valid(v))
                return refuse(why, "want HOST[:PORT], lower case");
        return 0;
}

/* http(s)://HOST[:PORT] with at most a trailing slash: a registry's root. */
int check_registry_mirror(const char *v, const char **why)
{
        const char *h = strncmp(v, "https://", 8) == 0  ? v + 8
                        : strncmp(v, "http://", 7) == 0 ? v + 7
                                                        : NULL;
        char host[300];
        snprintf(host, sizeof(host), "%s", h ? h : "");
        size_t hl = strlen(host);
        if (hl && host[hl - 1] == '/')
                host[hl - 1] = 0;
        if (!h || strlen(h) >= sizeof(host) - 1 || !registry_host_valid(host))
                return refuse(why, "want http(s)://HOST[:PORT], no path");
        return 0;
}

/* One directory level below each hierarchy's root. */
int check_cgroup_name(const char *v, const char **why)
{
        if (!*v || strlen(v) > 64 || strspn(v, NAME_CHARS) != strlen(v) || v[0] == '.')
                return refuse(why, "want [A-Za-z0-9._-], at most 64, not starting with a dot");
        return 0;
}

int check_node_name(const char *v, const char **why)
{
        if (!*v || strlen(v) > 63 || strspn(v, NAME_CHARS) != strlen(v))
                return refuse(why, "want [A-Za-z0-9._-], at most 63");
        return 0;
}

int check_ip(const char *v, const char **why)
{
        unsigned char a[16];
        if (inet_pton(AF_INET, v, a) != 1 && inet_pton(AF_INET6, v, a) != 1)
                return refuse(why, "want an IP address");
        return 0;
}

int check_readable(const char *v, const char **why)
{
        if (access(v, R_OK) < 0)
                return refuse(why, errno == ENOENT ? "no such file" : "cannot be read");
        return 0;
}

int check_etcd_urls(const char *v, const char **why)
{
        if (strncmp(v, "etcd://", 7) != 0 || !v[7] || strlen(v) > 1000)
                return refuse(why, "want etcd://HOST:PORT[,HOST:PORT...]");
        return 0;
}

int check_template_names(const char *v, const char **why)
{
        _cleanup_free_ char *copy = strdup(v);
        char *save = NULL;
        if (!copy)
                return refuse(why, "out of memory");
        if (v[0] == ',' || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
                return refuse(why, "want template names separated by commas");
        for (char *n = strtok_r(copy, ",", &save); n; n = strtok_r(NULL, ",", &save))
                if (!template_name_valid(n))
                        return refuse(why, "a name is not a valid template name");
        return 0;
}
