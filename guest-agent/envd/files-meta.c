/* SPDX-License-Identifier: Apache-2.0 */
#include "envd/files-meta.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <zlib.h>

#include "envd/entry.h"
#include "macros.h"

#define METADATA_HEADER "X-Metadata-"

int agent_metadata_parse(const struct agent_request *r, struct agent_metadata *ret,
                         const char **ret_msg)
{
        struct agent_metadata m = {0};
        size_t total = 0, plen = strlen(METADATA_HEADER);

        for (size_t i = 0; i < r->head.n_headers; i++) {
                const char *name = r->head.headers[i].name, *value = r->head.headers[i].value;
                bool dup = false;
                char *key;

                if (strncasecmp(name, METADATA_HEADER, plen) != 0 || !name[plen])
                        continue;
                if (strlen(name + plen) > AGENT_METADATA_KEY_MAX) {
                        *ret_msg = "metadata key is too long";
                        goto bad;
                }
                for (const char *v = value; *v; v++)
                        if (*v < 0x20 || *v > 0x7e) {
                                *ret_msg = "metadata values must be printable ASCII";
                                goto bad;
                        }
                if (!(key = strdup(name + plen)))
                        goto oom;
                for (char *k = key; *k; k++)
                        if (*k >= 'A' && *k <= 'Z')
                                *k = (char)(*k - 'A' + 'a');
                for (size_t j = 0; j < m.n; j++)
                        dup = dup || strcmp(m.keys[j], key) == 0;
                if (dup) {
                        free(key);
                        continue;
                }
                total += strlen(key) + strlen(value);
                if (m.n >= ELEMENTSOF(m.keys) || total > AGENT_METADATA_TOTAL_MAX) {
                        free(key);
                        *ret_msg = "metadata exceeds 4096 bytes";
                        goto bad;
                }
                m.keys[m.n] = key;
                if (!(m.values[m.n++] = strdup(value)))
                        goto oom;
        }
        *ret = m;
        return 0;
bad:
        agent_metadata_done(&m);
        return -EINVAL;
oom:
        agent_metadata_done(&m);
        return -ENOMEM;
}

void agent_metadata_done(struct agent_metadata *m)
{
        for (size_t i = 0; i < m->n; i++) {
                free(m->keys[i]);
                free(m->values[i]);
        }
        m->n = 0;
}

int agent_metadata_replace(const struct agent_metadata *m, int fd)
{
        _cleanup_free_ char *names = malloc(64 * 1024);
        size_t plen = strlen(AGENT_XATTR_PREFIX);
        ssize_t n;

        if (!names)
                return -ENOMEM;
        n = flistxattr(fd, names, 64 * 1024);
        if (n < 0 && errno != ENOTSUP && errno != ERANGE)
                return negative_errno();
        for (char *p = names; n > 0 && p < names + n; p += strlen(p) + 1) {
                bool keep = false;

                if (strncmp(p, AGENT_XATTR_PREFIX, plen) != 0)
                        continue;
                for (size_t i = 0; i < m->n && !keep; i++)
                        keep = strcmp(p + plen, m->keys[i]) == 0;
                if (!keep && fremovexattr(fd, p) < 0 && errno != ENODATA)
                        return negative_errno();
        }
        for (size_t i = 0; i < m->n; i++) {
                char name[sizeof(AGENT_XATTR_PREFIX) + AGENT_METADATA_KEY_MAX];
                snprintf(name, sizeof(name), "%s%s", AGENT_XATTR_PREFIX, m->keys[i]);
                if (fsetxattr(fd, name, m->values[i], strlen(m->values[i]), 0) < 0)
                        return negative_errno();
        }
        return 0;
}

int agent_metadata_to_json(const struct agent_metadata *m, void *cjson_object)
{
        cJSON *o;
        if (m->n == 0)
                return 0;
        if (!(o = cJSON_AddObjectToObject(cjson_object, "metadata")))
                return -ENOMEM;
        for (size_t i = 0; i < m->n; i++)
                if (!cJSON_AddStringToObject(o, m->keys[i], m->values[i]))
                        return -ENOMEM;
        return 0;
}

/* One "coding;q=x" item: name (lower-cased into buf) and quality. */
static double parse_coding(const char *item, size_t len, char *buf, size_t bufsz)
{
        const char *semi = memchr(item, ';', len), *s = item;
        const char *end = semi ? semi : item + len;
        double q = 1.0;
        size_t n = 0;

        while (s < end && (*s == ' ' || *s == '\t'))
                s++;
        while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        for (; s < end && n + 1 < bufsz; s++)
                buf[n++] = (*s >= 'A' && *s <= 'Z') ? (char)(*s - 'A' + 'a') : *s;
        buf[n] = 0;
        if (semi) {
                char params[64];
                size_t pl = (size_t)(item + len - (semi + 1));
                snprintf(params, sizeof(params), "%.*s", (int)MIN(pl, sizeof(params) - 1),
                         semi + 1);
                for (char *p = params; *p; p++)
                        if ((p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
                                q = strtod(p + 2, NULL);
                                break;
                        }
        }
        return q;
}

int agent_accept_encoding(const char *header)
{
        bool identity_rejected = false, star = false, gzip = false, identity = false;
        double best = 0;

        if (!header || !*header)
                return 0;
        for (const char *p = header; *p;) {
                size_t len = strcspn(p, ",");
                char name[32];
                double q = parse_coding(p, len, name, sizeof(name));

                if (strcmp(name, "identity") == 0 && q == 0)
                        identity_rejected = true;
                else if (q > 0 && q >= best) {
                        /* Highest quality wins; ties keep the earlier coding (stable sort). */
                        bool known = strcmp(name, "identity") == 0 || strcmp(name, "*") == 0 ||
                                     strcmp(name, "gzip") == 0;
                        if (known && (q > best || !(gzip || identity || star))) {
                                best = q;
                                gzip = strcmp(name, "gzip") == 0;
                                identity = strcmp(name, "identity") == 0;
                                star = strcmp(name, "*") == 0;
                        }
                }
                p += len;
                if (*p == ',')
                        p++;
        }
        if (gzip)
                return 1;
        if (identity)
                return 0;
        if (star)
                return identity_rejected ? 1 : 0;
        return identity_rejected ? -EINVAL : 0;
}

/* Compress incompressible data at level 0 (stored blocks, memcpy speed) and the rest at level
 * 1: decided per input chunk from how the previous one did. */
static int adapt_level(struct agent_request *r, z_stream *z, uint8_t *out, int *level,
                       uLong chunk_in, uLong chunk_out)
{
        int want = chunk_out * 4 > chunk_in * 3 ? 0 : Z_BEST_SPEED;
        size_t have;

        if (chunk_in == 0 || want == *level)
                return 0;
        z->next_out = out;
        z->avail_out = SBX_FRAME_MAX_PAYLOAD;
        if (deflateParams(z, want, Z_DEFAULT_STRATEGY) != Z_OK)
                return 0; /* keep the current level */
        *level = want;
        have = SBX_FRAME_MAX_PAYLOAD - z->avail_out;
        return have ? sbx_frame_write(r->fd, SBX_FRAME_DATA, out, have) : 0;
}

int agent_files_send_gzip(struct agent_request *r, int fd)
{
        _cleanup_free_ uint8_t *out = malloc(SBX_FRAME_MAX_PAYLOAD);
        z_stream z = {0};
        int flush = Z_NO_FLUSH, zr, e = 0, level = Z_BEST_SPEED;
        uLong mark_in = 0, mark_out = 0;

        if (!out)
                return -ENOMEM;
        if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
                return -ENOMEM;
        /* r->frame_buf holds input (the request body is consumed), out holds output. */
        do {
                if (z.avail_in == 0 && flush != Z_FINISH) {
                        e = adapt_level(r, &z, out, &level, z.total_in - mark_in,
                                        z.total_out - mark_out);
                        if (e < 0)
                                break;
                        mark_in = z.total_in;
                        mark_out = z.total_out;
                        ssize_t n = read(fd, r->frame_buf, SBX_FRAME_MAX_PAYLOAD);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0) {
                                e = negative_errno();
                                break;
                        }
                        z.next_in = r->frame_buf;
                        z.avail_in = (uInt)n;
                        if (n == 0)
                                flush = Z_FINISH;
                }
                z.next_out = out;
                z.avail_out = SBX_FRAME_MAX_PAYLOAD;
                zr = deflate(&z, flush);
                if (zr == Z_STREAM_ERROR) {
                        e = -EIO;
                        break;
                }
                size_t have = SBX_FRAME_MAX_PAYLOAD - z.avail_out;
                if (have > 0 && (e = sbx_frame_write(r->fd, SBX_FRAME_DATA, out, have)) < 0)
                        break;
        } while (zr != Z_STREAM_END);
        deflateEnd(&z);
        if (e < 0)
                return e;
        return agent_respond_end(r);
}
