/* SPDX-License-Identifier: Apache-2.0 */
/* /files helpers: Accept-Encoding negotiation (envd's rules) and X-Metadata-* parsing. */
#include <errno.h>
#include <string.h>

#include "envd/files-meta.h"
#include "unit.h"

static int parse(struct sbx_header *h, size_t n, struct agent_metadata *m)
{
        struct agent_request r = {.head = {.n_headers = n, .headers = h}};
        const char *why = NULL;
        return agent_metadata_parse(&r, m, &why);
}

int main(void)
{
        struct agent_metadata m = {0};
        char longkey[300], bigval[5000];

        CHECK_EQ_INT(agent_accept_encoding(NULL), 0);
        CHECK_EQ_INT(agent_accept_encoding(""), 0);
        CHECK_EQ_INT(agent_accept_encoding("gzip"), 1);
        CHECK_EQ_INT(agent_accept_encoding("GZIP"), 1);
        CHECK_EQ_INT(agent_accept_encoding("gzip, deflate"), 1);
        CHECK_EQ_INT(agent_accept_encoding("br"), 0);
        CHECK_EQ_INT(agent_accept_encoding("identity"), 0);
        CHECK_EQ_INT(agent_accept_encoding("identity, gzip"), 0);
        CHECK_EQ_INT(agent_accept_encoding("identity;q=0.5, gzip;q=0.9"), 1);
        CHECK_EQ_INT(agent_accept_encoding("gzip;q=0"), 0);
        CHECK_EQ_INT(agent_accept_encoding("*"), 0);
        CHECK_EQ_INT(agent_accept_encoding("*, identity;q=0"), 1);
        CHECK_EQ_INT(agent_accept_encoding("br, identity;q=0"), -EINVAL);
        CHECK_EQ_INT(agent_accept_encoding("gzip;q=0, identity;q=0"), -EINVAL);

        struct sbx_header h1[] = {{"X-Metadata-Owner", "me"},
                                  {"x-metadata-purpose", "test"},
                                  {"X-Metadata-Owner", "second"},
                                  {"X-Metadata-", "dropped"},
                                  {"Content-Type", "text/plain"}};
        CHECK_EQ_INT(parse(h1, 5, &m), 0);
        CHECK_EQ_INT(m.n, 2);
        CHECK_STREQ(m.keys[0], "owner");
        CHECK_STREQ(m.values[0], "me");
        CHECK_STREQ(m.keys[1], "purpose");
        agent_metadata_done(&m);

        struct sbx_header h2[] = {{"X-Metadata-Bad", "tab\there"}};
        CHECK_EQ_INT(parse(h2, 1, &m), -EINVAL);

        memset(longkey, 'k', sizeof(longkey));
        memcpy(longkey, "X-Metadata-", 11);
        longkey[11 + 247] = 0;
        struct sbx_header h3[] = {{longkey, "v"}};
        CHECK_EQ_INT(parse(h3, 1, &m), -EINVAL);
        longkey[11 + 246] = 0;
        CHECK_EQ_INT(parse(h3, 1, &m), 0);
        agent_metadata_done(&m);

        memset(bigval, 'v', sizeof(bigval));
        bigval[4097] = 0;
        struct sbx_header h4[] = {{"X-Metadata-Big", bigval}};
        CHECK_EQ_INT(parse(h4, 1, &m), -EINVAL);
        return unit_finish("test-agent-files-meta");
}
