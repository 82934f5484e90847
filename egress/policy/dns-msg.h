/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The few pieces of DNS messages (RFC 1035 §4) the sandboxes' resolver needs
 * (egress/serve/resolver.h): a query's one question, the A and AAAA records of an
 * answer, an error reply. Both sides are untrusted (a sandbox's query, an upstream's answer):
 * every offset is checked against the length, compression pointers are followed a bounded
 * number of times, names are bounded. Pure; fuzzed by tests/fuzz/fuzz-dns-msg.c.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define DNS_MSG_MAX        4096 /* bytes of a UDP message the resolver handles (EDNS size) */
#define DNS_NAME_MAX       253
#define DNS_ADDRS_MAX      32 /* addresses of one family taken from one answer */
#define DNS_TYPE_A         1
#define DNS_TYPE_AAAA      28
#define DNS_RCODE_SERVFAIL 2
#define DNS_RCODE_REFUSED  5

struct dns_question {
        uint16_t id;
        uint16_t flags;
        char name[DNS_NAME_MAX + 1]; /* lowercase, no trailing dot; "" for the root */
        uint16_t qtype, qclass;
        size_t end; /* offset just past the question */
};

struct dns_addrs {
        uint8_t v4[DNS_ADDRS_MAX][4];
        uint8_t v6[DNS_ADDRS_MAX][16];
        size_t n4, n6;
        uint32_t min_ttl; /* smallest TTL of the records taken; 0 when none */
};

/* A message's header and its one question (QDCOUNT must be 1). -EBADMSG otherwise. */
int dns_parse_question(const uint8_t *msg, size_t len, struct dns_question *ret);

/* The A and AAAA records (class IN) of the answer section of a reply; -EBADMSG when the
 * message is malformed anywhere up to the end of that section. */
int dns_answer_addrs(const uint8_t *msg, size_t len, struct dns_addrs *ret);

/* An error reply (rcode) to query q: its header and question, QR and RA set, no records.
 * Returns its length (at most q->end), or 0 when out cannot hold it. */
size_t dns_error_reply(const uint8_t *query, const struct dns_question *q, unsigned rcode,
                       uint8_t *out, size_t cap);
