/* SPDX-License-Identifier: Apache-2.0 */
/* The control channel of sbx-egress: messages as JSON, one per SOCK_SEQPACKET packet. */
#include "egress-ctl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd-util.h"
#include "json-util.h"
#include "macros.h"

static const char *const type_names[] = {
    [EGRESS_MSG_HELLO] = "hello",   [EGRESS_MSG_POLICY] = "policy",
    [EGRESS_MSG_FORGET] = "forget", [EGRESS_MSG_SERVE] = "serve",
    [EGRESS_MSG_BUILD] = "build",   [EGRESS_MSG_BUILD_END] = "build-end",
    [EGRESS_MSG_PIN] = "pin",       [EGRESS_MSG_SECRET] = "secret",
    [EGRESS_MSG_VALUE] = "value",   [EGRESS_MSG_NOTE] = "note",
    [EGRESS_MSG_ACK] = "ack",
};

size_t egress_msg_fds(enum egress_msg_type t)
{
        return t == EGRESS_MSG_HELLO ? 3 : t == EGRESS_MSG_BUILD ? 1 : 0;
}

/* Which fields a type has. */
enum {
        F_SLOT = 1 << 0,
        F_POLICY = 1 << 1,
        F_NAME = 1 << 2,
        F_TEXT = 1 << 3,
        F_HELLO = 1 << 4,
        F_PIN = 1 << 5,
        F_HOSTS = 1 << 6,
        F_ERROR = 1 << 7,
};

static unsigned fields(enum egress_msg_type t)
{
        switch (t) {
        case EGRESS_MSG_HELLO:
                return F_HELLO;
        case EGRESS_MSG_POLICY:
                return F_SLOT | F_POLICY;
        case EGRESS_MSG_FORGET:
                return F_SLOT;
        case EGRESS_MSG_BUILD:
                return F_NAME | F_HOSTS;
        case EGRESS_MSG_BUILD_END:
                return F_NAME;
        case EGRESS_MSG_PIN:
                return F_SLOT | F_PIN;
        case EGRESS_MSG_SECRET:
                return F_SLOT | F_NAME;
        case EGRESS_MSG_VALUE:
                return F_TEXT | F_ERROR;
        case EGRESS_MSG_NOTE:
                return F_NAME | F_TEXT;
        case EGRESS_MSG_ACK:
                return F_ERROR;
        case EGRESS_MSG_SERVE:
        default:
                return 0;
        }
}

static bool text_ok(const char *s, size_t max, bool empty_ok)
{
        size_t l = s ? strnlen(s, max + 1) : 0;
        return s && l <= max && (empty_ok || l > 0);
}

/* ---- encode ---- */

static int add_str(cJSON *o, const char *key, const char *v, size_t max, bool empty_ok)
{
        if (!text_ok(v, max, empty_ok))
                return -EINVAL;
        return cJSON_AddStringToObject(o, key, v) ? 0 : -ENOMEM;
}

static int add_addrs(cJSON *o, const struct egress_msg *m)
{
        if ((m->family != AF_INET && m->family != AF_INET6) || m->n_addrs == 0 ||
            m->n_addrs > EGRESS_CTL_ADDRS_MAX || m->ttl == 0 || m->ttl > EGRESS_CTL_TTL_MAX)
                return -EINVAL;
        cJSON *a = cJSON_AddArrayToObject(o, "addrs");
        if (!a || !cJSON_AddNumberToObject(o, "family", m->family == AF_INET ? 4 : 6) ||
            !cJSON_AddNumberToObject(o, "ttl", m->ttl))
                return -ENOMEM;
        for (size_t i = 0; i < m->n_addrs; i++) {
                char t[INET6_ADDRSTRLEN];
                cJSON *s =
                    inet_ntop(m->family, m->addrs[i], t, sizeof(t)) ? cJSON_CreateString(t) : NULL;
                if (!s || !cJSON_AddItemToArray(a, s)) {
                        cJSON_Delete(s);
                        return -ENOMEM;
                }
        }
        return 0;
}

static int add_hosts(cJSON *o, const struct egress_msg *m)
{
        if (m->n_hosts > EGRESS_CTL_HOSTS_MAX)
                return -EINVAL;
        cJSON *a = cJSON_AddArrayToObject(o, "hosts");
        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_hosts; i++) {
                if (!text_ok(m->hosts[i], EGRESS_CTL_HOST_MAX, false))
                        return -EINVAL;
                cJSON *s = cJSON_CreateString(m->hosts[i]);
                if (!s || !cJSON_AddItemToArray(a, s)) {
                        cJSON_Delete(s);
                        return -ENOMEM;
                }
        }
        return 0;
}

static int add_fields(cJSON *o, const struct egress_msg *m, unsigned f)
{
        int r = 0;
        if ((f & F_SLOT) && (m->slot < 0 || m->slot >= EGRESS_CTL_SLOTS))
                return -EINVAL;
        if ((f & F_SLOT) && !cJSON_AddNumberToObject(o, "slot", m->slot))
                return -ENOMEM;
        if ((f & F_ERROR) && (m->error > 0 || m->error < -4095))
                return -EINVAL;
        if ((f & F_ERROR) && !cJSON_AddNumberToObject(o, "error", m->error))
                return -ENOMEM;
        if (f & F_POLICY) {
                cJSON *p = cJSON_IsObject(m->policy) ? cJSON_Duplicate(m->policy, 1) : NULL;
                if (!p || !cJSON_AddItemToObject(o, "policy", p)) {
                        cJSON_Delete(p);
                        return cJSON_IsObject(m->policy) ? -ENOMEM : -EINVAL;
                }
        }
        if (f & F_NAME)
                r = add_str(o, "name", m->name, EGRESS_CTL_NAME_MAX, false);
        if (r >= 0 && (f & F_TEXT) && (m->text || m->type != EGRESS_MSG_VALUE || m->error >= 0))
                r = add_str(o, "text", m->text, EGRESS_CTL_TEXT_MAX, true);
        if (r >= 0 && (f & F_HELLO)) {
                r = add_str(o, "upstream", m->upstream, INET6_ADDRSTRLEN, false);
                if (r >= 0)
                        r = add_str(o, "ca_key", m->ca_key, EGRESS_CTL_PEM_MAX, false);
                if (r >= 0)
                        r = add_str(o, "ca_cert", m->ca_cert, EGRESS_CTL_PEM_MAX, false);
                if (r >= 0 && m->upstream_ca)
                        r = add_str(o, "upstream_ca", m->upstream_ca, EGRESS_CTL_PEM_MAX, false);
        }
        if (r >= 0 && (f & F_PIN))
                r = add_addrs(o, m);
        if (r >= 0 && (f & F_HOSTS))
                r = add_hosts(o, m);
        return r;
}

int egress_msg_encode(const struct egress_msg *m, char **ret, size_t *ret_len)
{
        if (m->type < EGRESS_MSG_HELLO || m->type > EGRESS_MSG_ACK)
                return -EINVAL;
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "type", type_names[m->type]) ||
            !cJSON_AddNumberToObject(o, "id", m->id))
                return -ENOMEM;
        int r = add_fields(o, m, fields(m->type));
        if (r < 0)
                return r;
        char *text = cJSON_PrintUnformatted(o);
        if (!text)
                return -ENOMEM;
        size_t len = strlen(text);
        if (len > EGRESS_CTL_MSG_MAX) {
                explicit_bzero(text, len);
                free(text);
                return -EINVAL;
        }
        *ret = text;
        *ret_len = len;
        return 0;
}

/* ---- decode ---- */

/* A whole number in [min, max]. */
static bool get_int(const cJSON *o, const char *key, double min, double max, double *ret)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        if (!cJSON_IsNumber(v) || v->valuedouble < min || v->valuedouble > max ||
            v->valuedouble != (double)(long long)v->valuedouble)
                return false;
        *ret = v->valuedouble;
        return true;
}

/* A copy of a string member: 0, -ENOENT when absent (and not required), -EBADMSG. */
static int get_str(const cJSON *o, const char *key, size_t max, bool empty_ok, char **ret)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        if (!v)
                return -ENOENT;
        if (!cJSON_IsString(v) || !text_ok(v->valuestring, max, empty_ok))
                return -EBADMSG;
        *ret = strdup(v->valuestring);
        return *ret ? 0 : -ENOMEM;
}

static int need_str(const cJSON *o, const char *key, size_t max, bool empty_ok, char **ret)
{
        int r = get_str(o, key, max, empty_ok, ret);
        return r == -ENOENT ? -EBADMSG : r;
}

static int get_addrs(const cJSON *o, struct egress_msg *m)
{
        double fam, ttl;
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "addrs"), *v;
        int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
        if (!get_int(o, "family", 4, 6, &fam) || (fam != 4 && fam != 6) ||
            !get_int(o, "ttl", 1, EGRESS_CTL_TTL_MAX, &ttl) || n < 1 || n > EGRESS_CTL_ADDRS_MAX)
                return -EBADMSG;
        m->family = fam == 4 ? AF_INET : AF_INET6;
        m->ttl = (unsigned)ttl;
        cJSON_ArrayForEach(v, a)
        {
                if (!cJSON_IsString(v) ||
                    inet_pton(m->family, v->valuestring, m->addrs[m->n_addrs]) != 1)
                        return -EBADMSG;
                m->n_addrs++;
        }
        return 0;
}

static int get_hosts(const cJSON *o, struct egress_msg *m)
{
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "hosts"), *v;
        int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
        if (n < 0 || n > EGRESS_CTL_HOSTS_MAX)
                return -EBADMSG;
        m->hosts = calloc((size_t)n + 1, sizeof(char *));
        if (!m->hosts)
                return -ENOMEM;
        cJSON_ArrayForEach(v, a)
        {
                if (!cJSON_IsString(v) || !text_ok(v->valuestring, EGRESS_CTL_HOST_MAX, false))
                        return -EBADMSG;
                if (!(m->hosts[m->n_hosts] = strdup(v->valuestring)))
                        return -ENOMEM;
                m->n_hosts++;
        }
        return 0;
}

static int get_fields(const cJSON *o, struct egress_msg *m, unsigned f)
{
        double d;
        int r = 0;
        if (f & F_SLOT) {
                if (!get_int(o, "slot", 0, EGRESS_CTL_SLOTS - 1, &d))
                        return -EBADMSG;
                m->slot = (int)d;
        }
        if (f & F_ERROR) {
                if (!get_int(o, "error", -4095, 0, &d))
                        return -EBADMSG;
                m->error = (int)d;
        }
        if (f & F_POLICY) {
                const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "policy");
                if (!cJSON_IsObject(p))
                        return -EBADMSG;
                if (!(m->policy = cJSON_Duplicate(p, 1)))
                        return -ENOMEM;
        }
        if (f & F_NAME)
                r = need_str(o, "name", EGRESS_CTL_NAME_MAX, false, &m->name);
        if (r >= 0 && (f & F_TEXT)) {
                r = get_str(o, "text", EGRESS_CTL_TEXT_MAX, true, &m->text);
                if (r == -ENOENT) /* only a VALUE that answers an error has none */
                        r = m->type == EGRESS_MSG_VALUE && m->error < 0 ? 0 : -EBADMSG;
        }
        if (r >= 0 && (f & F_HELLO)) {
                r = need_str(o, "upstream", INET6_ADDRSTRLEN, false, &m->upstream);
                if (r >= 0)
                        r = need_str(o, "ca_key", EGRESS_CTL_PEM_MAX, false, &m->ca_key);
                if (r >= 0)
                        r = need_str(o, "ca_cert", EGRESS_CTL_PEM_MAX, false, &m->ca_cert);
                if (r >= 0 && (r = get_str(o, "upstream_ca", EGRESS_CTL_PEM_MAX, false,
                                           &m->upstream_ca)) == -ENOENT)
                        r = 0;
        }
        if (r >= 0 && (f & F_PIN))
                r = get_addrs(o, m);
        if (r >= 0 && (f & F_HOSTS))
                r = get_hosts(o, m);
        return r;
}

int egress_msg_decode(const char *text, size_t len, size_t n_fds, struct egress_msg *ret,
                      const char **ret_why)
{
        *ret = (struct egress_msg){};
        *ret_why = "not a JSON object";
        if (len == 0 || len > EGRESS_CTL_MSG_MAX || json_has_nul(text, len) ||
            json_depth(text, len) > EGRESS_CTL_DEPTH_MAX)
                return -EBADMSG;
        _cleanup_json_ cJSON *o = cJSON_ParseWithLength(text, len);
        if (!cJSON_IsObject(o))
                return -EBADMSG;
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
        struct egress_msg m = {};
        for (int i = EGRESS_MSG_HELLO; i <= EGRESS_MSG_ACK && cJSON_IsString(t); i++)
                if (strcmp(t->valuestring, type_names[i]) == 0)
                        m.type = (enum egress_msg_type)i;
        double id;
        *ret_why = "no known type, or no id";
        if (!m.type || !get_int(o, "id", 0, UINT32_MAX, &id))
                return -EBADMSG;
        m.id = (uint32_t)id;
        *ret_why = "descriptors that do not belong to the message's type";
        if (n_fds != egress_msg_fds(m.type))
                return -EBADMSG;
        int r = get_fields(o, &m, fields(m.type));
        if (r < 0) {
                *ret_why = "a field missing, malformed or out of bounds for its type";
                egress_msg_done(&m);
                return r;
        }
        *ret = m;
        return 0;
}

static void free_wiped(char *s)
{
        if (s)
                explicit_bzero(s, strlen(s));
        free(s);
}

void egress_msg_done(struct egress_msg *m)
{
        cJSON_Delete(m->policy);
        free(m->name);
        free_wiped(m->text);
        free(m->upstream);
        free_wiped(m->ca_key);
        free(m->ca_cert);
        free(m->upstream_ca);
        for (size_t i = 0; i < m->n_hosts; i++)
                free(m->hosts[i]);
        free(m->hosts);
        for (size_t i = 0; i < m->n_fds && i < EGRESS_CTL_FDS_MAX; i++)
                safe_close(m->fds[i]);
        *m = (struct egress_msg){};
}

/* ---- the socket ---- */

int egress_msg_send(int sock, const struct egress_msg *m)
{
        char *text;
        size_t len;
        if (m->n_fds != egress_msg_fds(m->type))
                return -EINVAL;
        int r = egress_msg_encode(m, &text, &len);
        if (r < 0)
                return r;
        struct iovec iov = {.iov_base = text, .iov_len = len};
        union {
                char buf[CMSG_SPACE(sizeof(int) * EGRESS_CTL_FDS_MAX)];
                struct cmsghdr align;
        } c = {};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        if (m->n_fds) {
                mh.msg_control = c.buf;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * m->n_fds);
                struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
                h->cmsg_level = SOL_SOCKET;
                h->cmsg_type = SCM_RIGHTS;
                h->cmsg_len = CMSG_LEN(sizeof(int) * m->n_fds);
                memcpy(CMSG_DATA(h), m->fds, sizeof(int) * m->n_fds);
        }
        ssize_t n;
        do
                n = sendmsg(sock, &mh, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        r = n < 0 ? -errno : (size_t)n == len ? 0 : -EMSGSIZE;
        explicit_bzero(text, len);
        free(text);
        return r;
}

/* The descriptors of a received packet into fds (at most EGRESS_CTL_FDS_MAX; any beyond closed):
 * their number, or -EBADMSG when there were too many (all closed). */
static int take_fds(struct msghdr *mh, int *fds)
{
        size_t n = 0;
        bool over = false;
        for (struct cmsghdr *h = CMSG_FIRSTHDR(mh); h; h = CMSG_NXTHDR(mh, h)) {
                if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; i++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
                        if (n < EGRESS_CTL_FDS_MAX)
                                fds[n++] = fd;
                        else {
                                over = true;
                                safe_close(fd);
                        }
                }
        }
        if (over || (mh->msg_flags & MSG_CTRUNC)) {
                for (size_t i = 0; i < n; i++)
                        safe_close(fds[i]);
                return -EBADMSG;
        }
        return (int)n;
}

int egress_msg_recv(int sock, struct egress_msg *ret, const char **ret_why)
{
        *ret_why = "";
        ssize_t size;
        do /* the packet's length first, so that the buffer fits it */
                size = recv(sock, NULL, 0, MSG_PEEK | MSG_TRUNC);
        while (size < 0 && errno == EINTR);
        if (size < 0)
                return -errno;
        /* one byte more than a message may have: a longer packet is cut, and so refused */
        size_t cap = MIN((size_t)size, (size_t)EGRESS_CTL_MSG_MAX + 1);
        _cleanup_free_ char *buf = malloc(MAX(cap, 1));
        if (!buf)
                return -ENOMEM;
        union {
                char buf[CMSG_SPACE(sizeof(int) * (EGRESS_CTL_FDS_MAX + 1))];
                struct cmsghdr align;
        } c;
        struct iovec iov = {.iov_base = buf, .iov_len = MAX(cap, 1)};
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof(c)};
        ssize_t n;
        do
                n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        int fds[EGRESS_CTL_FDS_MAX];
        int k = take_fds(&mh, fds);
        if (n == 0 && k == 0)
                return 0; /* the other end closed */
        int r = k < 0 ? -EBADMSG : 0;
        *ret_why = "too many descriptors";
        if (r >= 0 && (mh.msg_flags & MSG_TRUNC))
                r = -EBADMSG;
        if (r >= 0)
                r = egress_msg_decode(buf, (size_t)n, (size_t)k, ret, ret_why);
        explicit_bzero(buf, (size_t)n);
        if (r < 0) {
                for (int i = 0; i < k; i++)
                        safe_close(fds[i]);
                return r;
        }
        memcpy(ret->fds, fds, sizeof(int) * (size_t)k);
        ret->n_fds = (size_t)k;
        return 1;
}
