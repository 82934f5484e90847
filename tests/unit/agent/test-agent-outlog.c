/* SPDX-License-Identifier: Apache-2.0 */
/* The retained output log behind process.Process/Connect: bounded, reference-counted. */
#include <string.h>

#include "proc/outlog.h"
#include "unit.h"

int main(void)
{
        static uint8_t chunk[32 * 1024];
        struct agent_outlog *l = agent_outlog_new();
        struct agent_exit ex = {.exit_code = 0, .exited = true};

        CHECK(l != NULL);
        CHECK_EQ_INT(agent_outlog_bytes(l), 0);
        CHECK_EQ_INT(agent_outlog_append(l, AGENT_OUT_STDOUT, (const uint8_t *)"abc", 3), 0);
        CHECK_EQ_INT(agent_outlog_bytes(l), 3);

        /* 10 MB through the log keeps at most AGENT_OUTLOG_MAX bytes. */
        memset(chunk, 'y', sizeof(chunk));
        for (int i = 0; i < 320; i++)
                CHECK_EQ_INT(agent_outlog_append(l, AGENT_OUT_STDERR, chunk, sizeof(chunk)), 0);
        CHECK(agent_outlog_bytes(l) <= AGENT_OUTLOG_MAX);
        CHECK(agent_outlog_bytes(l) >= AGENT_OUTLOG_MAX - sizeof(chunk));

        /* Many tiny chunks are bounded by count too (no quadratic scans later). */
        for (int i = 0; i < 20000; i++)
                CHECK_EQ_INT(agent_outlog_append(l, AGENT_OUT_PTY, (const uint8_t *)"x", 1), 0);
        CHECK(agent_outlog_bytes(l) <= AGENT_OUTLOG_MAX);

        agent_outlog_finish(l, &ex, false);
        CHECK(agent_outlog_ref(l) == l);
        agent_outlog_unref(l);
        agent_outlog_unref(l);
        return unit_finish("test-agent-outlog");
}
