/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The code-interpreter API inside the sandbox: HTTP/1.1 on 127.0.0.1:49999 and [::1]:49999, as
 * E2B's template serves it to code running in the sandbox (GET /health, POST /execute,
 * /contexts). Each connection carries one request (answered chunked, then closed), bridged
 * into the agent's own channel: the request becomes frames on a socketpair that
 * core/server.h serves like one from sbxd, so the answers are the port-49999 routes' own.
 * Loopback only: nothing outside the sandbox reaches it (sbxd's proxy is the way in there).
 */
#pragma once

#define CODE_INSIDE_MAX_CONNECTIONS 64 /* at once; more are answered 503 */
#define CODE_INSIDE_HEAD_TIMEOUT_S  10 /* to send a whole request head; then closed */

/* Listen on both loopback addresses and serve them from a thread of their own. A port already
 * taken (a user's own server) is logged and left alone. Call once. */
void code_inside_start(void);
