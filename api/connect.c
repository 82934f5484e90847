/* SPDX-License-Identifier: Apache-2.0 */
#include "connect.h"

#include <errno.h>
#include <string.h>

void connect_envelope_header(uint8_t out[CONNECT_ENVELOPE_HEADER_SIZE], uint8_t flags, uint32_t len)
{
        out[0] = flags;
        out[1] = (uint8_t)(len >> 24);
        out[2] = (uint8_t)(len >> 16);
        out[3] = (uint8_t)(len >> 8);
        out[4] = (uint8_t)len;
}

long connect_envelope_parse(const uint8_t *buf, size_t len, size_t max, uint8_t *ret_flags,
                            const uint8_t **ret_msg, uint32_t *ret_msg_len)
{
        if (len < CONNECT_ENVELOPE_HEADER_SIZE)
                return 0;
        uint8_t flags = buf[0];
        if (flags & ~CONNECT_FLAG_END_STREAM)
                return -EPROTO; /* compressed (0x01) or unknown bits */
        uint32_t n =
            (uint32_t)buf[1] << 24 | (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 8 | buf[4];
        if (n > max)
                return -EMSGSIZE;
        if (len - CONNECT_ENVELOPE_HEADER_SIZE < n)
                return 0;
        *ret_flags = flags;
        *ret_msg = buf + CONNECT_ENVELOPE_HEADER_SIZE;
        *ret_msg_len = n;
        return (long)(CONNECT_ENVELOPE_HEADER_SIZE + n);
}

int connect_code_http_status(const char *code)
{
        static const struct {
                const char *code;
                int status;
        } map[] = {
            {"canceled", 499},           {"invalid_argument", 400},    {"deadline_exceeded", 504},
            {"not_found", 404},          {"already_exists", 409},      {"permission_denied", 403},
            {"resource_exhausted", 429}, {"failed_precondition", 400}, {"aborted", 409},
            {"out_of_range", 400},       {"unimplemented", 501},       {"unavailable", 503},
            {"unauthenticated", 401},
        };
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
                if (strcmp(map[i].code, code) == 0)
                        return map[i].status;
        return 500;
}
