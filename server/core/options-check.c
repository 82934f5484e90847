/* SPDX-License-Identifier: Apache-2.0 */
#include "core/options-check.h"

#include <arpa/inet.h>
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
int check_domain(const char *d, const char **why)
{
        static const char want[] = "want a host name of [A-Za-z0-9.-] with an optional :PORT, "
                                   "at most 253 bytes";
        size_t l = strlen(d), host = strcspn(d, ":");
        if (l == 0 || l > SBXD_DOMAIN_MAX || host == 0 || d[0] == '.' || d[0] == '-' ||
            strspn(d, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-") != host)
                return refuse(why, want);
        if (host == l)
                return 0;
        const char *port = d + host + 1;
        size_t pl = strlen(port);
        if (pl < 1 || pl > 5 || strspn(port, "0123456789") != pl || atoi(port) < 1 ||
            atoi(port) > 65535)
                return refuse(why, want);
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
