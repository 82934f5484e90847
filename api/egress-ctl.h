/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control channel between sbxd and sbx-egress (api/egress-ctl.md): one SOCK_SEQPACKET
 * socketpair, one message per packet, each a JSON object of the types below, some with file
 * descriptors attached (SCM_RIGHTS). sbxd holds the sockets sandboxes' egress arrives on and
 * tells sbx-egress the policies; sbx-egress asks sbxd for what it may not do itself (pinning
 * addresses in nftables, a secret's value) and reports what builds should log. Either side
 * treats the other's messages as untrusted: every field is checked and bounded here.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define EGRESS_CTL_MSG_MAX   (4u << 20) /* bytes of one message (a policy with every rule) */
#define EGRESS_CTL_FDS_MAX   3          /* descriptors one message carries */
#define EGRESS_CTL_NAME_MAX  255        /* a secret's name, a build's id */
#define EGRESS_CTL_TEXT_MAX  65536      /* a secret's value, a note */
#define EGRESS_CTL_PEM_MAX   (1u << 20) /* the CA, the upstream bundle */
#define EGRESS_CTL_HOSTS_MAX 64         /* hosts a build may reach */
#define EGRESS_CTL_HOST_MAX  253
#define EGRESS_CTL_ADDRS_MAX 32     /* addresses of one pin */
#define EGRESS_CTL_SLOTS     65536  /* uid slots: 0 .. EGRESS_CTL_SLOTS - 1 */
#define EGRESS_CTL_TTL_MAX   604800 /* seconds a pin may last */
#define EGRESS_CTL_DEPTH_MAX 8      /* nesting of a policy object */

enum egress_msg_type {
        EGRESS_MSG_HELLO =
            1,             /* sbxd → egress, 3 fds: the resolver's socket, the proxy's (v4, v6) */
        EGRESS_MSG_POLICY, /* sbxd → egress: a slot's policy (replaces the one it had) */
        EGRESS_MSG_FORGET, /* sbxd → egress: the slot has none */
        EGRESS_MSG_SERVE,  /* sbxd → egress: every policy is in: answer sandboxes */
        EGRESS_MSG_BUILD,  /* sbxd → egress, 1 fd: a build proxy's listening socket */
        EGRESS_MSG_BUILD_END, /* sbxd → egress: that build is over */
        EGRESS_MSG_PIN,       /* egress → sbxd: addresses answered for a slot's allowed name */
        EGRESS_MSG_SECRET,    /* egress → sbxd: the value of a secret a slot's rules name */
        EGRESS_MSG_VALUE,     /* sbxd → egress: the answer to SECRET */
        EGRESS_MSG_NOTE,      /* egress → sbxd: a line for a build's log (no answer) */
        EGRESS_MSG_ACK,       /* either way: the answer to any other request */
};

struct egress_msg {
        enum egress_msg_type type;
        uint32_t id;   /* a request's number (0: no answer wanted), or the one an answer is for */
        int error;     /* ACK, VALUE: 0 or a negative errno */
        int slot;      /* POLICY, FORGET, PIN, SECRET */
        cJSON *policy; /* POLICY: the policy's record form (egress/policy/net-policy.h) */
        char *name;    /* SECRET: the secret; BUILD, BUILD_END, NOTE: the build's id */
        char *text;    /* VALUE: the secret's value (wiped when freed); NOTE: the line */
        /* HELLO: the resolver's upstream server (an IP address), the sandboxes' CA (key wiped
         * when freed), an extra bundle the proxy trusts upstream (or NULL) */
        char *upstream, *ca_key, *ca_cert, *upstream_ca;
        /* PIN: AF_INET or AF_INET6, n_addrs addresses of 4 or 16 bytes, for ttl seconds */
        int family;
        unsigned ttl;
        size_t n_addrs;
        uint8_t addrs[EGRESS_CTL_ADDRS_MAX][16];
        char **hosts; /* BUILD: the hosts its steps may reach */
        size_t n_hosts;
        int fds[EGRESS_CTL_FDS_MAX]; /* owned by a received message */
        size_t n_fds;
};

/* How many descriptors a message of type t carries. */
size_t egress_msg_fds(enum egress_msg_type t);

/* The message's JSON text (*ret, NUL-terminated, to free; wipe it for VALUE and HELLO). -EINVAL
 * for a message that breaks a bound, -ENOMEM. */
int egress_msg_encode(const struct egress_msg *m, char **ret, size_t *ret_len);
/* A message from its text and the number of descriptors that came with it (not stored: the
 * caller fills ret->fds after). -EBADMSG with *ret_why (static text) for anything malformed,
 * out of bounds, or of the wrong type for its fields; *ret is then zeroed. -ENOMEM. */
int egress_msg_decode(const char *text, size_t len, size_t n_fds, struct egress_msg *ret,
                      const char **ret_why);
/* Frees what the message owns, wipes secrets, closes its descriptors; a zeroed message is
 * fine. */
void egress_msg_done(struct egress_msg *m);

/* Sends m on a SOCK_SEQPACKET socket with its descriptors (not closed here). -errno. */
int egress_msg_send(int sock, const struct egress_msg *m);
/* Receives one message: 1 with *ret filled (its descriptors owned by it), 0 at the end of the
 * stream, -EBADMSG (*ret_why) for a bad one (its descriptors closed), -errno. */
int egress_msg_recv(int sock, struct egress_msg *ret, const char **ret_why);
