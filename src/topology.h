/* SPDX-License-Identifier: MIT */
/*
 * Topology: where the master is, with Sentinel. The client follows the
 * sentinels actively: a thread keeps a subscription to one sentinel's
 * "+switch-master" (as Redisson does), asks a sentinel for the master
 * every TOPOLOGY_POLL_MS besides, and at once on a hint (a READONLY
 * answer, a broken link, a master that says it is a replica). A new
 * address is trusted only once it answers ROLE as a master; then the
 * generation goes up and the listeners are told, on that thread: the
 * transport closes its idle connections to the old master, pub/sub moves
 * its links, the holds table checks every hold on the new master. So a
 * switch is learned within TOPOLOGY_POLL_MS of a sentinel knowing it (at
 * once when its message arrives), and from then on nothing runs on the
 * old master: a connection opened under an older generation is never
 * used again, and a reply read on one is not trusted.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef CR_TOPOLOGY_H
#define CR_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>

#include "conn.h"

/* How often the sentinels are asked for the master besides their
 * messages: a switch is learned within this long. */
#define TOPOLOGY_POLL_MS 1000

/* After a switch, locks are not taken on the new master for this long: a
 * client that learns of the switch later (by asking, within
 * TOPOLOGY_POLL_MS) may still hold a lock the old master granted after
 * the promotion; in this time it is told that it lost it, before anyone
 * else can be in. */
#define TOPOLOGY_SETTLE_MS (TOPOLOGY_POLL_MS + 500)

/* A listener, called on the topology's thread after each switch, with
 * the new generation. It must not block for long. */
typedef void (*cr__switch_fn)(void *userdata, unsigned generation);

/* cr__topology_new: ask the sentinels of cfg->url for the master (before
 * `deadline`) and start following them. CR_EIO when no sentinel knows the
 * master, or the final statuses of conn.h. */
cr_status cr__topology_new(const cr__conn_config *cfg, int64_t deadline,
                           cr__topology **out);

/* cr__topology_stop: stop the thread (the client's abort descriptor has
 * ended its waits): no listener runs any more. The topology still answers
 * until freed. */
void cr__topology_stop(cr__topology *t);

/* cr__topology_free: stop (if not yet) and free. */
void cr__topology_free(cr__topology *t);

/* cr__topology_master: the master's last known address and its
 * generation. */
void cr__topology_master(cr__topology *t, char *host, size_t len, int *port,
                         unsigned *generation);

/* cr__topology_generation: the current generation (1 at first). */
unsigned cr__topology_generation(cr__topology *t);

/* cr__topology_settle_left: how long acquisitions must still hold back
 * after the last switch (TOPOLOGY_SETTLE_MS from it); 0: none. NULL: 0. */
int64_t cr__topology_settle_left(cr__topology *t);

/* cr__topology_hint: something suggests the master moved: ask now. */
void cr__topology_hint(cr__topology *t);

/* cr__topology_listen: add a listener (at most 8, before the first switch
 * can matter: at client creation). */
void cr__topology_listen(cr__topology *t, cr__switch_fn fn, void *userdata);

#endif
