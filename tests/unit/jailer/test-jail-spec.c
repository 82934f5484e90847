/* SPDX-License-Identifier: Apache-2.0 */
/* The jail spec (api/jail-spec.h): a good spec, every way a spec must be refused and with which
 * message, and encode → decode round trips of minimal and maximal specs. */
#include "jail-spec.h"
#include "macros.h"
#include "unit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        struct sbx_jail_spec *s = NULL;
        const char *m = NULL;
        int r = sbx_jail_spec_decode(json, strlen(json), &s, &m);
        if (msg)
                *msg = m;
        sbx_jail_spec_free(s);
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
        struct sbx_jail_spec *s = NULL;
        const char *msg = NULL;
        CHECK_EQ_INT(sbx_jail_spec_decode(good, strlen(good), &s, &msg), 0);
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
        CHECK_STREQ(s->env[0].name, "LANG");
        CHECK_STREQ(s->env[0].value, "C.UTF-8");
        CHECK_STREQ(s->env[1].name, "FOO_1");
        CHECK_STREQ(s->env[1].value, "bar=baz");
        CHECK_EQ_INT(s->upper_on_host, 0);
        CHECK(s->disk_image == NULL);
        sbx_jail_spec_free(s);
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
        struct sbx_jail_spec *s = NULL;
        const char *msg;
        char buf[4096];
        const char *at = strstr(good, ",\"readonly\":true");
        snprintf(buf, sizeof(buf), "%.*s%s", (int)(at - good), good, at + 16);
        CHECK_EQ_INT(sbx_jail_spec_decode(buf, strlen(buf), &s, &msg), 0);
        CHECK(s && s->binds[0].readonly == 1);
        sbx_jail_spec_free(s);
}

/* runtime: optional, a normalised absolute path, and it round-trips. */
static void test_runtime(void)
{
        const char *with = "\"agent\":\"/usr/libexec/sbx/sbx-agent\","
                           "\"runtime\":\"/usr/libexec/sbx/runtime\",";
        char buf[4096];
        const char *at = strstr(good, "\"agent\":");
        const char *end = strchr(at, ',') + 1;
        snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - good), good, with, end);
        struct sbx_jail_spec *s = NULL, *back = NULL;
        const char *msg = NULL;
        CHECK_EQ_INT(sbx_jail_spec_decode(buf, strlen(buf), &s, &msg), 0);
        CHECK(s && s->runtime && strcmp(s->runtime, "/usr/libexec/sbx/runtime") == 0);
        char *text = NULL;
        size_t len = 0;
        CHECK_EQ_INT(s ? sbx_jail_spec_encode(s, &text, &len) : -1, 0);
        CHECK_EQ_INT(text ? sbx_jail_spec_decode(text, len, &back, &msg) : -1, 0);
        CHECK(s && back && sbx_jail_spec_equal(s, back));
        free(text);
        sbx_jail_spec_free(back);
        sbx_jail_spec_free(s);
        /* absent: NULL, and the encoder leaves it out */
        CHECK_EQ_INT(sbx_jail_spec_decode(good, strlen(good), &s, &msg), 0);
        CHECK(s && !s->runtime);
        sbx_jail_spec_free(s);
        snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - good), good,
                 "\"agent\":\"/usr/libexec/sbx/sbx-agent\",\"runtime\":\"rt/..\",", end);
        CHECK_EQ_INT(sbx_jail_spec_decode(buf, strlen(buf), &s, &msg), -EINVAL);
        CHECK_STREQ(msg, "runtime: must be an absolute normalised path (no '.', '..', '//', "
                         "trailing '/')");
        snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - good), good,
                 "\"agent\":\"/usr/libexec/sbx/sbx-agent\",\"runtime\":7,", end);
        CHECK_EQ_INT(sbx_jail_spec_decode(buf, strlen(buf), &s, &msg), -EINVAL);
        CHECK_STREQ(msg, "runtime: missing or not a string");
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
        static const struct {
                const char *from, *to;
                int want;
        } cases[] = {
            /* ids */
            {"\"abc123\"", "\"../x\"", -EINVAL},
            {"\"abc123\"", "\"ABC\"", -EINVAL},
            {"\"abc123\"", "\"\"", -EINVAL},
            {"\"abc123\"", "\"a-b\"", -EINVAL},
            {"\"abc123\"", "\"0123456789012345678901234567890123456789012345678901234567890123\"",
             -EINVAL},
            {"\"abc123\"", "42", -EINVAL},
            /* paths */
            {"\"/var/lib/sbx/sandboxes/abc123/rootfs\"", "\"rootfs\"", -EINVAL},
            {"\"/var/lib/sbx/sandboxes/abc123/rootfs\"", "\"/var/lib/sbx/../../etc\"", -EINVAL},
            {"\"/var/lib/sbx/sandboxes/abc123/rootfs\"", "\"/var//x\"", -EINVAL},
            {"\"/var/lib/sbx/sandboxes/abc123/rootfs\"", "\"/x/\"", -EINVAL},
            {"\"/var/lib/sbx/sandboxes/abc123/rootfs\"", "\"/\"", -EINVAL},
            {"\"/usr/libexec/sbx/sbx-agent\"", "\"./sbx-agent\"", -EINVAL},
            {"\"/var/lib/sbx/layers/x\"", "\"layers/x\"", -EINVAL},
            {"\"layers\":[", "\"layers\":[1,", -EINVAL},
            {"\"/var/lib/sbx/sandboxes/abc123/agent.sock\"",
             "\"/a/very-long-socket-file-name-that-is-longer-than-sixty-four-"
             "bytes-in-total.sock\"",
             -EINVAL},
            /* a long directory is fine: bound through /proc/self/fd */
            {"\"/var/lib/sbx/sandboxes/abc123/agent.sock\"",
             "\"/very/long/socket/path/that/does/not/fit/in/sun_path/at/all/"
             "because/it/is/longer/than/one/hundred/and/eight/bytes/a.sock\"",
             0},
            /* binds */
            {"\"target\":\"/usr\"", "\"target\":\"usr\"", -EINVAL},
            {"\"target\":\"/usr\"", "\"target\":\"/\"", -EINVAL},
            {"\"target\":\"/usr\"", "\"target\":\"/proc/sys\"", -EINVAL},
            {"\"target\":\"/usr\"", "\"target\":\"/dev\"", -EINVAL},
            {"\"target\":\"/usr\"", "\"target\":\"/.sbx/sbx-agent\"", -EINVAL},
            {"\"target\":\"/usr\"", "\"target\":\"/usr/../etc\"", -EINVAL},
            {"\"target\":\"/usr\"", "\"target\":\"/devices\"", 0},
            {"\"readonly\":true", "\"readonly\":1", -EINVAL},
            {"\"source\":\"/usr\"", "\"source\":\"usr\"", -EINVAL},
            /* cgroup */
            {"\"sbx/abc123\"", "\"/sbx/abc123\"", -EINVAL},
            {"\"sbx/abc123\"", "\"sbx/../x\"", -EINVAL},
            {"\"sbx/abc123\"", "\"sbx/cgroup.procs\"", -EINVAL},
            {"\"sbx/abc123\"", "\"sbx//x\"", -EINVAL},
            {"\"sbx/abc123\"", "\"abc123\"", 0},
            /* env */
            {"\"LANG\":\"C.UTF-8\"", "\"LA=NG\":\"x\"", -EINVAL},
            {"\"LANG\":\"C.UTF-8\"", "\"1X\":\"x\"", -EINVAL},
            {"\"LANG\":\"C.UTF-8\"", "\"LANG\":3", -EINVAL},
            {"\"env\":{", "\"env\":[{", -EINVAL},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                unit_case = cases[i].to;
                CHECK_EQ_INT(parse_edit(cases[i].from, cases[i].to), cases[i].want);
        }
        unit_case = NULL;
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

/* The message a refused edit of good gets (NULL when accepted). */
static const char *edit_msg(const char *from, const char *to)
{
        static char buf[8192];
        const char *at = strstr(good, from);
        if (!at)
                return "test bug: edit not found";
        snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
        const char *msg = NULL;
        return parse(buf, &msg) == -EINVAL ? msg : NULL;
}

/* Hostile inputs get the message that names what is wrong (the jailer's status line carries
 * it as "invalid spec: <message>"). */
static void test_messages(void)
{
        const char *m;
        CHECK_STREQ(edit_msg("\"abc123\"", "\"../x\""), "id must match [a-z0-9]{1,63}");
        CHECK_STREQ(edit_msg("\"id\":\"abc123\"", "\"id\":1"), "id: missing or not a string");
        CHECK_STREQ(edit_msg("\"/var/lib/sbx/sandboxes/abc123/rootfs\"", "\"/a/../b\""),
                    "rootfs: must be an absolute normalised path (no '.', '..', '//', trailing "
                    "'/')");
        CHECK_STREQ(edit_msg("\"agent\":\"/usr/libexec/sbx/sbx-agent\"", "\"agent\":null"),
                    "agent: missing or not a string");
        CHECK_STREQ(edit_msg("\"sbx/abc123\"", "\"sbx/../x\""),
                    "cgroup must be a relative name of [A-Za-z0-9_-] components");
        CHECK_STREQ(edit_msg("\"layers\":[", "\"layers\":[\"rel\","),
                    "layers: each layer must be an absolute normalised path");
        CHECK_STREQ(edit_msg("\"layers\":[\"/var/lib/sbx/templates/base/layer\",\"/var/lib/sbx/"
                             "layers/x\"]",
                             "\"layers\":[]"),
                    "layers must be an array of 1..64 paths");
        CHECK_STREQ(edit_msg("\"target\":\"/usr\"", "\"target\":\"/proc\""),
                    "binds: target must be an absolute normalised path, not /, /proc, /dev, /sys "
                    "or /.sbx");
        CHECK_STREQ(edit_msg("\"target\":\"/usr\"", "\"target\":7"),
                    "target: missing or not a string");
        CHECK_STREQ(edit_msg("\"source\":\"/usr\"", "\"source\":\"/usr/\""),
                    "source: must be an absolute normalised path (no '.', '..', '//', trailing "
                    "'/')");
        CHECK_STREQ(edit_msg("\"readonly\":true", "\"readonly\":\"yes\""),
                    "binds: each bind is {source, target, readonly: bool}");
        CHECK_STREQ(
            edit_msg("\"binds\":[{\"source\":\"/usr\",\"target\":\"/usr\",\"readonly\":true}]",
                     "\"binds\":\"x\""),
            "binds must be an array of at most 32 objects");
        CHECK_STREQ(edit_msg("\"LANG\":\"C.UTF-8\"", "\"LANG\":true"),
                    "env: keys are [A-Za-z_][A-Za-z0-9_]*, values strings <= 32 KiB");
        CHECK_STREQ(edit_msg("\"uid_base\":100000", "\"uid_base\":1e300"),
                    "uid_base: not an integer or out of range");
        CHECK_STREQ(edit_msg("\"uid_base\":100000", "\"uid_base\":65535"),
                    "uid_base: not an integer or out of range");
        CHECK_STREQ(edit_msg("\"uid_base\":100000", "\"uid_base\":4294967000"),
                    "uid_base + uid_count overflows the uid space");
        CHECK_STREQ(edit_msg("\"pids_max\":1024", "\"pids_max\":\"1024\""),
                    "pids_max: missing or not a number");
        CHECK_STREQ(edit_msg("\"cpu_quota_us\":200000", "\"cpu_quota_us\":999"),
                    "cpu_quota_us must be -1 (unlimited) or >= 1000");
        CHECK_STREQ(edit_msg("\"cpu_quota_us\":200000", "\"cpu_quota_us\":-1e300"),
                    "cpu_quota_us: not an integer or out of range");
        CHECK_STREQ(edit_msg("\"disk_bytes\":1073741824", "\"disk_bytes\":1073741824.5"),
                    "disk_bytes: not an integer or out of range");
        CHECK_STREQ(edit_msg("\"disk_bytes\":1073741824",
                             "\"disk_bytes\":1073741824,\"upper_on_host\":\"true\""),
                    "upper_on_host must be a boolean");
        CHECK_STREQ(edit_msg("\"disk_bytes\":1073741824",
                             "\"disk_bytes\":1073741824,\"disk_image\":\"/x/disk.img\""),
                    "disk_image needs upper_on_host");
        CHECK_STREQ(edit_msg("\"disk_bytes\":1073741824",
                             "\"disk_bytes\":1073741824,\"upper_on_host\":true,"
                             "\"upper_subvol\":\"/p/sandboxes/x\""),
                    "upper_subvol excludes upper_on_host and disk_image");
        CHECK_STREQ(edit_msg("\"disk_bytes\":1073741824",
                             "\"disk_bytes\":1073741824,\"upper_subvol\":\"p/x\""),
                    "upper_subvol: must be an absolute normalised path (no '.', '..', '//', "
                    "trailing '/')");
        CHECK_STREQ(edit_msg("\"disk_bytes\":1073741824",
                             "\"disk_bytes\":1073741824,\"upper_on_host\":true,\"disk_image\":1"),
                    "disk_image: missing or not a string");
        /* An escaped NUL would cut a string short ("/a\u0000/../etc" read as "/a"). */
        CHECK_STREQ(edit_msg("\"/usr/libexec/sbx/sbx-agent\"", "\"/usr/libexec\\u0000/../x\""),
                    "spec: strings may not hold a NUL character");
        CHECK_STREQ(edit_msg("\"C.UTF-8\"", "\"C\\u0000\""),
                    "spec: strings may not hold a NUL character");
        /* A raw NUL inside a string too (cJSON takes control bytes there). */
        {
                char raw[sizeof(good)];
                memcpy(raw, good, sizeof(good));
                char *at = strstr(raw, "sbx-agent");
                *at = 0; /* "/usr/libexec/sbx/<NUL>bx-agent" */
                struct sbx_jail_spec *s = NULL;
                CHECK_EQ_INT(sbx_jail_spec_decode(raw, sizeof(good) - 1, &s, &m), -EINVAL);
                CHECK_STREQ(m, "spec: strings may not hold a NUL character");
                CHECK(s == NULL);
        }
        /* ... but an escaped backslash followed by "u0000" is only text. */
        CHECK(edit_msg("\"C.UTF-8\"", "\"C\\\\u0000\"") == NULL);
        const char *msg = NULL;
        CHECK_EQ_INT(parse("[1]", &msg), -EINVAL);
        CHECK_STREQ(msg, "spec is not a JSON object");
        size_t big = SBX_JAIL_SPEC_MAX + 1;
        char *huge = malloc(big + 1);
        if (huge) {
                memset(huge, ' ', big);
                huge[0] = '{';
                huge[big - 1] = '}';
                huge[big] = 0;
                struct sbx_jail_spec *s = NULL;
                CHECK_EQ_INT(sbx_jail_spec_decode(huge, big, &s, &m), -EINVAL);
                CHECK_STREQ(m, "spec too large");
                CHECK(s == NULL);
                free(huge);
        }
        /* Unknown fields are ignored, and so is what follows the object (as before). */
        CHECK(edit_msg("\"id\":", "\"future_field\":{\"x\":[1]},\"id\":") == NULL);
        CHECK_EQ_INT(parse_edit("\"bar=baz\"}}", "\"bar=baz\"}} trailing"), 0);
}

static char *xstrdup(const char *s)
{
        char *d = strdup(s);
        if (!d)
                abort();
        return d;
}

/* The smallest spec the decoder takes: one layer, no binds, no env, defaults elsewhere. */
static struct sbx_jail_spec *minimal_spec(void)
{
        struct sbx_jail_spec *s = calloc(1, sizeof(*s));
        if (!s)
                abort();
        s->id = xstrdup("a");
        s->rootfs = xstrdup("/r");
        s->socket = xstrdup("/s");
        s->agent = xstrdup("/a");
        s->cgroup = xstrdup("c");
        s->layers = calloc(1, sizeof(char *));
        s->layers[0] = xstrdup("/l");
        s->n_layers = 1;
        s->uid_base = SBX_JAIL_UID_BASE_MIN;
        s->uid_count = SBX_JAIL_UID_COUNT_MIN;
        s->memory_bytes = SBX_JAIL_MEMORY_MIN;
        s->pids_max = SBX_JAIL_PIDS_MIN;
        s->cpu_quota_us = -1;
        s->cpu_period_us = SBX_JAIL_CPU_PERIOD_MIN;
        s->disk_bytes = SBX_JAIL_DISK_MIN;
        return s;
}

/* A path of exactly n bytes: "/xxx.../xxx". */
static char *long_path(size_t n, char fill)
{
        char *p = malloc(n + 1);
        if (!p)
                abort();
        memset(p, fill, n);
        for (size_t i = 0; i < n; i += 100)
                p[i] = '/';
        p[n] = 0;
        return p;
}

/* Every list at its maximum, every bound at its top, every optional field set. */
static struct sbx_jail_spec *maximal_spec(void)
{
        struct sbx_jail_spec *s = calloc(1, sizeof(*s));
        if (!s)
                abort();
        s->id = xstrdup("abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0");
        s->rootfs = long_path(SBX_JAIL_PATH_MAX, 'r');
        /* a long dir (bound through /proc/self/fd) and a 64-byte name */
        char *sock = long_path(SBX_JAIL_PATH_MAX, 's');
        memset(sock + SBX_JAIL_PATH_MAX - 65, 'n', 65);
        sock[SBX_JAIL_PATH_MAX - 65] = '/';
        s->socket = sock;
        s->agent = long_path(SBX_JAIL_PATH_MAX, 'a');
        s->cgroup = malloc(SBX_JAIL_CGROUP_MAX + 1);
        memset(s->cgroup, 'C', SBX_JAIL_CGROUP_MAX);
        for (int i = 1; i < SBX_JAIL_CGROUP_DEPTH; i++)
                s->cgroup[i * 30] = '/';
        s->cgroup[SBX_JAIL_CGROUP_MAX] = 0;
        s->layers = calloc(SBX_JAIL_LAYERS_MAX, sizeof(char *));
        for (size_t i = 0; i < SBX_JAIL_LAYERS_MAX; i++) {
                char b[64];
                snprintf(b, sizeof(b), "/var/lib/sbx/layers/%zu-\"quoted\"-\xc3\xa9", i);
                s->layers[s->n_layers++] = xstrdup(b);
        }
        s->binds = calloc(SBX_JAIL_BINDS_MAX, sizeof(*s->binds));
        for (size_t i = 0; i < SBX_JAIL_BINDS_MAX; i++) {
                char b[64];
                snprintf(b, sizeof(b), "/host/%zu", i);
                s->binds[i].source = xstrdup(b);
                snprintf(b, sizeof(b), "/mnt/b%zu", i);
                s->binds[i].target = xstrdup(b);
                s->binds[i].readonly = i % 2;
                s->n_binds++;
        }
        s->volumes = calloc(SBX_JAIL_VOLUMES_MAX, sizeof(*s->volumes));
        for (size_t i = 0; i < SBX_JAIL_VOLUMES_MAX; i++) {
                char b[64];
                snprintf(b, sizeof(b), "/var/lib/sbx/volumes/%zu/mnt", i);
                s->volumes[i].source = xstrdup(b);
                snprintf(b, sizeof(b), "/mnt/v%zu", i);
                s->volumes[i].target = xstrdup(b);
                s->n_volumes++;
        }
        s->env = calloc(SBX_JAIL_ENV_MAX, sizeof(*s->env));
        for (size_t i = 0; i < SBX_JAIL_ENV_MAX; i++) {
                char b[300];
                memset(b, 'K', SBX_JAIL_ENV_NAME_MAX);
                snprintf(b + SBX_JAIL_ENV_NAME_MAX - 4, 5, "%04zu", i);
                s->env[i].name = xstrdup(i == 0 ? "_" : b);
                /* Values at their maximum for some only: all 256 would pass SBX_JAIL_SPEC_MAX,
                 * the bound on the whole that binds first. */
                size_t vl = i < 16 ? SBX_JAIL_ENV_VALUE_MAX : 64;
                s->env[i].value = malloc(vl + 1);
                memset(s->env[i].value, 'v', vl);
                memcpy(s->env[i].value, "\\\"\n\t\x01", 5); /* escapes survive */
                s->env[i].value[vl] = 0;
                s->n_env++;
        }
        s->uid_base = 4294967295u - SBX_JAIL_UID_COUNT_MIN;
        s->uid_count = SBX_JAIL_UID_COUNT_MIN;
        s->memory_bytes = SBX_JAIL_MEMORY_MAX;
        s->pids_max = SBX_JAIL_PIDS_MAX;
        s->cpu_quota_us = SBX_JAIL_CPU_QUOTA_MAX;
        s->cpu_period_us = SBX_JAIL_CPU_PERIOD_MAX;
        s->disk_bytes = SBX_JAIL_DISK_MAX;
        s->upper_on_host = true;
        s->disk_image = long_path(SBX_JAIL_PATH_MAX, 'd');
        s->egress = calloc(1, sizeof(*s->egress));
        if (s->egress) {
                static const uint8_t a4[4] = {10, 200, 63, 254}, g4[4] = {10, 200, 63, 253};
                strcpy(s->egress->host_if, "sbxe4095abcdefg");
                memcpy(s->egress->addr4, a4, 4);
                memcpy(s->egress->gw4, g4, 4);
                s->egress->prefix4 = 30;
                s->egress->addr6[0] = s->egress->gw6[0] = 0xfd;
                s->egress->addr6[15] = 2;
                s->egress->gw6[15] = 1;
                s->egress->prefix6 = 64;
        }
        return s;
}

/* The egress member (api/jail-egress.h): accepted as sbxd writes it, refused otherwise. */
static void test_egress(void)
{
        static const char ok[] =
            "\"egress\":{\"host_if\":\"sbxe7\",\"addr4\":\"10.200.0.30/30\","
            "\"gw4\":\"10.200.0.29\",\"addr6\":\"fd73::2/64\",\"gw6\":\"fd73::1\"}";
        char buf[512];
        snprintf(buf, sizeof(buf), "\"disk_bytes\":1073741824,%s", ok);
        CHECK_EQ_INT(parse_edit("\"disk_bytes\":1073741824", buf), 0);
        CHECK_EQ_INT(
            parse_edit("\"disk_bytes\":1073741824", "\"disk_bytes\":1073741824,\"egress\":null"),
            0);
        static const char *const bad[] = {
            "\"egress\":1",
            "\"egress\":{}",
            "\"egress\":{\"host_if\":\"sbxe7-x\",\"addr4\":\"10.200.0.30/"
            "30\",\"gw4\":\"10.200.0.29\","
            "\"addr6\":\"fd73::2/64\",\"gw6\":\"fd73::1\"}",
            "\"egress\":{\"host_if\":\"sbxe1234567890abc\",\"addr4\":\"10.200.0.30/30\",\"gw4\":"
            "\"10.200.0.29\",\"addr6\":\"fd73::2/64\",\"gw6\":\"fd73::1\"}",
            "\"egress\":{\"host_if\":\"sbxe7\",\"addr4\":\"10.200.0.30\",\"gw4\":\"10.200.0.29\","
            "\"addr6\":\"fd73::2/64\",\"gw6\":\"fd73::1\"}",
            "\"egress\":{\"host_if\":\"sbxe7\",\"addr4\":\"10.200.0.30/"
            "31\",\"gw4\":\"10.200.0.29\","
            "\"addr6\":\"fd73::2/64\",\"gw6\":\"fd73::1\"}",
            "\"egress\":{\"host_if\":\"sbxe7\",\"addr4\":\"10.200.0.30/"
            "30\",\"gw4\":\"10.200.1.29\","
            "\"addr6\":\"fd73::2/64\",\"gw6\":\"fd73::1\"}",
            "\"egress\":{\"host_if\":\"sbxe7\",\"addr4\":\"10.200.0.30/"
            "30\",\"gw4\":\"10.200.0.30\","
            "\"addr6\":\"fd73::2/64\",\"gw6\":\"fd73::1\"}",
            "\"egress\":{\"host_if\":\"sbxe7\",\"addr4\":\"10.200.0.30/"
            "30\",\"gw4\":\"10.200.0.29\","
            "\"addr6\":\"fd73::2/48\",\"gw6\":\"fd73::1\"}",
            "\"egress\":{\"host_if\":\"sbxe7\",\"addr4\":\"10.200.0.30/"
            "30\",\"gw4\":\"10.200.0.29\","
            "\"addr6\":\"fd73::2/64\",\"gw6\":\"fd74::1\"}",
            "\"egress\":{\"host_if\":\"sbxe7\",\"addr4\":\"10.200.0.30/"
            "30\",\"gw4\":\"10.200.0.29\","
            "\"addr6\":\"fd73::2/64\"}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                snprintf(buf, sizeof(buf), "\"disk_bytes\":1073741824,%s", bad[i]);
                int r = parse_edit("\"disk_bytes\":1073741824", buf);
                CHECK_EQ_INT(r, -EINVAL);
                if (r != -EINVAL)
                        fprintf(stderr, "accepted: %s\n", bad[i]);
        }
        snprintf(buf, sizeof(buf), "\"disk_bytes\":1073741824,%s", bad[2]);
        CHECK_STREQ(edit_msg("\"disk_bytes\":1073741824", buf),
                    "egress: host_if must match [a-z0-9]{1,15}");
}

/* encode → decode gives the same spec, and encoding that gives the same text. */
static void round_trip(struct sbx_jail_spec *in, const char *what)
{
        const char *msg = "";
        CHECK_EQ_INT(sbx_jail_spec_validate(in, &msg), 0);
        char *text = NULL, *again = NULL;
        size_t len = 0, len2 = 0;
        CHECK_EQ_INT(sbx_jail_spec_encode(in, &text, &len), 0);
        CHECK(text && len == strlen(text) && len <= SBX_JAIL_SPEC_MAX);
        struct sbx_jail_spec *out = NULL;
        int r = text ? sbx_jail_spec_decode(text, len, &out, &msg) : -1;
        if (r != 0)
                fprintf(stderr, "%s: decode: %s\n", what, msg);
        CHECK_EQ_INT(r, 0);
        CHECK(out && sbx_jail_spec_equal(in, out));
        CHECK(out && sbx_jail_spec_encode(out, &again, &len2) == 0 && len2 == len &&
              memcmp(text, again, len) == 0);
        free(text);
        free(again);
        sbx_jail_spec_free(out);
        sbx_jail_spec_free(in);
}

static void test_round_trip(void)
{
        test_egress();
        round_trip(minimal_spec(), "minimal");
        round_trip(maximal_spec(), "maximal");

        /* One step past a bound is refused by validate (as by the decoder). */
        struct sbx_jail_spec *s = maximal_spec();
        const char *msg = NULL;
        s->disk_bytes++;
        CHECK_EQ_INT(sbx_jail_spec_validate(s, &msg), -EINVAL);
        CHECK_STREQ(msg, "disk_bytes: not an integer or out of range");
        s->disk_bytes--;
        s->uid_base++;
        CHECK_EQ_INT(sbx_jail_spec_validate(s, &msg), -EINVAL);
        CHECK_STREQ(msg, "uid_base + uid_count overflows the uid space");
        s->uid_base--;
        s->upper_on_host = false;
        CHECK_EQ_INT(sbx_jail_spec_validate(s, &msg), -EINVAL);
        CHECK_STREQ(msg, "disk_image needs upper_on_host");
        s->upper_on_host = true;
        s->id[0] = 'A';
        CHECK_EQ_INT(sbx_jail_spec_validate(s, &msg), -EINVAL);
        CHECK_STREQ(msg, "id must match [a-z0-9]{1,63}");
        sbx_jail_spec_free(s);

        /* The encoder refuses what it could not write or the decoder not read back exactly. */
        s = minimal_spec();
        char *text = NULL;
        size_t len;
        free(s->cgroup);
        s->cgroup = NULL;
        CHECK_EQ_INT(sbx_jail_spec_encode(s, &text, &len), -EINVAL);
        s->cgroup = xstrdup("c");
        s->memory_bytes = (1ULL << 53) + 2;
        CHECK_EQ_INT(sbx_jail_spec_encode(s, &text, &len), -EINVAL);
        CHECK(text == NULL);
        /* ... but encodes what the decoder will refuse: the jailer says why. */
        s->memory_bytes = 1;
        CHECK_EQ_INT(sbx_jail_spec_encode(s, &text, &len), 0);
        struct sbx_jail_spec *out = NULL;
        CHECK_EQ_INT(sbx_jail_spec_decode(text, len, &out, &msg), -EINVAL);
        CHECK_STREQ(msg, "memory_bytes: not an integer or out of range");
        free(text);
        sbx_jail_spec_free(s);
}

/* The spec with volumes (a "volumes" member before "agent"): decode status and message. */
static int parse_volumes(const char *volumes, const char **msg)
{
        char buf[4096];
        const char *at = strstr(good, "\"agent\"");
        snprintf(buf, sizeof(buf), "%.*s\"volumes\":%s,%s", (int)(at - good), good, volumes, at);
        static char copy[256];
        const char *m = NULL;
        struct sbx_jail_spec *s = NULL;
        int r = sbx_jail_spec_decode(buf, strlen(buf), &s, &m);
        snprintf(copy, sizeof(copy), "%s", r < 0 && m ? m : "");
        *msg = copy;
        if (r == 0 && (s->n_volumes != 2 || strcmp(s->volumes[1].target, "/data") != 0))
                r = 1;
        sbx_jail_spec_free(s);
        return r;
}

static void test_volumes(void)
{
        const char *msg;
        CHECK_EQ_INT(parse_volumes("[{\"source\":\"/var/lib/sbx/volumes/v1/mnt\",\"target\":"
                                   "\"/mnt/a\"},{\"source\":\"/s/v2\",\"target\":\"/data\"}]",
                                   &msg),
                     0);
        CHECK_EQ_INT(parse_volumes("null", &msg), 1); /* none: decoded, n_volumes 0 */
        CHECK_EQ_INT(parse_volumes("{}", &msg), -EINVAL);
        CHECK_STREQ(msg, "volumes must be an array of at most 16 objects");
        CHECK_EQ_INT(parse_volumes("[7]", &msg), -EINVAL);
        CHECK_STREQ(msg, "volumes: each volume is {source, target}");
        CHECK_EQ_INT(parse_volumes("[{\"source\":\"/s\"}]", &msg), -EINVAL);
        CHECK_STREQ(msg, "target: missing or not a string");
        CHECK_EQ_INT(parse_volumes("[{\"source\":\"s\",\"target\":\"/t\"}]", &msg), -EINVAL);
        CHECK_STREQ(msg, "source: must be an absolute normalised path (no '.', '..', '//', "
                         "trailing '/')");
        CHECK_EQ_INT(parse_volumes("[{\"source\":\"/s\",\"target\":\"/dev/shm\"}]", &msg), -EINVAL);
        CHECK_STREQ(msg, "volumes: target must be an absolute normalised path, not /, /proc, "
                         "/dev, /sys or /.sbx");
        CHECK_EQ_INT(parse_volumes("[{\"source\":\"/s\",\"target\":\"/a/../b\"}]", &msg), -EINVAL);
        CHECK_EQ_INT(parse_volumes("[{\"source\":\"/s\",\"target\":\"/a\"},{\"source\":"
                                   "\"/s2\",\"target\":\"/a\"}]",
                                   &msg),
                     -EINVAL);
        CHECK_STREQ(msg, "volumes: each target once, and not a bind's target");
        CHECK_EQ_INT(parse_volumes("[{\"source\":\"/s\",\"target\":\"/usr\"}]", &msg), -EINVAL);
        CHECK_STREQ(msg, "volumes: each target once, and not a bind's target");
        char many[2048] = "[";
        for (int i = 0; i <= SBX_JAIL_VOLUMES_MAX; i++)
                snprintf(many + strlen(many), sizeof(many) - strlen(many),
                         "%s{\"source\":\"/s\",\"target\":\"/t%d\"}", i ? "," : "", i);
        strcat(many, "]");
        CHECK_EQ_INT(parse_volumes(many, &msg), -EINVAL);
        CHECK_STREQ(msg, "volumes must be an array of at most 16 objects");
}

static void test_validators(void)
{
        CHECK(sbx_jail_id_valid("a"));
        CHECK(!sbx_jail_id_valid(NULL));
        CHECK(sbx_jail_path_valid("/", 1));
        CHECK(!sbx_jail_path_valid("/", 0));
        CHECK(!sbx_jail_path_valid("/a/./b", 0));
        CHECK(sbx_jail_path_valid("/a/.b/c..d", 0));
        CHECK(sbx_jail_cgroup_name_valid("sbx/x-1_y"));
        CHECK(!sbx_jail_cgroup_name_valid("sbx/"));
        CHECK(!sbx_jail_cgroup_name_valid("a/b/c/d/e/f/g/h/i"));
        CHECK(sbx_jail_bind_target_valid("/procfs"));
        CHECK(!sbx_jail_bind_target_valid("/sys/x"));
        CHECK(!sbx_jail_bind_target_valid("/"));
        CHECK(sbx_jail_env_name_valid("_A1"));
        CHECK(!sbx_jail_env_name_valid("1A"));
        CHECK(!sbx_jail_env_name_valid(""));
}

int main(void)
{
        test_good();
        test_optional();
        test_runtime();
        test_missing();
        test_bad_values();
        test_limits();
        test_validators();
        test_messages();
        test_volumes();
        test_round_trip();
        return unit_finish("test-jail-spec");
}
