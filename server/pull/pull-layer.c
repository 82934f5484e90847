/* SPDX-License-Identifier: Apache-2.0 */
#include "pull/pull-layer.h"

#include <archive.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macros.h"
#include "storage/layer-store.h"

/* Blobs being transferred now, by digest: one transfer each. */
struct inflight {
        char digest[65];
        struct inflight *next;
};
static pthread_mutex_t inflight_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t inflight_done = PTHREAD_COND_INITIALIZER;
static struct inflight *inflight;

static bool inflight_has(const char *digest)
{
        for (struct inflight *f = inflight; f; f = f->next)
                if (strcmp(f->digest, digest) == 0)
                        return true;
        return false;
}

static void inflight_remove(const char *digest)
{
        pthread_mutex_lock(&inflight_lock);
        for (struct inflight **p = &inflight; *p; p = &(*p)->next)
                if (strcmp((*p)->digest, digest) == 0) {
                        struct inflight *f = *p;
                        *p = f->next;
                        free(f);
                        break;
                }
        pthread_cond_broadcast(&inflight_done);
        pthread_mutex_unlock(&inflight_lock);
}

/* 1 when the store has the blob's layer (pinned into j->out), 0 when this thread is to fetch
 * it (registered in flight), -errno. Waits while another thread fetches it. */
static int find_or_claim(struct pull_layer_job *j)
{
        for (;;) {
                layer_store_read_lock();
                int r = layer_store_digest_lookup(j->state, j->digest, j->out.hex);
                if (r > 0)
                        r = layer_store_pin(j->out.hex) < 0 ? -ENOMEM : 1;
                layer_store_unlock();
                if (r != 0)
                        return r;
                pthread_mutex_lock(&inflight_lock);
                if (!inflight_has(j->digest)) {
                        struct inflight *f = calloc(1, sizeof(*f));
                        if (f) {
                                memcpy(f->digest, j->digest, sizeof(f->digest));
                                f->next = inflight;
                                inflight = f;
                        }
                        pthread_mutex_unlock(&inflight_lock);
                        return f ? 0 : -ENOMEM;
                }
                while (inflight_has(j->digest) && !__atomic_load_n(j->stop, __ATOMIC_RELAXED))
                        pthread_cond_wait(&inflight_done, &inflight_lock);
                pthread_mutex_unlock(&inflight_lock);
                if (__atomic_load_n(j->stop, __ATOMIC_RELAXED))
                        return -ECANCELED;
        }
}

static void on_bytes(void *ud, uint64_t bytes)
{
        struct pull_layer_job *j = ud;
        if (j->progress)
                j->progress(j, bytes);
}

/* The blob into fd, its digest checked. */
static int download(struct pull_layer_job *j, void **h, int fd)
{
        char path[PULL_REPO_MAX + 128], got[65];
        snprintf(path, sizeof(path), "/v2/%s/blobs/sha256:%s", j->rm->repo, j->digest);
        int r = 0;
        for (int t = 0; t < PULL_BLOB_TRIES; t++) {
                struct pull_sink sink = {.fd = fd, .max = j->size, .progress = on_bytes, .ud = j};
                struct pull_answer ans;
                r = pull_http_get(j->rm, h, path, NULL, &sink, &ans, j->err);
                if (r == -EFBIG) /* more than the manifest says the blob holds */
                        r = -EBADMSG, snprintf(j->err, sizeof(j->err),
                                               "layer sha256:%s from registry %s is longer than "
                                               "the %llu bytes its manifest gives: refused",
                                               j->digest, j->rm->host, (unsigned long long)j->size);
                if (r >= 0) {
                        pull_sink_digest(&sink, got);
                        if (strcmp(got, j->digest) != 0 || (j->size && sink.written != j->size))
                                r = -EBADMSG,
                                snprintf(j->err, sizeof(j->err),
                                         "layer sha256:%s from registry %s does not match its "
                                         "digest (%llu bytes received, sha256:%.16s…): refused",
                                         j->digest, j->rm->host, (unsigned long long)sink.written,
                                         got);
                }
                pull_sink_done(&sink);
                if (r != -EHOSTUNREACH && r != -EPROTO)
                        break;
                if (__atomic_load_n(j->stop, __ATOMIC_RELAXED))
                        break;
        }
        return r;
}

/* The verified blob at fd, extracted into the store and pinned. */
static int extract(struct pull_layer_job *j, struct image_admission *adm, int fd)
{
        struct archive *a = NULL;
        char err[IMAGE_ERR_MAX] = "";
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        int r = image_layer_open(&a);
        if (r >= 0 && archive_read_open_fd(a, fd, 64 * 1024) != ARCHIVE_OK)
                r = -EINVAL, snprintf(j->err, sizeof(j->err),
                                      "layer sha256:%.16s… is not a tar archive sbxd can read: %s",
                                      j->digest, archive_error_string(a));
        if (r >= 0) {
                layer_store_read_lock();
                r = image_layer_store(j->state, a, j->digest, adm, &j->out, err);
                if (r >= 0 && layer_store_pin(j->out.hex) < 0)
                        r = -ENOMEM;
                layer_store_unlock();
                if (r < 0 && err[0])
                        snprintf(j->err, sizeof(j->err), "%s", err);
                else if (r < 0)
                        snprintf(j->err, sizeof(j->err), "storing layer sha256:%.12s failed: %s",
                                 j->digest, strerror(-r));
        }
        if (a)
                archive_read_free(a);
        return r;
}

void pull_layer_wake(void)
{
        pthread_mutex_lock(&inflight_lock);
        pthread_cond_broadcast(&inflight_done);
        pthread_mutex_unlock(&inflight_lock);
}

int pull_layer_fetch(struct pull_layer_job *j, void **h)
{
        j->err[0] = 0;
        int r = find_or_claim(j);
        if (r != 0) {
                j->out.reused = r > 0;
                if (r == -ECANCELED)
                        snprintf(j->err, sizeof(j->err), "the pull was stopped");
                return r < 0 ? r : 0;
        }
        struct image_admission adm = {.state = j->state, .lim = j->lim};
        uint64_t max = image_admit_max_layer(&adm);
        char what[96], dir[4096];
        snprintf(what, sizeof(what), "layer sha256:%.12s (%llu bytes compressed)", j->digest,
                 (unsigned long long)j->size);
        snprintf(dir, sizeof(dir), "%s/layers", j->state);
        _cleanup_close_ int fd = -EBADF;
        if (j->size > max) {
                r = -EFBIG;
                snprintf(j->err, sizeof(j->err),
                         "layer sha256:%.12s is %llu MiB compressed, more than this server's "
                         "--max-layer-size (%llu MiB)",
                         j->digest, (unsigned long long)(j->size >> 20),
                         (unsigned long long)(max >> 20));
        } else {
                char msg[IMAGE_ADMIT_ERR_MAX];
                /* the compressed blob is on the state disk until it is extracted */
                r = image_admit_charge(&adm, NULL, j->size, what, msg);
                if (r < 0)
                        snprintf(j->err, sizeof(j->err), "%s", msg);
        }
        if (r >= 0) {
                (void)mkdir(dir, 0700);
                /* unnamed: nothing is left of it whatever happens to sbxd */
                fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
                if (fd < 0)
                        r = -errno,
                        snprintf(j->err, sizeof(j->err), "cannot store a layer in %.300s: %m", dir);
        }
        if (r >= 0)
                r = download(j, h, fd);
        if (r >= 0) {
                j->transferred = true;
                r = extract(j, &adm, fd);
        }
        image_admit_done(&adm);
        inflight_remove(j->digest);
        return r;
}
