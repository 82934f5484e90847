/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What sbxd takes again without a restart: the config file on SIGHUP (the options a reload
 * applies, core/options.h), and the API keys file on SIGHUP and whenever it is replaced or
 * written (an inotify watch on the state dir).
 */
#pragma once

#include <stdbool.h>

#include "daemon.h"

/* SIGHUP: the config file, then the keys. */
void reload_config_and_keys(struct daemon *d);

/* The keys file again (logged: how many keys are in force). */
void reload_keys(struct daemon *d);

/* An inotify fd watching <state_dir> for its keys file being renamed into place or written
 * (sbx key create|revoke, an editor). -errno. */
int keys_watch_open(const char *state_dir);

/* Drain fd's events: whether one was about the keys file. */
bool keys_watch_changed(int fd);
