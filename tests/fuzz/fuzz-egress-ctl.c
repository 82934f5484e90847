/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the control channel of sbx-egress (api/egress-ctl.c): sbxd decodes what
 * an sbx-egress that parses sandboxes' bytes sends, so the decoder meets hostile input. Input:
 * one byte, the number of descriptors that came with the message (mod 4), then the message.
 * Properties:
 *   - a message that decodes has fields within their bounds and the descriptors its type has;
 *   - it encodes again, and that text decodes and encodes to itself (one canonical form).
 */
#include <string.h>

#include "egress-ctl.h"
#include "fuzz.h"

static void check_bounds(const struct egress_msg *m)
{
        FUZZ_CHECK(m->type >= EGRESS_MSG_HELLO && m->type <= EGRESS_MSG_ACK);
        FUZZ_CHECK(m->slot >= 0 && m->slot < EGRESS_CTL_SLOTS);
        FUZZ_CHECK(m->error <= 0 && m->error >= -4095);
        FUZZ_CHECK(!m->name || (strlen(m->name) > 0 && strlen(m->name) <= EGRESS_CTL_NAME_MAX));
        FUZZ_CHECK(!m->text || strlen(m->text) <= EGRESS_CTL_TEXT_MAX);
        FUZZ_CHECK(m->n_addrs <= EGRESS_CTL_ADDRS_MAX && m->n_hosts <= EGRESS_CTL_HOSTS_MAX);
        FUZZ_CHECK(m->type != EGRESS_MSG_PIN ||
                   (m->n_addrs > 0 && m->ttl > 0 && m->ttl <= EGRESS_CTL_TTL_MAX));
        FUZZ_CHECK(m->type != EGRESS_MSG_POLICY || cJSON_IsObject(m->policy));
        for (size_t i = 0; i < m->n_hosts; i++)
                FUZZ_CHECK(strlen(m->hosts[i]) > 0 && strlen(m->hosts[i]) <= EGRESS_CTL_HOST_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        size_t n_fds = data[0] % 4;
        struct egress_msg m;
        const char *why = NULL;
        if (egress_msg_decode((const char *)data + 1, size - 1, n_fds, &m, &why) < 0) {
                FUZZ_CHECK(why != NULL);
                return 0;
        }
        FUZZ_CHECK(n_fds == egress_msg_fds(m.type));
        check_bounds(&m);
        char *t1 = NULL, *t2 = NULL;
        size_t l1, l2;
        FUZZ_CHECK(egress_msg_encode(&m, &t1, &l1) == 0);
        struct egress_msg m2;
        FUZZ_CHECK(egress_msg_decode(t1, l1, n_fds, &m2, &why) == 0);
        FUZZ_CHECK(egress_msg_encode(&m2, &t2, &l2) == 0);
        FUZZ_CHECK(l1 == l2 && memcmp(t1, t2, l1) == 0);
        FUZZ_CHECK(m2.type == m.type && m2.id == m.id && m2.slot == m.slot);
        free(t1);
        free(t2);
        egress_msg_done(&m);
        egress_msg_done(&m2);
        return 0;
}
