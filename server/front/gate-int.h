/* SPDX-License-Identifier: Apache-2.0 */
/* The gate's own types, shared by its two sides: the gate's thread (gate.c) and
 * libmicrohttpd's callbacks about connections (gate-mhd.c). Nothing outside front/gate*.c
 * includes this. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "front/gate.h"

/* Where a connection is. PENDING and LINGER are the gate thread's own; HANDED onwards are
 * shared with libmicrohttpd's threads (under g->lock; the fields they write are atomics). */
enum {
        C_PENDING = 100, /* waiting for its head, in the pending FIFO */
        C_LINGER,        /* answered by the gate, or an upgraded connection libmicrohttpd
                            closed: draining input before the close */
        C_HANDED,        /* given to MHD_add_connection, not yet started */
        C_DEAD,          /* closed by the gate; freed after the epoll batch that may name it */
};

struct gate_conn {
        struct gate *g;
        int fd;
        int state; /* C_* or enum gate_state; __atomic */
        struct gate_conn *prev, *next;
        int64_t t_state; /* __atomic: when state was entered (pending: the accept) */
        bool got_bytes;
        bool cut; /* the gate shut it down; under g->lock */
        /* a request body (front.c's thread writes, the gate reads; __atomic) */
        bool in_handler;
        int64_t t_mark;  /* the end of the last handler call */
        int64_t wait_ms; /* time spent waiting for the client before t_mark */
        uint64_t body_bytes;
        struct sockaddr_storage addr;
        socklen_t addr_len;
};

struct list {
        struct gate_conn *head, *tail;
        unsigned n;
};

struct gate {
        struct MHD_Daemon *mhd;
        int listen_fd[GATE_MAX_LISTEN];
        size_t n_listen;
        int epfd, stop_fd;
        int back_fd; /* eventfd: connections on `back` for the gate's thread */
        pthread_t thread;
        bool started, accepting, quiesced;
        bool opaque;           /* TLS: connections handed over unread (gate_set_opaque()) */
        int64_t accept_resume; /* out of fds: accept again at this time */
        unsigned max_pending, max_active;
        struct list pending, linger, dead; /* gate thread only */
        pthread_mutex_t lock;              /* by_fd, active, n_cut */
        struct gate_conn **by_fd;
        unsigned n_fds;
        struct list active;
        unsigned n_cut; /* active ones the gate shut down, their threads not yet gone */
        /* upgraded connections libmicrohttpd closed, each on a socket of its own (a dup), for
         * the gate's thread to close lingering; taken while `take_back` (the thread runs) */
        struct list back;
        bool take_back;
};

static inline void list_add(struct list *l, struct gate_conn *c)
{
        c->prev = l->tail;
        c->next = NULL;
        if (l->tail)
                l->tail->next = c;
        else
                l->head = c;
        l->tail = c;
        l->n++;
}

static inline void list_del(struct list *l, struct gate_conn *c)
{
        if (c->prev)
                c->prev->next = c->next;
        else
                l->head = c->next;
        if (c->next)
                c->next->prev = c->prev;
        else
                l->tail = c->prev;
        c->prev = c->next = NULL;
        l->n--;
}

/* by_fd[fd] = c when fd is within the table (under g->lock). */
void gate_by_fd_set(struct gate *g, int fd, struct gate_conn *c);
