/* SPDX-License-Identifier: Apache-2.0 */
#include "pull/pull-ref.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "macros.h"
#include "sha256.h"
#include "storage/image-import.h"

_printf_(2, 3) static int bad(char *err, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, PULL_ERR_MAX, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

static bool lower_alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* One path component: [a-z0-9]+ joined by '.', '_', "__" or runs of '-'. */
static bool component_valid(const char *s, size_t n)
{
        if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
                return false;
        for (size_t i = 1; i < n;) {
                if (lower_alnum(s[i])) {
                        i++;
                        continue;
                }
                size_t j = i;
                while (j < n && !lower_alnum(s[j]))
                        j++;
                size_t run = j - i;
                bool ok = (run == 1 && (s[i] == '.' || s[i] == '_' || s[i] == '-')) ||
                          (run == 2 && s[i] == '_' && s[i + 1] == '_') || strspn(s + i, "-") >= run;
                if (!ok)
                        return false;
                i = j;
        }
        return true;
}

static bool host_valid(const char *h, size_t n)
{
        if (n == 0 || n >= PULL_HOST_MAX)
                return false;
        size_t name = n;
        if (h[0] == '[') {
                const char *e = memchr(h, ']', n);
                if (!e)
                        return false;
                name = (size_t)(e - h) + 1;
                char addr[64];
                struct in6_addr a;
                if (name - 2 >= sizeof(addr))
                        return false;
                memcpy(addr, h + 1, name - 2);
                addr[name - 2] = 0;
                if (inet_pton(AF_INET6, addr, &a) != 1)
                        return false;
        } else {
                const char *c = memchr(h, ':', n);
                name = c ? (size_t)(c - h) : n;
                if (name == 0 || h[0] == '-' || h[0] == '.' || h[name - 1] == '-' ||
                    h[name - 1] == '.')
                        return false;
                for (size_t i = 0; i < name; i++)
                        if (!lower_alnum(h[i]) && !(h[i] >= 'A' && h[i] <= 'Z') && h[i] != '.' &&
                            h[i] != '-')
                                return false;
        }
        if (name == n)
                return true;
        if (h[name] != ':' || n - name - 1 == 0 || n - name - 1 > 5)
                return false;
        for (size_t i = name + 1; i < n; i++)
                if (h[i] < '0' || h[i] > '9')
                        return false;
        return true;
}

static bool tag_valid(const char *t)
{
        size_t n = strlen(t);
        if (n == 0 || n > PULL_TAG_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = t[i];
                bool w = lower_alnum(c) || (c >= 'A' && c <= 'Z') || c == '_';
                if (!(w || (i > 0 && (c == '.' || c == '-'))))
                        return false;
        }
        return true;
}

int pull_ref_parse(const char *s, struct pull_ref *ret, char err[static PULL_ERR_MAX])
{
        struct pull_ref r = {};
        char buf[PULL_REF_MAX + 1];
        err[0] = 0;
        if (!s || !*s)
                return bad(err, "no image named");
        if (strlen(s) > PULL_REF_MAX)
                return bad(err, "an image reference is at most %d bytes", PULL_REF_MAX);
        snprintf(buf, sizeof(buf), "%s", s);
        char *at = strchr(buf, '@');
        if (at) {
                *at = 0;
                const char *d = at + 1;
                if (strncmp(d, "sha256:", 7) != 0)
                        return bad(err, "'%.200s': only sha256 digests are supported", s);
                if (strlen(d + 7) != 64 || strspn(d + 7, "0123456789abcdef") != 64)
                        return bad(err,
                                   "'%.200s': a digest is sha256: and 64 lower-case hex "
                                   "digits",
                                   s);
                snprintf(r.digest, sizeof(r.digest), "%s", d);
        }
        /* the host: a first component with '.' or ':', or localhost */
        char *path = buf, *slash = strchr(buf, '/');
        if (slash) {
                size_t n = (size_t)(slash - buf);
                bool is_host = memchr(buf, '.', n) || memchr(buf, ':', n) ||
                               (n == 9 && strncmp(buf, "localhost", 9) == 0) || buf[0] == '[';
                if (is_host) {
                        if (!host_valid(buf, n))
                                return bad(err, "'%.200s': '%.*s' is not a registry host", s,
                                           (int)MIN(n, (size_t)200), buf);
                        for (size_t i = 0; i < n; i++)
                                r.host[i] =
                                    (char)(buf[i] >= 'A' && buf[i] <= 'Z' ? buf[i] + 32 : buf[i]);
                        path = slash + 1;
                }
        }
        /* the tag: after the last ':' of the path */
        char *colon = strrchr(path, ':');
        if (colon) {
                *colon = 0;
                if (!tag_valid(colon + 1))
                        return bad(err, "'%.200s': '%.140s' is not a valid tag", s, colon + 1);
                snprintf(r.tag, sizeof(r.tag), "%s", colon + 1);
        }
        if (!r.host[0]) {
                snprintf(r.host, sizeof(r.host), PULL_DOCKER_HUB);
                if (strcmp(path, "index.docker.io") == 0 || strcmp(path, "docker.io") == 0)
                        return bad(err, "'%.200s': no image named", s);
        }
        /* Docker Hub's host spellings, and its official images under library/ */
        if (strcmp(r.host, "index.docker.io") == 0 || strcmp(r.host, "registry-1.docker.io") == 0)
                snprintf(r.host, sizeof(r.host), PULL_DOCKER_HUB);
        bool hub = strcmp(r.host, PULL_DOCKER_HUB) == 0;
        if ((size_t)snprintf(r.repo, sizeof(r.repo), "%s%s",
                             hub && !strchr(path, '/') ? "library/" : "", path) >= sizeof(r.repo))
                return bad(err, "'%.200s': the image's path is longer than %d bytes", s,
                           PULL_REPO_MAX - 1);
        if (!*path)
                return bad(err, "'%.200s': no image path after the registry's host", s);
        for (const char *p = r.repo;; p++) { /* every component, an empty last one too */
                size_t n = strcspn(p, "/");
                if (!component_valid(p, n))
                        return bad(err,
                                   "'%.200s': '%.*s' is not a valid path component (lower-case "
                                   "letters and digits, joined by '.', '_' or '-')",
                                   s, (int)MIN(n, (size_t)200), p);
                p += n;
                if (!*p)
                        break;
        }
        if (!r.tag[0] && !r.digest[0])
                snprintf(r.tag, sizeof(r.tag), "latest");
        *ret = r;
        return 0;
}

void pull_ref_format(const struct pull_ref *r, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s%s%s%s%s", r->host, r->repo, r->tag[0] ? ":" : "", r->tag,
                 r->digest[0] ? "@" : "", r->digest);
}

const char *pull_ref_reference(const struct pull_ref *r)
{
        return r->digest[0] ? r->digest : r->tag;
}

/* s cut to max bytes, its last 13 then "-" and 12 hex digits of s's SHA-256. */
static void shorten(char *s, size_t max)
{
        size_t n = strlen(s);
        if (n <= max)
                return;
        char hex[65];
        struct sha256 h;
        sha256_init(&h);
        sha256_update(&h, s, n);
        sha256_final_hex(&h, hex);
        snprintf(s + max - 13, 14, "-%.12s", hex);
}

void pull_ref_image_name(const struct pull_ref *r, char *ret_name, char *ret_tag)
{
        char name[PULL_HOST_MAX + PULL_REPO_MAX + 2], tag[PULL_TAG_MAX + 8];
        bool hub = strcmp(r->host, PULL_DOCKER_HUB) == 0;
        const char *repo = hub && strncmp(r->repo, "library/", 8) == 0 ? r->repo + 8 : r->repo;
        snprintf(name, sizeof(name), "%s%s%s", hub ? "" : r->host, hub ? "" : "-", repo);
        /* [a-z0-9._-]: '/', ':' and an IPv6 host's brackets become '-' */
        size_t o = 0;
        for (size_t i = 0; name[i]; i++) {
                char c = name[i];
                c = lower_alnum(c) || c == '.' || c == '_' || c == '-' ? c : '-';
                if (o == 0 && !lower_alnum(c))
                        continue;
                if (c == '.' && o > 0 && name[o - 1] == '.')
                        continue;
                name[o++] = c;
        }
        name[o] = 0;
        if (r->tag[0])
                snprintf(tag, sizeof(tag), "%s", r->tag);
        else
                snprintf(tag, sizeof(tag), "sha256-%.12s", r->digest + 7);
        /* a template id has no "..": a run of dots is one */
        o = 0;
        for (size_t i = 0; tag[i]; i++)
                if (!(tag[i] == '.' && o > 0 && tag[o - 1] == '.'))
                        tag[o++] = tag[i];
        tag[o] = 0;
        shorten(tag, IMAGE_TAG_MAX);
        bool latest = strcmp(tag, "latest") == 0;
        /* NAME:TAG is a template id: at most TEMPLATE_NAME_MAX */
        size_t room = TEMPLATE_NAME_MAX - (latest ? 0 : strlen(tag) + 1);
        shorten(name, MIN(room, (size_t)IMAGE_NAME_MAX));
        snprintf(ret_name, IMAGE_NAME_MAX + 1, "%.48s", name);
        snprintf(ret_tag, IMAGE_TAG_MAX + 1, "%.40s", tag);
}

bool pull_host_is_loopback(const char *host)
{
        char h[PULL_HOST_MAX];
        snprintf(h, sizeof(h), "%s", host);
        if (h[0] == '[') {
                char *e = strchr(h, ']');
                if (e)
                        *e = 0;
                struct in6_addr a;
                return inet_pton(AF_INET6, h + 1, &a) == 1 &&
                       memcmp(&a, &in6addr_loopback, sizeof(a)) == 0;
        }
        char *c = strchr(h, ':');
        if (c)
                *c = 0;
        struct in_addr a4;
        if (inet_pton(AF_INET, h, &a4) == 1)
                return (ntohl(a4.s_addr) >> 24) == 127;
        return strcmp(h, "localhost") == 0;
}
