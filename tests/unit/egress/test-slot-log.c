/* SPDX-License-Identifier: Apache-2.0 */
/* The bound on log lines a sandbox's traffic causes in sbx-egress (serve/slot-log.h). */
#include <stdint.h>

#include "policy/link-addr.h"
#include "serve/slot-log.h"
#include "unit.h"

/* n lines for slot at now: how many were admitted; *left_out the last admitted one's count. */
static int offer(struct egress_log_limit *l, int slot, int64_t now, int n, unsigned *left_out)
{
        int ok = 0;
        for (int i = 0; i < n; i++) {
                unsigned lo = 0;
                if (egress_log_admit(l, slot, now, &lo)) {
                        ok++;
                        *left_out = lo;
                }
        }
        return ok;
}

static void test_per_sandbox(void)
{
        struct egress_log_limit *l = NULL;
        unsigned lo = 99;
        CHECK_EQ_INT(egress_log_limit_new(&l), 0);
        /* a sandbox refused in a loop: its share of the window, then nothing */
        CHECK_EQ_INT(offer(l, 7, 1000, 1000, &lo), EGRESS_LOG_PER_SANDBOX);
        CHECK_EQ_INT(lo, 0);
        /* another sandbox is not silenced by it */
        CHECK_EQ_INT(offer(l, 8, 1500, 1, &lo), 1);
        /* still in the window: nothing more of slot 7 */
        CHECK_EQ_INT(offer(l, 7, 1000 + EGRESS_LOG_WINDOW_MS - 1, 5, &lo), 0);
        /* the next window: its first line says how many were left out (990 + 5) */
        CHECK_EQ_INT(offer(l, 7, 1000 + EGRESS_LOG_WINDOW_MS, 1, &lo), 1);
        CHECK_EQ_INT(lo, 995);
        CHECK_EQ_INT(offer(l, 7, 1000 + EGRESS_LOG_WINDOW_MS, 1, &lo), 1);
        CHECK_EQ_INT(lo, 0);
        /* a slot outside the plan only counts against the common window */
        CHECK_EQ_INT(offer(l, EGRESS_SLOTS_MAX, 2000, 3, &lo), 3);
        CHECK_EQ_INT(offer(l, -1, 2000, 1, &lo), 1);
        egress_log_limit_free(l);
}

static void test_all_sandboxes(void)
{
        struct egress_log_limit *l = NULL;
        unsigned lo = 0;
        CHECK_EQ_INT(egress_log_limit_new(&l), 0);
        /* many sandboxes at once: EGRESS_LOG_ALL lines in the window, whatever their number */
        int ok = 0;
        for (int slot = 0; slot < 1000; slot++)
                ok += offer(l, slot, 5000, 3, &lo);
        CHECK_EQ_INT(ok, EGRESS_LOG_ALL);
        /* the ones silenced by the common cap learn it in their next line */
        CHECK_EQ_INT(offer(l, 999, 5000 + EGRESS_LOG_WINDOW_MS, 1, &lo), 1);
        CHECK_EQ_INT(lo, 3);
        /* an hour of a flood from one sandbox, a line a millisecond: ten a minute */
        int lines = 0;
        for (int64_t t = 10000000; t < 10000000 + 3600000; t++)
                lines += offer(l, 3, t, 1, &lo);
        CHECK_EQ_INT(lines, 60 * EGRESS_LOG_PER_SANDBOX);
        egress_log_limit_free(l);
}

int main(void)
{
        test_per_sandbox();
        test_all_sandboxes();
        return unit_finish("test-slot-log");
}
