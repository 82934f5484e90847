/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress relay of a template build sandbox (server/template-build/README.md "Egress"): when the
 * agent's environment has SBX_EGRESS_RELAY=<port>=<unix socket path>, the agent listens on
 * 127.0.0.1:<port> inside the sandbox and copies each connection, both ways, to a new
 * connection to the unix socket (which sbxd bound into the build sandbox). The relay reads
 * nothing of what passes: sbxd's proxy at the other end decides what may leave. At most
 * RELAY_MAX_CONNECTIONS at once; more are closed at once.
 */
#pragma once

#define RELAY_ENV             "SBX_EGRESS_RELAY"
#define RELAY_MAX_CONNECTIONS 64
#define RELAY_BUFFER          65536

/* Start the relay when RELAY_ENV is set: 0 (also when it is not set), -errno when the value
 * is malformed or the port cannot be bound. */
int agent_relay_start(void);
