/* SPDX-License-Identifier: MIT */
/*
 * The subscriber links of the blocking pub/sub, inside pubsub.c: between
 * pubsub.c (the subscription table and its waiters) and pubsub_link.c
 * (the links and the dispatcher thread). Nothing else includes it.
 *
 * A link is one subscriber connection: to the server, or in a cluster to
 * one master. The link set owns the mutex that guards the links and the
 * table above them, and the dispatcher thread. The table sends its
 * (S)SUBSCRIBE and (S)UNSUBSCRIBE commands through these calls; the links
 * reach the table only through the callbacks it registers (cr__link_ops).
 * Every call here is made with `mu` held unless it says otherwise.
 */
#ifndef CR_PUBSUB_LINK_H
#define CR_PUBSUB_LINK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "route.h"

#define CR__MAX_LINKS 64

/* What a link waits for an answer to, in the order sent. */
enum { CR__ASK_SUB, CR__ASK_UNSUB, CR__ASK_PING };

/* What the links need of the table above them; each runs with mu held
 * (`arg`: the table). */
typedef struct cr__link_ops {
    /* Whether some channel sits on link `link`. */
    bool (*wanted)(void *arg, int link);
    /* The dispatcher's round begins: place channels without a link, end
     * lingering subscriptions that expired. */
    void (*upkeep)(void *arg);
    /* Send what the table asks for; false when link *bad failed. */
    bool (*send)(void *arg, int *bad);
    /* Whether what the table changed waits for the dispatcher's round. */
    bool (*pending)(void *arg);
    /* The table's next deadline (monotonic ms; 0: none); *entries: whether
     * it has any entry. */
    int64_t (*due)(void *arg, bool *entries);
    /* A reply on link `link` that is neither a PONG nor an error answering
     * a PING: an error answering a (un)subscription, or an array of two
     * elements or more. `self`: the waiter reading the link (NULL: the
     * dispatcher). false: drop the link. */
    bool (*reply)(void *arg, int link, const cr__reply *r, const void *self);
    /* Link `link` was opened: its channels must be sent. */
    void (*opened)(void *arg, int link);
    /* Link `link` could not be opened; `final`: CR_OK, or the status that
     * no retry mends (`why`), which ends the waits on its channels. */
    void (*failed)(void *arg, int link, cr_status final, const char *why);
    /* Link `link` was dropped: its channels must be sent again and their
     * waiters retry. */
    void (*dropped)(void *arg, int link);
} cr__link_ops;

typedef struct cr__link cr__link;

/* The links of one client: the table reads the fields above "Private"
 * and sets need_refresh; the rest is pubsub_link.c's. */
typedef struct cr__links {
    cr__conn_config cfg;
    cr__transport *transport; /* the slot map, in a cluster */
    bool cluster;
    bool sharded;       /* SSUBSCRIBE per slot owner */
    pthread_mutex_t mu; /* the links and the table above them */
    int64_t round_due;  /* when the dispatcher's poll times out; -1: never */
    bool need_refresh;  /* read a new slot map (set by the table too) */
    /* Private to pubsub_link.c. */
    const cr__link_ops *ops;
    void *arg;
    int pipe_fd[2];
    pthread_t thread;
    bool stop;
    cr__link *links; /* CR__MAX_LINKS of them */
    int nlinks;
} cr__links;

/* cr__links_start: set up *ls (zeroed by the caller) and start the
 * dispatcher thread, which calls `ops` with `arg`; mu not held. */
cr_status cr__links_start(cr__links *ls, const cr__conn_config *cfg,
                          cr__transport *t, bool sharded,
                          const cr__link_ops *ops, void *arg);

/* cr__links_stop: stop and join the dispatcher thread; mu not held. */
void cr__links_stop(cr__links *ls);

/* cr__links_free: close every link and free what start made (after
 * cr__links_stop); mu not held. */
void cr__links_free(cr__links *ls);

/* cr__links_poke: wake the dispatcher thread for a round (any thread). */
void cr__links_poke(cr__links *ls);

/* cr__links_kick_readers: wake every waiter that polls a link. */
void cr__links_kick_readers(cr__links *ls);

/* cr__links_count: how many links there are (numbered from 0). */
int cr__links_count(const cr__links *ls);

/* cr__link_for_node: the link of cluster node `node`: its own, else a new
 * one, else one no channel uses any more; -1 when all are in use. */
int cr__link_for_node(cr__links *ls, int node, const char *host, int port);

/* cr__link_up: whether link `i` is connected. */
bool cr__link_up(const cr__links *ls, int i);

/* cr__link_send: queue a command on connected link `i` that waits for an
 * answer `ask` (CR__ASK_*) about entry `sub`; false when out of memory. */
bool cr__link_send(cr__links *ls, int i, int ask, uint64_t sub, int argc,
                   const char **argv);

/* cr__link_flush: write out what link `i` has queued; false when the link
 * failed. The write is bounded by the command timeout. */
bool cr__link_flush(cr__links *ls, int i);

/* cr__link_answered: take the oldest unanswered command off link `i` when
 * it is `ask` on entry `sub` (0: any entry), and tell whether it was. */
bool cr__link_answered(cr__links *ls, int i, int ask, uint64_t sub);

/* cr__link_take_oldest: take the oldest unanswered command off link `i`
 * and return its entry (0: none). */
uint64_t cr__link_take_oldest(cr__links *ls, int i);

/* cr__link_fence: ask for a PING on link `i` now (the dispatcher sends it
 * when it cannot be sent at once); returns the PONG count that answers
 * it. */
uint64_t cr__link_fence(cr__links *ls, int i);

/* cr__link_pongs: the PONGs read on link `i` so far. */
uint64_t cr__link_pongs(const cr__links *ls, int i);

/* cr__link_await: wait for input on link `i` (-1: none) until cv is
 * signalled or the deadline (ms; -1: none) passes. Reads the link itself
 * when it is connected and nobody else reads it, else sleeps on cv (as a
 * sleeper of the link when someone reads it). `self`: the calling thread
 * as a waiter for wake tokens, handed to the table's reply callback
 * (NULL: it waits for something else); `min_bytes`: how many bytes may come
 * before poll() wakes a reader that waits alone on the link (1: any
 * input). Returns false once the deadline passed. */
bool cr__link_await(cr__links *ls, int i, pthread_cond_t *cv,
                    const void *self, int min_bytes, int64_t deadline);

/* cr__link_hand_over: a thread done waiting on link `i` (-1: none) hands
 * it to a sleeper, if nobody reads it now. */
void cr__link_hand_over(cr__links *ls, int i);

/* cr__link_cond_wait: wait on cv until the monotonic deadline (ms; -1:
 * none); false once the deadline has passed. */
bool cr__link_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu,
                        int64_t deadline);

#endif
