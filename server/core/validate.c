/* SPDX-License-Identifier: Apache-2.0 */
#include "core/validate.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "json-util.h"
#include "macros.h"

int json_parse_body(const char *buf, size_t len, cJSON **ret, const char **ret_msg)
{
        if (len == 0) {
                *ret = NULL;
                return 0;
        }
        if (json_depth(buf, len) > JSON_MAX_DEPTH) {
                *ret_msg = "JSON nested too deeply";
                return -ELOOP;
        }
        cJSON *j = cJSON_ParseWithLength(buf, len);
        if (!j) {
                *ret_msg = "request body is not valid JSON";
                return -EBADMSG;
        }
        if (!cJSON_IsObject(j)) {
                cJSON_Delete(j);
                *ret_msg = "request body must be a JSON object";
                return -EBADMSG;
        }
        *ret = j;
        return 0;
}

static bool is_alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* n decimal digits at *p into *ret; advances *p. */
static bool digits(const char **p, int n, int *ret)
{
        int v = 0;
        for (int i = 0; i < n; i++) {
                char c = (*p)[i];
                if (c < '0' || c > '9')
                        return false;
                v = v * 10 + (c - '0');
        }
        *p += n;
        *ret = v;
        return true;
}

static bool expect(const char **p, char c)
{
        if (**p != c)
                return false;
        (*p)++;
        return true;
}

static int days_in_month(int y, int m)
{
        static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        return m == 2 && leap ? 29 : d[m - 1];
}

int validate_rfc3339_us(const char *s, int64_t *ret_us)
{
        const char *p = s;
        int y, mo, d, h, mi, sec, us = 0, off = 0;
        if (!s || !digits(&p, 4, &y) || !expect(&p, '-') || !digits(&p, 2, &mo) ||
            !expect(&p, '-') || !digits(&p, 2, &d) || (*p != 'T' && *p != 't'))
                return -EINVAL;
        p++;
        if (!digits(&p, 2, &h) || !expect(&p, ':') || !digits(&p, 2, &mi) || !expect(&p, ':') ||
            !digits(&p, 2, &sec))
                return -EINVAL;
        if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 59)
                return -EINVAL;
        if (*p == '.') {
                int n = 0;
                for (p++; *p >= '0' && *p <= '9'; p++, n++)
                        if (n < 6)
                                us = us * 10 + (*p - '0');
                if (n == 0 || n > 9)
                        return -EINVAL;
                for (; n < 6; n++)
                        us *= 10;
        }
        if (*p == 'Z' || *p == 'z') {
                p++;
        } else if (*p == '+' || *p == '-') {
                int sign = *p++ == '-' ? -1 : 1, oh, om;
                if (!digits(&p, 2, &oh) || !expect(&p, ':') || !digits(&p, 2, &om) || oh > 23 ||
                    om > 59)
                        return -EINVAL;
                off = sign * (oh * 3600 + om * 60);
        } else {
                return -EINVAL;
        }
        if (*p)
                return -EINVAL;
        struct tm tm = {.tm_year = y - 1900,
                        .tm_mon = mo - 1,
                        .tm_mday = d,
                        .tm_hour = h,
                        .tm_min = mi,
                        .tm_sec = sec};
        int64_t t = (int64_t)timegm(&tm) - off;
        *ret_us = t * 1000000 + us;
        return 0;
}

bool template_name_valid(const char *name)
{
        size_t l = name ? strlen(name) : 0;
        if (l == 0 || l > TEMPLATE_NAME_MAX || !is_alnum(name[0]) || strstr(name, ".."))
                return false;
        /* one ":tag" (an imported image's, storage/image-import.h), never first or last */
        const char *colon = strchr(name, ':');
        if (colon && (colon == name + l - 1 || strchr(colon + 1, ':')))
                return false;
        for (size_t i = 0; i < l; i++)
                if (!is_alnum(name[i]) && name[i] != '.' && name[i] != '_' && name[i] != '-' &&
                    name + i != colon)
                        return false;
        return true;
}

bool sandbox_id_valid(const char *id)
{
        size_t l = id ? strlen(id) : 0;
        if (l == 0 || l > 63)
                return false;
        for (size_t i = 0; i < l; i++)
                if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9')))
                        return false;
        return true;
}

int validate_timeout(const cJSON *body, int64_t def, int64_t *ret, const char **ret_msg)
{
        const cJSON *t = body ? cJSON_GetObjectItemCaseSensitive(body, "timeout") : NULL;
        if (!t || cJSON_IsNull(t)) {
                if (def < 0) {
                        *ret_msg = "timeout is required";
                        return -EINVAL;
                }
                *ret = def;
                return 0;
        }
        if (!cJSON_IsNumber(t)) {
                *ret_msg = "timeout must be an integer number of seconds";
                return -EINVAL;
        }
        if (!(t->valuedouble > 0)) {
                *ret_msg = "timeout must be greater than 0";
                return -EINVAL;
        }
        if (t->valuedouble > TIMEOUT_MAX_S) {
                *ret_msg = "Timeout cannot be greater than 24 hours";
                return -EINVAL;
        }
        if (t->valuedouble != (double)(int64_t)t->valuedouble) {
                *ret_msg = "timeout must be an integer number of seconds";
                return -EINVAL;
        }
        *ret = (int64_t)t->valuedouble;
        return 0;
}

int validate_string_map(const cJSON *body, const char *field, cJSON **ret, const char **ret_msg)
{
        const cJSON *m = body ? cJSON_GetObjectItemCaseSensitive(body, field) : NULL;
        static __thread char msg[128];
        size_t n = 0, total = 0;

        *ret = NULL;
        if (!m || cJSON_IsNull(m))
                return 0;
        if (!cJSON_IsObject(m)) {
                snprintf(msg, sizeof(msg), "%s must be an object of strings", field);
                *ret_msg = msg;
                return -EINVAL;
        }
        const cJSON *e;
        cJSON_ArrayForEach(e, m)
        {
                size_t kl = strlen(e->string);
                if (!cJSON_IsString(e)) {
                        snprintf(msg, sizeof(msg), "%s values must be strings", field);
                        *ret_msg = msg;
                        return -EINVAL;
                }
                size_t vl = strlen(e->valuestring);
                if (++n > MAP_MAX_ENTRIES || kl == 0 || kl > MAP_MAX_KEY || vl > MAP_MAX_VALUE ||
                    (total += kl + vl) > MAP_MAX_TOTAL) {
                        snprintf(msg, sizeof(msg),
                                 "%s too large or has an empty key (max %d entries, key %d, "
                                 "value %d bytes)",
                                 field, MAP_MAX_ENTRIES, MAP_MAX_KEY, MAP_MAX_VALUE);
                        *ret_msg = msg;
                        return -EINVAL;
                }
        }
        cJSON *copy = cJSON_Duplicate(m, 1);
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        return 0;
}

/* Refused rather than read as something else: json_has_nul(). */
int validate_no_nul(const char *text, size_t len, const char **ret_msg)
{
        if (!json_has_nul(text, len))
                return 0;
        *ret_msg = "strings may not hold a NUL character";
        return -EINVAL;
}

int validate_env_map(const cJSON *body, const char *field, cJSON **ret, const char **ret_msg)
{
        _cleanup_json_ cJSON *m = NULL;
        int r = validate_string_map(body, field, &m, ret_msg);
        if (r < 0)
                return r;
        const cJSON *e;
        cJSON_ArrayForEach(e, m)
        {
                if (strchr(e->string, '=')) {
                        static __thread char msg[128];
                        snprintf(msg, sizeof(msg), "%s keys may not contain '='", field);
                        *ret_msg = msg;
                        return -EINVAL;
                }
        }
        *ret = TAKE_PTR(m);
        return 0;
}

void create_params_done(struct create_params *p)
{
        cJSON_Delete(p->metadata);
        cJSON_Delete(p->env_vars);
        cJSON_Delete(p->volume_mounts);
        p->metadata = p->env_vars = p->volume_mounts = NULL;
        net_policy_done(&p->net);
}

/* volumeMounts: absent, null or [] = none; else at most SANDBOX_MAX_VOLUME_MOUNTS objects
 * with string name and path (what they name is checked at create). */
static int validate_volume_mounts(const cJSON *body, cJSON **ret, const char **ret_msg)
{
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(body, "volumeMounts"), *e;
        if (!a || cJSON_IsNull(a))
                return 0;
        int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
        bool ok = n >= 0 && n <= SANDBOX_MAX_VOLUME_MOUNTS;
        const cJSON *list = ok ? a : NULL;
        cJSON_ArrayForEach(e, list)
        {
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
                const cJSON *path = cJSON_GetObjectItemCaseSensitive(e, "path");
                ok = ok && cJSON_IsObject(e) && cJSON_IsString(name) && cJSON_IsString(path);
        }
        if (!ok) {
                *ret_msg = "volumeMounts must be an array of at most 16 objects {\"name\": "
                           "string, \"path\": string}";
                return -EINVAL;
        }
        if (n == 0)
                return 0;
        *ret = cJSON_Duplicate(a, 1);
        return *ret ? 0 : -ENOMEM;
}

/* Optional integer member in [min, max]; absent/null leaves *ret alone. */
static int opt_uint(const cJSON *body, const char *name, unsigned min, unsigned max, unsigned *ret,
                    const char **ret_msg)
{
        const cJSON *v = body ? cJSON_GetObjectItemCaseSensitive(body, name) : NULL;
        if (!v || cJSON_IsNull(v))
                return 0;
        /* The range first: converting a double outside int64_t's range (1e300) is undefined. */
        if (!cJSON_IsNumber(v) || v->valuedouble < min || v->valuedouble > max ||
            v->valuedouble != (double)(int64_t)v->valuedouble) {
                static __thread char msg[128];
                snprintf(msg, sizeof(msg), "%s must be an integer between %u and %u", name, min,
                         max);
                *ret_msg = msg;
                return -EINVAL;
        }
        *ret = (unsigned)v->valuedouble;
        return 0;
}

int validate_sizes(const cJSON *body, const char *cpu, const char *memory, const char *disk,
                   struct create_params *p, const char **ret_msg)
{
        int r = opt_uint(body, cpu, 1, SANDBOX_MAX_CPU, &p->cpu_count, ret_msg);
        if (r >= 0)
                r = opt_uint(body, memory, SANDBOX_MIN_MEMORY_MB, SANDBOX_MAX_MEMORY_MB,
                             &p->memory_mb, ret_msg);
        if (r >= 0)
                r = opt_uint(body, disk, SANDBOX_MIN_DISK_MB, SANDBOX_MAX_DISK_MB, &p->disk_mb,
                             ret_msg);
        return r;
}

/* autoPause (bool) and autoResume ({enabled: bool}); anything else there is a 400. */
static int lifecycle_fields(const cJSON *body, struct create_params *p, const char **ret_msg)
{
        const cJSON *ap = body ? cJSON_GetObjectItemCaseSensitive(body, "autoPause") : NULL;
        const cJSON *ar = body ? cJSON_GetObjectItemCaseSensitive(body, "autoResume") : NULL;
        if (ap && !cJSON_IsNull(ap) && !cJSON_IsBool(ap)) {
                *ret_msg = "autoPause must be a boolean";
                return -EINVAL;
        }
        p->auto_pause = cJSON_IsTrue(ap);
        const cJSON *apm = body ? cJSON_GetObjectItemCaseSensitive(body, "autoPauseMemory") : NULL;
        if (apm && !cJSON_IsNull(apm) && !cJSON_IsBool(apm)) {
                *ret_msg = "autoPauseMemory must be a boolean";
                return -EINVAL;
        }
        p->pause_drops_memory = cJSON_IsFalse(apm);
        if (ar && !cJSON_IsNull(ar)) {
                const cJSON *en = cJSON_GetObjectItemCaseSensitive(ar, "enabled");
                if (!cJSON_IsObject(ar) || (en && !cJSON_IsBool(en))) {
                        *ret_msg = "autoResume must be {\"enabled\": bool}";
                        return -EINVAL;
                }
                p->auto_resume = cJSON_IsTrue(en);
        }
        if (p->pause_drops_memory && p->auto_resume) {
                /* E2B's rule too: files only means a fresh start, which connect asks for */
                *ret_msg = "autoResume cannot be used with autoPauseMemory false: a "
                           "filesystem-only pause is resumed by connect";
                return -EINVAL;
        }
        return validate_sizes(body, "cpuCount", "memoryMB", "diskSizeMB", p, ret_msg);
}

/* A Host value: printable ASCII, no space and nothing that ends a host in a URL. */
static bool mask_host_valid(const char *h)
{
        size_t l = strlen(h);
        if (l == 0 || l > MASK_HOST_MAX)
                return false;
        for (const char *c = h; *c; c++)
                if (*c <= ' ' || *c >= 127 || strchr("/?#@\\\"<>", *c))
                        return false;
        return true;
}

/* network: allowPublicTraffic (bool) and maskRequestHost (string); the egress fields are
 * accepted and not acted on (sandboxes have no network out: server/README.md). */
static int network_fields(const cJSON *body, struct create_params *p, const char **ret_msg)
{
        static __thread char msg[MASK_HOST_MAX + 64];
        const cJSON *n = body ? cJSON_GetObjectItemCaseSensitive(body, "network") : NULL;
        if (!n || cJSON_IsNull(n))
                return 0;
        if (!cJSON_IsObject(n)) {
                *ret_msg = "network must be an object";
                return -EINVAL;
        }
        const cJSON *pub = cJSON_GetObjectItemCaseSensitive(n, "allowPublicTraffic");
        if (pub && !cJSON_IsNull(pub) && !cJSON_IsBool(pub)) {
                *ret_msg = "network.allowPublicTraffic must be a boolean";
                return -EINVAL;
        }
        p->private_traffic = cJSON_IsFalse(pub);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(n, "maskRequestHost");
        if (!m || cJSON_IsNull(m))
                return 0;
        if (!cJSON_IsString(m) || !mask_host_valid(m->valuestring)) {
                /* E2B's message (its API refuses a host it cannot split or that is not ASCII) */
                snprintf(msg, sizeof(msg), "mask request host is not valid: %.*s", MASK_HOST_MAX,
                         cJSON_IsString(m) ? m->valuestring : "");
                *ret_msg = msg;
                return -EINVAL;
        }
        strcpy(p->mask_host, m->valuestring);
        return 0;
}

int validate_create(const cJSON *body, const char *text, size_t len, struct create_params *ret,
                    const char **ret_msg)
{
        struct create_params p = {.net.internet = -1};
        int r = validate_no_nul(text, len, ret_msg);
        if (r < 0)
                return r;

        const cJSON *t = body ? cJSON_GetObjectItemCaseSensitive(body, "templateID") : NULL;
        if (!cJSON_IsString(t) || !t->valuestring[0]) {
                *ret_msg = "templateID is required";
                return -EINVAL;
        }
        if (!template_name_valid(t->valuestring)) {
                *ret_msg = "Invalid template reference";
                return -EINVAL;
        }
        strcpy(p.template_id, t->valuestring);

        r = validate_timeout(body, TIMEOUT_DEFAULT_S, &p.timeout_s, ret_msg);
        if (r < 0)
                return r;
        r = lifecycle_fields(body, &p, ret_msg);
        if (r >= 0)
                r = network_fields(body, &p, ret_msg);
        if (r >= 0)
                r = validate_string_map(body, "metadata", &p.metadata, ret_msg);
        if (r >= 0)
                r = validate_env_map(body, "envVars", &p.env_vars, ret_msg);
        if (r >= 0)
                r = validate_volume_mounts(body, &p.volume_mounts, ret_msg);
        if (r >= 0) /* egress: egress/policy/net-policy.h */
                r = net_policy_parse(body, "network", &p.net, ret_msg);
        if (r < 0) {
                create_params_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}
