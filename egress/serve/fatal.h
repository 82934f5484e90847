/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the serving loops of sbx-egress (the resolver, the proxies) do when they cannot go on:
 * the whole process ends, logging why, and sbxd starts another one (server/egress/egress-proc.h).
 * A loop that ended quietly would leave its sandboxes without an answer for good.
 */
#pragma once

_Noreturn void egress_serve_fatal(const char *what, int error);
