/* SPDX-License-Identifier: Apache-2.0 */
/* sbxd's option table and configuration (core/options.h, core/server-config.h): the rows are
 * well formed, the config file is read line by line with each mistake named, the command line
 * wins over the file, a reload applies what it may and nothing else, --print-config's file
 * reads back as the same configuration; and the keys file (api/keys-file.h, core/keys.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/keys.h"
#include "core/options.h"
#include "core/server-config.h"
#include "fd-util.h"
#include "macros.h"
#include "unit.h"

static char dir[] = "/tmp/sbx-options-test-XXXXXX";

static const char *write_conf(const char *name, const char *text)
{
        static char path[128];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        CHECK_EQ_INT(write_file_atomic(path, text, strlen(text), 0600), 0);
        return path;
}

/* config_parse of a NULL-terminated argv (its first word "sbxd"). */
static int parse(struct sbxd_config *c, enum option_command *cmd, const char *const *args)
{
        char *argv[32] = {(char *)"sbxd"};
        int n = 1;
        for (; args && args[n - 1] && n < 31; n++)
                argv[n] = (char *)args[n - 1];
        const struct sbxd_option *get;
        return config_parse(n, argv, c, cmd, &get);
}

static void test_rows(void)
{
        size_t options = 0;
        CHECK(sbxd_n_options <= OPTION_MAX_ROWS);
        CHECK_EQ_INT(sbxd_options[0].kind, OPTION_SECTION);
        for (size_t i = 0; i < sbxd_n_options; i++) {
                const struct sbxd_option *o = &sbxd_options[i];
                if (o->kind == OPTION_SECTION)
                        continue;
                options++;
                /* one name, [a-z0-9-], found again by its name */
                CHECK(o->name &&
                      strspn(o->name, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(o->name));
                CHECK(option_find(o->name) == o);
                CHECK(o->help && *o->help && strlen(o->help) < 100);
                if (o->kind == OPTION_COMMAND) {
                        CHECK(o->command != COMMAND_RUN);
                        continue;
                }
                CHECK(o->arg != NULL); /* every setting takes a value */
                CHECK(o->size > 0);
                /* a reload may change scalars only, written with one atomic store */
                if (o->reload)
                        CHECK(o->kind == OPTION_UINT || o->kind == OPTION_DOUBLE ||
                              o->kind == OPTION_ENUM);
                if (o->kind == OPTION_UINT || o->kind == OPTION_DOUBLE || o->kind == OPTION_SIZE)
                        CHECK(o->min <= o->max && o->max > 0);
                if (o->kind == OPTION_SIZE)
                        CHECK(o->unit == 1 || o->unit == 1ULL << 20);
                if (o->kind == OPTION_LIST)
                        CHECK(o->max > 0 && o->count_offset > 0 && !o->def && !o->reload);
                if (o->kind == OPTION_ENUM)
                        CHECK(o->names && o->names[0] && o->names[1]);
                /* a derived default says what it is */
                if (!o->def && (o->kind == OPTION_UINT || o->kind == OPTION_SIZE))
                        CHECK(o->def_doc != NULL);
        }
        CHECK(options > 30);
}

static void test_defaults(void)
{
        struct sbxd_config c = {};
        enum option_command cmd;
        CHECK_EQ_INT(parse(&c, &cmd, NULL), 0);
        CHECK_EQ_INT(cmd, COMMAND_RUN);
        CHECK_STREQ(c.listen, SBXD_DEFAULT_LISTEN);
        CHECK_STREQ(c.state_dir, SBXD_DEFAULT_STATE_DIR);
        CHECK_STREQ(c.pool_templates, SBXD_DEFAULT_POOL_TEMPLATES);
        CHECK_STREQ(c.cgroup_parent, "sbx");
        CHECK_EQ_INT(c.pool_size, SBXD_DEFAULT_POOL_SIZE);
        CHECK_EQ_INT(c.max_sandboxes, SBXD_DEFAULT_MAX_SANDBOXES);
        CHECK_EQ_INT(c.max_creates, SBXD_DEFAULT_MAX_CREATES);
        CHECK_EQ_INT(c.create_wait_s, SBXD_DEFAULT_CREATE_WAIT_S);
        CHECK_EQ_INT(c.max_connections, SBXD_DEFAULT_MAX_CONNECTIONS);
        CHECK(c.disk_overcommit == 1.0);
        /* a default install lets nothing out (server/egress/README.md "Egress") */
        CHECK_EQ_INT(c.egress_max, EGRESS_MAX_LISTED);
        CHECK(!c.egress_allow && !c.tmpfs_disks);
        CHECK_EQ_INT(c.disk_mode, SBXD_DISK_AUTO);
        CHECK(c.max_layer_bytes == SBXD_DEFAULT_MAX_LAYER);
        CHECK(c.storage_pool_bytes == 0); /* the pool's own default */
        CHECK(!c.public_url && !c.registry_ca && !c.registry_mirrors);
        CHECK_EQ_INT(c.n_registry_mirrors + c.n_insecure_registries, 0);
        CHECK_EQ_INT(c.max_cpus, 0);                      /* derived at start */
        CHECK(c.jailer && c.agent && c.jailer[0] == '/'); /* resolved */
        /* the runtime beside the agent, the console found or its installed place */
        char want[4200];
        snprintf(want, sizeof(want), "%.*s/runtime", (int)(strrchr(c.agent, '/') - c.agent),
                 c.agent);
        CHECK_STREQ(c.runtime, want);
        CHECK(c.console_dir && c.console_dir[0] == '/');
        CHECK(c.addr.ss_family == AF_INET && c.host && strcmp(c.host, "127.0.0.1") == 0);
        for (size_t i = 0; i < sbxd_n_options; i++)
                CHECK_EQ_INT(c.given[i], ORIGIN_DEFAULT);
        config_done(&c);
}

static void test_file_and_command_line(void)
{
        const char *conf = write_conf("good.conf", "# comment\n"
                                                   "\n"
                                                   "  max-sandboxes = 10  \r\n"
                                                   "egress=allow\n"
                                                   "pool-templates = \"base\"\n"
                                                   "disk = tmpfs\n"
                                                   "disk-overcommit = 2.5\n"
                                                   "state-dir = /srv/sbx\n"
                                                   "registry-mirror = http://127.0.0.1:5000\n"
                                                   "registry-mirror = https://m.example.com/\n"
                                                   "insecure-registry = r.example.com:5000\n"
                                                   "insecure-registry = [::1]:5000\n"
                                                   "max-layer-size = 256M\n"
                                                   "storage-pool = 2G\n"
                                                   "public-url = https://sbx.example.com/\n"
                                                   "console-dir = none\n");
        struct sbxd_config c = {};
        enum option_command cmd;
        const char *args[] = {"--config",
                              conf,
                              "--max-sandboxes",
                              "20",
                              "--egress-max",
                              "any",
                              "--insecure-registry",
                              "r2.example.com",
                              NULL};
        CHECK_EQ_INT(parse(&c, &cmd, args), 0);
        CHECK_EQ_INT(c.max_sandboxes, 20); /* the command line wins */
        CHECK(c.egress_allow);
        CHECK_STREQ(c.pool_templates, "base");
        CHECK(c.tmpfs_disks && c.disk_mode == SBXD_DISK_TMPFS);
        /* a list takes a line per value; the command line's replaces the file's */
        CHECK_EQ_INT(c.n_registry_mirrors, 2);
        CHECK_STREQ(c.registry_mirrors[0], "http://127.0.0.1:5000");
        CHECK_STREQ(c.registry_mirrors[1], "https://m.example.com/");
        CHECK_EQ_INT(c.n_insecure_registries, 1);
        CHECK_STREQ(c.insecure_registries[0], "r2.example.com");
        CHECK(c.max_layer_bytes == 256ULL << 20);
        CHECK(c.storage_pool_bytes == 2ULL << 30);
        CHECK_STREQ(c.public_url, "https://sbx.example.com"); /* one URL with or without / */
        CHECK_STREQ(c.console_dir, "none");
        CHECK(c.disk_overcommit == 2.5);
        CHECK_STREQ(c.state_dir, "/srv/sbx");
        CHECK_EQ_INT(c.given[option_index(option_find("max-sandboxes"))], ORIGIN_COMMAND_LINE);
        CHECK_EQ_INT(c.given[option_index(option_find("state-dir"))], ORIGIN_FILE);
        CHECK_EQ_INT(c.given[option_index(option_find("listen"))], ORIGIN_DEFAULT);
        CHECK_STREQ(c.config_file, conf);

        /* --print-config reads back as the same configuration */
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        options_print_config(f, &c);
        fclose(f);
        CHECK(strstr(text, "\nmax-sandboxes = 20\n") != NULL);
        CHECK(strstr(text, "\n#listen = 127.0.0.1:3000\n") != NULL);
        CHECK(strstr(text, "\n#domain =\n") != NULL);
        CHECK(strstr(text, "\nregistry-mirror = http://127.0.0.1:5000\nregistry-mirror = "
                           "https://m.example.com/\n") != NULL);
        CHECK(strstr(text, "\nmax-layer-size = 256M\n") != NULL);
        const char *printed = write_conf("printed.conf", text);
        free(text);
        struct sbxd_config back = {};
        const char *args2[] = {"--config", printed, NULL};
        CHECK_EQ_INT(parse(&back, &cmd, args2), 0);
        for (size_t i = 0; i < sbxd_n_options; i++) {
                const struct sbxd_option *o = &sbxd_options[i];
                char a[OPTION_MAX_LINE], b[OPTION_MAX_LINE];
                if (o->kind == OPTION_SECTION || o->kind == OPTION_COMMAND)
                        continue;
                CHECK_STREQ(option_format(o, &back, b, sizeof(b)),
                            option_format(o, &c, a, sizeof(a)));
        }
        config_done(&back);
        config_done(&c);

        /* a relative path is the working directory's on the command line */
        const char *args3[] = {"--state-dir", "rel", NULL};
        char cwd[4096], want[4200];
        CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
        snprintf(want, sizeof(want), "%s/rel", cwd);
        CHECK_EQ_INT(parse(&c, &cmd, args3), 0);
        CHECK_STREQ(c.state_dir, want);
        config_done(&c);

        /* sizes: a bare number is --max-layer-size's bytes, --storage-pool's MiB */
        const char *args4[] = {"--max-layer-size", "1048577", "--storage-pool", "512", NULL};
        CHECK_EQ_INT(parse(&c, &cmd, args4), 0);
        CHECK(c.max_layer_bytes == (1ULL << 20) + 1);
        CHECK(c.storage_pool_bytes == 512ULL << 20);
        config_done(&c);

        /* --egress allow alone lifts the default cap; --console-dir none is no console */
        const char *args5[] = {"--egress", "allow", "--console-dir", "none", NULL};
        CHECK_EQ_INT(parse(&c, &cmd, args5), 0);
        CHECK_EQ_INT(c.egress_max, EGRESS_MAX_ANY);
        CHECK_STREQ(c.console_dir, "none");
        config_done(&c);
}

/* Each mistake is refused, alone in a file. */
static void test_file_mistakes(void)
{
        static const char *const bad[] = {
            "max-sandboxes = 0\n",                   /* below its range */
            "max-sandboxes = 12x\n",                 /* not a number */
            "max-sandboxes = -1\n",                  /* negative */
            "max-sandboxes\n",                       /* no = */
            "bogus = 1\n",                           /* unknown */
            "--listen = 1.2.3.4:5\n",                /* dashes */
            "pool-size = 1\npool-size = 1\n",        /* twice */
            "state-dir = relative\n",                /* not absolute */
            "egress = maybe\n",                      /* not one of the names */
            "domain =\n",                            /* no value */
            "config = /etc/x\n",                     /* a command */
            "listen = localhost:3000\n",             /* the check: numeric hosts only */
            "egress = allow\negress-max = listed\n", /* a pair that does not go */
            "tls-cert = /etc/hostname\n",            /* without its key */
            "disk-overcommit = 0.5\n",
            "cgroup-parent = ../x\n",
            "egress-dns = not-an-ip\n",
            "pool-templates = base,,x\n",
            "disk = zfs\n",
            "storage-pool = 100M\n", /* below 256M */
            "storage-pool = 2X\n",
            "storage-pool = 2G \"\"\n",
            "max-layer-size = 65G\n",  /* past 64G */
            "max-layer-size = 512K\n", /* below 1M */
            "registry-mirror = ftp://m.example.com\n",
            "registry-mirror = https://m.example.com/v2/\n", /* a path */
            "insecure-registry = Upper.example.com\n",
            "insecure-registry = r.example.com:123456\n",
            "registry-ca = /nonexistent/ca.pem\n",
            "public-url = sbx.example.com\n",
            "public-url = https://u@sbx.example.com\n",
            "console-dir = relative\n",
            "egress = allow\negress-max = none\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct sbxd_config c = {};
                enum option_command cmd;
                const char *args[] = {"--config", write_conf("bad.conf", bad[i]), NULL};
                int r = parse(&c, &cmd, args);
                if (r != -EINVAL)
                        fprintf(stderr, "accepted: %s", bad[i]);
                CHECK_EQ_INT(r, -EINVAL);
        }
        /* at most SBXD_MAX_REGISTRY_OPTIONS of a list */
        char many[2048] = "";
        for (int i = 0; i <= SBXD_MAX_REGISTRY_OPTIONS; i++)
                snprintf(many + strlen(many), sizeof(many) - strlen(many),
                         "insecure-registry = r%d.example.com\n", i);
        struct sbxd_config c = {};
        enum option_command cmd;
        const char *args[] = {"--config", write_conf("bad.conf", many), NULL};
        CHECK_EQ_INT(parse(&c, &cmd, args), -EINVAL);
        /* a file that is not there, or not a file */
        const char *missing[] = {"--config", "/nonexistent/sbxd.conf", NULL};
        CHECK(parse(&c, &cmd, missing) < 0);
        const char *notfile[] = {"--config", dir, NULL};
        CHECK(parse(&c, &cmd, notfile) < 0);
        /* command-line mistakes */
        const char *twice[] = {"--version", "--help", NULL};
        CHECK_EQ_INT(parse(&c, &cmd, twice), -EINVAL);
        const char *arg[] = {"stray", NULL};
        CHECK_EQ_INT(parse(&c, &cmd, arg), -EINVAL);
        const char *get[] = {"--get", "nope", NULL};
        CHECK_EQ_INT(parse(&c, &cmd, get), -EINVAL);
}

struct seen {
        unsigned applied, pending;
        char last[64];
};

static void on_changed(const struct sbxd_option *o, const char *old_value, const char *new_value,
                       bool applied, void *userdata)
{
        struct seen *s = userdata;
        if (applied)
                s->applied++;
        else
                s->pending++;
        snprintf(s->last, sizeof(s->last), "%s:%s>%s", o->name, old_value, new_value);
}

static void test_reload(void)
{
        const char *conf = write_conf("reload.conf", "max-sandboxes = 10\nstate-dir = /tmp\n");
        struct sbxd_config c = {};
        enum option_command cmd;
        const char *args[] = {"--config", conf, "--create-wait", "5", NULL};
        CHECK_EQ_INT(parse(&c, &cmd, args), 0);
        CHECK_EQ_INT(config_derive_limits(&c), 0);

        /* nothing changed: nothing reported */
        struct seen s = {};
        CHECK_EQ_INT(config_reload(&c, on_changed, &s), 0);
        CHECK_EQ_INT(s.applied + s.pending, 0);

        /* a reloadable option is applied, a restart-only one is not; the command line still
         * wins over the file */
        write_conf("reload.conf", "max-sandboxes = 11\nstate-dir = /tmp\nlisten = 127.0.0.1:1\n"
                                  "create-wait = 9\n");
        s = (struct seen){};
        CHECK_EQ_INT(config_reload(&c, on_changed, &s), 0);
        CHECK_EQ_INT(s.applied, 1);
        CHECK_EQ_INT(s.pending, 1);
        CHECK_EQ_INT(c.max_sandboxes, 11);
        CHECK_STREQ(c.listen, SBXD_DEFAULT_LISTEN);
        CHECK_EQ_INT(c.create_wait_s, 5);

        /* a derived limit set, then left out again: back to the host's value */
        unsigned cpus = c.max_cpus;
        write_conf("reload.conf",
                   "max-sandboxes = 11\nstate-dir = /tmp\nmax-sandbox-cpus = 4096\n");
        s = (struct seen){};
        CHECK_EQ_INT(config_reload(&c, on_changed, &s), 0);
        CHECK_EQ_INT(c.max_cpus, 4096);
        write_conf("reload.conf", "max-sandboxes = 11\nstate-dir = /tmp\n");
        CHECK_EQ_INT(config_reload(&c, on_changed, &s), 0);
        CHECK_EQ_INT(c.max_cpus, cpus);

        /* with a storage pool open (its size set at start, not an option), a reload derives
         * the disk limits from the pool as the start did: nothing is reported changed */
        c.pool_fs_bytes = 8ULL << 30;
        c.max_disk_mb = c.disk_reserve_mb = 0;
        CHECK_EQ_INT(config_derive_limits(&c), 0);
        CHECK_EQ_INT(c.disk_reserve_mb, (8 << 10) * SBXD_DISK_RESERVE_PCT / 100);
        s = (struct seen){};
        CHECK_EQ_INT(config_reload(&c, on_changed, &s), 0);
        CHECK_EQ_INT(s.applied + s.pending, 0);
        CHECK_EQ_INT(c.disk_reserve_mb, (8 << 10) * SBXD_DISK_RESERVE_PCT / 100);

        /* a mistake: nothing changes */
        write_conf("reload.conf", "max-sandboxes = 12\nmax-creates = nope\n");
        s = (struct seen){};
        CHECK_EQ_INT(config_reload(&c, on_changed, &s), -EINVAL);
        CHECK_EQ_INT(s.applied + s.pending, 0);
        CHECK_EQ_INT(c.max_sandboxes, 11);
        config_done(&c);
}

static void test_keys_file(void)
{
        static const char text[] = "# sbx keys\n"
                                   "e2b_00112233445566778899aabbccddeeff00112233\n"
                                   "\n"
                                   "  e2b_ffffffffffffffffffffffffffffffffffffffff  # name=ci "
                                   "created=2025-01-01T00:00:00Z\r\n"
                                   "e2b_FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF\n" /* upper case */
                                   "e2b_0011 # short\n"
                                   "e2b_00112233445566778899aabbccddeeff00112233x\n";
        struct sbx_keys_file f = {};
        CHECK_EQ_INT(sbx_keys_file_parse(text, &f), 0);
        CHECK_EQ_INT(f.n_keys, 2);
        CHECK_EQ_INT(f.n_bad, 3);
        CHECK_STREQ(f.line[1].key, "e2b_00112233445566778899aabbccddeeff00112233");
        CHECK_STREQ(f.line[2].key, "e2b_ffffffffffffffffffffffffffffffffffffffff");
        CHECK_STREQ(f.line[2].label, "name=ci created=2025-01-01T00:00:00Z");
        char *out = NULL;
        CHECK_EQ_INT(sbx_keys_file_format(&f, &out), 0);
        /* the writers keep what they do not understand, blank lines aside */
        CHECK(out && strstr(out, "# sbx keys\n") == out);
        CHECK(strstr(out, "e2b_ffffffffffffffffffffffffffffffffffffffff # name=ci") != NULL);
        CHECK(strstr(out, "e2b_0011 # short\n") != NULL);
        free(out);
        sbx_keys_file_done(&f);

        /* sbxd: the keys in force, read again when asked */
        char keys_path[128], first[API_KEY_LEN + 1];
        snprintf(keys_path, sizeof(keys_path), "%s/keys", dir);
        unlink(keys_path);
        struct keys k;
        CHECK_EQ_INT(keys_load_or_create(dir, &k), 0); /* created with one key */
        CHECK_EQ_INT(k.n, 1);
        CHECK_EQ_INT(keys_first(&k, first), 0);
        CHECK(keys_check(&k, first));
        CHECK(!keys_check(&k, "e2b_ffffffffffffffffffffffffffffffffffffffff"));
        CHECK_EQ_INT(write_file_atomic(keys_path, text, strlen(text), 0600), 0);
        CHECK_EQ_INT(keys_reload(dir, &k), 2);
        CHECK(!keys_check(&k, first)); /* revoked */
        CHECK(keys_check(&k, "e2b_ffffffffffffffffffffffffffffffffffffffff"));
        CHECK(!keys_check(&k, "e2b_FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"));
        /* a file without keys: nothing passes, and there is no first key */
        CHECK_EQ_INT(write_file_atomic(keys_path, "# none\n", 7, 0600), 0);
        CHECK_EQ_INT(keys_reload(dir, &k), 0);
        CHECK(!keys_check(&k, "e2b_ffffffffffffffffffffffffffffffffffffffff"));
        CHECK_EQ_INT(keys_first(&k, first), -ENOKEY);
        /* an unreadable file keeps the keys in force */
        unlink(keys_path);
        CHECK_EQ_INT(keys_reload(dir, &k), -ENOENT);
        keys_done(&k);
}

int main(void)
{
        if (!mkdtemp(dir))
                return 1;
        test_rows();
        test_defaults();
        test_file_and_command_line();
        test_file_mistakes();
        test_reload();
        test_keys_file();
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        (void)!system(cmd);
        return unit_finish("test-options");
}
