/* SPDX-License-Identifier: MIT */
/*
 * A stub of the subscriptions a wait uses (cr__wait_subs, wait.h), for the
 * unit tests of the pure cores that drive or read a wait (test_wait.c,
 * test_barrier_next.c): the test says what the client's subscription to
 * the channel is, and reads what the core asked of it. It answers as the
 * client's subscriptions do (pubsub.h), and keeps the last kept message as
 * they do (cr__kept_note).
 */
#ifndef CR_TEST_SUBS_STUB_H
#define CR_TEST_SUBS_STUB_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "wait.h"

/* The client's subscription to the channel, as a test sets it up, and
 * what the core asked of it. */
struct subs_stub {
    int waiters;     /* this client's threads waiting on the channel */
    uint64_t sub_id; /* the subscription in place before the wait (0: none) */
    bool confirmed;  /* the server confirms the subscription */
    bool quiet;      /* nothing read on it since the mark */
    cr__kept kept;   /* the last kept message read on it */
    int fences;      /* fences asked */
    int unsubscribes;
};

/* The subscription a driver hands the core once subscribed. */
static int stub_sub_token;
#define STUB_SUB ((void *)&stub_sub_token)

/* Returns the stub's waiters (-1 when there is no subscription), and fills
 * what the subscription has seen and its mark (id 0 when there is none), as
 * cr__pubsub_waiters does. */
static int
stub_waiters(void *ctx, const char *channel, cr__sub_seen *seen,
             cr__sub_mark *mark)
{
    struct subs_stub *s = ctx;
    int n = s->sub_id != 0 ? s->waiters : -1;

    assert_non_null(channel);
    *seen = (cr__sub_seen){.waiters = n};
    if (mark != NULL)
        *mark = (cr__sub_mark){.id = s->sub_id, .confirms = 1};
    return n;
}

/* Returns whether the stub's subscription is confirmed. */
static bool
stub_confirmed(void *ctx, void *sub)
{
    struct subs_stub *s = ctx;

    assert_ptr_equal(sub, STUB_SUB);
    return s->confirmed;
}

/* Returns whether `sub` is the one marked and read nothing since, as
 * cr__sub_quiet_since does (a mark of no subscription is never quiet). */
static bool
stub_quiet_since(void *ctx, void *sub, const cr__sub_mark *mark)
{
    struct subs_stub *s = ctx;

    assert_ptr_equal(sub, STUB_SUB);
    return s->quiet && mark->id != 0 && mark->id == s->sub_id;
}

/* Returns whether the last kept message is `payload`, as cr__sub_heard. */
static bool
stub_heard(void *ctx, void *sub, const char *payload, size_t len)
{
    struct subs_stub *s = ctx;

    assert_ptr_equal(sub, STUB_SUB);
    return cr__kept_is(&s->kept, payload, len);
}

/* Counts a fence and fills it with that count as its PONG number. */
static void
stub_fence(void *ctx, void *sub, cr__fence *f)
{
    struct subs_stub *s = ctx;

    assert_ptr_equal(sub, STUB_SUB);
    s->fences++;
    *f = (cr__fence){.link = 0, .pongs = (uint64_t)s->fences};
}

/* Counts a reference given back. */
static void
stub_unsubscribe(void *ctx, void *sub)
{
    struct subs_stub *s = ctx;

    assert_ptr_equal(sub, STUB_SUB);
    s->unsubscribes++;
}

/* Gives the last kept message, as cr__sub_kept does. */
static void
stub_kept(void *ctx, void *sub, cr__kept *out)
{
    struct subs_stub *s = ctx;

    assert_ptr_equal(sub, STUB_SUB);
    *out = s->kept;
}

static const cr__wait_subs stub_subs = {
    stub_waiters, stub_confirmed, stub_quiet_since, stub_heard,
    stub_kept,    stub_fence,     stub_unsubscribe,
};

#endif
