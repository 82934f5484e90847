/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the egress proxy (egress/serve/tls-proxy.h) reads of a sandbox's connection before it
 * decides anything: the server name of a TLS ClientHello and the head of an HTTP/1 request;
 * and the head it sends on with a transform's headers. Pure functions over bounded buffers:
 * everything here is input from a sandbox.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stddef.h>

#define PROXY_HEAD_MAX 16384 /* a request head (or a ClientHello) larger than this is refused */

/* The SNI host name of the ClientHello at the start of buf (TLS records as sent): 1 with the
 * lowercase name in name (size >= 256), 0 when more bytes are needed, -EINVAL when buf is not
 * a ClientHello or it has no host name. */
int proxy_tls_sni(const unsigned char *buf, size_t len, char name[static 256]);

/* Length of the request head (through the blank line) at the start of buf, 0 when incomplete,
 * -EINVAL when it is not an HTTP/1 request head. */
int proxy_http_head_len(const char *buf, size_t len);

/* The Host header's name part of the head (lowercase, without a port, no trailing dot) into
 * name (size >= 256): 0, or -ENOENT when there is none, -EINVAL for a bad one. */
int proxy_http_host(const char *head, size_t len, char name[static 256]);

/* Is the request of this head for name, and for nothing else? Its target in origin form
 * ("/..."; or "*"), and its Host (without a port) equal to name: 0; -EXDEV when it names
 * another host (domain fronting through a server that proves name), -EINVAL for a target in
 * absolute or authority form, no Host or more than one, or a head that could be read two ways
 * (a line not ended by CRLF, a bare CR, a NUL, a folded line). */
int proxy_http_check_target(const char *head, size_t len, const char *name);

/* The head sent on: the request line, the client's headers except hop-by-hop ones and those
 * headers names (an object of strings, values resolved) replaces, then headers, then
 * "Connection: close" (one request per connection: later requests cannot escape a
 * transform). Into out (size PROXY_HEAD_MAX * 2): its length, or -ENOBUFS. */
int proxy_http_rewrite(const char *head, size_t len, const cJSON *headers, char *out, size_t size);

/* Resolves "${e2b.secrets.<name>}" placeholders of value through get (the value into buf, its
 * length or -errno) into out: its length, -ENOENT naming an unknown secret (in *ret_missing,
 * static storage of the caller's thread), -ENOBUFS. */
int proxy_resolve_value(const char *value,
                        int (*get)(void *arg, const char *name, char *buf, size_t size), void *arg,
                        char *out, size_t size, const char **ret_missing);
