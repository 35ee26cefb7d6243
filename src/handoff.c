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
cr__handoff_after_unlock(cr__handoff *h, const cr__sub_seen *seen,
                         int64_t reached, int64_t sent_us, int64_t now_us,
                         bool in_line)
{
    uint64_t released = seen->counted;
    int local = seen->waiters;
    int64_t others = reached - (local >= 0 ? 1 : 0), turn, cycle, whole;

    if (others <= 0 && (local <= 0 || in_line))
        return; /* this client's waiters: its next wait joins their line */
    turn = cr__handoff_turn_us(others > 0 ? atomic_load(&h->rtts) : RTTS_MIN,
                               now_us - sent_us);
    cycle = turn + now_us - atomic_load(&h->acquired_us);
    cycle = cycle > HANDOFF_COUNT_MAX_US ? HANDOFF_COUNT_MAX_US : cycle;
    whole = others > 0 ? 2 * others * cycle : turn;
    whole = whole > HANDOFF_COUNT_MAX_US ? HANDOFF_COUNT_MAX_US : whole;
    /* Its own release is counted too, unless already read: a release read
     * since the unlock was sent can only be its own, as the lock was held
     * until then. */
    if (others > 0)
        released += (uint64_t)others +
                    (seen->counted_at_us >= sent_us ? 0 : 1);
    atomic_store(&h->turn_us, turn);
    atomic_store(&h->quiet_us, 2 * cycle);
    atomic_store(&h->target, others > 0 ? released : 0);
    atomic_store(&h->until_us, now_us + whole);
}

void
cr__handoff_after_release(cr__handoff *h, const cr__sub_seen *seen,
                          int64_t reached, int64_t sent_us, int64_t now_us)
{
    int local = seen->waiters;
    int64_t turn;

    if (reached - (local >= 0 ? 1 : 0) <= 0)
        return;
    turn = cr__handoff_turn_us(RTTS_MIN, now_us - sent_us);
    atomic_store(&h->turn_us, turn);
    atomic_store(&h->target, 0);
    atomic_store(&h->until_us, now_us + turn);
}

bool
cr__handoff_turn(const cr__handoff *h, int64_t now_us, int64_t wait_ms,
                 cr__turn *t)
{
    int64_t until = atomic_load(&h->until_us);

    if (until <= now_us || wait_ms == 0)
        return false;
    if (wait_ms > 0 && until - now_us > wait_ms * 1000)
        until = now_us + wait_ms * 1000;
    *t = (cr__turn){.until_us = until,
                    .sleep_us = atomic_load(&h->turn_us),
                    .target = atomic_load(&h->target),
                    .quiet_us = atomic_load(&h->quiet_us),
                    .since_us = now_us};
    return true;
}

cr__turn_do
cr__turn_next(cr__turn *t, const cr__sub_seen *seen, int64_t now_us,
              int64_t *wait_us)
{
    if (t->target > 0 && seen->waiters >= 0) {
        /* One wait for the count, then go: those it let go first have
         * gone, or left. */
        if (t->counted || seen->counted >= t->target ||
            now_us >= t->until_us)
            return CR__TURN_GO;
        t->counted = true;
        *wait_us = t->until_us - now_us;
        return CR__TURN_COUNT;
    }
    /* Nothing to count: the turn's sleep. */
    *wait_us = t->until_us - now_us < t->sleep_us ? t->until_us - now_us
                                                  : t->sleep_us;
    return *wait_us > 0 ? CR__TURN_SLEEP : CR__TURN_GO;
}

bool
cr__turn_count_over(const cr__turn *t, const cr__sub_seen *seen,
                    int64_t now_us, int64_t *check_us)
{
    int64_t at = seen->counted_at_us;
    int64_t end = (at > t->since_us ? at : t->since_us) + t->quiet_us;

    if (seen->waiters < 0 || seen->counted >= t->target ||
        now_us >= t->until_us || now_us >= end)
        return true;
    *check_us = end < t->until_us ? end : t->until_us;
    return false;
}

bool
cr__turn_tune(const cr__turn *t, const cr__sub_seen *seen)
{
    return t->target > 0 && seen->waiters < 0;
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
cr__handoff_acquired(cr__handoff *h, int64_t now_us)
{
    atomic_store(&h->acquired_us, now_us);
}
