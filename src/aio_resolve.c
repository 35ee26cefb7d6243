/* SPDX-License-Identifier: MIT */
/*
 * The loop's resolver thread and the work other threads post to the loop
 * (aio.h's cr__aio_post). A link's host that is not numeric is resolved
 * by getaddrinfo on the resolver thread, started on first need; its
 * answer, like a post, goes on a list under the handle's mutex, and the
 * wake-up descriptor (an eventfd the loop watches) tells the loop, whose
 * dispatch takes both (woken, aio_loop.c).
 */
#include "config.h"

#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "aio_internal.h"

static void *
resolver_main(void *arg)
{
    cr__aio *io = arg;
    uint64_t one = 1;

    pthread_mutex_lock(&io->mu);
    while (!io->resolver_stop) {
        cr__aresolve *j = io->todo;
        struct addrinfo hints;
        char service[16];

        if (j == NULL) {
            pthread_cond_wait(&io->cv, &io->mu);
            continue;
        }
        io->todo = j->next;
        pthread_mutex_unlock(&io->mu);
        memset(&hints, 0, sizeof(hints));
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        snprintf(service, sizeof(service), "%d", j->port);
        j->err = getaddrinfo(j->host, service, &hints, &j->ai);
        pthread_mutex_lock(&io->mu);
        j->next = io->done;
        io->done = j;
        if (write(io->wake_fd, &one, sizeof(one)) < 0) {
            /* the counter is full: it is readable anyway */
        }
    }
    pthread_mutex_unlock(&io->mu);
    return NULL;
}

/* Runs what other threads posted, oldest first (on the loop). */
void
cr__aio_run_posted(cr__aio *io)
{
    cr__apost *p, *next, *fifo = NULL;

    pthread_mutex_lock(&io->mu);
    p = io->posted;
    io->posted = NULL;
    pthread_mutex_unlock(&io->mu);
    for (; p != NULL; p = next) {
        next = p->next;
        p->next = fifo;
        fifo = p;
    }
    for (p = fifo; p != NULL; p = next) {
        next = p->next;
        p->fn(p->ctx);
    }
}

/* Opens the wake-up descriptor once, watched from then on (io->mu
 * held). */
static cr_status
wake_open(cr__aio *io)
{
    if (io->wake_fd >= 0)
        return CR_OK;
    if ((io->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        return cr__fail(CR_ENOMEM, "cannot make an eventfd");
    io->loop.watch(io->loop.data, io->wake_fd, CR_WATCH_READ);
    return CR_OK;
}

cr_status
cr__aio_post_ready(cr__aio *io)
{
    cr_status rc;

    pthread_mutex_lock(&io->mu);
    rc = wake_open(io);
    pthread_mutex_unlock(&io->mu);
    return rc;
}

void
cr__aio_post(cr__aio *io, cr__apost *p)
{
    uint64_t one = 1;

    pthread_mutex_lock(&io->mu);
    p->next = io->posted;
    io->posted = p;
    if (write(io->wake_fd, &one, sizeof(one)) < 0) {
        /* the counter is full: it is readable anyway */
    }
    pthread_mutex_unlock(&io->mu);
}

/* Resolves the link's host: at once when numeric, else on the resolver
 * thread (the link waits in CR__LINK_RESOLVING). */
cr_status
cr__aio_resolve(cr__alink *l)
{
    cr__aio *io = l->io;
    struct addrinfo hints;
    char service[16];
    cr__aresolve *j;
    int e;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST;
    snprintf(service, sizeof(service), "%d", l->port);
    e = getaddrinfo(l->host, service, &hints, &l->ai);
    if (e == 0) {
        l->resolved = CR_OK;
        return CR_OK;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL)
        return CR_ENOMEM;
    j->link = l;
    snprintf(j->host, sizeof(j->host), "%s", l->host);
    j->port = l->port;
    pthread_mutex_lock(&io->mu);
    if (!io->resolver_started &&
        (wake_open(io) != CR_OK ||
         pthread_create(&io->resolver, NULL, resolver_main, io) != 0)) {
        pthread_mutex_unlock(&io->mu);
        free(j);
        return cr__fail(CR_ENOMEM, "cannot start the resolver thread");
    }
    io->resolver_started = true;
    j->next = io->todo;
    io->todo = j;
    pthread_cond_signal(&io->cv);
    pthread_mutex_unlock(&io->mu);
    l->state = CR__LINK_RESOLVING;
    return CR_BUSY;
}

/* The link is going: the resolver's answer for it is dropped. */
void
cr__aio_forget_jobs(cr__aio *io, cr__alink *l)
{
    cr__aresolve *j;

    pthread_mutex_lock(&io->mu);
    for (j = io->todo; j != NULL; j = j->next)
        if (j->link == l)
            j->link = NULL;
    for (j = io->done; j != NULL; j = j->next)
        if (j->link == l)
            j->link = NULL;
    pthread_mutex_unlock(&io->mu);
}
