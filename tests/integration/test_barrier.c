/* SPDX-License-Identifier: MIT */
/*
 * The cyclic barrier (cr_barrier): rounds that release every party at once
 * with the generation and arrival index Java's await returns, eight
 * processes through fifty rounds with an exact per-round check, and the
 * ways a round breaks: a party's wait running out, its client freed, its
 * process SIGKILLed (noticed within its lease, on the server's clock), a
 * reset, a deletion. The keys and messages are checked as written.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "barrier_common.h"
#include "coord_block.h"
#include "lock_common.h"

#define OK(call) assert_int_equal((call), CR_OK)

/* ------------------------------------------------------------- helpers */

/* Waits until `count` parties have arrived at b; fails the test
 * otherwise. */
static void
await_arrivals(cr_barrier *b, int64_t count)
{
    arrivals_wanted w = {b, count};

    assert_true(cr_test_wait_until(has_arrivals, &w, slow(5000)));
}

/* A barrier handle on the test client. */
static cr_barrier *
barrier(const char *name, int64_t parties)
{
    cr_barrier *b = NULL;

    OK(cr_barrier_new(test_client, name, parties, &b));
    return b;
}

/* --------------------------------------------------------------- tests */

static void
test_barrier_releases_every_party_with_generation_and_index(void **state)
{
    cr_barrier *b = barrier("rounds", 3);
    party p[3];
    int round, i;

    (void)state;
    for (round = 0; round < 3; round++) {
        unsigned seen = 0;

        party_start(&p[0], b, CR_WAIT_FOREVER);
        await_arrivals(b, 1);
        party_start(&p[1], b, CR_WAIT_FOREVER);
        await_arrivals(b, 2);
        /* Nobody passes before the last arrives. */
        assert_false(atomic_load(&p[0].done) || atomic_load(&p[1].done));
        party_start(&p[2], b, slow(5000));
        for (i = 0; i < 3; i++) {
            pthread_join(p[i].thread, NULL);
            OK(p[i].rc);
            assert_int_equal(p[i].generation, round);
            seen |= 1u << p[i].index;
        }
        /* Java's arrival index: parties - 1 for the first, 0 for the last. */
        assert_int_equal(p[0].index, 2);
        assert_int_equal(p[1].index, 1);
        assert_int_equal(p[2].index, 0);
        assert_int_equal(seen, 7);
    }
    cr_barrier_free(b);
}

static void
test_barrier_one_party_passes_at_once(void **state)
{
    cr_barrier *b = barrier("alone", 1);
    int64_t g = -1, i = -1, parties = 0;

    (void)state;
    OK(cr_barrier_await(b, 0, &g, &i));
    assert_int_equal(g, 0);
    assert_int_equal(i, 0);
    OK(cr_barrier_await(b, 0, &g, &i));
    assert_int_equal(g, 1);
    OK(cr_barrier_get_parties(b, &parties));
    assert_int_equal(parties, 1);
    cr_barrier_free(b);
}

static void
test_barrier_wire_keys_fields_leases_and_messages(void **state)
{
    const char *channels[2] = {"credisson_barrier__channel:{wire}:0",
                               "credisson_barrier__channel:{wire}:1"};
    cr_test_listener *li = cr_test_listener_start(&test_redis, channels, 2);
    cr_barrier *b = barrier("wire", 2);
    party p[2];
    char owner[128], done[64];
    long long before, lease, since;
    redisReply *r;

    (void)state;
    assert_non_null(li);
    before = server_ms();
    party_start(&p[0], b, CR_WAIT_FOREVER);
    await_arrivals(b, 1);
    /* The creation stamp: the server's clock in microseconds (server_ms
     * truncates to the millisecond, so the stamp may lie up to a
     * millisecond past the last reading). */
    since = redis_int("HGET wire since");
    assert_true(since >= before * 1000 && since < (server_ms() + 1) * 1000);
    assert_int_equal(redis_int("HGET wire parties"), 2);
    assert_int_equal(redis_int("HGET wire generation"), 0);
    assert_int_equal(redis_int("HGET wire arrived"), 1);
    assert_int_equal(redis_int("HGET wire broken"), 0);
    /* The waiting party: "<client id>:<thread id>", its index in the hash
     * and its lease deadline (server ms) in the arrivals. */
    r = cr_test_redis_cmd(&test_redis, "ZRANGE credisson_barrier_arrivals:{wire} "
                          "0 -1 WITHSCORES");
    assert_non_null(r);
    assert_int_equal(r->elements, 2);
    snprintf(owner, sizeof(owner), "%s", r->element[0]->str);
    lease = atoll(r->element[1]->str);
    freeReplyObject(r);
    assert_int_equal(strncmp(owner, cr_client_id(test_client), 36), 0);
    assert_int_equal(owner[36], ':');
    assert_int_equal(redis_int("HGET wire %s", owner), 1);
    /* Its arrival time (server ms), under "a:" and the owner. */
    assert_true(redis_int("HGET wire a:%s", owner) >= before &&
                redis_int("HGET wire a:%s", owner) <= server_ms());
    /* The test client's leases last 300 ms, renewed every 100 ms. */
    assert_true(lease >= before + 300 && lease <= server_ms() + 300);
    party_start(&p[1], b, CR_WAIT_FOREVER);
    pthread_join(p[0].thread, NULL);
    pthread_join(p[1].thread, NULL);
    OK(p[0].rc);
    OK(p[1].rc);
    /* Completed: generation 1, its outcome kept, nobody waiting. */
    assert_int_equal(redis_int("HGET wire generation"), 1);
    assert_int_equal(redis_int("HGET wire arrived"), 0);
    assert_int_equal(redis_int("HGET wire o:0"), 1);
    assert_int_equal(redis_int("HEXISTS wire %s", owner), 0);
    assert_int_equal(redis_int("HEXISTS wire a:%s", owner), 0);
    assert_int_equal(redis_int("EXISTS credisson_barrier_arrivals:{wire}"), 0);
    /* One message: 0:<generation>:<since>, a round completed, on the even
     * generations' channel. */
    assert_int_equal(cr_test_listener_wait(li, 1, slow(2000)), 1);
    assert_string_equal(cr_test_listener_get(li, 0)->channel, channels[0]);
    snprintf(done, sizeof(done), "0:0:%lld", since);
    assert_string_equal(cr_test_listener_get(li, 0)->payload, done);
    /* A reset with nobody waiting publishes nothing; one with a waiter
     * publishes 1 on its generation's channel: generation 2, even. */
    OK(cr_barrier_reset(b));
    assert_int_equal(redis_int("HGET wire generation"), 2);
    party_start(&p[0], b, CR_WAIT_FOREVER);
    await_arrivals(b, 1);
    OK(cr_barrier_reset(b));
    pthread_join(p[0].thread, NULL);
    assert_int_equal(p[0].rc, CR_EBROKEN);
    assert_int_equal(cr_test_listener_wait(li, 2, slow(2000)), 2);
    assert_string_equal(cr_test_listener_get(li, 1)->channel, channels[0]);
    assert_string_equal(cr_test_listener_get(li, 1)->payload, "1");
    assert_int_equal(redis_int("HGET wire o:2"), 0);
    assert_int_equal(redis_int("HGET wire generation"), 3);
    /* Generation 3 is odd: its round's end goes on the other channel. */
    party_start(&p[0], b, CR_WAIT_FOREVER);
    party_start(&p[1], b, CR_WAIT_FOREVER);
    pthread_join(p[0].thread, NULL);
    pthread_join(p[1].thread, NULL);
    OK(p[0].rc);
    assert_int_equal(p[0].generation, 3);
    assert_int_equal(cr_test_listener_wait(li, 3, slow(2000)), 3);
    assert_string_equal(cr_test_listener_get(li, 2)->channel, channels[1]);
    snprintf(done, sizeof(done), "0:3:%lld", since);
    assert_string_equal(cr_test_listener_get(li, 2)->payload, done);
    assert_int_equal(redis_int("HGET wire since"), since);
    cr_test_listener_stop(li);
    cr_barrier_free(b);
}

/* cr_object_inspect lists the parties waiting in the round under way, in
 * the order they arrived, each with its arrival time, lease and client;
 * an arrival time an older credisson's settling left behind goes with the
 * next round's first arrival. */
static void
test_barrier_inspect_lists_the_waiting_parties_in_arrival_order(void **state)
{
    cr_barrier *b = barrier("seen", 3);
    cr_object_info *in = NULL;
    party p[3];
    long long before;
    size_t i;

    (void)state;
    before = server_ms();
    party_start(&p[0], b, CR_WAIT_FOREVER);
    await_arrivals(b, 1);
    party_start(&p[1], b, CR_WAIT_FOREVER);
    await_arrivals(b, 2);
    OK(cr_object_inspect(test_client, "seen", &in));
    assert_int_equal(in->kind, CR_OBJECT_BARRIER);
    assert_int_equal(in->waiting, 2);
    assert_int_equal(in->nwaiting_parties, 2);
    assert_int_equal(in->subscribers, -1);
    for (i = 0; i < 2; i++) {
        const cr_party_info *w = &in->waiting_parties[i];

        /* The first to arrive has index parties - 1, and comes first. */
        assert_true(w->has_index);
        assert_int_equal(w->index, 2 - (int64_t)i);
        assert_true(w->has_since);
        assert_true(w->since_ms >= before && w->since_ms <= in->now_ms);
        assert_true(w->lease_ms > in->now_ms);
        assert_int_equal(strncmp(w->who.owner, cr_client_id(test_client),
                                 36), 0);
        assert_int_equal(w->who.presence, CR_PRESENCE_CONNECTED);
    }
    assert_true(in->waiting_parties[0].since_ms <=
                in->waiting_parties[1].since_ms);
    cr_object_info_free(in);
    party_start(&p[2], b, CR_WAIT_FOREVER);
    for (i = 0; i < 3; i++) {
        pthread_join(p[i].thread, NULL);
        OK(p[i].rc);
    }
    OK(cr_object_inspect(test_client, "seen", &in));
    assert_int_equal(in->nwaiting_parties, 0);
    cr_object_info_free(in);
    /* A stale arrival time goes when the next round begins. */
    freeReplyObject(cr_test_redis_cmd(&test_redis,
                                      "HSET seen a:gone:1 12345"));
    party_start(&p[0], b, CR_WAIT_FOREVER);
    await_arrivals(b, 1);
    assert_int_equal(redis_int("HEXISTS seen a:gone:1"), 0);
    OK(cr_barrier_reset(b));
    pthread_join(p[0].thread, NULL);
    assert_int_equal(p[0].rc, CR_EBROKEN);
    cr_barrier_free(b);
}

/* A round's completion message, as another implementation of the protocol
 * publishes it, releases a waiting party by itself: the party does not
 * look (the hash still says its round is under way, and it passes). */
static void
test_barrier_its_rounds_completion_message_releases_a_party(void **state)
{
    cr_barrier *b = barrier("heard", 2);
    party p;
    long long since;

    (void)state;
    party_start(&p, b, slow(10000));
    await_arrivals(b, 1);
    assert_true(cr_test_wait_until(has_subscriber,
                                   "credisson_barrier__channel:{heard}:0",
                                   slow(5000)));
    since = redis_int("HGET heard since");
    freeReplyObject(cr_test_redis_cmd(&test_redis, "PUBLISH "
                    "credisson_barrier__channel:{heard}:0 0:0:%lld", since));
    pthread_join(p.thread, NULL);
    OK(p.rc);
    assert_int_equal(p.generation, 0);
    assert_int_equal(p.index, 1);
    assert_int_equal(redis_int("HGET heard arrived"), 1);
    cr_barrier_free(b);
}

/* Completion messages that are not the party's round's never release it:
 * its own generation's from a barrier of the same name deleted before it
 * arrived (another creation stamp), another generation's, and the bare 0
 * of an older credisson. Each, alone in a round, wakes the party to read
 * its round's outcome, still under way, and its wait runs out; a reset
 * begins the next round. A barrier made by an older credisson, without a
 * stamp, gets one at the next arrival. */
static void
test_barrier_another_rounds_completion_message_does_not_release(void **state)
{
    cr_barrier *b = barrier("unheard", 2);
    long long since = 0, g;
    char msg[64], channel[64];
    party p;
    int k;

    (void)state;
    freeReplyObject(cr_test_redis_cmd(&test_redis, "HSET unheard parties 2 "
                    "generation 0 arrived 0 broken 0"));
    for (k = 0; k < 3; k++) {
        party_start(&p, b, slow(1000));
        await_arrivals(b, 1);
        since = redis_int("HGET unheard since");
        assert_true(since > 0);
        g = redis_int("HGET unheard generation");
        assert_int_equal(g, k);
        snprintf(channel, sizeof(channel),
                 "credisson_barrier__channel:{unheard}:%lld", g % 2);
        assert_true(cr_test_wait_until(has_subscriber, channel, slow(5000)));
        if (k == 0)
            snprintf(msg, sizeof(msg), "0:%lld:%lld", g, since - 1);
        else if (k == 1)
            snprintf(msg, sizeof(msg), "0:%lld:%lld", g + 2, since);
        else
            snprintf(msg, sizeof(msg), "0");
        freeReplyObject(cr_test_redis_cmd(&test_redis, "PUBLISH %s %s",
                                          channel, msg));
        pthread_join(p.thread, NULL);
        assert_int_equal(p.rc, CR_TIMEOUT);
        assert_int_equal(redis_int("HGET unheard broken"), 1);
        OK(cr_barrier_reset(b));
    }
    cr_barrier_free(b);
}

/* A coord_block in a memfd that child processes inherit. */
static coord_block *
shared_coord_block(int *fd)
{
    coord_block *b = cr_test_memfd_alloc("coord_block", sizeof(*b), fd);

    assert_non_null(b);
    return b;
}

#define ROUNDS_PROCS 8
#define ROUNDS 50

static void
test_barrier_eight_processes_fifty_rounds_exact(void **state)
{
    coord_block *blk;
    pid_t pids[ROUNDS_PROCS];
    char fdarg[16], parties[16], rounds[16];
    int fd, i, k;

    (void)state;
    blk = shared_coord_block(&fd);
    snprintf(fdarg, sizeof(fdarg), "%d", fd);
    snprintf(parties, sizeof(parties), "%d", ROUNDS_PROCS);
    snprintf(rounds, sizeof(rounds), "%d", ROUNDS);
    for (i = 0; i < ROUNDS_PROCS; i++) {
        const char *a[] = {"barrier-rounds", test_redis.url, "fifty",
                           parties, rounds, fdarg, NULL};

        pids[i] = cr_test_spawn("coord_worker", a, NULL);
        assert_true(pids[i] > 0);
    }
    for (i = 0; i < ROUNDS_PROCS; i++)
        reap_ok(pids[i]);
    assert_int_equal(atomic_load(&blk->finished), ROUNDS_PROCS);
    assert_int_equal(atomic_load(&blk->early), 0);
    assert_int_equal(atomic_load(&blk->disagree), 0);
    assert_int_equal(atomic_load(&blk->twice), 0);
    for (k = 0; k < ROUNDS; k++) {
        assert_int_equal(atomic_load(&blk->arrived[k]), ROUNDS_PROCS);
        assert_int_equal(atomic_load(&blk->left[k]), ROUNDS_PROCS);
        /* Generations 0, 1, 2... one per round. */
        assert_int_equal(atomic_load(&blk->generation[k]), k + 1);
        assert_int_equal(atomic_load(&blk->indices[k]),
                         (1ULL << ROUNDS_PROCS) - 1);
    }
    assert_int_equal(redis_int("HGET fifty generation"), ROUNDS);
    munmap(blk, sizeof(*blk));
    close(fd);
}

/* A thread of one client running rounds. */
typedef struct looper {
    cr_barrier *barrier;
    int rounds;
    int64_t longest; /* ms, rounds after the first */
    cr_status rc;
    pthread_t thread;
} looper;

static void *
looper_run(void *arg)
{
    looper *l = arg;
    int k;

    for (k = 0; k < l->rounds; k++) {
        int64_t t0 = cr_test_now_ms(), took;

        l->rc = cr_barrier_await(l->barrier, slow(30000), NULL, NULL);
        if (l->rc != CR_OK)
            break;
        took = cr_test_now_ms() - t0;
        if (k > 0 && took > l->longest)
            l->longest = took;
    }
    return NULL;
}

static void
test_barrier_threads_of_one_client_are_never_left_asleep(void **state)
{
    cr_client *c = new_client(30000); /* looks every 10 s, at least 1 s */
    cr_barrier *b = NULL;
    looper l[16];
    int i;

    (void)state;
    assert_non_null(c);
    OK(cr_barrier_new(c, "threads", 16, &b));
    for (i = 0; i < 16; i++) {
        memset(&l[i], 0, sizeof(l[i]));
        l[i].barrier = b;
        l[i].rounds = 1000;
        assert_int_equal(pthread_create(&l[i].thread, NULL, looper_run, &l[i]),
                         0);
    }
    for (i = 0; i < 16; i++) {
        pthread_join(l[i].thread, NULL);
        OK(l[i].rc);
        /* A party the end of its round did not wake would sleep until its
         * once-a-second look, and hold up the next round as long. */
        assert_true(l[i].longest < slow(900));
    }
    assert_int_equal(redis_int("HGET threads generation"), 1000);
    cr_barrier_free(b);
    cr_client_free(c);
}

static void
test_barrier_a_sigkilled_party_breaks_the_round_within_its_lease(void **state)
{
    cr_barrier *b = barrier("killed", 3);
    const char *args[] = {"barrier-wait", test_redis.url, "killed", "3", "1000",
                          NULL};
    party p;
    pid_t pid;
    int64_t killed, took;
    int status = 0;

    (void)state;
    pid = cr_test_spawn("coord_worker", args, NULL);
    assert_true(pid > 0);
    await_arrivals(b, 1);
    party_start(&p, b, slow(30000));
    await_arrivals(b, 2);
    kill(pid, SIGKILL);
    killed = cr_test_now_ms();
    assert_int_equal(waitpid(pid, &status, 0), pid);
    pthread_join(p.thread, NULL);
    took = p.returned_ms - killed;
    /* Broken once the dead party's lease (1 s, renewed every third of it)
     * lapsed on the server's clock, not at the end of the 30 s wait. */
    assert_int_equal(p.rc, CR_EBROKEN);
    assert_true(took >= 500);
    assert_true(took <= 1000 + slow(700));
    cr_barrier_free(b);
}

static void
test_barrier_waiters_keep_a_timer_at_the_earliest_lease(void **state)
{
    cr_client *c = new_client(60000); /* its own lease: 60 s */
    cr_barrier *b = NULL;
    party p;
    int64_t t0;

    (void)state;
    assert_non_null(c);
    OK(cr_barrier_new(c, "timer", 3, &b));
    /* A party of another client (Java, say) that arrived and will never
     * renew: its lease lapses 400 ms from now on the server's clock. */
    assert_true(redis_ok("HSET timer parties 3 generation 0 arrived 1 "
                         "broken 0 ghost:1 2"));
    assert_true(redis_ok("ZADD credisson_barrier_arrivals:{timer} %lld "
                         "ghost:1", server_ms() + 400));
    t0 = cr_test_now_ms();
    party_start(&p, b, slow(30000));
    pthread_join(p.thread, NULL);
    assert_int_equal(p.rc, CR_EBROKEN);
    /* At the lapse, not at this waiter's own renewal (20 s) nor its
     * once-a-second look. */
    assert_true(p.returned_ms - t0 >= 350);
    assert_true(p.returned_ms - t0 <= 400 + slow(300));
    cr_barrier_free(b);
    cr_client_free(c);
}

static void
test_barrier_a_timeout_breaks_the_round_and_reset_begins_the_next(void **state)
{
    cr_barrier *b = barrier("timeout", 3);
    party waiting, impatient;
    int64_t g = -1, t0;
    bool broken = false;

    (void)state;
    party_start(&waiting, b, slow(30000));
    await_arrivals(b, 1);
    t0 = cr_test_now_ms();
    /* Its wait must outlast its arrival (a party that never arrived breaks
     * nothing: its lease would): scaled, as a sanitizer build beside
     * another is slow to send the first script. */
    party_start(&impatient, b, slow(300));
    pthread_join(impatient.thread, NULL);
    pthread_join(waiting.thread, NULL);
    /* The party whose wait ran out: CR_TIMEOUT; the other: CR_EBROKEN at
     * once, not after its 30 s. */
    assert_int_equal(impatient.rc, CR_TIMEOUT);
    assert_true(impatient.returned_ms - t0 >= slow(300) - 10);
    assert_int_equal(waiting.rc, CR_EBROKEN);
    assert_true(waiting.returned_ms - impatient.returned_ms < slow(500));
    OK(cr_barrier_is_broken(b, &broken));
    assert_true(broken);
    /* Broken until reset: an await returns at once. */
    t0 = cr_test_now_ms();
    assert_int_equal(cr_barrier_await(b, slow(10000), NULL, NULL), CR_EBROKEN);
    assert_true(cr_test_now_ms() - t0 < slow(500));
    OK(cr_barrier_reset(b));
    OK(cr_barrier_is_broken(b, &broken));
    assert_false(broken);
    party_start(&waiting, b, slow(10000));
    party_start(&impatient, b, slow(10000));
    await_arrivals(b, 2);
    OK(cr_barrier_await(b, slow(10000), &g, NULL));
    pthread_join(waiting.thread, NULL);
    pthread_join(impatient.thread, NULL);
    OK(waiting.rc);
    OK(impatient.rc);
    assert_int_equal(g, 1);
    cr_barrier_free(b);
}

static void
test_barrier_a_wait_of_zero_breaks_unless_it_completes(void **state)
{
    cr_barrier *b = barrier("zero", 2);
    party p;

    (void)state;
    assert_int_equal(cr_barrier_await(b, 0, NULL, NULL), CR_TIMEOUT);
    OK(cr_barrier_reset(b));
    party_start(&p, b, slow(10000));
    await_arrivals(b, 1);
    OK(cr_barrier_await(b, 0, NULL, NULL));
    pthread_join(p.thread, NULL);
    OK(p.rc);
    cr_barrier_free(b);
}

static void
test_barrier_freeing_a_waiting_client_breaks_the_round(void **state)
{
    cr_client *c = new_client(300);
    cr_barrier *b = barrier("cancel", 3), *theirs = NULL;
    party mine, cancelled;

    (void)state;
    assert_non_null(c);
    OK(cr_barrier_new(c, "cancel", 3, &theirs));
    party_start(&mine, b, slow(30000));
    await_arrivals(b, 1);
    party_start(&cancelled, theirs, CR_WAIT_FOREVER);
    await_arrivals(b, 2);
    cr_client_free(c);
    pthread_join(cancelled.thread, NULL);
    assert_int_equal(cancelled.rc, CR_ECLOSED);
    pthread_join(mine.thread, NULL);
    assert_int_equal(mine.rc, CR_EBROKEN);
    assert_true(mine.returned_ms - cancelled.returned_ms < slow(500));
    cr_barrier_free(theirs);
    cr_barrier_free(b);
}

static void
test_barrier_delete_breaks_the_waiters(void **state)
{
    cr_barrier *b = barrier("deleted", 2);
    party p;
    bool deleted = false;

    (void)state;
    party_start(&p, b, slow(30000));
    await_arrivals(b, 1);
    OK(cr_barrier_delete(b, &deleted));
    assert_true(deleted);
    pthread_join(p.thread, NULL);
    assert_int_equal(p.rc, CR_EBROKEN);
    assert_int_equal(cr_test_redis_count_keys(&test_redis, "*"), 0);
    OK(cr_barrier_delete(b, &deleted));
    assert_false(deleted);
    cr_barrier_free(b);
}

static void
test_barrier_refuses_another_number_of_parties(void **state)
{
    cr_barrier *b = barrier("counted", 2), *other = barrier("counted", 3);
    party p;

    (void)state;
    party_start(&p, b, slow(10000));
    await_arrivals(b, 1);
    assert_int_equal(cr_barrier_await(other, 0, NULL, NULL), CR_EINVAL);
    assert_non_null(strstr(cr_last_error(), "has 2 parties"));
    OK(cr_barrier_await(b, slow(10000), NULL, NULL));
    pthread_join(p.thread, NULL);
    OK(p.rc);
    assert_int_equal(cr_barrier_new(test_client, "x", 0, &other), CR_EINVAL);
    cr_barrier_free(other);
    cr_barrier_free(b);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, client_up, client_down)
        T(test_barrier_releases_every_party_with_generation_and_index),
        T(test_barrier_one_party_passes_at_once),
        T(test_barrier_wire_keys_fields_leases_and_messages),
        T(test_barrier_inspect_lists_the_waiting_parties_in_arrival_order),
        T(test_barrier_its_rounds_completion_message_releases_a_party),
        T(test_barrier_another_rounds_completion_message_does_not_release),
        T(test_barrier_eight_processes_fifty_rounds_exact),
        T(test_barrier_threads_of_one_client_are_never_left_asleep),
        T(test_barrier_a_sigkilled_party_breaks_the_round_within_its_lease),
        T(test_barrier_waiters_keep_a_timer_at_the_earliest_lease),
        T(test_barrier_a_timeout_breaks_the_round_and_reset_begins_the_next),
        T(test_barrier_a_wait_of_zero_breaks_unless_it_completes),
        T(test_barrier_freeing_a_waiting_client_breaks_the_round),
        T(test_barrier_delete_breaks_the_waiters),
        T(test_barrier_refuses_another_number_of_parties),
#undef T
    };

    return cmocka_run_group_tests(tests, redis_up, redis_down);
}
