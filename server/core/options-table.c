/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every option of sbxd, one row each, in sections (options.h says what a row holds). The
 * rows make the command line, the config file, --help, sbxd(8) and the table of
 * server/README.md: an option added here is in all of them. `help` is one line; `doc` adds
 * what the manual says beyond it. A value a reload may change (`.reload = true`) must be a
 * scalar that the code reads where it uses it, not copied at start.
 */
#include "core/options.h"

#include <stddef.h>

#include "core/options-check.h"
#include "core/server-config.h"
#include "macros.h"

#define FIELD(f)                                                                                   \
        .offset = offsetof(struct sbxd_config, f), .size = sizeof(((struct sbxd_config *)0)->f)
#define SECTION(title)                                                                             \
        {                                                                                          \
                .kind = OPTION_SECTION, .name = (title)                                            \
        }
#define COMMAND(c)         .kind = OPTION_COMMAND, .command = (c)
#define STRING(f)          .kind = OPTION_STRING, FIELD(f)
#define PATH(f)            .kind = OPTION_PATH, FIELD(f)
#define UINT(f, lo, hi)    .kind = OPTION_UINT, FIELD(f), .min = (lo), .max = (hi)
#define DOUBLE(f, lo, hi)  .kind = OPTION_DOUBLE, FIELD(f), .min = (lo), .max = (hi)
#define SIZE(f, lo, hi, u) .kind = OPTION_SIZE, FIELD(f), .min = (lo), .max = (hi), .unit = (u)
#define LIST(f, n, most)                                                                           \
        .kind = OPTION_LIST, FIELD(f), .count_offset = offsetof(struct sbxd_config, n),            \
        .max = (most)
#define ENUM(f, ...)                                                                               \
        .kind = OPTION_ENUM, FIELD(f), .names = (const char *const[])                              \
        {                                                                                          \
                __VA_ARGS__, NULL                                                                  \
        }

#define GIB_IN_MB (1ULL << 30) /* the largest MiB figure any size option takes */

const struct sbxd_option sbxd_options[] = {
    SECTION("Commands"),
    {.name = "help", COMMAND(COMMAND_HELP), .help = "print this help and exit"},
    {.name = "version", COMMAND(COMMAND_VERSION), .help = "print sbxd's version and exit"},
    {.name = "config",
     .arg = "FILE",
     COMMAND(COMMAND_CONFIG),
     .help = "read options from FILE (NAME = VALUE lines); the command line wins over it",
     .doc = "Each option below may be set in the file under its name, without the dashes. A "
            "reload (SIGHUP, `systemctl reload sbxd`) reads the file again and applies the "
            "options marked reload; the others wait for a restart, which leaves sandboxes "
            "running. The package's unit reads `/etc/sbx/sbxd.conf`."},
    {.name = "check-config",
     COMMAND(COMMAND_CHECK),
     .help = "check the configuration, name the line of the first mistake, and exit",
     .doc = "Exits 0 when sbxd would start with this configuration (the --config file and "
            "the command line), 2 otherwise, with `FILE:LINE: message` on stderr."},
    {.name = "print-config",
     COMMAND(COMMAND_PRINT),
     .help = "print the configuration in effect as a config file, and exit",
     .doc = "Options set by the file or the command line are lines of their own; the others "
            "are commented out at their default. With no other option this is the commented "
            "file the package installs."},
    {.name = "get",
     .arg = "NAME",
     COMMAND(COMMAND_GET),
     .help = "print the value in effect of option NAME, and exit"},

    SECTION("Service"),
    {.name = "state-dir",
     .arg = "DIR",
     PATH(state_dir),
     .def = SBXD_DEFAULT_STATE_DIR,
     .help = "keys, templates, layers, sandboxes and volumes",
     .doc = "Created if missing; always mode 0700."},
    {.name = "jailer",
     .arg = "PATH",
     PATH(jailer),
     .def_doc = "../jailer/sbx-jailer from sbxd's dir, else ../libexec/sbx/sbx-jailer, "
                "else " SBXD_LIBEXEC_DIR "/sbx-jailer",
     .help = "the sbx-jailer binary"},
    {.name = "agent",
     .arg = "PATH",
     PATH(agent),
     .def_doc = "../guest-agent/sbx-agent from sbxd's dir, else ../libexec/sbx/sbx-agent, "
                "else " SBXD_LIBEXEC_DIR "/sbx-agent",
     .help = "the sbx-agent binary, PID 1 of every sandbox",
     .doc = "Static (`guest-agent/README.md`, \"Runtime\"); passed to the jailer in the "
            "sandbox's spec."},
    {.name = "runtime",
     .arg = "DIR",
     PATH(runtime),
     .def_doc = "runtime/ beside the agent binary",
     .help =
         "the dir bound read-only at /.sbx/runtime in every sandbox: sudo, the code interpreter",
     .doc = "sudo's client and the code interpreter's kernels, laid out by "
            "`guest-agent/runtime.sh` (`guest-agent/README.md`, \"Runtime\"). Checked once at "
            "start: when it is missing, a warning says so and sandboxes get neither but what "
            "their template ships."},
    {.name = "port-file",
     .arg = "FILE",
     PATH(port_file),
     .help = "write the bound port there once listening",
     .doc = "Written atomically, after listen(2)."},
    {.name = "log-level",
     .arg = "LEVEL",
     ENUM(log_level, "error", "warning", "info", "debug"),
     .def = "info",
     .reload = true,
     .help = "the least important log lines kept: error, warning, info or debug",
     .doc = "`SBX_LOG_LEVEL=debug` in the environment also turns debug on, for sbxd and for "
            "the jailers and agents it starts."},
    {.name = "log-format",
     .arg = "FORMAT",
     ENUM(log_format, "auto", "journal", "json", "text"),
     .def = "auto",
     .help = "how sbxd logs: auto (the journal under systemd, else json), journal, json, text",
     .doc = "`auto` logs to the journal, with SANDBOX_ID and REQUEST_ID fields, when stderr is "
            "the journal (systemd's $JOURNAL_STREAM), and JSON lines on stderr otherwise. "
            "`json`: one object a line, {\"ts\",\"level\",\"ident\",\"msg\"} plus \"req\" and "
            "\"sandbox\" when known; `text`: \"sbxd[PID]: LEVEL: message\" lines."},

    SECTION("HTTP"),
    {.name = "listen",
     .arg = "HOST:PORT",
     STRING(listen),
     .def = SBXD_DEFAULT_LISTEN,
     .check = check_listen,
     .help = "the address to serve HTTP on; port 0 picks a free one",
     .doc = "`HOST:PORT` or `[V6]:PORT`, with a numeric host."},
    {.name = "max-connections",
     .arg = "N",
     UINT(max_connections, 1, SBXD_MAX_CONNECTIONS_MAX),
     .def = "1024",
     .help = "HTTP requests in progress at once, a thread each",
     .doc = "A request past it is answered **503** `Retry-After: 1` and its connection closed "
            "(server/README.md, \"Front door\")."},
    {.name = "domain",
     .arg = "DOMAIN",
     STRING(domain),
     .check = check_domain,
     .def_doc = "`sbx.localhost:<listening port>`",
     .help = "sandbox ports are `<port>-<sandboxID>.DOMAIN`, as sandbox.getHost() says",
     .doc = "Create, connect and get answer it as `domain`, so `sandbox.getHost(port)` of the "
            "unmodified SDKs returns such a name (server/README.md, \"Sandbox ports\"). A host "
            "name of `[A-Za-z0-9.-]` with an optional `:PORT`, at most 253 bytes; give the port "
            "when clients reach sbxd on another port than 80/443."},
    {.name = "tls-cert",
     .arg = "FILE",
     PATH(tls_cert),
     .help = "serve HTTPS with this PEM certificate (chain); needs --tls-key",
     .doc = "At most 1 MiB. sbxd then serves **HTTPS only** on its listener and prints "
            "`https://` URLs. The certificate must name the domain and its wildcard "
            "(`sbx.localhost`, `*.sbx.localhost`) and the host the API URL uses "
            "(`IP:127.0.0.1`)."},
    {.name = "tls-key",
     .arg = "FILE",
     PATH(tls_key),
     .help = "the PEM key of --tls-cert",
     .doc = "At most 1 MiB."},
    {.name = "public-url",
     .arg = "URL",
     STRING(public_url),
     .check = check_public_url,
     .def_doc = "the scheme sbxd serves and the Host the client sent",
     .help = "where clients reach sbxd when a proxy or a load balancer stands in front of it",
     .doc = "`http(s)://HOST[:PORT][/PATH]`, at most 255 bytes (`SBXD_PUBLIC_URL_MAX`); a "
            "trailing slash is dropped. The URLs sbxd hands out use it: template upload links, "
            "the printed `export` lines, and, when no `--domain` is given and HOST is a name "
            "(not an address, not `localhost`), `domain` (`HOST[:PORT]`). Without it, an upload "
            "link has the scheme sbxd serves (`https` under `--tls-cert`) and the `Host` the "
            "client sent. The SDKs build signed `/files` URLs and sandbox hosts themselves, "
            "from `E2B_SANDBOX_URL` and `domain`."},
    {.name = "console-dir",
     .arg = "DIR|none",
     PATH(console_dir),
     .keyword = "none",
     .def_doc = "the first of ../console and ../share/sbx/console from sbxd's dir, "
                "and " SBXD_CONSOLE_DIR ", that holds an index.html",
     .help = "the web console's files, served at /ui/; none: no console",
     .doc = "`docs/operator-guide.md`, \"Web console\". A dir without the console is logged at "
            "start, and `/ui/` answers 404."},

    SECTION("Sandboxes"),
    {.name = "pool-size",
     .arg = "N",
     UINT(pool_size, 0, 64),
     .def = "2",
     .help = "warm sandboxes kept per pooled template; 0 turns the pool off"},
    {.name = "pool-templates",
     .arg = "A,B",
     STRING(pool_templates),
     .def = SBXD_DEFAULT_POOL_TEMPLATES,
     .check = check_template_names,
     .help = "the templates that get a warm pool",
     .doc = "A template that is not built yet is tried 3 times, then again every 30 s."},
    {.name = "max-sandboxes",
     .arg = "N",
     UINT(max_sandboxes, 1, 100000),
     .def = "8192",
     .reload = true,
     .help = "running, paused and starting sandboxes; past it creates get 429",
     .doc = "The **429** has `Retry-After: 1`."},
    {.name = "max-creates",
     .arg = "N",
     UINT(max_creates, 1, 100000),
     .def = "32",
     .reload = true,
     .help = "cold creates in flight; more wait their turn",
     .doc = "Creates served from the warm pool are not counted; the others wait up to "
            "--create-wait."},
    {.name = "create-wait",
     .arg = "SECONDS",
     UINT(create_wait_s, 0, 3600),
     .def = "60",
     .reload = true,
     .help = "how long a create waits for its turn; then 429 (0: at once)",
     .doc = "The SDKs do not retry a 429: a burst of 500 creates is queued, not refused "
            "(500 concurrent SDK creates: 13.5 s here, none failed)."},
    {.name = "persist-paused-after",
     .arg = "SECONDS",
     UINT(persist_paused_after_s, 0, 30 * 86400),
     .def = "0",
     .reload = true,
     .help = "persist a sandbox paused this long to disk (0: never)"},
    {.name = "delete-paused-after",
     .arg = "SECONDS",
     UINT(delete_paused_after_s, 0, 3650ULL * 86400),
     .def = "0",
     .reload = true,
     .help = "kill a sandbox paused this long (0: never; 604800 is 7 days)",
     .doc = "Its tombstone says why: a GET answers 404 \"was paused for longer than the server "
            "keeps paused sandboxes\"; with --persist-paused-after set lower it is on disk "
            "meanwhile."},

    SECTION("Disks"),
    {.name = "disk",
     .arg = "KIND",
     ENUM(disk_mode, "auto", "pool", "image", "tmpfs"),
     .def = "auto",
     .help = "a sandbox's disk: auto, pool (a btrfs subvolume), image (ext4 on a loop) or tmpfs",
     .doc = "`auto`: `pool` wherever the kernel has btrfs, else `image`; which one is said once "
            "in the log and on `/metrics` as `sbx_storage_backend`. `pool`: a btrfs subvolume "
            "of the storage pool with a qgroup limit (`storage/disk-pool.h`, "
            "`storage/README.md` \"Thin storage\"); `--disk pool` fails the start when the "
            "pool cannot be had. `image`: an ext4 image on a loop device "
            "(`storage/disk-image.h`), `tmpfs` with a warning when `/dev/loop-control` or "
            "`mkfs.ext4` is missing. `tmpfs`: faster, but charged to the sandbox's memory, so "
            "a full disk meets the OOM killer rather than ENOSPC."},
    {.name = "storage-pool",
     .arg = "SIZE",
     SIZE(storage_pool_bytes, SBXD_STORAGE_POOL_MIN, SBXD_STORAGE_POOL_MAX, 1ULL << 20),
     .def_doc = "a quarter of the free space, 2..256 GiB",
     .help = "the size of <state-dir>/pool.img, the pool's image, on a state dir not on btrfs",
     .doc = "64G, 512M (a bare number is MiB), 256M..64T; printed at start. The image is "
            "preallocated on the state dir's file system and mounted at `<state-dir>/pool` "
            "(on a btrfs state dir the pool is a subvolume there, and this option is unused). "
            "A larger size than the image has grows it (`sbx storage grow SIZE` does it while "
            "sbxd runs); it never shrinks."},
    {.name = "disk-reserve",
     .arg = "MB",
     UINT(disk_reserve_mb, 1, GIB_IN_MB),
     .reload = true,
     .def_doc = "5% of the pool or state file system, at most 1024",
     .help = "MiB of the storage pool (or the state disk) never promised to sandbox disks"},
    {.name = "disk-overcommit",
     .arg = "R",
     DOUBLE(disk_overcommit, 1, SBXD_MAX_OVERCOMMIT),
     .def = "1",
     .reload = true,
     .help = "promise sandbox disks up to R times the free space, as sparse files",
     .doc = "1 preallocates every disk image, so none is ever overcommitted."},

    SECTION("Host limits"),
    {.name = "max-sandbox-cpus",
     .arg = "N",
     UINT(max_cpus, 1, 4096),
     .reload = true,
     .def_doc = "the host's CPUs",
     .help = "the most CPUs one sandbox may ask for",
     .doc = "A create asking for more (or a template with more) is a **400** naming the "
            "limit."},
    {.name = "max-sandbox-memory",
     .arg = "MB",
     UINT(max_memory_mb, 1, GIB_IN_MB),
     .reload = true,
     .def_doc = "3/4 of the host's memory",
     .help = "the most memory one sandbox may ask for"},
    {.name = "max-sandbox-disk",
     .arg = "MB",
     UINT(max_disk_mb, 1, GIB_IN_MB),
     .reload = true,
     .def_doc = "262144 with the storage pool or tmpfs disks, else half the state file system",
     .help = "the largest disk one sandbox may ask for"},
    {.name = "total-memory",
     .arg = "MB",
     UINT(total_memory_mb, 1, GIB_IN_MB),
     .reload = true,
     .def_doc = "the host's memory less a reserve of 10% (at least 512 MiB)",
     .help = "the memory limit of all sandboxes together (their parent cgroup)"},
    {.name = "total-pids",
     .arg = "N",
     UINT(total_pids, 1, GIB_IN_MB),
     .reload = true,
     .def_doc = "3/4 of the smaller of pid_max and threads-max",
     .help = "the task limit of all sandboxes together",
     .doc = "Fork bombs in several sandboxes, each within its own `pids.max`, leave the host "
            "its tasks."},
    {.name = "cgroup-parent",
     .arg = "NAME",
     STRING(cgroup_parent),
     .def = "sbx",
     .check = check_cgroup_name,
     .help = "the cgroup all sandboxes live in, below each hierarchy's root",
     .doc = "Sandboxes are `<parent>/<id>` in every hierarchy, outside sbxd's own cgroup (so a "
            "restart of sbxd's unit leaves them running), and the parent's limits are the "
            "totals above. A further sbxd on the same host (cluster nodes, tests) takes a name "
            "of its own so that neither resets the other's limits."},

    SECTION("Egress"),
    {.name = "egress",
     .arg = "POLICY",
     ENUM(egress_allow, "deny", "allow"),
     .def = "deny",
     .help = "egress of a sandbox that asks for nothing: deny or allow (allow implies "
             "--egress-max any)",
     .doc = "`deny`: loopback only; `allow`: the internet, as on E2B (server/egress/README.md, "
            "\"Egress\")."},
    {.name = "egress-max",
     .arg = "LIMIT",
     ENUM(egress_max, "none", "listed", "any"),
     .def = "listed",
     .help = "the most egress any sandbox gets, whatever it asks: none, listed or any",
     .doc = "`none`: loopback only, always; `listed`: only what `allowOut` lists "
            "(`allow_internet_access` true is ignored); `any`: the operator's opt-in to "
            "`allow_internet_access`. `--egress allow` implies `any` (and contradicts an "
            "explicit lower one). A cap is applied, not refused: Python SDKs send "
            "`allow_internet_access: true` on every create, so a default install lets nothing "
            "out for them as for everyone; the create answer and `GET /sandboxes/{id}` "
            "(`getInfo()`) say what the sandbox got in `allowInternetAccess` (and `network`), "
            "and sbxd logs the policy in force at start."},
    {.name = "egress-dns",
     .arg = "ADDR",
     STRING(egress_dns),
     .check = check_ip,
     .def_doc = "the first nameserver of /etc/resolv.conf",
     .help = "the upstream DNS server (an IP address) of the sandboxes' resolver"},
    {.name = "egress-upstream-ca",
     .arg = "FILE",
     PATH(egress_upstream_ca),
     .check = check_readable,
     .help = "a PEM bundle the egress proxy trusts, besides the host's CA bundle",
     .doc = "For the servers the proxy connects to (server/egress/README.md, \"Credentials\")."},

    SECTION("Cluster"),
    {.name = "cluster",
     .arg = "etcd://H:P[,H:P]",
     STRING(cluster),
     .check = check_etcd_urls,
     .def_doc = "off",
     .help = "cluster mode: register in etcd, place creates on any node",
     .doc = "Other nodes' sandbox traffic is forwarded to them; without it nothing of "
            "`cluster/` runs (server/cluster/README.md)."},
    {.name = "node-name",
     .arg = "NAME",
     STRING(node_name),
     .check = check_node_name,
     .def_doc = "the host name",
     .help = "this node's name in the cluster"},
    {.name = "advertise",
     .arg = "HOST:PORT",
     STRING(advertise),
     .check = check_advertise,
     .def_doc = "the listen host and bound port",
     .help = "where the other nodes reach this one"},

    SECTION("Images"),
    {.name = "max-layer-size",
     .arg = "SIZE",
     SIZE(max_layer_bytes, 1ULL << 20, SBXD_MAX_LAYER_LIMIT, 1),
     .def = "16G",
     .help = "the most one image layer may hold uncompressed, imported or pulled",
     .doc = "Bytes, or with `K`, `M`, `G`, `T`; 1M..64G. Past it the import or pull stops with "
            "**413** and leaves nothing (`storage/README.md`, \"Admission\")."},
    {.name = "registry-mirror",
     .arg = "URL",
     LIST(registry_mirrors, n_registry_mirrors, SBXD_MAX_REGISTRY_OPTIONS),
     .check = check_registry_mirror,
     .help =
         "pull docker.io images from this registry first (repeatable: in order, then docker.io)",
     .doc = "`http(s)://HOST[:PORT]`, at most 16 (one line each in the config file), as "
            "dockerd's `registry-mirrors` (an offline site's `fromImage('ubuntu:22.04')`). "
            "`http://` only for a loopback or `--insecure-registry` host (`pull/README.md`)."},
    {.name = "registry-ca",
     .arg = "FILE",
     PATH(registry_ca),
     .check = check_readable,
     .help = "a PEM bundle pulls trust for registries' certificates, besides the host's CA bundle"},
    {.name = "insecure-registry",
     .arg = "HOST[:PORT]",
     LIST(insecure_registries, n_insecure_registries, SBXD_MAX_REGISTRY_OPTIONS),
     .check = check_registry_host,
     .help = "pull from this registry over plain HTTP or unverified HTTPS (repeatable)",
     .doc = "At most 16 (one line each in the config file). Loopback registries may use plain "
            "HTTP without it."},
};

const size_t sbxd_n_options = ELEMENTSOF(sbxd_options);
