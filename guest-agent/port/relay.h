/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A request for a user port: any port but 0, 49983 and 49999, which the agent serves itself
 * (api/frames.md, "User ports"). The agent connects to 127.0.0.1:<port> (else [::1]:<port>)
 * inside the sandbox's network namespace, writes the request as HTTP/1.1 (port/http1.h), and
 * relays both ways: the request's DATA frames to the server (chunked when the client's body
 * had no length), the server's answer back as RESP_HEAD, DATA, END, its body unframed.
 *
 * A request carrying `Upgrade` is relayed raw both ways once the server answers 101: the
 * request's DATA frames (which sbxd keeps sending after the head, with no END until the client
 * stops) go to the server as they are, and the server's bytes come back as DATA until it
 * closes. The connection to the server is always closed after one exchange
 * (`Connection: close`).
 *
 * When nothing listens on the port, or the server's answer has no valid head, the answer is
 * 502 with PORT_ERROR_HEADER: PORT_ERROR_NOT_OPEN and no body; sbxd turns that into E2B's
 * "port is not open" answer.
 */
#pragma once

#include "core/request.h"
#include "frame.h"

#define PORT_CONNECT_TIMEOUT_S 10 /* connect() to the in-sandbox server */
#define PORT_IO_CHUNK          (64u * 1024u)
#define PORT_ERROR_HEADER      SBX_HEADER_PORT_ERROR
#define PORT_ERROR_NOT_OPEN    SBX_PORT_ERROR_NOT_OPEN

/* Whether a REQ_HEAD port is a user port (not one the agent serves itself). */
bool agent_port_is_user(uint16_t port);

/* The handler for a user port (any method, any path). */
int agent_port_handle(struct agent_request *r);
