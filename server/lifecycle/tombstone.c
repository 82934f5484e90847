/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/tombstone.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cgroup-freeze.h"
#include "lifecycle/teardown.h"

bool sandbox_oom_killed(const struct sandbox *s)
{
        char cg[96];
        struct cgroup_stats st = {};
        snprintf(cg, sizeof(cg), "%s/%s", CGROUP_PARENT, s->id);
        return cgroup_read_stats(cg, &st) >= 0 && st.oom_kills > 0;
}

#define TOMBSTONES 256
static struct {
        char id[21];
        char reason[64];
} tombs[TOMBSTONES];
static size_t tomb_next;
static pthread_mutex_t tomb_lock = PTHREAD_MUTEX_INITIALIZER;

void tombstone_add(const char *id, const char *reason)
{
        pthread_mutex_lock(&tomb_lock);
        snprintf(tombs[tomb_next].id, sizeof(tombs[0].id), "%s", id);
        snprintf(tombs[tomb_next].reason, sizeof(tombs[0].reason), "%s", reason);
        tomb_next = (tomb_next + 1) % TOMBSTONES;
        pthread_mutex_unlock(&tomb_lock);
}

int tombstone_get(const char *id, char *reason, size_t size)
{
        int found = 0;
        pthread_mutex_lock(&tomb_lock);
        for (size_t i = 0; i < TOMBSTONES && !found; i++)
                if (tombs[i].id[0] && strcmp(tombs[i].id, id) == 0) {
                        snprintf(reason, size, "%s", tombs[i].reason);
                        found = 1;
                }
        pthread_mutex_unlock(&tomb_lock);
        return found;
}
