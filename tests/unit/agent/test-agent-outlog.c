/* SPDX-License-Identifier: Apache-2.0 */
/* The retained output log behind attaching (process.Process/Connect): bounded,
 * reference-counted, read by sequence. */
#include <stdlib.h>
#include <string.h>

#include "proc/outlog.h"
#include "time-util.h"
#include "unit.h"

/* A reader walks the log by sequence: chunks in order with their stream, NONE when nothing
 * came before its deadline, END with the exit once the process ended; one that fell behind
 * skips what was dropped. */
static void test_reader(void)
{
        struct agent_outlog *l = agent_outlog_new();
        struct agent_outlog_item it;
        struct agent_exit ex = {.exit_code = 3, .exited = true, .status = "exit status 3"};
        uint64_t seq = 0;

        CHECK_EQ_INT(agent_outlog_next(l, &seq, now_ms(), &it), 0);
        CHECK_EQ_INT(it.kind, AGENT_OUTLOG_NONE);
        CHECK_EQ_INT(agent_outlog_append(l, AGENT_OUT_STDOUT, (const uint8_t *)"ab", 2), 0);
        CHECK_EQ_INT(agent_outlog_append(l, AGENT_OUT_STDERR, (const uint8_t *)"c", 1), 0);
        CHECK_EQ_INT(agent_outlog_next(l, &seq, now_ms(), &it), 0);
        CHECK(it.kind == AGENT_OUTLOG_CHUNK && it.stream == AGENT_OUT_STDOUT && it.len == 2 &&
              memcmp(it.data, "ab", 2) == 0);
        free(it.data);
        CHECK_EQ_INT(agent_outlog_next(l, &seq, now_ms(), &it), 0);
        CHECK(it.kind == AGENT_OUTLOG_CHUNK && it.stream == AGENT_OUT_STDERR && it.len == 1);
        free(it.data);
        CHECK_EQ_INT(agent_outlog_next(l, &seq, now_ms(), &it), 0);
        CHECK_EQ_INT(it.kind, AGENT_OUTLOG_NONE);

        /* Another reader from the start, after the oldest chunks were dropped. */
        static uint8_t big[AGENT_OUTLOG_MAX / 2 + 1];
        for (int i = 0; i < 3; i++)
                CHECK_EQ_INT(agent_outlog_append(l, AGENT_OUT_STDOUT, big, sizeof(big)), 0);
        uint64_t late = 0;
        CHECK_EQ_INT(agent_outlog_next(l, &late, now_ms(), &it), 0);
        CHECK(it.kind == AGENT_OUTLOG_CHUNK && it.len == sizeof(big));
        free(it.data);
        CHECK(late > 3); /* "ab", "c" and at least one big chunk were skipped */

        agent_outlog_finish(l, &ex, true);
        while (agent_outlog_next(l, &seq, now_ms(), &it) == 0 && it.kind == AGENT_OUTLOG_CHUNK)
                free(it.data);
        CHECK_EQ_INT(it.kind, AGENT_OUTLOG_END);
        CHECK_EQ_INT(it.exit.exit_code, 3);
        CHECK_STREQ(it.exit.status, "exit status 3");
        CHECK(it.deadline_killed);
        agent_outlog_unref(l);
}

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
        test_reader();
        return unit_finish("test-agent-outlog");
}
