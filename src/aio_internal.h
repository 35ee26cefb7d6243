/* SPDX-License-Identifier: MIT */
/*
 * What the files of the event loop's connections (aio.h) share, between
 * them; nothing else includes it. aio.h stays their interface to the rest
 * of the library; the handle (struct cr__aio), its links, their rings of
 * commands and the subscriptions are laid out here.
 *
 *   aio_timer.c    the timer heap (cr__aio_after) and the dispatch's budget
 *   aio_resolve.c  the resolver thread, work posted from other threads
 *   aio_link.c     links: commands, replies, NOSCRIPT, redirects, retries,
 *                  replica WAIT
 *   aio_sub.c      subscriptions, sleepers and their wake tokens,
 *                  cr__aio_subs
 *   aio_loop.c     the handle's life cycle and its dispatch: what the loop
 *                  reports
 *
 * Each file calls only those listed above it; the links reach the
 * subscriptions only through the handle's cr__asub_ops. Everything here
 * runs on the loop's thread unless it says otherwise.
 */
#ifndef CR_AIO_INTERNAL_H
#define CR_AIO_INTERNAL_H

#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <uthash.h>

#include "aio.h"
#include "conn.h"

/* The state of a link. */
enum { CR__LINK_DOWN, CR__LINK_RESOLVING, CR__LINK_CONNECTING, CR__LINK_UP };

/* What a link waits for a reply to. */
enum {
    CR__PEND_CMD, CR__PEND_SCRIPT, CR__PEND_WAIT, CR__PEND_ROLE, CR__PEND_SUB,
    CR__PEND_UNSUB, CR__PEND_PING, CR__PEND_DROP
};

typedef struct cr__asub cr__asub;

typedef struct cr__apend {
    int kind;
    cr__areply_fn fn;
    void *ctx;
    int64_t deadline;
    unsigned flags;
    char *bytes;              /* CMD, SCRIPT: the command as sent */
    size_t len;
    size_t tail;              /* SCRIPT: where its arguments begin */
    const cr__script *script;
    int argc;
    bool eval;                /* SCRIPT: sent as EVAL already */
    cr__reply *held;          /* SCRIPT followed by WAIT: its reply */
    cr_status held_rc;
    int redirects;
    bool asked;               /* CMD, SCRIPT: sent behind an ASKING */
    int64_t backoff;          /* the last pause after TRYAGAIN/CLUSTERDOWN */
    cr__asub *sub;            /* SUB, UNSUB */
} cr__apend;

struct cr__aretry;

typedef struct cr__alink {
    struct cr__alink *next;
    cr__aio *io;
    bool sub;                 /* the subscriber link */
    int node;                 /* cluster node; -1 otherwise */
    char host[256];           /* "": the URL's unix socket */
    int port;
    unsigned gen;             /* the topology's generation it was opened for */
    int state;
    cr__conn *conn;
    int fd, watched;
    cr__buf queued;           /* commands for a link not up yet */
    cr__apend *q;             /* ring of commands awaiting replies */
    size_t head, len, cap;
    size_t unsent;            /* the last ones of the ring are in `queued` */
    struct cr__aretry *retrying; /* commands waiting to be sent again */
    int64_t replicas, replicas_at;
    cr__atimer timer;
    cr__atimer more;          /* replies left over from the last turn */
    cr__atimer opener;        /* cr__aio_link_open_soon */
    struct cr__alink *dirty_next; /* on io->dirty: has bytes to write */
    bool dirty;
    int64_t backoff, retry_at;
    int64_t last_rx, ping_sent;
    struct addrinfo *ai;      /* resolved */
    cr_status resolved;       /* the resolver's answer */
} cr__alink;

/* A command that was answered TRYAGAIN or CLUSTERDOWN (nothing ran),
 * waiting out its pause before it goes to its link again. */
typedef struct cr__aretry {
    struct cr__aretry *next;
    cr__alink *link;
    cr__atimer timer;
    cr__apend e;
    char why[160];            /* the server's answer */
} cr__aretry;

struct cr__asub {
    UT_hash_handle hh;
    char *channel;
    cr__decode_fn decode;
    int refs;
    cr__tally tally;          /* what its messages left: tokens, counts */
    bool confirmed;
    bool sent;                /* SUBSCRIBE is the last command sent for it */
    int inflight;
    cr__alink *link;
    cr__asleeper *sleepers;   /* by ticket */
    cr__asleeper *confirming; /* waiting for the confirmation */
    uint64_t confirms;
    uint64_t open_pongs;      /* the link's PONGs when an opening message came */
    int64_t idle_since;
    unsigned resets;
};

/* A name to resolve on the resolver thread. */
typedef struct cr__aresolve {
    struct cr__aresolve *next;
    cr__alink *link;          /* NULL once the link went */
    char host[256];
    int port;
    struct addrinfo *ai;
    int err;
} cr__aresolve;

/* What the links need of the subscriptions, which sit above them: the
 * links reach them only through this table (aio_sub.c's
 * cr__aio_sub_ops, the handle's from cr__aio_new). */
typedef struct cr__asub_ops {
    /* Sends the SUBSCRIBE (or the UNSUBSCRIBE) of `s` on `l`, as a link
     * that came up does for each subscription it now needs; CR_OK or the
     * failure. */
    cr_status (*send)(cr__alink *l, cr__asub *s, bool subscribe);
    /* Gives the sleepers on `s` their wake tokens, the first in line
     * first, as a failed link does once it made a token for each
     * reference. */
    void (*wake)(cr__aio *io, cr__asub *s);
    /* A reply read on subscriber link `l` (the caller frees it). */
    void (*reply)(cr__alink *l, const cr__reply *r);
} cr__asub_ops;

struct cr__aio {
    cr_client *client;
    cr_loop loop;
    bool cluster, sharded, closing;
    cr__alink *links;
    cr__asub *subs;
    const cr__asub_ops *subops;
    cr__atimer **heap;
    size_t nheap, capheap;
    int64_t armed;            /* the due time the loop's timer is set for */
    int64_t late_logged;      /* when a late loop was last logged */
    int dispatching;          /* inside cr__aio_ready or cr__aio_timeout */
    int budget;               /* of this dispatch, DISPATCH_BUDGET */
    cr__alink *dirty;         /* links to write to when the dispatch ends */
    uint64_t tickets;
    uint64_t pongs, pings;
    cr__atimer linger;
    /* The resolver thread and its queue; what other threads post. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t resolver;
    bool resolver_started, resolver_stop;
    cr__aresolve *todo, *done;
    cr__apost *posted;
    int wake_fd;              /* eventfd: jobs done, posts (-1: none yet) */
};

/* aio_timer.c: sets the loop's timer for the earliest due timer, when it
 * changed. */
void cr__aio_arm(cr__aio *io);

/* aio_resolve.c: runs what other threads posted, oldest first. */
void cr__aio_run_posted(cr__aio *io);
/* aio_resolve.c: resolves the link's host: at once when numeric (CR_OK),
 * else on the resolver thread (CR_BUSY: the link waits in
 * CR__LINK_RESOLVING); or the failure. */
cr_status cr__aio_resolve(cr__alink *l);
/* aio_resolve.c: the link is going: the resolver's answer for it is
 * dropped. */
void cr__aio_forget_jobs(cr__aio *io, cr__alink *l);

/* aio_link.c: the newest entry of the link's ring (to fill), growing it;
 * NULL: no memory. */
cr__apend *cr__aio_push(cr__alink *l);
/* aio_link.c: the oldest entry of the ring, taken out (by value). */
cr__apend cr__aio_pop(cr__alink *l);
/* aio_link.c: queues RESP bytes on the link: on the connection when up,
 * else to go first when it is (*unsent true). */
cr_status cr__aio_link_put(cr__alink *l, const char *data, size_t len,
                           bool *unsent);
/* aio_link.c: has what was queued on the link written, at the end of the
 * dispatch (or when the loop next finds it writable). */
void cr__aio_link_kick(cr__alink *l);
/* aio_link.c: writes what the link's connection holds. */
void cr__aio_link_flush(cr__alink *l);
/* aio_link.c: re-arms the link's timer. */
void cr__aio_link_schedule(cr__alink *l);
/* aio_link.c: opens the link from the loop's next turn. */
void cr__aio_link_open_soon(cr__alink *l);
/* aio_link.c: the link goes on as its descriptor is ready for `events`
 * (0: the resolver answered). */
void cr__aio_link_drive(cr__alink *l, int events);
/* aio_link.c: the link broke (or the master moved, or a deadline
 * passed): every command it holds ends (CR_EIO or rc), `why` (may be
 * NULL) said. */
void cr__aio_link_fail(cr__alink *l, cr_status rc, const char *why);

/* aio_sub.c: the subscriptions' table for the links. */
extern const cr__asub_ops cr__aio_sub_ops;
/* aio_sub.c: a subscription's confirmation (or refusal: rc) reaches those
 * waiting for it. */
void cr__aio_sub_confirmed(cr__aio *io, cr__asub *s, cr_status rc);

#endif
