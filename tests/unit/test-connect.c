/* SPDX-License-Identifier: Apache-2.0 */
/* Connect envelope framing and error-code mapping (e2b-wire.md §3.3). */
#include <errno.h>

#include "connect.h"
#include "unit.h"

int main(void)
{
        uint8_t buf[64];
        connect_envelope_header(buf, 0, 4);
        memcpy(buf + 5, "{}{}", 4);
        CHECK_EQ_INT(buf[0], 0);
        CHECK_EQ_INT(buf[4], 4);

        uint8_t flags;
        const uint8_t *msg;
        uint32_t mlen;
        /* Incomplete header and incomplete body both ask for more bytes. */
        CHECK_EQ_INT(connect_envelope_parse(buf, 3, 1024, &flags, &msg, &mlen), 0);
        CHECK_EQ_INT(connect_envelope_parse(buf, 7, 1024, &flags, &msg, &mlen), 0);
        CHECK_EQ_INT(connect_envelope_parse(buf, 9, 1024, &flags, &msg, &mlen), 9);
        CHECK_EQ_INT(mlen, 4);
        CHECK(msg == buf + 5);

        /* The SDK's example prefix: 00 00 00 00 4d is a 77-byte message. */
        uint8_t ex[5 + 77] = {0, 0, 0, 0, 0x4d};
        CHECK_EQ_INT(connect_envelope_parse(ex, sizeof(ex), 1024, &flags, &msg, &mlen), 82);
        CHECK_EQ_INT(mlen, 77);

        connect_envelope_header(buf, CONNECT_FLAG_END_STREAM, 2);
        memcpy(buf + 5, "{}", 2);
        CHECK_EQ_INT(connect_envelope_parse(buf, 7, 1024, &flags, &msg, &mlen), 7);
        CHECK_EQ_INT(flags, CONNECT_FLAG_END_STREAM);

        /* Compressed frames are rejected; oversized lengths too. */
        connect_envelope_header(buf, CONNECT_FLAG_COMPRESSED, 2);
        CHECK_EQ_INT(connect_envelope_parse(buf, 7, 1024, &flags, &msg, &mlen), -EPROTO);
        connect_envelope_header(buf, 0, 0xffffffffu);
        CHECK_EQ_INT(connect_envelope_parse(buf, 7, 1024, &flags, &msg, &mlen), -EMSGSIZE);

        CHECK_EQ_INT(connect_code_http_status("not_found"), 404);
        CHECK_EQ_INT(connect_code_http_status("already_exists"), 409);
        CHECK_EQ_INT(connect_code_http_status("unauthenticated"), 401);
        CHECK_EQ_INT(connect_code_http_status("deadline_exceeded"), 504);
        CHECK_EQ_INT(connect_code_http_status("invalid_argument"), 400);
        CHECK_EQ_INT(connect_code_http_status("resource_exhausted"), 429);
        CHECK_EQ_INT(connect_code_http_status("canceled"), 499);
        CHECK_EQ_INT(connect_code_http_status("internal"), 500);
        CHECK_EQ_INT(connect_code_http_status("no_such_code"), 500);
        return unit_finish("test-connect");
}
