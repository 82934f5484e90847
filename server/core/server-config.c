/* SPDX-License-Identifier: Apache-2.0 */
#include "core/server-config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/validate.h"
#include "fd-util.h"
#include "macros.h"

static const char usage[] =
    "Usage: sbxd [--listen HOST:PORT] [--state-dir DIR] [--jailer PATH] [--agent PATH]\n"
    "            [--port-file FILE]\n"
    "  --listen     address to serve HTTP on (default " SBXD_DEFAULT_LISTEN "; port 0 picks one)\n"
    "  --state-dir  keys, templates and sandboxes (default " SBXD_DEFAULT_STATE_DIR ")\n"
    "  --jailer     sbx-jailer binary (default: ../jailer/sbx-jailer next to sbxd's build dir,\n"
    "               else <prefix>/libexec/sbx/sbx-jailer, else " SBXD_LIBEXEC_DIR "/sbx-jailer)\n"
    "  --agent      sbx-agent binary (same search with guest-agent/sbx-agent)\n"
    "  --runtime    dir bound read-only at /.sbx/runtime in every sandbox: sudo, the code\n"
    "               interpreter's kernels (default: runtime next to the agent binary)\n"
    "  --port-file  write the bound port there once listening\n"
    "  --pool-size N             warm sandboxes per pooled template (default 2, 0: off)\n"
    "  --pool-templates A,B      templates with a warm pool\n"
    "                            (default base,code-interpreter-v1)\n"
    "  --max-sandboxes N         running + paused sandboxes (default 8192; then 429)\n"
    "  --max-creates N           cold creates in flight (default 32; more wait their turn)\n"
    "  --create-wait S           how long a create waits for its turn (default 60; then 429;\n"
    "                            0: refuse at once)\n"
    "  --persist-paused-after S  persist a sandbox paused for S seconds to disk (default 0: "
    "never)\n"
    "  --delete-paused-after S   kill a sandbox paused for S seconds (default 0: never; e.g.\n"
    "                            604800 for 7 days)\n"
    "  --disk pool|image|tmpfs   a sandbox's disk: a btrfs subvolume of the storage pool\n"
    "                            (default where the kernel has btrfs), an ext4 image on a loop\n"
    "                            device (the default otherwise; tmpfs when loop devices or\n"
    "                            mkfs.ext4 are missing) or a tmpfs (charged to its memory)\n"
    "  --storage-pool SIZE       the pool image's size when the state dir is not on btrfs\n"
    "                            (e.g. 64G, 512M; default a quarter of the free space, 2..256\n"
    "                            GiB); a larger size grows an existing pool\n"
    "  --disk-reserve MB         pool (or state-disk) space never given to sandboxes (default\n"
    "                            5% of the pool or file system, at most 1024)\n"
    "  --disk-overcommit R       promise sandbox disks up to R times the free space, as sparse\n"
    "                            files (default 1: each disk is preallocated, never "
    "overcommitted)\n"
    "  --max-sandbox-cpus N      most CPUs one sandbox may ask for (default: the host's)\n"
    "  --max-sandbox-memory MB   most memory one sandbox may ask for (default 3/4 of the host's)\n"
    "  --max-sandbox-disk MB     largest disk one sandbox may ask for (default 262144 with\n"
    "                            the storage pool, else half the state file system)\n"
    "  --total-memory MB         memory limit of all sandboxes together (default: the host's\n"
    "                            memory less 10%, at least 512 MiB, kept for the host)\n"
    "  --total-pids N            task limit of all sandboxes together (default 3/4 of the\n"
    "                            kernel's pid_max and threads-max)\n"
    "  --cgroup-parent NAME      the cgroup of all sandboxes, in each hierarchy (default sbx;\n"
    "                            another name for each further sbxd on one host)\n"
    "  --max-connections N       HTTP requests in progress, a thread each (default 1024; a\n"
    "                            request past it is answered 503)\n"
    "  --egress deny|allow       egress of a sandbox that asks for nothing (default deny)\n"
    "  --egress-max none|listed|any  the most egress any sandbox gets: none, only its allowOut\n"
    "                            list, or the internet too (default listed: what\n"
    "                            allow_internet_access asks is honoured only with any, which\n"
    "                            --egress allow implies)\n"
    "  --egress-dns ADDR         upstream DNS server of the sandboxes' resolver (default: the\n"
    "                            first nameserver of /etc/resolv.conf)\n"
    "  --domain DOMAIN           sandbox ports are <port>-<id>.DOMAIN, as sandbox.getHost()\n"
    "                            returns them (default sbx.localhost:<listening port>)\n"
    "  --tls-cert FILE           serve HTTPS with this PEM certificate (chain), valid for\n"
    "  --tls-key FILE            DOMAIN and *.DOMAIN, and this PEM key (both or neither)\n"
    "  --public-url URL          where clients reach sbxd (behind a proxy): upload links and\n"
    "                            the printed URLs use it, and a host name in it is the default\n"
    "                            DOMAIN (default: the scheme sbxd serves, the client's Host)\n"
    "  --egress-upstream-ca FILE  a PEM bundle the egress proxy trusts for servers, besides the\n"
    "                            host's CA bundle\n"
    "  --cluster etcd://H:P[,H:P] cluster mode: register in etcd, place creates on any node,\n"
    "                            forward other nodes' sandbox traffic (off by default)\n"
    "  --node-name NAME          this node's name in the cluster (default: the host name)\n"
    "  --advertise HOST:PORT     where the other nodes reach this one (default: the listen\n"
    "                            address with the bound port)\n"
    "  --console-dir DIR|none    the web console's files, served at /ui/ (default: console/\n"
    "                            next to sbxd's build dir, else <prefix>/share/sbx/console,\n"
    "                            else " SBXD_CONSOLE_DIR "; none: no console)\n"
    "  --max-layer-size SIZE     most one image layer may hold uncompressed, imported or\n"
    "                            pulled (bytes, or with K, M, G, T; default 16G, at most 64G)\n"
    "  --registry-mirror URL     pull docker.io images from this registry first (repeatable,\n"
    "                            tried in order, then docker.io): http(s)://HOST[:PORT]\n"
    "  --registry-ca FILE        a PEM bundle pulls trust for registries, besides the host's\n"
    "                            CA bundle\n"
    "  --insecure-registry HOST[:PORT]  pull from this registry over plain HTTP or unverified\n"
    "                            HTTPS (repeatable; loopback registries may use plain HTTP\n"
    "                            without it)\n";

int config_parse_listen(const char *s, struct sockaddr_storage *ret_addr, socklen_t *ret_len,
                        char **ret_host)
{
        _cleanup_free_ char *host = NULL;
        const char *port_s;
        struct sockaddr_storage ss = {};

        if (s[0] == '[') {
                const char *e = strchr(s, ']');
                if (!e || e[1] != ':')
                        return -EINVAL;
                host = strndup(s + 1, (size_t)(e - s - 1));
                port_s = e + 2;
        } else {
                const char *c = strrchr(s, ':');
                if (!c)
                        return -EINVAL;
                host = strndup(s, (size_t)(c - s));
                port_s = c + 1;
        }
        if (!host)
                return -ENOMEM;
        if (!*port_s || strlen(port_s) > 5 || strspn(port_s, "0123456789") != strlen(port_s))
                return -EINVAL;
        long port = strtol(port_s, NULL, 10);
        if (port < 0 || port > 65535)
                return -EINVAL;

        struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        socklen_t len;
        if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
                in4->sin_family = AF_INET;
                in4->sin_port = htons((uint16_t)port);
                len = sizeof(*in4);
        } else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons((uint16_t)port);
                len = sizeof(*in6);
        } else {
                return -EINVAL;
        }
        *ret_addr = ss;
        *ret_len = len;
        if (ret_host)
                *ret_host = TAKE_PTR(host);
        return 0;
}

int config_resolve_helper(const char *rel, char **ret)
{
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n < 0)
                return -errno;
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash)
                *slash = 0;
        const char *base = strrchr(rel, '/');
        base = base ? base + 1 : rel;

        char *cand[3] = {};
        if (asprintf(&cand[0], "%s/../%s", exe, rel) < 0)
                cand[0] = NULL;
        if (asprintf(&cand[1], "%s/../libexec/sbx/%s", exe, base) < 0)
                cand[1] = NULL;
        if (asprintf(&cand[2], "%s/%s", SBXD_LIBEXEC_DIR, base) < 0)
                cand[2] = NULL;
        if (!cand[0] || !cand[1] || !cand[2]) {
                for (size_t i = 0; i < ELEMENTSOF(cand); i++)
                        free(cand[i]);
                return -ENOMEM;
        }
        for (size_t i = 0; i < ELEMENTSOF(cand); i++) {
                char *r = realpath(cand[i], NULL);
                if (r && access(r, X_OK) == 0) {
                        for (size_t k = 0; k < ELEMENTSOF(cand); k++)
                                free(cand[k]);
                        *ret = r;
                        return 0;
                }
                free(r);
        }
        /* Nothing installed yet: keep the build-tree path so the error names it. */
        *ret = cand[0];
        free(cand[1]);
        free(cand[2]);
        return 0;
}

int config_resolve_console(char **ret)
{
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n < 0)
                return -errno;
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash)
                *slash = 0;
        /* the build tree (build/server/sbxd → build/console), a --prefix install, /usr */
        for (int i = 0; i < 3; i++) {
                _cleanup_free_ char *cand = NULL, *index = NULL;
                int k = i == 0   ? asprintf(&cand, "%s/../console", exe)
                        : i == 1 ? asprintf(&cand, "%s/../share/sbx/console", exe)
                                 : asprintf(&cand, "%s", SBXD_CONSOLE_DIR);
                if (k < 0)
                        return -ENOMEM;
                char *r = realpath(cand, NULL);
                if (!r)
                        continue;
                if (asprintf(&index, "%s/index.html", r) >= 0 && access(index, R_OK) == 0) {
                        *ret = r;
                        return 0;
                }
                free(r);
        }
        /* none yet: the installed place, which the start-up log names */
        *ret = strdup(SBXD_CONSOLE_DIR);
        return *ret ? 0 : -ENOMEM;
}

static int absolutize(const char *p, char **ret)
{
        if (p[0] == '/') {
                *ret = strdup(p);
        } else {
                char cwd[PATH_MAX];
                if (!getcwd(cwd, sizeof(cwd)))
                        return -errno;
                if (asprintf(ret, "%s/%s", cwd, p) < 0)
                        *ret = NULL;
        }
        return *ret ? 0 : -ENOMEM;
}

void config_done(struct sbxd_config *c)
{
        free(c->listen);
        free(c->host);
        free(c->state_dir);
        free(c->jailer);
        free(c->agent);
        free(c->runtime);
        free(c->port_file);
        free(c->pool_templates);
        free(c->cgroup_parent);
        free(c->domain);
        free(c->public_url);
        free(c->tls_cert);
        free(c->tls_key);
        free(c->tls_cert_pem);
        free(c->tls_key_pem);
        free(c->egress_dns);
        free(c->egress_upstream_ca);
        free(c->cluster);
        free(c->node_name);
        free(c->advertise);
        free(c->console_dir);
        for (size_t i = 0; i < c->n_registry_mirrors; i++)
                free(c->registry_mirrors[i]);
        free(c->registry_mirrors);
        for (size_t i = 0; i < c->n_insecure_registries; i++)
                free(c->insecure_registries[i]);
        free(c->insecure_registries);
        free(c->registry_ca);
        *c = (struct sbxd_config){};
}

#define OPT_DOMAIN          1030
#define OPT_TLS_CERT        1031
#define OPT_TLS_KEY         1032
#define OPT_PUBLIC_URL      1033
#define OPT_DELETE_PAUSED   1010
#define OPT_DISK_RESERVE    1011
#define OPT_DISK_OVERCOMMIT 1012
#define OPT_MAX_CPUS        1013
#define OPT_MAX_MEMORY      1014
#define OPT_MAX_DISK        1015
#define OPT_TOTAL_MEMORY    1016
#define OPT_TOTAL_PIDS      1017
#define OPT_CREATE_WAIT     1018
#define OPT_CGROUP_PARENT   1019
#define OPT_MAX_CONNECTIONS 1020
#define OPT_EGRESS          1021
#define OPT_EGRESS_MAX      1022
#define OPT_EGRESS_DNS      1023
#define OPT_EGRESS_CA       1024
#define OPT_CLUSTER         1025
#define OPT_NODE_NAME       1026
#define OPT_ADVERTISE       1027
#define OPT_STORAGE_POOL    1028
#define OPT_CONSOLE_DIR     1040
#define OPT_RUNTIME         1050
#define OPT_MAX_LAYER       1060
#define OPT_REG_MIRROR      1061
#define OPT_REG_CA          1062
#define OPT_REG_INSECURE    1063

/* A positive decimal number up to max into *ret. */
static int parse_u64(const char *name, const char *arg, uint64_t max, uint64_t *ret)
{
        char *end;
        errno = 0;
        unsigned long long v = strtoull(arg, &end, 10);
        if (!*arg || *end || errno || v == 0 || v > max || arg[0] == '-') {
                fprintf(stderr, "sbxd: bad --%s '%s' (1..%llu)\n", name, arg,
                        (unsigned long long)max);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

static int parse_limit(int opt, const char *arg, struct sbxd_config *c)
{
        uint64_t v;
        int r;
        switch (opt) {
        case OPT_DISK_RESERVE:
                return parse_u64("disk-reserve", arg, 1ULL << 30, &c->disk_reserve_mb);
        case OPT_DISK_OVERCOMMIT: {
                char *end;
                errno = 0;
                double d = strtod(arg, &end);
                if (!*arg || *end || errno || !(d >= 1.0 && d <= SBXD_MAX_OVERCOMMIT)) {
                        fprintf(stderr, "sbxd: bad --disk-overcommit '%s' (1..%d)\n", arg,
                                SBXD_MAX_OVERCOMMIT);
                        return -EINVAL;
                }
                c->disk_overcommit = d;
                return 0;
        }
        case OPT_MAX_CPUS:
                r = parse_u64("max-sandbox-cpus", arg, 4096, &v);
                c->max_cpus = (unsigned)v;
                return r;
        case OPT_MAX_MEMORY:
                return parse_u64("max-sandbox-memory", arg, 1ULL << 30, &c->max_memory_mb);
        case OPT_MAX_DISK:
                return parse_u64("max-sandbox-disk", arg, 1ULL << 30, &c->max_disk_mb);
        case OPT_TOTAL_MEMORY:
                return parse_u64("total-memory", arg, 1ULL << 30, &c->total_memory_mb);
        case OPT_TOTAL_PIDS:
                return parse_u64("total-pids", arg, 1ULL << 30, &c->total_pids);
        }
        return -EINVAL;
}

/* --egress deny|allow, --egress-max none|listed|any, --egress-dns ADDR (an IP address). */
static int parse_egress(int opt, const char *arg, struct sbxd_config *c, const char **dns)
{
        unsigned char a[16];
        if (opt == OPT_EGRESS && (!strcmp(arg, "deny") || !strcmp(arg, "allow"))) {
                c->egress_allow = !strcmp(arg, "allow");
                return 0;
        }
        if (opt == OPT_EGRESS_MAX) {
                static const char *const names[] = {"none", "listed", "any"};
                for (unsigned i = 0; i < ELEMENTSOF(names); i++)
                        if (!strcmp(arg, names[i])) {
                                c->egress_max = (enum egress_max)i;
                                return 0;
                        }
        }
        if (opt == OPT_EGRESS_DNS &&
            (inet_pton(AF_INET, arg, a) == 1 || inet_pton(AF_INET6, arg, a) == 1)) {
                *dns = arg;
                return 0;
        }
        fprintf(stderr, "sbxd: bad --%s '%s' (%s)\n",
                opt == OPT_EGRESS       ? "egress"
                : opt == OPT_EGRESS_MAX ? "egress-max"
                                        : "egress-dns",
                arg,
                opt == OPT_EGRESS       ? "deny or allow"
                : opt == OPT_EGRESS_MAX ? "none, listed or any"
                                        : "an IP address");
        return -EINVAL;
}

/* --pool-size and friends: a decimal count in a sane range. */
static int parse_count(int opt, const char *arg, struct sbxd_config *c)
{
        char *end;
        unsigned long v = strtoul(arg, &end, 10);
        unsigned long max = opt == 1000                  ? 64
                            : opt == 1004                ? 30 * 86400
                            : opt == OPT_DELETE_PAUSED   ? 3650UL * 86400
                            : opt == OPT_CREATE_WAIT     ? 3600
                            : opt == OPT_MAX_CONNECTIONS ? SBXD_MAX_CONNECTIONS_MAX
                                                         : 100000;
        if (!*arg || *end || v > max ||
            ((opt == 1002 || opt == 1003 || opt == OPT_MAX_CONNECTIONS) && v == 0)) {
                fprintf(stderr, "sbxd: bad value '%s' (0..%lu)\n", arg, max);
                return -EINVAL;
        }
        if (opt == 1000)
                c->pool_size = (unsigned)v;
        else if (opt == 1002)
                c->max_sandboxes = (unsigned)v;
        else if (opt == 1003)
                c->max_creates = (unsigned)v;
        else if (opt == 1004)
                c->persist_paused_after_s = (unsigned)v;
        else if (opt == OPT_CREATE_WAIT)
                c->create_wait_s = (unsigned)v;
        else if (opt == OPT_MAX_CONNECTIONS)
                c->max_connections = (unsigned)v;
        else
                c->delete_paused_after_s = (unsigned)v;
        return 0;
}

static int load_pem(const char *path, char **ret)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        size_t len;
        int r = fd < 0 ? -errno : read_all(fd, SBXD_TLS_MAX_PEM, ret, &len);
        if (r < 0)
                fprintf(stderr, "sbxd: reading %s: %s\n", path, strerror(-r));
        return r;
}

int config_load_tls(struct sbxd_config *c)
{
        if (!c->tls_cert)
                return 0;
        int r = load_pem(c->tls_cert, &c->tls_cert_pem);
        return r < 0 ? r : load_pem(c->tls_key, &c->tls_key_pem);
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

/* The runtime dir beside the agent binary (guest-agent/meson.build lays it out there). */
static int runtime_next_to(const char *agent, char **ret)
{
        const char *slash = strrchr(agent, '/');
        if (asprintf(ret, "%.*s/runtime", slash ? (int)(slash - agent) : 1, slash ? agent : ".") <
            0)
                return -ENOMEM;
        return 0;
}

/* SIZE: bytes, or with a K, M, G or T suffix (powers of 1024), 1 MiB .. max. */
static int parse_size(const char *name, const char *arg, uint64_t max, uint64_t *ret)
{
        char *end;
        errno = 0;
        unsigned long long v = strtoull(arg, &end, 10);
        static const char units[] = "KMGT";
        const char *u = *end ? strchr(units, *end) : NULL;
        unsigned shift = u ? 10u * (unsigned)(u - units + 1) : 0;
        if (end == arg || errno || arg[0] == '-' || (*end && (!u || end[1])) ||
            v > (max >> shift) || (v << shift) < (1u << 20) || (v << shift) > max) {
                fprintf(stderr, "sbxd: bad --%s '%s' (1M..%lluG: bytes, or with K, M, G, T)\n",
                        name, arg, (unsigned long long)(max >> 30));
                return -EINVAL;
        }
        *ret = (uint64_t)v << shift;
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

static int push_str(char ***v, size_t *n, const char *s)
{
        if (*n == SBXD_MAX_REGISTRY_OPTIONS)
                return -E2BIG;
        char **nv = realloc(*v, (*n + 1) * sizeof(**v));
        if (!nv)
                return -ENOMEM;
        *v = nv;
        if (!(nv[*n] = strdup(s)))
                return -ENOMEM;
        (*n)++;
        return 0;
}

/* --max-layer-size, --registry-mirror, --registry-ca, --insecure-registry. */
static int parse_registry(int opt, const char *arg, struct sbxd_config *c)
{
        int r;
        switch (opt) {
        case OPT_MAX_LAYER:
                return parse_size("max-layer-size", arg, SBXD_MAX_LAYER_LIMIT, &c->max_layer_bytes);
        case OPT_REG_MIRROR: {
                /* http(s)://HOST[:PORT] with at most a trailing slash: a registry's root */
                const char *h = strncmp(arg, "https://", 8) == 0  ? arg + 8
                                : strncmp(arg, "http://", 7) == 0 ? arg + 7
                                                                  : NULL;
                char host[300];
                snprintf(host, sizeof(host), "%s", h ? h : "");
                size_t hl = strlen(host);
                if (hl && host[hl - 1] == '/')
                        host[hl - 1] = 0;
                if (!h || strlen(h) >= sizeof(host) - 1 || !registry_host_valid(host)) {
                        fprintf(stderr,
                                "sbxd: bad --registry-mirror '%s' (http(s)://HOST[:PORT], no "
                                "path)\n",
                                arg);
                        return -EINVAL;
                }
                r = push_str(&c->registry_mirrors, &c->n_registry_mirrors, arg);
                break;
        }
        case OPT_REG_INSECURE:
                if (!registry_host_valid(arg)) {
                        fprintf(stderr, "sbxd: bad --insecure-registry '%s' (HOST[:PORT])\n", arg);
                        return -EINVAL;
                }
                r = push_str(&c->insecure_registries, &c->n_insecure_registries, arg);
                break;
        case OPT_REG_CA:
                if (access(arg, R_OK) < 0) {
                        fprintf(stderr, "sbxd: --registry-ca '%s': %m\n", arg);
                        return -EINVAL;
                }
                free(c->registry_ca);
                return (c->registry_ca = realpath(arg, NULL)) ? 0 : -ENOMEM;
        default:
                return -EINVAL;
        }
        if (r == -E2BIG)
                fprintf(stderr,
                        "sbxd: at most %d of each of --registry-mirror and "
                        "--insecure-registry\n",
                        SBXD_MAX_REGISTRY_OPTIONS);
        return r;
}

int config_parse(int argc, char **argv, struct sbxd_config *ret)
{
        static const struct option opts[] = {
            {"listen", required_argument, NULL, 'l'},
            {"state-dir", required_argument, NULL, 's'},
            {"jailer", required_argument, NULL, 'j'},
            {"agent", required_argument, NULL, 'a'},
            {"runtime", required_argument, NULL, OPT_RUNTIME},
            {"port-file", required_argument, NULL, 'p'},
            {"help", no_argument, NULL, 'h'},
            {"pool-size", required_argument, NULL, 1000},
            {"pool-templates", required_argument, NULL, 1001},
            {"max-sandboxes", required_argument, NULL, 1002},
            {"max-creates", required_argument, NULL, 1003},
            {"persist-paused-after", required_argument, NULL, 1004},
            {"disk", required_argument, NULL, 1005},
            {"delete-paused-after", required_argument, NULL, OPT_DELETE_PAUSED},
            {"disk-reserve", required_argument, NULL, OPT_DISK_RESERVE},
            {"storage-pool", required_argument, NULL, OPT_STORAGE_POOL},
            {"disk-overcommit", required_argument, NULL, OPT_DISK_OVERCOMMIT},
            {"max-sandbox-cpus", required_argument, NULL, OPT_MAX_CPUS},
            {"max-sandbox-memory", required_argument, NULL, OPT_MAX_MEMORY},
            {"max-sandbox-disk", required_argument, NULL, OPT_MAX_DISK},
            {"total-memory", required_argument, NULL, OPT_TOTAL_MEMORY},
            {"total-pids", required_argument, NULL, OPT_TOTAL_PIDS},
            {"create-wait", required_argument, NULL, OPT_CREATE_WAIT},
            {"cgroup-parent", required_argument, NULL, OPT_CGROUP_PARENT},
            {"domain", required_argument, NULL, OPT_DOMAIN},
            {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
            {"tls-key", required_argument, NULL, OPT_TLS_KEY},
            {"public-url", required_argument, NULL, OPT_PUBLIC_URL},
            {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
            {"egress", required_argument, NULL, OPT_EGRESS},
            {"egress-max", required_argument, NULL, OPT_EGRESS_MAX},
            {"egress-dns", required_argument, NULL, OPT_EGRESS_DNS},
            {"egress-upstream-ca", required_argument, NULL, OPT_EGRESS_CA},
            {"cluster", required_argument, NULL, OPT_CLUSTER},
            {"node-name", required_argument, NULL, OPT_NODE_NAME},
            {"advertise", required_argument, NULL, OPT_ADVERTISE},
            {"console-dir", required_argument, NULL, OPT_CONSOLE_DIR},
            {"max-layer-size", required_argument, NULL, OPT_MAX_LAYER},
            {"registry-mirror", required_argument, NULL, OPT_REG_MIRROR},
            {"registry-ca", required_argument, NULL, OPT_REG_CA},
            {"insecure-registry", required_argument, NULL, OPT_REG_INSECURE},
            {},
        };
        const char *listen = SBXD_DEFAULT_LISTEN, *state = SBXD_DEFAULT_STATE_DIR;
        const char *jailer = NULL, *agent = NULL, *runtime = NULL, *port_file = NULL;
        /* what is parsed so far is freed on every refusal */
        _cleanup_(config_done) struct sbxd_config c = {.pool_size = SBXD_DEFAULT_POOL_SIZE,
                                                       .max_sandboxes = SBXD_DEFAULT_MAX_SANDBOXES,
                                                       .max_creates = SBXD_DEFAULT_MAX_CREATES,
                                                       .create_wait_s = SBXD_DEFAULT_CREATE_WAIT_S,
                                                       .max_connections =
                                                           SBXD_DEFAULT_MAX_CONNECTIONS,
                                                       .disk_overcommit = 1.0,
                                                       .egress_max = EGRESS_MAX_LISTED,
                                                       .max_layer_bytes = SBXD_DEFAULT_MAX_LAYER};
        const char *egress_dns = NULL;
        bool egress_max_given = false;
        const char *pool_templates = SBXD_DEFAULT_POOL_TEMPLATES;
        const char *cgroup_parent = "sbx";
        const char *domain = NULL, *tls_cert = NULL, *tls_key = NULL, *console_dir = NULL;
        int o, r;

        while ((o = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (o) {
                case 'l':
                        listen = optarg;
                        break;
                case 's':
                        state = optarg;
                        break;
                case 'j':
                        jailer = optarg;
                        break;
                case 'a':
                        agent = optarg;
                        break;
                case OPT_RUNTIME:
                        runtime = optarg;
                        break;
                case 'p':
                        port_file = optarg;
                        break;
                case 'h':
                        fputs(usage, stdout);
                        return 1;
                case 1000:
                case 1002:
                case 1003:
                case 1004:
                case OPT_DELETE_PAUSED:
                case OPT_CREATE_WAIT:
                case OPT_MAX_CONNECTIONS:
                        if (parse_count(o, optarg, &c) < 0)
                                return -EINVAL;
                        break;
                case 1001:
                        pool_templates = optarg;
                        break;
                case OPT_DOMAIN:
                        if (!domain_valid(optarg)) {
                                fprintf(stderr,
                                        "sbxd: bad --domain '%s' (a host name, optionally "
                                        ":PORT, at most %d bytes of [A-Za-z0-9.-])\n",
                                        optarg, SBXD_DOMAIN_MAX);
                                return -EINVAL;
                        }
                        domain = optarg;
                        break;
                case OPT_TLS_CERT:
                        tls_cert = optarg;
                        break;
                case OPT_PUBLIC_URL:
                        if (!public_url_valid(optarg)) {
                                fprintf(stderr,
                                        "sbxd: bad --public-url '%s' (http:// or https://, a "
                                        "host with an optional :PORT and path, at most %d "
                                        "bytes)\n",
                                        optarg, SBXD_PUBLIC_URL_MAX);
                                return -EINVAL;
                        }
                        free(c.public_url);
                        c.public_url =
                            strndup(optarg, strlen(optarg) - (optarg[strlen(optarg) - 1] == '/'));
                        break;
                case OPT_TLS_KEY:
                        tls_key = optarg;
                        break;
                case OPT_CGROUP_PARENT:
                        /* one directory level below each hierarchy's root */
                        if (!*optarg || strlen(optarg) > 64 ||
                            strspn(optarg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                           "0123456789._-") != strlen(optarg) ||
                            optarg[0] == '.') {
                                fprintf(stderr,
                                        "sbxd: bad --cgroup-parent '%s' ([A-Za-z0-9._-], "
                                        "at most 64, not starting with a dot)\n",
                                        optarg);
                                return -EINVAL;
                        }
                        cgroup_parent = optarg;
                        break;
                case OPT_EGRESS:
                case OPT_EGRESS_MAX:
                case OPT_EGRESS_DNS:
                        if (parse_egress(o, optarg, &c, &egress_dns) < 0)
                                return -EINVAL;
                        egress_max_given |= o == OPT_EGRESS_MAX;
                        break;
                case OPT_EGRESS_CA:
                        if (access(optarg, R_OK) < 0) {
                                fprintf(stderr, "sbxd: --egress-upstream-ca '%s': %m\n", optarg);
                                return -EINVAL;
                        }
                        free(c.egress_upstream_ca);
                        if (!(c.egress_upstream_ca = realpath(optarg, NULL)))
                                return -ENOMEM;
                        break;
                case OPT_CLUSTER:
                        if (strncmp(optarg, "etcd://", 7) != 0 || !optarg[7] ||
                            strlen(optarg) > 1000) {
                                fprintf(stderr, "sbxd: --cluster takes etcd://HOST:PORT[,...]\n");
                                return -EINVAL;
                        }
                        free(c.cluster);
                        c.cluster = strdup(optarg);
                        break;
                case OPT_NODE_NAME:
                        if (!*optarg || strlen(optarg) > 63 ||
                            strspn(optarg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                           "0123456789._-") != strlen(optarg)) {
                                fprintf(stderr,
                                        "sbxd: bad --node-name '%s' ([A-Za-z0-9._-], at "
                                        "most 63)\n",
                                        optarg);
                                return -EINVAL;
                        }
                        free(c.node_name);
                        c.node_name = strdup(optarg);
                        break;
                case OPT_ADVERTISE: {
                        struct sockaddr_storage ss;
                        socklen_t sl;
                        _cleanup_free_ char *h = NULL;
                        if (strlen(optarg) > 127 || config_parse_listen(optarg, &ss, &sl, &h) < 0) {
                                fprintf(stderr, "sbxd: bad --advertise '%s' (want HOST:PORT)\n",
                                        optarg);
                                return -EINVAL;
                        }
                        free(c.advertise);
                        c.advertise = strdup(optarg);
                        break;
                }
                case OPT_CONSOLE_DIR:
                        console_dir = optarg;
                        break;
                case 1005:
                        if (strcmp(optarg, "pool") == 0)
                                c.disk_mode = SBXD_DISK_POOL;
                        else if (strcmp(optarg, "image") == 0)
                                c.disk_mode = SBXD_DISK_IMAGE;
                        else if (strcmp(optarg, "tmpfs") == 0)
                                c.disk_mode = SBXD_DISK_TMPFS;
                        else {
                                fprintf(stderr, "sbxd: --disk takes pool, image or tmpfs\n");
                                return -EINVAL;
                        }
                        c.tmpfs_disks = c.disk_mode == SBXD_DISK_TMPFS;
                        break;
                case OPT_STORAGE_POOL:
                        if (config_parse_size(optarg, &c.storage_pool_bytes) < 0 ||
                            c.storage_pool_bytes < SBXD_STORAGE_POOL_MIN ||
                            c.storage_pool_bytes > SBXD_STORAGE_POOL_MAX) {
                                fprintf(stderr,
                                        "sbxd: bad --storage-pool '%s' (a size such as 64G or "
                                        "512M, 256M..64T)\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case OPT_MAX_LAYER:
                case OPT_REG_MIRROR:
                case OPT_REG_CA:
                case OPT_REG_INSECURE:
                        if (parse_registry(o, optarg, &c) < 0)
                                return -EINVAL;
                        break;
                case OPT_DISK_RESERVE:
                case OPT_DISK_OVERCOMMIT:
                case OPT_MAX_CPUS:
                case OPT_MAX_MEMORY:
                case OPT_MAX_DISK:
                case OPT_TOTAL_MEMORY:
                case OPT_TOTAL_PIDS:
                        if (parse_limit(o, optarg, &c) < 0)
                                return -EINVAL;
                        break;
                default:
                        fputs(usage, stderr);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "sbxd: unexpected argument '%s'\n%s", argv[optind], usage);
                return -EINVAL;
        }
        if (!tls_cert != !tls_key) {
                fprintf(stderr, "sbxd: --tls-cert and --tls-key go together\n");
                return -EINVAL;
        }
        if (config_parse_listen(listen, &c.addr, &c.addr_len, &c.host) < 0) {
                fprintf(stderr, "sbxd: bad --listen '%s' (want HOST:PORT)\n", listen);
                return -EINVAL;
        }
        /* --egress allow alone is the operator's opt-in to the internet: it lifts the default
         * cap (listed) with it; only an explicit lower --egress-max contradicts it. */
        if (c.egress_allow && !egress_max_given)
                c.egress_max = EGRESS_MAX_ANY;
        if (c.egress_allow && c.egress_max != EGRESS_MAX_ANY) {
                fprintf(stderr, "sbxd: --egress allow needs --egress-max any\n");
                return -EINVAL;
        }
        if (egress_dns && !(c.egress_dns = strdup(egress_dns)))
                return -ENOMEM;
        c.listen = strdup(listen);
        c.pool_templates = strdup(pool_templates);
        c.cgroup_parent = strdup(cgroup_parent);
        r = absolutize(state, &c.state_dir);
        if (r >= 0)
                r = jailer ? absolutize(jailer, &c.jailer)
                           : config_resolve_helper("jailer/sbx-jailer", &c.jailer);
        if (r >= 0)
                r = agent ? absolutize(agent, &c.agent)
                          : config_resolve_helper("guest-agent/sbx-agent", &c.agent);
        if (r >= 0)
                r = runtime ? absolutize(runtime, &c.runtime)
                            : runtime_next_to(c.agent, &c.runtime);
        if (r >= 0 && port_file)
                r = absolutize(port_file, &c.port_file);
        if (r >= 0 && tls_cert)
                r = absolutize(tls_cert, &c.tls_cert);
        if (r >= 0 && tls_key)
                r = absolutize(tls_key, &c.tls_key);
        if (r >= 0 && domain && !(c.domain = strdup(domain)))
                r = -ENOMEM;
        if (r >= 0 && !(console_dir && strcmp(console_dir, "none") == 0))
                r = console_dir ? absolutize(console_dir, &c.console_dir)
                                : config_resolve_console(&c.console_dir);
        if (r < 0 || !c.listen || !c.pool_templates || !c.cgroup_parent)
                return r < 0 ? r : -ENOMEM;
        *ret = c;
        c = (struct sbxd_config){};
        return 0;
}

/* A "Key:   N kB" line of /proc/meminfo, in bytes; 0 when absent. */
static uint64_t meminfo(const char *key)
{
        char line[256];
        size_t kl = strlen(key);
        uint64_t v = 0;
        FILE *f = fopen("/proc/meminfo", "re");
        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
                        v = strtoull(line + kl + 1, NULL, 10) * 1024;
                        break;
                }
        fclose(f);
        return v;
}

static uint64_t read_u64(const char *path)
{
        char buf[64] = "";
        FILE *f = fopen(path, "re");
        if (!f)
                return 0;
        if (!fgets(buf, sizeof(buf), f))
                buf[0] = 0;
        fclose(f);
        return strtoull(buf, NULL, 10);
}

int config_parse_size(const char *arg, uint64_t *ret)
{
        char *end;
        errno = 0;
        if (!*arg || arg[0] == '-')
                return -EINVAL;
        unsigned long long v = strtoull(arg, &end, 10);
        unsigned shift = 20; /* a bare number is MiB */
        if (*end && !end[1]) {
                const char *units = "KMGT";
                const char *u = strchr(units, *end & ~0x20);
                if (!u)
                        return -EINVAL;
                shift = 10 * (unsigned)(u - units + 1);
                end++;
        }
        if (errno || *end || end == arg || v == 0 || v > (UINT64_MAX >> shift))
                return -EINVAL;
        *ret = (uint64_t)v << shift;
        return 0;
}

int config_derive_limits(struct sbxd_config *c)
{
        struct statvfs sv;
        if (statvfs(c->state_dir, &sv) < 0)
                return -errno;
        /* with the pool, sandbox disks live there: its size, not the state file system's */
        uint64_t fs_mb =
            c->pool_fs_bytes ? c->pool_fs_bytes >> 20 : (uint64_t)sv.f_blocks * sv.f_frsize >> 20;
        uint64_t mem_mb = meminfo("MemTotal") >> 20;
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        if (mem_mb == 0 || cpus <= 0)
                return -ENODATA;
        if (!c->disk_reserve_mb)
                c->disk_reserve_mb =
                    MIN(MAX(fs_mb * SBXD_DISK_RESERVE_PCT / 100, 1), SBXD_DISK_RESERVE_MAX_MB);
        if (!c->max_cpus)
                c->max_cpus = (unsigned)cpus;
        if (!c->max_memory_mb)
                c->max_memory_mb = MAX(mem_mb * 3 / 4, 1);
        /* image disks live on the state disk; tmpfs ones in memory (bounded by memoryMB) */
        if (!c->max_disk_mb)
                /* tmpfs disks are bounded by memoryMB; pool disks are thin (a disk larger
                 * than the pool costs nothing until written, and a full pool is ENOSPC at
                 * write()); images live on the state disk, preallocated */
                c->max_disk_mb =
                    c->tmpfs_disks || c->pool_fs_bytes ? SANDBOX_MAX_DISK_MB : MAX(fs_mb / 2, 1);
        if (!c->total_memory_mb) {
                uint64_t keep =
                    MAX(mem_mb * SBXD_HOST_MEMORY_RESERVE_PCT / 100, SBXD_HOST_MEMORY_RESERVE_MIN);
                c->total_memory_mb = mem_mb > keep ? mem_mb - keep : mem_mb;
        }
        if (!c->total_pids) {
                uint64_t pid_max = read_u64("/proc/sys/kernel/pid_max");
                uint64_t threads = read_u64("/proc/sys/kernel/threads-max");
                uint64_t n = pid_max && threads ? MIN(pid_max, threads) : MAX(pid_max, threads);
                c->total_pids = n ? MAX(n * 3 / 4, 1) : 32768;
        }
        return 0;
}
