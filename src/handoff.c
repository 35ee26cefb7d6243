/* SPDX-License-Identifier: MIT */
/*
 * The releaser's turn (see handoff.h).
 */
#include "config.h"

#include "handoff.h"

#define RTTS_MIN 4  /* a turn's length, in release round trips */
#define RTTS_MAX 64
/* A pause that counts releases lasts at most this long. */
#define HANDOFF_COUNT_MAX_US 200000

void
cr__handoff_init(cr__handoff *h)
{
    atomic_init(&h->until_us, 0);
    atomic_init(&h->turn_us, 0);
    atomic_init(&h->quiet_us, 0);
    atomic_init(&h->target, 0);
    atomic_init(&h->rtts, RTTS_MIN);
    atomic_init(&h->acquired_us, 0);
}

int64_t
cr__handoff_turn_us(int64_t rtts, int64_t rtt_us)
{
    int64_t turn = rtts * rtt_us;

    return turn < 1000 ? 1000 : turn > 20000 ? 20000 : turn;
}

void
cr__handoff_after_unlock(cr__handoff *h, cr_client *c, const char *channel,
                         int64_t heard, int64_t sent_us, bool in_line)
{
    uint64_t released = 0;
    int64_t read_at = 0, now = cr__now_us(), turn, cycle, whole;
    int local = cr__pubsub_waiters(c->pubsub, channel, &released, &read_at,
                                   NULL);
    int64_t others = heard - (local >= 0 ? 1 : 0);

    if (others <= 0 && (local <= 0 || in_line))
        return; /* this client's waiters: its next wait joins their line */
    turn = cr__handoff_turn_us(others > 0 ? atomic_load(&h->rtts) : RTTS_MIN,
                               now - sent_us);
    cycle = turn + now - atomic_load(&h->acquired_us);
    cycle = cycle > HANDOFF_COUNT_MAX_US ? HANDOFF_COUNT_MAX_US : cycle;
    whole = others > 0 ? 2 * others * cycle : turn;
    whole = whole > HANDOFF_COUNT_MAX_US ? HANDOFF_COUNT_MAX_US : whole;
    /* Its own release is counted too, unless already read: a release read
     * since the unlock was sent can only be its own, as the lock was held
     * until then. */
    if (others > 0)
        released += (uint64_t)others + (read_at >= sent_us ? 0 : 1);
    atomic_store(&h->turn_us, turn);
    atomic_store(&h->quiet_us, 2 * cycle);
    atomic_store(&h->target, others > 0 ? released : 0);
    atomic_store(&h->until_us, now + whole);
}

void
cr__handoff_after_release(cr__handoff *h, cr_client *c, const char *channel,
                          int64_t heard, int64_t sent_us)
{
    uint64_t released = 0;
    int64_t read_at = 0, now = cr__now_us(), turn;
    int local = cr__pubsub_waiters(c->pubsub, channel, &released, &read_at,
                                   NULL);

    if (heard - (local >= 0 ? 1 : 0) <= 0 && local <= 0)
        return;
    turn = cr__handoff_turn_us(RTTS_MIN, now - sent_us);
    atomic_store(&h->turn_us, turn);
    atomic_store(&h->target, 0);
    atomic_store(&h->until_us, now + turn);
}

bool
cr__handoff_before(cr__handoff *h, cr_client *c, const char *channel,
                   int64_t wait_ms)
{
    int64_t now = cr__now_us(), until = atomic_load(&h->until_us);
    int64_t turn = atomic_load(&h->turn_us);
    uint64_t target = atomic_load(&h->target);

    if (until <= now || wait_ms == 0)
        return false;
    if (wait_ms > 0 && until - now > wait_ms * 1000)
        until = now + wait_ms * 1000;
    if (target > 0 &&
        cr__pubsub_await_count(c->pubsub, channel, target,
                                  (until + 999) / 1000,
                                  (atomic_load(&h->quiet_us) + 999) / 1000))
        return false;
    cr__sleep_us(until - now < turn ? until - now : turn);
    return target > 0;
}

void
cr__handoff_tune(cr__handoff *h, bool free_at_once)
{
    int rtts = atomic_load(&h->rtts);

    /* (Not after a turn for this client's threads: the lock is then also
     * free when they are all away in turns of their own, and longer turns
     * would only keep them away.) */
    if (free_at_once)
        rtts = rtts * 2 > RTTS_MAX ? RTTS_MAX : rtts * 2;
    else if (rtts > RTTS_MIN)
        rtts--;
    atomic_store(&h->rtts, rtts);
}

void
cr__handoff_acquired(cr__handoff *h)
{
    atomic_store(&h->acquired_us, cr__now_us());
}
