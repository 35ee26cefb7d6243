/* SPDX-License-Identifier: MIT */
/*
 * The waiting line of an object (doc/waiting-line.md; the rules are in
 * lua/lib/line.lua, which every script of such an object shares): the lock
 * kinds on a lock's channel, the read/write lock and the two semaphores.
 * Credisson's waiters queue there, each with a channel of its own, so that
 * a release wakes only the waiters it can serve; Java clients never see
 * it. This file holds what the C side needs of it: its names, the settings
 * every line script takes, what an attempt's reply says of the waiter's
 * place, and the leave call.
 */
#ifndef CR_LINE_H
#define CR_LINE_H

#include <stdbool.h>
#include <stdint.h>

#include "names.h"
#include "pubsub.h"
#include "resp.h"
#include "script.h"

struct cr_client;

/* A waiter that attempts have told for this long that it is the first the
 * object cannot serve also listens on the object's own channel (a release
 * by a client outside the line is published only there; one by a waiter
 * in line would have given it its turn, usually well before). */
#define CR__LINE_LISTEN_AFTER_MS 50

/* The yield of a waiter whose turn's release was heard by others on the
 * object's own channel (Java waiters, which ignore the line): it lets
 * them try first. */
#define CR__LINE_YIELD_MS 2

/* An object's line: its keys and its waiters' channel prefix. */
typedef struct cr__line {
    char *key;    /* credisson_line:{N} */
    char *state;  /* credisson_line_state:{N} */
    char *prefix; /* credisson_line__channel:{N}: (a waiter's channel is
                   * this and its entry) */
} cr__line;

/* cr__line_init: the line of raw name N (CR_ENOMEM); cr__line_free
 * frees what init allocated (a zeroed struct too). */
cr_status cr__line_init(cr__line *ln, const char *raw);
void cr__line_free(cr__line *ln);

/* cr__line_channel: the channel of waiter `entry`, malloc'd (NULL: out of
 * memory). */
char *cr__line_channel(const cr__line *ln, const char *entry);

/* cr__line_entry: a waiter's entry from its owner name: the thread's
 * reader name (a writer's ":write" dropped), into `out` (CR__OWNER_MAX
 * bytes). */
void cr__line_entry(const char *owner, char *out);

/* What a line script needs of the client: the waiting lease (renewed by
 * every attempt of the waiter: it attempts at least every third of it) and
 * the turn, in ms. */
typedef struct cr__line_times {
    int64_t lease_ms;
    int64_t turn_ms;
} cr__line_times;
cr__line_times cr__line_times_of(const struct cr_client *c);

/* The `wait` argument of a line script's attempt: 0 a try that does not
 * wait (it respects the line and leaves nothing behind), 1 one that waits
 * (it goes in line), 2 one that ignores the line (the spin lock). */
int64_t cr__line_wait_arg(int64_t wait_ms, bool spin);

/* Whether a waiter in line listens on the object's own channel too, for
 * releases of clients outside the line: not (it is not the first the
 * object cannot serve), soon (it is: once attempts have said so for
 * CR__LINE_LISTEN_AFTER_MS), now (it is, and a client outside the line
 * took what a turn had given, its own or another's, within the last four
 * turns: Java clients are about). */
enum { CR__LISTEN_NO = 0, CR__LISTEN_SOON = 1, CR__LISTEN_NOW = 2 };

/* What a failed attempt's reply says of the waiter's place ({..., listen,
 * turn} at `at` in its array reply): CR__LISTEN_*, and the ms until the
 * earliest turn before it ends (-1: none). False when the reply has no
 * such fields. */
typedef struct cr__line_place {
    int listen;
    int64_t turn_ms;
} cr__line_place;
bool cr__line_place_of(const cr__reply *r, size_t at, cr__line_place *p);

/* cr__line_hint: the sleep of a waiter at `p`, given the object's own
 * hint (its TTL: when it lapses unannounced; -1: none): only the first the
 * object cannot serve watches the object; anyone waits at most until the
 * earliest turn before it ends (then its own attempt passes the turn on
 * if that waiter let it lapse). -1: until a message. */
int64_t cr__line_hint(int64_t object_hint, const cr__line_place *p);

/* cr__line_max_sleep: a waiter in line attempts at least every third of
 * the waiting lease (each attempt renews it), and as often as `max_ms`
 * asks (-1: no other bound). */
int64_t cr__line_max_sleep(const struct cr_client *c, int64_t max_ms);

/* cr__line_decode: a message on a waiter's own channel: 't<heard>', its
 * turn, and 'w<ms>', a watch, each wake it (and are kept: cr__line_delay
 * reads them). */
cr__wake cr__line_decode(const char *payload, size_t len);

/* cr__line_delay: how long a waiter woken by `payload` holds off its
 * attempt: CR__LINE_YIELD_MS after a turn whose release others heard, the
 * ms of a watch (the turns before it end then), else 0. */
int64_t cr__line_delay(const char *payload, size_t len);

/* cr__line_leave_call: the script call taking `entry` (or the entry of
 * owner name `entry`: cr__line_entry) out of the line of object `object`
 * of kind `kind` ("lock", "rw" or "sem"): its reply is 1 or 0 (it was not
 * in line). */
cr_status cr__line_leave_call(const cr__line *ln, const struct cr_client *c,
                              const char *object, const char *kind,
                              const char *entry, cr__script_call *call);

#endif
