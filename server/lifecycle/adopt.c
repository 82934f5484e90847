/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/adopt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <time.h>
#include <unistd.h>

#include "cgroup-freeze.h"
#include "fd-util.h"
#include "lifecycle/agent-log.h"
#include "lifecycle/lifecycle.h"
#include "log.h"
#include "macros.h"
#include "missing-syscalls.h"
#include "lifecycle/monitor.h"
#include "lifecycle/teardown.h"
#include "lifecycle/volume-mounts.h"
#include "core/validate.h"

static const char *get_str(const cJSON *j, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double get_num(const cJSON *j, const char *k, double def)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
        return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static cJSON *get_map(const cJSON *j, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
        return cJSON_IsObject(v) && cJSON_GetArraySize(v) > 0 ? cJSON_Duplicate(v, 1) : NULL;
}

/* A record's volumeMounts: [{name, path, volumeID}] of strings. */
static bool mounts_valid(const cJSON *vm)
{
        const cJSON *m;
        if (!cJSON_IsArray(vm))
                return false;
        cJSON_ArrayForEach(m, vm)
        {
                if (!get_str(m, "name") || !get_str(m, "path") || !get_str(m, "volumeID"))
                        return false;
        }
        return true;
}

int adopt_parse_record(const char *text, struct sandbox **ret)
{
        cJSON *j = cJSON_Parse(text);
        const char *id = get_str(j, "sandboxID"), *tpl = get_str(j, "templateID");
        const char *tok = get_str(j, "envdAccessToken");
        /* a private sandbox's traffic token: a record with a broken one is not adopted (its
         * ports would otherwise open to everyone) */
        const char *tt = get_str(j, "trafficAccessToken");
        double pid = get_num(j, "pid", 0), slot = get_num(j, "uidSlot", -1);
        bool persisted = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "persisted"));
        int r = -EBADMSG;
        if (!cJSON_IsObject(j) || !sandbox_id_valid(id) || strlen(id) > 20 ||
            !template_name_valid(tpl) || !tok || strlen(tok) != 2 * TOKEN_HEX_BYTES ||
            (!persisted && pid < 2) || pid < 0 || pid > 4194304 || slot < 0 ||
            slot >= REGISTRY_MAX_SLOTS ||
            (tt &&
             (strlen(tt) != 2 * TOKEN_HEX_BYTES || strspn(tt, "0123456789abcdef") != strlen(tt))))
                goto out;
        struct sandbox *s = sandbox_new();
        if (!s) {
                r = -ENOMEM;
                goto out;
        }
        strcpy(s->id, id);
        strcpy(s->template_id, tpl);
        strcpy(s->token, tok);
        s->pid = (pid_t)pid;
        s->slot = (int)slot;
        sandbox_set_started_from_record(s, j);
        sandbox_set_end_at(s, (int64_t)get_num(j, "endAtUnix", 0));
        s->cpu_count = (unsigned)get_num(j, "cpuCount", 0);
        s->memory_mb = (unsigned)get_num(j, "memoryMB", 0);
        s->disk_mb = (unsigned)get_num(j, "diskSizeMB", 0);
        s->metadata = get_map(j, "metadata");
        s->env_vars = get_map(j, "envVars");
        s->persisted = persisted;
        s->paused_at = (int64_t)get_num(j, "pausedAtUnix", 0);
        sandbox_set_paused(s, persisted || streq_ptr(get_str(j, "state"), "paused"));
        s->auto_pause = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "autoPause"));
        s->pause_drops_memory =
            cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "autoPauseMemory"));
        s->auto_resume = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "autoResume"));
        s->timeout_s = (int64_t)get_num(j, "timeoutSeconds", TIMEOUT_DEFAULT_S);
        snprintf(s->traffic_token, sizeof(s->traffic_token), "%s", tt ? tt : "");
        const char *mh = get_str(j, "maskRequestHost");
        snprintf(s->mask_host, sizeof(s->mask_host), "%s", mh ? mh : "");
        s->pool = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "pool"));
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(j, "layers");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "binds");
        if (cJSON_IsArray(l))
                s->layers = cJSON_Duplicate(l, 1);
        if (cJSON_IsArray(b))
                s->binds = cJSON_Duplicate(b, 1);
        const cJSON *vm = cJSON_GetObjectItemCaseSensitive(j, "volumeMounts");
        if (mounts_valid(vm) && cJSON_GetArraySize(vm) > 0)
                s->volume_mounts = cJSON_Duplicate(vm, 1);
        struct net_policy *net = NULL;
        if (sandbox_net_from_record(j, &net) < 0) { /* an unreadable policy: never wider */
                sandbox_unref(s);
                goto out;
        }
        sandbox_set_net(s, net);
        *ret = s;
        r = 0;
out:
        cJSON_Delete(j);
        return r;
}

/* Is pid still the agent of sandbox id? Its cgroup (any hierarchy) must be sbx/<id>. */
static int owns_pid(const struct sandbox *s)
{
        char path[64], want[64];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)s->pid);
        snprintf(want, sizeof(want), ":/%s/%s\n", CGROUP_PARENT, s->id);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        _cleanup_free_ char *buf = NULL;
        size_t len;
        if (read_all(fd, 64 * 1024, &buf, &len) < 0)
                return 0;
        return strstr(buf, want) != NULL;
}

#define ADOPT_FREEZE_TIMEOUT_MS 2000

static int load_one(struct server *srv, const char *dir, struct sandbox **ret)
{
        char path[4096 + 512];
        if ((size_t)snprintf(path, sizeof(path), "%s/sandbox.json", dir) >= sizeof(path))
                return -ENAMETOOLONG;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = read_all(fd, 1024 * 1024, &text, &len);
        if (r < 0)
                return r;
        _cleanup_sandbox_ struct sandbox *s = NULL;
        r = adopt_parse_record(text, &s);
        if (r < 0)
                return r;
        s->dir = strdup(dir);
        if (!s->dir)
                return -ENOMEM;
        if (s->pool)
                return -ESTALE; /* a warm-pool member of a crashed sbxd: not a user's */
        if (s->persisted) {     /* on disk, no processes */
                if (s->pid != 0) {
                        /* sbxd stopped between recording the layer and stopping the processes:
                         * stop what is left by its cgroup (never by a pid that may be reused) */
                        int t = teardown_processes(s->id, 0, -EBADF, s->dir);
                        if (t < 0)
                                return t;
                        s->pid = 0;
                }
                r = registry_slot_reserve(srv->registry, s->slot);
                if (r >= 0)
                        *ret = TAKE_PTR(s);
                return r;
        }
        /* pidfd first, then the ownership check: a pid recycled after the check cannot slip in */
        s->pidfd = pidfd_open(s->pid, 0);
        if ((s->pidfd < 0 && errno != ENOSYS) || !owns_pid(s))
                return -ESRCH;
        /* the agent's stderr is the FIFO its start made: drain it again (agent-log.h) */
        char fifo[4096];
        r = agent_log_open(s->dir, &s->log, fifo, sizeof(fifo));
        if (r < 0)
                log_warning_errno(r, "sandbox %s: draining the agent's log: %m", s->id);
        r = registry_slot_reserve(srv->registry, s->slot);
        if (r < 0)
                return r;
        /* The record is the truth: it says what clients were told. A sandbox frozen by an sbxd
         * that stopped mid-snapshot (or mid-pause, before the record said so) is thawed; one
         * recorded paused but found running (stopped mid-resume) is frozen again. */
        char cg[96];
        snprintf(cg, sizeof(cg), "%s/%s", CGROUP_PARENT, s->id);
        bool want = sandbox_is_paused(s);
        int frozen = cgroup_is_frozen(cg);
        if (frozen >= 0 && frozen != want) {
                r = cgroup_freeze(cg, want, ADOPT_FREEZE_TIMEOUT_MS);
                if (r < 0)
                        return r;
                log_info("sandbox %s: %s, as its record says", s->id,
                         want ? "frozen again" : "thawed");
        }
        if (want && !s->paused_at)
                s->paused_at = (int64_t)time(NULL);
        *ret = TAKE_PTR(s);
        return 0;
}

int adopt_sandboxes(struct server *srv)
{
        char base[4096];
        snprintf(base, sizeof(base), "%s/sandboxes", srv->config->state_dir);
        DIR *d = opendir(base);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                char dir[4096 + 256];
                if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", base, de->d_name) >= sizeof(dir))
                        continue;
                struct sandbox *s = NULL;
                log_context_set(NULL, sandbox_id_valid(de->d_name) ? de->d_name : NULL);
                int r = sandbox_id_valid(de->d_name) ? load_one(srv, dir, &s) : -EINVAL;
                if (r >= 0 && strcmp(s->id, de->d_name) != 0)
                        r = -EBADMSG;
                if (r >= 0)
                        r = registry_add(srv->registry, s);
                if (r < 0) {
                        log_warning_errno(r,
                                          "sandbox %s from an earlier run: not adoptable (%m), "
                                          "removing what is left of it",
                                          de->d_name);
                        if (s)
                                registry_slot_release(srv->registry, s->slot);
                        sandbox_unref(s);
                        int t = teardown_sandbox(de->d_name, 0, -1, dir);
                        if (t < 0)
                                log_error_errno(t, "sandbox %s: cleanup incomplete: %m",
                                                de->d_name);
                        continue;
                }
                /* its volumes are in use again; a mount the earlier run left is taken over */
                char msg[256];
                r = volume_mounts_acquire(srv, s, msg, sizeof(msg));
                if (r < 0)
                        log_warning_errno(r, "sandbox %s: its volumes: %s (%m)", s->id, msg);
                monitor_watch(srv, s);
                log_info("sandbox %s: adopted (pid %d, uid slot %d)", s->id, (int)s->pid, s->slot);
                sandbox_unref(s);
                n++;
        }
        closedir(d);
        log_context_set(NULL, NULL);
        return n;
}
