/* SPDX-License-Identifier: Apache-2.0 */
/* sbxd's configuration: the command line and the config file, by the rows of options.h. */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/options.h"

#define SBXD_DEFAULT_LISTEN    "127.0.0.1:3000"
#define SBXD_DEFAULT_STATE_DIR "/var/lib/sbx"
/* Installed helpers live here when no build-tree sibling exists (see config_resolve_helper). */
#define SBXD_LIBEXEC_DIR "/usr/libexec/sbx"
/* The web console's files when neither the build tree nor a --prefix install has them
 * (config_resolve_console()). */
#define SBXD_CONSOLE_DIR             "/usr/share/sbx/console"
#define SBXD_DEFAULT_MAX_CONNECTIONS 1024 /* --max-connections: threads in libmicrohttpd */
#define SBXD_MAX_CONNECTIONS_MAX     16384

/* --egress-max: the most egress any sandbox gets, whatever it asks for. */
enum egress_max {
        EGRESS_MAX_NONE,   /* loopback only, always */
        EGRESS_MAX_LISTED, /* only what allowOut lists */
        EGRESS_MAX_ANY,    /* allowInternetAccess too */
};

/* --log-format: where and how sbxd logs (common/log.h) */
enum log_format {
        LOG_FORMAT_AUTO,    /* the journal when stderr is it ($JOURNAL_STREAM), else json */
        LOG_FORMAT_JOURNAL, /* sd_journal_send, with SANDBOX_ID and REQUEST_ID fields */
        LOG_FORMAT_JSON,
        LOG_FORMAT_TEXT,
};

/* One value of the command line, kept for a reload (the command line still wins then). */
struct option_arg {
        const struct sbxd_option *option;
        char *value;
};

/* Fields a reload may change (rows with .reload) are scalars written with one atomic store
 * (option_copy_scalar) while other threads read them. */
struct sbxd_config {
        char *config_file;       /* --config, absolute; NULL: none */
        struct option_arg *args; /* the command line's values, in order */
        size_t n_args;
        unsigned char given[OPTION_MAX_ROWS]; /* enum option_origin of each row's value */
        unsigned log_level;                   /* enum log_level */
        unsigned log_format;                  /* enum log_format */
        char *listen;                         /* as given, e.g. "127.0.0.1:3000" */
        char *host;                           /* host part used for the printed URLs */
        struct sockaddr_storage addr;
        socklen_t addr_len;
        char *state_dir; /* absolute */
        char *jailer;    /* absolute path of sbx-jailer */
        char *agent;     /* absolute path of sbx-agent */
        char *runtime;   /* absolute path of the dir bound at /.sbx/runtime (may be missing) */
        char *port_file; /* optional */
        /* lifecycle (docs/operator-guide.md "Lifecycle at scale") */
        unsigned pool_size;              /* warm sandboxes kept per pooled template; 0: no pool */
        char *pool_templates;            /* comma-separated template names */
        unsigned max_sandboxes;          /* running + paused; past it creates get 429 */
        unsigned max_creates;            /* cold creates in flight; past it they wait */
        unsigned create_wait_s;          /* how long a create waits for a turn; then 429 */
        unsigned max_connections;        /* HTTP connections in a request (front/gate.h) */
        unsigned persist_paused_after_s; /* 0: never persist a paused sandbox to disk */
        unsigned delete_paused_after_s;  /* 0: a paused sandbox is kept until killed */
        bool tmpfs_disks; /* --disk tmpfs: no ext4 image disks (storage/disk-image.h) */
        /* --disk pool|image|tmpfs, absent: auto (the btrfs pool where the kernel has btrfs,
         * else images, else tmpfs; storage/disk-pool.h) */
        enum sbxd_disk_mode {
                SBXD_DISK_AUTO,
                SBXD_DISK_POOL,
                SBXD_DISK_IMAGE,
                SBXD_DISK_TMPFS
        } disk_mode;
        uint64_t storage_pool_bytes; /* --storage-pool SIZE: 0 = default (storage/disk-pool.h) */
        uint64_t pool_fs_bytes;      /* the open pool's size, set at start (0: no pool) */
        /* Host disk (storage/disk-image.h "Admission"): 0 = derived from the state file system
         * at start (config_derive_limits). */
        uint64_t disk_reserve_mb; /* free space never promised to sandbox disks */
        double disk_overcommit;   /* 1: disks are preallocated; R > 1: sparse, R x promised */
        /* Per-sandbox maxima a create may ask for (past them: 400 naming the limit); 0 =
         * derived from the host at start. */
        unsigned max_cpus;
        uint64_t max_memory_mb, max_disk_mb;
        /* The parent cgroup sbx/ of every sandbox: 0 = derived from the host at start. */
        uint64_t total_memory_mb, total_pids;
        char *cgroup_parent; /* --cgroup-parent: the cgroup every sandbox's lives in ("sbx") */
        /* --domain: sandbox ports are "<port>-<id>.<domain>" (create's `domain`); NULL:
         * SBXD_DEFAULT_DOMAIN ":<bound port>" (server/README.md "Sandbox ports") */
        char *domain;
        /* --public-url: the URL clients reach sbxd at (a proxy in front); NULL: the scheme sbxd
         * serves and the Host the client sent (server/README.md "Command line and config file") */
        char *public_url;
        char *tls_cert, *tls_key; /* --tls-cert/--tls-key: PEM files; HTTPS when both are set */
        char *tls_cert_pem, *tls_key_pem; /* their contents (config_load_tls()) */
        /* Egress (server/egress/egress.h): --egress, --egress-max, --egress-dns */
        bool egress_allow; /* a sandbox that asks for nothing may reach the internet */
        enum egress_max egress_max;
        char *egress_dns;         /* upstream resolver address, NULL: /etc/resolv.conf's first */
        char *egress_upstream_ca; /* --egress-upstream-ca: extra PEM the proxy trusts, or NULL */
        /* --cluster (server/cluster/README.md): NULL for a single node */
        char *cluster;   /* etcd://host:port[,host:port...] */
        char *node_name; /* --node-name; NULL: the host name */
        char *advertise; /* --advertise HOST:PORT; NULL: the listen host and bound port */
        /* Images (server/pull/README.md, storage/image-admit.h) */
        uint64_t max_layer_bytes;     /* --max-layer-size: uncompressed bytes of one layer */
        char **registry_mirrors;      /* --registry-mirror URL (repeated): docker.io pulls */
        size_t n_registry_mirrors;    /* go there first, in order */
        char *registry_ca;            /* --registry-ca FILE: PEM the pulls trust (absolute) */
        char **insecure_registries;   /* --insecure-registry HOST[:PORT] (repeated): plain HTTP */
        size_t n_insecure_registries; /* or unverified HTTPS allowed */
        char *console_dir;            /* --console-dir: the web console's files (ui/); NULL: none */
};

#define SBXD_DOMAIN_MAX     253
#define SBXD_DEFAULT_DOMAIN "sbx.localhost"
#define SBXD_PUBLIC_URL_MAX 255           /* --public-url, bytes */
#define SBXD_TLS_MAX_PEM    (1024 * 1024) /* a certificate chain or key file */

/* <state>/url: the URL sbxd listens on, written once listening, removed at a clean stop
 * (read by the sbx CLI when SBX_URL and E2B_API_URL are unset). */
#define SBXD_URL_FILE               "url"
#define SBXD_DEFAULT_POOL_SIZE      2
#define SBXD_DEFAULT_POOL_TEMPLATES "base,code-interpreter-v1"
#define SBXD_DEFAULT_MAX_SANDBOXES  8192
#define SBXD_DEFAULT_MAX_CREATES    32
#define SBXD_DEFAULT_CREATE_WAIT_S  60
/* Derived defaults (config_derive_limits): the disk reserve is 5% of the state file system, at
 * most 1 GiB; a sandbox may ask for every CPU, 3/4 of the host's memory and half the state file
 * system; all sandboxes together get the host's memory but a reserve (10%, at least 512 MiB) and
 * 3/4 of the kernel's pid space. */
#define SBXD_DISK_RESERVE_PCT    5
#define SBXD_DISK_RESERVE_MAX_MB 1024
#define SBXD_MAX_OVERCOMMIT      1000
/* --storage-pool bounds (storage/disk-pool.h DISK_POOL_MIN_BYTES, DISK_POOL_MAX_BYTES) */
#define SBXD_STORAGE_POOL_MIN        (256ULL << 20)
#define SBXD_STORAGE_POOL_MAX        (64ULL << 40)
#define SBXD_HOST_MEMORY_RESERVE_PCT 10
#define SBXD_HOST_MEMORY_RESERVE_MIN 512
/* --max-layer-size: default and most (storage/image-admit.h) */
#define SBXD_DEFAULT_MAX_LAYER    (16ull << 30)
#define SBXD_MAX_LAYER_LIMIT      (64ull << 30)
#define SBXD_MAX_REGISTRY_OPTIONS 16 /* --registry-mirror, --insecure-registry: each */

/* Parse argv, then read the --config file (defaults < the file < the command line), into *ret
 * (owned strings; free with config_done), and say which command argv asks for
 * (*ret_command, *ret_get: --get's option). -EINVAL with a message on stderr naming the
 * option, or the file and line, that is wrong. */
int config_parse(int argc, char **argv, struct sbxd_config *ret, enum option_command *ret_command,
                 const struct sbxd_option **ret_get);
void config_done(struct sbxd_config *c);

/* Fill c's options from the rows' defaults, then c->config_file, then c->args, and check what
 * needs several options. 0, or -errno with the mistake reported by config_error(). */
int config_load(struct sbxd_config *c);

/* A configuration mistake, to stderr as "sbxd: message" (or to the log, for a reload:
 * config_errors_to_log(true)). */
void config_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void config_errors_to_log(bool on);

/* A config file's lines into c (config-file.c): "NAME = VALUE", blank lines and lines
 * starting with '#' skipped. -EINVAL with "PATH:LINE: message" on stderr (-errno when the file
 * cannot be read). */
int config_read_file(const char *path, struct sbxd_config *c);

/* Read the configuration again as at start (the same --config file and command line) and apply
 * what a reload may change to *live: for each row whose value differs, changed(row, old text,
 * new text, applied, userdata) is called, applied false for rows that need a restart (*live
 * keeps their old value). Nothing changes when the file has an error (-EINVAL, logged). */
int config_reload(struct sbxd_config *live,
                  void (*changed)(const struct sbxd_option *o, const char *old_value,
                                  const char *new_value, bool applied, void *userdata),
                  void *userdata);

/* Read --tls-cert and --tls-key (at most SBXD_TLS_MAX_PEM each) into tls_*_pem; nothing
 * without them. -errno with a message on stderr. */
int config_load_tls(struct sbxd_config *c);

/* Fill the limits left at 0 from the host (CPUs, MemTotal, pid_max and threads-max) and from the
 * state dir's file system. Needs the state dir to exist. -errno when the host cannot be read. */
int config_derive_limits(struct sbxd_config *c);

/* A size: digits with an optional K, M, G or T (binary units, either case; none: MiB) into
 * bytes. -EINVAL when malformed, zero or past 2^64. */
int config_parse_size(const char *arg, uint64_t *ret);
/* The same with a bare number counting unit bytes (1: bytes). */
int config_parse_size_unit(const char *arg, uint64_t unit, uint64_t *ret);

/* Parse "HOST:PORT" / "[V6]:PORT" into a sockaddr. Pure; used by tests. */
int config_parse_listen(const char *s, struct sockaddr_storage *ret_addr, socklen_t *ret_len,
                        char **ret_host);

/* Default path of a helper binary ("jailer/sbx-jailer", "guest-agent/sbx-agent"): the first
 * that exists of <exe dir>/../<rel> (build tree), <exe dir>/../libexec/sbx/<base>, and
 * SBXD_LIBEXEC_DIR/<base>; the build-tree path when none exists. Returns malloc'd string. */
int config_resolve_helper(const char *rel, char **ret);
/* The web console's dir: the first of <dir of sbxd>/../console, <dir of sbxd>/../share/sbx/
 * console and SBXD_CONSOLE_DIR that holds an index.html, else SBXD_CONSOLE_DIR. */
int config_resolve_console(char **ret);
