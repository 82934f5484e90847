/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the body of a sandbox create (POST /sandboxes, /v2/sandboxes), the
 * largest control-plane body an API key holder sends: json_parse_body() then validate_create()
 * (server/core/validate.c), as route_sandboxes_handle() calls them. Properties checked:
 *   - every refusal comes with a message; a parsed body is an object no deeper than
 *     JSON_MAX_DEPTH (json_depth() never undercounts what cJSON built);
 *   - accepted parameters keep the documented bounds: a valid template name, a timeout of
 *     1..TIMEOUT_MAX_S, sizes 0 (the template's) or in range, metadata and envVars maps of at
 *     most MAP_MAX_ENTRIES strings with bounded keys and values.
 */
#include <errno.h>
#include <string.h>

#include "core/validate.h"
#include "fuzz.h"

static size_t tree_depth(const cJSON *j)
{
        if (!cJSON_IsArray(j) && !cJSON_IsObject(j))
                return 0;
        size_t max = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, j)
        {
                size_t d = tree_depth(c);
                if (d > max)
                        max = d;
        }
        return max + 1;
}

static void check_map(const cJSON *m)
{
        if (!m)
                return;
        FUZZ_CHECK(cJSON_IsObject(m));
        size_t n = 0, total = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, m)
        {
                FUZZ_CHECK(cJSON_IsString(e) && e->string);
                size_t kl = strlen(e->string), vl = strlen(e->valuestring);
                FUZZ_CHECK(kl >= 1 && kl <= MAP_MAX_KEY && vl <= MAP_MAX_VALUE);
                total += kl + vl;
                n++;
        }
        FUZZ_CHECK(n <= MAP_MAX_ENTRIES && total <= MAP_MAX_TOTAL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        cJSON *body = NULL;
        const char *msg = NULL;
        int r = json_parse_body((const char *)data, size, &body, &msg);
        if (r < 0) {
                FUZZ_CHECK(r == -ELOOP || r == -EBADMSG);
                FUZZ_CHECK(msg && *msg);
                return 0;
        }
        FUZZ_CHECK(size == 0 ? body == NULL : cJSON_IsObject(body));
        if (body)
                FUZZ_CHECK(tree_depth(body) <= JSON_MAX_DEPTH);

        struct create_params p;
        msg = NULL;
        r = validate_create(body, (const char *)data, size, &p, &msg);
        if (r < 0) {
                FUZZ_CHECK(r == -EINVAL || r == -ENOMEM);
                FUZZ_CHECK(r == -ENOMEM || (msg && *msg));
        } else {
                FUZZ_CHECK(r == 0);
                FUZZ_CHECK(template_name_valid(p.template_id));
                FUZZ_CHECK(p.timeout_s >= 1 && p.timeout_s <= TIMEOUT_MAX_S);
                FUZZ_CHECK(p.cpu_count == 0 ||
                           (p.cpu_count >= 1 && p.cpu_count <= SANDBOX_MAX_CPU));
                FUZZ_CHECK(p.memory_mb == 0 || (p.memory_mb >= SANDBOX_MIN_MEMORY_MB &&
                                                p.memory_mb <= SANDBOX_MAX_MEMORY_MB));
                FUZZ_CHECK(p.disk_mb == 0 ||
                           (p.disk_mb >= SANDBOX_MIN_DISK_MB && p.disk_mb <= SANDBOX_MAX_DISK_MB));
                check_map(p.metadata);
                check_map(p.env_vars);
                const cJSON *e;
                cJSON_ArrayForEach(e, p.env_vars) FUZZ_CHECK(!strchr(e->string, '='));
                create_params_done(&p);
        }
        cJSON_Delete(body);
        return 0;
}
