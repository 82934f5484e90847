/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The systemd journal as the log sink (log.h's LOG_STYLE_SINK), through libsystemd's
 * sd_journal_sendv: each line with MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, and REQUEST_ID,
 * SANDBOX_ID and ERRNO when known. Linked into sbxd alone (the agent and the jailer stay free
 * of libsystemd).
 */
#pragma once

#include <stdbool.h>

/* Whether fd (1, 2) is the journal's stream: systemd sets $JOURNAL_STREAM to "DEV:INODE" of
 * the stream it connects, which a redirection since then no longer matches. */
bool log_journal_is_stream(int fd);

/* Send every line to the journal from now on. */
void log_journal_start(void);
