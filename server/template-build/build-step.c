/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A step's build sandbox: started like a warm-pool member (jailer, agent, /init; unregistered,
 * unlisted, its record marked "pool" so that a restarted sbxd removes it), on the build's
 * layers, with the build's run dir bound read-only at BUILD_RUN_MOUNT and the agent's egress
 * relay on. Its commands run through the agent's envd as their user; its upper becomes a
 * layer of the store (the same ingest as a snapshot's), then it is torn down.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "template-build/build-run.h"
#include "channel/agent-exec.h"
#include "json-util.h"
#include "lifecycle/lifecycle.h"
#include "lifecycle/upper.h"
#include "lifecycle/registry.h"
#include "lifecycle/sandbox.h"
#include "log.h"
#include "storage/layer-store.h"

void run_log(struct run *x, const char *level, const char *fmt, ...)
{
        char msg[BUILD_MAX_LOG_LINE];
        va_list ap;
        if (x->log_count > BUILD_MAX_LOG_ENTRIES)
                return;
        if (x->log_count++ == BUILD_MAX_LOG_ENTRIES) {
                build_log(x->b, x->bid, x->step[0] ? x->step : NULL, "warn",
                          "(the log is cut here: more than %d entries)", BUILD_MAX_LOG_ENTRIES);
                return;
        }
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        build_log(x->b, x->bid, x->step[0] ? x->step : NULL, level, "%s", msg);
}

/* Output cut into lines, each one a log entry. */
struct out_lines {
        struct run *x;
        char buf[2][BUILD_MAX_LOG_LINE];
        size_t len[2];
};

static void flush_line(struct out_lines *o, int s)
{
        if (o->len[s] == 0)
                return;
        o->buf[s][o->len[s]] = 0;
        run_log(o->x, "info", "%s", o->buf[s]);
        o->len[s] = 0;
}

static void on_output(void *userdata, enum agent_exec_stream stream, const char *data, size_t len)
{
        struct out_lines *o = userdata;
        int s = stream == AGENT_EXEC_STDERR;
        for (size_t i = 0; i < len; i++) {
                char c = data[i];
                if (c == '\n' || c == '\r') {
                        flush_line(o, s);
                        continue;
                }
                if (o->len[s] >= sizeof(o->buf[s]) - 1)
                        flush_line(o, s);
                o->buf[s][o->len[s]++] = c;
        }
}

/* The in-memory template a build sandbox starts from. */
static int sandbox_template(struct run *x, struct template_info *t)
{
        char path[4096], relay[4200];
        const cJSON *l;
        *t = (struct template_info){.cpu_count = x->cpu, .memory_mb = x->mem, .disk_mb = x->disk};
        t->layers = cJSON_CreateArray();
        cJSON_ArrayForEach(l, x->layers)
        {
                layer_store_path(x->b->state, l->valuestring + strlen(LAYER_PREFIX), path,
                                 sizeof(path));
                cJSON_AddItemToArray(t->layers, cJSON_CreateString(path));
        }
        t->binds = cJSON_Duplicate(x->binds, 1);
        cJSON *bind = cJSON_CreateObject();
        cJSON_AddStringToObject(bind, "source", x->run_dir);
        cJSON_AddStringToObject(bind, "target", BUILD_RUN_MOUNT);
        cJSON_AddTrueToObject(bind, "readonly");
        cJSON_AddItemToArray(t->binds, bind);
        t->env = cJSON_CreateObject();
        snprintf(relay, sizeof(relay), "%d=" BUILD_RUN_MOUNT "/egress.sock", BUILD_EGRESS_PORT);
        cJSON_AddStringToObject(t->env, "SBX_EGRESS_RELAY", relay);
        t->default_user = strdup("root");
        t->default_workdir = strdup("/");
        return t->layers && t->binds && t->env && t->default_user && t->default_workdir ? 0
                                                                                        : -ENOMEM;
}

static int start_sandbox(struct run *x, const struct template_info *t, struct sandbox **ret,
                         char *err)
{
        struct server *srv = x->b->srv;
        char why[512] = "";
        struct sandbox *s = sandbox_new();
        int r = s ? registry_slot_acquire(srv->registry, &s->slot) : -ENOMEM;
        if (r >= 0)
                r = lifecycle_new_identity(s);
        if (r >= 0) {
                snprintf(s->template_id, sizeof(s->template_id), "%s", x->tid);
                s->cpu_count = t->cpu_count;
                s->memory_mb = t->memory_mb;
                s->disk_mb = t->disk_mb;
                s->pool = true; /* not a user's: unlisted, removed by a restarted sbxd */
                sandbox_set_started_now(s);
                if (!(s->layers = cJSON_Duplicate(t->layers, 1)) ||
                    !(s->binds = cJSON_Duplicate(t->binds, 1)))
                        r = -ENOMEM;
        }
        layer_store_read_lock(); /* until its record names the layers: no gc meanwhile */
        if (r >= 0)
                r = lifecycle_spawn(srv, s, t, why, sizeof(why));
        layer_store_unlock();
        if (r < 0) {
                if (s && s->slot >= 0)
                        lifecycle_destroy(srv, s, "build sandbox start failed");
                else
                        sandbox_unref(s);
                return ERR(r, "the build sandbox did not start: %s", why[0] ? why : strerror(-r));
        }
        *ret = s;
        return 0;
}

struct capture {
        char buf[64];
        size_t len;
};

static void on_capture(void *userdata, enum agent_exec_stream stream, const char *data, size_t len)
{
        struct capture *c = userdata;
        for (size_t i = 0; stream == AGENT_EXEC_STDOUT && i < len; i++)
                if (c->len < sizeof(c->buf) - 1)
                        c->buf[c->len++] = data[i];
}

/* The user cmd's owner_probe names ("" when none), or -errno. */
static int probe_owner(struct run *x, struct sandbox *s, const struct step_cmd *cmd,
                       char ret[static 64])
{
        struct capture c = {};
        struct agent_exec e = {.cmd = cmd->owner_probe,
                               .user = "root",
                               .cwd = cmd->cwd,
                               .envs = cmd->env,
                               .timeout_ms = 60000,
                               .output = on_capture,
                               .userdata = &c};
        char why[512];
        int code = 0;
        int r = agent_exec_run(s->dir, &e, &code, why, sizeof(why));
        ret[0] = 0;
        if (r < 0 || code != 0)
                return r < 0 ? r : 0;
        c.buf[c.len] = 0;
        c.buf[strcspn(c.buf, "\n")] = 0;
        for (const char *p = c.buf; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'))
                        return 0;
        memcpy(ret, c.buf, c.len + 1);
        if (ret[0])
                run_log(x, "info", "(root may not write there: as %s, its owner)", ret);
        return 0;
}

/* Run cmds in s in order; the first failure ends it. */
static int run_cmds(struct run *x, struct sandbox *s, const struct step_cmd *cmds, size_t n,
                    char *err)
{
        for (size_t i = 0; i < n; i++) {
                char owner[64] = "";
                if (cmds[i].owner_probe) {
                        int r = probe_owner(x, s, &cmds[i], owner);
                        if (r < 0)
                                return ERR(r, "the copy's destination could not be checked: %s",
                                           strerror(-r));
                }
                struct out_lines *o = calloc(1, sizeof(*o));
                if (!o)
                        return -ENOMEM;
                o->x = x;
                struct agent_exec e = {.cmd = cmds[i].cmd,
                                       .user = owner[0] ? owner : cmds[i].user,
                                       .cwd = cmds[i].cwd,
                                       .envs = cmds[i].env,
                                       .timeout_ms = BUILD_STEP_TIMEOUT_MS,
                                       .output = on_output,
                                       .userdata = o};
                char why[512] = "";
                int code = 0;
                int r = agent_exec_run(s->dir, &e, &code, why, sizeof(why));
                flush_line(o, 0);
                flush_line(o, 1);
                free(o);
                /* in E2B's words: "failed to run command '<cmd>': command failed:
                 * <Connect code>: <message>" (agent_exec_run() gives the code) */
                if (r < 0)
                        return ERR(r == -ENOENT ? -EINVAL : r,
                                   "failed to run command '%s': command failed: %s", cmds[i].cmd,
                                   why[0] ? why : strerror(-r));
                if (code != 0)
                        return ERR(-ECANCELED,
                                   code < 0 ? "failed to run command '%s': the command was killed "
                                              "(signal or the %d s step timeout)"
                                            : "failed to run command '%s': the command exited with "
                                              "code %d",
                                   cmds[i].cmd, code < 0 ? BUILD_STEP_TIMEOUT_MS / 1000 : code);
        }
        return 0;
}

/* The upper minus the run dir's mount point (the jailer made it for the bind). */
static void drop_mountpoint(const struct server *srv, const struct sandbox *s)
{
        char upper[4300];
        uid_t base;
        if (lifecycle_upper_dir(srv, s, upper, sizeof(upper), &base) < 0)
                return;
        int fd = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
                (void)unlinkat(fd, &BUILD_RUN_MOUNT[1], AT_REMOVEDIR);
                close(fd);
        }
}

int build_step_sandbox(struct run *x, const struct step_cmd *cmds, size_t n, const char *key,
                       char *ret_hex, char *err)
{
        struct template_info t;
        struct sandbox *s = NULL;
        int r = sandbox_template(x, &t);
        if (r >= 0)
                r = start_sandbox(x, &t, &s, err);
        template_done(&t);
        if (r < 0)
                return r;
        r = run_cmds(x, s, cmds, n, err);
        if (r >= 0) {
                drop_mountpoint(x->b->srv, s);
                layer_store_read_lock();
                r = lifecycle_upper_ingest(x->b->srv, s, ret_hex);
                if (r >= 0) {
                        _cleanup_json_ cJSON *refs = cJSON_CreateArray();
                        layer_store_ref_add(refs, ret_hex);
                        build_cache_put(x, key, refs);
                }
                layer_store_unlock();
                if (r < 0)
                        ERR(r, "keeping the step's files as a layer failed: %s", strerror(-r));
        }
        lifecycle_destroy(x->b->srv, s, "build step done");
        return r;
}

int build_step_finalize(struct run *x, const struct template_info *t, char *err)
{
        struct sandbox *s = NULL;
        int r = start_sandbox(x, t, &s, err);
        if (r < 0)
                return r;
        lifecycle_destroy(x->b->srv, s, "build finalize done");
        return 0;
}
