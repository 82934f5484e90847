/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Directory watches over inotify: the WatchDir server stream, and the polling watchers of the
 * Python SDK (CreateWatcher / GetWatcherEvents / RemoveWatcher). Events follow envd (fsnotify):
 * IN_CREATE/IN_MOVED_TO → CREATE, IN_MOVED_FROM → RENAME, IN_ATTRIB → CHMOD, IN_MODIFY →
 * WRITE, IN_DELETE → REMOVE; names are relative to the watched directory. Recursive watches
 * add every subdirectory (also ones created later), bounded by AGENT_WATCH_MAX_DIRS.
 */
#pragma once

#include "core/request.h"

#define AGENT_WATCH_MAX_DIRS     8192u
#define AGENT_WATCHERS_MAX       64u
#define AGENT_WATCHER_MAX_EVENTS 4096u

/* POST /filesystem.Filesystem/WatchDir (server stream), CreateWatcher, GetWatcherEvents,
 * RemoveWatcher (unary). */
int agent_watch_handle_dir(struct agent_request *r);
int agent_watch_handle_create(struct agent_request *r);
int agent_watch_handle_get_events(struct agent_request *r);
int agent_watch_handle_remove(struct agent_request *r);
