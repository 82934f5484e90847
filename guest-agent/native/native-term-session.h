/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The terminal's sessions (native-term.c): each shell started by GET /v1/terminal has a session
 * id (NATIVE_TERM_ID_LEN random hex digits) that a later GET /v1/terminal?session=ID uses to
 * take the shell over after its connection was lost: a network blip between a browser and sbxd.
 * One connection owns a session at a time (the newest to take it); the others' input is
 * ignored and their output not sent. A session nobody owns, because its owner's connection was
 * lost (sbxd said so with a detach frame), keeps its shell NATIVE_TERM_DETACH_MS, then the shell
 * is killed. A connection that closes cleanly (the user closed the terminal) ends the shell
 * at once, as before sessions existed.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define NATIVE_TERM_ID_LEN    32          /* hex digits of a session id */
#define NATIVE_TERM_DETACH_MS (60 * 1000) /* a session without a connection keeps its shell */
#define NATIVE_TERM_SESSIONS  64          /* sessions at once (then a new one is refused) */

struct term_session;

/* A new session for the shell pid (its id in id_out), owned by the caller as generation 1.
 * -EBUSY past NATIVE_TERM_SESSIONS, -ENOMEM. */
int term_session_new(pid_t pid, char id_out[static NATIVE_TERM_ID_LEN + 1],
                     struct term_session **ret);
/* The live session id names, taken over by the caller: a new generation (*ret_gen), the shell's
 * pid. -ENOENT when there is none (never was, or its shell ended). */
int term_session_take(const char *id, struct term_session **ret, uint64_t *ret_gen, pid_t *ret_pid);
/* Drop a reference (the creator's drop also removes it from the table). */
void term_session_unref(struct term_session *s, bool creator);

/* Whether generation gen owns s now. */
bool term_session_owns(struct term_session *s, uint64_t gen);
/* gen's connection was lost: s has no owner from now on (when gen still owned it). */
void term_session_detach(struct term_session *s, uint64_t gen);
/* The shell ended: nobody can take s any more. */
void term_session_done(struct term_session *s);
/* For the shell's pump: ms until a session without an owner must end (0: now), or -1 while
 * someone owns it. */
int term_session_orphan_ms(struct term_session *s);
