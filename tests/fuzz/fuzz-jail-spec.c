/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the jail spec decoder (api/jail-spec.c), the only thing sbx-jailer
 * reads before it builds a sandbox as host root. The input is the text on the spec fd.
 * Properties checked:
 *   - a refusal is -EINVAL with a message (or -ENOMEM), and leaves *ret_spec alone;
 *   - an accepted spec passes sbx_jail_spec_validate(), and every bound the jailer relies on
 *     holds (paths absolute and normalised, ids and counts in range, no bind over the jailer's
 *     own mounts);
 *   - round trip: encode → decode gives an equal spec, and encoding that gives the same text.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "jail-spec.h"

/* path is dir or below it */
static bool under(const char *path, const char *dir)
{
        size_t l = strlen(dir);
        return strncmp(path, dir, l) == 0 && (path[l] == 0 || path[l] == '/');
}

static void check_bounds(const struct sbx_jail_spec *s)
{
        FUZZ_CHECK(sbx_jail_id_valid(s->id));
        FUZZ_CHECK(sbx_jail_path_valid(s->rootfs, false) && sbx_jail_path_valid(s->socket, false) &&
                   sbx_jail_path_valid(s->agent, false));
        FUZZ_CHECK(strlen(strrchr(s->socket, '/') + 1) <= SBX_JAIL_SOCKET_NAME_MAX);
        FUZZ_CHECK(sbx_jail_cgroup_name_valid(s->cgroup) && !strstr(s->cgroup, ".."));
        FUZZ_CHECK(s->n_layers >= 1 && s->n_layers <= SBX_JAIL_LAYERS_MAX);
        for (size_t i = 0; i < s->n_layers; i++)
                FUZZ_CHECK(sbx_jail_path_valid(s->layers[i], false));
        FUZZ_CHECK(s->n_binds <= SBX_JAIL_BINDS_MAX);
        for (size_t i = 0; i < s->n_binds; i++) {
                const char *t = s->binds[i].target;
                FUZZ_CHECK(sbx_jail_path_valid(s->binds[i].source, false));
                FUZZ_CHECK(sbx_jail_bind_target_valid(t) && strcmp(t, "/") != 0);
                FUZZ_CHECK(!under(t, "/proc") && !under(t, "/dev") && !under(t, "/sys") &&
                           !under(t, "/.sbx"));
        }
        FUZZ_CHECK(s->n_env <= SBX_JAIL_ENV_MAX);
        for (size_t i = 0; i < s->n_env; i++) {
                FUZZ_CHECK(sbx_jail_env_name_valid(s->env[i].name));
                FUZZ_CHECK(!strchr(s->env[i].name, '='));
                FUZZ_CHECK(strlen(s->env[i].value) <= SBX_JAIL_ENV_VALUE_MAX);
        }
        FUZZ_CHECK(s->uid_base >= SBX_JAIL_UID_BASE_MIN && s->uid_count >= SBX_JAIL_UID_COUNT_MIN);
        FUZZ_CHECK((uint64_t)s->uid_base + s->uid_count <= UINT32_MAX);
        FUZZ_CHECK(s->memory_bytes >= SBX_JAIL_MEMORY_MIN &&
                   s->memory_bytes <= SBX_JAIL_MEMORY_MAX);
        FUZZ_CHECK(s->pids_max >= SBX_JAIL_PIDS_MIN && s->pids_max <= SBX_JAIL_PIDS_MAX);
        FUZZ_CHECK(s->cpu_period_us >= SBX_JAIL_CPU_PERIOD_MIN &&
                   s->cpu_period_us <= SBX_JAIL_CPU_PERIOD_MAX);
        FUZZ_CHECK(s->cpu_quota_us == -1 || (s->cpu_quota_us >= SBX_JAIL_CPU_QUOTA_MIN &&
                                             s->cpu_quota_us <= SBX_JAIL_CPU_QUOTA_MAX));
        FUZZ_CHECK(s->disk_bytes >= SBX_JAIL_DISK_MIN && s->disk_bytes <= SBX_JAIL_DISK_MAX);
        FUZZ_CHECK(!s->disk_image ||
                   (s->upper_on_host && sbx_jail_path_valid(s->disk_image, false)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct sbx_jail_spec *s = (struct sbx_jail_spec *)&s; /* must stay untouched on failure */
        const char *msg = NULL;
        int r = sbx_jail_spec_decode((const char *)data, size, &s, &msg);
        if (r < 0) {
                FUZZ_CHECK(r == -EINVAL || r == -ENOMEM);
                FUZZ_CHECK(r == -ENOMEM || (msg && *msg));
                FUZZ_CHECK(s == (struct sbx_jail_spec *)&s);
                return 0;
        }
        FUZZ_CHECK(r == 0 && s);
        msg = NULL;
        FUZZ_CHECK(sbx_jail_spec_validate(s, &msg) == 0);
        check_bounds(s);

        char *text = NULL, *again = NULL;
        size_t len = 0, len2 = 0;
        FUZZ_CHECK(sbx_jail_spec_encode(s, &text, &len) == 0);
        FUZZ_CHECK(len == strlen(text));
        struct sbx_jail_spec *back = NULL;
        FUZZ_CHECK(sbx_jail_spec_decode(text, len, &back, &msg) == 0);
        FUZZ_CHECK(sbx_jail_spec_equal(s, back));
        FUZZ_CHECK(sbx_jail_spec_encode(back, &again, &len2) == 0);
        FUZZ_CHECK(len == len2 && memcmp(text, again, len) == 0);
        free(text);
        free(again);
        sbx_jail_spec_free(back);
        sbx_jail_spec_free(s);
        return 0;
}
