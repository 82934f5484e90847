/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "channel/agent-req.h"
#include "core/cluster-hooks.h"
#include "core/host-claim.h"
#include "egress/egress.h"
#include "cluster/cluster-http.h"
#include "cluster/cluster-volumes.h"
#include "cluster/cluster.h"
#include "cluster/layer-pull.h"
#include "fd-util.h"
#include "front/front.h"
#include "lifecycle/adopt.h"
#include "lifecycle/agent-log.h"
#include "lifecycle/host-limits.h"
#include "lifecycle/lifecycle-state.h"
#include "lifecycle/lifecycle.h"
#include "lifecycle/monitor.h"
#include "lifecycle/pool.h"
#include "lifecycle/sampler.h"
#include "lifecycle/sandbox.h"
#include "lifecycle/teardown.h"
#include "lifecycle/upper.h"
#include "log-journal.h"
#include "log.h"
#include "macros.h"
#include "storage/disk-image.h"
#include "storage/disk-pool.h"
#include "storage/layer-store.h"
#include "storage/secret-store.h"
#include "storage/state-dir.h"
#include "storage/template.h"
#include "storage/volume.h"
#include "template-build/build.h"
#include "ui/ui.h"

/* Graceful stop: no new connections, in-flight requests get up to DRAIN_MS to finish. */
#define DRAIN_MS 10000

static int write_port_file(const char *path, unsigned port)
{
        char buf[16];
        snprintf(buf, sizeof(buf), "%u\n", port);
        return write_file_atomic(path, buf, strlen(buf), 0644);
}

/* The host[:port] of --public-url as the default domain, when it is a host name that can
 * carry "<port>-<id>." labels (not an address, not localhost itself: server/README.md
 * "Sandbox ports"). */
static bool public_url_domain(const char *url, char *buf, size_t size)
{
        if (!url)
                return false;
        const char *a = strstr(url, "://") + 3;
        size_t l = strcspn(a, "/");
        if (a[0] == '[' || l >= size || strspn(a, "0123456789.:") == l ||
            strncasecmp(a, "localhost", 9) == 0)
                return false;
        memcpy(buf, a, l);
        buf[l] = 0;
        return true;
}

/* The egress policy in force, said once at start (server/egress/README.md "Egress"). */
static void log_egress_policy(const struct sbxd_config *cfg)
{
        static const char *const cap[] = {
            [EGRESS_MAX_NONE] = "none: every sandbox has loopback only, whatever it asks",
            [EGRESS_MAX_LISTED] = "listed: a sandbox reaches only what its allowOut lists; "
                                  "allow_internet_access is not honoured (--egress-max any "
                                  "honours it)",
            [EGRESS_MAX_ANY] = "any: allow_internet_access and allowOut are honoured",
        };
        log_info("egress: a sandbox that asks for nothing gets %s; --egress-max %s",
                 cfg->egress_allow ? "the internet (--egress allow)" : "loopback only",
                 cap[cfg->egress_max]);
}

/* The `domain` of create's answer: sandbox.getHost(port) is "<port>-<id>.<domain>". The
 * default, sbx.localhost with sbxd's port, reaches sbxd wherever *.localhost resolves to
 * loopback, and a certificate for *.sbx.localhost covers it (TLS clients refuse a wildcard
 * right under "localhost"): server/README.md "Sandbox ports". */
static void set_domain(const struct sbxd_config *cfg, unsigned port)
{
        char d[SBXD_DOMAIN_MAX + 16];
        if (cfg->domain)
                snprintf(d, sizeof(d), "%s", cfg->domain);
        else if (!public_url_domain(cfg->public_url, d, sizeof(d)))
                snprintf(d, sizeof(d), SBXD_DEFAULT_DOMAIN ":%u", port);
        sandbox_json_set_domain(d);
        log_info("sandbox ports: %s://<port>-<sandboxID>.%s", cfg->tls_cert ? "https" : "http", d);
}

/* The lines users export (stdout), and the log line. A key is a secret: when stdout is the
 * journal (sbxd.service), which more users read than the keys file, the line says where the key
 * is instead. */
static void announce(const struct sbxd_config *cfg, struct keys *keys, unsigned port)
{
        const char *host = strcmp(cfg->host, "0.0.0.0") == 0 ? "127.0.0.1"
                           : strcmp(cfg->host, "::") == 0    ? "::1"
                                                             : cfg->host;
        const char *lb = strchr(host, ':') ? "[" : "", *rb = *lb ? "]" : "";
        char url[160], path[4096], key[API_KEY_LEN + 1] = "", pub[SBXD_PUBLIC_URL_MAX + 2];
        snprintf(url, sizeof(url), "%s://%s%s%s:%u\n", cfg->tls_cert ? "https" : "http", lb, host,
                 rb, port);
        /* clients behind --public-url reach sbxd there; the sbx CLI on this host (the url
         * file) keeps the address sbxd listens on */
        snprintf(pub, sizeof(pub), "%s%s", cfg->public_url ? cfg->public_url : url,
                 cfg->public_url ? "\n" : "");
        (void)keys_first(keys, key);
        printf("export E2B_API_URL=%s", pub);
        printf("export E2B_SANDBOX_URL=%s", pub);
        printf("export E2B_VOLUME_API_URL=%s", pub); /* Volume file operations */
        if (log_journal_is_stream(1))
                printf("# E2B_API_KEY: a key of %s/keys (sbx keys --e2b prints these lines with "
                       "it, as root)\n",
                       cfg->state_dir);
        else
                printf("export E2B_API_KEY=%s\n", key);
        explicit_bzero(key, sizeof(key));
        fflush(stdout);
        /* For the sbx CLI on this machine (cli/README.md): the URL beside the keys. */
        snprintf(path, sizeof(path), "%s/" SBXD_URL_FILE, cfg->state_dir);
        int r = write_file_atomic(path, url, strlen(url), 0644);
        if (r < 0)
                log_warning_errno(r, "writing %s: %m", path);
        log_info("listening on %s%s%s:%u (state %s, jailer %s, agent %s)", lb, host, rb, port,
                 cfg->state_dir, cfg->jailer, cfg->agent);
        log_egress_policy(cfg);
}

static void drain(struct server *srv, struct front *f)
{
        front_quiesce(f);
        for (int waited = 0; waited < DRAIN_MS; waited += 20) {
                /* requests, not connections: idle keep-alive connections are just closed */
                if (__atomic_load_n(&srv->requests_inflight, __ATOMIC_RELAXED) == 0)
                        return;
                struct timespec ts = {.tv_nsec = 20 * 1000000L};
                nanosleep(&ts, NULL);
        }
        log_warning("requests still running after %d ms: closing them", DRAIN_MS);
}

/* Every record once more, so the state dir is current whatever happened since. */
static void save_all(struct server *srv)
{
        struct sandbox **all = NULL;
        size_t n = 0;
        if (registry_list(srv->registry, &all, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                int r = sandbox_save(all[i]);
                if (r < 0 && r != -ESRCH)
                        log_warning_errno(r, "sandbox %s: saving record: %m", all[i]->id);
                sandbox_unref(all[i]);
        }
        free(all);
        log_info("state saved: %zu sandbox(es) keep running", n);
}

/* --cluster: register this node in etcd (server/cluster/README.md). */
static int start_cluster(struct server *srv, unsigned port)
{
        const struct sbxd_config *cfg = srv->config;
        char name[64], addr[160];
        if (cfg->node_name)
                snprintf(name, sizeof(name), "%s", cfg->node_name);
        else if (gethostname(name, sizeof(name)) < 0)
                snprintf(name, sizeof(name), "sbxd");
        name[sizeof(name) - 1] = 0;
        if (cfg->advertise)
                snprintf(addr, sizeof(addr), "%s", cfg->advertise);
        else {
                const char *h = strcmp(cfg->host, "0.0.0.0") == 0 ? "127.0.0.1" : cfg->host;
                const char *lb = strchr(h, ':') ? "[" : "", *rb = *lb ? "]" : "";
                snprintf(addr, sizeof(addr), "%s%s%s:%u", lb, h, rb, port);
        }
        struct cluster *c = NULL;
        int r = cluster_start(srv, cfg->cluster, name, addr, &c);
        if (r < 0) {
                log_error_errno(r, "cluster: cannot register in %s: %m", cfg->cluster);
                return r;
        }
        cluster_volumes_register(c, srv); /* this node's volumes in etcd (logged when not) */
        static struct cluster_hooks hooks = {
            .created = cluster_hook_created,
            .volume_created = cluster_hook_volume_created,
            .volume_deleted = cluster_hook_volume_deleted,
            .may_create = cluster_hook_may_create,
            .pull_template = cluster_hook_pull_template,
        };
        hooks.node_name = cluster_self(c);
        srv->cluster_hooks = &hooks;
        __atomic_store_n(&srv->cluster, c, __ATOMIC_RELEASE);
        return 0;
}

/* The storage pool (storage/disk-pool.h), unless --disk asks for images or tmpfs: where the
 * kernel has no btrfs (or it cannot be set up) the ext4 images take over, said once here and on
 * /metrics (sbx_storage_backend). --disk pool makes that a failure instead. */
static int open_storage_pool(struct server *srv, struct sbxd_config *cfg)
{
        char why[160] = "";
        bool must = cfg->disk_mode == SBXD_DISK_POOL;
        if (cfg->disk_mode != SBXD_DISK_AUTO && !must)
                return 0;
        int r = disk_pool_available(cfg->state_dir, why, sizeof(why)) ? 0 : -EOPNOTSUPP;
        if (r >= 0)
                r = disk_pool_open(cfg->state_dir, cfg->storage_pool_bytes, &srv->disk_pool);
        if (r < 0 && why[0] == 0)
                snprintf(why, sizeof(why), "%s", strerror(-r));
        if (r < 0 && must)
                return log_error_errno(r, "storage pool: %s", why);
        if (r < 0) {
                log_warning("storage pool: %s: sandbox disks are preallocated ext4 images", why);
                return 0;
        }
        struct disk_pool_space sp;
        if (disk_pool_space(srv->disk_pool, &sp) >= 0) {
                cfg->pool_fs_bytes = sp.size;
                log_info("storage pool: btrfs at %s (%s), %llu MiB, %llu MiB free; sandbox "
                         "disks are subvolumes with qgroup limits",
                         disk_pool_root(srv->disk_pool), disk_pool_kind(srv->disk_pool),
                         (unsigned long long)(sp.size >> 20), (unsigned long long)(sp.free >> 20));
        }
        return 0;
}

/* The host's limits, then the state dir's: the storage pool, keys, helpers, the runtime. */
static int prepare(struct daemon *d)
{
        struct sbxd_config *cfg = &d->cfg;
        /* Agents outlive their jailer: be their parent then, and reap them (lifecycle/monitor.h).
         */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                log_warning_errno(errno, "PR_SET_CHILD_SUBREAPER: %m");
        int r = state_dir_setup(cfg->state_dir);
        if (r < 0)
                return r;
        r = open_storage_pool(&d->srv, cfg);
        if (r < 0)
                return r;
        r = config_derive_limits(cfg);
        if (r < 0)
                return log_error_errno(r, "reading the host's CPUs, memory and state disk: %m");
        log_info(
            "limits: per sandbox at most %u CPUs, %llu MiB memory, %llu MiB disk; all "
            "sandboxes %llu MiB memory, %llu tasks; state disk reserve %llu MiB, overcommit %g",
            cfg->max_cpus, (unsigned long long)cfg->max_memory_mb,
            (unsigned long long)cfg->max_disk_mb, (unsigned long long)cfg->total_memory_mb,
            (unsigned long long)cfg->total_pids, (unsigned long long)cfg->disk_reserve_mb,
            cfg->disk_overcommit);
        cgroup_parent_set(cfg->cgroup_parent);
        (void)host_limits_apply(cfg);
        r = keys_load_or_create(cfg->state_dir, &d->srv.keys);
        if (r < 0)
                return log_error_errno(r, "loading API keys from %s/keys: %m", cfg->state_dir);
        if (access(cfg->jailer, X_OK) < 0)
                log_warning("jailer %s is not executable yet: creating sandboxes will fail",
                            cfg->jailer);
        if (access(cfg->agent, X_OK) < 0)
                log_warning("agent %s is not executable yet: creating sandboxes will fail",
                            cfg->agent);
        /* Checked once: sandboxes of every template get it, or none does (saying so here). */
        d->srv.runtime_ok = access(cfg->runtime, R_OK | X_OK) == 0;
        if (!d->srv.runtime_ok)
                log_warning("runtime %s is missing: sandboxes get no sudo and no code "
                            "interpreter but what their template ships",
                            cfg->runtime);
        if (templates_building(cfg->state_dir))
                log_info("templates are being built (sbx-templates): creates of a template not "
                         "built yet are answered 503 until then");
        return 0;
}

/* The registry and the services, sandboxes of an earlier run adopted. */
static int start_services(struct daemon *d)
{
        struct server *srv = &d->srv;
        const struct sbxd_config *cfg = &d->cfg;
        char why[600] = "";
        int r = host_claims_open(cfg->state_dir, &d->host, why, sizeof(why));
        if (r < 0) /* sharing slots, links or tables with another sbxd would break both */
                return log_error_errno(r, "%s", why);
        ui_load(srv, strcmp(cfg->console_dir, "none") == 0 ? NULL : cfg->console_dir);
        r = registry_new(&srv->registry);
        if (r >= 0) {
                registry_set_host(srv->registry, d->host);
                r = agent_log_start(); /* before adoption: adopted agents' logs are drained */
        }
        if (r >= 0)
                r = volume_store_open(cfg->state_dir, &srv->volumes);
        if (r >= 0)
                r = secret_store_open(cfg->state_dir, &srv->secrets);
        if (r >= 0)
                r = egress_new(srv, host_claims_id(d->host), &srv->egress);
        if (r >= 0)
                r = lifecycle_timer_start(srv);
        if (r >= 0)
                r = monitor_start(srv);
        if (r >= 0) {
                r = adopt_sandboxes(srv);
                if (r > 0) {
                        d->adopted = (unsigned)r;
                        log_info("adopted %d sandbox(es) from an earlier run", r);
                }
                volume_store_settle(srv->volumes);          /* mounts no adopted sandbox uses */
                int n = registry_slot_sweep(srv->registry); /* slots no adopted sandbox uses */
                if (n > 0)
                        log_info("gave back %d uid slot(s) of sandboxes gone meanwhile", n);
        }
        if (r >= 0 && lifecycle_net_reconcile(srv) < 0)
                log_warning("egress: the rules of adopted sandboxes could not be rebuilt");
        if (r >= 0) {
                int g = layer_store_gc(cfg->state_dir, 1);
                if (g > 0)
                        log_info("layer store: %d unreferenced layer(s) removed", g);
                r = sampler_start(srv);
        }
        if (r >= 0) {
                int g = lifecycle_upper_gc(srv);
                if (g > 0)
                        log_info("storage pool: %d subvolume(s) nothing refers to removed", g);
        }
        if (r >= 0 && !cfg->tmpfs_disks && !srv->disk_pool)
                srv->disk_images =
                    disk_image_probe(cfg->state_dir, (uint64_t)TEMPLATE_DEFAULT_DISK_MB << 20);
        if (r >= 0)
                r = pool_start(srv, &srv->lifecycle->pool);
        if (r >= 0)
                r = build_service_start(srv, &srv->build);
        if (r < 0)
                return log_error_errno(r, "starting: %m");
        return 0;
}

static void abort_start(struct daemon *d)
{
        struct server *srv = &d->srv;
        front_stop(d->front);
        cluster_stop(srv->cluster);
        pool_stop(srv->lifecycle->pool);
        sampler_stop(srv);
        monitor_stop(srv);
        if (srv->registry) {
                lifecycle_timer_stop(srv);
                registry_free(srv->registry);
        }
        volume_store_free(srv->volumes);
        egress_free(srv->egress);
        secret_store_free(srv->secrets);
        ui_free(srv);
        disk_pool_close(srv->disk_pool, true);
        host_claims_close(d->host);
        d->host = NULL;
        state_dir_release(d->cfg.state_dir);
        lifecycle_state_free(srv);
}

int daemon_start(struct daemon *d)
{
        struct sbxd_config *cfg = &d->cfg;
        d->srv.config = cfg;
        int r = lifecycle_state_new(&d->srv);
        if (r < 0)
                return log_error_errno(r, "starting: %m");
        r = prepare(d);
        if (r >= 0)
                r = start_services(d);
        if (r >= 0 && (r = front_start(&d->srv, &d->front, &d->port)) < 0)
                log_error_errno(r, "cannot listen on %s: %m", cfg->listen);
        if (r >= 0) {
                set_domain(cfg, d->port);
                if (cfg->port_file && (r = write_port_file(cfg->port_file, d->port)) < 0)
                        log_error_errno(r, "writing port file %s: %m", cfg->port_file);
        }
        if (r >= 0 && cfg->cluster)
                r = start_cluster(&d->srv, d->port);
        if (r < 0) {
                abort_start(d);
                return r;
        }
        announce(cfg, &d->srv.keys, d->port);
        return 0;
}

void daemon_stop(struct daemon *d)
{
        struct server *srv = &d->srv;
        drain(srv, d->front);
        agent_req_shutdown();
        front_stop(d->front);
        cluster_stop(srv->cluster); /* its node key goes; its sandboxes stay mapped to it */
        srv->cluster = NULL;
        build_service_stop(srv->build);  /* a running build is marked failed at the next start */
        pool_stop(srv->lifecycle->pool); /* warm sandboxes are nobody's: torn down */
        srv->lifecycle->pool = NULL;
        sampler_stop(srv);
        sampler_persist_paused(srv, true); /* only with --persist-paused-after */
        monitor_stop(srv);
        lifecycle_timer_stop(srv);
        save_all(srv);
        lifecycle_net_stop(srv); /* the keep table holds their links shut until the next sbxd */
        registry_free(srv->registry);
        volume_store_free(srv->volumes); /* mounts in use stay with their sandboxes */
        secret_store_free(srv->secrets); /* after the egress: its proxy reads secrets */
        ui_free(srv);
        char url_path[4096];
        snprintf(url_path, sizeof(url_path), "%s/" SBXD_URL_FILE, d->cfg.state_dir);
        (void)unlink(url_path);                /* nobody listens there any more */
        disk_pool_close(srv->disk_pool, true); /* kept mounted while sandbox dirs remain */
        host_claims_close(d->host);
        d->host = NULL;
        state_dir_release(d->cfg.state_dir);
        keys_done(&srv->keys);
        lifecycle_state_free(srv);
}
