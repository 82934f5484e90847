/* SPDX-License-Identifier: Apache-2.0 */
/* Registry pulls (server/pull/): references and their template names, WWW-Authenticate
 * challenges, Docker's config.json; the admission of image layers and the store's pins
 * (server/storage/image-admit.h, layer-store.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "pull/pull-auth.h"
#include "pull/pull-ref.h"
#include "pull/pull.h"
#include "storage/image-admit.h"
#include "storage/image-import.h"
#include "storage/layer-store.h"
#include "unit.h"

static void ref_ok(const char *in, const char *host, const char *repo, const char *tag,
                   const char *digest)
{
        struct pull_ref r;
        char err[PULL_ERR_MAX];
        int rc = pull_ref_parse(in, &r, err);
        CHECK_EQ_INT(rc, 0);
        if (rc < 0) {
                fprintf(stderr, "  '%s': %s\n", in, err);
                return;
        }
        CHECK_STREQ(r.host, host);
        CHECK_STREQ(r.repo, repo);
        CHECK_STREQ(r.tag, tag);
        CHECK_STREQ(r.digest, digest);
}

static void ref_bad(const char *in, const char *why)
{
        struct pull_ref r;
        char err[PULL_ERR_MAX] = "";
        CHECK_EQ_INT(pull_ref_parse(in, &r, err), -EINVAL);
        CHECK(strstr(err, why) != NULL);
        if (!strstr(err, why))
                fprintf(stderr, "  '%s': %s\n", in, err);
}

static void test_refs(void)
{
        const char *d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        char s[PULL_REF_MAX + 8];
        ref_ok("python", "docker.io", "library/python", "latest", "");
        ref_ok("python:3.12-slim", "docker.io", "library/python", "3.12-slim", "");
        ref_ok("docker.io/python:3", "docker.io", "library/python", "3", "");
        ref_ok("index.docker.io/library/python:3", "docker.io", "library/python", "3", "");
        ref_ok("oven/bun:1", "docker.io", "oven/bun", "1", "");
        ref_ok("ghcr.io/org/team/app:v1.2", "ghcr.io", "org/team/app", "v1.2", "");
        ref_ok("localhost/app", "localhost", "app", "latest", "");
        ref_ok("127.0.0.1:5000/a_b/c__d/e--f.g:T_1", "127.0.0.1:5000", "a_b/c__d/e--f.g", "T_1",
               "");
        ref_ok("Registry.Example.COM/app", "registry.example.com", "app", "latest", "");
        ref_ok("[::1]:5000/app:1", "[::1]:5000", "app", "1", "");
        snprintf(s, sizeof(s), "python@%s", d);
        ref_ok(s, "docker.io", "library/python", "", d);
        snprintf(s, sizeof(s), "host:1/app:tag@%s", d);
        ref_ok(s, "host:1", "app", "tag", d);

        ref_bad("", "no image named");
        ref_bad("Python", "not a valid path component");
        ref_bad("app//x", "not a valid path component");
        ref_bad("library/", "not a valid path component");
        ref_bad("app_", "not a valid path component");
        ref_bad("a/.b", "not a valid path component");
        ref_bad("app:-x", "not a valid tag");
        ref_bad("app:", "not a valid tag");
        ref_bad("app@md5:abc", "only sha256");
        ref_bad("app@sha256:abc", "64 lower-case hex");
        ref_bad("h.o.st:99999999/app", "not a registry host");
        ref_bad("[zz]:1/app", "not a registry host");
        ref_bad("127.0.0.1:5000/", "no image path");
        memset(s, 'a', PULL_REF_MAX + 1);
        s[PULL_REF_MAX + 1] = 0;
        ref_bad(s, "at most");

        struct pull_ref r;
        char err[PULL_ERR_MAX], buf[PULL_REF_MAX + 80];
        CHECK_EQ_INT(pull_ref_parse("python:3", &r, err), 0);
        pull_ref_format(&r, buf, sizeof(buf));
        CHECK_STREQ(buf, "docker.io/library/python:3");
        CHECK_STREQ(pull_ref_reference(&r), "3");
        snprintf(s, sizeof(s), "python@%s", d);
        CHECK_EQ_INT(pull_ref_parse(s, &r, err), 0);
        CHECK_STREQ(pull_ref_reference(&r), d);
}

static void name_is(const char *in, const char *want_id)
{
        char id[IMAGE_ID_MAX], err[PULL_ERR_MAX];
        int r = pull_template_id(in, id, err);
        CHECK_EQ_INT(r, 0);
        if (r >= 0)
                CHECK_STREQ(id, want_id);
}

static void test_names(void)
{
        name_is("python:3.12", "python:3.12");
        name_is("python", "python");
        name_is("docker.io/library/python:latest", "python");
        name_is("oven/bun:1", "oven-bun:1");
        name_is("ghcr.io/org/app:v1", "ghcr.io-org-app:v1");
        name_is("127.0.0.1:5000/team/app:v1", "127.0.0.1-5000-team-app:v1");
        name_is("[::1]:5000/app:1", "1--5000-app:1");
        name_is("app:1..x", "app:1.x"); /* a template id has no ".." */
        name_is("python@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "python:sha256-0123456789ab");
        /* too long for a template id: cut, ending in a hash of the whole, still valid and
         * different for different images */
        char a[400], b[400], ia[IMAGE_ID_MAX], ib[IMAGE_ID_MAX], err[PULL_ERR_MAX];
        snprintf(a, sizeof(a), "registry.example.com/%s/app:%s",
                 "a-very-long-organisation-name/with/many/levels/of/teams", "v1.2.3-build.456");
        snprintf(b, sizeof(b), "registry.example.com/%s/app:%s",
                 "a-very-long-organisation-name/with/many/levels/of/other-teams",
                 "v1.2.3-build.456");
        CHECK_EQ_INT(pull_template_id(a, ia, err), 0);
        CHECK_EQ_INT(pull_template_id(b, ib, err), 0);
        CHECK(strcmp(ia, ib) != 0);
        CHECK(template_name_valid(ia) && template_name_valid(ib));
        CHECK(strchr(ia, ':') && strlen(strchr(ia, ':') + 1) <= IMAGE_TAG_MAX);
        char tag[200];
        memset(tag, 'x', 120);
        tag[120] = 0;
        snprintf(a, sizeof(a), "app:%s", tag);
        CHECK_EQ_INT(pull_template_id(a, ia, err), 0);
        CHECK(template_name_valid(ia));

        CHECK(pull_host_is_loopback("127.0.0.1:5000"));
        CHECK(pull_host_is_loopback("127.1.2.3"));
        CHECK(pull_host_is_loopback("localhost:80"));
        CHECK(pull_host_is_loopback("[::1]:5000"));
        CHECK(!pull_host_is_loopback("192.0.2.2:5000"));
        CHECK(!pull_host_is_loopback("localhost.example.com"));
        CHECK(!pull_host_is_loopback("128.0.0.1"));
}

static void test_challenges(void)
{
        /* a WWW-Authenticate value → the parse's result, and the fields given (NULL: not
         * checked) */
        static const struct {
                const char *value;
                int rc;
                const char *scheme, *realm, *service, *scope;
        } cases[] = {
            {"Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
             "scope=\"repository:library/python:pull\"",
             0, "Bearer", "https://auth.docker.io/token", "registry.docker.io",
             "repository:library/python:pull"},
            /* unquoted values, odd spacing and case, an escaped quote, unknown params */
            {"  bearer  realm=http://127.0.0.1:9/t , service=\"a\\\"b\", "
             "error=\"insufficient_scope\"",
             0, NULL, "http://127.0.0.1:9/t", "a\"b", ""},
            {"Basic realm=\"Registry Realm\"", 0, "Basic", NULL, NULL, NULL},
            {"Bearer service=\"x\"", -EINVAL, NULL, NULL, NULL, NULL}, /* no realm */
            {"Negotiate abc", -EINVAL, NULL, NULL, NULL, NULL},
            {"Bearer realm=\"unterminated", -EINVAL, NULL, NULL, NULL, NULL},
            {"", -EINVAL, NULL, NULL, NULL, NULL},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct pull_challenge c;
                unit_case = cases[i].value;
                CHECK_EQ_INT(pull_challenge_parse(cases[i].value, &c), cases[i].rc);
                CHECK_STREQ_IF(c.scheme, cases[i].scheme);
                CHECK_STREQ_IF(c.realm, cases[i].realm);
                CHECK_STREQ_IF(c.service, cases[i].service);
                CHECK_STREQ_IF(c.scope, cases[i].scope);
        }
        unit_case = NULL;
        struct pull_challenge c;
        CHECK_EQ_INT(pull_challenge_parse(NULL, &c), -EINVAL);
}

static void creds_is(const char *json, const char *host, int want, const char *user, const char *pw)
{
        struct pull_creds c = {};
        int r = pull_creds_from_docker_config(json, strlen(json), host, &c);
        CHECK_EQ_INT(r, want);
        if (r > 0) {
                CHECK_STREQ(c.username, user);
                CHECK_STREQ(c.password, pw);
        }
        pull_creds_done(&c);
        CHECK(c.username == NULL && c.password == NULL);
}

static void test_docker_config(void)
{
        /* "auth" is base64 of user:password (the password may hold ':') */
        const char *cfg =
            "{\"auths\":{\"https://index.docker.io/v1/\":{\"auth\":\"aHViOnMzY3I6dA==\"},"
            "\"ghcr.io\":{\"username\":\"gh\",\"password\":\"tok\"},"
            "\"http://127.0.0.1:5000/v2/\":{\"auth\":\"bG9jYWw6cHc=\"},"
            "\"quay.io\":{}},\"credsStore\":\"desktop\"}";
        creds_is(cfg, "docker.io", 1, "hub", "s3cr:t");
        creds_is(cfg, "ghcr.io", 1, "gh", "tok");
        creds_is(cfg, "127.0.0.1:5000", 1, "local", "pw");
        creds_is(cfg, "quay.io", 0, NULL, NULL);
        creds_is(cfg, "127.0.0.1", 0, NULL, NULL);
        creds_is("{\"auths\":{\"x.io\":{\"auth\":\"!!!\"}}}", "x.io", -EINVAL, NULL, NULL);
        creds_is("{\"auths\":{\"x.io\":{\"auth\":\"bm9jb2xvbg==\"}}}", "x.io", -EINVAL, NULL,
                 NULL); /* "nocolon" */
        creds_is("[1,2]", "x.io", -EINVAL, NULL, NULL);
        creds_is("{}", "x.io", 0, NULL, NULL);

        struct pull_creds c = {};
        CHECK_EQ_INT(pull_creds_set(&c, "", "x"), -EINVAL);
        CHECK_EQ_INT(pull_creds_set(&c, "u", "p"), 0);
        pull_creds_done(&c);
}

static void test_admission(const char *state)
{
        struct image_admission a = {.state = state,
                                    .lim = {.max_layer_bytes = 1 << 20, .reserve_bytes = 0}};
        char err[IMAGE_ADMIT_ERR_MAX];
        uint64_t layer = 0;
        CHECK_EQ_INT(image_admit_charge(&a, &layer, 512 << 10, "layer sha256:aa", err), 0);
        CHECK_EQ_INT(image_admit_charge(&a, &layer, 512 << 10, "layer sha256:aa", err), 0);
        CHECK_EQ_INT(layer, 1 << 20);
        CHECK_EQ_INT(image_admit_charge(&a, &layer, 1, "layer sha256:aa", err), -EFBIG);
        CHECK(strstr(err, "layer sha256:aa is larger than 1 MiB uncompressed") != NULL);
        CHECK_EQ_INT(layer, 1 << 20);
        image_admit_done(&a);
        /* a reserve larger than the disk: nothing fits */
        uint64_t room;
        CHECK_EQ_INT(image_admit_free_bytes(state, UINT64_MAX, &room), 0);
        CHECK_EQ_INT(room, 0);
        struct image_admission b = {.state = state, .lim = {.reserve_bytes = UINT64_MAX}};
        CHECK_EQ_INT(image_admit_charge(&b, NULL, 4096, "layer sha256:bb", err), -ENOSPC);
        CHECK(strstr(err, "not enough space on the host's state disk for layer sha256:bb") != NULL);
        /* two writers: what one announced counts against the other */
        CHECK_EQ_INT(image_admit_free_bytes(state, 0, &room), 0);
        struct image_admission w1 = {.state = state}, w2 = {.state = state};
        CHECK_EQ_INT(image_admit_charge(&w1, NULL, room / 2 + 4096, "one", err), 0);
        CHECK_EQ_INT(image_admit_charge(&w2, NULL, room / 2 + 4096, "two", err), -ENOSPC);
        CHECK(strstr(err, "promised to other images") != NULL);
        image_admit_done(&w1);
        CHECK_EQ_INT(image_admit_charge(&w2, NULL, room / 2 + 4096, "two", err), 0);
        image_admit_done(&w2);
        CHECK_EQ_INT(image_admit_charge(NULL, &layer, UINT64_MAX, "x", err), 0);
}

static void test_pins(const char *state)
{
        char tmp[4096], hex[LAYER_ID_MAX], path[4200];
        CHECK_EQ_INT(layer_store_tmp_dir(state, tmp, sizeof(tmp)), 0);
        snprintf(path, sizeof(path), "%s/file", tmp);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (f) {
                fputs("pinned\n", f);
                fclose(f);
        }
        layer_store_read_lock();
        CHECK_EQ_INT(layer_store_adopt(state, tmp, hex), 0);
        CHECK_EQ_INT(layer_store_pin(hex), 0);
        CHECK_EQ_INT(layer_store_pin(hex), 0);
        layer_store_unlock();
        CHECK_EQ_INT(layer_store_gc(state, 0), 0); /* nothing names it, but it is pinned */
        CHECK_EQ_INT(layer_store_has(state, hex), 1);
        layer_store_unpin(hex);
        CHECK_EQ_INT(layer_store_gc(state, 0), 0); /* pinned once more */
        layer_store_unpin(hex);
        CHECK_EQ_INT(layer_store_gc(state, 0), 1);
        CHECK_EQ_INT(layer_store_has(state, hex), 0);
        CHECK_EQ_INT(layer_store_pin("not-hex"), -EINVAL);
}

int main(void)
{
        char state[] = "/tmp/sbx-test-pull-XXXXXX";
        if (!mkdtemp(state))
                return 1;
        test_refs();
        test_names();
        test_challenges();
        test_docker_config();
        test_admission(state);
        test_pins(state);
        rm_rf(state);
        printf("%d checks, %d failed\n", unit_checks, unit_failures);
        return unit_failures != 0;
}
