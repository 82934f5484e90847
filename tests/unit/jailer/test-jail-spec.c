/* SPDX-License-Identifier: Apache-2.0 */
/* jail_spec_parse(): a good spec, and every way a spec must be refused. */
#include "jail-spec.h"
#include "macros.h"
#include "unit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define GOOD_BODY                                                                                  \
        "\"rootfs\":\"/var/lib/sbx/sandboxes/abc123/rootfs\","                                     \
        "\"socket\":\"/var/lib/sbx/sandboxes/abc123/agent.sock\","                                 \
        "\"layers\":[\"/var/lib/sbx/templates/base/layer\",\"/var/lib/sbx/layers/x\"],"            \
        "\"binds\":[{\"source\":\"/usr\",\"target\":\"/usr\",\"readonly\":true}],"                 \
        "\"agent\":\"/usr/libexec/sbx/sbx-agent\","                                                \
        "\"uid_base\":100000,\"uid_count\":65536,\"cgroup\":\"sbx/abc123\","                       \
        "\"memory_bytes\":1073741824,\"pids_max\":1024,\"cpu_quota_us\":200000,"                   \
        "\"cpu_period_us\":100000,\"disk_bytes\":1073741824,"                                      \
        "\"env\":{\"LANG\":\"C.UTF-8\",\"FOO_1\":\"bar=baz\"}"

static const char good[] = "{\"id\":\"abc123\"," GOOD_BODY "}";

static int parse(const char *json, const char **msg)
{
        struct jail_spec *s = NULL;
        const char *m = NULL;
        int r = jail_spec_parse(json, strlen(json), &s, &m);
        if (msg)
                *msg = m;
        jail_spec_free(s);
        return r;
}

/* good with the first occurrence of `from` replaced by `to`. */
static int parse_edit(const char *from, const char *to)
{
        char buf[4096];
        const char *at = strstr(good, from);
        if (!at) {
                fprintf(stderr, "test bug: %s not in good spec\n", from);
                return 1;
        }
        snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
        const char *msg = NULL;
        int r = parse(buf, &msg);
        if (r == -EINVAL && !msg)
                return 2; /* every refusal must say why */
        return r;
}

static void test_good(void)
{
        struct jail_spec *s = NULL;
        const char *msg = NULL;
        CHECK_EQ_INT(jail_spec_parse(good, strlen(good), &s, &msg), 0);
        if (!s)
                return;
        CHECK_STREQ(s->id, "abc123");
        CHECK_EQ_INT(s->n_layers, 2);
        CHECK_STREQ(s->layers[0], "/var/lib/sbx/templates/base/layer");
        CHECK_EQ_INT(s->n_binds, 1);
        CHECK_EQ_INT(s->binds[0].readonly, 1);
        CHECK_STREQ(s->binds[0].target, "/usr");
        CHECK_EQ_INT(s->uid_base, 100000);
        CHECK_EQ_INT(s->uid_count, 65536);
        CHECK_EQ_INT(s->memory_bytes, 1073741824LL);
        CHECK_EQ_INT(s->cpu_quota_us, 200000);
        CHECK_EQ_INT(s->n_env, 2);
        CHECK_STREQ(s->env[0], "LANG=C.UTF-8");
        CHECK_STREQ(s->env[1], "FOO_1=bar=baz");
        CHECK(s->env[2] == NULL);
        jail_spec_free(s);
}

static void test_optional(void)
{
        /* binds and env may be absent; cpu quota -1 is unlimited; readonly defaults to true. */
        CHECK_EQ_INT(
            parse_edit("\"binds\":[{\"source\":\"/usr\",\"target\":\"/usr\",\"readonly\":true}],",
                       ""),
            0);
        CHECK_EQ_INT(parse_edit(",\"env\":{\"LANG\":\"C.UTF-8\",\"FOO_1\":\"bar=baz\"}", ""), 0);
        CHECK_EQ_INT(parse_edit("\"cpu_quota_us\":200000", "\"cpu_quota_us\":-1"), 0);
        struct jail_spec *s = NULL;
        const char *msg;
        char buf[4096];
        const char *at = strstr(good, ",\"readonly\":true");
        snprintf(buf, sizeof(buf), "%.*s%s", (int)(at - good), good, at + 16);
        CHECK_EQ_INT(jail_spec_parse(buf, strlen(buf), &s, &msg), 0);
        CHECK(s && s->binds[0].readonly == 1);
        jail_spec_free(s);
}

static void test_missing(void)
{
        const char *fields[] = {"\"rootfs\"",       "\"socket\"",        "\"layers\"",
                                "\"agent\"",        "\"uid_base\"",      "\"uid_count\"",
                                "\"cgroup\"",       "\"memory_bytes\"",  "\"pids_max\"",
                                "\"cpu_quota_us\"", "\"cpu_period_us\"", "\"disk_bytes\""};
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                CHECK_EQ_INT(parse_edit(fields[i], "\"unknown_field\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"id\":\"abc123\",", ""), -EINVAL);
        CHECK_EQ_INT(parse("", NULL), -EINVAL);
        CHECK_EQ_INT(parse("[]", NULL), -EINVAL);
        CHECK_EQ_INT(parse("{\"id\":\"abc\"", NULL), -EINVAL);
        CHECK_EQ_INT(parse("null", NULL), -EINVAL);
}

static void test_bad_values(void)
{
        /* ids */
        CHECK_EQ_INT(parse_edit("\"abc123\"", "\"../x\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"abc123\"", "\"ABC\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"abc123\"", "\"\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"abc123\"", "\"a-b\""), -EINVAL);
        CHECK_EQ_INT(
            parse_edit("\"abc123\"",
                       "\"0123456789012345678901234567890123456789012345678901234567890123\""),
            -EINVAL);
        CHECK_EQ_INT(parse_edit("\"abc123\"", "42"), -EINVAL);
        /* paths */
        CHECK_EQ_INT(parse_edit("\"/var/lib/sbx/sandboxes/abc123/rootfs\"", "\"rootfs\""), -EINVAL);
        CHECK_EQ_INT(
            parse_edit("\"/var/lib/sbx/sandboxes/abc123/rootfs\"", "\"/var/lib/sbx/../../etc\""),
            -EINVAL);
        CHECK_EQ_INT(parse_edit("\"/var/lib/sbx/sandboxes/abc123/rootfs\"", "\"/var//x\""),
                     -EINVAL);
        CHECK_EQ_INT(parse_edit("\"/var/lib/sbx/sandboxes/abc123/rootfs\"", "\"/x/\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"/var/lib/sbx/sandboxes/abc123/rootfs\"", "\"/\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"/usr/libexec/sbx/sbx-agent\"", "\"./sbx-agent\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"/var/lib/sbx/layers/x\"", "\"layers/x\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"layers\":[", "\"layers\":[1,"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"/var/lib/sbx/sandboxes/abc123/agent.sock\"",
                                "\"/a/very-long-socket-file-name-that-is-longer-than-sixty-four-"
                                "bytes-in-total.sock\""),
                     -EINVAL);
        /* a long directory is fine: bound through /proc/self/fd */
        CHECK_EQ_INT(parse_edit("\"/var/lib/sbx/sandboxes/abc123/agent.sock\"",
                                "\"/very/long/socket/path/that/does/not/fit/in/sun_path/at/all/"
                                "because/it/is/longer/than/one/hundred/and/eight/bytes/a.sock\""),
                     0);
        /* binds */
        CHECK_EQ_INT(parse_edit("\"target\":\"/usr\"", "\"target\":\"usr\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"target\":\"/usr\"", "\"target\":\"/\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"target\":\"/usr\"", "\"target\":\"/proc/sys\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"target\":\"/usr\"", "\"target\":\"/dev\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"target\":\"/usr\"", "\"target\":\"/.sbx/sbx-agent\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"target\":\"/usr\"", "\"target\":\"/usr/../etc\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"target\":\"/usr\"", "\"target\":\"/devices\""), 0);
        CHECK_EQ_INT(parse_edit("\"readonly\":true", "\"readonly\":1"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"source\":\"/usr\"", "\"source\":\"usr\""), -EINVAL);
        /* cgroup */
        CHECK_EQ_INT(parse_edit("\"sbx/abc123\"", "\"/sbx/abc123\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"sbx/abc123\"", "\"sbx/../x\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"sbx/abc123\"", "\"sbx/cgroup.procs\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"sbx/abc123\"", "\"sbx//x\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"sbx/abc123\"", "\"abc123\""), 0);
        /* env */
        CHECK_EQ_INT(parse_edit("\"LANG\":\"C.UTF-8\"", "\"LA=NG\":\"x\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"LANG\":\"C.UTF-8\"", "\"1X\":\"x\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"LANG\":\"C.UTF-8\"", "\"LANG\":3"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"env\":{", "\"env\":[{"), -EINVAL);
}

static void test_limits(void)
{
        CHECK_EQ_INT(parse_edit("\"uid_base\":100000", "\"uid_base\":0"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"uid_base\":100000", "\"uid_base\":1000"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"uid_base\":100000", "\"uid_base\":-5"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"uid_base\":100000", "\"uid_base\":100000.5"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"uid_base\":100000", "\"uid_base\":4294967000"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"uid_count\":65536", "\"uid_count\":1"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"memory_bytes\":1073741824", "\"memory_bytes\":0"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"memory_bytes\":1073741824", "\"memory_bytes\":-1"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"memory_bytes\":1073741824", "\"memory_bytes\":1e30"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"memory_bytes\":1073741824", "\"memory_bytes\":\"1G\""), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"pids_max\":1024", "\"pids_max\":0"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"pids_max\":1024", "\"pids_max\":99999999999"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"cpu_quota_us\":200000", "\"cpu_quota_us\":0"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"cpu_quota_us\":200000", "\"cpu_quota_us\":-2"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"cpu_period_us\":100000", "\"cpu_period_us\":10"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"cpu_period_us\":100000", "\"cpu_period_us\":2000000"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"disk_bytes\":1073741824", "\"disk_bytes\":1"), -EINVAL);
        CHECK_EQ_INT(parse_edit("\"disk_bytes\":1073741824", "\"disk_bytes\":1e300"), -EINVAL);
        /* upper_on_host: optional boolean */
        CHECK_EQ_INT(parse_edit("\"disk_bytes\":1073741824",
                                "\"disk_bytes\":1073741824,\"upper_on_host\":true"),
                     0);
        CHECK_EQ_INT(parse_edit("\"disk_bytes\":1073741824",
                                "\"disk_bytes\":1073741824,\"upper_on_host\":1"),
                     -EINVAL);
        /* disk_image: optional normalised absolute path, only with upper_on_host */
        CHECK_EQ_INT(parse_edit("\"disk_bytes\":1073741824",
                                "\"disk_bytes\":1073741824,\"upper_on_host\":true,"
                                "\"disk_image\":\"/var/lib/sbx/sandboxes/x/disk.img\""),
                     0);
        CHECK_EQ_INT(parse_edit("\"disk_bytes\":1073741824",
                                "\"disk_bytes\":1073741824,"
                                "\"disk_image\":\"/var/lib/sbx/sandboxes/x/disk.img\""),
                     -EINVAL);
        CHECK_EQ_INT(parse_edit("\"disk_bytes\":1073741824",
                                "\"disk_bytes\":1073741824,\"upper_on_host\":true,"
                                "\"disk_image\":\"disk.img\""),
                     -EINVAL);
        CHECK_EQ_INT(parse_edit("\"disk_bytes\":1073741824",
                                "\"disk_bytes\":1073741824,\"upper_on_host\":true,"
                                "\"disk_image\":\"/a/../b\""),
                     -EINVAL);
}

static void test_validators(void)
{
        CHECK(jail_id_valid("a"));
        CHECK(!jail_id_valid(NULL));
        CHECK(jail_path_valid("/", 1));
        CHECK(!jail_path_valid("/", 0));
        CHECK(!jail_path_valid("/a/./b", 0));
        CHECK(jail_path_valid("/a/.b/c..d", 0));
        CHECK(jail_cgroup_name_valid("sbx/x-1_y"));
        CHECK(!jail_cgroup_name_valid("sbx/"));
        CHECK(!jail_cgroup_name_valid("a/b/c/d/e/f/g/h/i"));
}

int main(void)
{
        test_good();
        test_optional();
        test_missing();
        test_bad_values();
        test_limits();
        test_validators();
        return unit_finish("test-jail-spec");
}
