/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Plain HTTP/1.1 connections to owner nodes for the streamed relay (cluster/forward.h): a
 * connection per request, taken from a pool of idle ones by owner address (TCP_NODELAY, kept
 * warm at most OWNER_REUSE_IDLE_MS, checked for a close before reuse), the answer's head read
 * and parsed, its body read by its framing (Content-Length, chunked, or up to the close).
 * Everything runs in the calling thread (the request's libmicrohttpd thread): blocking calls
 * that poll the owner's socket and, where given, the client's for a hang-up.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define OWNER_POOL_MAX      64             /* idle connections kept, all owners together */
#define OWNER_REUSE_IDLE_MS 3000           /* below the owner gate's idle close (front/gate.h) */
#define OWNER_CONNECT_MS    2000           /* connecting to an owner */
#define OWNER_SEND_MS       60000          /* one write to the owner may wait this long */
#define OWNER_HEAD_MAX      32768          /* an answer head, bytes (the gate's own bound) */
#define OWNER_MAX_HEADERS   100            /* answer headers; past that the answer fails (502) */
#define OWNER_BUF           OWNER_HEAD_MAX /* the read buffer: a whole head fits */

struct owner_header {
        char *name, *value; /* into owner_head.raw */
};

struct owner_head {
        unsigned status;
        char raw[OWNER_HEAD_MAX + 1];
        struct owner_header headers[OWNER_MAX_HEADERS];
        size_t n_headers;
        bool chunked, has_length, close;
        uint64_t length;
};

enum owner_body { OWNER_BODY_NONE, OWNER_BODY_LENGTH, OWNER_BODY_CHUNKED, OWNER_BODY_CLOSE };

struct owner_conn {
        int fd;
        bool reused; /* taken from the pool: the owner may have closed it meanwhile */
        char addr[128];
        char buf[OWNER_BUF];
        size_t off, len; /* unread bytes in buf */
        /* the answer body being read */
        enum owner_body body;
        uint64_t left; /* LENGTH: bytes left; CHUNKED: of the current chunk */
        bool in_chunk; /* CHUNKED: inside a chunk's data (left bytes, then its CRLF) */
        bool body_done;
};

/* An idle pooled connection to addr ("host:port"), else a new one (fresh: never pooled).
 * Returns -errno (the message for "node lost" is strerror). */
int owner_conn_open(const char *addr, bool fresh, struct owner_conn **ret);
/* Give a connection back: pooled when reusable (its answer read to the end), else closed. */
void owner_conn_release(struct owner_conn *c, bool reusable);

/* Write all of data (blocking, OWNER_SEND_MS at most per write). */
int owner_conn_send(struct owner_conn *c, const void *data, size_t len);
/* Read the answer head into *h, skipping 1xx answers but a 101 (when upgrade). client_fd >= 0:
 * a client hang-up meanwhile returns -ECONNABORTED. -EPIPE: the owner closed before a byte. */
int owner_conn_read_head(struct owner_conn *c, int client_fd, bool upgrade, struct owner_head *h);
/* Set up reading the body of an answer with head h to a request of method. Returns whether
 * the connection can be reused once the body is read. */
bool owner_conn_body_start(struct owner_conn *c, const struct owner_head *h, const char *method);
/* Up to max body bytes: > 0 bytes, 0 at the end, -ECONNABORTED the client left, else -errno. */
ssize_t owner_conn_body_read(struct owner_conn *c, int client_fd, char *out, size_t max);
/* The header named in h (case-insensitive), NULL when absent. */
const char *owner_head_get(const struct owner_head *h, const char *name);
