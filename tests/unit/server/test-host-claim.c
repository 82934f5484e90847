/* SPDX-License-Identifier: Apache-2.0 */
/* What sbxd instances of one host share (server/core/host-claim.h), in a directory of the
 * test's own: one instance per state dir, a slot claimed by one at a time, stale claims (of a
 * state dir that is gone) taken over, this instance's unused claims swept, and the registry
 * handing out only slots no other instance holds. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/host-claim.h"
#include "fd-util.h"
#include "lifecycle/registry.h"
#include "unit.h"

static char top[] = "/tmp/sbx-host-claim.XXXXXX";

static struct host_claims *open_as(const char *state)
{
        struct host_claims *h = NULL;
        char err[512] = "";
        int r = host_claims_open(state, &h, err, sizeof(err));
        if (r < 0)
                fprintf(stderr, "open %s: %s\n", state, err);
        return h;
}

int main(void)
{
        char dir[256], a[256], b[256], path[600];
        CHECK(mkdtemp(top) != NULL);
        snprintf(dir, sizeof(dir), "%s/run", top);
        snprintf(a, sizeof(a), "%s/state-a", top);
        snprintf(b, sizeof(b), "%s/state-b", top);
        CHECK(mkdir(a, 0700) == 0 && mkdir(b, 0700) == 0);
        setenv(HOST_CLAIM_ENV, dir, 1);

        struct host_claims *ha = open_as(a), *hb = open_as(b), *again = NULL;
        CHECK(ha && hb && strcmp(host_claims_id(ha), host_claims_id(hb)) != 0);
        CHECK_EQ_INT(strlen(host_claims_id(ha)), HOST_INSTANCE_ID);
        char err[512];
        CHECK_EQ_INT(host_claims_open(a, &again, err, sizeof(err)), -EBUSY); /* one sbxd each */

        /* one instance at a time holds a slot */
        CHECK_EQ_INT(host_slot_claim(ha, 7), 0);
        CHECK_EQ_INT(host_slot_claim(ha, 7), 0); /* ours already */
        CHECK_EQ_INT(host_slot_claim(hb, 7), -EBUSY);
        host_slot_release(hb, 7); /* not b's to give back */
        CHECK_EQ_INT(host_slot_claim(hb, 7), -EBUSY);
        host_slot_release(ha, 7);
        CHECK_EQ_INT(host_slot_claim(hb, 7), 0);

        /* the registries of two instances never hand out the same slot */
        struct registry *ra, *rb;
        CHECK_EQ_INT(registry_new(&ra), 0);
        CHECK_EQ_INT(registry_new(&rb), 0);
        registry_set_host(ra, ha);
        registry_set_host(rb, hb);
        int sa, sb, sb2;
        CHECK_EQ_INT(registry_slot_acquire(ra, &sa), 0);
        CHECK_EQ_INT(registry_slot_acquire(rb, &sb), 0);
        CHECK_EQ_INT(registry_slot_acquire(rb, &sb2), 0);
        CHECK(sa == 0 && sb == 1 && sb2 == 2);
        int s7;
        CHECK_EQ_INT(registry_slot_acquire(ra, &s7), 0);
        CHECK(s7 == 3);
        CHECK_EQ_INT(registry_slot_reserve(ra, 7), -EBUSY); /* b's (adoption must not take it) */
        CHECK_EQ_INT(registry_slot_reserve(rb, 7), 0);

        /* a's sbxd goes (its claims stay: its sandboxes run on); its state dir is removed: its
         * claims are stale, and taken over */
        registry_free(ra);
        host_claims_close(ha);
        CHECK_EQ_INT(host_slot_claim(hb, 0), -EBUSY);
        CHECK(rmdir(a) == 0);
        CHECK_EQ_INT(host_slot_claim(hb, 0), 0);

        /* the next sbxd of b gives back what its adopted sandboxes do not use */
        registry_free(rb);
        host_claims_close(hb);
        hb = open_as(b);
        CHECK_EQ_INT(registry_new(&rb), 0);
        registry_set_host(rb, hb);
        CHECK_EQ_INT(registry_slot_reserve(rb, 2), 0); /* the one sandbox adopted */
        CHECK_EQ_INT(registry_slot_sweep(rb), 3);      /* 0, 1 and 7 */
        snprintf(path, sizeof(path), "%s/slots/2", dir);
        CHECK(access(path, F_OK) == 0);
        snprintf(path, sizeof(path), "%s/slots/1", dir);
        CHECK(access(path, F_OK) < 0);

        /* a state dir whose id another state dir's record holds is refused */
        host_claims_close(hb);
        struct host_claims *ha2 = open_as(a);
        CHECK(ha2 != NULL);
        snprintf(path, sizeof(path), "%s/instances/%s", dir, ha2 ? host_claims_id(ha2) : "");
        host_claims_close(ha2);
        int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        CHECK(fd >= 0 && write(fd, "/elsewhere\n", 11) == 11);
        close(fd);
        CHECK_EQ_INT(host_claims_open(a, &again, err, sizeof(err)), -EEXIST);
        CHECK(strstr(err, "/elsewhere") != NULL);

        /* an instance's record outlives an sbxd that was killed; once its state dir is gone
         * the next instance to start removes it, but never a running instance's */
        char c[256], killed[600], running[600];
        snprintf(c, sizeof(c), "%s/state-c", top);
        CHECK(mkdir(c, 0700) == 0);
        struct host_claims *hc = open_as(c);
        CHECK(hc != NULL);
        CHECK(rmdir(c) == 0); /* removed under a running sbxd: its lock still holds */
        snprintf(running, sizeof(running), "%s/instances/%s", dir, hc ? host_claims_id(hc) : "");
        snprintf(killed, sizeof(killed), "%s/instances/0123456789abcdef", dir);
        fd = open(killed, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        CHECK(fd >= 0 && write(fd, "/gone/state\n", 12) == 12);
        close(fd);
        hb = open_as(b);
        CHECK(hb != NULL);
        CHECK(access(killed, F_OK) < 0);
        CHECK(access(running, F_OK) == 0);
        host_claims_close(hb);
        host_claims_close(hc);

        registry_free(rb);
        rm_rf(top);
        return unit_finish("test-host-claim");
}
