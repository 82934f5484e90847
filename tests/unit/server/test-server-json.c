/* SPDX-License-Identifier: Apache-2.0 */
/* JSON shapes of Sandbox / ListedSandbox / SandboxDetail / the record, RFC 3339, error bodies. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>

#include "core/errors.h"
#include "lifecycle/sandbox.h"
#include "unit.h"

static const char *str(const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

static struct sandbox *fixture(void)
{
        struct sandbox *s = sandbox_new();
        strcpy(s->id, "abcdefghij0123456789");
        strcpy(s->template_id, "base");
        strcpy(s->token, "00112233445566778899aabbccddeeff0011223344556677");
        s->started_us = 1700000000123456;
        sandbox_set_end_at(s, 1700000300);
        s->cpu_count = 2;
        s->memory_mb = 1024;
        s->disk_mb = 512;
        s->metadata = cJSON_Parse("{\"k\":\"v\",\"team\":\"a\"}");
        return s;
}

static void test_rfc3339(void)
{
        char b[32];
        CHECK_EQ_INT(rfc3339_format(0, b), 0);
        CHECK_STREQ(b, "1970-01-01T00:00:00Z");
        CHECK_EQ_INT(rfc3339_format(1700000000, b), 0);
        CHECK_STREQ(b, "2023-11-14T22:13:20Z");
        CHECK_EQ_INT(rfc3339_format(951782400, b), 0); /* leap day 2000 */
        CHECK_STREQ(b, "2000-02-29T00:00:00Z");
        CHECK_EQ_INT(rfc3339_format(253402300799LL, b), 0);
        CHECK_STREQ(b, "9999-12-31T23:59:59Z");
}

static void test_sandbox_shape(struct sandbox *s)
{
        cJSON *o = sandbox_to_json(s, SHAPE_SANDBOX);
        CHECK_STREQ(str(o, "sandboxID"), s->id);
        CHECK_STREQ(str(o, "templateID"), "base");
        CHECK_STREQ(str(o, "alias"), "base");
        CHECK_STREQ(str(o, "clientID"), "sbx");
        CHECK_STREQ(str(o, "envdVersion"), "0.6.13");
        CHECK_STREQ(str(o, "envdAccessToken"), s->token);
        CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "trafficAccessToken")));
        CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "domain")));
        /* what the sandbox got (no egress: loopback only), not what it asked */
        CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "allowInternetAccess")));
        CHECK_EQ_INT(cJSON_GetArraySize(o), 9);
        cJSON_Delete(o);
}

static void test_listed_shape(struct sandbox *s)
{
        cJSON *o = sandbox_to_json(s, SHAPE_LISTED);
        static const char *const required[] = {"sandboxID", "templateID", "clientID", "startedAt",
                                               "endAt",     "cpuCount",   "memoryMB", "diskSizeMB",
                                               "state",     "envdVersion"};
        for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
                CHECK(cJSON_GetObjectItemCaseSensitive(o, required[i]) != NULL);
        CHECK_STREQ(str(o, "startedAt"), "2023-11-14T22:13:20Z");
        CHECK_STREQ(str(o, "endAt"), "2023-11-14T22:18:20Z");
        CHECK_STREQ(str(o, "state"), "running");
        CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(o, "cpuCount")->valueint, 2);
        CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(o, "memoryMB")->valueint, 1024);
        CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(o, "diskSizeMB")->valueint, 512);
        CHECK_STREQ(str(cJSON_GetObjectItemCaseSensitive(o, "metadata"), "k"), "v");
        /* a list never shows the token */
        CHECK(cJSON_GetObjectItemCaseSensitive(o, "envdAccessToken") == NULL);
        cJSON_Delete(o);

        o = sandbox_to_json(s, SHAPE_DETAIL);
        CHECK_STREQ(str(o, "envdAccessToken"), s->token);
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "lifecycle");
        CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(l, "autoResume")));
        CHECK_STREQ(str(l, "onTimeout"), "kill");
        CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "domain")));
        CHECK_STREQ(str(o, "state"), "running");
        cJSON_Delete(o);

        /* no metadata → {} (Python's from_dict wants the key) */
        cJSON_Delete(s->metadata);
        s->metadata = NULL;
        o = sandbox_to_json(s, SHAPE_LISTED);
        CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "metadata")));
        cJSON_Delete(o);
}

static void test_metadata_filter(struct sandbox *s)
{
        s->metadata = cJSON_Parse("{\"k\":\"v\",\"team\":\"a\"}");
        cJSON *f = cJSON_Parse("{\"k\":\"v\"}");
        CHECK(sandbox_metadata_matches(s, f));
        cJSON_Delete(f);
        f = cJSON_Parse("{\"k\":\"v\",\"team\":\"b\"}");
        CHECK(!sandbox_metadata_matches(s, f));
        cJSON_Delete(f);
        f = cJSON_Parse("{\"missing\":\"v\"}");
        CHECK(!sandbox_metadata_matches(s, f));
        cJSON_Delete(f);
        f = cJSON_Parse("{}");
        CHECK(sandbox_metadata_matches(s, f));
        cJSON_Delete(f);
}

static void test_errors(void)
{
        unsigned st;
        char *body;
        CHECK_EQ_INT(api_error_build(-ENOENT, NULL, "sandbox \"x\" not found", &st, &body), 0);
        CHECK_EQ_INT(st, 404);
        CHECK_STREQ(body, "{\"code\":404,\"message\":\"sandbox \\\"x\\\" not found\"}");
        free(body);
        CHECK_EQ_INT(api_error_build(-EHOSTUNREACH, "abc", "The sandbox was not found", &st, &body),
                     0);
        CHECK_EQ_INT(st, 502);
        CHECK_STREQ(
            body, "{\"sandboxId\":\"abc\",\"message\":\"The sandbox was not found\",\"code\":502}");
        free(body);
        CHECK_EQ_INT(api_error_status(-EINVAL), 400);
        CHECK_EQ_INT(api_error_status(-ELOOP), 400);
        CHECK_EQ_INT(api_error_status(-EBADMSG), 400);
        CHECK_EQ_INT(api_error_status(-EACCES), 401);
        CHECK_EQ_INT(api_error_status(EACCES), 401);
        CHECK_EQ_INT(api_error_status(-EMSGSIZE), 413);
        CHECK_EQ_INT(api_error_status(-EUSERS), 503);
        CHECK_EQ_INT(api_error_status(-EIO), 500);
        CHECK_EQ_INT(api_error_status(-ENOMEM), 500);
        CHECK_EQ_INT(api_error_status(-EPROTO), 502);
}

/* A private sandbox with a mask, and the domain set at start-up. */
static void test_ingress_shape(struct sandbox *s)
{
        strcpy(s->traffic_token, "00112233445566778899aabbccddeeff0011223344556677");
        strcpy(s->mask_host, "app.internal:${PORT}");
        sandbox_json_set_domain("sbx.localhost:3000");
        cJSON *o = sandbox_to_json(s, SHAPE_SANDBOX);
        CHECK_STREQ(str(o, "trafficAccessToken"), s->traffic_token);
        CHECK_STREQ(str(o, "domain"), "sbx.localhost:3000");
        cJSON_Delete(o);
        o = sandbox_to_json(s, SHAPE_DETAIL);
        CHECK_STREQ(str(o, "domain"), "sbx.localhost:3000");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "network");
        CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(n, "allowPublicTraffic")));
        CHECK_STREQ(str(n, "maskRequestHost"), "app.internal:${PORT}");
        cJSON_Delete(o);
        /* the record keeps both, so an adopted sandbox stays private */
        o = sandbox_to_json(s, SHAPE_RECORD);
        CHECK_STREQ(str(o, "trafficAccessToken"), s->traffic_token);
        CHECK_STREQ(str(o, "maskRequestHost"), "app.internal:${PORT}");
        cJSON_Delete(o);
        sandbox_json_set_domain(NULL);
        s->traffic_token[0] = s->mask_host[0] = 0;
}

int main(void)
{
        struct sandbox *s = fixture();
        test_rfc3339();
        test_sandbox_shape(s);
        test_listed_shape(s);
        test_metadata_filter(s);
        test_errors();
        test_ingress_shape(s);
        test_sandbox_shape(s);
        CHECK_EQ_INT(sandbox_get_end_at(s), 1700000300);
        sandbox_unref(s);
        return unit_finish("test-server-json");
}
