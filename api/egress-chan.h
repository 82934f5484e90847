/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control channel of sbx-egress (api/egress-ctl.md) as either end uses it: one thread reads
 * it (egress_chan_run), handing requests to a handler and answers to the threads that wait for
 * them (egress_chan_call); any thread may send. sbx-egress's end is egress/proc/egress-run.c,
 * sbxd's is server/egress/egress-proc.c.
 */
#pragma once

#include "egress-ctl.h"

#define EGRESS_CHAN_CALL_MS                                                                        \
        5000 /* an answer later than this is a peer that hangs: the call fails */

struct egress_chan;

/* A request from the peer (any type but ACK and VALUE): its answer's error (0 or -errno), sent
 * back as an ACK when the request has an id; for a SECRET the handler fills *value (a VALUE
 * answers it then). m is the handler's to keep (its descriptors, its fields): what it leaves is
 * freed after. */
typedef int (*egress_chan_handler_fn)(void *arg, struct egress_msg *m, char **value);

/* Over sock (a connected SOCK_SEQPACKET socket, owned from here on). */
int egress_chan_new(int sock, struct egress_chan **ret);
/* Closes the socket; no thread may be inside egress_chan_run or egress_chan_call. NULL is fine. */
void egress_chan_free(struct egress_chan *c);

/* Reads until the peer closes (0), or a message that breaks the contract (-EBADMSG, with why in
 * *ret_why) or a socket error (-errno). Every caller still waiting is then woken with -EPIPE,
 * and every later egress_chan_call fails so. */
int egress_chan_run(struct egress_chan *c, egress_chan_handler_fn handler, void *arg,
                    const char **ret_why);
/* Shuts the socket down: egress_chan_run returns, calls fail. */
void egress_chan_shutdown(struct egress_chan *c);

/* Sends req (its id is set here) and waits for its answer, an ACK or a VALUE, into *ret
 * (egress_msg_done by the caller): 0, -ETIMEDOUT after EGRESS_CHAN_CALL_MS, -EPIPE when the channel
 * is gone, or what sending failed with. */
int egress_chan_call(struct egress_chan *c, struct egress_msg *req, struct egress_msg *ret);
/* Sends m as it is (an answer, or a request that wants none). */
int egress_chan_send(struct egress_chan *c, const struct egress_msg *m);
