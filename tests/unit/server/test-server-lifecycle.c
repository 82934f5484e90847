/* SPDX-License-Identifier: Apache-2.0 */
/* Jail spec, jailer status lines, registry (slots, expiry), keys file, rm_rf safety. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "lifecycle/adopt.h"
#include "lifecycle/jail-spawn.h"
#include "core/errors.h"
#include "core/keys.h"
#include "lifecycle/lifecycle.h"
#include "lifecycle/registry.h"
#include "lifecycle/teardown.h"
#include "sandbox-fixture.h"
#include "storage/template.h"
#include "unit.h"

static char tmp[] = "/tmp/test-server-lifecycle.XXXXXX";

static void write_text(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");
        fputs(text, f);
        fclose(f);
}

static void test_status(void)
{
        struct jail_result r;
        CHECK_EQ_INT(jail_parse_status("{\"ok\":true,\"pid\":12345}", &r), 0);
        CHECK_EQ_INT(r.ok, 1);
        CHECK_EQ_INT(r.pid, 12345);
        CHECK_EQ_INT(jail_parse_status("{\"ok\":false,\"step\":\"mount-overlay\",\"errno\":2,"
                                       "\"message\":\"mount overlay: No such file\"}",
                                       &r),
                     0);
        CHECK_EQ_INT(r.ok, 0);
        CHECK_STREQ(r.step, "mount-overlay");
        CHECK_EQ_INT(r.err, 2);
        CHECK_STREQ(r.message, "mount overlay: No such file");
        CHECK_EQ_INT(jail_parse_status("{\"ok\":true}", &r), -EBADMSG);
        CHECK_EQ_INT(jail_parse_status("{\"ok\":true,\"pid\":1}", &r), -EBADMSG);
        CHECK_EQ_INT(jail_parse_status("{\"ok\":true,\"pid\":-3}", &r), -EBADMSG);
        CHECK_EQ_INT(jail_parse_status("garbage", &r), -EBADMSG);
        CHECK_EQ_INT(jail_parse_status("[]", &r), -EBADMSG);
}

static void test_template_and_spec(void)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/templates", tmp);
        mkdir(path, 0700);
        snprintf(path, sizeof(path), "%s/templates/base", tmp);
        mkdir(path, 0700);
        snprintf(path, sizeof(path), "%s/templates/base/template.json", tmp);
        write_text(path,
                   "{\"name\":\"base\",\"layers\":[\"layer\"],\"binds\":[{\"source\":\"/usr\","
                   "\"target\":\"/usr\",\"readonly\":true}],\"cpuCount\":2,\"memoryMB\":512,"
                   "\"envd\":{\"defaultUser\":\"user\",\"defaultWorkdir\":\"/home/user\"}}");
        struct template_info t;
        CHECK_EQ_INT(template_load(tmp, "nosuch", &t), -ENOENT);
        CHECK_EQ_INT(template_load(tmp, "base", &t), 0);
        CHECK_EQ_INT(t.cpu_count, 2);
        CHECK_EQ_INT(t.memory_mb, 512);
        CHECK_EQ_INT(t.disk_mb, TEMPLATE_DEFAULT_DISK_MB);
        CHECK_STREQ(t.default_user, "user");

        struct sbxd_config cfg = {.agent = (char *)"/opt/sbx-agent"};
        struct server srv = {.config = &cfg};
        struct sandbox *s = sandbox_new();
        strcpy(s->id, "abc");
        s->dir = strdup("/state/sandboxes/abc");
        s->slot = 3;
        s->cpu_count = 2;
        s->memory_mb = 512;
        s->disk_mb = 1024;
        struct sbx_jail_spec *spec = NULL;
        const char *why = NULL;
        CHECK_EQ_INT(lifecycle_jail_spec(&srv, s, &t, &spec, &why), 0);
        if (!spec)
                return;
        char want_layer[600];
        snprintf(want_layer, sizeof(want_layer), "%s/templates/base/layer", tmp);
        CHECK_EQ_INT(spec->n_layers, 1);
        CHECK_STREQ(spec->layers[0], want_layer);
        CHECK_STREQ(spec->id, "abc");
        CHECK_STREQ(spec->rootfs, "/state/sandboxes/abc/rootfs");
        CHECK_STREQ(spec->socket, "/state/sandboxes/abc/agent.sock");
        CHECK_STREQ(spec->cgroup, "sbx/abc");
        CHECK_STREQ(spec->agent, "/opt/sbx-agent");
        CHECK_EQ_INT(spec->uid_base, (1 << 20) + 3 * 65536);
        CHECK_EQ_INT(spec->uid_count, 65536);
        CHECK_EQ_INT(spec->memory_bytes, 512LL * 1024 * 1024);
        CHECK_EQ_INT(spec->pids_max, 1024);
        CHECK_EQ_INT(spec->cpu_quota_us, 200000);
        CHECK_EQ_INT(spec->cpu_period_us, 100000);
        CHECK_EQ_INT(spec->disk_bytes, 1024LL * 1024 * 1024);
        CHECK(spec->upper_on_host);
        CHECK(spec->disk_image == NULL);
        CHECK_EQ_INT(spec->n_binds, 1);
        CHECK(spec->n_binds == 1 && spec->binds[0].readonly);
        CHECK(spec->n_env == 1 && strcmp(spec->env[0].name, "PATH") == 0);
        /* What sbxd sends is what the jailer reads back, and accepts. */
        char *text = NULL;
        size_t len = 0;
        struct sbx_jail_spec *back = NULL;
        CHECK_EQ_INT(sbx_jail_spec_encode(spec, &text, &len), 0);
        CHECK_EQ_INT(sbx_jail_spec_decode(text, len, &back, &why), 0);
        CHECK(back && sbx_jail_spec_equal(spec, back));
        sbx_jail_spec_free(back);
        free(text);
        sbx_jail_spec_free(spec);
        spec = NULL;

        /* a template's env reaches the agent's exec without what the loader acts on */
        t.env = cJSON_Parse("{\"APP\":\"1\",\"LD_PRELOAD\":\"/tmp/x.so\",\"LD_AUDIT\":\"a\","
                            "\"GLIBC_TUNABLES\":\"glibc.x=1\",\"PATH\":\"/bin\"}");
        CHECK_EQ_INT(lifecycle_jail_spec(&srv, s, &t, &spec, &why), 0);
        CHECK(spec && spec->n_env == 2);
        for (size_t i = 0; spec && i < spec->n_env; i++)
                CHECK(strcmp(spec->env[i].name, "APP") == 0 ||
                      strcmp(spec->env[i].name, "PATH") == 0);
        sbx_jail_spec_free(spec);
        sandbox_unref(s);
        template_done(&t);

        /* layers may not leave the template dir */
        write_text(path, "{\"layers\":[\"../../etc\"]}");
        CHECK_EQ_INT(template_load(tmp, "base", &t), -EINVAL);
        write_text(path, "{\"layers\":[\"/abs\"]}");
        CHECK_EQ_INT(template_load(tmp, "base", &t), -EINVAL);
        write_text(path, "{\"layers\":[\"l\"],\"binds\":[{\"source\":\"rel\",\"target\":\"/x\"}]}");
        CHECK_EQ_INT(template_load(tmp, "base", &t), -EINVAL);
}

static void test_registry(void)
{
        struct registry *r;
        CHECK_EQ_INT(registry_new(&r), 0);
        int a, b, c;
        CHECK_EQ_INT(registry_slot_acquire(r, &a), 0);
        CHECK_EQ_INT(registry_slot_acquire(r, &b), 0);
        CHECK_EQ_INT(a, 0);
        CHECK_EQ_INT(b, 1);
        registry_slot_release(r, a);
        CHECK_EQ_INT(registry_slot_acquire(r, &c), 0);
        CHECK_EQ_INT(c, 0); /* reused */

        struct sandbox *s1 = sandbox_new(), *s2 = sandbox_new();
        strcpy(s1->id, "one");
        strcpy(s2->id, "two");
        s1->started_us = 10;
        s2->started_us = 5;
        sandbox_set_end_at(s1, (int64_t)time(NULL) + 3600);
        sandbox_set_end_at(s2, (int64_t)time(NULL) - 1);
        CHECK_EQ_INT(registry_add(r, s1), 0);
        CHECK_EQ_INT(registry_add(r, s2), 0);
        CHECK_EQ_INT(registry_add(r, s1), -EEXIST);
        struct sandbox **v;
        size_t n;
        CHECK_EQ_INT(registry_list(r, &v, &n), 0);
        CHECK_EQ_INT(n, 2);
        CHECK_STREQ(v[0]->id, "two"); /* by startedAt */
        for (size_t i = 0; i < n; i++)
                sandbox_unref(v[i]);
        free(v);

        bool pause = true;
        struct sandbox *e = registry_wait_expired(r, &pause);
        CHECK(e == s2);
        CHECK(!pause);
        sandbox_unref(e);
        CHECK_EQ_INT(registry_count(r), 1);
        CHECK(registry_get(r, "two") == NULL);
        struct sandbox *g = registry_get(r, "one");
        CHECK(g == s1);
        registry_set_end_at(r, g, 100, true); /* extend-only: ignored */
        CHECK(sandbox_get_end_at(g) > 100);
        sandbox_unref(g);
        CHECK(registry_take(r, "one") == s1);
        CHECK(registry_take(r, "one") == NULL);
        sandbox_unref(s1); /* registry's ref */
        sandbox_unref(s1);
        sandbox_unref(s2);
        registry_shutdown(r);
        CHECK(registry_wait_expired(r, &pause) == NULL);
        registry_free(r);
}

static void test_keys_file(void)
{
        struct keys k1, k2;
        CHECK_EQ_INT(keys_load_or_create(tmp, &k1), 0);
        CHECK_EQ_INT(k1.n, 1);
        CHECK(key_format_valid(k1.key[0]));
        char path[512];
        snprintf(path, sizeof(path), "%s/keys", tmp);
        struct stat st;
        CHECK_EQ_INT(stat(path, &st), 0);
        CHECK_EQ_INT(st.st_mode & 0777, 0600);
        CHECK_EQ_INT(keys_load_or_create(tmp, &k2), 0);
        CHECK_STREQ(k2.key[0], k1.key[0]); /* stable across starts */
        char text[200];
        snprintf(text, sizeof(text),
                 "%s\n# comment\nbogus\ne2b_0123456789abcdef0123456789abcdef01234567\n", k1.key[0]);
        write_text(path, text);
        CHECK_EQ_INT(keys_load_or_create(tmp, &k2), 0);
        CHECK_EQ_INT(k2.n, 2);
        write_text(path, "junk\n");
        CHECK_EQ_INT(keys_load_or_create(tmp, &k2), -ENOKEY);
}

/* While templates/build-all.sh holds its lock (sbx-templates.service), a template not built
 * yet is "being built", 503 (-EAGAIN) rather than 404; a built one loads as ever. */
static void test_templates_building(void)
{
        struct sbxd_config cfg = {.state_dir = tmp};
        struct server srv = {.config = &cfg};
        struct template_info t;
        char lock[512], err[256] = "";
        snprintf(lock, sizeof(lock), "%s/templates/built", tmp);
        mkdir(lock, 0700);
        snprintf(lock, sizeof(lock), "%s/templates/built/template.json", tmp);
        write_text(lock, "{\"name\":\"built\",\"layers\":[\"layer\"]}");
        snprintf(lock, sizeof(lock), "%s/templates/" TEMPLATE_BUILDING_LOCK, tmp);
        CHECK(!templates_building(tmp)); /* no lock file */
        int fd = open(lock, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        CHECK(fd >= 0);
        CHECK(!templates_building(tmp)); /* a lock file nobody holds: a finished build */
        CHECK_EQ_INT(lifecycle_load_template(&srv, "nosuch", &t, err, sizeof(err)), -ENOENT);
        CHECK(strstr(err, "not found") != NULL);
        CHECK_EQ_INT(flock(fd, LOCK_EX), 0); /* as build-all.sh does */
        CHECK(templates_building(tmp));
        CHECK_EQ_INT(lifecycle_load_template(&srv, "nosuch", &t, err, sizeof(err)), -EAGAIN);
        CHECK(strstr(err, "template 'nosuch' is being built") != NULL);
        CHECK_EQ_INT(api_error_status(-EAGAIN), 503);
        CHECK_EQ_INT(lifecycle_load_template(&srv, "built", &t, err, sizeof(err)), 0);
        template_done(&t);
        close(fd);
        CHECK(!templates_building(tmp));
        unlink(lock);
}

static void test_rm_rf(void)
{
        char victim[512], root[512], p[600];
        snprintf(victim, sizeof(victim), "%s/victim", tmp);
        snprintf(root, sizeof(root), "%s/sb", tmp);
        mkdir(victim, 0700);
        snprintf(p, sizeof(p), "%s/keep", victim);
        write_text(p, "x");
        mkdir(root, 0700);
        snprintf(p, sizeof(p), "%s/rootfs", root);
        mkdir(p, 0700);
        snprintf(p, sizeof(p), "%s/rootfs/a", root);
        mkdir(p, 0700);
        snprintf(p, sizeof(p), "%s/rootfs/a/f", root);
        write_text(p, "y");
        snprintf(p, sizeof(p), "%s/link", root);
        CHECK_EQ_INT(symlink(victim, p), 0);
        snprintf(p, sizeof(p), "%s/rootfs/a/link2", root);
        CHECK_EQ_INT(symlink(victim, p), 0);
        CHECK_EQ_INT(rm_rf(root), 0);
        CHECK(access(root, F_OK) < 0);
        snprintf(p, sizeof(p), "%s/keep", victim);
        CHECK_EQ_INT(access(p, F_OK), 0); /* symlinks were removed, never followed */
        CHECK_EQ_INT(rm_rf(root), 0);     /* idempotent */
        CHECK_EQ_INT(rm_rf(victim), 0);
        /* teardown of something that never had cgroups or processes just removes the dir */
        mkdir(root, 0700);
        CHECK_EQ_INT(teardown_sandbox("nosuchsandboxid", 0, -1, root), 0);
        CHECK(access(root, F_OK) < 0);
        /* an id that would name the parent cgroup and every sandbox's dir (a create that failed
         * before it had an id) is refused, and nothing is removed */
        mkdir(root, 0700);
        static const char *const bad[] = {"", ".", "..", "a/b", NULL};
        for (size_t i = 0; i < 5; i++) {
                CHECK_EQ_INT(teardown_sandbox(bad[i], 0, -1, root), -EINVAL);
                CHECK_EQ_INT(teardown_processes(bad[i], 0, -1, root), -EINVAL);
        }
        CHECK_EQ_INT(access(root, F_OK), 0);
        CHECK_EQ_INT(rm_rf(root), 0);
}

static void test_adopt_record(void)
{
        struct sandbox *s = test_sandbox_new(1700000000654321, "{\"k\":\"v\"}"), *back = NULL;
        s->pid = 4242;
        s->slot = 7;
        s->env_vars = cJSON_Parse("{\"A\":\"b\"}");
        cJSON *rec = sandbox_to_json(s, SHAPE_RECORD);
        char *text = cJSON_Print(rec);
        CHECK_EQ_INT(adopt_parse_record(text, &back), 0);
        CHECK_STREQ(back->id, s->id);
        CHECK_STREQ(back->template_id, "base");
        CHECK_STREQ(back->token, s->token);
        CHECK_EQ_INT(back->pid, 4242);
        CHECK_EQ_INT(back->slot, 7);
        CHECK_EQ_INT(back->started_us, 1700000000654321); /* the order survives a restart */
        CHECK_EQ_INT(sandbox_get_end_at(back), 1700000300);
        CHECK_EQ_INT(back->memory_mb, 1024);
        CHECK_STREQ(cJSON_GetObjectItem(back->metadata, "k")->valuestring, "v");
        CHECK_STREQ(cJSON_GetObjectItem(back->env_vars, "A")->valuestring, "b");
        free(text);
        cJSON_Delete(rec);
        sandbox_unref(back);
        sandbox_unref(s);

        CHECK_EQ_INT(adopt_parse_record("{}", &back), -EBADMSG);
        CHECK_EQ_INT(adopt_parse_record("garbage", &back), -EBADMSG);
        CHECK_EQ_INT(adopt_parse_record("{\"sandboxID\":\"../x\",\"templateID\":\"base\","
                                        "\"envdAccessToken\":\"x\",\"pid\":5,\"uidSlot\":0}",
                                        &back),
                     -EBADMSG);
}

static void test_started(void)
{
        struct sandbox *a = sandbox_new(), *b = sandbox_new(), *c = sandbox_new();
        sandbox_set_started_now(a);
        sandbox_set_started_now(b);
        CHECK(b->started_us > a->started_us); /* never a tie, however close */
        /* an adopted record from the future (a clock step back): later stamps stay after it */
        cJSON *rec = cJSON_CreateObject();
        cJSON_AddNumberToObject(rec, "startedAtUs", (double)(b->started_us + 3600000000));
        sandbox_set_started_from_record(c, rec);
        CHECK_EQ_INT(c->started_us, b->started_us + 3600000000);
        sandbox_set_started_now(a);
        CHECK(a->started_us > c->started_us);
        cJSON_Delete(rec);
        /* an older record holds seconds only */
        rec = cJSON_Parse("{\"startedAtUnix\":1700000000}");
        sandbox_set_started_from_record(c, rec);
        CHECK_EQ_INT(c->started_us, 1700000000000000);
        CHECK_EQ_INT(sandbox_started_s(c), 1700000000);
        cJSON_Delete(rec);
        rec = cJSON_Parse("{\"startedAtUs\":-5,\"startedAtUnix\":\"x\"}");
        sandbox_set_started_from_record(c, rec);
        CHECK_EQ_INT(c->started_us, 0);
        cJSON_Delete(rec);
        sandbox_unref(a);
        sandbox_unref(b);
        sandbox_unref(c);
}

int main(void)
{
        test_started();
        if (!mkdtemp(tmp))
                return 2;
        test_status();
        test_template_and_spec();
        test_templates_building();
        test_registry();
        test_keys_file();
        test_rm_rf();
        test_adopt_record();
        rm_rf(tmp);
        return unit_finish("test-server-lifecycle");
}
