/* SPDX-License-Identifier: Apache-2.0 */
#include "dns-msg.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define HEADER       12
#define MAX_POINTERS 64 /* compression jumps followed in one name */

static uint16_t get16(const uint8_t *p)
{
        return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Reads the name at *off (into name when not NULL, lowercased and dotted) and moves *off past
 * it in the message (past the first pointer when compressed). false when malformed. */
static bool read_name(const uint8_t *msg, size_t len, size_t *off, char *name)
{
        size_t at = *off, out = 0, end = 0, limit = len;
        int jumps = 0;
        for (;;) {
                if (at >= limit)
                        return false;
                uint8_t l = msg[at];
                if ((l & 0xc0) == 0xc0) {
                        if (at + 1 >= len || ++jumps > MAX_POINTERS)
                                return false;
                        size_t to = (size_t)((l & 0x3f) << 8 | msg[at + 1]);
                        /* RFC 1035 §4.1.4: a prior occurrence, so strictly backwards (no
                         * loops), past the header (whose bytes an error reply changes) */
                        if (to >= at || to < HEADER)
                                return false;
                        if (!end)
                                end = at + 2;
                        limit = at; /* the name pointed at lies wholly before the pointer */
                        at = to;
                        continue;
                }
                if (l & 0xc0)
                        return false; /* the reserved label types */
                if (l == 0) {
                        at++;
                        break;
                }
                if (at + 1 + l >= limit || out + l + (out ? 1 : 0) > DNS_NAME_MAX)
                        return false;
                if (name) {
                        if (out)
                                name[out] = '.';
                        for (size_t i = 0; i < l; i++) {
                                char c = (char)msg[at + 1 + i];
                                if (c == '.' || c == 0)
                                        return false; /* would read as another name */
                                name[out + (out ? 1 : 0) + i] =
                                    c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
                        }
                }
                out += l + (out ? 1 : 0);
                at += 1 + l;
        }
        if (name)
                name[out] = 0;
        *off = end ? end : at;
        return true;
}

int dns_parse_question(const uint8_t *msg, size_t len, struct dns_question *ret)
{
        struct dns_question q = {};
        if (len < HEADER || len > DNS_MSG_MAX || get16(msg + 4) != 1)
                return -EBADMSG;
        q.id = get16(msg);
        q.flags = get16(msg + 2);
        size_t off = HEADER;
        if (!read_name(msg, len, &off, q.name) || off + 4 > len)
                return -EBADMSG;
        q.qtype = get16(msg + off);
        q.qclass = get16(msg + off + 2);
        q.end = off + 4;
        *ret = q;
        return 0;
}

int dns_answer_addrs(const uint8_t *msg, size_t len, struct dns_addrs *ret)
{
        struct dns_question q;
        int r = dns_parse_question(msg, len, &q);
        if (r < 0)
                return r;
        struct dns_addrs a = {};
        unsigned an = get16(msg + 6);
        size_t off = q.end;
        for (unsigned i = 0; i < an; i++) {
                if (!read_name(msg, len, &off, NULL) || off + 10 > len)
                        return -EBADMSG;
                uint16_t type = get16(msg + off), cls = get16(msg + off + 2);
                uint32_t ttl = get32(msg + off + 4);
                uint16_t rdlen = get16(msg + off + 8);
                off += 10;
                if (off + rdlen > len)
                        return -EBADMSG;
                bool take =
                    cls == 1 && ((type == DNS_TYPE_A && rdlen == 4 && a.n4 < DNS_ADDRS_MAX) ||
                                 (type == DNS_TYPE_AAAA && rdlen == 16 && a.n6 < DNS_ADDRS_MAX));
                if (take) {
                        if (type == DNS_TYPE_A)
                                memcpy(a.v4[a.n4++], msg + off, 4);
                        else
                                memcpy(a.v6[a.n6++], msg + off, 16);
                        if (ttl > 0x7fffffff)
                                ttl = 0; /* RFC 2181 §8: treated as zero */
                        if (a.min_ttl == 0 || ttl < a.min_ttl)
                                a.min_ttl = ttl;
                }
                off += rdlen;
        }
        *ret = a;
        return 0;
}

size_t dns_error_reply(const uint8_t *query, const struct dns_question *q, unsigned rcode,
                       uint8_t *out, size_t cap)
{
        if (q->end > cap || q->end < HEADER)
                return 0;
        memcpy(out, query, q->end);
        /* QR, the query's opcode and RD, RA; rcode */
        uint16_t flags = (uint16_t)(0x8000 | (q->flags & 0x7900) | 0x0080 | (rcode & 0xf));
        out[2] = (uint8_t)(flags >> 8);
        out[3] = (uint8_t)flags;
        memset(out + 6, 0, 6); /* no answer, authority or additional records */
        out[4] = 0;
        out[5] = 1;
        return q->end;
}
