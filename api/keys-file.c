/* SPDX-License-Identifier: Apache-2.0 */
#include "keys-file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "macros.h"

bool sbx_key_valid(const char *key)
{
        if (!key || strlen(key) != SBX_KEY_LEN || strncmp(key, SBX_KEY_PREFIX, 4) != 0)
                return false;
        for (const char *p = key + 4; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

/* s[0..len) without spaces, tabs and CRs at both ends, into out (at most max bytes). */
static void copy_trimmed(char *out, size_t max, const char *s, size_t len)
{
        while (len && (*s == ' ' || *s == '\t')) {
                s++;
                len--;
        }
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
                len--;
        len = MIN(len, max);
        memcpy(out, s, len);
        out[len] = 0;
}

/* One line: a key with an optional "# label", a comment, or a bad line. */
static void parse_line(const char *s, size_t len, struct sbx_keys_file *f, struct sbx_key_line *l)
{
        char t[SBX_KEY_LEN + 1];
        size_t lead = strspn(s, " \t");
        size_t klen = strcspn(s + lead, " \t\r#\n");
        if (klen > len - lead)
                klen = len - lead;
        const char *rest = s + lead + klen;
        size_t rlen = len - lead - klen;
        if (klen == SBX_KEY_LEN) {
                memcpy(t, s + lead, klen);
                t[klen] = 0;
                size_t sp = 0;
                while (sp < rlen && (rest[sp] == ' ' || rest[sp] == '\t' || rest[sp] == '\r'))
                        sp++;
                if (sbx_key_valid(t) && (sp == rlen || rest[sp] == '#') &&
                    f->n_keys < SBX_KEYS_MAX) {
                        memcpy(l->key, t, sizeof(t));
                        if (sp < rlen)
                                copy_trimmed(l->label, SBX_KEY_LABEL_MAX, rest + sp + 1,
                                             rlen - sp - 1);
                        f->n_keys++;
                        return;
                }
        }
        copy_trimmed(l->label, SBX_KEY_LABEL_MAX, s, len);
        if (l->label[0] && l->label[0] != '#')
                f->n_bad++;
}

int sbx_keys_file_parse(const char *buf, struct sbx_keys_file *ret)
{
        struct sbx_keys_file f = {};
        size_t cap = 0;
        for (const char *p = buf; *p;) {
                size_t len = strcspn(p, "\n");
                if (f.n == cap) {
                        cap = cap ? cap * 2 : 16;
                        struct sbx_key_line *nl = reallocarray(f.line, cap, sizeof(*nl));
                        if (!nl) {
                                sbx_keys_file_done(&f);
                                return -ENOMEM;
                        }
                        f.line = nl;
                }
                f.line[f.n] = (struct sbx_key_line){};
                parse_line(p, len, &f, &f.line[f.n]);
                if (f.line[f.n].key[0] || f.line[f.n].label[0])
                        f.n++; /* blank lines go */
                p += len;
                if (*p == '\n')
                        p++;
        }
        *ret = f;
        return 0;
}

void sbx_keys_file_done(struct sbx_keys_file *f)
{
        free(f->line);
        *f = (struct sbx_keys_file){};
}

int sbx_keys_file_format(const struct sbx_keys_file *f, char **ret)
{
        _cleanup_(buf_done) struct buf b = {};
        for (size_t i = 0; i < f->n; i++) {
                const struct sbx_key_line *l = &f->line[i];
                int r = l->key[0]
                            ? buf_printf(&b, "%s%s%s\n", l->key, l->label[0] ? " # " : "", l->label)
                            : buf_printf(&b, "%s\n", l->label);
                if (r < 0)
                        return r;
        }
        char *text = b.len ? buf_steal(&b) : strdup("");
        if (!text)
                return -ENOMEM;
        *ret = text;
        return 0;
}
