/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/start-cmd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "channel/agent-exec.h"
#include "log.h"
#include "time-util.h"

static void sleep_ms(int ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
}

int lifecycle_start_cmd(const struct sandbox *s, const struct template_info *t, char *errmsg,
                        size_t errlen)
{
        char why[512] = "";
        int code = 0, r;
        if (t->start_cmd) {
                struct agent_exec e = {.cmd = t->start_cmd, .detach = true};
                r = agent_exec_run(s->dir, &e, &code, why, sizeof(why));
                if (r < 0) {
                        snprintf(errmsg, errlen, "sandbox start failed at start-cmd: %s",
                                 why[0] ? why : strerror(-r));
                        return log_error_errno(r, "sandbox %s: start command: %s: %m", s->id, why);
                }
        }
        if (!t->ready_cmd)
                return 0;
        int64_t until = now_ms() + START_CMD_READY_TIMEOUT_MS;
        do {
                struct agent_exec e = {.cmd = t->ready_cmd, .timeout_ms = START_CMD_READY_RUN_MS};
                r = agent_exec_run(s->dir, &e, &code, why, sizeof(why));
                if (r >= 0 && code == 0)
                        return 0;
                sleep_ms(START_CMD_READY_POLL_MS);
        } while (now_ms() < until);
        snprintf(errmsg, errlen,
                 "sandbox start failed at ready-cmd: the template's ready command did not "
                 "succeed within %d s",
                 START_CMD_READY_TIMEOUT_MS / 1000);
        log_error("sandbox %s: ready command never succeeded (last: %s)", s->id,
                  r < 0 ? strerror(-r) : "a non-zero exit");
        return -ETIMEDOUT;
}
