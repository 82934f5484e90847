/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the DNS pieces of the sandboxes' resolver (egress/policy/dns-msg.c): a
 * sandbox's query and an upstream's answer, both untrusted. Input: one DNS message. Properties:
 *   - a question that parses has a name of at most DNS_NAME_MAX lowercase bytes with no NUL,
 *     no empty label and no uppercase, and ends inside the message;
 *   - its error reply is exactly the header and question, QR set, the rcode asked for, no
 *     records, and parses back to the same question;
 *   - an answer that parses yields at most DNS_ADDRS_MAX addresses per family, a TTL within
 *     RFC 2181's range, and the same addresses when parsed again.
 */
#include <string.h>

#include "egress/policy/dns-msg.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct dns_question q;
        if (dns_parse_question(data, size, &q) < 0)
                return 0;
        size_t l = strlen(q.name);
        FUZZ_CHECK(l <= DNS_NAME_MAX && q.end <= size && q.end >= 17);
        FUZZ_CHECK(!strstr(q.name, "..") && q.name[0] != '.' && (l == 0 || q.name[l - 1] != '.'));
        for (size_t i = 0; i < l; i++)
                FUZZ_CHECK(q.name[i] < 'A' || q.name[i] > 'Z');
        uint8_t out[DNS_MSG_MAX];
        size_t n = dns_error_reply(data, &q, DNS_RCODE_REFUSED, out, sizeof(out));
        FUZZ_CHECK(n == q.end);
        FUZZ_CHECK((out[2] & 0x80) && (out[3] & 0x0f) == DNS_RCODE_REFUSED);
        FUZZ_CHECK(!memcmp(out + 6, "\0\0\0\0\0\0", 6));
        struct dns_question q2;
        FUZZ_CHECK(dns_parse_question(out, n, &q2) == 0);
        FUZZ_CHECK(!strcmp(q.name, q2.name) && q.qtype == q2.qtype && q.end == q2.end);

        struct dns_addrs a, b;
        if (dns_answer_addrs(data, size, &a) < 0)
                return 0;
        FUZZ_CHECK(a.n4 <= DNS_ADDRS_MAX && a.n6 <= DNS_ADDRS_MAX);
        FUZZ_CHECK(a.min_ttl <= 0x7fffffff);
        FUZZ_CHECK(dns_answer_addrs(data, size, &b) == 0 && a.n4 == b.n4 && a.n6 == b.n6);
        FUZZ_CHECK(!memcmp(a.v4, b.v4, sizeof(a.v4[0]) * a.n4));
        FUZZ_CHECK(!memcmp(a.v6, b.v6, sizeof(a.v6[0]) * a.n6));
        return 0;
}
