/* SPDX-License-Identifier: Apache-2.0 */
/* The growable buffer every component shares: appends keep a NUL, consume and steal; the capped
 * one a write callback fills. */
#include <stdint.h>

#include "buf.h"
#include "unit.h"

int main(void)
{
        struct buf b = {0};
        CHECK_STREQ(buf_str(&b), ""); /* empty reads as "" */
        CHECK(buf_steal(&b) == NULL);

        CHECK_EQ_INT(buf_adds(&b, "hello"), 0);
        CHECK_EQ_INT(buf_add(&b, " \0x", 3), 0); /* binary bytes keep their length */
        CHECK_EQ_INT(b.len, 8);
        CHECK_EQ_INT(b.p[8], 0);
        CHECK_EQ_INT(buf_printf(&b, "%d-%s", 42, "z"), 0);
        CHECK_EQ_INT(b.len, 12);
        CHECK(memcmp(b.p, "hello \0x42-z", 13) == 0);

        buf_consume(&b, 6);
        CHECK_EQ_INT(b.len, 6);
        CHECK(memcmp(b.p, "\0x42-z", 7) == 0);
        buf_consume(&b, 100);
        CHECK_EQ_INT(b.len, 0);
        CHECK_STREQ(buf_str(&b), "");

        /* growth past many doublings keeps every byte */
        for (int i = 0; i < 100000; i++)
                CHECK_EQ_INT(buf_add(&b, "0123456789", 10), 0);
        CHECK_EQ_INT(b.len, 1000000);
        int ok = 1;
        for (size_t i = 0; i < b.len; i++)
                ok &= b.p[i] == (char)('0' + i % 10);
        CHECK(ok);
        CHECK_EQ_INT(b.p[b.len], 0);

        /* an impossible size is refused and leaves the buffer as it was */
        CHECK_EQ_INT(buf_reserve(&b, SIZE_MAX - 8), -ENOMEM);
        CHECK_EQ_INT(b.len, 1000000);

        char *p = buf_steal(&b);
        CHECK(p != NULL);
        CHECK_EQ_INT(b.len, 0);
        CHECK(b.p == NULL);
        free(p);
        buf_done(&b);

        /* a capped buf takes pieces whole up to its max, then refuses (a transfer's end) and
         * keeps what it took */
        struct buf_capped c = {.max = 10};
        char piece[6] = "abcdef";
        CHECK_EQ_INT(buf_capped_write(piece, 1, 4, &c), 4);
        CHECK_EQ_INT(buf_capped_write(piece, 2, 3, &c), 6); /* size * nmemb bytes: exactly 10 */
        CHECK_EQ_INT(buf_capped_write(piece, 1, 1, &c), 0);
        CHECK_EQ_INT(c.b.len, 10);
        CHECK_STREQ(buf_str(&c.b), "abcdabcdef");
        buf_done(&c.b);
        return unit_finish("test-buf");
}
