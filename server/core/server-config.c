/* SPDX-License-Identifier: Apache-2.0 */
/* sbxd's configuration: the command line, then the config file (config-file.c), by the rows
 * of options-table.c. */
#include "core/server-config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/validate.h"
#include "fd-util.h"
#include "log.h"
#include "macros.h"

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

/* The directory this binary is in, into exe (PATH_MAX bytes): 0 or -errno. */
static int exe_dir(char exe[static PATH_MAX])
{
        ssize_t n = readlink("/proc/self/exe", exe, PATH_MAX - 1);
        if (n < 0)
                return -errno;
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash)
                *slash = 0;
        return 0;
}

int config_resolve_helper(const char *rel, char **ret)
{
        char exe[PATH_MAX];
        int e = exe_dir(exe);
        if (e < 0)
                return e;
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
        int e = exe_dir(exe);
        if (e < 0)
                return e;
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

/* The runtime dir beside the agent binary (guest-agent/meson.build lays it out there). */
static int runtime_next_to(const char *agent, char **ret)
{
        const char *slash = strrchr(agent, '/');
        if (asprintf(ret, "%.*s/runtime", slash ? (int)(slash - agent) : 1, slash ? agent : ".") <
            0)
                return -ENOMEM;
        return 0;
}

void config_done(struct sbxd_config *c)
{
        for (size_t i = 0; i < sbxd_n_options; i++)
                option_clear(&sbxd_options[i], c);
        for (size_t i = 0; i < c->n_args; i++)
                free(c->args[i].value);
        free(c->args);
        free(c->config_file);
        free(c->host);
        free(c->tls_cert_pem);
        free(c->tls_key_pem);
        *c = (struct sbxd_config){};
}

/* Where configuration errors go: stderr while starting (a person reads them, maybe after
 * --check-config), the log during a reload. */
static bool errors_to_log;

void config_error(const char *fmt, ...)
{
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (errors_to_log)
                log_error("%s", msg);
        else
                fprintf(stderr, "sbxd: %s\n", msg);
}

void config_errors_to_log(bool on)
{
        errors_to_log = on;
}

/* What the rows cannot say alone: pairs, and values derived from others. */
static int config_finish(struct sbxd_config *c)
{
        if (!c->tls_cert != !c->tls_key) {
                config_error("--tls-cert and --tls-key go together");
                return -EINVAL;
        }
        /* --egress allow alone is the operator's opt-in to the internet: it lifts the default
         * cap (listed) with it; only an explicit lower --egress-max contradicts it. */
        if (c->egress_allow && c->given[option_index(option_find("egress-max"))] == ORIGIN_DEFAULT)
                c->egress_max = EGRESS_MAX_ANY;
        if (c->egress_allow && c->egress_max != EGRESS_MAX_ANY) {
                config_error("--egress allow needs --egress-max any");
                return -EINVAL;
        }
        free(c->host);
        c->host = NULL;
        if (config_parse_listen(c->listen, &c->addr, &c->addr_len, &c->host) < 0) {
                config_error("bad --listen '%s' (want HOST:PORT)", c->listen);
                return -EINVAL;
        }
        c->tmpfs_disks = c->disk_mode == SBXD_DISK_TMPFS;
        if (c->public_url) { /* "https://h/" and "https://h" are one URL */
                size_t l = strlen(c->public_url);
                if (c->public_url[l - 1] == '/')
                        c->public_url[l - 1] = 0;
        }
        int r = 0;
        if (!c->jailer)
                r = config_resolve_helper("jailer/sbx-jailer", &c->jailer);
        if (r >= 0 && !c->agent)
                r = config_resolve_helper("guest-agent/sbx-agent", &c->agent);
        if (r >= 0 && !c->runtime)
                r = runtime_next_to(c->agent, &c->runtime);
        if (r >= 0 && !c->console_dir)
                r = config_resolve_console(&c->console_dir);
        return r;
}

int config_load(struct sbxd_config *c)
{
        char err[512];
        int r;
        for (size_t i = 0; i < sbxd_n_options; i++) {
                const struct sbxd_option *o = &sbxd_options[i];
                if (o->kind == OPTION_SECTION || o->kind == OPTION_COMMAND)
                        continue;
                option_clear(o, c);
                c->given[i] = ORIGIN_DEFAULT;
                if (o->def && (r = option_set(o, c, o->def, false, err, sizeof(err))) < 0) {
                        config_error("the default of --%s: %s", o->name, err);
                        return r;
                }
        }
        if (c->config_file && (r = config_read_file(c->config_file, c)) < 0)
                return r;
        for (size_t i = 0; i < c->n_args; i++) {
                const struct sbxd_option *o = c->args[i].option;
                /* a list on the command line replaces the file's, as any other option does */
                if (o->kind == OPTION_LIST && c->given[option_index(o)] == ORIGIN_FILE)
                        option_clear(o, c);
                r = option_set(o, c, c->args[i].value, false, err, sizeof(err));
                if (r < 0) {
                        config_error("--%s: %s", o->name, err);
                        return r;
                }
                c->given[option_index(o)] = ORIGIN_COMMAND_LINE;
        }
        return config_finish(c);
}

/* A command row of argv: what to do, and --config's file. */
static int take_command(const struct sbxd_option *o, const char *arg, struct sbxd_config *c,
                        enum option_command *cmd, const struct sbxd_option **get)
{
        if (o->command == COMMAND_CONFIG) {
                char cwd[PATH_MAX];
                free(c->config_file);
                c->config_file = NULL;
                if (arg[0] == '/')
                        c->config_file = strdup(arg);
                else if (getcwd(cwd, sizeof(cwd)) &&
                         asprintf(&c->config_file, "%s/%s", cwd, arg) < 0)
                        c->config_file = NULL;
                return c->config_file ? 0 : -ENOMEM;
        }
        if (*cmd != COMMAND_RUN && *cmd != o->command) {
                config_error("--%s: one command at a time", o->name);
                return -EINVAL;
        }
        if (o->command == COMMAND_GET) {
                *get = option_find(arg);
                if (!*get || (*get)->kind == OPTION_COMMAND) {
                        config_error("--get: no option '%s'", arg);
                        return -EINVAL;
                }
        }
        *cmd = o->command;
        return 0;
}

static int add_arg(struct sbxd_config *c, const struct sbxd_option *o, const char *value)
{
        struct option_arg *a = reallocarray(c->args, c->n_args + 1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        c->args = a;
        if (!(a[c->n_args].value = strdup(value)))
                return -ENOMEM;
        a[c->n_args++].option = o;
        return 0;
}

int config_parse(int argc, char **argv, struct sbxd_config *ret, enum option_command *ret_command,
                 const struct sbxd_option **ret_get)
{
        struct option longopts[OPTION_MAX_ROWS + 1] = {};
        size_t n = 0;
        _Static_assert(OPTION_MAX_ROWS < 1000, "row ids are 1000 + index");
        for (size_t i = 0; i < sbxd_n_options && n < OPTION_MAX_ROWS; i++)
                if (sbxd_options[i].kind != OPTION_SECTION)
                        longopts[n++] =
                            (struct option){sbxd_options[i].name,
                                            sbxd_options[i].arg ? required_argument : no_argument,
                                            NULL, 1000 + (int)i};
        struct sbxd_config c = {};
        enum option_command cmd = COMMAND_RUN;
        const struct sbxd_option *get = NULL;
        int o, r = 0;

        optind = 1;
        while (r >= 0 && (o = getopt_long(argc, argv, "h", longopts, NULL)) >= 0) {
                const struct sbxd_option *row = o >= 1000 ? &sbxd_options[o - 1000] : NULL;
                if (o == 'h')
                        r = take_command(option_find("help"), NULL, &c, &cmd, &get);
                else if (!row)
                        r = -EINVAL; /* getopt said what */
                else if (row->kind == OPTION_COMMAND)
                        r = take_command(row, optarg, &c, &cmd, &get);
                else
                        r = add_arg(&c, row, optarg);
        }
        if (r >= 0 && optind < argc) {
                config_error("unexpected argument '%s'", argv[optind]);
                r = -EINVAL;
        }
        if (r == -EINVAL)
                fputs("Try 'sbxd --help'.\n", stderr);
        if (r >= 0 && cmd != COMMAND_HELP && cmd != COMMAND_VERSION)
                r = config_load(&c);
        if (r < 0) {
                config_done(&c);
                return r;
        }
        *ret = c;
        *ret_command = cmd;
        *ret_get = get;
        return 0;
}

static int load_pem(const char *path, char **ret)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        size_t len;
        int r = fd < 0 ? -errno : read_all(fd, SBXD_TLS_MAX_PEM, ret, &len);
        if (r < 0)
                config_error("reading %s: %s", path, strerror(-r));
        return r;
}

int config_load_tls(struct sbxd_config *c)
{
        if (!c->tls_cert)
                return 0;
        int r = load_pem(c->tls_cert, &c->tls_cert_pem);
        return r < 0 ? r : load_pem(c->tls_key, &c->tls_key_pem);
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

int config_parse_size_unit(const char *arg, uint64_t unit, uint64_t *ret)
{
        char *end;
        errno = 0;
        if (!*arg || arg[0] < '0' || arg[0] > '9' || unit == 0)
                return -EINVAL;
        unsigned long long v = strtoull(arg, &end, 10);
        uint64_t mult = unit;
        if (*end && !end[1]) {
                const char *units = "KMGT";
                const char *u = strchr(units, *end & ~0x20);
                if (!u || !(*end & ~0x20))
                        return -EINVAL;
                mult = 1ULL << (10 * (unsigned)(u - units + 1));
                end++;
        }
        if (errno || *end || v == 0 || v > UINT64_MAX / mult)
                return -EINVAL;
        *ret = (uint64_t)v * mult;
        return 0;
}

int config_parse_size(const char *arg, uint64_t *ret)
{
        return config_parse_size_unit(arg, 1ULL << 20, ret); /* a bare number is MiB */
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
        /* tmpfs disks are bounded by memoryMB; pool disks are thin (a disk larger than the
         * pool costs nothing until written, and a full pool is ENOSPC at write()); images live
         * on the state disk, preallocated */
        if (!c->max_disk_mb)
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
