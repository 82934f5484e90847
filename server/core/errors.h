/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one place that maps a failure (-errno plus a human message) to what a client sees: an
 * HTTP status and the E2B error body {"code":N,"message":"..."} (plus "sandboxId" for the
 * proxy's sandbox-not-found answer, as E2B's edge proxy does).
 *
 *   -EINVAL, -EBADMSG, -ELOOP, -EDOM, -ERANGE          400 bad request / bad JSON / too deep
 *   -EACCES, -EPERM, -ENOKEY, -EKEYREJECTED            401 missing or wrong key / token
 *   -ENOENT, -ESRCH                                    404 unknown sandbox, template, route
 *   -EEXIST, -EBUSY                                    409
 *   -EMSGSIZE, -EFBIG, -E2BIG                          413 body too large
 *   -EHOSTUNREACH, -ECONNREFUSED, -ECONNRESET, -EPIPE,
 *   -EPROTO, -ENXIO                                    502 sandbox (agent) unreachable / gone
 *   -EAGAIN, -EUSERS                                   503 out of sandbox slots
 *   -ENOSPC                                            507 no room on the state disk
 *   anything else (-EIO for a failed sandbox start)    500
 */
#pragma once

/* HTTP status for -errno r (r may also be given positive). Pure. */
unsigned api_error_status(int r);

/* Build the JSON error body for r and message (NULL: strerror). sandbox_id, if non-NULL, is
 * added as "sandboxId". Returns 0 and a malloc'd body, or -ENOMEM. */
int api_error_build(int r, const char *sandbox_id, const char *message, unsigned *ret_status,
                    char **ret_body);
