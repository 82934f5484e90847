/* SPDX-License-Identifier: Apache-2.0 */
/* The checks of option values beyond their kind (options.h's check), used by the rows of
 * options-table.c. Each returns 0, or -EINVAL with *why saying what a value must be. */
#pragma once

int check_listen(const char *v, const char **why);          /* HOST:PORT, [V6]:PORT, numeric */
int check_advertise(const char *v, const char **why);       /* the same, at most 127 bytes */
int check_domain(const char *v, const char **why);          /* a host name with optional :PORT */
int check_cgroup_name(const char *v, const char **why);     /* one directory level */
int check_node_name(const char *v, const char **why);       /* [A-Za-z0-9._-]{1,63} */
int check_ip(const char *v, const char **why);              /* an IPv4 or IPv6 address */
int check_readable(const char *v, const char **why);        /* a file sbxd can read */
int check_etcd_urls(const char *v, const char **why);       /* etcd://H:P[,H:P...] */
int check_template_names(const char *v, const char **why);  /* A[,B...] template names */
int check_public_url(const char *v, const char **why);      /* http(s)://HOST[:PORT][/PATH] */
int check_registry_mirror(const char *v, const char **why); /* http(s)://HOST[:PORT][/] */
int check_registry_host(const char *v, const char **why);   /* HOST[:PORT], [V6]:PORT */
