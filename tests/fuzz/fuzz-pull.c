/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for what a registry pull reads from outside (server/pull/): an image
 * reference (from a request or a Dockerfile's FROM), a registry's WWW-Authenticate header, and
 * a Docker config.json.
 *
 * Input: three fields separated by '\n': the reference, the challenge, the config.json (the
 * rest of the input; the host looked up in it is the reference's). Properties checked:
 *   - a reference that parses has a host, a path, and a tag or a digest; its canonical form
 *     parses to the same reference; the template it becomes has a valid template name, and a
 *     refusal says why;
 *   - a challenge that parses is Bearer (with a realm) or Basic;
 *   - credentials found in config.json are a user name and a password, both non-empty.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/validate.h"
#include "fuzz.h"
#include "pull/pull-auth.h"
#include "pull/pull-ref.h"
#include "pull/pull.h"

static void check_ref(const char *s)
{
        struct pull_ref r, again;
        char err[PULL_ERR_MAX] = "", buf[PULL_REF_MAX + 80], id[IMAGE_ID_MAX];
        if (pull_ref_parse(s, &r, err) < 0) {
                FUZZ_CHECK(err[0]);
                return;
        }
        FUZZ_CHECK(r.host[0] && r.repo[0] && (r.tag[0] || r.digest[0]));
        pull_ref_format(&r, buf, sizeof(buf));
        FUZZ_CHECK(pull_ref_parse(buf, &again, err) == 0);
        FUZZ_CHECK(memcmp(&r, &again, sizeof(r)) == 0 ||
                   (strcmp(r.host, again.host) == 0 && strcmp(r.repo, again.repo) == 0 &&
                    strcmp(r.tag, again.tag) == 0 && strcmp(r.digest, again.digest) == 0));
        FUZZ_CHECK(pull_template_id(s, id, err) == 0);
        FUZZ_CHECK(template_name_valid(id));
}

static void check_challenge(const char *s)
{
        struct pull_challenge c;
        if (pull_challenge_parse(s, &c) < 0)
                return;
        FUZZ_CHECK(!strcasecmp(c.scheme, "Basic") ||
                   (!strcasecmp(c.scheme, "Bearer") && c.realm[0]));
}

static void check_config(const char *json, size_t len, const char *s)
{
        struct pull_ref r;
        char err[PULL_ERR_MAX];
        struct pull_creds c = {};
        const char *host = pull_ref_parse(s, &r, err) == 0 ? r.host : "docker.io";
        int k = pull_creds_from_docker_config(json, len, host, &c);
        FUZZ_CHECK(k == 0 || k == 1 || k == -EINVAL || k == -ENOMEM);
        if (k == 1)
                FUZZ_CHECK(c.username && *c.username && c.password && *c.password);
        else
                FUZZ_CHECK(!c.username && !c.password);
        pull_creds_done(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *in = malloc(size + 1);
        if (!in)
                return 0;
        memcpy(in, data, size);
        in[size] = 0;
        char *ref = in, *chal = strchr(ref, '\n'), *cfg = NULL;
        if (chal) {
                *chal++ = 0;
                cfg = strchr(chal, '\n');
                if (cfg)
                        *cfg++ = 0;
        }
        check_ref(ref);
        check_challenge(chal ? chal : "");
        if (cfg)
                check_config(cfg, strlen(cfg), ref);
        free(in);
        return 0;
}
