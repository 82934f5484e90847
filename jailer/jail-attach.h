/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sbx-jailer --attach-egress --spec-fd 3 --status-fd 4 --pidfd 5 (jailer/README.md "Egress
 * for a running sandbox"): gives a running loopback-only sandbox its egress link, when sbxd
 * widens its policy at runtime. The spec is {"uid_base": N, "egress": {...}} (api/jail-spec.md
 * "Egress"); fd 5 is a pidfd of the sandbox's agent, so that a recycled pid cannot be mistaken
 * for it. One status line as for a start ({"ok":true} or the failure), nothing left behind on
 * failure.
 */
#pragma once

#define JAIL_ATTACH_SPEC_MAX (64 * 1024)

int jail_attach_run(int spec_fd, int status_fd, int pidfd);
