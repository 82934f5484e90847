/* SPDX-License-Identifier: Apache-2.0 */
/* Ids, keys and tokens: formats the SDKs check, and no repeats. */
#include <ctype.h>

#include "random-util.h"
#include "unit.h"

int main(void)
{
        char key[45] = "e2b_";
        CHECK_EQ_INT(random_hex(key + 4, 20), 0);
        CHECK_EQ_INT(strlen(key), 44);
        int hex_ok = 1;
        for (size_t i = 4; i < 44; i++)
                hex_ok &= (isdigit((unsigned char)key[i]) || (key[i] >= 'a' && key[i] <= 'f'));
        CHECK(hex_ok); /* the SDK regex ^e2b_[0-9a-f]+$ */

        char ids[64][21];
        for (int i = 0; i < 64; i++) {
                CHECK_EQ_INT(random_sandbox_id(ids[i]), 0);
                CHECK_EQ_INT(strlen(ids[i]), 20);
                CHECK(islower((unsigned char)ids[i][0]));
                int ok = 1;
                for (int j = 0; j < 20; j++)
                        ok &=
                            islower((unsigned char)ids[i][j]) || isdigit((unsigned char)ids[i][j]);
                CHECK(ok);
                for (int k = 0; k < i; k++)
                        CHECK(strcmp(ids[i], ids[k]) != 0);
        }
        return unit_finish("test-random");
}
