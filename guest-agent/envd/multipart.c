/* SPDX-License-Identifier: Apache-2.0 */
#include "envd/multipart.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/http.h"
#include "macros.h"

enum mp_state {
        MP_PREAMBLE,
        MP_CONFIRM,      /* matched "\r\n--boundary": a delimiter only if the next byte fits */
        MP_CONFIRM_DASH, /* ... followed by one '-' */
        MP_AFTER_DELIM,  /* a confirmed delimiter, before its line ending */
        MP_AFTER_CR,     /* saw '\r' of the CRLF ending the delimiter line */
        MP_HEADERS,
        MP_BODY,
        MP_EPILOGUE,
};

struct multipart_parser {
        const struct multipart_callbacks *cb;
        void *userdata;
        enum mp_state state;
        enum mp_state scan_state; /* PREAMBLE or BODY while confirming a delimiter */
        int error;
        size_t match; /* bytes of delim matched so far */
        size_t dlen;
        char delim[MULTIPART_MAX_BOUNDARY + 5]; /* "\r\n--" boundary */
        size_t line_len;
        unsigned n_headers;
        char line[MULTIPART_MAX_HEADER_LINE + 1];
        char *name, *filename;
};

int multipart_parser_new(const char *boundary, const struct multipart_callbacks *cb, void *userdata,
                         struct multipart_parser **ret)
{
        size_t blen = boundary ? strlen(boundary) : 0;
        struct multipart_parser *p;

        if (blen == 0 || blen > MULTIPART_MAX_BOUNDARY || strpbrk(boundary, "\r\n"))
                return -EINVAL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->cb = cb;
        p->userdata = userdata;
        p->state = MP_PREAMBLE;
        memcpy(p->delim, "\r\n--", 4);
        memcpy(p->delim + 4, boundary, blen);
        p->dlen = 4 + blen;
        /* The body may start with "--boundary" directly: act as if a CRLF preceded it. */
        p->match = 2;
        *ret = p;
        return 0;
}

void multipart_parser_free(struct multipart_parser *p)
{
        if (!p)
                return;
        free(p->name);
        free(p->filename);
        free(p);
}

void multipart_parser_freep(struct multipart_parser **p)
{
        multipart_parser_free(*p);
}

static int emit(struct multipart_parser *p, const void *buf, size_t len)
{
        if (len == 0 || p->state != MP_BODY)
                return 0;
        return p->cb->part_data(p->userdata, buf, len);
}

/* One header line, without its line ending. */
static int header_line(struct multipart_parser *p)
{
        char *colon;
        int r;

        if (++p->n_headers > MULTIPART_MAX_HEADERS)
                return -EBADMSG;
        colon = strchr(p->line, ':');
        if (!colon)
                return -EBADMSG;
        *colon = '\0';
        if (strcasecmp(p->line, "content-disposition") != 0)
                return 0;
        free(p->name);
        free(p->filename);
        p->name = p->filename = NULL;
        r = http_header_param(colon + 1, "name", &p->name);
        if (r < 0)
                return r == -EINVAL ? -EBADMSG : r;
        r = http_header_param(colon + 1, "filename", &p->filename);
        if (r < 0)
                return r == -EINVAL ? -EBADMSG : r;
        return 0;
}

static int begin_headers(struct multipart_parser *p)
{
        p->state = MP_HEADERS;
        p->line_len = 0;
        p->n_headers = 0;
        free(p->name);
        free(p->filename);
        p->name = p->filename = NULL;
        return 1;
}

/* Match delimiter bytes in PREAMBLE/BODY. Returns bytes consumed (> 0) or -errno. */
static long scan_delim(struct multipart_parser *p, const uint8_t *buf, size_t len)
{
        size_t i = 0;
        int r;

        while (i < len) {
                if (p->match == 0) {
                        const uint8_t *cr = memchr(buf + i, '\r', len - i);
                        size_t n = cr ? (size_t)(cr - (buf + i)) : len - i;
                        r = emit(p, buf + i, n);
                        if (r < 0)
                                return r;
                        i += n;
                        if (i == len)
                                break;
                }
                if ((char)buf[i] == p->delim[p->match]) {
                        i++;
                        if (++p->match == p->dlen) {
                                /* Decided by the next byte: as Go's mime/multipart, text that
                                 * merely contains the delimiter stays content. */
                                p->scan_state = p->state;
                                p->state = MP_CONFIRM;
                                return (long)i;
                        }
                } else {
                        /* The delimiter starts with the only '\r' it contains, so no suffix of
                         * a partial match can begin a new match: flush it as data and look at
                         * this byte again from the start. */
                        r = emit(p, p->delim, p->match);
                        if (r < 0)
                                return r;
                        p->match = 0;
                }
        }
        return (long)i;
}

/* A delimiter was confirmed: the part it closes (if any) ends. */
static int confirmed(struct multipart_parser *p, enum mp_state next)
{
        bool in_body = p->scan_state == MP_BODY;
        p->match = 0;
        p->state = next;
        return in_body ? p->cb->part_end(p->userdata) : 0;
}

/* Not a delimiter after all: its bytes (plus extra) are content; rescan from the current byte. */
static int rejected(struct multipart_parser *p, const char *extra)
{
        int r;
        p->state = p->scan_state;
        p->match = 0;
        r = emit(p, p->delim, p->dlen);
        if (r >= 0 && extra)
                r = emit(p, extra, strlen(extra));
        return r;
}

/* One byte outside PREAMBLE/BODY. Returns 1 when consumed, 0 to look at it again in the new
 * state, or -errno. */
static int step(struct multipart_parser *p, uint8_t c)
{
        int r;

        switch (p->state) {
        case MP_CONFIRM:
                if (c == '-') {
                        p->state = MP_CONFIRM_DASH;
                        return 1;
                }
                if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
                        r = confirmed(p, MP_AFTER_DELIM);
                        return r < 0 ? r : 0;
                }
                r = rejected(p, NULL);
                return r < 0 ? r : 0;
        case MP_CONFIRM_DASH:
                if (c == '-') {
                        r = confirmed(p, MP_EPILOGUE);
                        return r < 0 ? r : 1;
                }
                r = rejected(p, "-");
                return r < 0 ? r : 0;
        case MP_AFTER_DELIM:
                if (c == '\r')
                        p->state = MP_AFTER_CR;
                else if (c == '\n')
                        return begin_headers(p);
                else if (c != ' ' && c != '\t') /* transport padding */
                        return -EBADMSG;
                return 1;
        case MP_AFTER_CR:
                if (c != '\n')
                        return -EBADMSG;
                return begin_headers(p);
        case MP_HEADERS:
                if (c != '\n') {
                        if (p->line_len >= MULTIPART_MAX_HEADER_LINE || c == '\0')
                                return -EBADMSG;
                        p->line[p->line_len++] = (char)c;
                        return 1;
                }
                if (p->line_len > 0 && p->line[p->line_len - 1] == '\r')
                        p->line_len--;
                p->line[p->line_len] = '\0';
                if (p->line_len == 0) {
                        p->state = MP_BODY;
                        p->match = 0;
                        r = p->cb->part_begin(p->userdata, p->name, p->filename);
                        return r < 0 ? r : 1;
                }
                p->line_len = 0;
                r = header_line(p);
                return r < 0 ? r : 1;
        default:
                return -EBADMSG;
        }
}

int multipart_parser_feed(struct multipart_parser *p, const uint8_t *buf, size_t len)
{
        size_t i = 0;

        if (p->error)
                return p->error;
        while (i < len) {
                int r = 0;
                if (p->state == MP_EPILOGUE)
                        return 0;
                if (p->state == MP_PREAMBLE || p->state == MP_BODY) {
                        long n = scan_delim(p, buf + i, len - i);
                        if (n < 0)
                                r = (int)n;
                        else
                                i += (size_t)n;
                } else {
                        r = step(p, buf[i]);
                        if (r > 0)
                                i++;
                }
                if (r < 0)
                        return (p->error = r);
        }
        return 0;
}

int multipart_parser_finish(struct multipart_parser *p)
{
        if (p->error)
                return p->error;
        return p->state == MP_EPILOGUE ? 0 : -EBADMSG;
}
