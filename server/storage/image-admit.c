/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/image-admit.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/statvfs.h>

#include "macros.h"

static pthread_mutex_t admit_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t announced_total; /* under admit_lock: every writer's announcement */

struct image_limits image_limits_of(const struct sbxd_config *cfg)
{
        return (struct image_limits){.max_layer_bytes = cfg->max_layer_bytes,
                                     .reserve_bytes = cfg->disk_reserve_mb << 20};
}

int image_admit_free_bytes(const char *state, uint64_t reserve_bytes, uint64_t *ret)
{
        struct statvfs sv;
        if (statvfs(state, &sv) < 0)
                return -errno;
        uint64_t free = (uint64_t)sv.f_bavail * sv.f_frsize;
        *ret = free > reserve_bytes ? free - reserve_bytes : 0;
        return 0;
}

uint64_t image_admit_max_layer(const struct image_admission *a)
{
        return a && a->lim.max_layer_bytes ? a->lim.max_layer_bytes : IMAGE_LAYER_MAX_BYTES;
}

#define MIB(x) ((unsigned long long)((x) >> 20))

int image_admit_charge(struct image_admission *a, uint64_t *layer_bytes, uint64_t bytes,
                       const char *what, char err[static IMAGE_ADMIT_ERR_MAX])
{
        if (!a)
                return 0;
        uint64_t max = image_admit_max_layer(a);
        if (layer_bytes && (bytes > max || *layer_bytes > max - bytes)) {
                snprintf(err, IMAGE_ADMIT_ERR_MAX,
                         "%s is larger than %llu MiB uncompressed, this server's "
                         "--max-layer-size",
                         what, MIB(max));
                return -EFBIG;
        }
        uint64_t room;
        pthread_mutex_lock(&admit_lock);
        announced_total -= a->announced;
        a->announced = 0;
        int r = image_admit_free_bytes(a->state, a->lim.reserve_bytes, &room);
        if (r >= 0 && (bytes > room || announced_total > room - bytes)) {
                snprintf(err, IMAGE_ADMIT_ERR_MAX,
                         "not enough space on the host's state disk for %s: %llu MiB more "
                         "wanted, %llu MiB free beyond the %llu MiB reserve%s",
                         what, MIB(bytes + (uint64_t)1048575), MIB(room), MIB(a->lim.reserve_bytes),
                         announced_total ? ", part of it promised to other images" : "");
                r = -ENOSPC;
        } else if (r >= 0) {
                a->announced = bytes;
                announced_total += bytes;
        }
        pthread_mutex_unlock(&admit_lock);
        if (r >= 0 && layer_bytes)
                *layer_bytes += bytes;
        return r;
}

void image_admit_done(struct image_admission *a)
{
        if (!a)
                return;
        pthread_mutex_lock(&admit_lock);
        announced_total -= a->announced;
        a->announced = 0;
        pthread_mutex_unlock(&admit_lock);
}
