/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What E2B's template build adds to every image, done by the agent at start-up so that every
 * sandbox has it whatever made its template (an imported or pulled image, a build, a snapshot
 * of either): guest-agent/README.md, "Images". Idempotent; on an image that has all of it
 * (sbx's base) nothing is written.
 *
 * - the user PROVISION_USER (uid 1000, or the first free id from 1000 when the image uses
 *   1000 for someone else, as E2B's adduser picks), its own group, home PROVISION_HOME, shell
 *   bash where the image has it, else /bin/sh; a passwordless line in /etc/shadow when the
 *   image has one; a member of the image's "sudo" group when it has one;
 * - PROVISION_HOME made when missing and owned by the user;
 * - /tmp with mode 1777;
 * - PROVISION_SUDO_PATH linked to the runtime's sudo client where the image has no sudo, or a
 *   set-uid one (useless under no_new_privs: kept as sudo.image).
 * Failures are logged, never fatal: the sandbox starts anyway.
 */
#pragma once

#define PROVISION_USER        "user"
#define PROVISION_UID         1000
#define PROVISION_HOME        "/home/user"
#define PROVISION_SUDO_GROUP  "sudo"
#define PROVISION_BASH        "/bin/bash"
#define PROVISION_SH          "/bin/sh"
#define PROVISION_SUDO_PATH   "/usr/bin/sudo"
#define PROVISION_SUDO_TARGET "/.sbx/runtime/bin/sudo"
/* A new user or group takes the first free id in [PROVISION_UID, + PROVISION_ID_RANGE). */
#define PROVISION_ID_RANGE 60000
/* /etc/passwd, /etc/group and /etc/shadow are read whole, up to this size (else left alone). */
#define PROVISION_ETC_MAX (4u * 1024 * 1024)

/* As PID 1 (root, the agent's capabilities), before anything is served. */
void agent_provision(void);
