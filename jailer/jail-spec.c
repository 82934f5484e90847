/* SPDX-License-Identifier: Apache-2.0 */
#include "jail-spec.h"

#include "macros.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "json-util.h"

/* Paths the jailer itself manages inside the root: binds may not land on or under them. */
static const char *const reserved_targets[] = {"/proc", "/dev", "/sys", "/.sbx"};

int jail_id_valid(const char *id)
{
        size_t n = id ? strlen(id) : 0;
        if (n < 1 || n > JAIL_ID_MAX)
                return 0;
        for (size_t i = 0; i < n; i++)
                if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9')))
                        return 0;
        return 1;
}

int jail_path_valid(const char *path, int allow_root)
{
        size_t n = path ? strlen(path) : 0;
        if (n < 1 || n > JAIL_PATH_MAX || path[0] != '/')
                return 0;
        if (n == 1)
                return allow_root;
        if (path[n - 1] == '/')
                return 0;
        /* Walk components: none empty ("//"), none "." or "..". */
        for (const char *p = path + 1; *p;) {
                size_t len = strcspn(p, "/");
                if (len == 0 || (len == 1 && p[0] == '.') ||
                    (len == 2 && p[0] == '.' && p[1] == '.'))
                        return 0;
                p += len;
                if (*p == '/')
                        p++;
        }
        return 1;
}

int jail_cgroup_name_valid(const char *name)
{
        size_t n = name ? strlen(name) : 0;
        if (n < 1 || n > 255 || name[0] == '/' || name[n - 1] == '/')
                return 0;
        int depth = 0;
        for (const char *p = name; *p;) {
                size_t len = strcspn(p, "/");
                /* No dots at all: rules out "." and ".." and every v1 knob name
                 * ("cgroup.procs", "memory.limit_in_bytes"). */
                if (len == 0)
                        return 0;
                for (size_t i = 0; i < len; i++) {
                        char c = p[i];
                        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                              (c >= '0' && c <= '9') || c == '_' || c == '-'))
                                return 0;
                }
                if (++depth > 8)
                        return 0;
                p += len;
                if (*p == '/')
                        p++;
        }
        return 1;
}

static int env_key_valid(const char *k)
{
        if (!k || !((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') || *k == '_'))
                return 0;
        size_t n = 0;
        for (; *k; k++, n++)
                if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
                      (*k >= '0' && *k <= '9') || *k == '_'))
                        return 0;
        return n <= 255;
}

struct jail_spec *jail_spec_free(struct jail_spec *s)
{
        if (!s)
                return NULL;
        free(s->id);
        free(s->rootfs);
        free(s->disk_image);
        free(s->socket);
        for (size_t i = 0; i < s->n_layers; i++)
                free(s->layers[i]);
        free(s->layers);
        for (size_t i = 0; i < s->n_binds; i++) {
                free(s->binds[i].source);
                free(s->binds[i].target);
        }
        free(s->binds);
        free(s->agent);
        free(s->cgroup);
        for (size_t i = 0; i < s->n_env; i++)
                free(s->env[i]);
        free(s->env);
        free(s);
        return NULL;
}

/* Helpers below return 0 or -EINVAL/-ENOMEM and set *msg on -EINVAL. Messages naming a field
 * are formatted into msgbuf: static storage, valid until the next parse (the jailer has no
 * threads). */
static char msgbuf[160];

static const char *field_msg(const char *key, const char *what)
{
        snprintf(msgbuf, sizeof(msgbuf), "%s: %s", key, what);
        return msgbuf;
}

static int get_string(const cJSON *o, const char *key, char **ret, const char **msg)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        if (!cJSON_IsString(v) || !v->valuestring) {
                *msg = field_msg(key, "missing or not a string");
                return -EINVAL;
        }
        char *s = strdup(v->valuestring);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int get_path(const cJSON *o, const char *key, char **ret, const char **msg)
{
        _cleanup_free_ char *s = NULL;
        int r = get_string(o, key, &s, msg);
        if (r < 0)
                return r;
        if (!jail_path_valid(s, 0)) {
                *msg = field_msg(key, "must be an absolute normalised path (no '.', '..', "
                                      "'//', trailing '/')");
                return -EINVAL;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

/* An integer JSON number within [min, max]. */
static int get_int(const cJSON *o, const char *key, double min, double max, int64_t *ret,
                   const char **msg)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        if (!cJSON_IsNumber(v)) {
                *msg = field_msg(key, "missing or not a number");
                return -EINVAL;
        }
        double d = v->valuedouble;
        if (!isfinite(d) || d != floor(d) || d < min || d > max) {
                *msg = field_msg(key, "not an integer or out of range");
                return -EINVAL;
        }
        *ret = (int64_t)d;
        return 0;
}

static int parse_layers(const cJSON *o, struct jail_spec *s, const char **msg)
{
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "layers");
        int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
        if (n < 1 || n > JAIL_LAYERS_MAX) {
                *msg = "layers must be an array of 1..64 paths";
                return -EINVAL;
        }
        s->layers = calloc((size_t)n, sizeof(char *));
        if (!s->layers)
                return -ENOMEM;
        const cJSON *e;
        cJSON_ArrayForEach(e, a)
        {
                if (!cJSON_IsString(e) || !jail_path_valid(e->valuestring, 0)) {
                        *msg = "layers: each layer must be an absolute normalised path";
                        return -EINVAL;
                }
                if (!(s->layers[s->n_layers] = strdup(e->valuestring)))
                        return -ENOMEM;
                s->n_layers++;
        }
        return 0;
}

static int bind_target_valid(const char *t)
{
        if (!jail_path_valid(t, 0))
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(reserved_targets); i++) {
                size_t l = strlen(reserved_targets[i]);
                if (strncmp(t, reserved_targets[i], l) == 0 && (t[l] == 0 || t[l] == '/'))
                        return 0;
        }
        return 1;
}

static int parse_binds(const cJSON *o, struct jail_spec *s, const char **msg)
{
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "binds");
        if (!a || cJSON_IsNull(a))
                return 0;
        int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
        if (n < 0 || n > JAIL_BINDS_MAX) {
                *msg = "binds must be an array of at most 32 objects";
                return -EINVAL;
        }
        s->binds = calloc((size_t)n + 1, sizeof(struct jail_bind));
        if (!s->binds)
                return -ENOMEM;
        const cJSON *e;
        cJSON_ArrayForEach(e, a)
        {
                struct jail_bind *b = &s->binds[s->n_binds];
                const cJSON *ro = cJSON_GetObjectItemCaseSensitive(e, "readonly");
                if (!cJSON_IsObject(e) || (ro && !cJSON_IsBool(ro))) {
                        *msg = "binds: each bind is {source, target, readonly: bool}";
                        return -EINVAL;
                }
                int r = get_path(e, "source", &b->source, msg);
                if (r < 0)
                        return r;
                s->n_binds++; /* owns source from here on */
                if ((r = get_string(e, "target", &b->target, msg)) < 0)
                        return r;
                if (!bind_target_valid(b->target)) {
                        *msg = "binds: target must be an absolute normalised path, not /, "
                               "/proc, /dev, /sys or /.sbx";
                        return -EINVAL;
                }
                /* Absent "readonly" means read-only: the safe default. */
                b->readonly = !ro || cJSON_IsTrue(ro);
        }
        return 0;
}

static int parse_env(const cJSON *o, struct jail_spec *s, const char **msg)
{
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "env");
        if (!m || cJSON_IsNull(m))
                return 0;
        int n = cJSON_IsObject(m) ? cJSON_GetArraySize(m) : -1;
        if (n < 0 || n > JAIL_ENV_MAX) {
                *msg = "env must be an object of at most 256 strings";
                return -EINVAL;
        }
        s->env = calloc((size_t)n + 1, sizeof(char *));
        if (!s->env)
                return -ENOMEM;
        const cJSON *e;
        cJSON_ArrayForEach(e, m)
        {
                if (!env_key_valid(e->string) || !cJSON_IsString(e) ||
                    strlen(e->valuestring) > JAIL_ENV_VALUE_MAX) {
                        *msg = "env: keys are [A-Za-z_][A-Za-z0-9_]*, values strings <= 32 KiB";
                        return -EINVAL;
                }
                if (asprintf(&s->env[s->n_env], "%s=%s", e->string, e->valuestring) < 0) {
                        s->env[s->n_env] = NULL;
                        return -ENOMEM;
                }
                s->n_env++;
        }
        return 0;
}

static int parse_limits(const cJSON *o, struct jail_spec *s, const char **msg)
{
        int64_t v;
        int r;
        /* Sandbox ids 0..count-1 map to host base..base+count-1. Below 65536 live host system and
         * login users: mapping sandbox root onto one of them would hand it their files. */
        if ((r = get_int(o, "uid_base", 65536, 4294967294.0, &v, msg)) < 0)
                return r;
        s->uid_base = (uint32_t)v;
        if ((r = get_int(o, "uid_count", JAIL_UID_COUNT_MIN, 4294967294.0, &v, msg)) < 0)
                return r;
        s->uid_count = (uint32_t)v;
        if ((uint64_t)s->uid_base + s->uid_count > 4294967295ULL) {
                *msg = "uid_base + uid_count overflows the uid space";
                return -EINVAL;
        }
        if ((r = get_int(o, "memory_bytes", 16.0 * 1024 * 1024, 1024.0 * 1024 * 1024 * 1024, &v,
                         msg)) < 0)
                return r;
        s->memory_bytes = (uint64_t)v;
        if ((r = get_int(o, "pids_max", 8, 4194304, &v, msg)) < 0)
                return r;
        s->pids_max = (uint64_t)v;
        /* Kernel range for cfs_period_us is 1 ms .. 1 s. */
        if ((r = get_int(o, "cpu_period_us", 1000, 1000000, &v, msg)) < 0)
                return r;
        s->cpu_period_us = (uint64_t)v;
        if ((r = get_int(o, "cpu_quota_us", -1, 1024.0 * 1000000, &v, msg)) < 0)
                return r;
        if (v != -1 && v < 1000) {
                *msg = "cpu_quota_us must be -1 (unlimited) or >= 1000";
                return -EINVAL;
        }
        s->cpu_quota_us = v;
        if ((r = get_int(o, "disk_bytes", 1024.0 * 1024, 1024.0 * 1024 * 1024 * 1024, &v, msg)) < 0)
                return r;
        s->disk_bytes = (uint64_t)v;
        {
                const cJSON *uh = cJSON_GetObjectItemCaseSensitive(o, "upper_on_host");
                if (uh && !cJSON_IsBool(uh)) {
                        *msg = "upper_on_host must be a boolean";
                        return -EINVAL;
                }
                s->upper_on_host = cJSON_IsTrue(uh);
        }
        if (cJSON_GetObjectItemCaseSensitive(o, "disk_image")) {
                if ((r = get_path(o, "disk_image", &s->disk_image, msg)) < 0)
                        return r;
                if (!s->upper_on_host) {
                        *msg = "disk_image needs upper_on_host";
                        return -EINVAL;
                }
        }
        return 0;
}

static int parse_object(const cJSON *o, struct jail_spec *s, const char **msg)
{
        int r;
        if ((r = get_string(o, "id", &s->id, msg)) < 0)
                return r;
        if (!jail_id_valid(s->id)) {
                *msg = "id must match [a-z0-9]{1,63}";
                return -EINVAL;
        }
        if ((r = get_path(o, "rootfs", &s->rootfs, msg)) < 0 ||
            (r = get_path(o, "socket", &s->socket, msg)) < 0 ||
            (r = get_path(o, "agent", &s->agent, msg)) < 0)
                return r;
        /* Long paths are bound via /proc/self/fd/<dirfd>/<name>: only the name must be short. */
        if (strlen(strrchr(s->socket, '/') + 1) > JAIL_SOCKET_NAME_MAX) {
                *msg = "socket: file name longer than 64 bytes";
                return -EINVAL;
        }
        if ((r = get_string(o, "cgroup", &s->cgroup, msg)) < 0)
                return r;
        if (!jail_cgroup_name_valid(s->cgroup)) {
                *msg = "cgroup must be a relative name of [A-Za-z0-9_-] components";
                return -EINVAL;
        }
        if ((r = parse_layers(o, s, msg)) < 0 || (r = parse_binds(o, s, msg)) < 0 ||
            (r = parse_env(o, s, msg)) < 0 || (r = parse_limits(o, s, msg)) < 0)
                return r;
        return 0;
}

int jail_spec_parse(const char *json, size_t len, struct jail_spec **ret_spec, const char **ret_msg)
{
        const char *msg = "invalid spec";
        if (len > JAIL_SPEC_MAX) {
                *ret_msg = "spec too large";
                return -EINVAL;
        }
        _cleanup_json_ cJSON *root = cJSON_ParseWithLengthOpts(json, len, NULL, 0);
        if (!cJSON_IsObject(root)) {
                *ret_msg = "spec is not a JSON object";
                return -EINVAL;
        }
        _cleanup_jail_spec_ struct jail_spec *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        int r = parse_object(root, s, &msg);
        if (r < 0) {
                if (r == -EINVAL)
                        *ret_msg = msg;
                return r;
        }
        *ret_spec = TAKE_PTR(s);
        return 0;
}
