/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sbxd's side of the egress services (egress-internal.h): the sockets sandboxes' DNS and proxied
 * connections arrive on, the CA, sbx-egress started with its hooks, and the build proxies.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/server-config.h"
#include "egress/egress-ca.h"
#include "egress/egress-internal.h"
#include "egress/egress.h"
#include "egress/policy/net-transform.h"
#include "egress-ctl.h"
#include "fd-util.h"
#include "log.h"
#include "macros.h"
#include "storage/secret-store.h"

#define EGRESS_BINARY "egress/sbx-egress" /* config_resolve_helper()'s path */

/* ---- the sockets ---- */

static int listen_on(int family, unsigned port, int *ret_fd, unsigned *ret_port)
{
        _cleanup_close_ int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        struct sockaddr_storage a = {.ss_family = (sa_family_t)family};
        socklen_t l;
        if (fd < 0)
                return -errno;
        if (family == AF_INET) {
                ((struct sockaddr_in *)&a)->sin_port = htons((uint16_t)port);
                l = sizeof(struct sockaddr_in);
        } else {
                ((struct sockaddr_in6 *)&a)->sin6_port = htons((uint16_t)port);
                l = sizeof(struct sockaddr_in6);
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
        }
        if (bind(fd, (struct sockaddr *)&a, l) < 0 || listen(fd, 128) < 0 ||
            getsockname(fd, (struct sockaddr *)&a, &l) < 0)
                return -errno;
        *ret_port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&a)->sin_port
                                            : ((struct sockaddr_in6 *)&a)->sin6_port);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The resolver's: one UDP socket for both families, on an ephemeral port. */
static int bind_dns(int *ret_fd, unsigned *ret_port)
{
        _cleanup_close_ int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        int off = 0;
        struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
        socklen_t al = sizeof(a);
        if (fd < 0 || setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) < 0 ||
            bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
            getsockname(fd, (struct sockaddr *)&a, &al) < 0)
                return -errno;
        *ret_port = ntohs(a.sin6_port);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The proxy's: one listening socket per family, one port for both. */
static int bind_proxy(struct egress *e)
{
        unsigned port = 0, port6 = 0;
        int r = -EADDRINUSE;
        for (int tries = 0; tries < 8 && r == -EADDRINUSE; tries++) {
                e->proxy4_fd = safe_close(e->proxy4_fd);
                r = listen_on(AF_INET, 0, &e->proxy4_fd, &port);
                if (r >= 0)
                        r = listen_on(AF_INET6, port, &e->proxy6_fd, &port6);
        }
        if (r < 0) {
                e->proxy4_fd = safe_close(e->proxy4_fd);
                return r;
        }
        e->proxy_port = port;
        return 0;
}

int egress_serve_sockets(struct egress *e, char *errmsg, size_t errlen)
{
        if (e->dns_fd >= 0)
                return 0;
        char *key = NULL;
        int r = e->ca_cert
                    ? 0
                    : egress_ca_load(e->srv->config->state_dir, &key, &e->ca_cert, errmsg, errlen);
        if (key) { /* sbx-egress reads it again when it starts: not kept here */
                explicit_bzero(key, strlen(key));
                free(key);
        }
        if (r < 0)
                return r;
        if ((r = bind_proxy(e)) < 0 || (r = bind_dns(&e->dns_fd, &e->dns_port)) < 0) {
                snprintf(errmsg, errlen,
                         "egress: binding the resolver's and the proxy's sockets: %s",
                         strerror(-r));
                e->proxy4_fd = safe_close(e->proxy4_fd);
                e->proxy6_fd = safe_close(e->proxy6_fd);
                return r;
        }
        log_info("egress: resolver on port %u, proxy on port %u", e->dns_port, e->proxy_port);
        return 0;
}

/* ---- what sbx-egress asks ---- */

static int hook_pin(void *arg, int slot, int family, const void *addrs, size_t n, unsigned ttl_s)
{
        return egress_pin(arg, slot, family, addrs, n, ttl_s);
}

/* Does one of the slot's transforms name the secret (its placeholder in a header value)? */
static bool rules_name(const struct net_policy *p, const char *name)
{
        char ph[128];
        if ((size_t)snprintf(ph, sizeof(ph), NET_SECRET_PLACEHOLDER "%s}", name) >= sizeof(ph))
                return false;
        for (size_t i = 0; p && i < p->n_xf; i++) {
                const cJSON *h;
                cJSON_ArrayForEach(h, p->xf[i].headers)
                {
                        if (cJSON_IsString(h) && strstr(h->valuestring, ph))
                                return true;
                }
        }
        return false;
}

/* A secret's value, only for a slot whose own rules name it. */
static int hook_secret(void *arg, int slot, const char *name, char **ret)
{
        struct egress *e = arg;
        if (slot < 0 || slot >= EGRESS_SLOTS_MAX)
                return -EPERM;
        pthread_mutex_lock(&e->lock);
        bool named = rules_name(e->policy[slot], name);
        pthread_mutex_unlock(&e->lock);
        if (!named) {
                log_warning("egress: sbx-egress asked for secret '%.64s' for slot %d, whose rules "
                            "do not name it: refused",
                            name, slot);
                return -EPERM;
        }
        char buf[SECRET_VALUE_MAX + 1];
        int r = secret_store_value(e->srv->secrets, name, buf, sizeof(buf));
        char *v = r >= 0 ? strndup(buf, (size_t)r) : NULL;
        explicit_bzero(buf, sizeof(buf));
        if (r < 0)
                return r;
        if (!v)
                return -ENOMEM;
        *ret = v;
        return 0;
}

/* Every slot's policy to a new sbx-egress, in the order of send_lock. */
static int hook_sync(void *arg, struct egress_proc *p)
{
        struct egress *e = arg;
        int r = 0;
        pthread_mutex_lock(&e->send_lock);
        for (int slot = 0; slot < EGRESS_SLOTS_MAX && r >= 0; slot++) {
                struct net_policy copy;
                pthread_mutex_lock(&e->lock);
                bool has = e->policy[slot] != NULL;
                if (has && net_policy_copy(e->policy[slot], &copy) < 0)
                        r = -ENOMEM;
                pthread_mutex_unlock(&e->lock);
                if (has && r >= 0) {
                        r = egress_proc_policy(p, slot, &copy);
                        net_policy_done(&copy);
                }
        }
        pthread_mutex_unlock(&e->send_lock);
        return r;
}

/* ---- the process ---- */

static int upstream_from_resolv_conf(char *buf, size_t size)
{
        FILE *f = fopen("/etc/resolv.conf", "re");
        if (!f)
                return -errno;
        char line[256];
        int r = -ENOENT;
        while (r < 0 && fgets(line, sizeof(line), f))
                if (sscanf(line, "nameserver %63s", buf) == 1 && strlen(buf) < size)
                        r = 0;
        fclose(f);
        return r;
}

static int read_pem(const char *path, char **ret)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        return fd < 0 ? -errno : read_all(fd, EGRESS_CTL_PEM_MAX, ret, NULL);
}

/* What sbx-egress is started with: copies of everything (it owns them). Under e->lock. */
static int make_config(struct egress *e, struct egress_proc_config *c, char *errmsg, size_t errlen)
{
        const struct sbxd_config *cfg = e->srv->config;
        char upstream[64];
        int r = cfg->egress_dns ? 0 : upstream_from_resolv_conf(upstream, sizeof(upstream));
        if (r < 0) {
                snprintf(errmsg, errlen,
                         "egress: no nameserver in /etc/resolv.conf (give "
                         "--egress-dns)");
                return r;
        }
        char *cert = NULL;
        if ((r = egress_ca_load(cfg->state_dir, &c->ca_key, &cert, errmsg, errlen)) < 0)
                return r;
        free(cert);
        c->uid = e->uid;
        c->ca_cert = strdup(e->ca_cert);
        c->upstream = strdup(cfg->egress_dns ? cfg->egress_dns : upstream);
        c->dns_fd = fcntl(e->dns_fd, F_DUPFD_CLOEXEC, 3);
        c->proxy4_fd = fcntl(e->proxy4_fd, F_DUPFD_CLOEXEC, 3);
        c->proxy6_fd = fcntl(e->proxy6_fd, F_DUPFD_CLOEXEC, 3);
        if (!c->ca_cert || !c->upstream || c->dns_fd < 0 || c->proxy4_fd < 0 || c->proxy6_fd < 0)
                return -ENOMEM;
        if (cfg->egress_upstream_ca && (r = read_pem(cfg->egress_upstream_ca, &c->upstream_ca)) < 0)
                snprintf(errmsg, errlen, "egress: reading --egress-upstream-ca %s: %s",
                         cfg->egress_upstream_ca, strerror(-r));
        if (r >= 0 && (r = config_resolve_helper(EGRESS_BINARY, &c->binary)) < 0)
                snprintf(errmsg, errlen, "egress: no sbx-egress binary beside sbxd: %s",
                         strerror(-r));
        return r;
}

int egress_serve_start(struct egress *e, char *errmsg, size_t errlen)
{
        pthread_mutex_lock(&e->lock);
        int r = 0;
        if (!e->proc && !e->uid) {
                snprintf(errmsg, errlen, "egress: sbx-egress has no user yet");
                r = -EINVAL;
        }
        if (r >= 0 && !e->proc && (r = egress_serve_sockets(e, errmsg, errlen)) >= 0) {
                struct egress_proc_config c = {
                    .dns_fd = -EBADF, .proxy4_fd = -EBADF, .proxy6_fd = -EBADF};
                const struct egress_proc_hooks h = {hook_pin, hook_secret, hook_sync, e};
                r = make_config(e, &c, errmsg, errlen);
                if (r >= 0)
                        r = egress_proc_start(&c, &h, &e->proc);
                else
                        egress_proc_config_done(&c);
        }
        pthread_mutex_unlock(&e->lock);
        return r;
}

void egress_serve_stop(struct egress *e)
{
        egress_proc_stop(e->proc);
        e->proc = NULL;
        e->dns_fd = safe_close(e->dns_fd);
        e->proxy4_fd = safe_close(e->proxy4_fd);
        e->proxy6_fd = safe_close(e->proxy6_fd);
        free(e->ca_cert);
        e->ca_cert = NULL;
}

/* ---- build proxies ---- */

struct egress_build {
        struct egress *e;
        char id[32];
};

static int bind_unix(const char *path, int *ret)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        (void)unlink(path);
        /* 0666: the build sandbox's root connects through an idmapped read-only bind */
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0666) < 0 ||
            listen(fd, 64) < 0)
                return -errno;
        *ret = TAKE_FD(fd);
        return 0;
}

int egress_build_start(struct egress *e, const char *path, char *const *allow, size_t n_allow,
                       egress_proc_note_fn note, void *userdata, struct egress_build **ret)
{
        char err[400] = "";
        struct egress_build *b = calloc(1, sizeof(*b));
        int lfd = -EBADF;
        int r = b ? bind_unix(path, &lfd) : -ENOMEM;
        if (r >= 0 && (r = egress_serve_start(e, err, sizeof(err))) < 0)
                log_error_errno(r, "%s", err);
        if (r >= 0) {
                pthread_mutex_lock(&e->lock);
                snprintf(b->id, sizeof(b->id), "build-%u", ++e->builds);
                pthread_mutex_unlock(&e->lock);
                b->e = e;
                r = egress_proc_build(e->proc, b->id, TAKE_FD(lfd), allow, n_allow, note, userdata);
        }
        if (r < 0) {
                safe_close(lfd);
                free(b);
                return r;
        }
        *ret = b;
        return 0;
}

void egress_build_stop(struct egress_build *b)
{
        if (!b)
                return;
        egress_proc_build_end(b->e->proc, b->id);
        free(b);
}
