/* SPDX-License-Identifier: Apache-2.0 */
#include "jail-spec.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macros.h"

/* Integers travel as JSON numbers (doubles): exact up to 2^53. */
#define JSON_INT_MAX 9007199254740992.0

/* Paths the jailer itself manages inside the root: binds may not land on or under them. */
static const char *const reserved_targets[] = {"/proc", "/dev", "/sys", "/.sbx"};

/* ---- validators ---- */

bool sbx_jail_id_valid(const char *id)
{
        size_t n = id ? strlen(id) : 0;
        if (n < 1 || n > SBX_JAIL_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9')))
                        return false;
        return true;
}

bool sbx_jail_path_valid(const char *path, bool allow_root)
{
        size_t n = path ? strlen(path) : 0;
        if (n < 1 || n > SBX_JAIL_PATH_MAX || path[0] != '/')
                return false;
        if (n == 1)
                return allow_root;
        if (path[n - 1] == '/')
                return false;
        /* Walk components: none empty ("//"), none "." or "..". */
        for (const char *p = path + 1; *p;) {
                size_t len = strcspn(p, "/");
                if (len == 0 || (len == 1 && p[0] == '.') ||
                    (len == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                p += len;
                if (*p == '/')
                        p++;
        }
        return true;
}

static bool cgroup_char(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
}

bool sbx_jail_cgroup_name_valid(const char *name)
{
        size_t n = name ? strlen(name) : 0;
        if (n < 1 || n > SBX_JAIL_CGROUP_MAX || name[0] == '/' || name[n - 1] == '/')
                return false;
        int depth = 0;
        for (const char *p = name; *p;) {
                size_t len = strcspn(p, "/");
                /* No dots at all: rules out "." and ".." and every v1 knob name
                 * ("cgroup.procs", "memory.limit_in_bytes"). */
                if (len == 0)
                        return false;
                for (size_t i = 0; i < len; i++)
                        if (!cgroup_char(p[i]))
                                return false;
                if (++depth > SBX_JAIL_CGROUP_DEPTH)
                        return false;
                p += len;
                if (*p == '/')
                        p++;
        }
        return true;
}

bool sbx_jail_bind_target_valid(const char *t)
{
        if (!sbx_jail_path_valid(t, false))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(reserved_targets); i++) {
                size_t l = strlen(reserved_targets[i]);
                if (strncmp(t, reserved_targets[i], l) == 0 && (t[l] == 0 || t[l] == '/'))
                        return false;
        }
        return true;
}

bool sbx_jail_env_name_valid(const char *k)
{
        if (!k || !((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') || *k == '_'))
                return false;
        size_t n = 0;
        for (; *k; k++, n++)
                if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
                      (*k >= '0' && *k <= '9') || *k == '_'))
                        return false;
        return n <= SBX_JAIL_ENV_NAME_MAX;
}

/* ---- freeing and comparing ---- */

struct sbx_jail_spec *sbx_jail_spec_free(struct sbx_jail_spec *s)
{
        if (!s)
                return NULL;
        free(s->id);
        free(s->rootfs);
        free(s->socket);
        for (size_t i = 0; i < s->n_layers; i++)
                free(s->layers[i]);
        free(s->layers);
        for (size_t i = 0; i < s->n_binds; i++) {
                free(s->binds[i].source);
                free(s->binds[i].target);
        }
        free(s->binds);
        for (size_t i = 0; i < s->n_volumes; i++) {
                free(s->volumes[i].source);
                free(s->volumes[i].target);
        }
        free(s->volumes);
        free(s->agent);
        free(s->runtime);
        free(s->cgroup);
        free(s->disk_image);
        free(s->upper_subvol);
        for (size_t i = 0; i < s->n_env; i++) {
                free(s->env[i].name);
                free(s->env[i].value);
        }
        free(s->env);
        free(s->egress);
        free(s);
        return NULL;
}

static bool str_eq(const char *a, const char *b)
{
        return a == b || (a && b && strcmp(a, b) == 0);
}

bool sbx_jail_spec_equal(const struct sbx_jail_spec *a, const struct sbx_jail_spec *b)
{
        if (!str_eq(a->id, b->id) || !str_eq(a->rootfs, b->rootfs) ||
            !str_eq(a->socket, b->socket) || !str_eq(a->agent, b->agent) ||
            !str_eq(a->runtime, b->runtime) || !str_eq(a->cgroup, b->cgroup) ||
            !str_eq(a->disk_image, b->disk_image) || !str_eq(a->upper_subvol, b->upper_subvol) ||
            a->uid_base != b->uid_base || a->uid_count != b->uid_count ||
            a->memory_bytes != b->memory_bytes || a->pids_max != b->pids_max ||
            a->cpu_quota_us != b->cpu_quota_us || a->cpu_period_us != b->cpu_period_us ||
            a->disk_bytes != b->disk_bytes || a->upper_on_host != b->upper_on_host ||
            a->n_layers != b->n_layers || a->n_binds != b->n_binds ||
            a->n_volumes != b->n_volumes || a->n_env != b->n_env ||
            !sbx_jail_egress_equal(a->egress, b->egress))
                return false;
        for (size_t i = 0; i < a->n_volumes; i++)
                if (!str_eq(a->volumes[i].source, b->volumes[i].source) ||
                    !str_eq(a->volumes[i].target, b->volumes[i].target))
                        return false;
        for (size_t i = 0; i < a->n_layers; i++)
                if (!str_eq(a->layers[i], b->layers[i]))
                        return false;
        for (size_t i = 0; i < a->n_binds; i++)
                if (!str_eq(a->binds[i].source, b->binds[i].source) ||
                    !str_eq(a->binds[i].target, b->binds[i].target) ||
                    a->binds[i].readonly != b->binds[i].readonly)
                        return false;
        for (size_t i = 0; i < a->n_env; i++)
                if (!str_eq(a->env[i].name, b->env[i].name) ||
                    !str_eq(a->env[i].value, b->env[i].value))
                        return false;
        return true;
}

/* ---- encoding ---- */

static int add_string(cJSON *o, const char *key, const char *v)
{
        if (!v)
                return -EINVAL;
        return cJSON_AddStringToObject(o, key, v) ? 0 : -ENOMEM;
}

static int add_int(cJSON *o, const char *key, double v)
{
        if (v > JSON_INT_MAX || v < -JSON_INT_MAX)
                return -EINVAL; /* would not come back exactly */
        return cJSON_AddNumberToObject(o, key, v) ? 0 : -ENOMEM;
}

static int encode_lists(cJSON *o, const struct sbx_jail_spec *s)
{
        cJSON *layers = cJSON_AddArrayToObject(o, "layers");
        if (!layers)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_layers; i++) {
                if (!s->layers[i])
                        return -EINVAL;
                if (!cJSON_AddItemToArray(layers, cJSON_CreateString(s->layers[i])))
                        return -ENOMEM;
        }
        cJSON *binds = cJSON_AddArrayToObject(o, "binds");
        if (!binds)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_binds; i++) {
                cJSON *b = cJSON_CreateObject();
                if (!b)
                        return -ENOMEM;
                cJSON_AddItemToArray(binds, b); /* binds owns b from here on */
                int r = add_string(b, "source", s->binds[i].source);
                if (r >= 0)
                        r = add_string(b, "target", s->binds[i].target);
                if (r < 0)
                        return r;
                if (!cJSON_AddBoolToObject(b, "readonly", s->binds[i].readonly))
                        return -ENOMEM;
        }
        cJSON *vols = cJSON_AddArrayToObject(o, "volumes");
        if (!vols)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_volumes; i++) {
                cJSON *v = cJSON_CreateObject();
                if (!v)
                        return -ENOMEM;
                cJSON_AddItemToArray(vols, v); /* vols owns v from here on */
                int r = add_string(v, "source", s->volumes[i].source);
                if (r >= 0)
                        r = add_string(v, "target", s->volumes[i].target);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int encode_limits(cJSON *o, const struct sbx_jail_spec *s)
{
        int r;
        if ((r = add_int(o, "uid_base", s->uid_base)) < 0 ||
            (r = add_int(o, "uid_count", s->uid_count)) < 0 ||
            (r = add_string(o, "cgroup", s->cgroup)) < 0 ||
            (r = add_int(o, "memory_bytes", (double)s->memory_bytes)) < 0 ||
            (r = add_int(o, "pids_max", (double)s->pids_max)) < 0 ||
            (r = add_int(o, "cpu_quota_us", (double)s->cpu_quota_us)) < 0 ||
            (r = add_int(o, "cpu_period_us", (double)s->cpu_period_us)) < 0 ||
            (r = add_int(o, "disk_bytes", (double)s->disk_bytes)) < 0)
                return r;
        if (!cJSON_AddBoolToObject(o, "upper_on_host", s->upper_on_host))
                return -ENOMEM;
        if (s->upper_subvol && (r = add_string(o, "upper_subvol", s->upper_subvol)) < 0)
                return r;
        if (s->disk_image && (r = add_string(o, "disk_image", s->disk_image)) < 0)
                return r;
        return 0;
}

static int encode_env(cJSON *o, const struct sbx_jail_spec *s)
{
        cJSON *env = cJSON_AddObjectToObject(o, "env");
        if (!env)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_env; i++) {
                if (!s->env[i].name)
                        return -EINVAL;
                int r = add_string(env, s->env[i].name, s->env[i].value);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sbx_jail_spec_encode(const struct sbx_jail_spec *s, char **ret_text, size_t *ret_len)
{
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        int r;
        if (!o)
                return -ENOMEM;
        if ((r = add_string(o, "id", s->id)) < 0 || (r = add_string(o, "rootfs", s->rootfs)) < 0 ||
            (r = add_string(o, "socket", s->socket)) < 0 || (r = encode_lists(o, s)) < 0 ||
            (r = add_string(o, "agent", s->agent)) < 0 ||
            (s->runtime && (r = add_string(o, "runtime", s->runtime)) < 0) ||
            (r = encode_limits(o, s)) < 0 || (r = encode_env(o, s)) < 0 ||
            (s->egress && (r = sbx_jail_egress_encode(o, s->egress)) < 0))
                return r;
        char *text = cJSON_PrintUnformatted(o);
        if (!text)
                return -ENOMEM;
        *ret_len = strlen(text);
        *ret_text = text;
        return 0;
}

/* ---- decoding ---- */

/* Messages naming a field are formatted here: static storage, valid until the next call (the
 * jailer, the only decoder, has no threads). */
static char msgbuf[160];

static const char *field_msg(const char *key, const char *what)
{
        snprintf(msgbuf, sizeof(msgbuf), "%s: %s", key, what);
        return msgbuf;
}

static const char path_what[] = "must be an absolute normalised path (no '.', '..', '//', "
                                "trailing '/')";

/* The helpers below return 0 or -EINVAL/-ENOMEM and set *msg on -EINVAL. */

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

/* An integer JSON number within [min, max] (checked before any conversion). */
static int get_int(const cJSON *o, const char *key, double min, double max, double *ret,
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
        *ret = d;
        return 0;
}

static int get_bool(const cJSON *o, const char *key, bool absent, bool *ret)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        if (v && !cJSON_IsBool(v))
                return -EINVAL;
        *ret = v ? cJSON_IsTrue(v) : absent;
        return 0;
}

static int decode_layers(const cJSON *o, struct sbx_jail_spec *s, const char **msg)
{
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "layers");
        int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
        if (n < 1 || n > SBX_JAIL_LAYERS_MAX) {
                *msg = "layers must be an array of 1..64 paths";
                return -EINVAL;
        }
        s->layers = calloc((size_t)n, sizeof(char *));
        if (!s->layers)
                return -ENOMEM;
        const cJSON *e;
        cJSON_ArrayForEach(e, a)
        {
                if (!cJSON_IsString(e)) {
                        *msg = "layers: each layer must be an absolute normalised path";
                        return -EINVAL;
                }
                if (!(s->layers[s->n_layers] = strdup(e->valuestring)))
                        return -ENOMEM;
                s->n_layers++;
        }
        return 0;
}

static int decode_binds(const cJSON *o, struct sbx_jail_spec *s, const char **msg)
{
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "binds");
        if (!a || cJSON_IsNull(a))
                return 0;
        int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
        if (n < 0 || n > SBX_JAIL_BINDS_MAX) {
                *msg = "binds must be an array of at most 32 objects";
                return -EINVAL;
        }
        s->binds = calloc((size_t)n + 1, sizeof(struct sbx_jail_bind));
        if (!s->binds)
                return -ENOMEM;
        const cJSON *e;
        cJSON_ArrayForEach(e, a)
        {
                struct sbx_jail_bind *b = &s->binds[s->n_binds];
                /* Absent "readonly" means read-only: the safe default. */
                if (!cJSON_IsObject(e) || get_bool(e, "readonly", true, &b->readonly) < 0) {
                        *msg = "binds: each bind is {source, target, readonly: bool}";
                        return -EINVAL;
                }
                s->n_binds++; /* owns what follows from here on */
                int r = get_string(e, "source", &b->source, msg);
                if (r < 0)
                        return r;
                if (!sbx_jail_path_valid(b->source, false)) {
                        *msg = field_msg("source", path_what);
                        return -EINVAL;
                }
                if ((r = get_string(e, "target", &b->target, msg)) < 0)
                        return r;
        }
        return 0;
}

static int decode_volumes(const cJSON *o, struct sbx_jail_spec *s, const char **msg)
{
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "volumes");
        if (!a || cJSON_IsNull(a))
                return 0;
        int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
        if (n < 0 || n > SBX_JAIL_VOLUMES_MAX) {
                *msg = "volumes must be an array of at most 16 objects";
                return -EINVAL;
        }
        s->volumes = calloc((size_t)n + 1, sizeof(struct sbx_jail_volume));
        if (!s->volumes)
                return -ENOMEM;
        const cJSON *e;
        cJSON_ArrayForEach(e, a)
        {
                struct sbx_jail_volume *v = &s->volumes[s->n_volumes];
                if (!cJSON_IsObject(e)) {
                        *msg = "volumes: each volume is {source, target}";
                        return -EINVAL;
                }
                s->n_volumes++; /* owns what follows from here on */
                int r = get_string(e, "source", &v->source, msg);
                if (r < 0 || (r = get_string(e, "target", &v->target, msg)) < 0)
                        return r;
        }
        return 0;
}

static int decode_env(const cJSON *o, struct sbx_jail_spec *s, const char **msg)
{
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "env");
        if (!m || cJSON_IsNull(m))
                return 0;
        int n = cJSON_IsObject(m) ? cJSON_GetArraySize(m) : -1;
        if (n < 0 || n > SBX_JAIL_ENV_MAX) {
                *msg = "env must be an object of at most 256 strings";
                return -EINVAL;
        }
        s->env = calloc((size_t)n + 1, sizeof(struct sbx_jail_env));
        if (!s->env)
                return -ENOMEM;
        const cJSON *e;
        cJSON_ArrayForEach(e, m)
        {
                if (!e->string || !cJSON_IsString(e)) {
                        *msg = "env: keys are [A-Za-z_][A-Za-z0-9_]*, values strings <= 32 KiB";
                        return -EINVAL;
                }
                struct sbx_jail_env *v = &s->env[s->n_env];
                v->name = strdup(e->string);
                v->value = strdup(e->valuestring);
                s->n_env++;
                if (!v->name || !v->value)
                        return -ENOMEM;
        }
        return 0;
}

/* Numbers are read into the struct's types with a range the type holds; the bounds that matter
 * are sbx_jail_spec_validate()'s. */
static int decode_limits(const cJSON *o, struct sbx_jail_spec *s, const char **msg)
{
        double v;
        int r;
        if ((r = get_int(o, "uid_base", 0, UINT32_MAX, &v, msg)) < 0)
                return r;
        s->uid_base = (uint32_t)v;
        if ((r = get_int(o, "uid_count", 0, UINT32_MAX, &v, msg)) < 0)
                return r;
        s->uid_count = (uint32_t)v;
        if ((r = get_int(o, "memory_bytes", 0, JSON_INT_MAX, &v, msg)) < 0)
                return r;
        s->memory_bytes = (uint64_t)v;
        if ((r = get_int(o, "pids_max", 0, JSON_INT_MAX, &v, msg)) < 0)
                return r;
        s->pids_max = (uint64_t)v;
        if ((r = get_int(o, "cpu_period_us", 0, JSON_INT_MAX, &v, msg)) < 0)
                return r;
        s->cpu_period_us = (uint64_t)v;
        if ((r = get_int(o, "cpu_quota_us", -JSON_INT_MAX, JSON_INT_MAX, &v, msg)) < 0)
                return r;
        s->cpu_quota_us = (int64_t)v;
        if ((r = get_int(o, "disk_bytes", 0, JSON_INT_MAX, &v, msg)) < 0)
                return r;
        s->disk_bytes = (uint64_t)v;
        if (get_bool(o, "upper_on_host", false, &s->upper_on_host) < 0) {
                *msg = "upper_on_host must be a boolean";
                return -EINVAL;
        }
        if (cJSON_GetObjectItemCaseSensitive(o, "upper_subvol") &&
            (r = get_string(o, "upper_subvol", &s->upper_subvol, msg)) < 0)
                return r;
        if (cJSON_GetObjectItemCaseSensitive(o, "disk_image") &&
            (r = get_string(o, "disk_image", &s->disk_image, msg)) < 0)
                return r;
        return 0;
}

static int decode_object(const cJSON *o, struct sbx_jail_spec *s, const char **msg)
{
        int r;
        if ((r = get_string(o, "id", &s->id, msg)) < 0 ||
            (r = get_string(o, "rootfs", &s->rootfs, msg)) < 0 ||
            (r = get_string(o, "socket", &s->socket, msg)) < 0 ||
            (r = get_string(o, "agent", &s->agent, msg)) < 0 ||
            (cJSON_GetObjectItemCaseSensitive(o, "runtime") &&
             (r = get_string(o, "runtime", &s->runtime, msg)) < 0) ||
            (r = get_string(o, "cgroup", &s->cgroup, msg)) < 0 ||
            (r = decode_layers(o, s, msg)) < 0 || (r = decode_binds(o, s, msg)) < 0 ||
            (r = decode_volumes(o, s, msg)) < 0 || (r = decode_env(o, s, msg)) < 0 ||
            (r = decode_limits(o, s, msg)) < 0 ||
            (r = sbx_jail_egress_decode(o, &s->egress, msg)) < 0)
                return r;
        return 0;
}

int sbx_jail_spec_decode(const char *text, size_t len, struct sbx_jail_spec **ret_spec,
                         const char **ret_msg)
{
        const char *msg = "invalid spec";
        if (len > SBX_JAIL_SPEC_MAX) {
                *ret_msg = "spec too large";
                return -EINVAL;
        }
        /* Whatever follows the object is ignored, as it always was. */
        const char *end = NULL;
        _cleanup_json_ cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
        if (!cJSON_IsObject(root)) {
                *ret_msg = "spec is not a JSON object";
                return -EINVAL;
        }
        if (json_has_nul(text, (size_t)(end - text))) {
                *ret_msg = "spec: strings may not hold a NUL character";
                return -EINVAL;
        }
        _cleanup_jail_spec_ struct sbx_jail_spec *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        int r = decode_object(root, s, &msg);
        if (r == 0)
                r = sbx_jail_spec_validate(s, &msg);
        if (r < 0) {
                if (r == -EINVAL)
                        *ret_msg = msg;
                return r;
        }
        *ret_spec = TAKE_PTR(s);
        return 0;
}

/* ---- validation ---- */

static int check_path(const char *key, const char *path, const char **msg)
{
        if (sbx_jail_path_valid(path, false))
                return 0;
        *msg = field_msg(key, path_what);
        return -EINVAL;
}

static int check_range(const char *key, double v, double min, double max, const char **msg)
{
        if (v >= min && v <= max)
                return 0;
        *msg = field_msg(key, "not an integer or out of range");
        return -EINVAL;
}

static int validate_names(const struct sbx_jail_spec *s, const char **msg)
{
        int r;
        if (!sbx_jail_id_valid(s->id)) {
                *msg = "id must match [a-z0-9]{1,63}";
                return -EINVAL;
        }
        if ((r = check_path("rootfs", s->rootfs, msg)) < 0 ||
            (r = check_path("socket", s->socket, msg)) < 0 ||
            (r = check_path("agent", s->agent, msg)) < 0 ||
            (s->runtime && (r = check_path("runtime", s->runtime, msg)) < 0))
                return r;
        /* Long paths are bound via /proc/self/fd/<dirfd>/<name>: only the name must be short. */
        if (strlen(strrchr(s->socket, '/') + 1) > SBX_JAIL_SOCKET_NAME_MAX) {
                *msg = "socket: file name longer than 64 bytes";
                return -EINVAL;
        }
        if (!sbx_jail_cgroup_name_valid(s->cgroup)) {
                *msg = "cgroup must be a relative name of [A-Za-z0-9_-] components";
                return -EINVAL;
        }
        return 0;
}

/* Two volumes on one target would hide the first; a volume on a bind's target likewise. */
static int validate_volumes(const struct sbx_jail_spec *s, const char **msg)
{
        if (s->n_volumes > SBX_JAIL_VOLUMES_MAX) {
                *msg = "volumes must be an array of at most 16 objects";
                return -EINVAL;
        }
        for (size_t i = 0; i < s->n_volumes; i++) {
                int r = check_path("source", s->volumes[i].source, msg);
                if (r < 0)
                        return r;
                const char *t = s->volumes[i].target;
                if (!sbx_jail_bind_target_valid(t)) {
                        *msg = "volumes: target must be an absolute normalised path, not /, "
                               "/proc, /dev, /sys or /.sbx";
                        return -EINVAL;
                }
                bool dup = false;
                for (size_t j = 0; j < i; j++)
                        dup = dup || strcmp(s->volumes[j].target, t) == 0;
                for (size_t j = 0; j < s->n_binds; j++)
                        dup = dup || strcmp(s->binds[j].target, t) == 0;
                if (dup) {
                        *msg = "volumes: each target once, and not a bind's target";
                        return -EINVAL;
                }
        }
        return 0;
}

static int validate_lists(const struct sbx_jail_spec *s, const char **msg)
{
        int r;
        if (s->n_layers < 1 || s->n_layers > SBX_JAIL_LAYERS_MAX) {
                *msg = "layers must be an array of 1..64 paths";
                return -EINVAL;
        }
        for (size_t i = 0; i < s->n_layers; i++)
                if (!sbx_jail_path_valid(s->layers[i], false)) {
                        *msg = "layers: each layer must be an absolute normalised path";
                        return -EINVAL;
                }
        if (s->n_binds > SBX_JAIL_BINDS_MAX) {
                *msg = "binds must be an array of at most 32 objects";
                return -EINVAL;
        }
        for (size_t i = 0; i < s->n_binds; i++) {
                r = check_path("source", s->binds[i].source, msg);
                if (r < 0)
                        return r;
                if (!sbx_jail_bind_target_valid(s->binds[i].target)) {
                        *msg = "binds: target must be an absolute normalised path, not /, "
                               "/proc, /dev, /sys or /.sbx";
                        return -EINVAL;
                }
        }
        if ((r = validate_volumes(s, msg)) < 0)
                return r;
        if (s->n_env > SBX_JAIL_ENV_MAX) {
                *msg = "env must be an object of at most 256 strings";
                return -EINVAL;
        }
        for (size_t i = 0; i < s->n_env; i++)
                if (!sbx_jail_env_name_valid(s->env[i].name) || !s->env[i].value ||
                    strlen(s->env[i].value) > SBX_JAIL_ENV_VALUE_MAX) {
                        *msg = "env: keys are [A-Za-z_][A-Za-z0-9_]*, values strings <= 32 KiB";
                        return -EINVAL;
                }
        return 0;
}

static int validate_limits(const struct sbx_jail_spec *s, const char **msg)
{
        int r;
        /* Sandbox ids 0..count-1 map to host base..base+count-1. */
        if ((r = check_range("uid_base", s->uid_base, SBX_JAIL_UID_BASE_MIN, 4294967294.0, msg)) <
                0 ||
            (r = check_range("uid_count", s->uid_count, SBX_JAIL_UID_COUNT_MIN, 4294967294.0,
                             msg)) < 0)
                return r;
        if ((uint64_t)s->uid_base + s->uid_count > 4294967295ULL) {
                *msg = "uid_base + uid_count overflows the uid space";
                return -EINVAL;
        }
        if ((r = check_range("memory_bytes", (double)s->memory_bytes, SBX_JAIL_MEMORY_MIN,
                             SBX_JAIL_MEMORY_MAX, msg)) < 0 ||
            (r = check_range("pids_max", (double)s->pids_max, SBX_JAIL_PIDS_MIN, SBX_JAIL_PIDS_MAX,
                             msg)) < 0 ||
            (r = check_range("cpu_period_us", (double)s->cpu_period_us, SBX_JAIL_CPU_PERIOD_MIN,
                             SBX_JAIL_CPU_PERIOD_MAX, msg)) < 0 ||
            (r = check_range("cpu_quota_us", (double)s->cpu_quota_us, -1,
                             (double)SBX_JAIL_CPU_QUOTA_MAX, msg)) < 0)
                return r;
        if (s->cpu_quota_us != -1 && s->cpu_quota_us < SBX_JAIL_CPU_QUOTA_MIN) {
                *msg = "cpu_quota_us must be -1 (unlimited) or >= 1000";
                return -EINVAL;
        }
        if ((r = check_range("disk_bytes", (double)s->disk_bytes, SBX_JAIL_DISK_MIN,
                             SBX_JAIL_DISK_MAX, msg)) < 0)
                return r;
        if (s->disk_image) {
                if ((r = check_path("disk_image", s->disk_image, msg)) < 0)
                        return r;
                if (!s->upper_on_host) {
                        *msg = "disk_image needs upper_on_host";
                        return -EINVAL;
                }
        }
        if (s->upper_subvol) {
                if ((r = check_path("upper_subvol", s->upper_subvol, msg)) < 0)
                        return r;
                if (s->upper_on_host || s->disk_image) {
                        *msg = "upper_subvol excludes upper_on_host and disk_image";
                        return -EINVAL;
                }
        }
        return 0;
}

int sbx_jail_spec_validate(const struct sbx_jail_spec *s, const char **ret_msg)
{
        const char *msg = "invalid spec";
        int r = validate_names(s, &msg);
        if (r >= 0)
                r = validate_lists(s, &msg);
        if (r >= 0)
                r = validate_limits(s, &msg);
        if (r < 0)
                *ret_msg = msg;
        return r;
}
