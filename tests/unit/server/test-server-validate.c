/* SPDX-License-Identifier: Apache-2.0 */
/* Request validation: timeouts, template names, ids, metadata/envVars bounds, JSON depth, keys. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/keys.h"
#include "e2b/routes-sandboxes.h"
#include "core/validate.h"
#include "unit.h"

static int timeout_of(const char *json, int64_t def, int64_t *ret)
{
        cJSON *j = cJSON_Parse(json);
        const char *msg = NULL;
        int r = validate_timeout(j, def, ret, &msg);
        if (r < 0)
                CHECK(msg != NULL);
        cJSON_Delete(j);
        return r;
}

static void test_timeouts(void)
{
        int64_t t = 0;
        CHECK_EQ_INT(timeout_of("{\"timeout\":60}", 300, &t), 0);
        CHECK_EQ_INT(t, 60);
        CHECK_EQ_INT(timeout_of("{}", 300, &t), 0);
        CHECK_EQ_INT(t, 300);
        CHECK_EQ_INT(timeout_of("{\"timeout\":null}", 300, &t), 0);
        CHECK_EQ_INT(timeout_of("{}", -1, &t), -EINVAL); /* required */
        CHECK_EQ_INT(timeout_of("{\"timeout\":0}", 300, &t), -EINVAL);
        CHECK_EQ_INT(timeout_of("{\"timeout\":-5}", 300, &t), -EINVAL);
        CHECK_EQ_INT(timeout_of("{\"timeout\":1.5}", 300, &t), -EINVAL);
        CHECK_EQ_INT(timeout_of("{\"timeout\":\"60\"}", 300, &t), -EINVAL);
        CHECK_EQ_INT(timeout_of("{\"timeout\":86400}", 300, &t), 0);
        CHECK_EQ_INT(timeout_of("{\"timeout\":86401}", 300, &t), -EINVAL);
        CHECK_EQ_INT(timeout_of("{\"timeout\":9223372036854775807}", 300, &t), -EINVAL);
        CHECK_EQ_INT(timeout_of("{\"timeout\":1e300}", 300, &t), -EINVAL);
        CHECK_EQ_INT(timeout_of("{\"timeout\":1}", 300, &t), 0);
        CHECK_EQ_INT(t, 1);
}

static void test_names(void)
{
        CHECK(template_name_valid("base"));
        CHECK(template_name_valid("code-interpreter-v1"));
        CHECK(template_name_valid("my_tpl.v2"));
        CHECK(!template_name_valid(""));
        CHECK(!template_name_valid(NULL));
        CHECK(!template_name_valid("../etc"));
        CHECK(!template_name_valid("a/../b"));
        CHECK(!template_name_valid("a..b"));
        CHECK(!template_name_valid("a/b"));
        CHECK(!template_name_valid(".hidden"));
        CHECK(template_name_valid("py:3.11"));
        CHECK(!template_name_valid("py:"));
        CHECK(!template_name_valid(":py"));
        CHECK(!template_name_valid("a:b:c"));
        CHECK(!template_name_valid("-x"));
        CHECK(!template_name_valid("sp ace"));
        char longname[TEMPLATE_NAME_MAX + 16];
        memset(longname, 'a', sizeof(longname) - 1);
        longname[TEMPLATE_NAME_MAX] = 0;
        CHECK(template_name_valid(longname));
        longname[40] = ':'; /* an alias with a tag of E2B's length, 128 + v1-<uuid> fit */
        CHECK(template_name_valid(longname));
        longname[TEMPLATE_NAME_MAX] = 'a';
        longname[TEMPLATE_NAME_MAX + 1] = 0;
        CHECK(!template_name_valid(longname));

        CHECK(sandbox_id_valid("abc123"));
        CHECK(!sandbox_id_valid("ABC"));
        CHECK(!sandbox_id_valid(""));
        CHECK(!sandbox_id_valid("a-b"));
        CHECK(!sandbox_id_valid("../x"));
}

static int create_of(const char *json, struct create_params *p)
{
        cJSON *j = cJSON_Parse(json);
        const char *msg = NULL;
        int r = validate_create(j, json, strlen(json), p, &msg);
        cJSON_Delete(j);
        return r;
}

/* envVars keys: no '=' (the agent builds KEY=VALUE), no NUL raw or escaped (cJSON cuts the
 * string there); values may hold '='. Metadata keys may hold '='. */
static void test_create_env(void)
{
        struct create_params p;
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"envVars\":{\"A=B\":\"1\"}}", &p),
                     -EINVAL);
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"envVars\":{\"A\\u0000B\":\"1\"}}", &p),
                     -EINVAL);
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"envVars\":{\"A\":\"1\\u0000\"}}", &p),
                     -EINVAL);
        /* an escaped backslash before u0000 is text, not a NUL */
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"envVars\":{\"A\":\"\\\\u0000\"}}", &p),
                     0);
        create_params_done(&p);
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"envVars\":{\"A\":\"x=y\"},"
                               "\"metadata\":{\"k=v\":\"1\"}}",
                               &p),
                     0);
        CHECK_STREQ(cJSON_GetObjectItem(p.env_vars, "A")->valuestring, "x=y");
        create_params_done(&p);
        const char raw_nul[] = "{\"templateID\":\"base\",\"envVars\":{\"A\":\"1\0\"}}";
        const char *msg = NULL;
        CHECK_EQ_INT(validate_no_nul(raw_nul, sizeof(raw_nul) - 1, &msg), -EINVAL);
        const char *esc = "{\"a\":\"\\u00001\"}", *other = "{\"a\":\"\\u0001\"}";
        CHECK_EQ_INT(validate_no_nul(esc, strlen(esc), &msg), -EINVAL);
        CHECK_EQ_INT(validate_no_nul(other, strlen(other), &msg), 0);
}

static void test_create(void)
{
        struct create_params p;
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\"}", &p), 0);
        CHECK_STREQ(p.template_id, "base");
        CHECK_EQ_INT(p.timeout_s, 300);
        CHECK(p.metadata == NULL && p.env_vars == NULL);
        create_params_done(&p);

        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"timeout\":15,\"metadata\":{\"a\":\"b\"},"
                               "\"envVars\":{\"X\":\"1\"},\"secure\":true}",
                               &p),
                     0);
        CHECK_EQ_INT(p.timeout_s, 15);
        CHECK(cJSON_IsObject(p.metadata) && cJSON_IsObject(p.env_vars));
        create_params_done(&p);

        /* volumeMounts: types here, names and paths at create (lifecycle/volume-mounts.c) */
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"volumeMounts\":[{\"name\":\"v\","
                               "\"path\":\"/d\"}]}",
                               &p),
                     0);
        CHECK(cJSON_GetArraySize(p.volume_mounts) == 1);
        create_params_done(&p);
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"volumeMounts\":[]}", &p), 0);
        CHECK(p.volume_mounts == NULL);
        create_params_done(&p);
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"volumeMounts\":null}", &p), 0);
        create_params_done(&p);
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"volumeMounts\":{}}", &p), -EINVAL);
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"volumeMounts\":[{\"name\":\"v\"}]}", &p),
                     -EINVAL);
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"volumeMounts\":[{\"name\":1,"
                               "\"path\":\"/d\"}]}",
                               &p),
                     -EINVAL);
        char many[2048];
        size_t n = (size_t)sprintf(many, "{\"templateID\":\"base\",\"volumeMounts\":[");
        for (int i = 0; i <= SANDBOX_MAX_VOLUME_MOUNTS; i++)
                n += (size_t)sprintf(many + n, "%s{\"name\":\"v\",\"path\":\"/d%d\"}", i ? "," : "",
                                     i);
        strcpy(many + n, "]}");
        CHECK_EQ_INT(create_of(many, &p), -EINVAL);

        CHECK_EQ_INT(create_of("{}", &p), -EINVAL);
        CHECK_EQ_INT(create_of("{\"templateID\":\"../../etc\"}", &p), -EINVAL);
        CHECK_EQ_INT(create_of("{\"templateID\":5}", &p), -EINVAL);
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"timeout\":0}", &p), -EINVAL);
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"metadata\":{\"a\":1}}", &p), -EINVAL);
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"metadata\":[]}", &p), -EINVAL);
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"envVars\":{\"\":\"x\"}}", &p), -EINVAL);

        /* bounds: 128 entries ok, 129 not; 16 KiB values ok, more not */
        char *buf = malloc(64 * 1024);
        size_t o = (size_t)sprintf(buf, "{\"templateID\":\"base\",\"metadata\":{");
        for (int i = 0; i < MAP_MAX_ENTRIES; i++)
                o += (size_t)sprintf(buf + o, "%s\"k%d\":\"v\"", i ? "," : "", i);
        strcpy(buf + o, "}}");
        CHECK_EQ_INT(create_of(buf, &p), 0);
        create_params_done(&p);
        strcpy(buf + o, ",\"extra\":\"v\"}}");
        CHECK_EQ_INT(create_of(buf, &p), -EINVAL);

        o = (size_t)sprintf(buf, "{\"templateID\":\"base\",\"envVars\":{\"K\":\"");
        memset(buf + o, 'x', MAP_MAX_VALUE);
        strcpy(buf + o + MAP_MAX_VALUE, "\"}}");
        CHECK_EQ_INT(create_of(buf, &p), 0);
        create_params_done(&p);
        memset(buf + o, 'x', MAP_MAX_VALUE + 1);
        strcpy(buf + o + MAP_MAX_VALUE + 1, "\"}}");
        CHECK_EQ_INT(create_of(buf, &p), -EINVAL);
        free(buf);
}

static void test_network(void)
{
        struct create_params p;
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"network\":{\"allowPublicTraffic\":false,"
                               "\"maskRequestHost\":\"localhost:${PORT}\",\"allowOut\":[]}}",
                               &p),
                     0);
        CHECK(p.private_traffic);
        CHECK_STREQ(p.mask_host, "localhost:${PORT}");
        create_params_done(&p);
        CHECK_EQ_INT(create_of("{\"templateID\":\"base\",\"network\":{}}", &p), 0);
        CHECK(!p.private_traffic && !p.mask_host[0]);
        create_params_done(&p);
        CHECK_EQ_INT(
            create_of("{\"templateID\":\"base\",\"network\":{\"allowPublicTraffic\":true}}", &p),
            0);
        CHECK(!p.private_traffic);
        create_params_done(&p);
        static const char *const bad[] = {
            "{\"templateID\":\"base\",\"network\":5}",
            "{\"templateID\":\"base\",\"network\":{\"allowPublicTraffic\":\"no\"}}",
            "{\"templateID\":\"base\",\"network\":{\"maskRequestHost\":\"\"}}",
            "{\"templateID\":\"base\",\"network\":{\"maskRequestHost\":\"a b\"}}",
            "{\"templateID\":\"base\",\"network\":{\"maskRequestHost\":\"a\\r\\nX: y\"}}",
            "{\"templateID\":\"base\",\"network\":{\"maskRequestHost\":\"h/path\"}}",
            "{\"templateID\":\"base\",\"network\":{\"maskRequestHost\":\"h\\u00e9\"}}",
            "{\"templateID\":\"base\",\"network\":{\"maskRequestHost\":7}}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                CHECK_EQ_INT(create_of(bad[i], &p), -EINVAL);
        char host[MASK_HOST_MAX + 2];
        memset(host, 'a', sizeof(host) - 1);
        host[sizeof(host) - 1] = 0;
        char body[MASK_HOST_MAX + 128];
        snprintf(body, sizeof(body),
                 "{\"templateID\":\"base\",\"network\":{\"maskRequestHost\":\"%s\"}}", host);
        CHECK_EQ_INT(create_of(body, &p), -EINVAL);
        host[MASK_HOST_MAX] = 0;
        snprintf(body, sizeof(body),
                 "{\"templateID\":\"base\",\"network\":{\"maskRequestHost\":\"%s\"}}", host);
        CHECK_EQ_INT(create_of(body, &p), 0);
        create_params_done(&p);
}

static void test_json_depth(void)
{
        CHECK_EQ_INT(json_depth("{}", 2), 1);
        CHECK_EQ_INT(json_depth("{\"a\":[[1]]}", 11), 3);
        CHECK_EQ_INT(json_depth("{\"a\":\"[[[[\\\"[[\"}", 17), 1); /* brackets in strings */
        cJSON *j = NULL;
        const char *msg = NULL;
        char deep[200];
        memset(deep, '[', 100);
        memset(deep + 100, ']', 100);
        CHECK_EQ_INT(json_parse_body(deep, 200, &j, &msg), -ELOOP);
        CHECK_EQ_INT(json_parse_body("", 0, &j, &msg), 0);
        CHECK(j == NULL);
        CHECK_EQ_INT(json_parse_body("[]", 2, &j, &msg), -EBADMSG);
        CHECK_EQ_INT(json_parse_body("{\"a\":", 5, &j, &msg), -EBADMSG);
        CHECK_EQ_INT(json_parse_body("{\"a\":1}", 7, &j, &msg), 0);
        cJSON_Delete(j);
}

static void test_keys(void)
{
        char k[API_KEY_LEN + 1];
        CHECK_EQ_INT(keys_generate(k), 0);
        CHECK(key_format_valid(k));
        CHECK_EQ_INT(strlen(k), 44);
        CHECK(strncmp(k, "e2b_", 4) == 0);
        CHECK(!key_format_valid("e2b_"));
        CHECK(!key_format_valid("e2b_0123456789ABCDEF0123456789abcdef01234567"));
        CHECK(!key_format_valid("e2c_0123456789abcdef0123456789abcdef01234567"));
        CHECK(key_format_valid("e2b_0123456789abcdef0123456789abcdef01234567"));

        CHECK(const_time_streq("abc", "abc"));
        CHECK(!const_time_streq("abc", "abd"));
        CHECK(!const_time_streq("abc", "abcd"));
        CHECK(!const_time_streq("abcd", "abc"));
        CHECK(!const_time_streq("", "abc"));
        CHECK(!const_time_streq(NULL, "abc"));
        CHECK(!const_time_streq("abc", NULL));

        struct keys ks = {.n = 2};
        strcpy(ks.key[0], "e2b_0123456789abcdef0123456789abcdef01234567");
        strcpy(ks.key[1], k);
        CHECK(keys_check(&ks, k));
        CHECK(keys_check(&ks, "e2b_0123456789abcdef0123456789abcdef01234567"));
        CHECK(!keys_check(&ks, "e2b_0123456789abcdef0123456789abcdef01234566"));
        CHECK(!keys_check(&ks, ""));
        CHECK(!keys_check(&ks, NULL));

        /* Timing: a mismatch in the first byte costs what a mismatch in the last does. */
        char secret[4097], early[4097], late[4097];
        memset(secret, 'a', 4096);
        secret[4096] = 0;
        memcpy(early, secret, sizeof(secret));
        memcpy(late, secret, sizeof(secret));
        early[0] = 'b';
        late[4095] = 'b';
        struct timespec t0, t1, t2;
        volatile int sink = 0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < 2000; i++)
                sink += const_time_streq(early, secret);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        for (int i = 0; i < 2000; i++)
                sink += const_time_streq(late, secret);
        clock_gettime(CLOCK_MONOTONIC, &t2);
        double a = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
        double b = (double)(t2.tv_sec - t1.tv_sec) * 1e9 + (double)(t2.tv_nsec - t1.tv_nsec);
        CHECK(sink == 0);
        /* an early-exit compare would make a ~1000x faster than b */
        CHECK(a > b / 4);
}

int main(void)
{
        test_timeouts();
        test_names();
        test_create();
        test_network();
        test_create_env();
        test_json_depth();
        test_keys();
        return unit_finish("test-server-validate");
}
